"""Simulated data sets with a known truth, for the coverage tests and scripts/coverage.py.

Binormal scores: positives N(d, 1), negatives N(0, 1), pred = sigmoid(score); the true
AUC of the raw preds is Phi(d / sqrt 2) (the sigmoid keeps the order).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from mpieval import AucMetric, Comm, UndefinedMetricWarning
from mpieval.kernels import stats

POSITIVE_SHARE = 0.3


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def binormal(rng: np.random.Generator, n: int, d: float,
             positive_share: float = POSITIVE_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """``(pred, label)``: ``n`` rows, a share ``positive_share`` positive in expectation."""
    label = (rng.random(n) < positive_share).astype(np.int8)
    return sigmoid(rng.standard_normal(n) + d * label), label


def mean_sigmoid(d: float) -> float:
    """``E[sigmoid(Z + d)]``, Z standard normal (Gauss-Hermite quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(100)
    return float(w @ sigmoid(x + d)) / math.sqrt(2 * math.pi)


def truth(d: float) -> dict[str, float]:
    """The true values the binormal rows estimate."""
    mean_pred = POSITIVE_SHARE * mean_sigmoid(d) + (1 - POSITIVE_SHARE) * mean_sigmoid(0.0)
    return {"auc": stats.normal_cdf(d / math.sqrt(2)), "actual_ctr": POSITIVE_SHARE,
            "predicted_ctr": mean_pred, "copc": POSITIVE_SHARE / mean_pred}


def auc_coverage(rng: np.random.Generator, datasets: int, n: int, d: float,
                 table_size: int = 10_000) -> dict[str, float]:
    """Share of ``datasets`` binormal data sets whose 95% interval covers the truth, for
    each value of ``truth``."""
    want = truth(d)
    hits = dict.fromkeys(want, 0)
    for _ in range(datasets):
        pred, label = binormal(rng, n, d)
        metric = AucMetric(table_size, comm=Comm.local())
        metric.update(pred, label)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            ci = metric.compute().ci()
        for name, value in want.items():
            pair = ci[name]
            hits[name] += pair is not None and pair[0] <= value <= pair[1]
    return {name: count / datasets for name, count in hits.items()}
