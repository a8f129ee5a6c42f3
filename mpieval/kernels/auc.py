"""Kernels of the ``auc`` kind: the Abacus/Paddle ``BasicAucCalculator``.

The table has two rows of ``T`` buckets, ``table[0]`` for negatives and ``table[1]``
for positives; a prediction ``p`` falls in bucket ``min(floor(p * T), T - 1)`` with the
product taken in float64. Alongside the table three sums are kept: ``abserr = sum
w |p - y|``, ``sqrerr = sum w (p - y)^2`` and ``pred = sum w p``.
"""

from __future__ import annotations

import math

import numpy as np

from mpieval.kernels.jit import compiled

K_MAX_SPAN = 0.01
K_RELATIVE_ERROR_BOUND = 0.05

SUM_ABSERR, SUM_SQRERR, SUM_PRED, SUM_ROWS = range(4)
N_SUMS = 4

# dtypes the compiled update takes as they are; anything else is converted first.
_PRED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_LABEL_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64, np.float32,
                                             np.float64))


def buckets(pred: np.ndarray, table_size: int) -> np.ndarray:
    """Bucket of each prediction: ``min(floor(pred * T), T - 1)``, the product in float64.

    ``pred`` must already lie in ``[0, 1]``, so truncation equals floor.
    """
    index = np.multiply(pred, float(table_size), dtype=np.float64).astype(np.intp)
    np.minimum(index, table_size - 1, out=index)
    return index


@compiled
def _accumulate_binary(table, pred, label):
    size = table.shape[1]
    abserr = sqrerr = pred_sum = 0.0
    for i in range(pred.shape[0]):
        p = np.float64(pred[i])
        y = np.int64(label[i])
        table[y, min(np.int64(p * size), size - 1)] += 1.0
        d = p - y
        abserr += abs(d)
        sqrerr += d * d
        pred_sum += p
    return abserr, sqrerr, pred_sum


@compiled
def _accumulate_weighted(table, pred, label, weight):
    size = table.shape[1]
    abserr = sqrerr = pred_sum = 0.0
    for i in range(pred.shape[0]):
        p = np.float64(pred[i])
        y = np.float64(label[i])
        w = np.float64(weight[i])
        bucket = min(np.int64(p * size), size - 1)
        table[0, bucket] += w * (1.0 - y)
        table[1, bucket] += w * y
        d = p - y
        abserr += w * abs(d)
        sqrerr += w * d * d
        pred_sum += w * p
    return abserr, sqrerr, pred_sum


def _as_kernel_input(values: np.ndarray, accepted: tuple[np.dtype, ...]) -> np.ndarray:
    if values.dtype == np.bool_:
        return values.view(np.uint8)
    return values if values.dtype in accepted else values.astype(np.float64)


def accumulate(
    table: np.ndarray,
    sums: np.ndarray,
    pred: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    binary: bool = True,
) -> None:
    """Add validated rows to ``table`` (2, T) and ``sums``, in place, in one compiled pass.

    Unweighted 0/1 labels (``binary``) add 1 to ``table[label, bucket]``. Otherwise a row
    with label ``y`` and weight ``w`` (1 when absent) adds ``w (1 - y)`` to
    ``table[0, bucket]`` and ``w y`` to ``table[1, bucket]``; abserr, sqrerr and the pred
    sum are weighted the same way (Paddle leaves abserr and sqrerr unweighted; mpieval
    does not, so that integer weights equal repeated rows for every field).
    """
    p = _as_kernel_input(pred, _PRED_DTYPES)
    y = _as_kernel_input(label, _LABEL_DTYPES)
    if binary and weight is None:
        abserr, sqrerr, pred_sum = _accumulate_binary(table, p, y)
    else:
        w = np.ones(len(p)) if weight is None else _as_kernel_input(weight, _LABEL_DTYPES)
        abserr, sqrerr, pred_sum = _accumulate_weighted(table, p, y, w)
    sums[SUM_ABSERR] += abserr
    sums[SUM_SQRERR] += sqrerr
    sums[SUM_PRED] += pred_sum
    sums[SUM_ROWS] += len(p)


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
    area = float(neg @ (2 * tp - pos)) / 2  # tp_before + tp_after = 2 tp_after - pos
    return area / (fp_total * tp_total)


@compiled
def bucket_error_from_table(negatives: np.ndarray, positives: np.ndarray) -> float:
    """The seed's ``calculate_bucket_error``, statement for statement.

    Buckets are swept upward, each with CTR ``i / T`` (its lower edge). A range of
    buckets grows until its relative error ``sqrt((1 - adj) / (adj * shows))`` drops
    below ``kRelativeErrorBound`` = 0.05, where ``adj`` is the show-weighted mean
    bucket CTR; then ``|clicks / shows / adj - 1|`` weighted by shows is added and a new
    range starts. A range that spans more than ``kMaxSpan`` = 0.01 in CTR without
    reaching the bound is dropped and restarted at the current bucket. The result is
    ``sum(error * shows) / sum(shows)`` over the ranges kept; NaN when none was kept
    (the seed returns 0 there).
    """
    table_size = len(negatives)
    last_ctr = -1.0
    impression_sum = 0.0
    ctr_sum = 0.0
    click_sum = 0.0
    error_sum = 0.0
    error_count = 0.0
    for i in range(table_size):
        click = positives[i]
        show = negatives[i] + positives[i]
        ctr = i / table_size
        if abs(ctr - last_ctr) > K_MAX_SPAN:
            last_ctr = ctr
            impression_sum = 0.0
            ctr_sum = 0.0
            click_sum = 0.0
        impression_sum += show
        ctr_sum += ctr * show
        click_sum += click
        adjust_ctr = ctr_sum / impression_sum
        relative_error = math.sqrt((1 - adjust_ctr) / (adjust_ctr * impression_sum))
        if relative_error < K_RELATIVE_ERROR_BOUND:
            actual_ctr = click_sum / impression_sum
            relative_ctr_error = abs(actual_ctr / adjust_ctr - 1)
            error_sum += relative_ctr_error * impression_sum
            error_count += impression_sum
            last_ctr = -1.0
    return error_sum / error_count if error_count > 0 else math.nan


def warm_up() -> None:
    """Load the compiled update (float64 pred and label, as files are read) and sweep.

    numba loads a compiled function from its disk cache at the first call, a noticeable
    part of a fresh process's start-up; :func:`mpieval.cli.main` pays it on a background
    thread while the first batches are read.
    """
    table = np.zeros((2, 4))
    accumulate(table, np.zeros(N_SUMS), np.array([0.25, 0.75]), np.array([0.0, 1.0]))
    bucket_error_from_table(table[0], table[1])
