"""Brute-force PN pair counts: every pair of rows inside each uid, in plain Python."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable


def pn_pairs_by_user(
    uid: Iterable[Hashable], pred: Iterable[float], label: Iterable[float]
) -> dict[Hashable, tuple[int, int, int]]:
    """For each uid, (positive, negative, tie) over its pairs with different labels,
    each pair ordered so that label_i < label_j: pred_i < pred_j positive, pred_i > pred_j
    negative, equal tie. O(m^2) per user: small data only."""
    rows: dict[Hashable, list[tuple[float, float]]] = defaultdict(list)
    for u, p, y in zip(uid, pred, label, strict=True):
        rows[u].append((float(p), float(y)))
    counts = {}
    for u, user_rows in rows.items():
        positive = negative = tie = 0
        for a in range(len(user_rows)):
            for b in range(a + 1, len(user_rows)):
                (p_i, y_i), (p_j, y_j) = user_rows[a], user_rows[b]
                if y_i == y_j:
                    continue
                if y_i > y_j:
                    (p_i, y_i), (p_j, y_j) = (p_j, y_j), (p_i, y_i)
                if p_i < p_j:
                    positive += 1
                elif p_i > p_j:
                    negative += 1
                else:
                    tie += 1
        counts[u] = (positive, negative, tie)
    return counts


def pn_totals(
    uid: Iterable[Hashable], pred: Iterable[float], label: Iterable[float], ties: str = "negative"
) -> dict[str, float]:
    """The ``pn`` result fields from brute force, ties as ``negative``, ``ignore`` or ``half``."""
    uid, pred, label = list(uid), list(pred), list(label)
    per_user = pn_pairs_by_user(uid, pred, label)
    positive = sum(c[0] for c in per_user.values())
    negative = sum(c[1] for c in per_user.values())
    tie = sum(c[2] for c in per_user.values())
    if ties == "negative":
        negative += tie
    elif ties == "half":
        positive += tie / 2
        negative += tie / 2
    elif ties != "ignore":
        raise ValueError(ties)
    average = positive / negative if negative else float("nan")
    return {
        "kind": "pn",
        "average_pn": average,
        "ins_number": len(uid),
        "positive_pairs": positive,
        "negative_pairs": negative,
        "tie_pairs": tie,
    }
