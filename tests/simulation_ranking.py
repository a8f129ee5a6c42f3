"""Simulated users with a known truth for the ``ranking`` kind's intervals and paired test
(tests/test_ranking_stats.py, scripts/ranking_coverage.py).

A user has ``n`` rows, ``n`` log-uniform in 5-200 (rounded), and an own relevance level
``b ~ N(0, 0.7)``. A row has a latent relevance ``s ~ N(0, 1)``; its graded label is 0, 1
or 2 by thresholds on ``s + b + N(0, 0.5)``; model m's pred is ``s + N(0, noise_m)``
rounded to 0.1 (ties). Users are independent, so a value's truth is the mean over the
population's valid users of the user's expected value, and a difference's truth the mean
of the users' expected differences: estimated once from :data:`TRUTH_USERS` users (its
own standard error is below 1/20 of the narrowest interval in the tables). With equal
noise the two models are exchangeable and every true difference is 0 (the null).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from mpieval import Comm, RankingMetric, UndefinedMetricWarning
from mpieval.kinds.ranking.kernels import group_values, value_names

CUTOFFS = (3, 10)
NAMES = value_names(CUTOFFS)
SIZES = (5, 200)
TRUTH_USERS = 400_000


def users(rng: np.random.Generator, count: int, noise_a: float,
          noise_b: float) -> dict[str, np.ndarray]:
    """``count`` users' rows: ``uid``, ``pred`` (A), ``compare`` (B), ``label``."""
    low, high = math.log(SIZES[0]), math.log(SIZES[1])
    sizes = np.rint(np.exp(rng.uniform(low, high, count))).astype(np.int64)
    n = int(sizes.sum())
    uid = np.repeat(np.arange(count, dtype=np.int64), sizes)
    level = rng.normal(0.0, 0.7, count)[uid]
    score = rng.standard_normal(n)
    grade = score + level + rng.normal(0.0, 0.5, n)
    label = (grade > 1.3).astype(np.float64) + (grade > 2.2)
    return {"uid": uid, "label": label,
            "pred": np.round(score + noise_a * rng.standard_normal(n), 1),
            "compare": np.round(score + noise_b * rng.standard_normal(n), 1)}


def truth(rng: np.random.Generator, noise_a: float, noise_b: float,
          count: int = TRUTH_USERS, chunk: int = 50_000) -> dict[str, dict[str, float]]:
    """The population's values of A and B and their differences B - A (means over valid
    users of each user's values), from ``count`` simulated users, with the standard error
    of each mean: ``{"a": {...}, "b": {...}, "diff": {...}, "diff_se": {...}}``."""
    sums = {part: np.zeros(len(NAMES)) for part in ("a", "b", "diff", "diff_sq")}
    valid_users = 0
    for start in range(0, count, chunk):
        rows = users(rng, min(chunk, count - start), noise_a, noise_b)
        keys = rows["uid"].astype(np.uint64)
        block = np.zeros(len(keys), dtype=np.intp)
        a, valid, _, _ = group_values(keys, block, rows["pred"], rows["label"], CUTOFFS)
        b = group_values(keys, block, rows["compare"], rows["label"], CUTOFFS)[0]
        a, b = a[valid], b[valid]
        valid_users += len(a)
        sums["a"] += a.sum(axis=0)
        sums["b"] += b.sum(axis=0)
        sums["diff"] += (b - a).sum(axis=0)
        sums["diff_sq"] += ((b - a) ** 2).sum(axis=0)
    mean = {part: sums[part] / valid_users for part in ("a", "b", "diff")}
    se = np.sqrt((sums["diff_sq"] / valid_users - mean["diff"] ** 2) / valid_users)
    return {**{part: dict(zip(NAMES, mean[part].tolist(), strict=True)) for part in mean},
            "diff_se": dict(zip(NAMES, se.tolist(), strict=True))}


def valid_users(rng: np.random.Generator, count: int, noise_a: float,
                noise_b: float) -> dict[str, np.ndarray]:
    """The rows of ``count`` users that each have a relevant row (the population's users
    drawn until ``count`` of them are valid; the others would not count anyway)."""
    while True:
        rows = users(rng, 2 * count + 10, noise_a, noise_b)
        valid = np.flatnonzero(np.bincount(rows["uid"], weights=rows["label"] > 0) > 0)
        if len(valid) >= count:
            keep = np.isin(rows["uid"], valid[:count])
            return {name: column[keep] for name, column in rows.items()}


def rates(rng: np.random.Generator, datasets: int, count: int, noise_a: float,
          noise_b: float, want: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Over ``datasets`` data sets of ``count`` valid users, for each value: the share with
    ``X_diff_p < 0.05`` (``reject``), the share whose ``X_diff_ci95`` covers the true
    difference (``diff_cover``) and whose ``ci95`` of A covers A's true value
    (``cover``). A null interval or p-value counts as no cover and no rejection."""
    counts = {what: dict.fromkeys(NAMES, 0) for what in ("reject", "diff_cover", "cover")}
    for _ in range(datasets):
        rows = valid_users(rng, count, noise_a, noise_b)
        metric = RankingMetric(comm=Comm.local(), k=CUTOFFS, compare="compare")
        metric.update(rows["uid"], rows["pred"], rows["label"], compare=rows["compare"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            block = metric.compute().all
        assert block.compare is not None
        intervals = block.ci(0.95)
        for name in NAMES:
            p = block.compare.p(name)
            counts["reject"][name] += bool(p < 0.05)
            pair = block.compare.ci(name)
            counts["diff_cover"][name] += pair is not None and (
                pair[0] <= want["diff"][name] <= pair[1])
            pair = intervals[name]
            counts["cover"][name] += pair is not None and pair[0] <= want["a"][name] <= pair[1]
    return {what: {name: hits / datasets for name, hits in by_name.items()}
            for what, by_name in counts.items()}


def binomial_se(share: float, datasets: int) -> float:
    return math.sqrt(share * (1 - share) / datasets)
