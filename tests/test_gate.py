"""The release gate's rules (mpieval/gate.py) against results given as JSON objects: every
rule form passing and failing, Benjamini-Hochberg across a ``*``, and bad rules."""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import pytest

from mpieval import gate
from mpieval.errors import InputError


def rules(text: str, tmp_path) -> list[gate.Rule]:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return gate.load_rules(str(path))


def verdict(text: str, results, tmp_path) -> gate.Verdict:
    return gate.check(rules(text, tmp_path), results, "rules.toml")


def diff_block(diff: float, low: float, high: float, name: str = "auc") -> dict:
    return {f"{name}_diff": diff, f"{name}_diff_ci95": [low, high], f"{name}_diff_p": 0.5}


RUN = {
    "ctr": {"kind": "auc", "auc": 0.71, "copc": 1.02, "ne": 0.9, "bucket_error": None,
            "lift": [{"fraction": 0.01, "lift": 3.0}, {"fraction": 0.02, "lift": 2.5}],
            "compare": {"pred": "b", "copc": 0.97, **diff_block(-0.0005, -0.0012, 0.0002),
                        **diff_block(0.004, 0.001, 0.007, "ne")}},
    "user_ctr": {"kind": "wuauc", "tags": {
        "all": {"wuauc": 0.63, "compare": diff_block(-0.003, -0.004, -0.002, "wuauc")},
        "feed": {"wuauc": 0.61, "compare": diff_block(-0.0004, -0.0014, 0.0006, "wuauc")},
        "1.5": {"wuauc": 0.58, "compare": diff_block(0.001, -0.001, 0.003, "wuauc")},
        "tiny": {"wuauc": None}}},
    "run": {"rows": 1000},
}


@pytest.mark.parametrize(("rule", "passed"), [
    ('value = "ctr.auc"\nmin = 0.7', True),
    ('value = "ctr.auc"\nmin = 0.72', False),
    ('value = "ctr.copc"\nmin = 0.95\nmax = 1.05', True),
    ('value = "ctr.copc"\nmin = 0.95\nmax = 1.01', False),
    ('value = "ctr.ne"\nmax = 0.9', True),  # bounds are inclusive
    ('value = "ctr.ne"\nmax = 0.89', False),
    ('value = "ctr.lift.0.lift"\nmin = 3', True),
    ('value = "ctr.lift.*.lift"\nmin = 2.8', False),
    ('value = "run.rows"\nmin = 1000', True),
    ('value = "user_ctr.tags.1.5.wuauc"\nmin = 0.58', True),  # a key with a dot
])
def test_min_max(tmp_path, rule, passed):
    assert verdict(f"[[rule]]\n{rule}\n", RUN, tmp_path).passed is passed


def test_a_star_checks_every_tag_and_undefined_fails_unless_skipped(tmp_path):
    got = verdict('[[rule]]\nvalue = "user_ctr.tags.*.wuauc"\nmin = 0.5\n', RUN, tmp_path)
    assert [c.path for c in got.checks] == [f"user_ctr.tags.{t}.wuauc"
                                            for t in ("all", "feed", "1.5", "tiny")]
    assert [c.passed for c in got.checks] == [True, True, True, False]
    assert got.checks[-1].reason == "undefined" and not got.passed
    skipped = verdict('[[rule]]\nvalue = "user_ctr.tags.*.wuauc"\nmin = 0.5\n'
                      'undefined = "skip"\n', RUN, tmp_path)
    assert skipped.passed and skipped.checks[-1].passed is None
    assert skipped.lines()[-1].startswith("gate: PASS (0 of 4 checks failed, 1 skipped")


def test_a_star_at_the_top_is_every_metric(tmp_path):
    got = verdict('[[rule]]\nvalue = "*.kind"\nmin = 0\nundefined = "skip"\n',
                  {"a": {"kind": None}, "b": {"kind": None}, "run": {}, "gate": {}}, tmp_path)
    assert [c.path for c in got.checks] == ["a.kind", "b.kind"]


@pytest.mark.parametrize(("rule", "passed"), [
    # higher is better: fails when the interval lies wholly below -max_drop
    ('value = "ctr.compare.auc_diff"\nmax_drop = 0.001', True),    # [-0.0012, 0.0002]
    ('value = "ctr.compare.auc_diff"\nmax_drop = 0.0', True),      # reaches 0: not shown
    ('value = "user_ctr.tags.all.compare.wuauc_diff"\nmax_drop = 0.001', False),  # high -0.002
    ('value = "user_ctr.tags.all.compare.wuauc_diff"\nmax_drop = 0.0025', True),
    # lower is better (ne): fails when the interval lies wholly above max_drop
    ('value = "ctr.compare.ne_diff"\nmax_drop = 0.0005', False),   # low 0.001
    ('value = "ctr.compare.ne_diff"\nmax_drop = 0.001', True),
    # a direction overrides the known one
    ('value = "ctr.compare.ne_diff"\nmax_drop = 0.0005\ndirection = "higher"', True),
    ('value = "ctr.compare.auc_diff"\nmax_drop = 0.0001\ndirection = "lower"', True),
])
def test_max_drop(tmp_path, rule, passed):
    got = verdict(f"[[rule]]\n{rule}\n", RUN, tmp_path)
    assert got.passed is passed
    check = got.checks[0]
    assert check.interval is not None and check.q == check.p


def test_max_drop_of_one_check_is_the_intervals_test(tmp_path):
    """One check: p < 0.025 exactly when the interval's high end is below -d."""
    for high in (-0.0011, -0.00101, -0.00099, -0.0009):
        results = {"m": {"kind": "auc", "compare": diff_block(-0.002, -0.003, high)}}
        got = verdict('[[rule]]\nvalue = "m.compare.auc_diff"\nmax_drop = 0.001\n',
                      results, tmp_path)
        assert got.passed is (not high < -0.001), high
        se = (high + 0.002) / NormalDist().inv_cdf(0.975)  # the interval's upper side
        excess = -0.001 - (-0.002)  # how far the difference is beyond the bound
        assert got.checks[0].p == pytest.approx(NormalDist().cdf(-excess / se), rel=1e-9)


def test_max_drop_is_adjusted_by_bh_across_a_star(tmp_path):
    """Two countries each just beyond the bound alone: with 20 others that do not regress,
    BH keeps the clear one and lets the marginal one pass."""
    z = NormalDist().inv_cdf(0.975)
    tags = {}
    for name, diff, se in [("clear", -0.01, 0.001), ("marginal", -0.0031, 0.001)] + [
            (f"c{i}", 0.0, 0.001) for i in range(20)]:
        tags[name] = {"compare": diff_block(diff, diff - z * se, diff + z * se, "wuauc")}
    results = {"u": {"kind": "wuauc", "tags": tags}}
    got = verdict('[[rule]]\nvalue = "u.tags.*.compare.wuauc_diff"\nmax_drop = 0.001\n',
                  results, tmp_path)
    by = {c.path.split(".")[2]: c for c in got.checks}
    # alone, the marginal one fails: its high end -0.0031 + 1.96e-3 < -0.001
    assert tags["marginal"]["compare"]["wuauc_diff_ci95"][1] < -0.001
    assert by["clear"].passed is False and by["marginal"].passed is True
    # the q-values are BH's of the one-sided p-values (written here from the definition)
    p = {name: NormalDist().cdf(-(-0.001 - c.value) / ((c.interval[1] - c.value) / z))
         for name, c in by.items()}
    order = sorted(p, key=p.get)
    m = len(order)
    q, running = {}, 1.0
    for rank in range(m, 0, -1):
        running = min(running, m * p[order[rank - 1]] / rank)
        q[order[rank - 1]] = running
    for name, check in by.items():
        assert check.p == pytest.approx(p[name], rel=1e-9, abs=1e-300)
        assert check.q == pytest.approx(q[name], rel=1e-9, abs=1e-300)
    assert "q=" in by["clear"].line()


def test_max_drop_without_interval(tmp_path):
    results = {"m": {"kind": "auc", "compare": {"auc_diff": 0.1, "auc_diff_ci95": None}}}
    text = '[[rule]]\nvalue = "m.compare.auc_diff"\nmax_drop = 0.001\n'
    got = verdict(text, results, tmp_path)
    assert not got.passed and got.checks[0].reason == "no interval"
    assert verdict(text + 'undefined = "skip"\n', results, tmp_path).passed


def test_lines_and_json(tmp_path):
    got = verdict('[[rule]]\nvalue = "ctr.copc"\nmin = 0.95\nmax = 1.01\n'
                  '[[rule]]\nvalue = "ctr.compare.auc_diff"\nmax_drop = 0.001\n', RUN, tmp_path)
    assert got.lines() == [
        "gate: FAIL rule 1: ctr.copc=1.02 min=0.95 max=1.01",
        "gate: PASS rule 2: ctr.compare.auc_diff=-0.0005 max_drop=0.001 "
        "ci95=[-0.0012,0.0002] direction=higher",
        "gate: FAIL (1 of 2 checks failed; rules rules.toml)"]
    block = got.to_dict()
    assert block["passed"] is False and block["rules_file"] == "rules.toml"
    assert block["rules"] == [{"value": "ctr.copc", "min": 0.95, "max": 1.01},
                              {"value": "ctr.compare.auc_diff", "max_drop": 0.001}]
    assert block["checks"][0] == {"rule": 1, "path": "ctr.copc", "value": 1.02,
                                  "passed": False, "reason": None}
    assert block["checks"][1]["ci95"] == [-0.0012, 0.0002]
    assert block["checks"][1]["direction"] == "higher"


@pytest.mark.parametrize(("text", "message"), [
    ("[[rule]\nvalue = 1", "rules.toml: not valid TOML"),
    ("", "rules.toml: rule: no rules"),
    ("[metrics.x]\nkind = 'auc'", "rules.toml: key 'metrics': unknown top-level key"),
    ('[[rule]]\nvalue = "ctr.auc"\nmni = 0.7', "rules.toml: rule 1: key 'mni': unknown"),
    ('[[rule]]\nvalue = "ctr.auc"', "rules.toml: rule 1: has no bound"),
    ('[[rule]]\nvalue = "ctr..auc"\nmin = 0', "rules.toml: rule 1: key 'value': must be a dotted"),
    ('[[rule]]\nmin = 0', "rules.toml: rule 1: key 'value'"),
    ('[[rule]]\nvalue = "ctr.auc"\nmin = "0.7"', "rules.toml: rule 1: key 'min': must be a finite"),
    ('[[rule]]\nvalue = "ctr.auc"\nmin = nan', "rules.toml: rule 1: key 'min': must be a finite"),
    ('[[rule]]\nvalue = "ctr.auc"\nmin = 0.8\nmax = 0.7', "rules.toml: rule 1: key 'min'"),
    ('[[rule]]\nvalue = "a.auc"\nmin=0\n[[rule]]\nvalue = "ctr.compare.auc_diff"\n'
     'max_drop = -1', "rules.toml: rule 2: key 'max_drop': must be >= 0"),
    ('[[rule]]\nvalue = "ctr.compare.auc_diff"\nmax_drop = 0.1\nmin = 0',
     "rules.toml: rule 1: max_drop is alone"),
    ('[[rule]]\nvalue = "ctr.auc"\nmax_drop = 0.1', "rules.toml: rule 1: key 'value': max_drop"),
    ('[[rule]]\nvalue = "ctr.compare.copc_diff"\nmax_drop = 0.1',
     "rules.toml: rule 1: max_drop on 'copc_diff': which way"),
    ('[[rule]]\nvalue = "ctr.auc"\nmin = 0\ndirection = "up"',
     "rules.toml: rule 1: key 'direction': must be one of"),
    ('[[rule]]\nvalue = "ctr.auc"\nmin = 0\nundefined = "pass"',
     "rules.toml: rule 1: key 'undefined': must be one of"),
    ("rule = 3", "rules.toml: rule: no rules"),
    ("rule = [1]", "rules.toml: rule 1: must be a table"),
])
def test_bad_rules_files(tmp_path, text, message):
    with pytest.raises(InputError) as raised:
        rules(text, tmp_path)
    assert str(raised.value).startswith(str(tmp_path / message)), str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(("value", "message"), [
    ("ctr.acu", "rules.toml: rule 1: value 'ctr.acu' matches nothing in the run (no key 'acu' "
                "in ctr; it has: kind, auc, copc,"),
    ("nope.auc", "rules.toml: rule 1: value 'nope.auc' matches nothing in the run (no key "
                 "'nope' in the top level"),
    ("ctr.lift.7.lift", "rules.toml: rule 1: value 'ctr.lift.7.lift' matches nothing in the "
                        "run (ctr.lift has 2 items)"),
    ("ctr.auc.x", "rules.toml: rule 1: value 'ctr.auc.x' matches nothing in the run (ctr.auc "
                  "is not an object)"),
    ("ctr.compare", "rules.toml: rule 1: ctr.compare is not a number but an object"),
    ("ctr.lift", "rules.toml: rule 1: ctr.lift is not a number but list"),
])
def test_paths_that_match_nothing_or_no_number(tmp_path, value, message):
    with pytest.raises(InputError) as raised:
        verdict(f'[[rule]]\nvalue = "{value}"\nmin = 0\n', RUN, tmp_path)
    assert str(raised.value).startswith(message), str(raised.value)


def test_max_drop_needs_the_interval_beside_it(tmp_path):
    results = {"m": {"kind": "auc", "compare": {"auc_diff": 0.1}}}
    with pytest.raises(InputError, match=r"m\.compare\.auc_diff has no auc_diff_ci95 beside it"):
        verdict('[[rule]]\nvalue = "m.compare.auc_diff"\nmax_drop = 0\n', results, tmp_path)


def test_metric_names_are_checked_before_a_run(tmp_path):
    parsed = rules('[[rule]]\nvalue = "ctr.v2.auc"\nmin = 0\n[[rule]]\nvalue = "*.auc"\n'
                   'min = 0\n[[rule]]\nvalue = "run.rows"\nmin = 0\n', tmp_path)
    gate.check_metric_names(parsed, ["ctr.v2"], "r.toml")
    with pytest.raises(InputError, match=r"^r.toml: rule 1: value 'ctr.v2.auc': no metric "
                                         r"'ctr' in this run \(its metrics: ctr.v3, x\)"):
        gate.check_metric_names(parsed, ["ctr.v3", "x"], "r.toml")


def test_the_example_rules_file_reads():
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "scripts" / "example-gate.toml"
    parsed = gate.load_rules(str(example))
    assert [(r.value, r.min, r.max, r.max_drop) for r in parsed] == [
        ("ctr.compare.auc_diff", None, None, 0.001),
        ("ctr.slices.*.compare.auc_diff", None, None, 0.001),
        ("ctr.compare.copc", 0.95, 1.05, None), ("ctr.slices.*.compare.copc", 0.95, 1.05, None)]
    assert not math.isnan(gate.Z95)


def test_the_report_shows_the_verdict(tmp_path):
    pytest.importorskip("matplotlib")
    from mpieval import report

    results = {"m": {"kind": "pairwise", "ins": 3}, "gate": {
        "rules_file": "release.toml", "passed": False, "rules": [{"value": "m.ins", "min": 4}],
        "checks": [{"rule": 1, "path": "m.ins", "value": 3, "passed": False, "reason": None}]}}
    page = tmp_path / "page.html"
    report.write_run_report(results, str(page))
    text = page.read_text()
    assert "gate: <b>FAIL, 1 of 1 checks</b>" in text and "release.toml" in text
    results["gate"]["passed"], results["gate"]["checks"][0]["passed"] = True, True
    report.write_run_report(results, str(page))
    assert "gate: <b>PASS</b>" in page.read_text()


def test_max_drop_refuses_an_interval_that_is_not_one(tmp_path):
    results = {"m": {"kind": "auc", "compare": {"auc_diff": 0.1, "auc_diff_ci95": "wide"}}}
    with pytest.raises(InputError, match=r"m\.compare\.auc_diff's auc_diff_ci95 is not an "
                                         r"interval \[low, high\] but 'wide'"):
        verdict('[[rule]]\nvalue = "m.compare.auc_diff"\nmax_drop = 0\n', results, tmp_path)


def test_gate_is_for_the_mpi_engine(tmp_path, capsys):
    from mpieval import cli

    status = cli.main(["eval", "--engine", "spark", "--gate", "r.toml", "x.tsv"])
    assert status == 2
    assert "mpieval: error: --gate: is for --engine mpi" in capsys.readouterr().err


def test_a_many_tag_result_gated_as_it_is_written(tmp_path, monkeypatch):
    """The command line gates a run whose tags are made a chunk at a time
    (``tags.dicts_as_written``, chunks of 7 blocks here): the same checks, lines and
    block as the dicts made whole, a walk over every tag making each chunk once, and a
    path that misses named as ever."""
    import numpy as np

    from mpieval import Evaluator, UndefinedMetricWarning, WuaucMetric
    from mpieval.tags import ColumnBlocks, TagDicts, dicts_as_written

    monkeypatch.setattr(ColumnBlocks, "CHUNK", 7)
    rng = np.random.default_rng(4)
    n = 6000
    pred = rng.beta(2, 8, n)
    metric = WuaucMetric(compare="pred_b")
    metric.update(rng.integers(0, 400, n), pred, (rng.random(n) < pred).astype(int),
                  tag=rng.integers(0, 40, n), compare=np.clip(pred + rng.normal(0, .05, n),
                                                              1e-6, 1 - 1e-6))
    with warnings.catch_warnings():  # (tags of too few users: beside the point)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = {"user_ctr": metric.compute()}
    whole = Evaluator.to_dict(results)
    with dicts_as_written():
        written = Evaluator.to_dict(results)
    tags = written["user_ctr"]["tags"]
    assert isinstance(tags, TagDicts) and "7" in tags and "no such tag" not in tags
    made = []
    real = ColumnBlocks.chunk_dicts
    monkeypatch.setattr(ColumnBlocks, "chunk_dicts",
                        lambda self, chunk: (made.append(chunk), real(self, chunk))[1])
    text = ('[[rule]]\nvalue = "user_ctr.tags.*.wuauc"\nmin = 0.55\nundefined = "skip"\n'
            '[[rule]]\nvalue = "user_ctr.tags.*.compare.wuauc_diff"\nmax_drop = 0.01\n'
            'undefined = "skip"\n[[rule]]\nvalue = "user_ctr.tags.12.uauc"\nmin = 0.5\n')
    got, want = verdict(text, written, tmp_path), verdict(text, whole, tmp_path)
    assert got.lines() == want.lines() and got.to_dict() == want.to_dict()
    chunks = -(-41 // 7)  # all and 40 tags, 7 a chunk
    assert len(got.checks) == 1 + 2 * 41 and set(made) == set(range(chunks))
    assert len(made) <= 2 * chunks + 1  # each chunk once a walk over every tag (2 walks)
    missing = '[[rule]]\nvalue = "user_ctr.tags.nope.wuauc"\nmin = 0\n'
    for results_given in (written, whole):
        with pytest.raises(InputError, match=r"no key 'nope' in user_ctr\.tags; it has: all"):
            verdict(missing, results_given, tmp_path)
