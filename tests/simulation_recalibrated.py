"""Simulated data sets with a known ``ne_recalibrated``, for its coverage test
(tests/test_auc_buckets.py, slow) and scripts/recalibrated_coverage.py.

A row has a score ``z ~ N(0, 1)`` and a click with probability ``sigmoid(z + base)``; a
model predicts ``sigmoid(slope z + offset)`` (miscalibrated by ``offset``, over- or
under-confident by ``slope``). The population's recalibrated NE of a model, the truth, is
read by Gauss-Hermite quadrature over ``z``: the shift ``c`` with ``E sigmoid(slope z +
offset + c) = E sigmoid(z + base)``, then ``E[loss] / H(ctr)``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from mpieval import AucMetric, Comm
from mpieval.errors import UndefinedMetricWarning

NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(200)
WEIGHTS = WEIGHTS / WEIGHTS.sum()  # E f(z) = sum WEIGHTS f(NODES), z ~ N(0, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def truth(slope: float, offset: float, base: float) -> float:
    """The population's recalibrated NE of the model ``sigmoid(slope z + offset)``."""
    click = _sigmoid(NODES + base)
    ctr = float(WEIGHTS @ click)
    low, high = -30.0, 30.0
    for _ in range(200):
        c = (low + high) / 2
        low, high = (c, high) if float(WEIGHTS @ _sigmoid(slope * NODES + offset + c)) < ctr \
            else (low, c)
    u = slope * NODES + offset + (low + high) / 2
    loss = float(WEIGHTS @ (click * np.logaddexp(0, -u) + (1 - click) * np.logaddexp(0, u)))
    return loss / -(ctr * math.log(ctr) + (1 - ctr) * math.log(1 - ctr))


MODEL_A = (0.8, -1.0)  # (slope, offset): under-confident and miscalibrated
MODEL_B = (1.0, -2.0)


def coverage(rng: np.random.Generator, datasets: int, n: int, base: float = -1.5,
             table_size: int = 100_000) -> tuple[float, float]:
    """Shares of data sets of ``n`` rows whose 95% intervals cover the truth: A's
    ``ne_recalibrated``, and ``ne_recalibrated_diff`` (B - A). A null interval counts as
    no cover."""
    want_a = truth(*MODEL_A, base)
    want_diff = truth(*MODEL_B, base) - want_a
    covered = covered_diff = 0
    for _ in range(datasets):
        z = rng.normal(size=n)
        label = (rng.random(n) < _sigmoid(z + base)).astype(np.int8)
        metric = AucMetric(comm=Comm.local(), table_size=table_size, compare="b")
        metric.update(_sigmoid(MODEL_A[0] * z + MODEL_A[1]), label,
                      compare=_sigmoid(MODEL_B[0] * z + MODEL_B[1]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            block = metric.compute().to_dict()
        interval = block["ci95"]["ne_recalibrated"]
        covered += interval is not None and interval[0] <= want_a <= interval[1]
        interval = block["compare"]["ne_recalibrated_diff_ci95"]
        covered_diff += interval is not None and interval[0] <= want_diff <= interval[1]
    return covered / datasets, covered_diff / datasets
