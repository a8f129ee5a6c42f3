"""The spread of the ``auc`` kind's table values AUPRC and ECE, from the merged table: each
bucket's *influence* (the change of the value per unit of weight added there, for a
positive and for a negative row), so that ``Var = sum_rows v IF^2 / W^2`` (the delta
method over independent rows; ``v`` a row's weight, or its square under importance
weights, ``W`` the total weight), and the paired sweep of two models' influences over the
rows kept for the paired DeLong test (issue 32).

Under importance weights the table holds weight sums, not sums of squared weights; a
bucket's ``sum v`` is then read as its weight times its class's ``sum w^2 / sum w`` (the
weights within a class do not follow the pred: the effective-size assumption of
:mod:`mpieval.kinds.auc.importance`).

- AUPRC (average precision, ``AP = sum_b pos_b R_b / P``, ``R_b = TP_b / (TP_b + FP_b)``
  counting bucket ``b`` and above): ``AP = E[Y R(S)] / pi`` as a functional of the rows'
  distribution, ``R(t) = E[Y 1(S >= t)] / E[1(S >= t)]``. A row ``(y, s)`` moves it by
  ``IF = (y R(s) + C(s, y) - AP y) / pi`` with ``C(s, y) = sum_{c <= s} pos_c (y - R_c) /
  cnt_c`` (``cnt_c = TP_c + FP_c``: the weight at or above ``c``), ``pi = P / W``.
- ECE over the calibration groups ``k``
  (:func:`mpieval.kinds.auc.kernels.expected_calibration_error`: ``sum_k |G_k| / W``,
  ``G_k = sum_{rows in k} w (m_b - y)``, ``m_b`` the bucket's midpoint): a row of group
  ``k`` moves it by ``IF = s_k (m_b - y) - ECE`` (``s_k`` the sign of ``G_k``), where
  ``G_k`` is away from 0; each group's gap ``G_k / W`` has the standard error
  ``sqrt(sum_{rows} v (a - g_k)^2) / W``, ``a = (m_b - y) 1(row in k)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from mpieval.kernels import exact
from mpieval.kinds.auc import kernels
from mpieval.kinds.auc.kernels import FilledBuckets


@dataclass(frozen=True)
class Influence:
    """Per filled bucket (in :class:`FilledBuckets` order) the influence of a positive
    (``positive``) and of a negative (``negative``) row; ``index`` the buckets."""

    index: np.ndarray
    positive: np.ndarray
    negative: np.ndarray

    def variance(self, filled: FilledBuckets, factors: tuple[float, float]) -> float:
        """``sum_b (f1 pos_b IF1_b^2 + f0 neg_b IF0_b^2) / W^2``, ``factors = (f1, f0)``
        each class's ``sum v / sum w`` (1 and 1 for frequency weights)."""
        total = float(filled.positives.sum() + filled.negatives.sum())
        return self._spread(filled, factors) / (total * total)

    def _spread(self, filled: FilledBuckets, factors: tuple[float, float]) -> float:
        """``sum_b (f1 pos_b IF1_b^2 + f0 neg_b IF0_b^2)``."""
        return (factors[0] * dot_power(filled.positives, self.positive, 2)
                + factors[1] * dot_power(filled.negatives, self.negative, 2))

    def terms(self, filled: FilledBuckets, factors: tuple[float, float]) -> float:
        """The effective number of terms of :meth:`variance` (Satterthwaite's degrees of
        freedom of a sum of independent one-degree terms, ``(sum a)^2 / sum a^2``, a row's
        ``a = v IF^2``): ``(sum_b f1 pos_b IF1_b^2 + ...)^2 / sum_b (f1^3 pos_b IF1_b^4 +
        f0^3 neg_b IF0_b^4)``. A row of frequency weight ``w`` is ``w`` rows (``f`` 1);
        under importance weights a row's ``a`` is ``w^2 IF^2`` and ``sum w^4`` over a
        bucket's rows is read as its weight times ``f^3`` (every weight of a class equal:
        negative downsampling). Few terms (a spread made by the few rows at the top of
        the ranking) mean a spread known poorly; NaN without a spread."""
        return self.variance_and_terms(filled, factors)[1]

    def variance_and_terms(self, filled: FilledBuckets, factors: tuple[float, float],
                           ) -> tuple[float, float]:
        """:meth:`variance` and :meth:`terms` (their sum of squares taken once)."""
        f1, f0 = factors
        total = float(filled.positives.sum() + filled.negatives.sum())
        spread = self._spread(filled, factors)
        fourth = (f1**3 * dot_power(filled.positives, self.positive, 4)
                  + f0**3 * dot_power(filled.negatives, self.negative, 4))
        return (spread / (total * total),
                spread * (spread / fourth) if fourth > 0 else math.nan)

    def at(self, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The influences of rows in ``buckets``; 0 in a bucket that is not filled (a row of
        weight 0)."""
        if not len(self.index):
            zero = np.zeros(len(buckets))
            return zero, zero
        where = np.minimum(np.searchsorted(self.index, buckets), len(self.index) - 1)
        filled = self.index[where] == buckets
        return (np.where(filled, self.positive[where], 0.0),
                np.where(filled, self.negative[where], 0.0))


def dot_power(weights: np.ndarray, values: np.ndarray, power: int) -> float:
    """``exact.dot(weights, values ** power)`` (``power`` 1: ``values``) with the same
    bits, over fewer terms: only
    where the weight is not 0 (its product is 0 there where the power is finite, and a 0
    leaves the exact sum as it is: a slice's positives fill few of its buckets), the power
    (a ``pow`` call an element but for squares) taken once a run of equal values (the
    AUPRC's negative influence changes only at a bucket with positives)."""
    used = weights != 0
    if not used.all():
        with np.errstate(invalid="ignore"):
            finite = np.abs(values) < 1e70  # values ** power finite (NaN: False)
        if finite[~used].all():
            weights, values = weights[used], values[used]
    if power == 1:
        return exact.dot(weights, values)
    if power != 2 and len(values) > 1:
        starts = np.flatnonzero(values[1:] != values[:-1]) + 1
        if 8 * len(starts) < 7 * len(values):  # a power costs more than the repeat
            starts = np.concatenate(([0], starts))
            runs = np.diff(np.concatenate((starts, [len(values)])))
            return exact.dot(weights, np.repeat(values[starts] ** power, runs))
    return exact.dot(weights, values ** power)


def auprc(filled: FilledBuckets, value: float) -> Influence | None:
    """The AUPRC's influence (module docstring); None without positives or rows."""
    pos, neg = filled.positives, filled.negatives
    total_pos, total = float(pos.sum()), float(pos.sum() + neg.sum())
    if total_pos <= 0:
        return None
    tp = np.cumsum(pos[::-1])[::-1]  # at or above each bucket (buckets ascend)
    count = tp + np.cumsum(neg[::-1])[::-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(count > 0, tp / count, 0.0)
        share = np.where(count > 0, pos / count, 0.0)
    below_one = np.cumsum(share * (1 - precision))  # sum over c <= b (ascending)
    below_zero = -np.cumsum(share * precision)
    prevalence = total_pos / total
    return Influence(filled.index, (precision + below_one - value) / prevalence,
                     below_zero / prevalence)


def auprc_without_self(filled: FilledBuckets, own: float) -> float:
    """AUPRC with each positive's own weight left out of its precision: ``sum_b pos_b
    (TP_b - own) / (cnt_b - own) / P`` (``own`` a positive row's weight: 1, or under
    importance weights the positives' ``sum w^2 / sum w``), each precision cut to [0, 1]
    and 0 where no other row is at or above the bucket. The plain estimate counts the
    positive in its own precision, ``(T + own) / (C + own)`` for the others' ``T / C``,
    which lifts it most at the top, where ``C`` is small: with 20 positives it is 1.5 to 2
    times the population's AP (docs/statistics.md). NaN without positives."""
    pos, neg = filled.positives, filled.negatives
    total_pos = float(pos.sum())
    if not total_pos > 0:
        return math.nan
    tp = np.cumsum(pos[::-1])[::-1]
    count = tp + np.cumsum(neg[::-1])[::-1]
    others = count - own
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(others > 0, (tp - own) / others, 0.0)
    return dot_power(pos, np.clip(precision, 0.0, 1.0), 1) / total_pos


@dataclass(frozen=True)
class CalibrationGaps:
    """The calibration groups of ECE: ``group`` of each filled bucket, each group's gap
    ``G_k / W`` (``gaps``) and its standard error (``stderrs``), and the ECE's
    :class:`Influence`."""

    group: np.ndarray
    gaps: np.ndarray
    stderrs: np.ndarray
    influence: Influence


def calibration_gaps(filled: FilledBuckets, factors: tuple[float, float]
                     ) -> CalibrationGaps | None:
    """The ECE's groups and spreads (module docstring) from the filled buckets, in the
    groups of :func:`mpieval.kinds.auc.kernels.merge_calibration` over the bins of
    :func:`mpieval.kinds.auc.kernels.calibration`; None without rows."""
    spread = calibration_spread(filled, factors)
    if spread is None:
        return None
    ece = float(np.abs(spread.gap_sums).sum()) / spread.total
    mid = (filled.index + 0.5) / filled.table_size
    sign = np.sign(spread.gaps)[spread.group]
    influence = Influence(filled.index, sign * (mid - 1) - ece, sign * mid - ece)
    return CalibrationGaps(spread.group, spread.gaps, spread.stderrs, influence)


class CalibrationSpread(NamedTuple):
    """:class:`CalibrationGaps` without the influence, and the gaps' sums ``G_k`` and
    their total weight ``W``."""

    group: np.ndarray
    gap_sums: np.ndarray
    gaps: np.ndarray
    stderrs: np.ndarray
    total: float


def calibration_spread(filled: FilledBuckets, factors: tuple[float, float]
                       ) -> CalibrationSpread | None:
    """:func:`calibration_gaps` without the influence (compiled:
    :func:`mpieval.kinds.auc.kernels.calibration_spread`); None without rows."""
    pos, neg = filled.positives, filled.negatives
    total = float((pos + neg).sum())
    if not total > 0:
        return None
    f1, f0 = factors
    v_all = f1 * float(pos.sum()) + f0 * float(neg.sum())
    group, gap_sums, stderrs = kernels.calibration_spread(filled, factors, total, v_all)
    return CalibrationSpread(group, gap_sums, gap_sums / total, stderrs, total)


def paired_spread(bucket_a: np.ndarray, bucket_b: np.ndarray, positive: np.ndarray,
                  negative: np.ndarray, a: Influence, b: Influence,
                  importance: bool) -> np.ndarray:
    """``sum_rows a``, ``a = v1 (IF1_B - IF1_A)^2 + v0 (IF0_B - IF0_A)^2``, and the sum of
    the squares of the rows' terms, as two exact accumulators (:mod:`mpieval.kernels.exact`)
    over rows with buckets ``bucket_a``, ``bucket_b`` and class weights ``positive``,
    ``negative`` (``v`` those, or their squares under importance weights): the spread of
    the paired difference of a table value, and with it its effective number of terms
    ``(sum a)^2 / sum a^2`` (:meth:`Influence.terms`; a frequency weight ``w`` is ``w``
    rows: ``w IF^4`` there)."""
    a1, a0 = a.at(bucket_a)
    b1, b0 = b.at(bucket_b)
    v1 = np.asarray(positive, np.float64)
    v0 = np.asarray(negative, np.float64)
    d1, d0 = (b1 - a1) ** 2, (b0 - a0) ** 2
    if importance:
        v1, v0 = v1 * v1, v0 * v0
        fourth = (v1 * d1 + v0 * d0) ** 2  # one observation a row
    else:
        fourth = v1 * d1 * d1 + v0 * d0 * d0  # a weight of w: w rows
    return np.stack([exact.exact_sum(v1 * d1 + v0 * d0), exact.exact_sum(fourth)])
