"""The ``run`` object of ``--json`` (``mpieval eval``, ``merge``, ``demo``): the version,
the command and inputs as given (secrets redacted), the start in UTC, the ranks, the rows
read over every rank and the weights; ``mpieval report`` reads files with and without it.
The installed command, alone and under ``mpiexec -n 2``."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import shutil
import uuid

import numpy as np
import pytest
from test_cli import rows, run, shards
from test_cli_mpi import ALONE, launch

from mpieval import report

UTC = datetime.timezone.utc


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> tuple[dict[str, np.ndarray], list[str]]:
    root = tmp_path_factory.mktemp("dump")
    data = rows(2500, seed=31)
    return data, shards(root, data, ["part-0.tsv", "part-1.csv", "part-2.parquet"])


def started(record: dict) -> datetime.datetime:
    return datetime.datetime.strptime(record["started"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC)


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
def test_eval_writes_the_run_beside_the_metrics(tmp_path, dump, ranks):
    data, files = dump
    out = tmp_path / "run.json"
    before = datetime.datetime.now(UTC).replace(microsecond=0)
    args = ["eval", "--metrics", "auc,wuauc", "--tag", "tag", "--json", str(out), *files]
    proc, _ = launch(ranks, *args)
    after = datetime.datetime.now(UTC)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    record = result["run"]
    assert sorted(result) == ["auc", "run", "wuauc"]
    assert record["mpieval_version"] == importlib.metadata.version("mpieval")
    assert record["command"] == ["mpieval", *args]
    assert record["inputs"] == files
    assert record["ranks"] == max(ranks, 1)
    assert record["rows"] == len(data["pred"]) == result["auc"]["rows"]
    assert record["weights"] is None
    assert before <= started(record) <= after
    assert str(uuid.UUID(record["id"])) == record["id"]
    again, _ = launch(ranks, *args)
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["run"]["id"] != record["id"]  # a run of its own


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_a_weighted_metric_states_its_column_meaning_and_sum(tmp_path, dump, ranks):
    data, files = dump
    out = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--weight", "w", "--json", out, *files)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())["run"]
    assert record["weights"] == {"auc": {"column": "w", "meaning": "frequency",
                                         "sum": int(data["w"].sum())}}
    assert record["rows"] == len(data["w"])


def test_merge_sums_the_rows_of_the_saved_runs(tmp_path, dump):
    data, files = dump
    saved = [tmp_path / "day-0", tmp_path / "day-1"]
    for directory, part in zip(saved, ([files[0]], files[1:]), strict=True):
        proc, _ = launch(2, "eval", "--weight", "w", "--save-state", directory, *part)
        assert proc.returncode == 0, proc.stderr
    out = tmp_path / "merged.json"
    proc, _ = launch(2, "merge", "--json", out, *saved)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())["run"]
    assert record["command"] == ["mpieval", "merge", "--json", str(out), *map(str, saved)]
    assert record["inputs"] == [str(path) for path in saved]
    assert record["ranks"] == 2 and record["rows"] == len(data["pred"])
    assert record["weights"]["auc"]["sum"] == int(data["w"].sum())
    # each saved run's own run object, its dumps and its start, under run.merged
    assert [entry["state"] for entry in record["merged"]] == [str(path) for path in saved]
    assert [entry["inputs"] for entry in record["merged"]] == [[files[0]], files[1:]]
    assert all(entry["command"][1] == "eval" and entry["ranks"] == 2
               for entry in record["merged"])
    assert len({entry["id"] for entry in record["merged"]} | {record["id"]}) == 3
    # a run saved by an earlier version has no row count (the sum is unknown) and no run
    description = json.loads((saved[1] / "run.json").read_text())
    del description["rows"], description["run"]
    (saved[1] / "run.json").write_text(json.dumps(description))
    proc, _ = launch(ALONE, "merge", "--json", out, *saved)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())["run"]
    assert record["rows"] is None
    assert record["merged"][1] == {"state": str(saved[1])}


def test_merge_refuses_a_copy_of_a_saved_run(tmp_path, dump):
    """The same run under another directory (cp -r) would count its rows twice: merge
    refuses it by its run.id, as it refuses one directory given twice."""
    _, files = dump
    saved, copy, other = tmp_path / "s1", tmp_path / "s1copy", tmp_path / "s2"
    for directory in (saved, other):
        assert launch(ALONE, "eval", "--save-state", directory, *files)[0].returncode == 0
    shutil.copytree(saved, copy)
    proc, _ = launch(ALONE, "merge", saved, other, copy)
    assert proc.returncode == 2 and proc.stdout == ""
    run_id = json.loads((saved / "run.json").read_text())["run"]["id"]
    assert proc.stderr.strip() == (f"mpieval: error: {copy}: holds the same run as {saved} "
                                   f"(run.id {run_id}): its rows would count twice")
    assert launch(ALONE, "merge", saved, other)[0].returncode == 0


def test_demo_names_its_shards_and_rows(tmp_path):
    out = tmp_path / "demo.json"
    proc, _ = launch(ALONE, "demo", "--rows", "3000", "--dir", tmp_path / "files",
                     "--json", out)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())["run"]
    assert record["rows"] == 3000 and record["ranks"] == 1
    assert len(record["inputs"]) == 4
    assert all(path.startswith(str(tmp_path / "files")) for path in record["inputs"])


def test_report_reads_files_with_and_without_the_run(tmp_path, dump, capsys):
    _, files = dump
    out = tmp_path / "run.json"
    status, _, err = run(capsys, "eval", "--json", out, *files)
    assert status == 0, err
    assert "run" in json.loads(out.read_text())
    older = tmp_path / "older.json"
    older.write_text(json.dumps({k: v for k, v in json.loads(out.read_text()).items()
                                 if k != "run"}))
    for path in (out, older):
        assert list(report.load_run(str(path)).metrics) == ["auc"]
    status, _, err = run(capsys, "report", "-o", tmp_path / "page.html", out, older)
    assert status == 0, err
    assert (tmp_path / "page.html").stat().st_size > 0


def test_a_config_metric_cannot_be_named_run(tmp_path, dump, capsys):
    config = tmp_path / "metrics.toml"
    config.write_text('[metrics.run]\nkind = "auc"\n')
    status, _, err = run(capsys, "eval", "--config", config, dump[1][0])
    assert status == 2
    assert f"{config}: metric 'run': 'run' is the JSON's key of the run's provenance" in err
