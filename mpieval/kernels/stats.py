"""Statistics helpers every kind shares: normal quantiles, Wald intervals, two-sided
p-values and the delta-method standard error of a ratio of sums.

Everything here works on merged values only (sums over rows or users), so an interval is
the same whatever the number of ranks and the split of rows. A kind's own estimators live
in its folder (the ``auc`` kind's DeLong variance: :mod:`mpieval.kinds.auc.delong`).

- A ratio of sums ``R = A / B`` over rows (actual CTR, predicted CTR, COPC) by the delta
  method, rows independent: ``Var(R) = sum w (a_i - R b_i)^2 / B^2``, expanded into the
  second-moment sums ``sum w a^2``, ``sum w a b``, ``sum w b^2`` that the state keeps
  (a weight counts as repeated rows).
- Intervals are Wald intervals ``value -/+ z se`` at any level, cut to the value's range.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_NORMAL = NormalDist()


def z_value(level: float) -> float:
    """The two-sided normal quantile of ``level`` (1.959964 for 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), not {level}")
    return _NORMAL.inv_cdf(0.5 + level / 2)


def normal_cdf(x: float) -> float:
    """The standard normal distribution function."""
    return _NORMAL.cdf(x)


def interval(value: float, stderr: float, level: float, low: float = -math.inf,
             high: float = math.inf) -> tuple[float, float] | None:
    """``value -/+ z(level) stderr`` cut to ``[low, high]``; None when either is NaN."""
    if math.isnan(value) or math.isnan(stderr):
        return None
    half = z_value(level) * stderr
    return (float(max(low, value - half)), float(min(high, value + half)))  # not numpy's


def two_sided_p(diff: float, stderr: float) -> float:
    """``P(|Z| >= |diff / stderr|)`` under the normal null; 1 when both are 0, NaN when
    undefined."""
    if math.isnan(diff) or math.isnan(stderr):
        return math.nan
    if stderr == 0:
        return 1.0 if diff == 0 else 0.0
    return math.erfc(abs(diff) / stderr / math.sqrt(2))  # = 2 Phi(-|z|), no cancellation


def ratio_stderr(a: float, b: float, aa: float, ab: float, bb: float) -> float:
    """Delta-method standard error of ``r = a / b`` over independent rows ``i`` of weight
    ``w_i`` (a frequency weight: ``w`` repeated rows), with ``a = sum w a_i``, ``b = sum w
    b_i``, ``aa = sum w a_i^2``, ``ab = sum w a_i b_i``, ``bb = sum w b_i^2``:
    ``sqrt(sum w (a_i - r b_i)^2) / |b| = sqrt(aa - 2 r ab + r^2 bb) / |b|``; NaN when
    ``b`` is 0. A spread within the rounding of its terms counts as 0."""
    if b == 0:
        return math.nan
    r = a / b
    terms = (aa, -2 * r * ab, r * r * bb)
    spread = math.fsum(terms)
    # below the rounding of the rows' own terms (p * p against p, a weight times a pred),
    # the spread is 0: rows that all share one value have no spread, however weighted
    if spread <= 8 * 2.0**-52 * math.fsum(abs(t) for t in terms):
        spread = 0.0
    return math.sqrt(spread) / abs(b)
