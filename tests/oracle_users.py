"""Plain-Python reference of the ``wuauc`` kind: loops and per-user pair counting.

Slow on purpose; every fast path of :mod:`mpieval.kinds.wuauc.metric` is checked against it.
"""

from __future__ import annotations

import math
from collections import defaultdict


def user_auc(preds: list[float], labels: list[int]) -> float:
    """AUC of one user by counting every (positive, negative) pair; a tie counts 1/2.
    -1 when the user has only one label."""
    positives = [p for p, y in zip(preds, labels, strict=True) if y == 1]
    negatives = [p for p, y in zip(preds, labels, strict=True) if y == 0]
    if not positives or not negatives:
        return -1.0
    wins = 0.0
    for p in positives:
        for q in negatives:
            if p > q:
                wins += 1.0
            elif p == q:
                wins += 0.5
    return wins / (len(positives) * len(negatives))


def block(rows: list[tuple]) -> dict[str, float]:
    """The values of one block from its rows ``(user, pred, label)``."""
    by_user: dict[object, list[tuple[float, int]]] = defaultdict(list)
    logloss = clicks = pred_sum = 0.0
    for user, pred, label in rows:
        by_user[user].append((pred, label))
        p = min(max(pred, 1e-15), 1 - 1e-15)
        logloss += -math.log(p) if label == 1 else -math.log(1 - p)
        clicks += label
        pred_sum += pred
    auc_sum = auc_rows = auc_clicks = 0.0
    valid_users = valid_rows = valid_clicks = 0
    for pairs in by_user.values():
        auc = user_auc([p for p, _ in pairs], [y for _, y in pairs])
        if auc == -1.0:
            continue
        user_clicks = sum(y for _, y in pairs)
        valid_users += 1
        valid_rows += len(pairs)
        valid_clicks += user_clicks
        auc_sum += auc
        auc_rows += auc * len(pairs)
        auc_clicks += auc * user_clicks
    n = len(rows)
    nan = math.nan
    actual = clicks / n if n else nan
    predicted = pred_sum / n if n else nan
    return {
        "wuauc": auc_rows / valid_rows if valid_rows else nan,
        "uauc": auc_sum / valid_users if valid_users else nan,
        "logloss": logloss / n if n else nan,
        "actual_ctr": actual,
        "predicted_ctr": predicted,
        "copc": actual / predicted if n and predicted else nan,
        "real_user_count": len(by_user),
        "real_ins_num": n,
        "valid_user_count": valid_users,
        "valid_ins_num": valid_rows,
        "click_wuauc": auc_clicks / valid_clicks if valid_clicks else nan,
        "valid_click_num": valid_clicks,
    }


def wuauc(uids, preds, labels, tags=None) -> dict[str, dict[str, float]]:
    """Every block: ``all`` over every row, then each tag value (sorted), keyed by
    ``str(tag)``. A row whose tag is None counts in ``all`` only."""
    rows = [(u, float(p), int(y)) for u, p, y in zip(uids, preds, labels, strict=True)]
    result = {"all": block(rows)}
    if tags is not None:
        for tag in sorted({t for t in tags if t is not None}):
            result[str(tag)] = block([r for r, t in zip(rows, tags, strict=True) if t == tag])
    return result


def _logloss(pred: float, label: int) -> float:
    p = min(max(pred, 1e-15), 1 - 1e-15)
    return -math.log(p) if label == 1 else -math.log(1 - p)


def group_moments(keys, preds, labels, tags, n_tags: int, compare=None,
                  weights=None) -> list[list[float]]:
    """Per block (``all``, then tag codes ``0 .. n_tags - 1``; a larger code counts in
    ``all`` only), over its groups (a user in ``all``, a (user, tag)) with ``n`` the
    group's weight, ``c`` its weighted clicks, ``p`` its weighted pred sum, ``l`` its
    weighted logloss sum (and ``pb``, ``lb`` of the compared model): ``c^2, c n, n^2, p^2,
    p n, c p, l^2, l n, n^3, p^3`` and with ``compare`` then ``pb^2, c pb, p pb, (lb - l)^2,
    (lb - l) n``."""
    groups: dict[tuple[int, object], list[float]] = {}
    for i, (key, pred, label, code) in enumerate(zip(keys, preds, labels, tags, strict=True)):
        w = 1.0 if weights is None else float(weights[i])
        b = 0.0 if compare is None else float(compare[i])
        y = int(label)
        add = (w, w * y, w * float(pred), w * _logloss(float(pred), y), w * b,
               w * _logloss(b, y) if compare is not None else 0.0)
        for block in (0, 1 + int(code)) if int(code) < n_tags else (0,):
            sums = groups.setdefault((block, key), [0.0] * 6)
            for k in range(6):
                sums[k] += add[k]
    width = 10 if compare is None else 15
    out = [[0.0] * width for _ in range(1 + n_tags)]
    for (block, _), (n, c, p, ll, pb, lb) in groups.items():
        values = [c * c, c * n, n * n, p * p, p * n, c * p, ll * ll, ll * n, n ** 3, p ** 3]
        if compare is not None:
            values += [pb * pb, c * pb, p * pb, (lb - ll) ** 2, (lb - ll) * n]
        for k, value in enumerate(values):
            out[block][k] += value
    return out


def weighted_user_auc(preds, labels, weights) -> float:
    """AUC of one user with the pair (positive i, negative j) weighing ``w_i w_j`` (a tie
    one half) over ``W+ W-``; -1 when either class weighs 0."""
    won = positives = negatives = 0.0
    for _, y, w in zip(preds, labels, weights, strict=True):
        if y == 1:
            positives += w
        else:
            negatives += w
    if positives == 0 or negatives == 0:
        return -1.0
    for p, y, w in zip(preds, labels, weights, strict=True):
        if y != 1:
            continue
        for q, z, v in zip(preds, labels, weights, strict=True):
            if z == 0:
                won += w * v * (1.0 if p > q else 0.5 if p == q else 0.0)
    return won / (positives * negatives)


def weighted_block(uids, preds, labels, weights) -> dict[str, float]:
    """``wuauc``, ``uauc``, the weighted row values and counts of one block: a user weighs
    its rows' weight (``valid_ins_num`` the valid users' weight)."""
    by_user: dict[object, list[tuple[float, int, float]]] = defaultdict(list)
    rows = clicks = pred_sum = logloss = 0.0
    for u, p, y, w in zip(uids, preds, labels, weights, strict=True):
        by_user[u].append((float(p), int(y), float(w)))
        rows += w
        clicks += w * y
        pred_sum += w * p
        logloss += w * _logloss(float(p), int(y))
    auc_sum = auc_rows = valid_rows = 0.0
    valid = 0
    for triples in by_user.values():
        auc = weighted_user_auc(*zip(*triples, strict=True))
        if auc == -1.0:
            continue
        n = sum(w for _, _, w in triples)
        valid += 1
        valid_rows += n
        auc_sum += auc
        auc_rows += auc * n
    return {"wuauc": auc_rows / valid_rows, "uauc": auc_sum / valid, "valid_user_count": valid,
            "valid_ins_num": valid_rows, "real_ins_num": rows, "actual_ctr": clicks / rows,
            "predicted_ctr": pred_sum / rows, "copc": clicks / pred_sum,
            "logloss": logloss / rows}
