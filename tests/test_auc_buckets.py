"""The ``auc`` kind's lift and recalibrated NE (mpieval/kinds/auc/buckets.py) against the
plain-Python oracles of tests/oracle_lift.py and against scikit-learn's log_loss."""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import numpy as np
import oracle_lift
import pytest

from mpieval import AucMetric, Comm
from mpieval.errors import UndefinedMetricWarning
from mpieval.kinds.auc.buckets import LIFT_FRACTIONS


def computed(pred, label, weight=None, table_size=1000, **options):
    metric = AucMetric(comm=Comm.local(), table_size=table_size, **options)
    metric.update(pred, label, weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def rows(rng, n=4000):
    z = rng.normal(size=n)
    pred = 1 / (1 + np.exp(-(0.9 * z - 1.2 + rng.normal(scale=0.5, size=n))))
    label = (rng.random(n) < 1 / (1 + np.exp(-(z - 1.5)))).astype(np.int8)
    return pred, label


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("table_size", [50, 1000, 1_000_000])
def test_lift_is_the_oracles(rng, weighted, table_size):
    pred, label = rows(rng)
    weight = rng.integers(0, 4, len(pred)).astype(np.float64) if weighted else None
    got = computed(pred, label, weight, table_size).to_dict()["lift"]
    want = oracle_lift.lift(pred.tolist(), label.tolist(), table_size, LIFT_FRACTIONS,
                            None if weight is None else weight.tolist())
    assert [point["fraction"] for point in got] == list(LIFT_FRACTIONS)
    for point, (fraction, ctr, lift, recall) in zip(got, want, strict=True):
        assert point["fraction"] == fraction
        assert point["ctr"] == pytest.approx(ctr, rel=1e-12)
        assert point["lift"] == pytest.approx(lift, rel=1e-12)
        assert point["recall"] == pytest.approx(recall, rel=1e-12)


def test_lift_without_ties_is_the_top_rows(rng):
    """Distinct buckets and whole cuts: the top k rows by pred, as sorting gives them."""
    n = 1000
    pred = (rng.permutation(n) + 0.5) / n  # one row per bucket of a table of n buckets
    label = rng.integers(0, 2, n)
    got = computed(pred, label, table_size=n).to_dict()["lift"]
    order = np.argsort(-pred)
    for point in got:
        top = label[order[: round(point["fraction"] * n)]]
        assert point["ctr"] == pytest.approx(top.mean(), rel=1e-12)
        assert point["recall"] == pytest.approx(top.sum() / label.sum(), rel=1e-12)
        assert point["lift"] == pytest.approx(top.mean() / label.mean(), rel=1e-12)


def test_lift_counts_a_tied_bucket_by_its_share():
    """Every row in one bucket: the top 1% holds 1% of the positives, whatever their order."""
    pred = np.full(200, 0.3)
    label = np.array([1] * 50 + [0] * 150)
    for point in computed(pred, label).to_dict()["lift"]:
        assert point["ctr"] == pytest.approx(0.25)
        assert point["lift"] == pytest.approx(1.0)
        assert point["recall"] == pytest.approx(point["fraction"])


def test_lift_undefined():
    none = computed(np.array([0.2, 0.7]), np.array([0, 0])).to_dict()
    assert all(p["ctr"] == 0 and p["lift"] is None and p["recall"] is None
               for p in none["lift"])
    assert computed(np.array([]), np.array([])).to_dict()["lift"] == []


def entropy(r):
    return -(r * math.log(r) + (1 - r) * math.log(1 - r))


@pytest.mark.parametrize("weighted", [False, True])
def test_ne_recalibrated_is_the_oracles_within_the_binning_bound(rng, weighted):
    from sklearn.metrics import log_loss

    pred, label = rows(rng, 3000)
    weight = rng.integers(1, 4, len(pred)).astype(np.float64) if weighted else None
    want, shift, shifted = oracle_lift.recalibrated(
        pred.tolist(), label.tolist(), None if weight is None else weight.tolist())
    # the oracle's own check: sklearn's logloss of the shifted preds, COPC = 1
    r = np.average(label, weights=weight)
    assert log_loss(label, shifted, sample_weight=weight) / entropy(r) == pytest.approx(
        want, rel=1e-9)
    assert np.average(shifted, weights=weight) == pytest.approx(r, rel=1e-9)
    for table_size in (100, 1000, 1_000_000):
        result = computed(pred, label, weight, table_size)
        bound = abs(shift) / (2 * table_size * entropy(r))  # docs/kinds/auc.md
        assert abs(result.ne_recalibrated - want) <= 1.5 * bound + 1e-12, table_size
        assert result.recalibration.shift == pytest.approx(shift, abs=2 / table_size)
        assert result.ne_recalibrated <= result.ne  # the fitted shift never raises the loss
    assert abs(result.ne_recalibrated - want) < 1e-6


def test_ne_recalibrated_interval_is_the_delta_methods(rng):
    pred, label = rows(rng, 3000)
    _, shift, _ = oracle_lift.recalibrated(pred.tolist(), label.tolist())
    want = oracle_lift.recalibrated_stderr(pred.tolist(), label.tolist(), shift)
    result = computed(pred, label, table_size=1_000_000)
    assert result.recalibration.stderr == pytest.approx(want, rel=1e-4)
    low, high = result.to_dict()["ci95"]["ne_recalibrated"]
    assert low == pytest.approx(result.ne_recalibrated - 1.959964 * want, rel=1e-4)
    assert high == pytest.approx(result.ne_recalibrated + 1.959964 * want, rel=1e-4)


def test_ne_recalibrated_undefined_or_without_interval(rng):
    pred, label = rows(rng, 2000)
    importance = computed(pred, label, np.full(len(pred), 2.0), weights="importance")
    assert not math.isnan(importance.ne_recalibrated)
    assert importance.to_dict()["ci95"]["ne_recalibrated"] is None
    few = computed(pred[:30], np.array([1] * 5 + [0] * 25)).to_dict()
    assert few["ne_recalibrated"] is not None and few["ci95"]["ne_recalibrated"] is None
    one_class = computed(pred[:30], np.zeros(30)).to_dict()
    assert one_class["ne_recalibrated"] is None and one_class["ci95"]["ne_recalibrated"] is None


def test_ne_recalibrated_of_preds_at_the_edges():
    """Preds of exactly 0 and 1 (infinite logits) are read at their buckets' middles."""
    pred = np.array([0.0, 1.0, 0.5, 0.2, 0.9, 0.0, 1.0] * 20)
    label = np.array([0, 1, 1, 0, 1, 1, 0] * 20)
    result = computed(pred, label)
    assert math.isfinite(result.ne_recalibrated) and result.ne_recalibrated <= result.ne


def compared(pred, label, pred_b, weight=None, table_size=1_000_000):
    metric = AucMetric(comm=Comm.local(), table_size=table_size, compare="b")
    metric.update(pred, label, weight, compare=pred_b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def test_ne_recalibrated_diff_is_the_paired_delta_methods(rng):
    pred, label = rows(rng, 3000)
    pred_b = 1 / (1 + np.exp(-(np.log(pred / (1 - pred)) + rng.normal(scale=0.3, size=3000))))
    block = compared(pred, label, pred_b).to_dict()
    want_a, _, _ = oracle_lift.recalibrated(pred.tolist(), label.tolist())
    want_b, _, _ = oracle_lift.recalibrated(pred_b.tolist(), label.tolist())
    compare = block["compare"]
    assert compare["ne_recalibrated"] == pytest.approx(want_b, abs=1e-6)
    assert compare["ne_recalibrated_diff"] == pytest.approx(want_b - want_a, abs=2e-6)
    se = oracle_lift.recalibrated_paired_stderr(pred.tolist(), pred_b.tolist(), label.tolist())
    low, high = compare["ne_recalibrated_diff_ci95"]
    diff = compare["ne_recalibrated_diff"]
    assert (high - low) / 2 == pytest.approx(1.959964 * se, rel=1e-3)
    assert (high + low) / 2 == pytest.approx(diff, rel=1e-9)
    p = 2 * NormalDist().cdf(-abs(diff) / ((high - low) / 2 / 1.959963984540054))
    assert compare["ne_recalibrated_diff_p"] == pytest.approx(p, rel=1e-6)
    # the paired interval is narrower than the unpaired one would be (the same rows)
    assert (high - low) / 2 < 1.96 * math.hypot(*(
        (b - a) / 2 / 1.96 for a, b in (block["ci95"]["ne_recalibrated"],
                                        compare["ci95"]["ne_recalibrated"])))


def test_ne_recalibrated_diff_without_interval(rng):
    pred, label = rows(rng, 2000)
    same = compared(pred, label, pred).to_dict()["compare"]
    assert same["ne_recalibrated_diff"] == 0 and same["ne_recalibrated_diff_ci95"] is None
    assert same["ne_recalibrated_diff_p"] is None
    metric = AucMetric(comm=Comm.local(), table_size=1000, compare="b", weights="importance")
    metric.update(pred, label, np.full(len(pred), 2.0), compare=pred[::-1].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        importance = metric.compute().to_dict()["compare"]
    assert importance["ne_recalibrated_diff"] is not None
    assert importance["ne_recalibrated_diff_ci95"] is None


@pytest.mark.slow
def test_ne_recalibrated_intervals_cover_the_truth():
    """Coverage by simulation (tests/simulation_recalibrated.py; the table on
    docs/kinds/auc.md from scripts/recalibrated_coverage.py): 300 data sets of 2,000 rows,
    each share within 4 standard errors (0.05) of 95%."""
    import simulation_recalibrated

    value, diff = simulation_recalibrated.coverage(np.random.default_rng(34), 300, 2000)
    assert 0.90 <= value <= 0.99 and 0.90 <= diff <= 0.99, (value, diff)
