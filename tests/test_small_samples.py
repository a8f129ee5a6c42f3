"""Statistics that never overclaim (issue 21): Student's t, per-user intervals and paired
tests with few users, AUC with few positives, rates at 0 and at all events, and the
Benjamini-Hochberg q-values of per-tag comparisons."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mpieval import AucMetric, Comm, RankingMetric, UndefinedMetricWarning, WuaucMetric
from mpieval.kernels import stats


def _compute(metric):
    """The result, undefined-value warnings silenced (beside these tests' point)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


# Student's t two-sided 95% and 99% quantiles from printed tables
@pytest.mark.parametrize(("df", "t95", "t99"), [
    (1, 12.706205, 63.656741), (2, 4.302653, 9.924843), (5, 2.570582, 4.032143),
    (9, 2.262157, 3.249836), (29, 2.045230, 2.756386), (99, 1.984217, 2.626405),
    (1000, 1.962339, 2.580755),
])
def test_t_quantiles_equal_the_tables(df, t95, t99) -> None:
    assert stats.t_value(0.95, df) == pytest.approx(t95, abs=2e-6)
    assert stats.t_value(0.99, df) == pytest.approx(t99, abs=2e-6)


@pytest.mark.parametrize("t", [0.1, 1.0, 2.0, 7.5])
def test_t_p_values_equal_the_closed_forms(t) -> None:
    # df = 1 (Cauchy): 1 - 2 atan(t) / pi; df = 2: 1 - t / sqrt(t^2 + 2)
    assert stats.t_two_sided_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-12)
    assert stats.t_two_sided_p(-t, 2) == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)
    # many degrees of freedom: the normal's
    assert stats.t_two_sided_p(t, 10**6) == pytest.approx(math.erfc(t / math.sqrt(2)))


def test_incomplete_beta_equals_closed_forms() -> None:
    for x in (0.01, 0.3, 0.5, 0.9, 0.999):
        assert stats.incomplete_beta(1, 1, x) == pytest.approx(x, rel=1e-13)
        assert stats.incomplete_beta(2, 3, x) == pytest.approx(
            sum(math.comb(4, j) * x**j * (1 - x) ** (4 - j) for j in (2, 3, 4)), rel=1e-12)


def test_wilson_at_zero_and_at_all_events() -> None:
    z2 = 1.959963984540054**2
    low, high = stats.wilson_interval(0, 5000, 0.95)
    assert low == 0 and high == pytest.approx(z2 / (5000 + z2), rel=1e-12)  # 7.68e-4
    low, high = stats.wilson_interval(5000, 5000, 0.95)
    assert high == 1 and low == pytest.approx(5000 / (5000 + z2), rel=1e-12)


def test_reciprocal_interval_is_the_delta_method_on_one_over_the_value() -> None:
    """``1 / (1 / v -/+ t se / v^2)``: longer above than the log scale's; where ``t se /
    v`` reaches 1 the upper end is the bound (never zero-width); None as the others."""
    t = stats.t_value(0.95, 11)
    low, high = stats.reciprocal_cluster_interval(0.02, 0.004, 30, 0.95, 1.0, effective=12)
    assert 1 / low == pytest.approx(1 / 0.02 + t * 0.004 / 0.02**2)
    assert 1 / high == pytest.approx(1 / 0.02 - t * 0.004 / 0.02**2)
    log_low, log_high = stats.log_cluster_interval(0.02, 0.004, 30, 0.95, 1.0, effective=12)
    assert log_low < low < 0.02 < log_high < high
    assert stats.reciprocal_cluster_interval(0.02, 0.02, 30, 0.95, 1.0, effective=12) == (
        pytest.approx(0.02 / (1 + t)), 1.0)
    assert stats.reciprocal_cluster_interval(0.02, 0.004, 9, 0.95, 1.0) is None
    assert stats.reciprocal_cluster_interval(0.02, 0.0, 30, 0.95, 1.0) is None
    assert stats.reciprocal_cluster_interval(0.0, 0.004, 30, 0.95, 1.0) is None


def test_logit_interval_of_a_tiny_value_with_a_wide_spread_reaches_zero() -> None:
    """A logit below float64's exp range (AUPRC without self of 1e-6 with a spread of
    1e-3, as 10 positives at the bottom give): the lower end is 0, no overflow; the
    same ends as the plain formula where it does not overflow."""
    low, high = stats.logit_interval(1e-6, 1e-3, 0.95, 4.0)
    assert low == 0.0 < 1e-6 < high <= 1.0
    value, stderr, q = 0.3, 0.05, 2.1
    centre, half = math.log(value / (1 - value)), q * stderr / (value * (1 - value))
    assert stats.logit_interval(value, stderr, 0.95, q) == (
        1 / (1 + math.exp(-(centre - half))), 1 / (1 + math.exp(-(centre + half))))


def test_bh_q_values() -> None:
    q = stats.bh_q_values([0.01, math.nan, 0.04, 0.03, 0.5])
    assert math.isnan(q[1])
    assert q[0] == pytest.approx(0.04) and q[2] == pytest.approx(0.16 / 3)
    assert q[3] == pytest.approx(0.16 / 3) and q[4] == pytest.approx(0.5)
    assert stats.bh_q_values([0.9, 0.8]) == [0.9, 0.9]


def test_bh_q_values_of_an_array_are_bh_q_values(rng) -> None:
    """``bh_q_values_of`` (many tags: an array at once) gives ``bh_q_values``' floats,
    bit for bit: NaN kept, ties (a stable order), p-values of 1 and 0, none defined."""
    for n in [*range(6), 50, 3000]:
        for _ in range(20):
            p = np.round(rng.random(n), int(rng.integers(1, 4)))  # ties
            p[rng.random(n) < 0.3] = math.nan
            p[rng.random(n) < 0.05] = 1.0
            want = np.array(stats.bh_q_values(p.tolist()), dtype=np.float64)
            got = stats.bh_q_values_of(p)
            assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.isnan(stats.bh_q_values_of(np.full(4, math.nan))).all()


def _users(rng, n_users, rows=10):
    uid = np.repeat(np.arange(n_users), rows)
    label = np.tile(np.arange(rows) % 2, n_users)
    pred = 1 / (1 + np.exp(-(rng.standard_normal(len(uid)) + label)))
    return uid, pred, label


@pytest.mark.parametrize("n_users", [2, 5, stats.MIN_CLUSTERS - 1])
def test_few_users_give_null_intervals_and_p_values(rng, n_users) -> None:
    uid, pred, label = _users(rng, n_users)
    metric = WuaucMetric(comm=Comm.local(), compare="b")
    metric.update(uid, pred, label, compare=rng.random(len(uid)))
    with pytest.warns(UndefinedMetricWarning, match="needs 10 valid users"):
        block = metric.compute().all.to_dict()
    assert set(block["ci95"]) == {"uauc", "wuauc", "actual_ctr", "predicted_ctr", "copc",
                                  "logloss"}
    assert set(block["ci95"].values()) == {None}
    compare = block["compare"]
    for name in ("uauc_diff", "wuauc_diff", "logloss_diff", "copc_diff"):
        assert compare[f"{name}_ci95"] is None and compare[f"{name}_p"] is None


def test_user_intervals_use_t_with_users_minus_one_degrees_of_freedom(rng) -> None:
    n_users = stats.MIN_CLUSTERS
    uid, pred, label = _users(rng, n_users)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid, pred, label)
    block = _compute(metric).all
    aucs = []
    for u in range(n_users):
        p, y = pred[uid == u], label[uid == u]
        pos, neg = p[y == 1], p[y == 0]
        aucs.append(np.mean((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])))
    se = np.std(aucs, ddof=1) / math.sqrt(n_users)
    low, high = block.ci()["uauc"]
    assert block.uauc == pytest.approx(np.mean(aucs))
    assert high - low == pytest.approx(2 * 2.262157 * se, rel=1e-5)  # t(0.975, 9)


def test_a_zero_spread_gives_no_interval_and_no_p(rng) -> None:
    # every user's AUC is 1 and the models are equal: a spread of 0 from 12 users
    uid = np.repeat(np.arange(12), 4)
    label = np.tile([0, 0, 1, 1], 12)
    pred = np.tile([0.1, 0.2, 0.8, 0.9], 12)
    metric = WuaucMetric(comm=Comm.local(), compare="b")
    metric.update(uid, pred, label, compare=pred)
    block = _compute(metric).all.to_dict()
    assert block["uauc"] == 1.0 and block["ci95"]["uauc"] is None
    assert block["compare"]["uauc_diff"] == 0 and block["compare"]["uauc_diff_p"] == 1
    assert block["compare"]["uauc_diff_ci95"] is None


def test_per_tag_compare_has_bh_q_values_and_all_has_none(rng) -> None:
    n_tags, n_users = 6, 40
    uid, pred, label = _users(rng, n_users * n_tags)
    tag = uid % n_tags
    b = np.where(tag[:, None] < 2, pred[:, None], rng.random((len(uid), 1)))[:, 0]
    metric = WuaucMetric(comm=Comm.local(), compare="b")
    metric.update(uid, pred, label, tag=tag, compare=b)
    result = _compute(metric).to_dict()["tags"]
    assert "uauc_diff_q" not in result["all"]["compare"]
    for name in ("uauc_diff", "wuauc_diff"):
        tags = [t for t in result if t != "all"]
        p = [result[t]["compare"][f"{name}_p"] for t in tags]
        q = [result[t]["compare"][f"{name}_q"] for t in tags]
        defined = [x for x in p if x is not None]
        m = len(defined)
        for p_i, q_i in zip(p, q, strict=True):
            if p_i is None:
                assert q_i is None
                continue
            # BH written out: min over p_j >= p_i of m p_j / rank_j, capped at 1
            want = min(min(1.0, m * p_j / sum(x <= p_j for x in defined))
                       for p_j in defined if p_j >= p_i)
            assert q_i == pytest.approx(want, rel=1e-12)
            assert q_i >= p_i


def test_ranking_intervals_null_below_the_minimum_and_t_above(rng) -> None:
    for n_users, defined in ((stats.MIN_CLUSTERS - 1, False), (stats.MIN_CLUSTERS, True)):
        uid = np.repeat(np.arange(n_users), 6)
        label = (rng.random(len(uid)) < 0.4).astype(float)
        label[::6] = 1
        metric = RankingMetric(comm=Comm.local(), k=[3])
        metric.update(uid, rng.random(len(uid)), label)
        block = _compute(metric).all
        pair = block.ci()["ndcg"]
        assert (pair is not None) == defined
        if defined:
            assert pair is not None
            half = stats.t_value(0.95, n_users - 1) * block.stderr["ndcg"]
            assert pair[1] - pair[0] == pytest.approx(2 * half)


def test_no_click_in_5000_rows() -> None:
    metric = AucMetric(comm=Comm.local())
    metric.update(np.full(5000, 0.01), np.zeros(5000))
    ci = _compute(metric).to_dict()["ci95"]
    assert ci["actual_ctr"][0] == 0 and ci["actual_ctr"][1] == pytest.approx(7.68e-4, rel=1e-3)
    assert ci["copc"][0] == 0 and ci["copc"][1] == pytest.approx(7.68e-4 / 0.01, rel=1e-3)


def test_all_clicks_gives_an_interval_below_one() -> None:
    metric = AucMetric(comm=Comm.local())
    metric.update(np.full(100, 0.5), np.ones(100))
    low, high = _compute(metric).ci()["actual_ctr"]
    assert high == 1 and 0.95 < low < 1


def test_auc_with_few_positives(rng) -> None:
    n = 10_000
    for positives, defined in ((stats.MIN_CLASS - 1, False), (stats.MIN_CLASS, True)):
        label = np.zeros(n)
        label[:positives] = 1
        pred = 1 / (1 + np.exp(-(rng.standard_normal(n) + label)))
        metric = AucMetric(comm=Comm.local(), compare="b")
        metric.update(pred, label, compare=rng.random(n))
        result = _compute(metric)
        pair = result.ci()["auc"]
        assert (pair is not None) == defined
        assert (result.compare is not None and not math.isnan(result.compare.p)) == defined
        if pair is not None:  # the logit-scale interval with t(0.975, 9) from the tables
            se = result.stderr["auc"]
            logit = math.log(result.auc / (1 - result.auc))
            half = 2.262157 * se / (result.auc * (1 - result.auc))
            assert pair[0] == pytest.approx(1 / (1 + math.exp(half - logit)), rel=1e-6)
            assert pair[1] == pytest.approx(1 / (1 + math.exp(-half - logit)), rel=1e-6)


def test_wilson_takes_the_poisson_end_at_one_to_three_events() -> None:
    # P(Poisson(lam) >= 1) = 0.05: lam = -ln 0.95; the upper end is Wilson's
    low, high = stats.wilson_interval(1, 1000, 0.95)
    assert low == pytest.approx(-math.log(0.95) / 1000, rel=1e-9)
    z2, r = 1.959963984540054**2, 1 / 1000
    wilson_high = ((r + z2 / 2000 + math.sqrt(z2) * math.sqrt(r * (1 - r) / 1000
                                                               + z2 / 4e6)) / (1 + z2 / 1000))
    assert high == pytest.approx(wilson_high, rel=1e-12)
    # P(Poisson(lam) >= 2) = 0.05: 1 - e^-lam (1 + lam) = 0.05
    lam = stats.wilson_interval(2, 1000, 0.95)[0] * 1000
    assert 1 - math.exp(-lam) * (1 + lam) == pytest.approx(0.05, rel=1e-9)
    low, high = stats.wilson_interval(999, 1000, 0.95)
    assert high == pytest.approx(1 + math.log(0.95) / 1000, rel=1e-12)


def test_wilson_coverage_over_rates_near_zero() -> None:
    # exact binomial coverage, 1,000 rows: at least 93% over these rates
    n = 1000
    for rate in (0.0005, 0.001, 0.0015, 0.002, 0.003, 0.005):
        coverage = 0.0
        for k in range(60):
            pair = stats.wilson_interval(k, n, 0.95)
            assert pair is not None
            if pair[0] <= rate <= pair[1]:
                coverage += math.comb(n, k) * rate**k * (1 - rate) ** (n - k)
        assert coverage >= 0.93, rate


# -- by simulation (scripts/stats_coverage.py --small-only has the 1,000-set table) --------


@pytest.mark.slow
def test_small_sample_coverage_and_rejection_by_simulation() -> None:
    """200 sets a cell (the script: 1,000); a share's standard error is then 1.5 points,
    so the bounds are the issue's (93%, 6.5%) widened by two of them."""
    import simulation

    rng = np.random.default_rng(21)
    datasets = 200
    for n_users in (10, 30, 100):
        rates = simulation.tag_rates(rng, datasets, n_users)
        assert rates["uauc"] >= 0.90 and rates["wuauc"] >= 0.90, (n_users, rates)
        assert rates["uauc_diff p<0.05"] <= 0.095, (n_users, rates)
        assert rates["wuauc_diff p<0.05"] <= 0.095, (n_users, rates)
    for positives in (10, 30):
        rates = simulation.few_positives_rates(rng, datasets, positives)
        assert rates["auc"] >= 0.90 and rates["auc_diff p<0.05"] <= 0.095, (positives, rates)
    rates = simulation.rare_click_coverage(rng, datasets)
    assert rates["actual_ctr"] >= 0.90 and rates["copc"] >= 0.90, rates
