"""Kernels of the ``auc`` kind: the Abacus/Paddle ``BasicAucCalculator`` and the
statistics read from its table.

The table has two rows of ``T`` buckets, ``table[0]`` for negatives and ``table[1]``
for positives; a prediction ``p`` falls in bucket ``min(floor(p * T), T - 1)`` with the
product taken in float64. Alongside the table the sums ``SUM_FIELDS`` are kept, over rows
with label ``y``, weight ``w`` (1 when absent) and pred ``p``:

- ``abserr = sum w |p - y|``, ``sqrerr = sum w (p - y)^2``, ``pred = sum w p``, ``rows``
  (the row count, unweighted);
- ``logloss = sum w ce(p, y)`` with ``ce = -(y ln q + (1 - y) ln(1 - q))`` and ``q`` the
  pred clipped to ``[1e-15, 1 - 1e-15]``;
- the second moments of the intervals (:mod:`mpieval.kernels.stats`): ``label_sq = sum
  w y^2``, ``pred_sq = sum w p^2`` and ``label_pred = sum w y p``. A weight counts as
  repeated rows here too (a frequency weight), as in the table.

Each sum is exact (:mod:`mpieval.kernels.exact`: an accumulator of ``DIGITS`` digits per
field, ``sums`` of shape ``(N_SUMS, DIGITS)``), so it has the same bits however the rows
were ordered, batched or split over ranks; each row's terms are float64 operations on
that row alone (the products and the log), rounded as written. Without weights and with
0/1 labels the sums come from four exact sums of the batch (pred over negatives, over
positives, ``p^2``, the log terms): ``abserr = S0 + N1 - S1`` and ``sqrerr = sum p^2 -
2 S1 + N1`` exactly. The table holds counts, exact up to ``2**53`` per bucket; weights
that are not whole numbers make its buckets float sums again, whose last bits depend on
the order of the rows.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpieval import _core
from mpieval.kernels import exact

K_MAX_SPAN = 0.01
K_RELATIVE_ERROR_BOUND = 0.05

SUM_FIELDS = ("abserr", "sqrerr", "pred", "rows", "logloss", "label_sq", "pred_sq",
              "label_pred")
(SUM_ABSERR, SUM_SQRERR, SUM_PRED, SUM_ROWS, SUM_LOGLOSS, SUM_LABEL_SQ, SUM_PRED_SQ,
 SUM_LABEL_PRED) = range(len(SUM_FIELDS))
N_SUMS = len(SUM_FIELDS)

PRED_CLIP = 1e-15  # logloss clips pred to [PRED_CLIP, 1 - PRED_CLIP]

# dtypes the compiled update (mpieval._core) takes as they are; anything else is converted.
PRED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
LABEL_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64, np.float32,
                                             np.float64))


def buckets(pred: np.ndarray, table_size: int) -> np.ndarray:
    """Bucket of each prediction: ``min(floor(pred * T), T - 1)``, the product in float64.

    ``pred`` must already lie in ``[0, 1]``, so truncation equals floor.
    """
    index: np.ndarray = np.multiply(pred, float(table_size), dtype=np.float64).astype(np.intp)
    np.minimum(index, table_size - 1, out=index)
    return index


def binary_logloss(p: float, y: int) -> float:
    """A row's logloss for a 0/1 label: ``-ln q`` for a click, ``-ln(1 - q)`` otherwise,
    ``q`` the pred clipped to ``[PRED_CLIP, 1 - PRED_CLIP]`` and ``ln`` mpieval's own
    :func:`log` (``auc`` and ``wuauc``; the kernels' own: ``binary_logloss`` in
    ``mpieval/_core/logloss.hpp``, the same operations)."""
    q = min(max(p, PRED_CLIP), 1.0 - PRED_CLIP)
    return -log(q if y == 1 else 1.0 - q)


_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
_LG = [float.fromhex(h) for h in (
    "0x1.5555555555593p-1", "0x1.999999997fa04p-2", "0x1.2492494229359p-2",
    "0x1.c71c51d8e78afp-3", "0x1.7466496cb03dep-3", "0x1.39a09d078c69fp-3",
    "0x1.2f112df3e5244p-3")]
_SQRT_HALF = 0x3FE6A09E << 32
_ONE = 0x3FF << 52
_MANTISSA = (1 << 52) - 1


def log(x: float) -> float:
    """The natural log of a positive normal float64, as the kernels compute it (``log`` in
    ``mpieval/_core/logloss.hpp``: fdlibm's algorithm in plain float64 operations, the same
    bits on every machine, error below 1 ulp), operation for operation."""
    (bits,) = struct.unpack("<Q", struct.pack("<d", x))
    bits = (bits + _ONE - _SQRT_HALF) & 0xFFFF_FFFF_FFFF_FFFF
    (m,) = struct.unpack("<d", struct.pack("<Q", (bits & _MANTISSA) + _SQRT_HALF))
    k = float((bits >> 52) - 1023)
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LG
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (lg2 + w * (lg4 + w * lg6))
    t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)))
    r = t2 + t1
    return float((((s * (hfsq + r) + k * _LN2_LO) - hfsq) + f) + k * _LN2_HI)


def bucket_pairs(pred_a: np.ndarray, pred_b: np.ndarray, table_size: int,
                 dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """:func:`buckets` of two preds of the same rows, as ``dtype``, in one compiled pass."""
    a = _as_kernel_input(pred_a, PRED_DTYPES)
    b = _as_kernel_input(pred_b, PRED_DTYPES)
    bucket_a, bucket_b = np.empty(len(a), dtype=dtype), np.empty(len(b), dtype=dtype)
    _core.auc.bucket_pairs(a, b, table_size, bucket_a, bucket_b)
    return bucket_a, bucket_b


def _as_kernel_input(values: np.ndarray, accepted: tuple[np.dtype, ...]) -> np.ndarray:
    if values.dtype == np.bool_:
        values = values.view(np.uint8)
    values = values if values.dtype in accepted else values.astype(np.float64)
    return np.ascontiguousarray(values)


def accumulate(
    table: np.ndarray,
    sums: np.ndarray,
    pred: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    binary: bool = True,
) -> None:
    """Add validated rows to ``table`` (2, T) and the exact ``sums`` (``N_SUMS``,
    ``exact.DIGITS``), in place, in one compiled pass.

    Unweighted 0/1 labels (``binary``) add 1 to ``table[label, bucket]``. Otherwise a row
    with label ``y`` and weight ``w`` (1 when absent) adds ``w (1 - y)`` to
    ``table[0, bucket]`` and ``w y`` to ``table[1, bucket]``; the sums (``SUM_FIELDS``)
    are weighted the same way (Paddle leaves abserr and sqrerr unweighted; mpieval
    does not, so that integer weights equal repeated rows for every field).
    """
    p = _as_kernel_input(pred, PRED_DTYPES)
    y = _as_kernel_input(label, LABEL_DTYPES)
    if binary and weight is None:
        _core.auc.accumulate_binary(table, p, y, sums)
    else:
        w = np.ones(len(p)) if weight is None else np.ascontiguousarray(weight, np.float64)
        _core.auc.accumulate_weighted(table, p, y, w, sums)


def accumulate_slices(tables: np.ndarray, sums: np.ndarray, moments: np.ndarray,
                      moment_fields: tuple[int, int, int, int, int], pred: np.ndarray,
                      label: np.ndarray, codes: np.ndarray, *,
                      whole: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> None:
    """Add validated unweighted rows with 0/1 labels to the tables and sums of many slices
    at once, in place, in one compiled pass: row ``i`` goes to slice ``codes[d, i]`` of
    each slice column ``d`` (``codes`` int32, ``(columns, rows)``). ``tables`` is ``(S, 2,
    T)``, float64 or uint32 (counts to be added to float64 tables later: half the bytes),
    ``sums`` ``(S, N_SUMS, exact.DIGITS)``, ``moments`` ``(S, F, exact.DIGITS)`` with
    ``moment_fields`` the rows of ``v``, ``ce^2``, ``ce y``, ``(p - y)^4`` and ``p^3``
    (:mod:`mpieval.kinds.auc.moments`).

    Each slice gets what :func:`accumulate` (``binary``) and the moments' compiled pass
    would add over its rows alone, the same bits: the tables count rows, and every sum is
    exact (a row's logloss and terms are computed once, the same float64 operations).

    ``whole``: the metric's own ``(table (2, T'), sums, moments)``, float64, counted in
    the same pass as :func:`accumulate` and the moments' compiled pass would count every
    row: its table row by row, its sums the first slice column's (each row is in one
    slice of it; exact sums add in any order), the same bits."""
    p = _as_kernel_input(pred, PRED_DTYPES)
    y = _as_kernel_input(label, LABEL_DTYPES)
    _core.auc.accumulate_slices(tables, p, y, np.ascontiguousarray(codes, np.int32), sums,
                                moments, *moment_fields, *(whole or ()))


def auc_from_table(table: np.ndarray) -> float:
    """Trapezoid AUC swept from the top bucket down; NaN when a class is missing.

    Equal to the seed's loop ``area += (newfp - fp) * (tp + newtp) / 2`` over
    ``i = T-1 .. 0``, ``auc = area / (fp * tp)``, as a cumulative sum.
    """
    neg = table[0, ::-1]
    pos = table[1, ::-1]
    tp = np.cumsum(pos)
    fp_total = float(neg.sum())
    tp_total = float(tp[-1]) if len(tp) else 0.0
    if fp_total * tp_total == 0:
        return math.nan
    tp *= 2  # tp_before + tp_after = 2 tp_after - pos (in place: no other T-sized array)
    tp -= pos
    area = exact.dot(neg, tp) / 2  # exact for counts (and the same bits under any BLAS)
    return area / (fp_total * tp_total)


def bucket_error_from_table(negatives: np.ndarray, positives: np.ndarray) -> float:
    """The seed's ``calculate_bucket_error``, statement for statement, over the filled
    buckets only (:func:`_bucket_error`, the same bits as the sweep of every bucket).

    Buckets are swept upward, each with CTR ``i / T`` (its lower edge). A range of
    buckets grows until its relative error ``sqrt((1 - adj) / (adj * shows))`` drops
    below ``kRelativeErrorBound`` = 0.05, where ``adj`` is the show-weighted mean
    bucket CTR; then ``|clicks / shows / adj - 1|`` weighted by shows is added and a new
    range starts. A range that spans more than ``kMaxSpan`` = 0.01 in CTR without
    reaching the bound is dropped and restarted at the current bucket. The result is
    ``sum(error * shows) / sum(shows)`` over the ranges kept; NaN when none was kept
    (the seed returns 0 there).
    """
    return bucket_error(FilledBuckets.of(negatives, positives))


def bucket_error(filled: FilledBuckets) -> float:
    """:func:`bucket_error_from_table` from the table's filled buckets (``bucket_error`` in
    ``kernels.hpp`` beside this module). An empty bucket adds nothing; what the seed's
    sweep does there is only to restart the range (when the CTR has moved more than
    ``kMaxSpan`` from its start), and that is replayed there: the next restart is the first
    bucket ``j`` where the seed's own test ``abs(j / T - last_ctr) > kMaxSpan`` holds (the
    same expression, so the same float decisions), found from an estimate and a few
    steps."""
    return float(_core.auc.bucket_error(filled.index, filled.negatives, filled.positives,
                                    filled.table_size))


def _f64(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


def filled_buckets(negatives: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """The buckets that hold a row (weights are never negative), in order."""
    return np.flatnonzero((negatives != 0) | (positives != 0))


@dataclass(frozen=True, eq=False)
class FilledBuckets:
    """A table's filled buckets (:func:`filled_buckets`), found once for every sweep that
    skips the empty ones: their ``index`` (int64, ascending), their ``negatives`` and
    ``positives`` (float64), and the table's size ``T``. 24 bytes a filled bucket. (Equal
    only to itself: arrays have no one truth value.)"""

    index: np.ndarray
    negatives: np.ndarray
    positives: np.ndarray
    table_size: int

    @classmethod
    def of(cls, negatives: np.ndarray, positives: np.ndarray) -> FilledBuckets:
        """The filled buckets of the table rows ``negatives`` and ``positives``."""
        index = filled_buckets(negatives, positives)
        return cls(np.ascontiguousarray(index, np.int64), _f64(negatives[index]),
                   _f64(positives[index]), len(negatives))

    def table(self) -> np.ndarray:
        """The whole table again, (2, T): the filled buckets' counts, 0 elsewhere."""
        table = np.zeros((2, self.table_size))
        table[0, self.index] = self.negatives
        table[1, self.index] = self.positives
        return table


CURVE_POINTS = 1000  # at most this many steps in each curve


def roc_from_table(negatives: np.ndarray, positives: np.ndarray,
                   points: int = CURVE_POINTS) -> np.ndarray:
    """ROC points, an array of rows ``[fpr, tpr]`` from ``[0, 0]`` to ``[1, 1]``: one per
    threshold between filled buckets, swept from the top down; when there are more than
    ``points`` such thresholds, those where the curve's length ``fpr + tpr`` first reaches
    each of ``points`` equal steps of its total 2 (deterministic, spread along the curve),
    and the last. Empty when a class is missing. (The sweep sees the filled buckets only:
    it skips the others.)"""
    return roc(FilledBuckets.of(negatives, positives), points)


def roc(filled: FilledBuckets, points: int = CURVE_POINTS) -> np.ndarray:
    """:func:`roc_from_table` from the table's filled buckets."""
    curve = np.zeros((min(len(filled.index), points + 1) + 1, 2))
    return curve[: _core.auc.roc(filled.negatives, filled.positives, points, curve)]


def calibration_from_table(negatives: np.ndarray, positives: np.ndarray,
                           points: int = CURVE_POINTS) -> np.ndarray:
    """Calibration bins, an array of rows ``[mean_pred, actual_ctr, rows]`` from the
    lowest pred up: buckets are merged into at most ``points`` bins of about equal rows
    (bucket ``b`` goes to bin ``floor(points * rows below b / rows)``; one bucket is never
    split). ``mean_pred`` is the rows-weighted mean of the buckets' midpoints ``(b + 1/2) /
    T`` (within ``1 / 2T`` of the mean raw pred); ``rows`` is the weight sum. Empty
    without rows."""
    return calibration(FilledBuckets.of(negatives, positives), points)


def calibration(filled: FilledBuckets, points: int = CURVE_POINTS) -> np.ndarray:
    """:func:`calibration_from_table` from the table's filled buckets."""
    bins = np.zeros((points, 3))
    count = _core.auc.calibration(filled.index, filled.negatives, filled.positives,
                              filled.table_size, points, bins)
    return bins[:count]


def calibration_spread(filled: FilledBuckets, factors: tuple[float, float], total: float,
                       v_all: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ECE's calibration groups (the bins of :func:`calibration` merged as
    :func:`merge_calibration` merges them) in one compiled pass: each filled bucket's group
    (int64), each group's gap sum ``sum w (m_b - y)`` and its gap's standard error
    (:func:`mpieval.kinds.auc.influence.calibration_gaps`, whose numpy form it computes
    with the same bits). ``total``: the buckets' weight (more than 0); ``factors``:
    each class's ``sum v / sum w``; ``v_all``: ``f1 P + f0 N``."""
    group = np.empty(len(filled.index), dtype=np.int64)
    gap_sum = np.empty(CALIBRATION_GROUPS)
    stderrs = np.empty(CALIBRATION_GROUPS)
    groups = _core.auc.calibration_spread(
        filled.index, filled.negatives, filled.positives, filled.table_size, CURVE_POINTS,
        CALIBRATION_GROUPS, total, v_all, factors[0], factors[1], group, gap_sum, stderrs)
    return group, gap_sum[:groups], stderrs[:groups]


def pr_from_table(negatives: np.ndarray, positives: np.ndarray,
                  points: int = CURVE_POINTS) -> np.ndarray:
    """Precision-recall points, an array of rows ``[recall, precision]``, recall ascending:
    first ``[0, 1]`` (scikit-learn's start), then one per threshold between filled buckets,
    swept from the top down (``recall = TP / P``, ``precision = TP / (TP + FP)``, ``TP`` and
    ``FP`` counting the bucket and those above), the last at recall 1. When there are more
    than ``points`` thresholds, those where ``recall + share of rows above`` first reaches
    each of ``points`` equal steps of its total 2 (as :func:`roc_from_table` thins), and
    the last. The step area ``sum (recall_i - recall_(i-1)) precision_i`` of the unthinned
    curve is ``auprc``. Empty without positives."""
    return precision_recall(FilledBuckets.of(negatives, positives), points)


def precision_recall(filled: FilledBuckets, points: int = CURVE_POINTS) -> np.ndarray:
    """:func:`pr_from_table` from the table's filled buckets."""
    tp = np.cumsum(filled.positives[::-1])
    fp = np.cumsum(filled.negatives[::-1])
    if not len(tp) or tp[-1] == 0:
        return np.zeros((0, 2))
    recall = tp / tp[-1]
    precision = tp / (tp + fp)
    if len(tp) > points:
        reached = np.floor((recall + (tp + fp) / (tp[-1] + fp[-1])) * (points / 2))
        keep = np.diff(reached, prepend=0.0) > 0
        keep[-1] = True
        recall, precision = recall[keep], precision[keep]
    return np.vstack([[0.0, 1.0], np.column_stack([recall, precision])])


HISTOGRAM_BINS = 60  # at most this many bins in a score histogram
HISTOGRAM_TAIL = 0.005  # the share of rows in each end bin (at most)


def histogram_from_table(negatives: np.ndarray, positives: np.ndarray,
                         bins: int = HISTOGRAM_BINS, tail: float = HISTOGRAM_TAIL
                         ) -> np.ndarray:
    """Score distributions by class, an array of rows ``[pred_low, pred_high, negatives,
    positives]`` (the weights of the table's buckets ``[pred_low, pred_high)`` summed), from
    the lowest pred up: contiguous, the first from 0 and the last to 1, so every row is
    in one. Between the bucket holding the ``tail`` quantile of the rows and the one
    holding the ``1 - tail`` quantile, ``bins - 2`` bins of equal widths on the logit
    scale (their edges moved to the nearest bucket edge; bins that would be empty of
    buckets are dropped); the rows beyond, at most ``tail`` of them on each side, in an
    end bin to 0 and one to 1 (left out when the inner bins already reach 0 or 1).
    Empty without rows."""
    return histogram(FilledBuckets.of(negatives, positives), bins, tail)


def histogram(buckets: FilledBuckets, bins: int = HISTOGRAM_BINS,
              tail: float = HISTOGRAM_TAIL) -> np.ndarray:
    """:func:`histogram_from_table` from the table's filled buckets (and the whole table
    made again from them, whose bins it sums)."""
    size = buckets.table_size
    filled = buckets.index
    if not len(filled):
        return np.zeros((0, 4))
    cumulative = np.cumsum(buckets.negatives + buckets.positives)
    total = cumulative[-1]
    low = int(filled[min(np.searchsorted(cumulative, tail * total, side="right"),
                         len(filled) - 1)])
    high = int(filled[np.searchsorted(cumulative, (1 - tail) * total, side="left")]) + 1
    # equal steps in logit between the edges low / T and high / T (kept off 0 and 1)
    ends = np.clip(np.array([low, high]) / size, 0.5 / size, 1 - 0.5 / size)
    start, stop = np.log(ends / (1 - ends))
    logits = np.linspace(start, stop, bins - 1)
    inner = np.rint(size / (1 + np.exp(-logits))).astype(np.int64)
    inner[0], inner[-1] = low, high
    edges = np.unique(np.concatenate([[0], np.clip(inner, low, high), [size]]))
    sums = np.add.reduceat(buckets.table(), edges[:-1], axis=1)
    return np.column_stack([edges[:-1] / size, edges[1:] / size, sums[0], sums[1]])


CALIBRATION_GROUPS = 20  # the calibration bins merged into this many for ece and the plot


def merge_calibration(points: Sequence[Sequence[float]], count: int = CALIBRATION_GROUPS
                      ) -> list[tuple[float, float, float]]:
    """Adjacent calibration bins ``[mean_pred, actual_ctr, rows]`` (those of
    :func:`calibration_from_table`, from the lowest pred up) merged into at most ``count``
    bins of about equal rows: row-weighted means, so a merged bin's values are exactly
    those of its rows together."""
    usable = [(p, a, r) for p, a, r in points if r > 0 and p is not None and a is not None]
    total = sum(r for _, _, r in usable)
    if not usable or total <= 0:
        return []
    groups: list[list[float]] = []  # [pred * rows, clicks, rows]
    below = 0.0
    last = -1
    for pred, actual, rows in usable:
        index = min(int(below * count / total), count - 1)
        if index != last:
            groups.append([0.0, 0.0, 0.0])
            last = index
        group = groups[-1]
        group[0] += pred * rows
        group[1] += actual * rows
        group[2] += rows
        below += rows
    return [(p / r, c / r, r) for p, c, r in groups]


def calibration_error(bins: np.ndarray) -> float:
    """:func:`expected_calibration_error` of the bins of :func:`calibration` as an array
    ``(n, 3)`` of numbers (no NaN), in one compiled pass (``_core.auc.calibration_error``:
    the same operations as :func:`merge_calibration`'s loop and the sums, in their
    order)."""
    return float(_core.auc.calibration_error(np.ascontiguousarray(bins, np.float64),
                                             CALIBRATION_GROUPS))


def expected_calibration_error(points: Sequence[Sequence[float]]) -> float:
    """``sum rows |actual_ctr - mean_pred| / sum rows`` over the calibration bins merged
    into :data:`CALIBRATION_GROUPS` of about equal rows (:func:`merge_calibration`); NaN
    without rows. Merged, because the table's up to 1,000 bins hold few rows each on a
    small run, and their sampling noise alone would read as miscalibration (about 0.02
    for a calibrated model at a CTR of 0.06 with 90 rows a bin)."""
    try:  # numbers: one compiled pass, the same operations as the loops below
        table = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        table = None
    if (table is not None and table.ndim == 2 and table.shape[1] == 3
            and not np.isnan(table).any()):  # (numpy reads a None as NaN)
        return calibration_error(table)
    bins = merge_calibration(points)
    if not bins:
        return math.nan
    return sum(r * abs(a - p) for p, a, r in bins) / sum(r for _, _, r in bins)
