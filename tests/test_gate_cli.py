"""``mpieval gate RUN.json RULES.toml`` and ``mpieval eval --gate RULES.toml`` as a user
runs them, alone and under ``mpiexec -n 1/2``: the example rules of a CTR release
(scripts/example-gate.toml) on a regressing and an improving candidate, the exit statuses
0/3/2 on every rank, the JSON's gate block against the schema."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import jsonschema
import numpy as np
import pytest
from test_cli import shards
from test_cli_mpi import ALONE, launch

from mpieval.schema import results_schema

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "scripts" / "example-gate-metrics.toml"
RULES = ROOT / "scripts" / "example-gate.toml"
COUNTRIES = np.array(["US", "DE", "JP", "BR"])


def candidate_rows(regress: bool, n: int = 24_000, seed: int = 5) -> dict[str, np.ndarray]:
    """Rows of four countries; model B worse than A in BR (``regress``) or a little better
    everywhere; B calibrated like A."""
    rng = np.random.default_rng(seed)
    country = COUNTRIES[rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])]
    z = rng.normal(size=n)
    label = (rng.random(n) < 1 / (1 + np.exp(-(z - 1.4)))).astype(np.int8)
    logit_a = z - 1.4 + rng.normal(scale=0.8, size=n)
    logit_b = logit_a + rng.normal(scale=0.05, size=n)
    if regress:
        logit_b += np.where(country == "BR", rng.normal(scale=1.5, size=n), 0.0)
    else:
        logit_b = 0.5 * logit_b + 0.5 * (z - 1.4 + rng.normal(scale=0.5, size=n))
    low, high = -10.0, 10.0  # B's intercept: COPC 1 over all rows
    for _ in range(60):
        c = (low + high) / 2
        low, high = (c, high) if np.mean(1 / (1 + np.exp(-(logit_b + c)))) < label.mean() \
            else (low, c)
    pred = np.round(1 / (1 + np.exp(-logit_a)), 6)
    pred_b = np.round(1 / (1 + np.exp(-(logit_b + low))), 6)
    return {"country": country, "pred": pred, "pred_b": pred_b, "label": label}


@pytest.fixture(scope="module", params=[True, False], ids=["regress", "improve"])
def files(request, tmp_path_factory) -> tuple[bool, list[str]]:
    root = tmp_path_factory.mktemp("gate")
    data = candidate_rows(request.param)
    return request.param, shards(root, data, ["part-0.tsv", "part-1.parquet", "part-2.csv"])


def expected_verdict(results: dict) -> dict[str, bool]:
    """Each check's verdict from the run's values, by the docs' definition (docs/gate.md):
    COPC within [0.95, 1.05]; the AUC difference's one-sided p-values, BH's q over the
    checks of a rule (overall: one; the countries' slices: four), fail where q < 0.025."""
    z = NormalDist().inv_cdf(0.975)
    ctr = results["ctr"]
    blocks = {"ctr": ctr} | {f"ctr.slices.{key}": block
                             for key, block in ctr["slices"].items()}
    verdict, p = {}, {}
    for path, block in blocks.items():
        compare = block["compare"]
        diff, (_, high) = compare["auc_diff"], compare["auc_diff_ci95"]
        rule = "overall" if path == "ctr" else "countries"
        p.setdefault(rule, {})[f"{path}.compare.auc_diff"] = NormalDist().cdf(
            -(-0.001 - diff) / ((high - diff) / z))
        verdict[f"{path}.compare.copc"] = 0.95 <= compare["copc"] <= 1.05
    for checks in p.values():
        order = sorted(checks, key=checks.get)
        running = 1.0
        for rank in range(len(order), 0, -1):
            running = min(running, len(order) * checks[order[rank - 1]] / rank)
            verdict[order[rank - 1]] = not running < 0.025
    return verdict


@pytest.mark.parametrize("ranks", [ALONE, 1, 2])
def test_eval_gate_on_the_example(tmp_path, files, ranks):
    regress, paths = files
    out = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--config", CONFIG, *paths, "--gate", RULES, "--json", out,
                     per_rank_status=True)
    results = json.loads(out.read_text())
    jsonschema.validate(results, results_schema())
    want = expected_verdict(results)
    got = {check["path"]: check["passed"] for check in results["gate"]["checks"]}
    assert got == want and len(got) == 10
    assert results["gate"]["passed"] is all(want.values())
    assert all(want.values()) is not regress  # the data do what they are made for
    if regress:
        assert not want["ctr.slices.country=BR.compare.auc_diff"]
        assert want["ctr.slices.country=US.compare.auc_diff"]
    status = 0 if all(want.values()) else 3
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.count(f"exit={status}") == max(ranks, 1)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("gate: ")]
    assert len(lines) == 11 and lines[-1].startswith(
        f"gate: {'PASS' if status == 0 else 'FAIL'} ({sum(not v for v in want.values())} of 10")
    for line, check in zip(lines, results["gate"]["checks"], strict=False):
        assert line.startswith(f"gate: {'PASS' if check['passed'] else 'FAIL'} rule "
                               f"{check['rule']}: {check['path']}=")
    # the same check of the saved run, alone and on 2 ranks
    for gate_ranks in (ALONE, 2):
        again, _ = launch(gate_ranks, "gate", out, RULES, per_rank_status=True)
        assert again.returncode == status
        assert again.stderr.count(f"exit={status}") == max(gate_ranks, 1)
        assert [line for line in again.stdout.splitlines() if line.startswith("gate: ")] == lines


@pytest.mark.parametrize("ranks", [ALONE, 1, 2])
@pytest.mark.parametrize(("text", "message"), [
    ("[[rule]\n", "not valid TOML"),
    ('[[rule]]\nvalue = "ctr.auc"\nmni = 0.7\n', "rule 1: key 'mni': unknown"),
    ('[[rule]]\nvalue = "ctx.auc"\nmin = 0.7\n', "rule 1: value 'ctx.auc': no metric 'ctx'"),
])
def test_bad_rules_exit_2_on_every_rank_before_reading(tmp_path, files, ranks, text, message):
    _, paths = files
    rules = tmp_path / "rules.toml"
    rules.write_text(text)
    out = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--config", CONFIG, *paths, "--gate", rules, "--json", out,
                     per_rank_status=True)
    assert proc.returncode == 2
    assert proc.stderr.count("exit=2") == max(ranks, 1)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mpieval: error:")]
    assert errors == [errors[0]] and f"{rules}: {message}" in errors[0], proc.stderr
    assert not out.exists() and proc.stdout == ""


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_a_path_that_matches_nothing_exits_2_after_writing_the_run(tmp_path, files, ranks):
    _, paths = files
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nvalue = "ctr.compare.acu"\nmin = 0.6\n')
    out = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--config", CONFIG, *paths, "--gate", rules, "--json", out,
                     per_rank_status=True)
    assert proc.returncode == 2 and proc.stderr.count("exit=2") == max(ranks, 1)
    assert f"{rules}: rule 1: value 'ctr.compare.acu' matches nothing in the run " \
           "(no key 'acu' in ctr.compare" in proc.stderr
    assert "gate" not in json.loads(out.read_text())  # the run's values are kept
    assert proc.stdout.startswith("ctr: auc=")
    again, _ = launch(ranks, "gate", out, rules, per_rank_status=True)
    assert again.returncode == 2 and again.stderr.count("exit=2") == max(ranks, 1)


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_gate_of_a_file_that_is_not_a_run(tmp_path, ranks):
    bad = tmp_path / "run.json"
    bad.write_text("[1, 2]")
    proc, _ = launch(ranks, "gate", bad, RULES, per_rank_status=True)
    assert proc.returncode == 2 and proc.stderr.count("exit=2") == max(ranks, 1)
    assert f"mpieval: error: {bad}: is not an mpieval result" in proc.stderr
    proc, _ = launch(ranks, "gate", tmp_path / "missing.json", RULES)
    assert proc.returncode == 2 and "cannot read it" in proc.stderr


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_a_gate_over_every_tag_of_a_run_written_as_made(tmp_path, ranks):
    """``eval --gate`` of a per-user run whose tags' JSON objects are made as they are
    read (``tags.dicts_as_written``): the gate's lines and block are those of ``mpieval
    gate`` over the saved JSON (its tags plain dicts)."""
    rng = np.random.default_rng(9)
    n = 20_000
    pred = rng.beta(2, 8, n)
    data = {"uid": rng.integers(0, 2_000, n), "tag": rng.integers(0, 60, n), "pred": pred,
            "pred_b": np.clip(pred + rng.normal(0, 0.03, n), 1e-4, 1 - 1e-4),
            "label": (rng.random(n) < pred).astype(np.int8)}
    paths = shards(tmp_path, data, ["part-0.tsv", "part-1.parquet"])
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nvalue = "user_ctr.tags.*.wuauc"\nmin = 0.6\n'
                     'undefined = "skip"\n[[rule]]\nvalue = "user_ctr.tags.*.compare.'
                     'wuauc_diff"\nmax_drop = 0.01\nundefined = "skip"\n')
    config = tmp_path / "metrics.toml"
    config.write_text('[metrics.user_ctr]\nkind = "wuauc"\nuid = "uid"\ntag = "tag"\n'
                      'compare = "pred_b"\n')
    out = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--config", config, *paths, "--gate", rules, "--json",
                     out, per_rank_status=True)
    assert proc.returncode in (0, 3), proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("gate: ")]
    saved = json.loads(out.read_text())
    assert len(saved["gate"]["checks"]) == 2 * 61 and len(lines) == 2 * 61 + 1
    again, _ = launch(ALONE, "gate", out, rules, per_rank_status=True)
    assert again.returncode == proc.returncode
    assert [line for line in again.stdout.splitlines() if line.startswith("gate: ")] == lines
