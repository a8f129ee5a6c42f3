"""Per-user sums of the ``ranking`` kind: NDCG, NDCG@K, Recall@K, MRR, MAP@K, hit rate@K
(a compiled pass over each group's rows).

A group is a user (block ``all``) or a user's rows of one tag (the block of that tag).
Within a group the rows are ranked by pred, highest first, position ``p = 0, 1, ...``
(rank ``p + 1``), discount ``d(p) = 1 / log2(p + 2)``, gain = label (``linear``) or
``2^label - 1`` (``exponential``); a row is relevant when its label is above 0. Rows with
tied preds (a run over positions ``[a, b)``, ``m = b - a`` rows of which ``r`` relevant)
take every order of the tie with equal chance, and every value is its expectation over
those orders:

- each position of the run has the expected gain ``mean(gain over the run)``, so
  ``DCG@K = sum over runs of mean_gain * sum_{a <= p < min(b, K)} d(p)``
  (scikit-learn's ``ndcg_score`` with ``ignore_ties=False``);
- a relevant row of the run is among the first ``K`` with chance
  ``clip(K - a, 0, m) / m``, so the expected number of relevant rows in the first ``K``
  is ``sum over runs of r * clip(K - a, 0, m) / m``;
- only the first run with a relevant row (``a``, ``m``, ``r``) decides the first relevant
  rank: its first ``j`` rows are all not relevant with chance
  ``S_j = C(m - r, j) / C(m, j) = prod_{i < j} (m - r - i) / (m - i)``, so the first
  relevant row sits at position ``a + j`` with chance ``S_j r / (m - j)``, and
  ``MRR = sum_{j = 0}^{m - r} S_j r / (m - j) / (a + j + 1)`` and
  ``hit_rate@K = 1 - S_c``, ``c = clip(K - a, 0, m)`` (``S_c = 0`` past ``c = m - r``),
  computed as ``-expm1(sum_{i < c} log1p(-r / (m - i)))``;
- ``AP@K = sum_{p < K} rel_p * (relevant rows at positions <= p) / (p + 1) / min(K, R)``
  (``R`` the group's relevant rows): for position ``p = a + t`` of a run, with ``R_before``
  relevant rows in the runs before it, ``E[rel_p (1 + relevant before p)] =
  (r / m) (1 + R_before) + t r (r - 1) / (m (m - 1))`` (two rows of one run are both
  relevant with chance ``r (r - 1) / (m (m - 1))``; runs are ordered independently).

``IDCG@K`` is the DCG@K of the gains sorted descending, ``NDCG@K = DCG@K / IDCG@K``,
``NDCG`` the same without a cutoff, ``Recall@K`` = expected relevant rows in the first K
/ relevant rows. A group without a relevant row is not valid (its values are undefined);
it still counts as a user, and its rows as rows.

Each block gets ``sum_fields(cutoffs)``: valid users, users, rows, then for each value
(:func:`value_names`) its sum over the valid users and the sum of its squares, and with a
compared model (``compare``) for each value B's sum and sum of squares, the sum of the
differences B - A and of their squares, each in an exact accumulator
(:mod:`mpieval.kernels.exact`). The rows are ordered by (key, block, -pred, label)
(:func:`ranked`), so every group's values are computed from its rows in one order
whatever order they arrived in (rows equal in all four are interchangeable), and each
per-group sum is added row after row (or run after run) in that order: the values' bits
do not depend on the arrival order or on which rank owns the user. O(n log n) for the
sorts, then O(n * (1 + len(cutoffs))).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from mpieval import _core
from mpieval.kernels import exact
from mpieval.kernels.sort import radix_order

COUNT_FIELDS = ("valid_users", "users", "rows")
MAX_EXPONENTIAL_LABEL = 512.0
"""The largest label ``gain = "exponential"`` takes: ``2^label - 1`` and a group's sums
of it stay finite (``2^1024`` is past float64)."""
LOG_VALUES = ("ndcg", "recall")
"""The values of the log line (its fields are fixed); the others are in the JSON only."""


def value_names(cutoffs: Sequence[int]) -> tuple[str, ...]:
    """The values of one block, in order: ``ndcg``, ``ndcg@K``, ``recall@K``, ``mrr``,
    ``map@K``, ``hit_rate@K``, each cutoff as given (ascending)."""
    return _value_names(tuple(cutoffs))


@functools.lru_cache(maxsize=64)
def _value_names(cutoffs: tuple[int, ...]) -> tuple[str, ...]:
    return ("ndcg", *(f"ndcg@{k}" for k in cutoffs), *(f"recall@{k}" for k in cutoffs),
            "mrr", *(f"map@{k}" for k in cutoffs), *(f"hit_rate@{k}" for k in cutoffs))


def sum_fields(cutoffs: Sequence[int], compare: bool = False) -> tuple[str, ...]:
    """The summed fields of one block: :data:`COUNT_FIELDS`, then ``NAME_sum`` and
    ``NAME_sq_sum`` for each value, then with ``compare`` ``b_NAME_sum``,
    ``b_NAME_sq_sum``, ``NAME_diff_sum`` and ``NAME_diff_sq_sum`` for each value, then
    ``users_le_K`` for each cutoff: the valid users of at most K rows (in the block), whose
    Recall@K and hit rate@K are 1 whatever the order (made once per cutoffs: each tag
    block asks)."""
    return _sum_fields(tuple(cutoffs), compare)


@functools.lru_cache(maxsize=64)
def _sum_fields(cutoffs: tuple[int, ...], compare: bool) -> tuple[str, ...]:
    names = _value_names(cutoffs)
    fields = COUNT_FIELDS + tuple(f"{name}{suffix}" for name in names
                                  for suffix in ("_sum", "_sq_sum"))
    if compare:
        fields += tuple(field for name in names for field in (
            f"b_{name}_sum", f"b_{name}_sq_sum", f"{name}_diff_sum", f"{name}_diff_sq_sum"))
    return fields + tuple(f"users_le_{cutoff}" for cutoff in cutoffs)


def gains(label: np.ndarray, gain: str) -> np.ndarray:
    """Each row's gain: the label (``linear``) or ``2^label - 1`` (``exponential``)."""
    if gain == "linear":
        return label
    result: np.ndarray = np.exp2(label) - 1.0
    return result


def user_sums(keys: np.ndarray, pred: np.ndarray, label: np.ndarray,
              tag: np.ndarray | None, n_tags: int, cutoffs: Sequence[int],
              gain: str = "linear", compare: np.ndarray | None = None) -> np.ndarray:
    """The exact sums of every block (``all``, then tag ``0 .. n_tags - 1``) over the groups
    of these rows, shape ``(1 + n_tags, len(sum_fields(cutoffs, compare)), exact.DIGITS)``.

    ``keys``: uint64 user keys, every row of a user present; ``pred`` and ``label`` floats
    (labels finite and >= 0); ``tag``: each row's tag index, ``n_tags`` (or more) for a row
    without a tag, or None (no tags); ``compare``: model B's preds of the rows, or None."""
    sums, first = user_sums_window(keys, pred, label, tag, n_tags, cutoffs, gain, compare)
    assert isinstance(sums, np.ndarray), "digits: pairs are kept only when asked"
    return exact.widened(sums, first)


WINDOW = (28, 11)
"""``(first, digits)``: the digits of :func:`user_sums_window`'s sums (values whose
lowest bit is at least ``2**-178`` and below ``2**78``)."""


def user_sums_window(keys: np.ndarray, pred: np.ndarray, label: np.ndarray,
                     tag: np.ndarray | None, n_tags: int, cutoffs: Sequence[int],
                     gain: str = "linear", compare: np.ndarray | None = None, *,
                     alone: bool = False, kept: bool = False) -> tuple[exact.Sums, int]:
    """:func:`user_sums` cut to a window of digits (many tags: ``WINDOW``'s 11 digits a
    sum rather than 68), and its first digit: many tags
    (:func:`~mpieval.kernels.exact.summed_in`) summed as pairs
    (:class:`~mpieval.kernels.exact.Pairs`: 16 bytes a sum), then on a rank ``alone``
    rounded at once (first digit :data:`~mpieval.kernels.exact.ROUNDED`), else given as
    ``WINDOW``'s digits (every digit when a sum falls outside them), or ``kept`` as the
    pairs (:func:`~mpieval.kernels.exact.settled`); few tags summed in ``WINDOW``'s
    digits; again with every digit when a value falls outside them, or is infinite or NaN
    (the same exact sums, and floats, every way)."""
    label = np.asarray(label, dtype=np.float64)
    fields = len(sum_fields(cutoffs, compare is not None))
    window = exact.summed_in(1 + n_tags, WINDOW)
    summed = exact.zeroed(window, 1 + n_tags, fields)
    if not _added_groups(summed, None if window == exact.PAIRS else window[0], keys, pred,
                         label, tag, n_tags, cutoffs, gain, compare):
        (sums,), (first,) = exact.settled([summed], alone, WINDOW, kept=kept)
        return sums, first
    sums = exact.accumulator(1 + n_tags, fields)
    _added_groups(sums, None, keys, pred, label, tag, n_tags, cutoffs, gain, compare)
    return sums, 0


def _added_groups(sums: exact.Sums, window_first: int | None, keys: np.ndarray,
                  pred: np.ndarray, label: np.ndarray, tag: np.ndarray | None, n_tags: int,
                  cutoffs: Sequence[int], gain: str, compare: np.ndarray | None) -> bool:
    """Every block's groups added to ``sums`` (a window of digits from ``window_first``,
    every digit, or pairs); whether a value fell outside the window. The preds' order
    (:func:`pred_order`) is found once for the block ``all`` and the tags' blocks."""
    pred, compare = np.asarray(pred), None if compare is None else np.asarray(compare)
    order, b_order = pred_order(pred), None if compare is None else pred_order(compare)
    outside = _add_groups(sums, window_first, keys, np.zeros(len(keys), dtype=np.intp), pred,
                          label, cutoffs, gain, compare, order, b_order)
    if tag is not None and n_tags > 0:
        tagged = tag < n_tags
        if tagged.all():  # every row has a tag: the rows themselves, not a copy of them
            outside |= _add_groups(sums, window_first, keys, 1 + tag.astype(np.intp), pred,
                                   label, cutoffs, gain, compare, order, b_order)
        else:
            outside |= _add_groups(sums, window_first, keys[tagged],
                                   1 + tag[tagged].astype(np.intp), pred[tagged],
                                   label[tagged], cutoffs, gain,
                                   None if compare is None else compare[tagged],
                                   order[tagged], None if b_order is None else b_order[tagged])
    return outside


def _add_groups(sums: exact.Sums, window_first: int | None, keys: np.ndarray,
                block: np.ndarray, pred: np.ndarray, label: np.ndarray,
                cutoffs: Sequence[int], gain: str, compare: np.ndarray | None,
                order: np.ndarray | None = None, b_order: np.ndarray | None = None) -> bool:
    """Add the groups (key, block) of these rows to ``sums[block]`` (the digits from
    ``window_first`` on: :func:`mpieval.kernels.exact.add_at`); whether a value fell
    outside them. ``order``, ``b_order``: :func:`pred_order` of ``pred`` and ``compare``
    when known. The rows put in ranked order once (:class:`_RankedRows`), then
    :data:`GROUPS_AT_ONCE` groups at a time: their values (and B's), their counts, then
    every field of a valid group (each value, its square, B's and the differences, the
    users of at most K rows) added to its block's row in one pass whatever the number of
    blocks (tags). The groups' values and fields live in arrays of a run's size, reused:
    nothing is kept a group beyond its start, block and rows (8M groups: no 1.7 GB of
    values), and a block's sums are visited once a group rather than once a field
    (60,000 tags: 37 passes over their sums at random)."""
    if len(keys) == 0:
        return False
    a = _RankedRows(keys, block, pred, label, gain, order)
    b = None if compare is None else _RankedRows(keys, block, compare, label, gain, b_order,
                                                  a.starts)
    size = min(a.groups, GROUPS_AT_ONCE)
    counts = np.empty((size, len(COUNT_FIELDS)))  # reused: their pages touched once
    room = np.empty((size, sums.shape[1] - len(COUNT_FIELDS)))
    a_out = _Outputs(size, len(cutoffs))
    b_out = None if b is None else _Outputs(size, len(cutoffs))
    outside = False
    for lo in range(0, a.groups, GROUPS_AT_ONCE):
        hi = min(lo + GROUPS_AT_ONCE, a.groups)
        columns, valid = a.values(lo, hi, cutoffs, a_out)
        rows, blocks, run_counts = a.group_rows[lo:hi], a.group_block[lo:hi], counts[: hi - lo]
        run_counts[:, 0], run_counts[:, 1], run_counts[:, 2] = valid, 1.0, rows
        outside |= exact.add_at(sums, blocks, run_counts, 0, window_first)
        held = np.flatnonzero(valid)
        fields = room[: len(held)]
        kept = [column[held] for column in columns]
        for number, value in enumerate(kept):  # each value's sum, then its squares'
            fields[:, 2 * number], fields[:, 2 * number + 1] = value, value * value
        field = 2 * len(kept)
        if b is not None and b_out is not None:
            for value, b_column in zip(kept, b.values(lo, hi, cutoffs, b_out)[0],
                                       strict=True):
                b_value = b_column[held]
                diff = b_value - value
                for values in (b_value, b_value * b_value, diff, diff * diff):
                    fields[:, field] = values
                    field += 1
        held_rows = rows[held]
        for cutoff in cutoffs:  # the users of at most K rows
            fields[:, field] = held_rows <= cutoff
            field += 1
        outside |= exact.add_at(sums, blocks[held], fields, len(COUNT_FIELDS), window_first)
    return outside


GROUPS_AT_ONCE = 1 << 16
"""The groups whose values :func:`_add_groups` finds and adds in one pass."""


def group_values(keys: np.ndarray, block: np.ndarray, pred: np.ndarray, label: np.ndarray,
                 cutoffs: Sequence[int],
                 gain: str = "linear") -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """Every group's values (module doc), one row a group in the order of (key, block):
    ``values`` (n_groups, len(value_names(cutoffs))), NaN where the group is not valid;
    ``valid`` (it has a relevant row); the group's block; its rows
    (:class:`_RankedRows` over every group at once)."""
    rows = _RankedRows(keys, block, pred, label, gain)
    columns, valid = rows.values(0, rows.groups, cutoffs,
                                 _Outputs(rows.groups, len(cutoffs)))
    values = np.stack(columns, axis=1)
    values[~valid] = np.nan
    return values, valid, rows.group_block, rows.group_rows


class _Outputs:
    """Where the compiled ``group_values`` writes the values of up to ``size`` groups
    (``cuts`` cutoffs): reused from one run of groups to the next."""

    def __init__(self, size: int, cuts: int) -> None:
        self.cuts = cuts
        self.ndcg, self.relevant_rows, self.first_relevant = (np.empty(size) for _ in range(3))
        self.ndcg_at, self.recall_at, self.ap_at = (np.empty(cuts * size) for _ in range(3))
        self.first_group, self.first_at, self.first_rows = (
            np.empty(size, dtype=np.int64) for _ in range(3))

    def of(self, groups: int) -> list[np.ndarray]:
        """The arrays for ``groups`` groups, in ``group_values``' order of outputs."""
        at = self.cuts * groups
        return [self.ndcg[:groups], self.ndcg_at[:at], self.recall_at[:at], self.ap_at[:at],
                self.relevant_rows[:groups], self.first_group[:groups], self.first_at[:groups],
                self.first_rows[:groups], self.first_relevant[:groups]]


class _RankedRows:
    """The rows in :func:`ranked` order, ready for the values of any run of their groups.

    ``starts``: where each group (key, block) starts and, last, the rows (``group_rows``
    beside them, and ``group_block`` when they are found here); given, the groups of an
    earlier :class:`_RankedRows` of the same keys and blocks (B's preds: the same groups,
    its own order within each).
    ``values`` runs one compiled pass over each group of a run
    (``mpieval/kinds/ranking/kernels.hpp``: its runs of tied preds, the gains sorted for
    the ideal order, every sum added row after row in that order as ``np.bincount`` adds
    them), with the discounts ``1 / log2(p + 2)`` and the gains made by numpy: a group's
    values depend only on its rows. MRR and the hit rates from each valid group's first
    run with a relevant row (:class:`_FirstRelevant`)."""

    def __init__(self, keys: np.ndarray, block: np.ndarray, pred: np.ndarray,
                 label: np.ndarray, gain: str, descending: np.ndarray | None = None,
                 starts: np.ndarray | None = None) -> None:
        label = np.asarray(label, dtype=np.float64)
        pred = np.asarray(pred)
        order = ranked(keys, block, pred, label, descending)
        if starts is None:
            k = np.ascontiguousarray(keys[order], dtype=np.uint64)
            b = np.ascontiguousarray(block[order], dtype=np.int64)
            starts = np.empty(len(keys) + 1, dtype=np.int64)
            groups = _core.ranking.group_starts(k, b, starts)
            del k
            starts = starts[: groups + 1]
            self.group_block = b[starts[:-1]]
            del b
        self.starts = starts
        self.groups = len(starts) - 1
        self.group_rows = np.diff(starts)
        p = np.ascontiguousarray(pred[order])
        self.pred = p if p.dtype in (np.float32, np.float64) else p.astype(np.float64)
        self.label = label[order]
        del order
        self.gain = np.ascontiguousarray(gains(self.label, gain), dtype=np.float64)
        self.discount = 1.0 / np.log2(np.arange(int(self.group_rows.max(initial=0))) + 2.0)

    def values(self, lo: int, hi: int, cutoffs: Sequence[int],
               out: _Outputs) -> tuple[list[np.ndarray], np.ndarray]:
        """The values of groups ``lo .. hi - 1`` (module doc), one array a value in the
        order of ``value_names(cutoffs)`` (not a number where the group is not valid),
        and ``valid``; in ``out``'s arrays (the next call's values overwrite them)."""
        first_row, last_row = int(self.starts[lo]), int(self.starts[hi])
        groups = hi - lo
        outputs = out.of(groups)
        ndcg, ndcg_at, recall_at, ap_at, relevant_rows = outputs[:5]
        with_relevant = _core.ranking.group_values(
            self.starts[lo:hi + 1] - first_row, self.pred[first_row:last_row],
            self.gain[first_row:last_row], self.label[first_row:last_row], self.discount,
            np.array(cutoffs, dtype=np.int64), *outputs)
        first = _FirstRelevant(*(column[:with_relevant] for column in outputs[5:]))
        hit_rate = [first.hit_rate(cutoff, groups) for cutoff in cutoffs]
        cuts = (len(cutoffs), groups)
        return ([ndcg, *ndcg_at.reshape(cuts), *recall_at.reshape(cuts),
                 first.reciprocal_rank(groups), *ap_at.reshape(cuts), *hit_rate],
                relevant_rows > 0)


class _FirstRelevant:
    """The first run with a relevant row of each valid group (module doc: MRR, hit
    rate): its group, first position ``a``, rows ``m`` and relevant rows ``r``, and the
    chances ``S_j`` (``j = 0 .. m - r``) that its first ``j`` rows are all not relevant,
    laid out one segment a run."""

    def __init__(self, group: np.ndarray, first: np.ndarray, rows: np.ndarray,
                 relevant: np.ndarray) -> None:
        self.group, self.first = group, first.astype(np.float64)
        self.rows, self.relevant = rows.astype(np.float64), relevant
        lengths = (rows - relevant).astype(np.int64) + 1
        self.starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        self.segment = np.repeat(np.arange(len(group)), lengths)
        self.j = np.arange(int(lengths.sum())) - self.starts[self.segment]
        m, r = self.rows[self.segment], self.relevant[self.segment]
        self.next_share = r / (m - self.j)  # the chance that row j is relevant given S_j
        with np.errstate(divide="ignore"):
            self.log_factor = np.log1p(-self.next_share)  # -inf at j = m - r
        self.lengths = lengths

    def none_before(self) -> np.ndarray:
        """``S_j`` at every entry: the product of the factors ``1 - r / (m - i)`` of
        ``i < j``, left to right in each segment (whatever the other segments)."""
        factor = 1.0 - self.next_share
        out = np.ones(len(self.j))
        long = self.lengths > _LEVELS
        for start, length in zip(self.starts[long].tolist(), self.lengths[long].tolist(),
                                 strict=True):
            out[start + 1:start + length] = np.cumprod(factor[start:start + length - 1])
        short = np.flatnonzero(~long)
        short = short[np.argsort(-self.lengths[short], kind="stable")]
        short_lengths = self.lengths[short]
        for step in range(1, int(short_lengths.max(initial=1))):
            alive = short[:np.searchsorted(-short_lengths, -step, side="left")]
            at = self.starts[alive] + step
            out[at] = out[at - 1] * factor[at - 1]
        return out

    def reciprocal_rank(self, n_groups: int) -> np.ndarray:
        """``E[1 / rank of the first relevant row]`` of each group (NaN: no relevant)."""
        terms = (self.none_before() * self.next_share
                 / (self.first[self.segment] + self.j + 1.0))
        out = np.full(n_groups, np.nan)
        out[self.group] = np.bincount(self.segment, weights=terms, minlength=len(self.group))
        return out

    def hit_rate(self, cutoff: int, n_groups: int) -> np.ndarray:
        """The chance that a relevant row is among the first ``cutoff`` (NaN: none
        relevant): ``1 - S_c``, ``c = clip(cutoff - a, 0, m)``."""
        inside = np.clip(cutoff - self.first, 0, self.rows)[self.segment]
        kept = self.j < inside
        logs = np.bincount(self.segment[kept], weights=self.log_factor[kept],
                           minlength=len(self.group))
        out = np.full(n_groups, np.nan)
        out[self.group] = -np.expm1(logs)
        return out


_LEVELS = 64
"""Segments of :meth:`_FirstRelevant.none_before` longer than this take one ``cumprod``
each; the shorter ones go step by step together."""


def ranked(keys: np.ndarray, block: np.ndarray, pred: np.ndarray,
           label: np.ndarray, descending: np.ndarray | None = None) -> np.ndarray:
    """The row order by (key, block, -pred, label), as ``np.lexsort`` of the four but
    faster: one radix sort of a uint64 per row (the group's index above the pred's
    :func:`pred_order`, or ``descending`` when given), then the rows of equal group and
    pred sorted by label. Rows equal in all four are interchangeable."""
    group = _group_index(keys, block)
    if (len(group) and group.max() >= 2**32) or len(group) >= 2**32:
        return np.lexsort((label, -pred, group))
    if descending is None:
        descending = pred_order(pred)
    rank = (group.astype(np.uint64) << np.uint64(32)) | descending.astype(np.uint64)
    del descending
    order = radix_order(rank)  # rank sorted in place
    same = rank[1:] == rank[:-1]
    if same.any():
        tied = np.zeros(len(rank), dtype=bool)
        tied[1:] = same
        tied[:-1] |= same
        rows = np.flatnonzero(tied)
        tie = np.cumsum(np.concatenate(([True], ~same)))[rows]
        order[rows] = order[rows][np.lexsort((label[order[rows]], tie))]
    return order


def pred_order(pred: np.ndarray) -> np.ndarray:
    """A uint32 a pred, larger for a smaller pred and equal for equal ones (-0.0 and 0.0
    one): the bits of a float32 pred (reordered), else its index among the distinct preds
    (:func:`descending_index`; fewer than 2**32 rows: :func:`ranked` sorts more with
    ``np.lexsort``). Of a subset of the preds, its part is such a number too (the order of
    :func:`ranked` the same)."""
    if pred.dtype == np.float32:
        bits = (pred + np.float32(0)).view(np.uint32)  # + 0: -0.0 is 0.0
        result: np.ndarray = ~np.where(bits >> 31 != 0, ~bits, bits | np.uint32(1 << 31))
        return result
    return descending_index(pred).astype(np.uint32)


def descending_index(pred: np.ndarray) -> np.ndarray:
    """Each pred's index among the distinct preds, the largest first (-0.0 and 0.0 one),
    as ``np.unique(-pred, return_inverse=True)[1]`` (int64): one radix sort of the preds'
    bits in their order (:func:`mpieval.kernels.sort.radix_order`), not a comparison sort.
    Finite preds (the kind's update checks them)."""
    bits = (np.asarray(pred, dtype=np.float64) + 0.0).view(np.uint64)  # + 0: -0.0 is 0.0
    sign = np.uint64(1 << 63)
    key = np.where(bits & sign != 0, bits, ~(bits | sign))  # ascending: the largest first
    del bits
    order = radix_order(key)
    index = np.empty(len(key), dtype=np.int64)
    if len(key):
        new = np.empty(len(key), dtype=np.int64)
        new[0] = 0
        np.not_equal(key[1:], key[:-1], out=new[1:])
        index[order] = np.cumsum(new, out=new)
    return index


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
