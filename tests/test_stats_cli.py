"""``--compare COL`` and ``compare = "COL"`` on the command line: the same paired values
as the API, alone and under ``mpiexec -n 1/2/3`` (launches run under ``timeout``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_cli import (
    api,
    assert_same,
    assert_same_lines,
    metrics_json,
    rows,
    run,
    shards,
    write,
)
from test_cli_mpi import launch

PAIRED_INPUTS = {"auc": {"pred": "pred", "label": "label", "compare": "pred_b"}}


def paired_rows(n: int = 3000) -> dict[str, np.ndarray]:
    data = rows(n)
    rng = np.random.default_rng(9)
    data["pred_b"] = np.clip(data["pred"] + np.round(rng.normal(0, 0.05, n), 3), 0, 1)
    return data


def want(data, **options) -> tuple[dict, list[str]]:
    return api({"auc": ("auc", {"compare": "pred_b", **options})}, data, PAIRED_INPUTS)


def test_compare_flag_equals_the_api(tmp_path, capsys):
    data = paired_rows()
    path = write(str(tmp_path / "ab.tsv"), data)
    out = tmp_path / "out.json"
    status, stdout, err = run(capsys, "eval", "--compare", "pred_b", "--table-size", "1000",
                              "--json", str(out), path)
    assert status == 0, err
    got = metrics_json(out)
    expected, lines = want(data, table_size=1000)
    assert_same(got, expected)
    assert_same_lines(stdout.splitlines(), lines)
    assert stdout.splitlines()[1].startswith("auc: compare=pred_b auc=")
    compare = got["auc"]["compare"]
    assert set(compare) >= {"pred", "auc", "copc", "auc_diff", "auc_diff_ci95", "auc_diff_p",
                            "roc_curve", "calibration_curve"}
    assert compare["roc_curve"] != got["auc"]["roc_curve"]  # B's own curves, for the report
    assert compare["calibration_curve"][-1][1] != got["auc"]["calibration_curve"][-1][1]


def test_compare_in_a_config(tmp_path, capsys):
    data = paired_rows()
    path = write(str(tmp_path / "ab.csv"), data)
    config = tmp_path / "m.toml"
    config.write_text('[metrics.ctr]\nkind = "auc"\ncompare = "pred_b"\n')
    out = tmp_path / "out.json"
    status, stdout, err = run(capsys, "eval", "--config", str(config), "--json", str(out), path)
    assert status == 0, err
    got = metrics_json(out)["ctr"]
    assert_same(got, want(data)[0]["auc"])
    assert stdout.splitlines()[1].startswith("ctr: compare=pred_b ")


def test_compare_of_a_kind_without_it_is_a_usage_error(tmp_path, capsys):
    path = write(str(tmp_path / "ab.tsv"), paired_rows(50))
    status, _, err = run(capsys, "eval", "--metrics", "pn", "--compare", "pred_b", path)
    assert status == 2 and "--compare" in err


def test_a_bad_compare_value_names_the_column(tmp_path, capsys):
    data = paired_rows(50)
    data["pred_b"][7] = 1.5
    path = write(str(tmp_path / "ab.tsv"), data)
    status, _, err = run(capsys, "eval", "--compare", "pred_b", path)
    assert status == 2 and "pred_b" in err


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_compare_on_any_ranks(tmp_path, ranks):
    data = paired_rows()
    paths = shards(tmp_path, data, ["a.tsv", "b.csv.gz", "c.parquet"])
    out = tmp_path / "out.json"
    proc, _ = launch(ranks, "eval", "--compare", "pred_b", "--table-size", "1000", "--json",
                     out, *paths)
    assert proc.returncode == 0, proc.stderr
    expected, lines = want(data, table_size=1000)
    assert_same(metrics_json(out), expected)
    assert_same_lines(proc.stdout.splitlines(), lines)


@pytest.mark.parametrize("ranks", [0, 3])
def test_compare_of_wuauc_per_tag_on_any_ranks(tmp_path, ranks):
    """``--metrics auc,wuauc --compare COL``: both kinds compare, wuauc per tag, with the
    API's values (alone, and on three ranks with a user's rows in several files)."""
    data = paired_rows()
    paths = shards(tmp_path, data, ["a.tsv", "b.csv.gz", "c.parquet"])
    out = tmp_path / "out.json"
    proc, _ = launch(ranks, "eval", "--metrics", "auc,wuauc", "--tag", "tag", "--compare",
                     "pred_b", "--table-size", "1000", "--json", out, *paths)
    assert proc.returncode == 0, proc.stderr
    inputs = dict(PAIRED_INPUTS, wuauc={"uid": "uid", "pred": "pred", "label": "label",
                                        "tag": "tag", "compare": "pred_b"})
    expected, lines = api({"auc": ("auc", {"compare": "pred_b", "table_size": 1000}),
                           "wuauc": ("wuauc", {"compare": "pred_b"})}, data, inputs)
    got = metrics_json(out)
    assert_same(got, expected)
    assert_same_lines(proc.stdout.splitlines(), lines)
    assert set(got["wuauc"]["tags"]["feed"]["compare"]) >= {"uauc_diff", "wuauc_diff_p"}
    assert sum(line.startswith("wuauc: compare=pred_b Tag=")
               for line in proc.stdout.splitlines()) == 4
