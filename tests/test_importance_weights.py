"""Importance weights of the ``auc`` kind (issue 21): ``weights="importance"`` reads
the weights as inverse sampling rates, and the intervals count their spread through the
classes' effective sizes."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import oracle_stats
import pytest
from test_cli import rows, shards

from mpieval import AucMetric, Comm, InputError, UndefinedMetricWarning, checkpoint, cli
from mpieval.kernels import exact, stats


def _compute(metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def _metric(pred, label, weight=None, **options):
    metric = AucMetric(table_size=1000, comm=Comm.local(), **options)
    metric.update(pred, label, weight)
    return metric


def _downsampled(rng, n=6000, ctr=0.1, soft=False):
    """Every click and a tenth of the non-clicks, weights 1 and 10 scattered by a factor
    (so the weights spread inside each class too)."""
    label = (rng.random(n) < ctr).astype(float)
    if soft:
        label = np.where(rng.random(n) < 0.2, rng.random(n), label)
    pred = 1 / (1 + np.exp(-(rng.standard_normal(n) + 1.5 * label - 2)))
    kept = (label > 0) | (rng.random(n) < 0.1)
    weight = np.where(label > 0, 1.0, 10.0) * rng.uniform(0.5, 1.5, n)
    return pred[kept], label[kept], weight[kept]


def _oracle(pred, label, weight, table_size=1000):
    """The importance-weighted statistics in plain Python (loops over rows and buckets):
    effective sizes, DeLong's variance with them, the sandwich standard errors of the
    ratios, the Wilson rows of the CTR."""
    p, y, w = pred.tolist(), label.tolist(), weight.tolist()
    rows_ = list(zip(p, y, w, strict=True))
    pos = sum(wi * yi for _, yi, wi in rows_)
    neg = sum(wi * (1 - yi) for _, yi, wi in rows_)
    pos_sq = sum((wi * yi) ** 2 for _, yi, wi in rows_)
    neg_sq = sum((wi * (1 - yi)) ** 2 for _, yi, wi in rows_)
    ess_pos, ess_neg = pos * pos / pos_sq, neg * neg / neg_sq
    # DeLong over buckets: placements of each class part, weighted variances over ESS - 1
    buckets = [min(int(pi * table_size), table_size - 1) for pi in p]
    neg_in, pos_in = [0.0] * table_size, [0.0] * table_size
    for b, (_, yi, wi) in zip(buckets, rows_, strict=True):
        neg_in[b] += wi * (1 - yi)
        pos_in[b] += wi * yi
    below, above, v10, v01 = 0.0, pos, [0.0] * table_size, [0.0] * table_size
    for b in range(table_size):
        above -= pos_in[b]
        v10[b] = (below + neg_in[b] / 2) / neg
        v01[b] = (above + pos_in[b] / 2) / pos
        below += neg_in[b]
    auc = sum(pos_in[b] * v10[b] for b in range(table_size)) / pos
    s10 = sum(pos_in[b] * (v10[b] - auc) ** 2 for b in range(table_size)) / pos
    s01 = sum(neg_in[b] * (v01[b] - auc) ** 2 for b in range(table_size)) / neg
    variance = s10 / (ess_pos - 1) + s01 / (ess_neg - 1)
    # ratios: sum w^2 (a - r b)^2 over each row's positive and negative parts
    total = pos + neg
    r = pos / total
    actual = math.sqrt(sum((wi * yi) ** 2 * (1 - r) ** 2 + (wi * (1 - yi)) ** 2 * r**2
                           for _, yi, wi in rows_)) / total
    mean_pred = sum(wi * pi for pi, _, wi in rows_) / total
    predicted = math.sqrt(sum(((wi * yi) ** 2 + (wi * (1 - yi)) ** 2) * (pi - mean_pred) ** 2
                              for pi, yi, wi in rows_)) / total
    c = pos / (mean_pred * total)
    copc = math.sqrt(sum((wi * yi) ** 2 * (1 - c * pi) ** 2 + (wi * (1 - yi)) ** 2 * (c * pi) ** 2
                         for pi, yi, wi in rows_)) / (mean_pred * total)
    rate_rows = 1 / (r * (1 - r) * (1 / ess_pos + 1 / ess_neg))
    return {"ess": (ess_pos, ess_neg), "variance": variance, "auc": auc, "actual": actual,
            "predicted": predicted, "copc": copc, "rate_rows": rate_rows, "r": r}


@pytest.mark.parametrize("soft", [False, True])
def test_effective_sizes_and_standard_errors_equal_a_plain_python_oracle(rng, soft):
    pred, label, weight = _downsampled(rng, soft=soft)
    result = _compute(_metric(pred, label, weight, weights="importance", soft_labels=soft))
    want = _oracle(pred, label, weight)
    assert result.weights == "importance" and result.to_dict()["weights"] == "importance"
    assert result.class_sizes == pytest.approx(want["ess"], rel=1e-12)
    assert result.rate_rows == pytest.approx(want["rate_rows"], rel=1e-10)
    assert result.auc == pytest.approx(want["auc"], rel=1e-10)
    assert result.stderr["auc"] ** 2 == pytest.approx(want["variance"], rel=1e-8)
    assert result.stderr["actual_ctr"] == pytest.approx(want["actual"], rel=1e-9)
    assert result.stderr["predicted_ctr"] == pytest.approx(want["predicted"], rel=1e-9)
    assert result.stderr["copc"] == pytest.approx(want["copc"], rel=1e-9)
    # the intervals: logit DeLong with t of min(P_e, N_e) - 1; Wilson over the rate's rows
    ci = result.ci()
    t = stats.t_value(0.95, min(want["ess"]) - 1)
    logit, half = math.log(want["auc"] / (1 - want["auc"])), (
        t * math.sqrt(want["variance"]) / (want["auc"] * (1 - want["auc"])))
    assert ci["auc"] == pytest.approx((1 / (1 + math.exp(half - logit)),
                                       1 / (1 + math.exp(-half - logit))), rel=1e-8)
    z, n, r = stats.z_value(0.95), want["rate_rows"], want["r"]
    centre = (r + z * z / (2 * n)) / (1 + z * z / n)
    spread = z * math.sqrt(r * (1 - r) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert ci["actual_ctr"] == pytest.approx((centre - spread, centre + spread), rel=1e-9)
    # copc: Wilson's over the rows of its own spread (its stderr, squared weights)
    copc_rows = r * (1 - r) / (want["copc"] * result.predicted_ctr) ** 2
    assert ci["copc"] == pytest.approx(tuple(
        x / result.predicted_ctr for x in oracle_stats.wilson(r * copc_rows, copc_rows, z)),
        rel=1e-8)


def test_importance_intervals_are_wider_than_frequency_ones_after_downsampling(rng):
    pred, label, weight = _downsampled(rng)
    frequency = _compute(_metric(pred, label, weight)).ci()
    importance = _compute(_metric(pred, label, weight, weights="importance")).ci()
    for name in ("auc", "actual_ctr", "predicted_ctr", "copc"):
        assert importance[name][1] - importance[name][0] > frequency[name][1] - frequency[name][0]


@pytest.mark.parametrize("given", ["none", "ones"])
def test_with_every_weight_one_importance_equals_frequency_to_the_bit(rng, given):
    n = 5000
    label = (rng.random(n) < 0.2).astype(np.int8)
    pred = 1 / (1 + np.exp(-(rng.standard_normal(n) + label - 1.5)))
    b = np.clip(pred + rng.normal(0, 0.05, n), 0, 1)
    weight = None if given == "none" else np.ones(n)
    results = []
    for weights in ("frequency", "importance"):
        metric = AucMetric(table_size=1000, compare="b", weights=weights, comm=Comm.local())
        metric.update(pred, label, weight, compare=b)
        results.append(_compute(metric))
    frequency, importance = results
    # but the predicted CTR's interval: Hall's skew correction under frequency weights only
    for a, b in ((importance, frequency), (importance.compare.result,
                                           frequency.compare.result)):
        a_stderr, b_stderr = dict(a.stderr), dict(b.stderr)
        assert a_stderr.pop("predicted_ctr_skewness") == 0.0
        assert b_stderr.pop("predicted_ctr_skewness") != 0.0
        assert a_stderr == b_stderr
    assert importance.compare.auc_diff_stderr == frequency.compare.auc_diff_stderr
    assert importance.compare.diffs == frequency.compare.diffs
    one, other = frequency.to_dict(), importance.to_dict()
    assert (one.pop("weights"), other.pop("weights")) == ("frequency", "importance")
    # ne_recalibrated's intervals are null under importance weights (docs/kinds/auc.md)
    assert other["ci95"]["ne_recalibrated"] is None
    for block in (one, other, one["compare"], other["compare"]):
        block["ci95"].pop("predicted_ctr")
        block["ci95"].pop("ne_recalibrated")
    for compare in (one["compare"], other["compare"]):
        compare.pop("ne_recalibrated_diff_ci95"), compare.pop("ne_recalibrated_diff_p")
    assert one == other


def test_one_class_uses_the_other_class_effective_size(rng):
    """No click among non-clicks kept at 0.1 (weight 10): Wilson over the rows kept."""
    metric = _metric(np.full(500, 0.01), np.zeros(500), np.full(500, 10.0),
                     weights="importance")
    low, high = _compute(metric).ci()["actual_ctr"]
    z2 = stats.z_value(0.95) ** 2
    assert low == pytest.approx(0, abs=1e-15)
    assert high == pytest.approx(z2 / (500 + z2), rel=1e-12)


def test_importance_needs_an_effective_size_of_ten_per_class(rng):
    """Twenty non-clicks, one of weight 1000 and the others 1: N_e is about 1, no auc
    interval, although the weight total is far above the minimum."""
    pred = rng.random(40)
    label = np.r_[np.ones(20), np.zeros(20)]
    weight = np.r_[np.ones(20), [1000.0], np.ones(19)]
    frequency = _compute(_metric(pred, label, weight)).ci()["auc"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        importance = _metric(pred, label, weight, weights="importance").compute()
    assert frequency is not None and importance.ci()["auc"] is None
    assert min(importance.class_sizes) < stats.MIN_CLASS
    assert any("effective size" in str(w.message) for w in caught)


def test_the_weight_squares_have_the_same_bits_on_any_split(rng):
    pred, label, weight = _downsampled(rng, soft=True)
    whole = _metric(pred, label, weight, weights="importance", soft_labels=True)
    parts = [AucMetric(table_size=1000, weights="importance", soft_labels=True, comm=Comm.local())
             for _ in range(3)]
    cuts = [0, 17, len(pred) // 2, len(pred)]
    for part, lo, hi in zip(parts, cuts[:-1], cuts[1:], strict=True):
        order = rng.permutation(np.arange(lo, hi))
        part.update(pred[order], label[order], weight[order])
    merged = parts[0].merge(parts[1]).merge(parts[2])
    got, want = merged.state.summed("weight_squares"), whole.state.summed("weight_squares")
    assert [exact.to_int(row) for row in got] == [exact.to_int(row) for row in want]
    assert _compute(merged).stderr == pytest.approx(_compute(whole).stderr, rel=1e-12)


def test_frequency_and_importance_states_do_not_merge(rng):
    pred, label, weight = _downsampled(rng)
    frequency = _metric(pred, label, weight)
    importance = _metric(pred, label, weight, weights="importance")
    with pytest.raises(ValueError, match="weights='importance'"):
        frequency.merge(importance)
    with pytest.raises(ValueError, match="importance weights does not merge with one of "
                                         "frequency weights"):
        AucMetric(table_size=1000, comm=Comm.local()).load_state_dict(importance.state_dict())
    with pytest.raises(ValueError, match="frequency weights does not merge"):
        AucMetric(table_size=1000, weights="importance").load_state_dict(frequency.state_dict())


def test_a_state_saved_before_the_option_loads_as_frequency(rng, tmp_path):
    pred, label, weight = _downsampled(rng)
    metric = _metric(pred, label, weight)
    state = metric.state_dict()
    del state["options.weights"]  # as saved before the option existed
    path = tmp_path / "old.npz"
    checkpoint.save(path, {"ctr": state})
    loaded = AucMetric(table_size=1000, comm=Comm.local())
    loaded.load_state_dict(checkpoint.load(path)["ctr"])
    assert _compute(loaded).to_dict() == _compute(metric).to_dict()


def test_an_importance_checkpoint_round_trips(rng, tmp_path):
    pred, label, weight = _downsampled(rng)
    metric = AucMetric(table_size=1000, weights="importance", compare="b", comm=Comm.local())
    metric.update(pred, label, weight, compare=pred ** 1.1)
    checkpoint.save(tmp_path / "s.npz", {"ctr": metric.state_dict()})
    loaded = AucMetric(table_size=1000, weights="importance", compare="b", comm=Comm.local())
    loaded.load_state_dict(checkpoint.load(tmp_path / "s.npz")["ctr"])
    assert _compute(loaded).to_dict() == _compute(metric).to_dict()


def test_window_reads_the_weights_as_the_lifetime_does(rng):
    pred, label, weight = _downsampled(rng)
    metric = AucMetric(table_size=1000, weights="importance", window=len(pred), comm=Comm.local())
    metric.update(pred, label, weight)
    result = _compute(metric)
    assert result.window is not None and result.window.weights == "importance"
    assert result.window.stderr == result.stderr


def test_bad_weights_value_names_the_option():
    with pytest.raises(ValueError, match=r"weights.*must be one of frequency, importance"):
        AucMetric(weights="inverse")


def test_cli_flag_and_config_key(tmp_path, capsys):
    files = shards(tmp_path, rows(3000), ["a.tsv"])
    out = {}
    for mode in ("frequency", "importance"):
        path = tmp_path / f"{mode}.json"
        assert cli.main(["eval", "--weight", "w", "--weights", mode, "--json", str(path),
                         *files]) == 0
        out[mode] = json.loads(path.read_text())["auc"]
    assert out["frequency"]["weights"] == "frequency"
    assert out["importance"]["weights"] == "importance"
    assert out["frequency"]["auc"] == out["importance"]["auc"]
    assert out["frequency"]["ci95"] != out["importance"]["ci95"]
    config = tmp_path / "m.toml"
    config.write_text('[metrics.ctr]\nkind = "auc"\nweight = "w"\nweights = "importance"\n'
                      'table_size = 1000000\n')
    assert cli.main(["eval", "--config", str(config), "--json", str(tmp_path / "c.json"),
                     *files]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["ctr"] == out["importance"]
    capsys.readouterr()
    assert cli.main(["eval", "--weights", "inverse", *files]) == 2
    assert "--weights" in capsys.readouterr().err
    config.write_text('[metrics.ctr]\nkind = "auc"\nweights = "inverse"\n')
    assert cli.main(["eval", "--config", str(config), *files]) == 2
    assert "weights" in capsys.readouterr().err


def test_saved_runs_of_the_two_meanings_do_not_merge(tmp_path, capsys):
    files = shards(tmp_path, rows(500), ["a.tsv"])
    for name, mode in (("one", "frequency"), ("two", "importance")):
        assert cli.main(["eval", "--weight", "w", "--weights", mode, "--save-state",
                         str(tmp_path / name), *files]) == 0
    capsys.readouterr()
    assert cli.main(["merge", str(tmp_path / "one"), str(tmp_path / "two")]) == 2
    assert "does not merge" in capsys.readouterr().err


def test_every_pred_equal_gives_no_predicted_ctr_interval():
    """A spread of 0 is no evidence of none: no zero-width interval (the warning says)."""
    metric = AucMetric(comm=Comm.local())
    metric.update(np.full(1000, 0.02), (np.arange(1000) % 50 == 0).astype(np.int8))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ci = metric.compute().ci()
    assert ci["predicted_ctr"] is None and ci["actual_ctr"] is not None
    assert any("predicted_ctr ci95 is null" in str(w.message) for w in caught)


# -- by simulation (scripts/stats_coverage.py --downsampling-only has the 1,000-set table) --


@pytest.mark.slow
def test_downsampling_coverage_by_simulation():
    """200 sets a CTR (the script: 1,000): a share's standard error is then 1.5 points, so
    the bound is the issue's 93% widened by two of them; frequency weights under-cover
    (at a CTR of 0.2 about 73% for auc and actual_ctr, 50% for predicted_ctr)."""
    import simulation

    rng = np.random.default_rng(21)
    for ctr in (0.05, 0.2):
        rates = simulation.downsampling_coverage(rng, 200, ctr=ctr)
        for name in ("auc", "actual_ctr", "predicted_ctr"):
            assert rates[f"importance {name}"] >= 0.90, (ctr, name, rates)
        assert rates["frequency predicted_ctr"] <= 0.80, (ctr, rates)
    assert rates["frequency auc"] <= 0.85 and rates["frequency actual_ctr"] <= 0.85, rates


def test_weights_whose_squares_pass_float64_are_an_error_naming_the_weight():
    metric = AucMetric(table_size=100, weights="importance", comm=Comm.local())
    metric.update(np.array([0.1, 0.5, 0.7, 0.9]), np.array([0, 1, 0, 1]),
                  np.array([1e160, 1.0, 1.0, 1.0]))
    with pytest.raises(InputError, match="weight: too large for importance weights"):
        metric.compute()
