"""Plain-Python reference of the ``ranking`` kind, written from its definitions alone.

Per user: rows ranked by pred, highest first; gain = label, discount 1 / log2(rank + 1);
tied preds: every order of the tie equally likely, and each value is its expectation
over those orders. Small users enumerate every order of every tie (the product of the
ties' permutations); larger ones take the expectation directly. ``IDCG@K`` from the
labels sorted descending; a user without a relevant row (label > 0) is not valid; the
block values are unweighted means over the valid users.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

Row = tuple[float, float]  # (pred, label)
ENUMERATE_UP_TO = 720  # orders of a user's ties enumerated (6! = one tie of six rows)


def _dcg(labels: Sequence[float], cutoff: int | None) -> float:
    top = labels if cutoff is None else labels[:cutoff]
    return sum(label / math.log2(rank + 2) for rank, label in enumerate(top))


def _ties(rows: Sequence[Row]) -> list[list[float]]:
    """The labels of each group of tied preds, highest pred first."""
    preds = sorted({pred for pred, _ in rows}, reverse=True)
    return [[label for p, label in rows if p == pred] for pred in preds]


def _orders(rows: Sequence[Row]) -> int:
    return math.prod(math.factorial(len(tie)) for tie in _ties(rows))


def user_values(rows: Sequence[Row], cutoffs: Sequence[int]) -> dict[str, float] | None:
    """``ndcg``, ``ndcg@K``, ``recall@K`` of one user, or None when not valid."""
    labels = [label for _, label in rows]
    relevant = sum(1 for label in labels if label > 0)
    if relevant == 0:
        return None
    ideal = sorted(labels, reverse=True)
    ties = _ties(rows)
    names = ["ndcg", *(f"ndcg@{k}" for k in cutoffs)]
    if _orders(rows) <= ENUMERATE_UP_TO:
        # every ranking the ties allow, each equally likely
        dcg = {name: 0.0 for name in names}
        found = {k: Fraction(0) for k in cutoffs}
        count = 0
        for choice in itertools.product(*(itertools.permutations(tie) for tie in ties)):
            ranking = [label for tie in choice for label in tie]
            count += 1
            dcg["ndcg"] += _dcg(ranking, None)
            for k in cutoffs:
                dcg[f"ndcg@{k}"] += _dcg(ranking, k)
                found[k] += sum(1 for label in ranking[:k] if label > 0)
        expected_dcg = {name: total / count for name, total in dcg.items()}
        expected_found = {k: found[k] / count for k in cutoffs}
    else:
        # the expectation directly: a tie over positions [a, b) puts each of its rows at
        # each of its positions with chance 1 / (b - a)
        expected_dcg = {name: 0.0 for name in names}
        expected_found = {k: Fraction(0) for k in cutoffs}
        start = 0
        for tie in ties:
            end = start + len(tie)
            mean = sum(tie) / len(tie)
            for position in range(start, end):
                share = mean / math.log2(position + 2)
                expected_dcg["ndcg"] += share
                for k in cutoffs:
                    if position < k:
                        expected_dcg[f"ndcg@{k}"] += share
            hits = sum(1 for label in tie if label > 0)
            for k in cutoffs:
                inside = max(0, min(k, end) - start)
                expected_found[k] += Fraction(hits * inside, len(tie))
            start = end
    values = {"ndcg": expected_dcg["ndcg"] / _dcg(ideal, None)}
    for k in cutoffs:
        values[f"ndcg@{k}"] = expected_dcg[f"ndcg@{k}"] / _dcg(ideal, k)
    for k in cutoffs:
        values[f"recall@{k}"] = float(expected_found[k] / relevant)
    return values


def ranking(uid: Sequence[Any], pred: Sequence[float], label: Sequence[float],
            tag: Sequence[Any] | None, cutoffs: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Every block (``all``, then each tag in sorted order): its values (None when no user
    is valid), ``valid_user_count``, ``real_user_count``, ``real_ins_num``."""
    blocks: dict[Any, dict[Any, list[Row]]] = {"all": {}}
    tags = sorted(set(tag)) if tag is not None else []
    for t in tags:
        blocks[t] = {}
    for i, user in enumerate(uid):
        blocks["all"].setdefault(user, []).append((float(pred[i]), float(label[i])))
        if tag is not None:
            blocks[tag[i]].setdefault(user, []).append((float(pred[i]), float(label[i])))
    names = ["ndcg", *(f"ndcg@{k}" for k in cutoffs), *(f"recall@{k}" for k in cutoffs)]
    out = {}
    for name, users in blocks.items():
        per_user = [user_values(rows, cutoffs) for rows in users.values()]
        valid = [v for v in per_user if v is not None]
        block: dict[str, Any] = {
            value: (sum(v[value] for v in valid) / len(valid) if valid else None)
            for value in names}
        block.update(valid_user_count=len(valid), real_user_count=len(users),
                     real_ins_num=sum(len(rows) for rows in users.values()))
        out[str(name)] = block
    return out
