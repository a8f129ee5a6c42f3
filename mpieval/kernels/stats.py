"""Statistics helpers every kind shares: quantiles and two-sided p-values (normal and
Student's t), intervals, and the delta-method standard error of a ratio of sums.

Everything here works on merged values only (sums over rows or users), so an interval is
the same whatever the number of ranks and the split of rows. A kind's own estimators live
in its folder (the ``auc`` kind's DeLong variance: :mod:`mpieval.kinds.auc.delong`).

- A ratio of sums ``R = A / B`` over rows (actual CTR, predicted CTR, COPC) by the delta
  method, rows independent: ``Var(R) = sum w (a_i - R b_i)^2 / B^2``, expanded into the
  second-moment sums ``sum w a^2``, ``sum w a b``, ``sum w b^2`` that the state keeps
  (a weight counts as repeated rows).
- Intervals are Wald intervals ``value -/+ z se`` at any level, cut to the value's range;
  from few independent units (users, or the smaller class of an AUC), Student's t with
  ``units - 1`` degrees of freedom (:func:`cluster_interval`, :func:`cluster_p`) and none
  below ``MIN_CLUSTERS``; rates by Wilson's score interval (:func:`wilson_interval`);
  many p-values adjusted by Benjamini-Hochberg (:func:`bh_q_values`). Methods, minimums
  and their validation by simulation: docs/statistics.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from mpieval import _core

if TYPE_CHECKING:
    from statistics import NormalDist


@functools.cache
def _normal() -> NormalDist:
    """The standard normal distribution (``statistics`` imported when first needed: 4-5 ms
    that a run without intervals need not pay)."""
    from statistics import NormalDist

    return NormalDist()


def z_value(level: float) -> float:
    """The two-sided normal quantile of ``level`` (1.959964 for 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), not {level}")
    return _normal().inv_cdf(0.5 + level / 2)


def normal_cdf(x: float) -> float:
    """The standard normal distribution function."""
    return _normal().cdf(x)


def interval(value: float, stderr: float, level: float, low: float = -math.inf,
             high: float = math.inf) -> tuple[float, float] | None:
    """``value -/+ z(level) stderr`` cut to ``[low, high]``; None when either is NaN."""
    if math.isnan(value) or math.isnan(stderr):
        return None
    half = z_value(level) * stderr
    return (float(max(low, value - half)), float(min(high, value + half)))  # not numpy's


def fsum(terms: Iterable[float]) -> float:
    """``math.fsum`` of ``terms`` (their exact sum rounded once), or NaN where it has none:
    an infinite term of each sign, or a sum past float64's range on the way (``math.fsum``
    raises there; a standard error from such terms, say a pred sum of 1e-200 squared in a
    denominator, is not a number)."""
    try:
        return math.fsum(terms)
    except (ValueError, OverflowError):
        return math.nan


def ratio_stderr(a: float, b: float, aa: float, ab: float, bb: float, *,
                 error: float = 0.0) -> float:
    """Delta-method standard error of ``r = a / b`` over independent rows ``i`` of weight
    ``w_i`` (a frequency weight: ``w`` repeated rows), with ``a = sum w a_i``, ``b = sum w
    b_i``, ``aa = sum w a_i^2``, ``ab = sum w a_i b_i``, ``bb = sum w b_i^2``:
    ``sqrt(sum w (a_i - r b_i)^2) / |b| = sqrt(aa - 2 r ab + r^2 bb) / |b|``; NaN when
    ``b`` is 0. A spread within the rounding of its terms counts as 0, and so does one
    within ``error``: a bound on how far the sums' own rounding moves ``aa - 2 r ab + r^2
    bb`` beyond that of each row's terms (a sum whose rows were not rounded alone)."""
    if b == 0:
        return math.nan
    r = a / b
    terms = (aa, -2 * r * ab, r * r * bb)
    spread = fsum(terms)
    # below the rounding of the rows' own terms (p * p against p, a weight times a pred),
    # the spread is 0: rows that all share one value have no spread, however weighted
    if spread <= 8 * 2.0**-52 * fsum(abs(t) for t in terms) + error:
        spread = 0.0
    return math.sqrt(spread) / abs(b)


def ratio_stderrs(a: np.ndarray, b: np.ndarray, aa: np.ndarray, ab: np.ndarray,
                  bb: np.ndarray, where: np.ndarray | None = None,
                  weights: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                  ) -> np.ndarray:
    """:func:`ratio_stderr` of each element of the float64 arrays (many tags at once), the
    same floats, in one compiled pass (``stats.hpp``'s ``ratio_stderr``: the same steps,
    each ``math.fsum`` of three terms an exact sum rounded once); an element with a term or
    sum that is not finite goes through :func:`ratio_stderr` itself (NaN where
    ``math.fsum`` has no sum: :func:`fsum`). ``where`` (bool, one an element): only those
    computed, NaN elsewhere (the others are not looked at). ``weights`` (``sum w``, ``sum
    w^2``, ``sum w^3`` of each element): each then :func:`weighted_cluster_stderr` of them,
    in the same pass (the same floats)."""
    columns = [np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
               for x in (a, b, aa, ab, bb)]
    if len(columns[0]) == 1:  # one block (a slice's own): the scalar steps, not an array's
        one = math.nan
        if where is None or bool(np.asarray(where).reshape(-1)[0]):
            one = ratio_stderr(*(float(x[0]) for x in columns))
            if weights is not None:
                one = weighted_cluster_stderr(one, *(float(np.asarray(w).reshape(-1)[0])
                                                     for w in weights))
        return np.array([one])
    out = np.empty(len(columns[0]))
    scalar = np.empty(len(columns[0]), np.uint8)
    chosen = (np.zeros(0, np.uint8) if where is None
              else np.ascontiguousarray(where, dtype=np.bool_).view(np.uint8))
    weighing = (np.zeros((0, 0)) if weights is None
                else np.ascontiguousarray(np.stack(weights), dtype=np.float64))
    _core.stats.ratio_stderrs(columns[0], columns[1], columns[2], columns[3], columns[4],
                              out, scalar, chosen, weighing)
    for i in np.flatnonzero(scalar).tolist():
        out[i] = ratio_stderr(*(float(x[i]) for x in columns))
        if weights is not None:
            out[i] = weighted_cluster_stderr(out[i], *(float(w[i]) for w in weights))
    return out


def cluster_stderrs(stderr: np.ndarray, units: np.ndarray) -> np.ndarray:
    """:func:`cluster_stderr` of each element (float64 arrays), the same floats."""
    with np.errstate(all="ignore"):
        scaled = stderr * np.sqrt(units / (units - 1))
    return np.where((units < 2) | np.isnan(stderr), math.nan, scaled)


def weighted_cluster_stderrs(stderr: np.ndarray, total: np.ndarray, total_sq: np.ndarray,
                             total_cube: np.ndarray) -> np.ndarray:
    """:func:`weighted_cluster_stderr` of each element (float64 arrays), the same floats."""
    with np.errstate(all="ignore"):
        k = 1 - 2 * total_cube / (total * total_sq) + total_sq / (total * total)
        scaled = stderr / np.sqrt(k)
    undefined = np.isnan(stderr) | (total <= 0) | (total_sq <= 0) | ~(k > 0)
    return np.where(undefined, math.nan, scaled)


def bh_q_values_of(p_values: np.ndarray) -> np.ndarray:
    """:func:`bh_q_values` of a float64 array (many tags: no Python step a p-value), the
    same floats: the defined p-values ranked by a stable sort, ``m p / rank`` each, the
    running minimum from the largest down, from 1."""
    q = np.full(len(p_values), math.nan)
    defined = np.flatnonzero(~np.isnan(p_values))
    m = len(defined)
    if m:
        order = defined[np.argsort(p_values[defined], kind="stable")]
        scaled = m * p_values[order] / np.arange(1, m + 1, dtype=np.float64)
        q[order] = np.minimum.accumulate(np.concatenate(([1.0], scaled[::-1])))[:0:-1]
    return q


def effective_units_of(total: np.ndarray, total_sq: np.ndarray) -> np.ndarray:
    """:func:`effective_units` of each element (float64 arrays), the same floats."""
    with np.errstate(all="ignore"):
        return np.where(total_sq > 0, total * total / total_sq, math.nan)


# --- small samples: Student's t, clusters, rates -----------------------------------------

MIN_CLUSTERS = 10
"""The fewest independent units (valid users) a per-user interval or paired p-value needs;
below it they are None (JSON null): a spread estimated from fewer says too little."""

MIN_CLASS = 10
"""The fewest rows (total weight) of each class an ``auc`` interval or paired p-value
needs; below it they are None (JSON null)."""


NORMAL_DF = 100_000
"""From this many degrees of freedom on, Student's t is taken as the normal."""


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _core.stats.beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _core.stats.beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` degrees of freedom:
    ``I_{df / (df + t^2)}(df / 2, 1 / 2)``; the normal's from ``NORMAL_DF`` degrees of
    freedom on (they differ by less than 1e-5 there)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    if df >= NORMAL_DF:
        return math.erfc(abs(t) / math.sqrt(2))
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=1024)
def t_value(level: float, df: float) -> float:
    """The two-sided quantile of Student's t with ``df`` degrees of freedom at ``level``
    (12.706 for 0.95 and 1 degree of freedom, 2.262 for 9): the ``t`` with
    ``P(|T| >= t) = 1 - level``, by bisection on :func:`t_two_sided_p`."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), not {level}")
    if not df > 0:
        raise ValueError(f"df must be above 0, not {df}")
    if df >= NORMAL_DF:
        return z_value(level)
    # the bisection compiled (_core.stats.t_quantile: its steps, its floats), from the
    # log-gammas of its incomplete beta, which Python's own lgamma makes
    a, b = df / 2, 0.5
    log_gammas = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return float(_core.stats.t_quantile(df, 1 - level, log_gammas, z_value(level)))


def cluster_stderr(stderr: float, units: float) -> float:
    """The standard error of a mean (or ratio) over ``units`` independent clusters with
    the small-sample factor ``sqrt(units / (units - 1))`` (:func:`ratio_stderr` divides
    the spread by ``units``, the t reference wants ``units - 1``); NaN below 2 units."""
    if units < 2 or math.isnan(stderr):
        return math.nan
    return stderr * math.sqrt(units / (units - 1))


def cluster_interval(value: float, stderr: float, units: float, level: float,
                     low: float = -math.inf,
                     high: float = math.inf, *,
                     effective: float | None = None) -> tuple[float, float] | None:
    """``value -/+ t(level, units - 1) stderr`` cut to ``[low, high]``, ``stderr`` from
    :func:`cluster_stderr`; None below ``MIN_CLUSTERS`` units, when either is NaN, or
    when the spread is exactly 0 (a spread of 0 among a few units is no evidence of none
    among all). With ``effective`` (:func:`effective_units`, units of unequal weight),
    ``t(level, effective - 1)``, and None also below ``MIN_EFFECTIVE`` effective units."""
    if units < MIN_CLUSTERS or math.isnan(value) or math.isnan(stderr) or stderr == 0:
        return None
    df = _cluster_df(units, effective)
    if df is None:
        return None
    half = t_value(level, df) * stderr
    return (float(max(low, value - half)), float(min(high, value + half)))


def cluster_p(diff: float, stderr: float, units: float, *,
              effective: float | None = None) -> float:
    """The two-sided p-value of ``diff`` (no difference) against Student's t with ``units -
    1`` degrees of freedom (``effective - 1`` with ``effective``, as
    :func:`cluster_interval`); NaN (JSON null) below ``MIN_CLUSTERS`` units (or
    ``MIN_EFFECTIVE`` effective ones) or when undefined. A spread of exactly 0 gives 1
    when ``diff`` is 0 too (every unit's difference is 0: no evidence of one) and NaN
    otherwise, never 0."""
    df = _cluster_df(units, effective)
    if units < MIN_CLUSTERS or df is None or math.isnan(diff) or math.isnan(stderr):
        return math.nan
    if stderr == 0:
        return 1.0 if diff == 0 else math.nan
    return t_two_sided_p(diff / stderr, df)


def weighted_cluster_stderr(stderr: float, total: float, total_sq: float,
                            total_cube: float) -> float:
    """The standard error of a weighted mean (or ratio) over clusters of weights ``w_u``
    (``total = sum w``, ``total_sq = sum w^2``, ``total_cube = sum w^3``) with the
    small-sample factor ``1 / sqrt(k)``, ``k = 1 - 2 sum w^3 / (sum w sum w^2) + sum w^2 /
    (sum w)^2``: the expectation of ``sum w_u^2 (x_u - mean)^2`` over ``sum w_u^2
    Var(x)`` when every cluster's ``x_u`` has the same variance (a heavy cluster pulls the
    mean towards itself and hides its own residual). Equal weights over ``U`` clusters:
    ``k = (U - 1) / U``, :func:`cluster_stderr`'s factor. NaN when ``k`` is not above 0."""
    if math.isnan(stderr) or total <= 0 or total_sq <= 0:
        return math.nan
    k = 1 - 2 * total_cube / (total * total_sq) + total_sq / (total * total)
    return stderr / math.sqrt(k) if k > 0 else math.nan


def log_cluster_interval(value: float, stderr: float, units: float, level: float,
                         high: float = math.inf, *,
                         effective: float | None = None) -> tuple[float, float] | None:
    """:func:`cluster_interval` of a positive value on the log scale: ``value exp(-/+ t
    stderr / value)`` (the delta method, ``se(log v) = se / v``), cut to ``high``: above 0
    and asymmetric, as a ratio of skewed sums (a CTR, a mean pred over few users) is.
    None as :func:`cluster_interval`, and when ``value`` is not above 0."""
    if not value > 0:
        return None
    pair = cluster_interval(math.log(value), stderr / value, units, level,
                            effective=effective)
    if pair is None:
        return None
    return (float(math.exp(pair[0])), float(min(high, math.exp(pair[1]))))


def reciprocal_cluster_interval(value: float, stderr: float, units: float, level: float,
                                high: float = math.inf, *,
                                effective: float | None = None,
                                ) -> tuple[float, float] | None:
    """:func:`cluster_interval` of a positive value on the reciprocal scale: ``1 / (1 / v
    -/+ t stderr / v^2)`` (the delta method, ``se(1 / v) = se / v^2``), that is ``v / (1
    +/- t stderr / v)``, its upper end ``high`` where ``t stderr / v`` reaches 1 (then
    the data bound nothing above). Longer above than the log scale's
    (:func:`log_cluster_interval`): for a ratio of sums over few units whose numerator is
    heavy-tailed (a predicted CTR over users whose mean preds spread like a lognormal),
    the estimate falls low with a small spread when the sample misses the heavy users,
    and the log scale still misses low. None as :func:`log_cluster_interval`."""
    if not value > 0:
        return None
    pair = cluster_interval(0.0, stderr / value, units, level, effective=effective)
    if pair is None:
        return None
    half = pair[1]
    upper = high if half >= 1 else min(high, value / (1 - half))
    return (float(value / (1 + half)), float(upper))


MIN_EFFECTIVE = 2.0
"""The fewest effective units (:func:`effective_units`) a per-user interval or p-value
needs beside ``MIN_CLUSTERS`` units: below it one unit holds nearly all the weight."""


def effective_units(total: float, total_sq: float) -> float:
    """Kish's effective number of units of weights ``w_u``: ``(sum w)^2 / sum w^2``
    (``total``, ``total_sq``): the count itself when the weights are equal, fewer when
    some units weigh more; NaN when ``total_sq`` is not above 0."""
    return total * total / total_sq if total_sq > 0 else math.nan


def _cluster_df(units: float, effective: float | None) -> float | None:
    """Student's t degrees of freedom of ``units`` clusters, ``effective`` of them
    (:func:`cluster_interval`); None when too few."""
    if effective is None:
        return units - 1 if units > 1 else None
    if math.isnan(effective) or effective < MIN_EFFECTIVE:
        return None
    return min(effective, units) - 1


def wilson_interval(successes: float, n: float, level: float) -> tuple[float, float] | None:
    """Wilson's score interval of the rate ``successes / n`` at ``level``, within [0, 1]:
    above 0 at ``successes = 0`` (``z^2 / (n + z^2)``) and below 1 at ``successes = n``.
    With Brown, Cai & DasGupta's (2001) modification at the edges: when ``successes`` is a
    whole 1, 2 or 3 (1 or 2 up to 50 rows) the lower end is the Poisson one,
    :func:`poisson_lower` ``/ n``, and the same for the upper end at ``n - successes``,
    which lifts Wilson's coverage dips there (docs/statistics.md).
    None when ``n`` is not above 0."""
    if not n > 0 or math.isnan(successes):
        return None
    z = z_value(level)
    p = min(max(successes / n, 0.0), 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    edge = 3 if n > 50 else 2
    if float(successes).is_integer() and 1 <= successes <= edge:
        low = poisson_lower(int(successes), 1 - level) / n
    failures = n - successes
    if float(failures).is_integer() and 1 <= failures <= edge:
        high = 1 - poisson_lower(int(failures), 1 - level) / n
    return (float(low), float(high))


def poisson_lower(count: int, alpha: float) -> float:
    """The ``lam`` with ``P(Poisson(lam) >= count) = alpha`` (half the ``alpha``
    quantile of chi-square with ``2 count`` degrees of freedom), by bisection."""
    low, high = 0.0, float(count)
    for _ in range(200):
        mid = (low + high) / 2
        below = math.exp(-mid) * sum(mid**j / math.factorial(j) for j in range(count))
        if 1 - below < alpha:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def logit_interval(value: float, stderr: float, level: float,
                   quantile: float | None = None) -> tuple[float, float] | None:
    """The Wald interval of ``value`` in (0, 1) on the logit scale mapped back: ``logit(v)
    -/+ q se / (v (1 - v))`` (delta method; ``q`` the normal quantile unless given), so
    within (0, 1) and asymmetric near the edges; None when ``value`` is 0 or 1 or the
    spread is 0 or NaN."""
    if (math.isnan(value) or math.isnan(stderr) or stderr <= 0 or not 0 < value < 1):
        return None
    q = z_value(level) if quantile is None else quantile
    centre = math.log(value / (1 - value))
    half = q * stderr / (value * (1 - value))
    return _expit(centre - half), _expit(centre + half)


def _expit(x: float) -> float:
    """``1 / (1 + exp(-x))``; 0 where ``exp(-x)`` passes float64's range (a logit below
    -709: a value below 1e-308)."""
    return 0.0 if -x > 709 else float(1 / (1 + math.exp(-x)))


def bh_q_values(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg q-values of ``p_values`` (NaN stays NaN and does not count in
    the number of tests): ``q_(i) = min_{j >= i} m p_(j) / j`` over the ``m`` defined
    p-values sorted ascending, capped at 1."""
    defined = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    q = [math.nan] * len(p_values)
    m = len(defined)
    order = sorted(defined, key=lambda i: p_values[i])
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, m * p_values[i] / rank)
        q[i] = running
    return q


# --- issue 32: AUC at high values with few positives, skewed means, sums of gaps ---------

def hanley_mcneil_variance(auc: float, positives: float, negatives: float) -> float:
    """Hanley & McNeil's (1982) variance of an AUC ``A`` from ``P`` positives and ``N``
    negatives: ``(A (1 - A) + (P - 1) (Q1 - A^2) + (N - 1) (Q2 - A^2)) / (P N)`` with ``Q1
    = A / (2 - A)`` and ``Q2 = 2 A^2 / (1 + A)`` (exponential score distributions); 0 at
    ``A`` 0 and 1."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    spread = (auc * (1 - auc) + (positives - 1) * (q1 - auc * auc)
              + (negatives - 1) * (q2 - auc * auc))
    return max(spread, 0.0) / (positives * negatives)


def auc_score_interval(auc: float, positives: float, negatives: float, quantile: float
                       ) -> tuple[float, float] | None:
    """The score-type interval of an AUC (Newcombe 2006, his method 5, with the class sizes
    as they are): the ``theta`` in [0, 1] with ``(auc - theta)^2 <= q^2 V(theta)``,
    ``V`` :func:`hanley_mcneil_variance` at ``theta`` itself, so the spread is the one of
    the candidate value, not the sample's (which is small, or 0, when a few positives
    happen to rank high). Its ends by bisection; None when ``auc`` is NaN or a class has
    fewer than 2."""
    if math.isnan(auc) or positives < 2 or negatives < 2:
        return None
    q2 = quantile * quantile

    def outside(theta: float) -> bool:
        return (auc - theta) ** 2 > q2 * hanley_mcneil_variance(theta, positives, negatives)

    def end(inner: float, outer: float) -> float:
        if not outside(outer):
            return outer
        for _ in range(100):
            mid = (inner + outer) / 2
            if outside(mid):
                outer = mid
            else:
                inner = mid
        return (inner + outer) / 2

    return (float(end(auc, 0.0)), float(end(auc, 1.0)))


def hull(*pairs: tuple[float, float] | None) -> tuple[float, float] | None:
    """The smallest interval holding every pair that is not None (None if all are)."""
    given = [pair for pair in pairs if pair is not None]
    if not given:
        return None
    return (min(low for low, _ in given), max(high for _, high in given))


def skewed_mean_interval(value: float, stderr: float, skewness: float, level: float,
                         low: float = -math.inf, high: float = math.inf,
                         ) -> tuple[float, float] | None:
    """Hall's (1992) interval of a mean whose estimate is skewed (a predicted CTR of a few
    hundred skewed preds): with ``a = skewness / 3`` (``skewness`` the estimate's own, the
    values' over ``sqrt n``), the studentized mean ``T`` is mapped by ``g(t) = t + a t^2 +
    a^2 t^3 / 3 + a / 2`` (monotone, ``((1 + a t)^3 - 1) / (3 a) + a / 2``) to a nearly
    normal one, so the interval is ``value - se g^-1(+/-z)``: longer on the side of the
    skew. ``a = 0``: Wald. Cut to ``[low, high]``; None when a term is NaN or ``stderr``
    is not above 0."""
    if math.isnan(value) or math.isnan(stderr) or not stderr > 0 or math.isnan(skewness):
        return None
    z = z_value(level)
    a = skewness / 3

    def inverse(x: float) -> float:
        if a == 0:
            return x
        # (r - 1) / a with r the cube root of 1 + 3 a (x - a / 2), written as 3 (x - a / 2)
        # / (r^2 + r + 1) (r^3 - 1 = (r - 1) (r^2 + r + 1)): no cancellation as a nears 0,
        # where (r - 1) / a lost a digit for each of a's (a skewness of 1e-14, rounding
        # noise of a spread of 0, moved the interval in its fourth digit)
        cube = 1 + 3 * a * (x - a / 2)
        root = math.copysign(abs(cube) ** (1 / 3), cube)
        return 3 * (x - a / 2) / (root * root + root + 1)

    return (float(max(low, value - stderr * inverse(z))),
            float(min(high, value - stderr * inverse(-z))))


def absolute_sum_interval(total: float, sure: list[float], unsure: list[float],
                          level: float) -> tuple[float, float] | None:
    """An interval of ``sum_k |g_k|`` (an expected calibration error) from its estimate
    ``total = sum_k |h_k|``, ``h_k = g_k + e_k`` with independent normal errors of
    standard errors ``sure`` (groups whose gap is at least :data:`SURE_GAP` standard
    errors from 0: ``|h_k| - |g_k| = +/- e_k``) and ``unsure`` (the others: ``|h_k| -
    |g_k|`` lies within ``+/- |e_k|``, a half-normal). By the triangle inequality the
    error of ``total`` is at most ``|sum_sure +/- e_k| + sum_unsure |e_k|``; the interval
    is ``total -/+ c``, cut at 0, with ``c = z sqrt(sum_sure s^2) + sum_unsure s sqrt(2 /
    pi) + z sqrt(sum_unsure s^2 (1 - 2 / pi))`` (the normal quantiles of each part, added:
    conservative, so valid at a gap of 0 too, where the estimate's bias is all upward).
    None when there is no spread at all."""
    if math.isnan(total) or not (any(s > 0 for s in sure) or any(s > 0 for s in unsure)):
        return None
    z = z_value(level)
    half = (z * math.sqrt(math.fsum(s * s for s in sure))
            + math.sqrt(2 / math.pi) * math.fsum(unsure)
            + z * math.sqrt((1 - 2 / math.pi) * math.fsum(s * s for s in unsure)))
    return (float(max(0.0, total - half)), float(total + half))


SURE_GAP = 3.0
"""A calibration group whose gap is this many standard errors from 0 has a known sign
(:func:`absolute_sum_interval`)."""
