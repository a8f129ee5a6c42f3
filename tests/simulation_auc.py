"""Simulated ``auc`` data sets with a known truth (issue 32), for the slow tests and
scripts/stats_coverage.py ``--auc-only``.

- The hard regimes: high AUC with few positives (binormal, ``d`` 3 and 2: AUC 0.983 and
  0.921), importance weights after keeping non-clicks at 0.02, skewed preds on small sets.
- Every value's interval and each paired difference: rows of a logistic model, ``z ~ N(0,
  1)``, the true click rate ``sigmoid(a + z)`` and the model's pred ``sigmoid(a + z +
  shift)`` (a miscalibration ``shift`` so that ECE is not 0), at a CTR of 2% or 20%; the
  true values are those of a population of :data:`TRUTH_ROWS` rows (computed once, cached).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from simulation import binormal, mean_sigmoid, sigmoid

from mpieval import AucMetric, Comm, UndefinedMetricWarning
from mpieval.kernels import stats

TABLE_SIZE = 10_000
NEW = ("logloss", "ne", "auprc", "ece", "rmse", "mae")
COMPARED = ("logloss", "ne", "copc", "ece", "auprc")
TRUTH_ROWS = 20_000_000


def _quiet(compute: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return compute()


def _covers(pair: tuple[float, float] | None, value: float) -> bool:
    return pair is not None and pair[0] <= value <= pair[1]


# -- the table: high AUC, few positives --------------------------------------------

def high_auc_coverage(rng: np.random.Generator, datasets: int, positives: int, d: float,
                      n: int = 10_000) -> float:
    """The share of ``datasets`` binormal sets (``n`` rows, exactly ``positives``
    positives, separation ``d``) whose ``auc`` interval covers ``Phi(d / sqrt 2)``."""
    want = stats.normal_cdf(d / math.sqrt(2))
    hits = 0
    for _ in range(datasets):
        label = np.zeros(n, dtype=np.int8)
        label[rng.choice(n, positives, replace=False)] = 1
        metric = AucMetric(table_size=TABLE_SIZE, comm=Comm.local())
        metric.update(sigmoid(rng.standard_normal(n) + d * label), label)
        hits += _covers(_quiet(metric.compute).ci()["auc"], want)
    return hits / datasets


# -- importance weights, non-clicks kept at 0.02 -------------------------------------------

def calibrated_rows(rng: np.random.Generator, n: int, intercept: float, shift: float,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(pred, label)``: ``z ~ N(0, 1)``, a click with probability ``sigmoid(intercept +
    z)``, the model's pred ``sigmoid(intercept + z + shift)`` (calibrated at shift 0)."""
    z = rng.standard_normal(n)
    label = (rng.random(n) < sigmoid(intercept + z)).astype(np.int8)
    return sigmoid(intercept + z + shift), label


def downsampled_copc_coverage(rng: np.random.Generator, datasets: int, shift: float,
                              n: int = 20_000, intercept: float = -3.0,
                              keep: float = 0.02) -> dict[str, float]:
    """Full sets of ``n`` rows (:func:`calibrated_rows`), every click kept with weight 1,
    each non-click with probability ``keep`` and weight ``1 / keep``, read as importance
    weights: the share of intervals covering the population's ``copc``, ``actual_ctr``
    and ``predicted_ctr``."""
    ctr, mean_pred = mean_sigmoid(intercept), mean_sigmoid(intercept + shift)
    want = {"copc": ctr / mean_pred, "actual_ctr": ctr, "predicted_ctr": mean_pred}
    hits = dict.fromkeys(want, 0)
    for _ in range(datasets):
        pred, label = calibrated_rows(rng, n, intercept, shift)
        kept = (label == 1) | (rng.random(n) < keep)
        weight = np.where(label[kept] == 1, 1.0, 1 / keep)
        metric = AucMetric(table_size=TABLE_SIZE, weights="importance", comm=Comm.local())
        metric.update(pred[kept], label[kept], weight)
        ci = _quiet(metric.compute).ci()
        for name, value in want.items():
            hits[name] += _covers(ci[name], value)
    return {name: count / datasets for name, count in hits.items()}


# -- skewed preds, small sets -----------------------------------------------------------------

SKEWED = (-5.0, 2.0)  # the pred's logit ~ N(-5, 2^2): a mean of 0.024, a long right tail


def skewed_coverage(rng: np.random.Generator, datasets: int, n: int) -> dict[str, float]:
    """Preds ``sigmoid(N(-5, 2^2))`` (calibrated: a click with the pred's probability) on
    sets of ``n`` rows: the share of ``predicted_ctr``, ``actual_ctr`` and ``copc``
    intervals covering the truth (the mean pred, itself, and 1)."""
    mu, sd = SKEWED
    x, w = np.polynomial.hermite_e.hermegauss(200)
    mean = float(w @ sigmoid(mu + sd * x)) / math.sqrt(2 * math.pi)
    want = {"predicted_ctr": mean, "actual_ctr": mean, "copc": 1.0}
    hits = dict.fromkeys(want, 0)
    for _ in range(datasets):
        pred = sigmoid(mu + sd * rng.standard_normal(n))
        label = (rng.random(n) < pred).astype(np.int8)
        metric = AucMetric(table_size=TABLE_SIZE, comm=Comm.local())
        metric.update(pred, label)
        ci = _quiet(metric.compute).ci()
        for name, value in want.items():
            hits[name] += _covers(ci[name], value)
    return {name: count / datasets for name, count in hits.items()}


# -- every new interval and paired difference ----------------------------------------------

INTERCEPTS = {0.02: -4.6, 0.2: -1.65}  # a CTR of about 2% and 20% (sigmoid(a + z))
SHIFT = 0.3  # the model over-predicts a little: ECE above 0


def _population(ctr: float, ties: bool, rows: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    pred, label = calibrated_rows(rng, rows, INTERCEPTS[ctr], SHIFT)
    if ties:
        pred = np.maximum(np.round(pred, 3), 0.001)
    return pred, label


@functools.cache
def population_truth(ctr: float, ties: bool) -> dict[str, float]:
    """The values of :data:`TRUTH_ROWS` rows of the population (seed fixed): the truth
    the sets estimate (its own sampling error is about ``sqrt(n / TRUTH_ROWS)`` of a set's
    standard error: 0.07 at 100,000 rows)."""
    rng = np.random.default_rng(20260)
    metric = AucMetric(table_size=TABLE_SIZE, comm=Comm.local())
    for _ in range(TRUTH_ROWS // 1_000_000):
        metric.update(*_population(ctr, ties, 1_000_000, rng))
    result = _quiet(metric.compute)
    return {name: float(getattr(result, name)) for name in NEW}


def auprc_before(result: Any, level: float = 0.95) -> tuple[float, float] | None:
    """``auprc``'s interval as issue 32's first round computed it, from the same result:
    the logit scale around the AP with Student's t of ``min(P, N) - 1`` (no bias term, no
    effective rows)."""
    smaller = min(result.class_sizes)
    if smaller < stats.MIN_CLASS:
        return None
    return stats.logit_interval(result.auprc, result.stderr.get("auprc", math.nan), level,
                                stats.t_value(level, smaller - 1))


def new_interval_coverage(rng: np.random.Generator, datasets: int, n: int, ctr: float,
                          ties: bool = False, keep: float | None = None,
                          with_before: bool = False) -> dict[str, float]:
    """The share of ``datasets`` sets of ``n`` population rows whose interval of each of
    :data:`NEW` covers the population's value; ``ties``: preds rounded to 3 decimals (at
    least 0.001); ``keep``: non-clicks kept at that rate with weight ``1 / keep``
    (importance weights). ``with_before``: also ``"auprc (before)"``
    (:func:`auprc_before`, on the same sets)."""
    want = population_truth(ctr, ties)
    hits = dict.fromkeys([*want, *(("auprc (before)",) if with_before else ())], 0)
    for _ in range(datasets):
        pred, label = _population(ctr, ties, n, rng)
        weights, weight = "frequency", None
        if keep is not None:
            kept = (label == 1) | (rng.random(n) < keep)
            pred, label = pred[kept], label[kept]
            weight = np.where(label == 1, 1.0, 1 / keep)
            weights = "importance"
        metric = AucMetric(table_size=TABLE_SIZE, weights=weights, comm=Comm.local())
        metric.update(pred, label, weight)
        result = _quiet(metric.compute)
        ci = result.ci()
        for name, value in want.items():
            hits[name] += _covers(ci[name], value)
        if with_before:
            hits["auprc (before)"] += _covers(auprc_before(result), want["auprc"])
    return {name: count / datasets for name, count in hits.items()}


def paired_null_rejection(rng: np.random.Generator, datasets: int, n: int, ctr: float,
                          noise: float = 0.5, keep: float | None = None,
                          with_before: bool = False) -> dict[str, float]:
    """Two equally good models (the population's score plus each model's own N(0,
    noise^2)) on the same ``n`` rows: the share of paired p-values below 0.05 for each of
    :data:`COMPARED` (and ``auc``); a null p counts as no rejection. ``with_before``: also
    ``"auprc (before)"``, its p-value against the t of ``min(P, N) - 1`` as issue 32's
    first round computed it, on the same sets."""
    counts = dict.fromkeys((*COMPARED, "auc", *(("auprc (before)",) if with_before else ())),
                           0)
    intercept = INTERCEPTS[ctr]
    for _ in range(datasets):
        z = rng.standard_normal(n)
        label = (rng.random(n) < sigmoid(intercept + z)).astype(np.int8)
        a = sigmoid(intercept + SHIFT + z + noise * rng.standard_normal(n))
        b = sigmoid(intercept + SHIFT + z + noise * rng.standard_normal(n))
        weights, weight = "frequency", None
        if keep is not None:
            kept = (label == 1) | (rng.random(n) < keep)
            a, b, label = a[kept], b[kept], label[kept]
            weight = np.where(label == 1, 1.0, 1 / keep)
            weights = "importance"
        metric = AucMetric(table_size=TABLE_SIZE, weights=weights, compare="b",
                           comm=Comm.local())
        metric.update(a, label, weight, compare=b)
        compare = _quiet(metric.compute).compare
        for name in (*COMPARED, "auc"):
            counts[name] += compare.p_value(name) < 0.05
        if with_before:
            diff, stderr = compare.diffs["auprc"]
            counts["auprc (before)"] += stats.cluster_p(diff, stderr, compare._units) < 0.05
    return {name: count / datasets for name, count in counts.items()}


def binormal_rows(rng: np.random.Generator, n: int, d: float) -> tuple[np.ndarray, np.ndarray]:
    return binormal(rng, n, d)


# -- the table of docs/statistics.md (scripts/stats_coverage.py --auc-only) -----------------

PARTS = ("hard", "new", "new-100k", "importance-100k")


def table(part: str, rng: np.random.Generator, datasets: int, big_datasets: int,
          ) -> list[tuple[str, str, float, int]]:
    """The cells of one part of the ``auc`` table (:data:`PARTS`: ``"hard"`` the regimes of
    the issue and the old cells, ``"new"`` every new interval and paired test at 1,000
    rows, ``"new-100k"`` at 100,000 rows, ``big_datasets`` sets a cell,
    ``"importance-100k"`` its importance-weight cells alone): ``(cell,
    value, share, sets)``, coverage of each 95% interval or the share of paired p < 0.05
    under the null."""
    from simulation import downsampling_coverage, few_positives_rates, rare_click_coverage

    out: list[tuple[str, str, float, int]] = []
    if part == "new":
        return _new_cells(rng, [(1000, datasets)])
    if part == "new-100k":
        return _new_cells(rng, [(100_000, big_datasets)])
    if part == "importance-100k":
        return _new_cells(rng, [(100_000, big_datasets)], importance_only=True)
    for positives, d in ((10, 3.0), (30, 3.0), (10, 2.0), (100, 3.0), (200, 3.0), (300, 3.0),
                         (600, 3.0)):
        auc = stats.normal_cdf(d / math.sqrt(2))
        out.append((f"AUC {auc:.3f}, {positives} positives in 10,000 rows", "auc covers",
                    high_auc_coverage(rng, datasets, positives, d), datasets))
    for positives in (10, 30):
        rates = few_positives_rates(rng, datasets, positives)
        cell = f"AUC 0.760, {positives} positives in 10,000 rows"
        out += [(cell, "auc covers", rates["auc"], datasets),
                (cell, "auc_diff p < 0.05 under the null", rates["auc_diff p<0.05"], datasets)]
    for shift, name in ((0.0, "calibrated"), (0.5, "over-predicting")):
        cell = f"importance weights, non-clicks kept at 0.02, {name}"
        for key, share in downsampled_copc_coverage(rng, datasets, shift).items():
            out.append((cell, f"{key} covers", share, datasets))
    for ctr in (0.05, 0.2):
        cell = f"importance weights, non-clicks kept at 0.1, CTR {ctr}"
        shares = downsampling_coverage(rng, datasets, ctr=ctr)
        for key in ("auc", "actual_ctr", "predicted_ctr", "copc"):
            out.append((cell, f"{key} covers", shares[f"importance {key}"], datasets))
    for n in (100, 300, 1000):
        for key, share in skewed_coverage(rng, datasets, n).items():
            out.append((f"{n} rows of skewed preds", f"{key} covers", share, datasets))
    for key, share in rare_click_coverage(rng, datasets).items():
        out.append(("1,000 rows, CTR 0.002", f"{key} covers", share, datasets))
    return out


def _new_cells(rng: np.random.Generator, sizes: list[tuple[int, int]],
               importance_only: bool = False) -> list[tuple[str, str, float, int]]:
    out: list[tuple[str, str, float, int]] = []
    importance = ", importance (non-clicks kept at 0.1)"
    for n, sets in sizes:
        for ctr in (0.02, 0.2):
            for ties, keep, what in ((False, None, ""), (True, None, ", ties"),
                                     (False, 0.1, importance)):
                if importance_only and keep is None:
                    continue
                cell = f"{n:,} rows, CTR {ctr}{what}"
                for key, share in new_interval_coverage(rng, sets, n, ctr, ties, keep,
                                                        with_before=True).items():
                    out.append((cell, f"{key} covers", share, sets))
            for keep, what in ((None, ""), (0.1, importance)):
                if importance_only and keep is None:
                    continue
                cell = f"{n:,} rows, CTR {ctr}{what}, two equal models"
                for key, share in paired_null_rejection(rng, sets, n, ctr, keep=keep,
                                                        with_before=True).items():
                    out.append((cell, f"{key}_diff p < 0.05", share, sets))
    return out
