"""Plain-Python reference of the ``ranking`` kind, written from its definitions alone.

Per user: rows ranked by pred, highest first; gain = label (or ``2 ** label - 1``),
discount 1 / log2(rank + 1); relevant = label > 0; tied preds: every order of the tie
equally likely, and each value is its expectation over those orders. Small users
enumerate every order of every tie (the product of the ties' permutations) and compute
each value of each ranking from its definition; larger ones take the expectation
directly (combinatorics per tie, with exact fractions where it is a count). ``IDCG@K``
from the gains sorted descending; a user without a relevant row is not valid; the block
values are unweighted means over the valid users.

Per ranking (``rel_i`` = 1 when the row at rank ``i`` is relevant, ``R`` relevant rows):
reciprocal rank ``1 / (rank of the first relevant row)``; hit@K 1 when a relevant row is
in the first K; AP@K ``sum_{i <= K} rel_i * precision@i / min(K, R)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

Row = tuple[float, float]  # (pred, label)
ENUMERATE_UP_TO = 720  # orders of a user's ties enumerated (6! = one tie of six rows)


def _dcg(gains: Sequence[float], cutoff: int | None) -> float:
    top = gains if cutoff is None else gains[:cutoff]
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(top))


def _gain(label: float, gain: str) -> float:
    return label if gain == "linear" else 2.0**label - 1


def _ties(rows: Sequence[Row]) -> list[list[float]]:
    """The labels of each group of tied preds, highest pred first."""
    preds = sorted({pred for pred, _ in rows}, reverse=True)
    return [[label for p, label in rows if p == pred] for pred in preds]


def _orders(rows: Sequence[Row]) -> int:
    return math.prod(math.factorial(len(tie)) for tie in _ties(rows))


def names(cutoffs: Sequence[int]) -> list[str]:
    """Every value of a block, in the order of the JSON."""
    return ["ndcg", *(f"ndcg@{k}" for k in cutoffs), *(f"recall@{k}" for k in cutoffs),
            "mrr", *(f"map@{k}" for k in cutoffs), *(f"hit_rate@{k}" for k in cutoffs)]


def ranking_values(labels: Sequence[float], cutoffs: Sequence[int],
                   gain: str = "linear") -> dict[str, float]:
    """Every value of one ranking (labels in rank order, no ties), from the definitions."""
    ideal = sorted((_gain(label, gain) for label in labels), reverse=True)
    gains = [_gain(label, gain) for label in labels]
    rel = [1 if label > 0 else 0 for label in labels]
    relevant = sum(rel)
    values = {"ndcg": _dcg(gains, None) / _dcg(ideal, None)}
    for k in cutoffs:
        values[f"ndcg@{k}"] = _dcg(gains, k) / _dcg(ideal, k)
    for k in cutoffs:
        values[f"recall@{k}"] = sum(rel[:k]) / relevant
    values["mrr"] = 1 / (rel.index(1) + 1)
    for k in cutoffs:
        precision_sum = sum(sum(rel[:i + 1]) / (i + 1) for i in range(min(k, len(rel)))
                            if rel[i])
        values[f"map@{k}"] = precision_sum / min(k, relevant)
    for k in cutoffs:
        values[f"hit_rate@{k}"] = 1.0 if any(rel[:k]) else 0.0
    return values


def _expected(rows: Sequence[Row], cutoffs: Sequence[int], gain: str) -> dict[str, float]:
    """The expectations over the ties' orders directly, tie by tie (positions [a, b))."""
    ties = _ties(rows)
    relevant = sum(1 for _, label in rows if label > 0)
    ideal = sorted((_gain(label, gain) for _, label in rows), reverse=True)
    dcg = {name: 0.0 for name in ["ndcg", *(f"ndcg@{k}" for k in cutoffs)]}
    found = {k: Fraction(0) for k in cutoffs}
    # P(rel at position p) and, for p != q, P(rel at p and at q), from the ties alone
    share: list[Fraction] = []
    tie_of: list[int] = []
    start = 0
    for index, tie in enumerate(ties):
        end = start + len(tie)
        gains = [_gain(label, gain) for label in tie]
        mean = sum(gains) / len(tie)
        hits = sum(1 for label in tie if label > 0)
        for position in range(start, end):
            dcg["ndcg"] += mean / math.log2(position + 2)
            for k in cutoffs:
                if position < k:
                    dcg[f"ndcg@{k}"] += mean / math.log2(position + 2)
            share.append(Fraction(hits, len(tie)))
            tie_of.append(index)
        for k in cutoffs:
            found[k] += Fraction(hits * max(0, min(k, end) - start), len(tie))
        start = end
    sizes = [len(tie) for tie in ties]
    hits_of = [sum(1 for label in tie if label > 0) for tie in ties]

    def both(p: int, q: int) -> Fraction:
        if p == q:
            return share[p]
        if tie_of[p] != tie_of[q]:
            return share[p] * share[q]
        m, r = sizes[tie_of[p]], hits_of[tie_of[p]]
        return Fraction(r * (r - 1), m * (m - 1))

    values = {"ndcg": dcg["ndcg"] / _dcg(ideal, None)}
    for k in cutoffs:
        values[f"ndcg@{k}"] = dcg[f"ndcg@{k}"] / _dcg(ideal, k)
    for k in cutoffs:
        values[f"recall@{k}"] = float(found[k] / relevant)
    # the first tie with a relevant row: its first relevant row at offset j with chance
    # C(m - 1 - j, r - 1) / C(m, r); none in its first c rows with C(m - r, c) / C(m, c)
    start = 0
    for tie in ties:
        m, r = len(tie), sum(1 for label in tie if label > 0)
        if r:
            break
        start += m
    values["mrr"] = float(sum(Fraction(math.comb(m - 1 - j, r - 1), math.comb(m, r))
                              / (start + j + 1) for j in range(m - r + 1)))
    for k in cutoffs:
        total = sum(both(p, q) / (p + 1) for p in range(min(k, len(share)))
                    for q in range(p + 1))
        values[f"map@{k}"] = float(total / min(k, relevant))
    for k in cutoffs:
        c = max(0, min(k - start, m))
        values[f"hit_rate@{k}"] = float(1 - Fraction(math.comb(m - r, c), math.comb(m, c)))
    return values


def user_values(rows: Sequence[Row], cutoffs: Sequence[int],
                gain: str = "linear") -> dict[str, float] | None:
    """Every value (:func:`names`) of one user, or None when not valid."""
    if not any(label > 0 for _, label in rows):
        return None
    if _orders(rows) > ENUMERATE_UP_TO:
        return _expected(rows, cutoffs, gain)
    # every ranking the ties allow, each equally likely
    total = dict.fromkeys(names(cutoffs), 0.0)
    count = 0
    for choice in itertools.product(*(itertools.permutations(tie) for tie in _ties(rows))):
        values = ranking_values([label for tie in choice for label in tie], cutoffs, gain)
        count += 1
        for name, value in values.items():
            total[name] += value
    return {name: value / count for name, value in total.items()}


def ranking(uid: Sequence[Any], pred: Sequence[float], label: Sequence[float],
            tag: Sequence[Any] | None, cutoffs: Sequence[int], gain: str = "linear",
            compare: Sequence[float] | None = None) -> dict[str, dict[str, Any]]:
    """Every block (``all``, then each tag in sorted order): its values (None when no user
    is valid), ``valid_user_count``, ``real_user_count``, ``real_ins_num``, ``users_le_k``
    (per cutoff, the valid users of at most K rows); with
    ``compare`` (model B's preds), ``"compare"``: B's values and each value's ``X_diff``
    (B - A, the mean of the users' differences)."""
    blocks: dict[Any, dict[Any, list[tuple[float, float, float]]]] = {"all": {}}
    tags = sorted(set(tag)) if tag is not None else []
    for t in tags:
        blocks[t] = {}
    for i, user in enumerate(uid):
        row = (float(pred[i]), float(label[i]),
               math.nan if compare is None else float(compare[i]))
        blocks["all"].setdefault(user, []).append(row)
        if tag is not None:
            blocks[tag[i]].setdefault(user, []).append(row)
    out = {}
    for name, users in blocks.items():
        per_user = [user_values([(p, y) for p, y, _ in rows], cutoffs, gain)
                    for rows in users.values()]
        valid = [v for v in per_user if v is not None]
        block: dict[str, Any] = {value: (sum(v[value] for v in valid) / len(valid)
                                         if valid else None) for value in names(cutoffs)}
        block.update(valid_user_count=len(valid), real_user_count=len(users),
                     real_ins_num=sum(len(rows) for rows in users.values()))
        # a valid user of at most K rows has every relevant row among its first K
        block["users_le_k"] = {str(cutoff): sum(
            1 for rows, v in zip(users.values(), per_user, strict=True)
            if v is not None and len(rows) <= cutoff) for cutoff in cutoffs}
        if compare is not None:
            b_users = [user_values([(b, y) for _, y, b in rows], cutoffs, gain)
                       for rows in users.values()]
            b_valid = [v for v in b_users if v is not None]
            compared: dict[str, Any] = {}
            for value in names(cutoffs):
                compared[value] = (sum(v[value] for v in b_valid) / len(b_valid)
                                   if b_valid else None)
            for value in names(cutoffs):
                diffs = [b[value] - a[value] for a, b in zip(per_user, b_users, strict=True)
                         if a is not None and b is not None]
                compared[f"{value}_diff"] = sum(diffs) / len(diffs) if diffs else None
            block["compare"] = compared
        out[str(name)] = block
    return out
