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

# Rows handled per step of the unweighted path: small enough that the float64 and
# index temporaries stay in cache, large enough that numpy's per-call cost is noise.
CHUNK_ROWS = 1 << 16
# Bucket indexes collected before one ``bincount`` over them (bounds temporary memory).
BINCOUNT_ROWS = 1 << 22

SUM_ABSERR, SUM_SQRERR, SUM_PRED, SUM_ROWS = range(4)
N_SUMS = 4


def buckets(pred: np.ndarray, table_size: int, out: np.ndarray | None = None) -> np.ndarray:
    """Bucket of each prediction: ``min(floor(pred * T), T - 1)``, the product in float64.

    ``pred`` must already lie in ``[0, 1]``, so truncation equals floor.
    """
    scaled = np.multiply(pred, float(table_size), dtype=np.float64)
    index = np.empty(len(pred), dtype=np.intp) if out is None else out
    index[...] = scaled
    np.minimum(index, table_size - 1, out=index)
    return index


def accumulate_binary(
    table: np.ndarray, sums: np.ndarray, pred: np.ndarray, label: np.ndarray
) -> None:
    """Add unweighted rows with labels in {0, 1} to ``table`` (2, T) and ``sums``, in place.

    Chunked so that the temporaries stay in cache; one ``bincount`` per
    ``BINCOUNT_ROWS`` rows over the flat index ``label * T + bucket``.
    """
    table_size = table.shape[1]
    flat_table = table.reshape(-1)
    n = len(pred)
    scaled = np.empty(min(n, CHUNK_ROWS), dtype=np.float64)
    diff = np.empty_like(scaled)
    index = np.empty(min(n, BINCOUNT_ROWS), dtype=np.intp)
    abserr = sqrerr = pred_sum = 0.0
    for block in range(0, n, BINCOUNT_ROWS):
        block_end = min(block + BINCOUNT_ROWS, n)
        for start in range(block, block_end, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, block_end)
            p, y = pred[start:stop], label[start:stop]
            m = stop - start
            s, d = scaled[:m], diff[:m]
            ix = index[start - block : stop - block]
            np.multiply(p, float(table_size), out=s, dtype=np.float64)
            ix[...] = s
            np.minimum(ix, table_size - 1, out=ix)
            ix += y * table_size if y.dtype.kind == "b" else y.astype(np.intp) * table_size
            np.subtract(p, y, out=d, dtype=np.float64)
            sqrerr += float(d @ d)
            np.abs(d, out=d)
            abserr += float(d.sum())
            pred_sum += float(p.sum(dtype=np.float64))
        counts = np.bincount(index[: block_end - block], minlength=0)
        flat_table[: len(counts)] += counts
    sums[SUM_ABSERR] += abserr
    sums[SUM_SQRERR] += sqrerr
    sums[SUM_PRED] += pred_sum
    sums[SUM_ROWS] += n


def accumulate_weighted(
    table: np.ndarray,
    sums: np.ndarray,
    pred: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray | None,
) -> None:
    """Add rows with soft labels and/or weights, in place.

    ``table[0] += w (1 - y)``, ``table[1] += w y``; abserr, sqrerr and the pred sum are
    weighted the same way (Paddle leaves abserr and sqrerr unweighted; mpieval does not,
    so that integer weights equal repeated rows for every field).
    """
    table_size = table.shape[1]
    p = pred.astype(np.float64, copy=False)
    y = label.astype(np.float64, copy=False)
    w = np.ones_like(p) if weight is None else weight.astype(np.float64, copy=False)
    bucket = buckets(p, table_size)
    wy = w * y
    table[1] += np.bincount(bucket, weights=wy, minlength=table_size)
    table[0] += np.bincount(bucket, weights=w - wy, minlength=table_size)
    d = p - y
    sums[SUM_ABSERR] += float(w @ np.abs(d))
    sums[SUM_SQRERR] += float(w @ (d * d))
    sums[SUM_PRED] += float(w @ p)
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
