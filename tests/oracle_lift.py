"""Plain-Python oracles (loops, no numpy) of the ``auc`` kind's lift and recalibrated NE,
written from their definitions (docs/kinds/auc.md), not from the code."""

from __future__ import annotations

import math

PRED_CLIP = 1e-15


def lift(pred, label, table_size, fractions, weight=None):
    """``[(fraction, ctr, lift, recall)]``: the rows sorted by pred from high to low, the
    top ``fraction`` of the total weight; the rows of the bucket (``floor(p T)``) the cut
    falls in count by the share of the bucket's weight that is above the cut."""
    groups = {}
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        bucket = min(math.floor(float(p) * table_size), table_size - 1)
        total, clicks = groups.get(bucket, (0.0, 0.0))
        groups[bucket] = (total + w, clicks + w * float(y))
    num = sum(total for total, _ in groups.values())
    positives = sum(clicks for _, clicks in groups.values())
    points = []
    for fraction in fractions:
        top = fraction * num
        taken = clicked = 0.0
        for bucket in sorted(groups, reverse=True):
            total, clicks = groups[bucket]
            if taken + total >= top:
                clicked += clicks * (top - taken) / total
                break
            taken += total
            clicked += clicks
        ctr = clicked / top
        points.append((fraction, ctr, ctr / (positives / num) if positives else math.nan,
                       clicked / positives if positives else math.nan))
    return points


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def recalibrated(pred, label, weight=None):
    """``(ne, c, preds)``: the shift ``c`` of the logit found by bisection so that the
    shifted preds sum to the positives (COPC = 1), the NE of the shifted preds (logloss
    with preds clipped to [1e-15, 1 - 1e-15], over the entropy of the CTR), and the
    shifted preds."""
    w = [1.0] * len(pred) if weight is None else [float(x) for x in weight]
    clipped = [min(max(float(p), PRED_CLIP), 1 - PRED_CLIP) for p in pred]
    logit = [math.log(p / (1 - p)) for p in clipped]
    positives = sum(wi * float(y) for wi, y in zip(w, label, strict=True))
    num = sum(w)

    def excess(c):
        return sum(wi * sigmoid(x + c) for wi, x in zip(w, logit, strict=True)) - positives

    low, high = -50.0, 50.0
    for _ in range(200):
        middle = (low + high) / 2
        if excess(middle) > 0:
            high = middle
        else:
            low = middle
    c = (low + high) / 2
    shifted = [sigmoid(x + c) for x in logit]
    loss = 0.0
    for wi, q, y in zip(w, shifted, label, strict=True):
        q = min(max(q, PRED_CLIP), 1 - PRED_CLIP)
        loss -= wi * (float(y) * math.log(q) + (1 - float(y)) * math.log(1 - q))
    r = positives / num
    entropy = -(r * math.log(r) + (1 - r) * math.log(1 - r))
    return loss / num / entropy, c, shifted


def recalibrated_stderr(pred, label, c):
    """The delta method's standard error of the recalibrated NE over unweighted rows, each
    row's loss at its own shifted pred: influence ``(l_i - L) / H + L logit(r) / H^2 (y_i
    - r)`` (:func:`recalibrated_influences`)."""
    influences = recalibrated_influences(pred, label, c)
    return math.sqrt(sum(x * x for x in influences)) / len(pred)


def recalibrated_influences(pred, label, c):
    """Each row's influence on the recalibrated NE of unweighted rows, its loss read at
    its own shifted pred: ``(l_i - L) / H + L logit(r) / H^2 (y_i - r)``."""
    n = len(pred)
    losses = []
    for p, y in zip(pred, label, strict=True):
        q = sigmoid(math.log(p / (1 - p)) + c)
        losses.append(-(y * math.log(q) + (1 - y) * math.log(1 - q)))
    mean = sum(losses) / n
    r = sum(label) / n
    entropy = -(r * math.log(r) + (1 - r) * math.log(1 - r))
    slope = mean * math.log(r / (1 - r)) / entropy**2
    return [(loss - mean) / entropy + slope * (y - r)
            for loss, y in zip(losses, label, strict=True)]


def recalibrated_paired_stderr(pred_a, pred_b, label):
    """The standard error of ``NE_B - NE_A`` (recalibrated, on the same unweighted rows):
    ``sqrt(sum (psi_B - psi_A)^2) / n``."""
    _, c_a, _ = recalibrated(pred_a, label)
    _, c_b, _ = recalibrated(pred_b, label)
    a = recalibrated_influences(pred_a, label, c_a)
    b = recalibrated_influences(pred_b, label, c_b)
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True))) / len(label)
