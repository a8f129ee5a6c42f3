"""Per-user sums of the ``ranking`` kind: NDCG, NDCG@K and Recall@K (whole-array numpy).

A group is a user (block ``all``) or a user's rows of one tag (the block of that tag).
Within a group the rows are ranked by pred, highest first, position ``p = 0, 1, ...``
(rank ``p + 1``), discount ``d(p) = 1 / log2(p + 2)``, gain = label. Rows with tied preds
(a run over positions ``[a, b)``) take every order of the tie with equal chance:

- each position of the run has the expected gain ``mean(label over the run)``, so
  ``DCG@K = sum over runs of mean_gain * sum_{a <= p < min(b, K)} d(p)``
  (scikit-learn's ``ndcg_score`` with ``ignore_ties=False``);
- a relevant row (label > 0) of the run is among the first ``K`` with chance
  ``clip(K - a, 0, b - a) / (b - a)``, so the expected number of relevant rows in the
  first ``K`` is ``sum over runs of relevant_in_run * clip(K - a, 0, b - a) / (b - a)``.

``IDCG@K`` is the DCG@K of the labels sorted descending, ``NDCG@K = DCG@K / IDCG@K``,
``NDCG`` the same without a cutoff, ``Recall@K`` = expected relevant rows in the first K
/ relevant rows. A group without a relevant row is not valid (its values are undefined);
it still counts as a user, and its rows as rows.

Each block gets ``sum_fields(cutoffs)``: valid users, users, rows, then for each value
(:func:`value_names`) its sum over the valid users and the sum of its squares, each in an
exact accumulator (:mod:`mpieval.kernels.exact`). The rows are ordered by (key, block,
-pred, label) (:func:`ranked`), so every group's values are computed from its rows in one order
whatever order they arrived in (rows equal in all four are interchangeable), and each
per-group sum is a sequential ``bincount`` in that order: the values' bits do not depend on
the arrival order or on which rank owns the user. O(n log n) for the sorts, then
O(n * (1 + len(cutoffs))).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpieval.kernels import exact

COUNT_FIELDS = ("valid_users", "users", "rows")


def value_names(cutoffs: Sequence[int]) -> tuple[str, ...]:
    """The values of one block, in order: ``ndcg``, ``ndcg@K`` then ``recall@K`` for each
    cutoff as given (ascending)."""
    return ("ndcg", *(f"ndcg@{k}" for k in cutoffs), *(f"recall@{k}" for k in cutoffs))


def sum_fields(cutoffs: Sequence[int]) -> tuple[str, ...]:
    """The summed fields of one block: :data:`COUNT_FIELDS`, then ``NAME_sum`` and
    ``NAME_sq_sum`` for each value."""
    return COUNT_FIELDS + tuple(f"{name}{suffix}" for name in value_names(cutoffs)
                                for suffix in ("_sum", "_sq_sum"))


def user_sums(keys: np.ndarray, pred: np.ndarray, label: np.ndarray,
              tag: np.ndarray | None, n_tags: int, cutoffs: Sequence[int]) -> np.ndarray:
    """The exact sums of every block (``all``, then tag ``0 .. n_tags - 1``) over the groups
    of these rows, shape ``(1 + n_tags, len(sum_fields(cutoffs)), exact.DIGITS)``.

    ``keys``: uint64 user keys, every row of a user present; ``pred`` and ``label`` floats
    (labels finite and >= 0); ``tag``: each row's tag index, ``n_tags`` (or more) for a row
    without a tag, or None (no tags)."""
    sums = exact.accumulator(1 + n_tags, len(sum_fields(cutoffs)))
    label = np.asarray(label, dtype=np.float64)
    _add_groups(sums, keys, np.zeros(len(keys), dtype=np.intp), pred, label, cutoffs)
    if tag is not None and n_tags > 0:
        tagged = tag < n_tags
        _add_groups(sums, keys[tagged], 1 + tag[tagged].astype(np.intp), pred[tagged],
                    label[tagged], cutoffs)
    return sums


def _add_groups(sums: np.ndarray, keys: np.ndarray, block: np.ndarray, pred: np.ndarray,
                label: np.ndarray, cutoffs: Sequence[int]) -> None:
    """Add the groups (key, block) of these rows to ``sums[block]``."""
    if len(keys) == 0:
        return
    values, valid, group_block, group_rows = group_values(keys, block, pred, label, cutoffs)
    order = np.argsort(group_block, kind="stable")
    blocks, starts = np.unique(group_block[order], return_index=True)
    for b, members in zip(blocks.tolist(), np.split(order, starts[1:]), strict=True):
        counts = (valid[members].sum(), len(members), group_rows[members].sum())
        for field, count in enumerate(counts):
            exact.add_values(sums[b, field], np.array([count], dtype=np.float64))
        block_values = values[members[valid[members]]]
        for j in range(block_values.shape[1]):
            column = np.ascontiguousarray(block_values[:, j])
            exact.add_values(sums[b, len(COUNT_FIELDS) + 2 * j], column)
            exact.add_values(sums[b, len(COUNT_FIELDS) + 2 * j + 1], column * column)


def group_values(keys: np.ndarray, block: np.ndarray, pred: np.ndarray, label: np.ndarray,
                 cutoffs: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray]:
    """Every group's values (module doc), one row a group in the order of (key, block):
    ``values`` (n_groups, len(value_names(cutoffs))), NaN where the group is not valid;
    ``valid`` (it has a relevant row); the group's block; its rows."""
    label = np.asarray(label, dtype=np.float64)
    pred = np.asarray(pred)
    n = len(keys)
    order = ranked(keys, block, pred, label)
    k, b, p, y = keys[order], block[order], pred[order], label[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (k[1:] != k[:-1]) | (b[1:] != b[:-1])
    new_run = new_group.copy()
    new_run[1:] |= p[1:] != p[:-1]
    group = np.cumsum(new_group) - 1
    run = np.cumsum(new_run) - 1
    group_start = np.flatnonzero(new_group)
    run_start = np.flatnonzero(new_run)
    n_groups, n_runs = len(group_start), len(run_start)
    group_rows = np.diff(np.append(group_start, n))
    position = np.arange(n) - group_start[group]
    discount = 1.0 / np.log2(position + 2.0)

    run_rows = np.diff(np.append(run_start, n))
    run_first = position[run_start]  # a: the run's first position in its group
    run_group = group[run_start]
    relevant = y > 0
    run_relevant = np.bincount(run, weights=relevant, minlength=n_runs)
    mean_gain = (np.bincount(run, weights=y, minlength=n_runs) / run_rows)[run]
    gain = mean_gain * discount
    ideal = y[np.lexsort((-y, group))] * discount  # each group's labels, descending
    relevant_rows = np.bincount(group, weights=relevant, minlength=n_groups)
    valid = relevant_rows > 0

    def per_group(weights: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        if rows is None:
            return np.bincount(group, weights=weights, minlength=n_groups)
        return np.bincount(group[rows], weights=weights[rows], minlength=n_groups)

    with np.errstate(invalid="ignore", divide="ignore"):  # invalid groups: NaN
        ndcg = [per_group(gain) / per_group(ideal)]
        recall = []
        for cutoff in cutoffs:
            top = position < min(cutoff, n)
            ndcg.append(per_group(gain, top) / per_group(ideal, top))
            in_top = np.clip(min(cutoff, n) - run_first, 0, run_rows)
            expected = np.bincount(run_group, weights=run_relevant * in_top / run_rows,
                                   minlength=n_groups)
            recall.append(expected / relevant_rows)
    values = np.stack(ndcg + recall, axis=1)
    values[~valid] = np.nan
    return values, valid, b[group_start], group_rows


def ranked(keys: np.ndarray, block: np.ndarray, pred: np.ndarray,
           label: np.ndarray) -> np.ndarray:
    """The row order by (key, block, -pred, label), as ``np.lexsort`` of the four but
    faster: one sort of a uint64 per row (the group's index above the pred's descending
    rank: the bits of a float32 pred, else its index among the distinct preds), then the
    rows of equal group and pred sorted by label. Rows equal in all four are
    interchangeable."""
    group = _group_index(keys, block)
    if pred.dtype == np.float32:
        bits = (pred + np.float32(0)).view(np.uint32)  # + 0: -0.0 is 0.0
        descending = ~np.where(bits >> 31 != 0, ~bits, bits | np.uint32(1 << 31))
    else:
        _, descending = np.unique(-pred, return_inverse=True)  # -0.0 and 0.0 are one
    if (len(group) and group.max() >= 2**32) or len(descending) >= 2**32:
        return np.lexsort((label, -pred, group))
    rank = (group.astype(np.uint64) << np.uint64(32)) | descending.astype(np.uint64)
    order = np.argsort(rank)
    rank = rank[order]
    same = rank[1:] == rank[:-1]
    if same.any():
        tied = np.zeros(len(rank), dtype=bool)
        tied[1:] = same
        tied[:-1] |= same
        rows = np.flatnonzero(tied)
        tie = np.cumsum(np.concatenate(([True], ~same)))[rows]
        order[rows] = order[rows][np.lexsort((label[order[rows]], tie))]
    return order


def _group_index(keys: np.ndarray, block: np.ndarray) -> np.ndarray:
    """An int64 per row ordered as (key, block): the key's index among the sorted keys
    times the number of blocks, plus the block."""
    if len(keys) and not np.all(keys[1:] >= keys[:-1]):
        _, user = np.unique(keys, return_inverse=True)
    else:  # the exchange hands the rows over sorted by key
        user = np.cumsum(np.concatenate(([False], keys[1:] != keys[:-1])))
    blocks = int(block.max()) + 1 if len(block) else 1
    groups: np.ndarray = user.astype(np.int64) * blocks + block
    return groups
