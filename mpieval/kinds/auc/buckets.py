"""Values of the ``auc`` kind read from the merged table's buckets: the lift at the top
fractions of rows by pred, and the NE after recalibration (``ne_recalibrated``).

Both read only the table (counts per bucket and label) and the exact sums, so they have
the same bits on any number of ranks. A bucket holds the preds in ``[k / T, (k + 1) / T)``;
within it the rows' order is unknown:

- **Lift.** The top fraction ``f`` of the rows (by weight, ``f num``), preds from high to
  low: the buckets above the cut whole, and of the bucket the cut falls in its share
  ``s = (f num - above) / weight of the bucket`` of its positives (the expected count over
  the orders of its rows: the bucket is the tie group, as the AUC's ties are). ``ctr =
  positives of the top / (f num)``, ``lift = ctr / actual_ctr``, ``recall = positives of
  the top / positives``. Exact for the table's buckets; against the rows' own preds the
  cut bucket is the only difference (its width, ``1 / T``).
- **Recalibrated NE.** The intercept-only shift of the logit, ``p' = sigmoid(logit(p) +
  c)``, with ``c`` the one that gives ``sum w p' = sum w y`` (COPC = 1; it is also the
  ``c`` of least logloss: the score equation of the intercept). With ``l`` a row's logit
  and ``s(x) = ln(1 + e^x)``, a row's logloss is ``-y l + s(l)``, so the total after the
  shift is ``L(c) = L(0) - c P + sum w [s(l + c) - s(l)]``: ``L(0)`` is the exact
  logloss sum, and only the last sum reads the buckets, each row at its bucket's middle
  ``m = (k + 1/2) / T``. ``c`` solves ``sum w sigmoid(logit(m) + c) = P``, which is where
  that ``L`` is least; ``ne_recalibrated = L(c) / num / H(actual_ctr)``. The binning error
  of a row is ``|[s(l + c) - s(l)] - [s(l_m + c) - s(l_m)]| <= |sigmoid(. + c) -
  sigmoid(.)| |l - l_m|``, about ``|c| p (1 - p) |l - l_m| <= |c| / (2 T)`` for a bucket
  of width ``1 / T`` (the logit moves by ``(1 / 2T) / (p (1 - p))`` across half a bucket):
  ``ne_recalibrated`` is within about ``|c| / (2 T H)`` of the rows' own (``2.5e-7 / H``
  for ``c = 0.5`` at the default ``T = 10^6``). The edge buckets (a pred of exactly 0 or
  1, whose logit is infinite) read their middles too.

  Its interval is the delta method's: the influence of a row on ``NE = Lbar / H(r)`` is
  ``(l_i - Lbar) / H + Lbar logit(r) / H^2 (y_i - r)`` (the fitted ``c`` adds nothing at
  first order: ``L`` is least there), summed over the buckets' labels at their middles;
  Wald's ``value -/+ z se``, cut at 0. None under importance weights (the table does not
  hold the squared weights a bucket's influence needs) or below
  :data:`~mpieval.kernels.stats.MIN_CLASS` in either class. With soft labels the
  spread is read as if each row were split into its 0 and 1 parts, which overstates it
  (the influence is linear in ``y``: its square is convex): the interval is wider than it
  needs to be, not narrower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.kernels import exact, stats
from mpieval.kinds.auc import influence
from mpieval.kinds.auc.kernels import FilledBuckets

LIFT_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
"""The top fractions of rows (by pred) whose lift the ``auc`` kind gives."""


@dataclass(frozen=True)
class LiftPoint:
    """The top ``fraction`` of rows by pred: their ``ctr``, its ``lift`` over the overall
    CTR and the ``recall`` of positives (NaN where undefined: no rows, no positives)."""

    fraction: float
    ctr: float
    lift: float
    recall: float

    def to_dict(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "ctr": logline.json_number(self.ctr),
                "lift": logline.json_number(self.lift),
                "recall": logline.json_number(self.recall)}


def lift(filled: FilledBuckets, fractions: tuple[float, ...] = LIFT_FRACTIONS,
         ) -> tuple[LiftPoint, ...]:
    """The lift at each top fraction (module docstring: the bucket the cut falls in counts
    by its share); empty without rows."""
    positives = filled.positives[::-1]  # from the highest pred down
    weights = filled.negatives[::-1] + positives
    num = float(weights.sum())
    if num <= 0:
        return ()
    total_positives = float(positives.sum())
    actual = total_positives / num
    above = np.concatenate(([0.0], np.cumsum(weights)))
    above_positives = np.concatenate(([0.0], np.cumsum(positives)))
    points = []
    for fraction in fractions:
        top = fraction * num
        # the bucket the cut falls in: the first whose cumulative weight reaches ``top``
        k = min(int(np.searchsorted(above[1:], top, side="left")), len(weights) - 1)
        share = (top - above[k]) / weights[k]
        top_positives = float(above_positives[k] + share * positives[k])
        ctr = top_positives / top
        points.append(LiftPoint(
            fraction, ctr, ctr / actual if actual > 0 else math.nan,
            top_positives / total_positives if total_positives > 0 else math.nan))
    return tuple(points)


@dataclass(frozen=True)
class Recalibrated:
    """``ne_recalibrated``, its standard error (NaN: no interval) and the logit shift
    ``c`` it was read at."""

    ne: float
    stderr: float
    shift: float


@dataclass(frozen=True, eq=False)
class _Fit:
    """What the recalibrated NE is read from: its value, the shift ``c``, the class totals,
    the mean loss after the shift, the CTR and its entropy, the buckets' middles and the
    change of a negative row's loss in each, ``s(l + c) - s(l) = ln(1 + m (e^c - 1))``."""

    ne: float
    shift: float
    positives: float
    num: float
    mean: float
    actual: float
    entropy: float
    middle: np.ndarray
    growth: np.ndarray

    def influences(self) -> tuple[np.ndarray, np.ndarray]:
        """Each bucket's influence on the NE of a positive and of a negative row (module
        docstring), their losses after the shift at the middle ``m``: ``-ln p'`` and ``-ln(1
        - p')`` with ``p' = sigmoid(logit(m) + c)``."""
        slope = self.mean * math.log(self.actual / (1 - self.actual)) / self.entropy**2
        loss_negative = self.growth - np.log1p(-self.middle)
        loss_positive = self.growth - np.log(self.middle) - self.shift
        return ((loss_positive - self.mean) / self.entropy + slope * (1 - self.actual),
                (loss_negative - self.mean) / self.entropy - slope * self.actual)


def _fit(filled: FilledBuckets, logloss_sum: float) -> _Fit | None:
    """The shift and the NE after it; None without both classes. With ``m`` a bucket's
    middle and ``x = logit(m)``, ``sigmoid(x + c) = m e^c / (1 + m (e^c - 1))`` and ``s(x +
    c) - s(x) = ln(1 + m (e^c - 1))``: no logit is taken."""
    positives, negatives = filled.positives, filled.negatives
    weights = positives + negatives
    total_positives, num = float(positives.sum()), float(weights.sum())
    if not 0 < total_positives < num:
        return None
    middle = (filled.index + 0.5) / filled.table_size
    shift = _shift(middle, weights, total_positives)
    growth = np.log1p(middle * math.expm1(shift))
    total = logloss_sum - shift * total_positives + exact.dot(weights, growth)
    actual = total_positives / num
    entropy = -(actual * math.log(actual) + (1 - actual) * math.log1p(-actual))
    mean = total / num
    return _Fit(mean / entropy, shift, total_positives, num, mean, actual, entropy, middle,
                growth)


def _has_interval(fit: _Fit, frequency: bool) -> bool:
    return frequency and min(fit.positives, fit.num - fit.positives) >= stats.MIN_CLASS


def recalibrated_ne(filled: FilledBuckets, logloss_sum: float, *,
                    frequency: bool = True) -> Recalibrated:
    """The NE after the intercept-only logit shift that makes COPC = 1 (module
    docstring); NaN without both classes. ``logloss_sum``: the exact ``sum w ce`` of the
    rows; ``frequency``: False under importance weights (no interval)."""
    fit = _fit(filled, logloss_sum)
    if fit is None:
        return Recalibrated(math.nan, math.nan, math.nan)
    stderr = math.nan
    if _has_interval(fit, frequency):
        positive, negative = fit.influences()
        spread = (influence.dot_power(filled.positives, positive * positive, 1)
                  + influence.dot_power(filled.negatives, negative * negative, 1))
        stderr = math.sqrt(spread) / fit.num
    return Recalibrated(fit.ne, stderr, fit.shift)


def influence_tables(table: np.ndarray, logloss_sum: float, *, frequency: bool = True,
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """Each bucket's influence on ``ne_recalibrated`` of a positive and of a negative row,
    as two arrays of the table's size (0 in empty buckets), for the paired difference
    (:class:`PairedDifference`); None where the NE has no interval."""
    filled = FilledBuckets.of(table[0], table[1])
    fit = _fit(filled, logloss_sum)
    if fit is None or not _has_interval(fit, frequency):
        return None
    positive, negative = np.zeros(filled.table_size), np.zeros(filled.table_size)
    positive[filled.index], negative[filled.index] = fit.influences()
    return positive, negative


@dataclass(frozen=True)
class PairedDifference:
    """``ne_recalibrated_diff = NE_B - NE_A`` on the same rows and its standard error from
    the rows' paired influences, ``sqrt(sum w (psi_B - psi_A)^2) / num`` (NaN: none)."""

    diff: float
    stderr: float

    def ci(self, level: float = 0.95) -> tuple[float, float] | None:
        """Wald's ``diff -/+ z se``; None without a standard error or with one of 0."""
        return None if self.stderr == 0 else stats.interval(self.diff, self.stderr, level)

    @property
    def p(self) -> float:
        """The two-sided normal p-value of ``diff`` (NaN where :meth:`ci` is None)."""
        if math.isnan(self.stderr) or self.stderr == 0 or math.isnan(self.diff):
            return math.nan
        return 2 * stats.normal_cdf(-abs(self.diff) / self.stderr)

    def to_dict(self) -> dict[str, Any]:
        pair = self.ci(0.95)
        return {"ne_recalibrated_diff": logline.json_number(self.diff),
                "ne_recalibrated_diff_ci95": None if pair is None else list(pair),
                "ne_recalibrated_diff_p": logline.json_number(self.p)}


def paired_stderr(spread: float, num: float) -> float:
    """The standard error of the paired difference from the rows' summed spread."""
    return math.sqrt(spread) / num if num > 0 else math.nan


def _shift(middle: np.ndarray, weights: np.ndarray, positives: float) -> float:
    """The ``c`` of ``sum w sigmoid(logit(m) + c) = positives`` over the buckets' middles
    ``m`` (increasing in ``c``): Newton's steps from 0, kept inside the bracket that the
    signs seen so far give (halved when a step leaves it; widened while one side is still
    open)."""
    p = np.empty_like(middle)  # m / (1 + m (e^c - 1)), computed in place

    def excess(c: float) -> tuple[float, float]:
        grow = math.exp(c)
        np.multiply(middle, grow - 1.0, out=p)
        np.add(p, 1.0, out=p)
        np.divide(middle, p, out=p)
        total = grow * exact.dot(weights, p)  # sum w sigmoid(logit(m) + c)
        np.multiply(p, p, out=p)
        return total - positives, total - grow * grow * exact.dot(weights, p)  # sum w p (1 - p)

    low, high, c = -math.inf, math.inf, 0.0
    for _ in range(200):
        value, slope = excess(c)
        if value == 0:
            return c
        if value > 0:
            high = c
        else:
            low = c
        following = c - value / slope if slope > 0 else math.nan
        if abs(following - c) <= 1e-13 * max(1.0, abs(c)):
            return following
        if not low <= following <= high:
            if math.isinf(low) or math.isinf(high):
                following = c - 1 - abs(c) if math.isinf(low) else c + 1 + abs(c)
            else:
                following = (low + high) / 2
        c = min(max(following, -SHIFT_LIMIT), SHIFT_LIMIT)
    return c


SHIFT_LIMIT = 300.0  # |c| a step may take (e^c stays finite, squared too); the root is far
# inside: the buckets' logits are within +-20 (T <= 2**27)


def interval(recalibrated: Recalibrated, level: float = 0.95) -> tuple[float, float] | None:
    """Wald's ``ne -/+ z se`` cut at 0; None where undefined."""
    return stats.interval(recalibrated.ne, recalibrated.stderr, level, 0.0)
