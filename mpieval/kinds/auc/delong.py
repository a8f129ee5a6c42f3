"""DeLong's variance of the ``auc`` kind's histogram AUC, and the paired test of two
models scored on the same rows.

Each bucket is one score, so rows in one bucket are tied and a tie counts one half. A
positive in bucket ``b`` has the placement ``V10(b) = (negatives below b + negatives in b
/ 2) / N``, a negative ``V01(b) = (positives above b + positives in b / 2) / P``; the AUC
is the mean of either, and ``Var(AUC) = S10 / P + S01 / N`` with ``S10 = sum_pos (V10 -
AUC)^2 / (P - 1)`` and ``S01 = sum_neg (V01 - AUC)^2 / (N - 1)`` (DeLong, DeLong &
Clarke-Pearson 1988). Bucket counts stand for rows (a weighted table: integer weights are
repeated rows). With importance weights the divisors ``P - 1`` and ``N - 1`` take the
classes' effective sizes instead (``units``: ``P_e = P^2 / sum (w y)^2``, the same for the
negatives): ``sum_pos w (V10 - AUC)^2 / P`` is the placements' weighted variance, and a
weighted mean's variance is that over ``P_e - 1``, not ``P - 1``, when the weights spread.

The paired test (DeLong's test): each row's placements in both merged tables give the
variance of the AUC difference (:func:`paired_variance`); the rows' bucket pairs are kept
for this second sweep.
"""

from __future__ import annotations

import math

import numpy as np

from mpieval import _core
from mpieval.kernels import exact
from mpieval.kinds.auc.kernels import FilledBuckets


def delong_from_table(negatives: np.ndarray, positives: np.ndarray,
                      units: tuple[float, float] | None = None,
                      ) -> tuple[float, float, float, float]:
    """``(auc, variance, auprc, tie_bound)`` of the histogram (:func:`_delong`, over the
    filled buckets: the sweep skips the others)."""
    return delong_sweep(FilledBuckets.of(negatives, positives), units)


def delong_sweep(filled: FilledBuckets, units: tuple[float, float] | None = None,
                 ) -> tuple[float, float, float, float]:
    """:func:`delong_from_table` from the table's filled buckets."""
    return _delong(filled.negatives, filled.positives, units)


def _delong(negatives: np.ndarray, positives: np.ndarray,
            units: tuple[float, float] | None = None) -> tuple[float, float, float, float]:
    """``(auc, variance, auprc, tie_bound)`` of the histogram, in one sweep over the table
    from the top bucket down (``delong`` in ``delong.hpp`` beside this module).

    ``auc`` and its DeLong ``variance`` as in the module docstring (NaN variance when a
    class has total weight 1 or less; NaN AUC when one is empty), from the sums over
    buckets ``b`` of ``pos_b t_b``, ``pos_b t_b^2``, ``neg_b u_b``, ``neg_b u_b^2`` with
    ``t_b = negatives above + neg_b / 2`` (so ``V10 = 1 - t / N``) and ``u_b = positives
    above + pos_b / 2`` (``V01 = u / P``): ``sum_pos (V10 - auc)^2 = (sum pos t^2 - (sum pos
    t)^2 / P) / N^2`` and likewise for the negatives. ``auprc``: average precision with each
    bucket one threshold, ``sum_b pos_b / P * TP_b / (TP_b + FP_b)``, ``TP_b``, ``FP_b``
    counting bucket ``b`` and above (rows tied in a bucket enter together); NaN without
    positives. ``tie_bound = sum_b neg_b pos_b / (2 N P)``: the pairs in one bucket count
    1/2 here and 0, 1/2 or 1 in the exact rank AUC of the raw preds, so the two differ by
    at most this much.

    ``units``: ``(P_e, N_e)``, the classes' effective sizes in place of ``P``, ``N`` in the
    divisors ``P - 1``, ``N - 1`` and the rule that a class needs more than 1 (importance
    weights, module docstring); None: the class totals.
    """
    pos_units, neg_units = (math.nan, math.nan) if units is None else units
    auc, variance, auprc, tie_bound = _core.auc.delong(
        np.ascontiguousarray(negatives, np.float64), np.ascontiguousarray(positives, np.float64),
        pos_units, neg_units)
    return auc, variance, auprc, tie_bound


def placements(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(v10, v01, auc)``: each bucket's placement values centred on the AUC (module
    docstring): ``v10[b] = V10(b) - auc`` (a positive in bucket ``b``) and ``v01[b] =
    V01(b) - auc`` (a negative in ``b``). NaN AUC when a class is missing."""
    negatives, positives = table[0], table[1]
    neg_total, pos_total = float(negatives.sum()), float(positives.sum())
    auc = float(delong_from_table(negatives, positives)[0])
    if math.isnan(auc):
        empty = np.zeros(len(negatives))
        return empty, empty, auc
    below = np.cumsum(negatives) - negatives
    above = pos_total - np.cumsum(positives)
    v10 = (below + 0.5 * negatives) / neg_total - auc
    v01 = (above + 0.5 * positives) / pos_total - auc
    return v10, v01, auc


def paired_spread(bucket_a: np.ndarray, bucket_b: np.ndarray, positive: np.ndarray,
                  negative: np.ndarray, v10_a: np.ndarray, v10_b: np.ndarray,
                  v01_a: np.ndarray, v01_b: np.ndarray) -> np.ndarray:
    """``sum_pos w (d10_b - d10_a)^2`` and ``sum_neg w (d01_b - d01_a)^2`` as two exact
    accumulators (:mod:`mpieval.kernels.exact`), over rows with buckets ``bucket_a``,
    ``bucket_b`` in the two models and weights ``positive`` (``w y``) and ``negative``
    (``w (1 - y)``), from the centred placements of :func:`placements` (the paired DeLong
    test, see :func:`paired_variance`)."""
    spread = np.zeros((2, exact.DIGITS))
    bucket_b = np.ascontiguousarray(bucket_b, bucket_a.dtype)
    if positive.dtype not in (np.float32, np.float64):
        positive = positive.astype(np.float64)
    negative = np.ascontiguousarray(negative, positive.dtype)
    v10_a, v10_b, v01_a, v01_b = (np.ascontiguousarray(v, np.float64)
                                  for v in (v10_a, v10_b, v01_a, v01_b))
    _core.auc.paired_spread(np.ascontiguousarray(bucket_a), bucket_b,
                        np.ascontiguousarray(positive), negative, v10_a, v10_b, v01_a, v01_b,
                        spread)
    return spread


def paired_variance(spread_pos: float, spread_neg: float, pos_total: float,
                    neg_total: float, units: tuple[float, float] | None = None) -> float:
    """DeLong's variance of ``AUC_B - AUC_A`` on the same rows: ``(S10_AA + S10_BB - 2
    S10_AB) / P + (S01_AA + S01_BB - 2 S01_AB) / N``, which is ``spread_pos / ((P - 1) P)
    + spread_neg / ((N - 1) N)`` with the spreads of :func:`paired_spread` summed over
    every row; NaN when a class has total weight 1 or less. ``units``: ``(P_e, N_e)`` in
    place of the totals in ``P - 1``, ``N - 1`` and that rule (importance weights, as in
    :func:`_delong`)."""
    pos_units, neg_units = (pos_total, neg_total) if units is None else units
    if pos_units <= 1 or neg_units <= 1:
        return math.nan
    return (spread_pos / ((pos_units - 1) * pos_total)
            + spread_neg / ((neg_units - 1) * neg_total))
