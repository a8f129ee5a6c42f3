"""``mpieval eval`` in-process, one rank: the numbers equal the API's and the oracles',
in every file format; configs (multi-task, masks, filters); JSON; every usage error."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import oracle_auc
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from kinds import NAMES, fixture
from oracle_pairs import pn_totals

from mpieval import cli, pipeline
from mpieval.comm import Comm
from mpieval.errors import DataError, InputError, UndefinedMetricWarning
from mpieval.kinds import KINDS, available
from mpieval.metric import Evaluator
from mpieval.user_rows import UserRowsMetric

ALL_KINDS = [k for k in NAMES if available(k)]


def rows(n: int, seed: int = 5) -> dict[str, np.ndarray]:
    """A small prediction dump: ties in pred, repeated users, tags, graded labels."""
    rng = np.random.default_rng(seed)
    pred = np.round(rng.beta(2, 6, n), 3)
    label = (rng.random(n) < pred).astype(np.int64)
    return {
        "uid": rng.integers(0, max(n // 15, 1), n) * 7919 + 10**12,
        "tag": rng.choice(np.array(["feed", "search", "video"]), n),
        "pred": pred,
        "label": label,
        "grade": label * (1 + (rng.random(n) < 0.3)),
        "left": (rng.random(n) < 0.3).astype(np.int64),
        "right": (rng.random(n) < 0.2).astype(np.int64),
        "pred2": np.round(rng.random(n), 4),
        "label2": (rng.random(n) < 0.1).astype(np.int64),
        "cmatch": rng.choice(np.array([222, 223]), n),
        "w": rng.integers(0, 4, n).astype(np.float64),
    }


def write(path: str, data: dict[str, np.ndarray], row_group: int = 700) -> str:
    """``data`` as ``path`` in the format its name says (tsv, csv, .gz, parquet)."""
    table = pa.table(data)
    if path.endswith(".parquet"):
        pq.write_table(table, path, row_group_size=row_group)
        return path
    sep = "\t" if ".tsv" in path else ","
    sink = pa.BufferOutputStream()
    sink.write((sep.join(table.column_names) + "\n").encode())
    pacsv.write_csv(table, sink, write_options=pacsv.WriteOptions(
        include_header=False, delimiter=sep, quoting_style="none"))
    text = sink.getvalue().to_pybytes()
    with open(path, "wb") as out:
        out.write(gzip.compress(text) if path.endswith(".gz") else text)
    return path


def shards(tmp_path, data: dict[str, np.ndarray], names: list[str]) -> list[str]:
    """``data`` cut into uneven consecutive parts, one per file name."""
    n = len(next(iter(data.values())))
    cuts = np.linspace(0, n, len(names) + 1).astype(int)
    cuts[1:-1] += np.arange(1, len(names)) * 37 % 101  # uneven
    return [write(str(tmp_path / name), {k: v[a:b] for k, v in data.items()})
            for name, a, b in zip(names, cuts[:-1], cuts[1:], strict=True)]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def api(specs: dict[str, tuple[str, dict]], data: dict[str, np.ndarray],
        inputs: dict[str, dict[str, str]] | None = None) -> tuple[dict, list[str]]:
    """JSON and log lines from the Python API: name -> (kind, options); the columns of
    each kind's inputs from ``inputs``, else from the kind's fixture (``columns``)."""
    inputs = {kind: fixture(kind).columns for kind, _ in specs.values()} | (inputs or {})
    comm = Comm()
    metrics = {name: KINDS[kind].build(options, comm) for name, (kind, options) in specs.items()}
    for name, (kind, _) in specs.items():
        metrics[name].update(**{arg: data[col] for arg, col in inputs[kind].items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = Evaluator(metrics, comm).compute()
    return Evaluator.to_dict(results), Evaluator.log_lines(results)


def metrics_json(path: str | os.PathLike) -> dict:
    """The metric blocks of a ``--json`` file: all but the run's ``run`` object (which
    it must have)."""
    with open(path) as source:
        data = json.load(source)
    assert isinstance(data.pop("run"), dict)
    return data


def assert_same(got: dict, want: dict) -> None:
    """Equal JSON: exact for ints and strings, floats to 1e-12 (summation order), also
    inside lists (intervals, curves)."""
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same(got[key], value)
        elif isinstance(value, list):
            assert len(got[key]) == len(value), key
            assert_same(dict(enumerate(got[key])), dict(enumerate(value)))
        elif isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
        else:
            assert got[key] == value, key


def assert_same_lines(got: list[str], want: list[str]) -> None:
    """Equal log lines; a ``%g`` value may differ in its last digit only where the sum
    it prints sits on a rounding tie (summation order differs between runs)."""
    assert len(got) == len(want), (got, want)
    for line, expected_line in zip(got, want, strict=True):
        tokens, expected_tokens = line.split(" "), expected_line.split(" ")
        assert len(tokens) == len(expected_tokens), (line, expected_line)
        for token, expected_token in zip(tokens, expected_tokens, strict=True):
            if token == expected_token:
                continue
            key, value = token.split("=")
            expected_key, expected_value = expected_token.split("=")
            assert key == expected_key and "." in value, (line, expected_line)
            a, b = float(value), float(expected_value)
            last_digit = 10.0 ** (math.floor(math.log10(abs(b))) - 5)  # of 6 significant
            assert abs(a - b) <= last_digit * 1.001, (line, expected_line)


@pytest.fixture
def data() -> dict[str, np.ndarray]:
    return rows(3000)


def test_auc_equals_the_api_and_the_oracle(tmp_path, capsys):
    data = rows(100_000)
    files = shards(tmp_path, data, ["a.tsv", "b.tsv", "c.tsv"])
    out_json = tmp_path / "run.json"
    status, out, err = run(capsys, "eval", "--table-size", "1000", "--json", out_json, *files)
    assert status == 0, err
    got = metrics_json(out_json)
    want, lines = api({"auc": ("auc", {"table_size": 1000})}, data)
    assert_same(got, want)
    assert_same_lines(out.splitlines(), lines)
    oracle = oracle_auc.metrics(data["pred"], data["label"], 1000)
    assert not math.isnan(oracle["bucket_error"])
    for field, value in oracle.items():
        assert got["auc"][field] == pytest.approx(value, rel=1e-9), field


def column_flags(kinds: list[str]) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The flags naming the columns of several kinds' inputs in :func:`rows` (each kind's
    fixture's ``columns``) on one command line, and the columns each kind's inputs then
    read: a flag several kinds share (``--label``) names the column of the first kind that
    sets it; a required input without its flag reads the column of its own name."""
    columns: dict[str, str] = {}  # flag -> column
    for kind in kinds:
        specs = {spec.name: spec for spec in KINDS[kind].declared_inputs}
        for name, column in fixture(kind).columns.items():
            columns.setdefault(specs[name].flag, column)
    inputs = {kind: {spec.name: columns.get(spec.flag, spec.name)
                     for spec in KINDS[kind].declared_inputs
                     if spec.flag in columns or not spec.optional}
              for kind in kinds}
    return [text for flag, column in columns.items() for text in (flag, column)], inputs


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("names", [
    ["a.csv"], ["a.tsv.gz", "b.csv.gz"], ["a.parquet", "b.parquet"],
    ["a.tsv", "b.csv", "c.tsv.gz", "d.parquet"],
])
def test_every_format_gives_the_same_numbers(tmp_path, capsys, data, names, kind):
    files = shards(tmp_path, data, names)
    out_json = tmp_path / "run.json"
    flags, inputs = column_flags([kind])
    status, out, err = run(capsys, "eval", "--metrics", kind, *flags, "--json", out_json, *files)
    assert status == 0, err
    got = metrics_json(out_json)
    want, lines = api({kind: (kind, {})}, data, inputs)
    assert_same(got, want)
    assert_same_lines(out.splitlines(), lines)


def test_pn_and_pairwise_equal_their_oracles(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.tsv", "b.parquet"])
    out_json = tmp_path / "run.json"
    status, _, err = run(
        capsys, "eval", "--metrics", "pn,pairwise", "--label", "grade", "--pn-ties", "half",
        "--left-label", "left", "--right-label", "right", "--json", out_json, *files,
    )
    assert status == 0, err
    got = metrics_json(out_json)
    oracle = pn_totals(data["uid"].tolist(), data["pred"].tolist(), data["grade"].tolist(),
                       "half")
    for field in ("ins_number", "positive_pairs", "negative_pairs", "average_pn"):
        assert got["pn"][field] == pytest.approx(oracle[field], rel=1e-12), field
    left, right = data["left"], data["right"]
    assert got["pairwise"] == {
        "kind": "pairwise", "ins": len(left),
        "same_label_click": int(((left == 1) & (right == 1)).sum()),
        "left_label_click": int(((left == 1) & (right == 0)).sum()),
        "right_label_click": int(((left == 0) & (right == 1)).sum()),
        "same_label_unclick": int(((left == 0) & (right == 0)).sum()),
    }


def test_name_prefixes_the_lines_only(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.tsv"])
    out_json = tmp_path / "run.json"
    status, out, _ = run(capsys, "eval", "--name", "item_sim", "--json", out_json, *files)
    assert status == 0
    assert out.startswith("item_sim: auc=")
    assert list(metrics_json(out_json)) == ["auc"]


def test_weights_and_soft_labels(tmp_path, capsys, data):
    soft = dict(data, label=np.round(data["pred"] * 0.8, 2))
    files = shards(tmp_path, soft, ["a.tsv", "b.csv"])
    out_json = tmp_path / "run.json"
    status, _, err = run(capsys, "eval", "--weight", "w", "--soft-labels", "--json", out_json,
                         *files)
    assert status == 0, err
    comm = Comm()
    metric = KINDS["auc"].build({"soft_labels": True}, comm)
    metric.update(soft["pred"], soft["label"], soft["w"])
    assert_same(metrics_json(out_json),
                Evaluator.to_dict(Evaluator({"auc": metric}, comm).compute()))
    status, _, err = run(capsys, "eval", *files)
    assert status == 2
    assert "column label: value" in err and "pass --soft-labels" in err


CONFIG = """
# two tasks in one file, a mask and filters
[metrics.ctr]
kind = "auc"
table_size = 5000

[metrics.cvr]
kind = "auc"
pred = "pred2"
label = "label2"
mask = "label"          # conversions count on clicked rows only

[metrics.ctr_search_222]
kind = "auc"
filters = { tag = "search", cmatch = 222 }

[metrics.user_pn]
kind = "pn"
label = "grade"
ties = "ignore"
filters = { cmatch = 223 }

[metrics.pairs]
kind = "pairwise"
left_label = "left"
right_label = "right"
mask = "w"
"""


def test_config_masks_filters_and_several_tasks(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.tsv", "b.tsv.gz", "c.parquet"])
    config = tmp_path / "metrics.toml"
    config.write_text(CONFIG)
    out_json = tmp_path / "run.json"
    status, out, err = run(capsys, "eval", "--config", config, "--json", out_json, *files)
    assert status == 0, err
    select = {
        "cvr": data["label"] != 0,
        "ctr_search_222": (data["tag"] == "search") & (data["cmatch"] == 222),
        "user_pn": data["cmatch"] == 223,
        "pairs": data["w"] != 0,
    }
    comm = Comm()
    metrics = {
        "ctr": KINDS["auc"].build({"table_size": 5000}, comm),
        "cvr": KINDS["auc"].build({}, comm),
        "ctr_search_222": KINDS["auc"].build({}, comm),
        "user_pn": KINDS["pn"].build({"ties": "ignore"}, comm),
        "pairs": KINDS["pairwise"].build({}, comm),
    }
    columns = {"cvr": {"pred": "pred2", "label": "label2"}}
    for name, metric in metrics.items():
        keep = select.get(name, slice(None))
        cols = columns.get(name, fixture(metric.kind).columns)
        metric.update(**{arg: data[col][keep] for arg, col in cols.items()})
    results = Evaluator(metrics, comm).compute()
    assert_same(metrics_json(out_json), Evaluator.to_dict(results))
    assert_same_lines(out.splitlines(), Evaluator.log_lines(results))


def test_progress_on_request(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.tsv", "b.parquet"])
    status, _, err = run(capsys, "eval", "--progress", *files)
    assert status == 0
    assert "mpieval: 3,000 rows" in err and "(100%)" in err
    status, _, err = run(capsys, "eval", *files)
    assert "rows/s" not in err  # silent when stderr is not a terminal


def test_undefined_values_warn_and_are_null(tmp_path, capsys):
    path = write(str(tmp_path / "one.tsv"), {"pred": np.array([0.2, 0.4]),
                                             "label": np.array([1, 1])})
    out_json = tmp_path / "run.json"
    status, out, err = run(capsys, "eval", "--json", out_json, path)
    assert status == 0
    assert "auc=nan" in out
    assert "mpieval: warning: auc: auc is undefined" in err
    assert metrics_json(out_json)["auc"]["auc"] is None


def test_help_and_subcommand_required(capsys):
    status, out, _ = run(capsys, "eval", "--help")
    assert status == 0 and "--pn-ties" in out
    status, _, err = run(capsys)
    assert status == 2 and "required" in err


# -- errors ------------------------------------------------------------------------------


def test_json_only_on_success_and_atomic(tmp_path, capsys, data):
    good = shards(tmp_path, data, ["a.tsv"])[0]
    bad = tmp_path / "bad.tsv"
    bad.write_text("pred\tlabel\n0.5\t1\nabc\t0\n")
    out_json = tmp_path / "run.json"
    out_json.write_text('{"old": true}')
    status, _, err = run(capsys, "eval", "--json", out_json, good, bad)
    assert status == 2
    assert f"{bad}:3: column pred: 'abc' is not a number" in err
    assert json.loads(out_json.read_text()) == {"old": True}  # untouched
    status, _, _ = run(capsys, "eval", "--json", out_json, good)
    assert status == 0 and "auc" in metrics_json(out_json)
    assert sorted(os.listdir(tmp_path)) == ["a.tsv", "bad.tsv", "run.json"]  # no temp left


@pytest.mark.parametrize(("argv", "message"), [
    (["--metrics", "auc,foo"], "unknown metric kind 'foo'"),
    (["--metrics", "auc,,pn"], "--metrics: empty kind"),
    (["--metrics", "auc,auc"], "kind 'auc' is listed twice"),
    (["--pn-ties", "sometimes"], "invalid choice: 'sometimes'"),
    (["--table-size", "0"], "--table-size: must be a positive integer, got 0"),
    (["--table-size", "1e6"], "--table-size: not an integer"),
    (["--format", "xlsx"], "invalid choice: 'xlsx'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--pred", "nope"], "column nope: not in the header (pred of auc)"),
    (["--json", "/no/such/dir/run.json"], "--json: cannot write /no/such/dir/run.json"),
    (["--json", "/tmp"], "--json: cannot write /tmp: it exists and is not a regular file"),
    (["--metrics", "pn", "--weight", "w"], "--weight: kind pn does not take weights"),
    (["--metrics", "auc,pairwise", "--weight", "w"],
     "--weight: kind pairwise does not take weights"),
    (["--metrics", "wuauc,ranking", "--weight", "w"],
     "--weight: kind ranking does not take weights"),
    (["--metrics", "auc", "--pn-ties", "half"], "--pn-ties: no metric of --metrics auc uses it"),
    (["--table-size", "10", "--metrics", "wuauc"], "--table-size: no metric of --metrics wuauc"),
    (["--soft-labels", "--metrics", "pairwise"], "--soft-labels: no metric of --metrics pairwise"),
    (["--config", "CONFIG", "--pred", "p"], "--pred: cannot be used with --config"),
    (["--config", "/no/such.toml"], "/no/such.toml: cannot read the config"),
])
def test_usage_errors_exit_2(tmp_path, capsys, data, argv, message):
    files = shards(tmp_path, data, ["a.tsv"])
    config = tmp_path / "m.toml"
    config.write_text(CONFIG)
    argv = [str(config) if a == "CONFIG" else a for a in argv]
    status, out, err = run(capsys, "eval", *argv, *files)
    assert status == 2
    assert message in err
    assert out == ""


@pytest.mark.parametrize(("config", "message"), [
    ("[metrics.a]\nkind = 'auc'\npred_col = 'p'\n",
     "metric 'a': pred_col: is not a key of kind auc"),
    ("[metrics.a]\nkind = 'gauc'\n", "unknown metric kind 'gauc'"),
    ("[metrics.a]\npred = 'p'\n", "metric 'a': kind: missing"),
    ("[metrics.a]\nkind = 'auc'\ntable_size = 0\n", "table_size: must be a positive integer"),
    ("[metrics.a]\nkind = 'pn'\nties = 'maybe'\n", "ties: must be one of negative, ignore, half"),
    ("[metrics.a]\nkind = 'auc'\nfilters = { tag = true }\n", "filters.tag: must be a number"),
    ("[metrics.a]\nkind = 'auc'\nfilters = { pred = 'x' }\n",
     "column pred: is read both as text and as a number"),
    ("[metrics.a]\nkind = 'auc'\nmask = 'nope'\n", "column nope: not in the header (mask of a)"),
    ("[metric.a]\nkind = 'auc'\n", "unknown top-level key 'metric'"),
    ("[metrics]\n", "no metrics"),
    ("[metrics.a\nkind = 'auc'\n", "not valid TOML"),
    ("import os\n", "not valid TOML"),
])
def test_config_errors_exit_2(tmp_path, capsys, data, config, message):
    files = shards(tmp_path, data, ["a.tsv"])
    path = tmp_path / "m.toml"
    path.write_text(config)
    status, _, err = run(capsys, "eval", "--config", path, *files)
    assert status == 2
    assert message in err


def test_file_errors_exit_2(tmp_path, capsys, data):
    (good,) = shards(tmp_path, data, ["a.tsv"])
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    (tmp_path / "a.dat").write_bytes(open(good, "rb").read())  # a missing one says so
    cases = [
        ([str(tmp_path / "missing.tsv")], "missing.tsv: cannot read: No such file"),
        ([str(empty)], "empty.tsv:1: empty file"),
        ([good, good], "is given twice"),
        ([str(tmp_path / "a.dat")], "pass --format"),
    ]
    for files, message in cases:
        status, _, err = run(capsys, "eval", *files)
        assert status == 2, files
        assert message in err


def test_a_kind_missing_from_the_build_is_a_usage_error(tmp_path, capsys, data, monkeypatch):
    files = shards(tmp_path, data, ["a.tsv"])
    gone = dataclasses.replace(KINDS["auc"], metric="mpieval.kinds.not_here:Nope")
    monkeypatch.setitem(KINDS, "auc", gone)
    status, _, err = run(capsys, "eval", *files)
    assert status == 2
    assert "kind 'auc' is not available" in err


def test_filter_on_a_parquet_column_of_another_type(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.parquet"])
    config = tmp_path / "m.toml"
    config.write_text("[metrics.a]\nkind = 'auc'\nfilters = { cmatch = 'x' }\n")
    status, _, err = run(capsys, "eval", "--config", config, *files)
    assert status == 2
    assert "column cmatch: cannot compare its int64 values with the filter value 'x'" in err


def test_mask_must_be_finite(tmp_path, capsys, data):
    path = tmp_path / "m.tsv"
    path.write_text("pred\tlabel\tm\n0.5\t1\t1\n0.5\t0\tnan\n")
    config = tmp_path / "m.toml"
    config.write_text("[metrics.a]\nkind = 'auc'\nmask = 'm'\n")
    status, _, err = run(capsys, "eval", "--config", config, path)
    assert status == 2
    assert f"{path}:3: column m: mask value nan is not finite" in err


def test_no_rows_selected_gives_nan_not_an_error(tmp_path, capsys, data):
    files = shards(tmp_path, data, ["a.tsv"])
    config = tmp_path / "m.toml"
    config.write_text("[metrics.a]\nkind = 'auc'\nfilters = { cmatch = 1 }\n")
    out_json = tmp_path / "run.json"
    status, out, err = run(capsys, "eval", "--config", config, "--json", out_json, *files)
    assert status == 0
    result = metrics_json(out_json)["a"]
    assert result["num"] == 0 and result["auc"] is None
    assert "num=0" in out and "no rows" in err
    assert math.isnan(float(out.split("auc=")[1].split()[0]))


# -- the documented examples ----------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def example_rows(n: int) -> dict[str, np.ndarray]:
    """Columns named as in scripts/example-metrics.toml and docs/cli.md."""
    base = rows(n, seed=9)
    return {
        "user_id": base["uid"], "page": base["tag"], "ctr_pred": base["pred"],
        "click": base["label"], "cvr_pred": base["pred2"], "convert": base["label2"],
        "grade": base["grade"], "cmatch": base["cmatch"],
        "rank": (np.arange(n) % 3).astype(np.int64),
        "left_click": base["left"], "right_click": base["right"],
    }


def test_the_example_config_runs(tmp_path, capsys):
    files = shards(tmp_path, example_rows(2000), ["a.tsv", "b.parquet"])
    config = os.path.join(ROOT, "scripts", "example-metrics.toml")
    out_json = tmp_path / "run.json"
    status, _, err = run(capsys, "eval", "--config", config, "--json", out_json, *files)
    assert status == 0, err
    got = metrics_json(out_json)
    assert list(got) == ["item_sim", "cvr", "item_sim_cmatch222_rank1", "user_ctr",
                         "grade_pn", "pair_click"]
    assert got["cvr"]["num"] == int(example_rows(2000)["click"].sum())


def test_the_documented_config_block_is_valid():
    from mpieval.config import parse_toml, specs_from_config

    with open(os.path.join(ROOT, "docs", "cli.md")) as page:
        text = page.read()
    section = text.split("## Config", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    specs = specs_from_config(parse_toml(block), "docs/cli.md")
    assert [s.name for s in specs] == ["item_sim", "cvr", "item_sim_cmatch222", "user_ctr",
                                       "grade_pn"]


def test_the_dockerfile_builds_a_wheel_and_ships_no_compiler():
    """Two stages: the first installs g++ and builds mpieval's wheel from files of this
    repository; the image installs that wheel (with MPI from pip) and no compiler."""
    with open(os.path.join(ROOT, "docker", "Dockerfile")) as dockerfile:
        lines = [line.split() for line in dockerfile if line.strip() and line[0] != "#"]
    stages = [i for i, words in enumerate(lines) if words[0] == "FROM"]
    assert len(stages) == 2
    build, image = lines[stages[0]:stages[1]], lines[stages[1]:]
    for words in build:
        if words[0] == "COPY":
            for source in words[1:-1]:
                assert os.path.exists(os.path.join(ROOT, source)), source
    built = " ".join(" ".join(words) for words in build)
    assert "g++" in built and "pip wheel" in built
    shipped = " ".join(" ".join(words) for words in image)
    assert "--from=build" in shipped and "[mpich]" in shipped
    assert "g++" not in shipped and "apt-get" not in shipped


def test_parquet_categorical_ids_read_as_their_values(tmp_path, capsys, data):
    """A pandas categorical / dictionary-encoded column is its values, not an error."""
    plain = write(str(tmp_path / "plain.parquet"), data)
    table = pa.table(data)
    for name in ("uid", "tag"):
        as_text = pa.array(data[name].astype(str)).dictionary_encode()
        table = table.set_column(table.schema.get_field_index(name), name, as_text)
    encoded = str(tmp_path / "dict.parquet")
    pq.write_table(table, encoded, row_group_size=700)
    assert pa.types.is_dictionary(pq.read_schema(encoded).field("uid").type)
    argv = ("eval", "--metrics", "wuauc,pn", "--tag", "tag")
    status, want, err = run(capsys, *argv, plain)
    assert status == 0, err
    status, got, err = run(capsys, *argv, encoded)
    assert status == 0, err
    assert got == want


def test_invalid_utf8_names_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "utf.tsv"
    bad.write_bytes(b"uid\tpred\tlabel\nu1\t0.5\t1\n\xff\xfe\t0.2\t0\n")
    status, out, err = run(capsys, "eval", "--metrics", "pn", bad)
    assert status == 2 and out == ""
    assert f"{bad}:3: column uid: invalid UTF-8 text" in err


@pytest.mark.parametrize(("text", "argv", "message"), [
    ("uid\tpred\tlabel\ttag\na\t0.5\t1\tfeed\nb\t0.5\t1\tall\n", ["--tag", "tag"],
     ":3: column tag: the tag 'all' is reserved for the block of every row"),
    ("uid\tpred\tlabel\na\t0.5\t1\n\t0.5\t1\n", [],
     ":3: column uid: value '' is empty (a missing uid)"),
    ("uid\tpred\tlabel\ttag\na\t0.5\t1\tfeed\nb\t0.5\t1\t\n", ["--tag", "tag"],
     ":3: column tag: value '' is empty (a missing tag)"),  # tags are coded a batch at a time
    ("uid\tpred\tlabel\ttag\na\t0.5\t1\tfeed\nb\t0.5\t1\t\udcff\n", ["--tag", "tag"],
     ":3: column tag: invalid UTF-8 text"),
    ("uid\tpred\tlabel\ttag\na\t0.5\t1\tfeed\nb\t0.5\t1\tx=y\nc\t0.5\t1\tx=y\n", ["--tag", "tag"],
     ":3: column tag: 'x=y' holds '=', which would break the space-separated key=value log line"),
    ('uid\tpred\tlabel\ttag\na\t0.5\t1\tfeed\nb\t0.5\t1\tfeed\nc\t0.5\t1\t"a b"\n',
     ["--tag", "tag"],
     ":4: column tag: 'a b' holds ' ', which would break the space-separated key=value log line"),
    ('uid\tpred\tlabel\ttag\na\t0.5\t1\t"a\tb"\n', ["--tag", "tag"],
     ":2: column tag: 'a\\tb' holds '\\t', which would break the space-separated key=value log "
     "line"),
])
def test_bad_ids_read_well(tmp_path, capsys, text, argv, message):
    bad = tmp_path / "ids.tsv"
    bad.write_bytes(text.encode("utf-8", errors="surrogateescape"))  # \udcff: a bad byte
    status, _, err = run(capsys, "eval", "--metrics", "wuauc", *argv, bad)
    assert status == 2
    assert f"{bad}{message}\n" in err


# -- threads, and the kernels loaded while reading ------------------------------------


class _Ranks:
    def __init__(self, size: int) -> None:
        self.size = size


def test_threads_per_rank(monkeypatch):
    monkeypatch.delenv("MPIEVAL_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert cli.threads_per_rank(_Ranks(1)) == cores  # alone: every core
    assert cli.threads_per_rank(_Ranks(2)) == 1  # under mpiexec -n 2: one per rank
    monkeypatch.setenv("MPIEVAL_THREADS", "3")
    assert cli.threads_per_rank(_Ranks(1)) == cli.threads_per_rank(_Ranks(4)) == 3


@pytest.mark.parametrize("value", ["0", "two", "-1", ""])
def test_a_bad_thread_count_is_a_usage_error(tmp_path, capsys, data, monkeypatch, value):
    files = shards(tmp_path, data, ["a.tsv"])
    monkeypatch.setenv("MPIEVAL_THREADS", value)
    status, out, err = run(capsys, "eval", *files)
    assert status == 2
    assert f"MPIEVAL_THREADS: must be a positive integer, got {value!r}" in err
    assert out == ""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_thread_count_does_not_change_results(tmp_path, capsys, data, monkeypatch, threads):
    files = shards(tmp_path, data, ["a.tsv", "b.csv"])
    monkeypatch.setenv("MPIEVAL_THREADS", threads)
    status, out, _ = run(capsys, "eval", "--metrics", "auc,wuauc", "--tag", "tag", *files)
    assert status == 0
    _, want = api({"auc": ("auc", {}), "wuauc": ("wuauc", {})}, data)
    assert_same_lines(out.splitlines(), want)


class _FakeBatch:
    """What the reading rounds look at: rows and file bytes."""

    def __init__(self, name: str, size: int, rows: int = 1) -> None:
        self.name, self.bytes, self.rows = name, size, rows

    def __repr__(self) -> str:
        return self.name


def _fake_batches(names: list[str], size: int, read: list[str] | None = None,
                  fail_at: str | None = None):
    for name in names:
        if name == fail_at:
            raise DataError(f"{name}:2", "'abc' is not a number", "pred")
        if read is not None:
            read.append(name)
        yield _FakeBatch(name, size, rows=3)


@pytest.mark.parametrize(("count", "totals", "reads", "lasts"), [
    (10, [4, 8, 10], [8, 10, 10], [False, False, True]),  # the last ends at the input's end
    (8, [4, 8, 8], [8, 8, 8], [False, False, True]),  # a round on a budget, then the end
    (0, [0], [0], [True]),
])
def test_a_round_stops_at_the_byte_budget(monkeypatch, count, totals, reads, lasts):
    """Each round reads until ``_ROUND_BYTES`` of file (the batch that reaches it
    included); every batch read is fed before a round ends; a round's totals come once
    the next round has been read (its sum over the ranks was in flight meanwhile)."""
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 100)
    read: list[str] = []
    fed: list[str] = []
    names = [f"b{k}" for k in range(count)]
    rounds = []
    for done in pipeline.reading_rounds(_fake_batches(names, 30, read),
                                        lambda batch: fed.append(batch.name), Comm.local()):
        assert fed == read
        rounds.append((len(read), done))
    assert [n for n, _ in rounds] == reads
    assert [done.last for _, done in rounds] == lasts
    assert [done.bytes for _, done in rounds] == [30 * n for n in totals]
    assert [done.rows for _, done in rounds] == [3 * n for n in totals]


def test_a_round_is_16_mib_of_file():
    """A round reads 16 MiB of file (8 before: more moves and meetings of the ranks for
    the per-user kinds, docs/scale.md): a 40 MiB input of 1 MiB batches is three
    rounds, so two moves while reading (the last round's rows move in compute)."""
    names = [f"b{k}" for k in range(40)]
    read: list[str] = []
    counts = [len(read) for _ in pipeline.reading_rounds(
        _fake_batches(names, 1 << 20, read), lambda batch: None, Comm.local())]
    assert counts == [32, 40, 40]  # a round's totals come after the next one is read


def test_a_bad_batch_ends_the_rounds_with_its_error(monkeypatch):
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 100)
    names = [f"b{k}" for k in range(10)]
    rounds = pipeline.reading_rounds(_fake_batches(names, 30, fail_at="b5"),
                                     lambda batch: None, Comm.local())
    assert next(rounds).bytes == 120
    with pytest.raises(DataError, match="b5:2: column pred"):
        next(rounds)


@pytest.mark.mpi
def test_reading_rounds_are_in_lockstep_on_every_rank(comm, monkeypatch):
    """Ranks with different amounts to read see the same rounds; the last is the one after
    which no rank reads; the totals are over all ranks."""
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 25)
    count = 2 + 5 * comm.rank
    names = [f"r{comm.rank}b{k}" for k in range(count)]
    rounds = list(pipeline.reading_rounds(_fake_batches(names, 10), lambda batch: None,
                                          comm))
    assert comm.allgather(rounds) == [rounds] * comm.size
    assert [done.last for done in rounds] == [False] * (len(rounds) - 1) + [True]
    longest = 2 + 5 * (comm.size - 1)
    assert len(rounds) == longest // 3 + 1  # three batches a round, then the end
    everyone = sum(2 + 5 * r for r in range(comm.size))
    assert (rounds[-1].rows, rounds[-1].bytes) == (3 * everyone, 10 * everyone)


@pytest.mark.mpi
def test_a_bad_batch_on_one_rank_stops_every_rank_a_round_later(comm, monkeypatch):
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 25)
    last = comm.size - 1
    names = [f"r{comm.rank}b{k}" for k in range(20)]
    rounds = pipeline.reading_rounds(
        _fake_batches(names, 10, fail_at=f"r{last}b4" if comm.rank == last else None),
        lambda batch: None, comm)
    assert not next(rounds).last  # batches 0-2 everywhere (batch 4 of the last rank is
    with pytest.raises(InputError) as raised:  # bad: the other ranks read 6-8 meanwhile)
        next(rounds)
    origin = "" if comm.rank == last else f"rank {last}: "  # other ranks name the rank
    assert str(raised.value) == f"{origin}r{last}b4:2: column pred: 'abc' is not a number"


@pytest.mark.mpi
def test_rows_moved_in_every_reading_round_give_the_one_process_json(comm, tmp_path, capsys,
                                                                     monkeypatch):
    """Small rounds (several a rank, ranks reading different amounts, some nothing near
    the end): the per-user kinds move their rows to their owners after every round, and
    every kind's JSON is the one process's, byte for byte."""
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 3000)
    moves = []
    real_move = UserRowsMetric.move_rows
    monkeypatch.setattr(UserRowsMetric, "move_rows",
                        lambda self, comm: moves.append(self.kind) or real_move(self, comm))
    folder = Path(comm.allgather(str(tmp_path))[0])
    data = rows(6000, seed=11)
    names = ["a.tsv", "b.parquet", "c.csv", "d.parquet", "e.tsv"]
    files = (shards(folder, data, names) if comm.rank == 0
             else [str(folder / name) for name in names])
    comm.barrier()
    flags, inputs = column_flags(ALL_KINDS)
    out_json = folder / "run.json"
    status, _, err = run(capsys, "eval", "--metrics", ",".join(ALL_KINDS), *flags,
                         "--table-size", "1000", "--json", out_json, *files)
    assert status == 0, err
    assert len(moves) >= 4  # wuauc and ranking, after two rounds or more
    comm.barrier()
    local = Comm.local()
    metrics = {kind: KINDS[kind].build({"table_size": 1000} if kind == "auc" else {}, local)
               for kind in ALL_KINDS}
    for kind, metric in metrics.items():
        metric.update(**{arg: data[column] for arg, column in inputs[kind].items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = Evaluator.to_dict(Evaluator(metrics, local).compute())
    assert json.dumps(metrics_json(out_json)) == json.dumps(json.loads(json.dumps(want)))


@pytest.mark.mpi
def test_weights_move_with_their_rows_in_every_reading_round(comm, tmp_path, capsys,
                                                             monkeypatch):
    """wuauc with --weight (weights that are not whole numbers) over small rounds: the rows
    move to their owners after every round with their weights, and the JSON is the one
    process's."""
    monkeypatch.setattr(pipeline, "_ROUND_BYTES", 3000)
    folder = Path(comm.allgather(str(tmp_path))[0])
    data = rows(6000, seed=12)
    data["w"] = np.round(np.random.default_rng(3).uniform(0.25, 4.0, 6000), 2)
    names = ["a.tsv", "b.parquet", "c.tsv"]
    files = (shards(folder, data, names) if comm.rank == 0
             else [str(folder / name) for name in names])
    comm.barrier()
    out_json = folder / "run.json"
    status, _, err = run(capsys, "eval", "--metrics", "wuauc", "--uid", "uid", "--tag", "tag",
                         "--weight", "w", "--json", out_json, *files)
    assert status == 0, err
    comm.barrier()
    local = Comm.local()
    metric = KINDS["wuauc"].build({}, local)
    metric.update(uid=data["uid"], pred=data["pred"], label=data["label"], tag=data["tag"],
                  weight=data["w"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = Evaluator.to_dict(Evaluator({"wuauc": metric}, local).compute())
    got = metrics_json(out_json)
    assert got["wuauc"]["tags"]["all"]["real_ins_num"] == pytest.approx(float(data["w"].sum()))
    assert json.dumps(got) == json.dumps(json.loads(json.dumps(want)))


def test_nothing_in_mpieval_imports_the_command_line():
    """The pipeline and the demo sit below ``cli``: only ``__main__`` imports it."""
    import ast
    import pathlib

    package = pathlib.Path(cli.__file__).parent
    importers = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if "mpieval.cli" in names:
                importers.append(path.name)
    assert importers == ["__main__.py"]


def test_no_jit_compiler_is_loaded_the_kernels_are_an_extension_module(tmp_path, data):
    """The kernels are compiled ahead of time (``mpieval._core``, a shared library): a run
    of the compiled kinds loads neither numba nor llvmlite."""
    (path,) = shards(tmp_path, data, ["a.tsv"])
    script = f"""
import sys
import mpieval, mpieval.cli
from mpieval import _core
assert _core.__file__.endswith(('.so', '.pyd')), _core.__file__
assert all(getattr(mpieval, name) for name in mpieval.__all__)
assert mpieval.cli.main(["eval", "--metrics", "auc,wuauc,pn", "--tag", "tag", {path!r}]) == 0
assert not {{"numba", "llvmlite"}} & set(sys.modules), sorted(sys.modules)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "MPIEVAL_NO_MPI": "1"}, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_plain_run_imports_no_more_than_it_needs(tmp_path, data):
    """Start-up: a run of local files on one rank that writes no JSON nor report imports
    no ``numpy.ma`` (no figure is drawn, and no value can be a masked array before it is
    imported), no ``pyarrow.fs`` (local files need no file system), no ``tomllib`` (no
    config), no ``statistics`` (no interval), no ``hashlib`` (no layout to agree on) and
    no ``pyarrow.compute`` (no filter; the tags are coded without it)."""
    (path,) = shards(tmp_path, data, ["a.tsv"])
    script = f"""
import sys
import mpieval.cli
status = mpieval.cli.main(["eval", "--metrics", "auc,wuauc,pn", "--tag", "tag", {path!r}])
assert status == 0, status
loaded = {{"numpy.ma", "pyarrow.fs", "tomllib", "statistics", "hashlib",
           "pyarrow.compute"}} & set(sys.modules)
assert not loaded, sorted(loaded)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "MPIEVAL_NO_MPI": "1"}, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_line_longer_than_two_blocks_reads_on_one_thread_and_two(tmp_path, capsys,
                                                                    monkeypatch):
    path = tmp_path / "wide.tsv"
    path.write_text("pred\tlabel\tnote\n0.2\t0\tx\n0.7\t1\t" + "y" * 3_000_000 + "\n0.4\t1\tz\n")
    results = []
    for threads in ("1", "2"):
        out_json = tmp_path / f"run-{threads}.json"
        monkeypatch.setenv("MPIEVAL_THREADS", threads)
        status, _, err = run(capsys, "eval", "--json", out_json, path)
        assert status == 0, err
        results.append(metrics_json(out_json))
        assert results[-1]["auc"]["rows"] == 3
    assert results[0] == results[1]


def test_version_is_the_package_metadata_one(capsys):
    from importlib.metadata import version

    import mpieval

    status, out, err = run(capsys, "--version")
    assert status == 0 and err == ""
    assert out == f"mpieval {version('mpieval')}\n"
    assert mpieval.__version__ == version("mpieval")


def test_flags_and_help_come_from_the_kinds_declarations(capsys):
    """Every input and config option a kind declares is a flag of `mpieval eval`, with the
    kinds that use it in its help; nothing else of a kind is hand-written in the parser."""
    status, out, _ = run(capsys, "eval", "--help")
    assert status == 0
    text = " ".join(out.split())
    for kind in KINDS.values():
        assert kind.name in text.split("comma list of kinds:")[1].split("(default auc)")[0]
        for spec in kind.flagged:
            assert spec.flag in text, (kind.name, spec.name)
    for flag, uses in cli.kind_flags().items():  # the kinds of a flag, and a column's default
        kinds = ", ".join(dict.fromkeys(name for name, _ in uses))
        spec = uses[0][1]
        default = getattr(spec, "default_column", None)
        assert f"({kinds}; default {default})" in text if default else f"({kinds}" in text, flag
    assert "--pn-ties {negative,ignore,half}" in text


def _about_options() -> list[tuple[str, Any, Any]]:
    """(kind, option, input) for every option of a kind that is about one of its inputs."""
    found = []
    for kind in KINDS.values():
        inputs = {spec.name: spec for spec in kind.declared_inputs}
        found += [(kind.name, option, inputs[option.about])
                  for option in kind.options.values() if option.about is not None]
    return found


def test_some_option_is_about_an_input():
    assert _about_options(), "the test below would test nothing"


@pytest.mark.parametrize(("kind", "option", "about"), _about_options(),
                         ids=lambda value: getattr(value, "name", value))
def test_an_option_about_a_column_not_given_is_a_usage_error(tmp_path, capsys, data, kind,
                                                             option, about):
    """``--weights importance`` without ``--weight``: an option about a column that is not
    given would change nothing; it is refused (flag and config key), never ignored."""
    files = shards(tmp_path, data, ["a.tsv"])
    value = option.choices[-1] if option.choices else str(option.default)
    argv = [option.flag] if option.parse is None else [option.flag, value]
    status, out, err = run(capsys, "eval", "--metrics", kind, *argv, *files)
    assert status == 2 and out == ""
    assert f"{option.flag}: is about the {about.flag} column, which is not given" in err
    config = tmp_path / "m.toml"
    config.write_text(f"[metrics.m]\nkind = {kind!r}\n{option.name} = {value!r}\n")
    status, out, err = run(capsys, "eval", "--config", config, *files)
    assert status == 2 and out == ""
    assert f"{option.name}: is about the {about.name} column, which is not given" in err
