"""The ``auc`` kind's statistics over the ranks of ``mpiexec -n N``: the same values,
intervals and curves as one process, whatever the split (assertions hold for any N)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sharding import my_rows

from mpieval import AucMetric, Comm
from mpieval.errors import UndefinedMetricWarning

pytestmark = pytest.mark.mpi

VALUES = ("auc", "logloss", "ne", "auprc", "auc_tie_bound", "actual_ctr", "predicted_ctr",
          "copc")


def rows(rng, n=40_000):
    label = (rng.random(n) < 0.25).astype(np.int8)
    pred = 1 / (1 + np.exp(-(rng.standard_normal(n) + label - 1)))
    return {"pred": pred.astype(np.float32), "label": label,
            "weight": rng.integers(0, 4, n).astype(np.float64)}


def _same(pair, want):
    """Two intervals equal to 1e-12, or both None."""
    return pair is None if want is None else pair == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scatter", [False, True])
def test_statistics_are_those_of_one_process_for_any_split(comm, rng, weighted, scatter):
    data = rows(rng)
    mine = my_rows(data, comm.rank, comm.size, rng, scatter=scatter)
    metric = AucMetric(table_size=10_000, comm=comm)
    metric.update(mine["pred"], mine["label"], mine["weight"] if weighted else None)
    one = AucMetric(table_size=10_000, comm=Comm.local())
    one.update(data["pred"], data["label"], data["weight"] if weighted else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got, want = metric.compute(), one.compute()
    for name in VALUES:
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-12), name
    for level in (0.95, 0.8):
        for name, pair in got.ci(level).items():
            assert _same(pair, want.ci(level)[name]), name
    assert got.stderr["auc"] == want.stderr["auc"]  # from the merged table: exact
    assert got.roc_curve == want.roc_curve
    assert got.calibration_curve == want.calibration_curve
    # from the merged table too (weighted buckets: sums in another order, so approx)
    np.testing.assert_allclose(got.pr_curve, want.pr_curve, rtol=1e-12)
    np.testing.assert_allclose(got.score_histogram, want.score_histogram, rtol=1e-12)
    assert got.ece == pytest.approx(want.ece, rel=1e-12) and got.pr_curve
    intervals = got.ci()
    assert not any(math.isnan(x) for pair in intervals.values() for x in pair)
    if not weighted:  # whole counts: the table, the sums and the moments are exact
        assert got.stderr == want.stderr
        assert got.ece_spread == want.ece_spread
        assert got.to_dict()["ci95"] == want.to_dict()["ci95"]


def test_importance_moments_have_the_same_bits_on_any_split(comm, rng):
    """The moments (squared weights) and the cross products are exact sums: the same bits
    as one process, whatever the split; so are the intervals from them."""
    data = rows(rng)
    data["weight"] = np.where(data["label"] == 1, 1.0, 10.0)
    data["compare"] = np.clip(data["pred"] * 1.3, 0, 1)
    mine = my_rows(data, comm.rank, comm.size, rng, scatter=True)
    metric = AucMetric(table_size=10_000, compare="b", weights="importance", comm=comm)
    metric.update(mine["pred"], mine["label"], mine["weight"], compare=mine["compare"])
    one = AucMetric(table_size=10_000, compare="b", weights="importance", comm=Comm.local())
    one.update(data["pred"], data["label"], data["weight"], compare=data["compare"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got, want = metric.compute(), one.compute()
    for name in ("logloss", "ne", "mae", "mse"):
        assert got.stderr[name] == want.stderr[name], name
    for name in ("logloss", "ne", "copc"):
        assert got.compare.diffs[name] == want.compare.diffs[name], name
    assert got.compare.to_dict()["copc_diff_p"] < 1e-6  # B over-predicts by 30%


@pytest.mark.parametrize("weighted", [False, True])
def test_paired_comparison_is_that_of_one_process_for_any_split(comm, rng, weighted):
    data = rows(rng)
    data["compare"] = np.clip(data["pred"] + rng.normal(0, 0.05, len(data["pred"])), 0,
                              1).astype(np.float32)
    mine = my_rows(data, comm.rank, comm.size, rng, scatter=True)
    metric = AucMetric(table_size=10_000, compare="b", comm=comm)
    metric.update(mine["pred"], mine["label"], mine["weight"] if weighted else None,
                  compare=mine["compare"])
    one = AucMetric(table_size=10_000, compare="b", comm=Comm.local())
    one.update(data["pred"], data["label"], data["weight"] if weighted else None,
               compare=data["compare"])
    got, want = metric.compute().compare, one.compute().compare
    assert got.auc_diff == want.auc_diff  # from the merged tables: exact
    assert got.auc_diff_stderr == pytest.approx(want.auc_diff_stderr, rel=1e-12)
    assert got.p == pytest.approx(want.p, rel=1e-12)
    assert got.ci(0.9) == pytest.approx(want.ci(0.9), rel=1e-12)
    assert got.to_log_line("x") == want.to_log_line("x")
    for name in ("logloss", "ne", "copc", "ece", "auprc"):
        assert got.diffs[name] == pytest.approx(want.diffs[name], rel=1e-10), name
        assert got.diff_ci(name, 0.9) == pytest.approx(want.diff_ci(name, 0.9), rel=1e-10)
        assert got.p_value(name) == pytest.approx(want.p_value(name), rel=1e-9, abs=1e-300)
        if not weighted:  # exact sums of whole counts: the same bits
            assert got.diffs[name] == want.diffs[name], name


@pytest.mark.parametrize("scatter", [False, True])
def test_importance_weights_are_those_of_one_process_for_any_split(comm, rng, scatter):
    """The sums of squared weights are exact: the same effective sizes and intervals as
    one process (the table's fractional weights: to the last bits)."""
    data = rows(rng)
    data["weight"] = np.where(data["label"] == 1, 1.0, 10.0) * rng.uniform(0.5, 1.5, 40_000)
    data["compare"] = np.clip(data["pred"] + rng.normal(0, 0.05, len(data["pred"])), 0,
                              1).astype(np.float32)
    mine = my_rows(data, comm.rank, comm.size, rng, scatter=scatter)
    metric = AucMetric(table_size=10_000, compare="b", weights="importance", comm=comm)
    metric.update(mine["pred"], mine["label"], mine["weight"], compare=mine["compare"])
    one = AucMetric(table_size=10_000, compare="b", weights="importance", comm=Comm.local())
    one.update(data["pred"], data["label"], data["weight"], compare=data["compare"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got, want = metric.compute(), one.compute()
    assert got.weights == want.weights == "importance"
    assert got.effective == pytest.approx(want.effective, rel=1e-12)
    assert got.stderr == pytest.approx(want.stderr, rel=1e-12)
    for name, pair in got.ci(0.95).items():
        assert _same(pair, want.ci(0.95)[name]), name
    assert got.compare.auc_diff_stderr == pytest.approx(want.compare.auc_diff_stderr, rel=1e-12)
    assert got.compare.ci() == pytest.approx(want.compare.ci(), rel=1e-12)
