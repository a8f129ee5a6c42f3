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
