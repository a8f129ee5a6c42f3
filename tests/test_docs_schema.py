"""Real ``--json`` outputs of every kind validate against the documented JSON Schema
(docs/schema/results.schema.json), and every name of the schema is in the JSON reference
(docs/json.md)."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from mpieval import AucMetric, Evaluator, PairwiseMetric
from mpieval.errors import UndefinedMetricWarning

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "schema" / "results.schema.json").read_text())
REFERENCE = (ROOT / "docs" / "json.md").read_text()

CONFIG = """\
[metrics.ctr]
kind = "auc"
compare = "pred_b"
table_size = 1000

[metrics.ctr_weighted]
kind = "auc"
weight = "weight"

[metrics.users]
kind = "wuauc"
tag = "tag"
compare = "pred_b"

[metrics.grades]
kind = "pn"
label = "grade"
ties = "half"

[metrics.pairs]
kind = "pairwise"

[metrics.ranked]
kind = "ranking"
label = "grade"
tag = "tag"
k = [1, 3]

[metrics.empty]             # no row passes the filter: undefined values are null
kind = "auc"
filters = { tag = "nowhere" }
"""


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows with every column the kinds read, a second model's pred and weights."""
    rng = np.random.default_rng(23)
    n = 4000
    uid = rng.integers(0, 300, n)
    truth = rng.random(n)
    label = (rng.random(n) < truth).astype(np.int8)
    table = pa.table({
        "uid": uid,
        "tag": rng.choice(["feed", "search", "video"], n),
        "pred": np.round(np.clip(truth + rng.normal(0, 0.3, n), 0, 1), 6),
        "pred_b": np.round(np.clip(truth + rng.normal(0, 0.2, n), 0, 1), 6),
        "label": label,
        "grade": label * rng.integers(1, 3, n).astype(np.int8),
        "weight": rng.integers(1, 4, n),
        "left_label": rng.integers(0, 2, n).astype(np.int8),
        "right_label": rng.integers(0, 2, n).astype(np.int8),
    })
    path = tmp_path_factory.mktemp("schema") / "rows.tsv"
    pacsv.write_csv(table, path, write_options=pacsv.WriteOptions(delimiter="\t",
                                                                  quoting_style="none"))
    return path


def evaluate(args: list[str], cwd: Path) -> dict[str, Any]:
    """``mpieval eval ARGS --json`` alone; the JSON it wrote."""
    out = cwd / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_", "OMPI_"))}
    done = subprocess.run([sys.executable, "-m", "mpieval", "eval", *args, "--json", str(out)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_the_schema_is_a_valid_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.fixture(scope="module")
def config_run(rows_file: Path) -> dict[str, Any]:
    """The JSON of a run of every kind (``CONFIG``), with --compare and tags."""
    (rows_file.parent / "metrics.toml").write_text(CONFIG)
    return evaluate(["--config", "metrics.toml", str(rows_file)], rows_file.parent)


def test_every_kind_with_compare_and_tags_validates(config_run: dict[str, Any]) -> None:
    result = config_run
    assert {block["kind"] for name, block in result.items() if name != "run"} == {
        "auc", "wuauc", "pn", "pairwise", "ranking"}
    assert "compare" in result["ctr"] and "compare" in result["users"]["tags"]["feed"]
    assert result["empty"]["auc"] is None
    assert result["run"]["weights"]["ctr_weighted"]["column"] == "weight"
    jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_the_command_line_flags_validate(rows_file: Path, tmp_path: Path) -> None:
    result = evaluate(["--metrics", "auc,wuauc,pn,pairwise,ranking", "--tag", "tag",
                       "--compare", "pred_b", "--k", "2,5", str(rows_file)], tmp_path)
    assert sorted(result) == ["auc", "pairwise", "pn", "ranking", "run", "wuauc"]
    jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_windows_of_the_trainer_api_validate() -> None:
    rng = np.random.default_rng(5)
    ev = Evaluator({"ctr": AucMetric(table_size=100, window=50),
                    "pairs": PairwiseMetric(window=50)})
    ev["ctr"].update(rng.random(200), rng.integers(0, 2, 200))
    ev["pairs"].update(rng.integers(0, 2, 200), rng.integers(0, 2, 200))
    with warnings.catch_warnings():  # bucket error over 200 rows: beside the point
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = json.loads(json.dumps(Evaluator.to_dict(ev.compute())))
    assert "window" in result["ctr"] and "window" in result["pairs"]
    jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("path, value", [
    (("ctr", "auc"), "0.7"),                      # a number written as text
    (("ctr", "ci95", "auc"), [0.1]),              # an interval that is not a pair
    (("users", "tags", "all", "valid_user_count"), 1.5),
    (("pairs", "kind"), "pair"),                  # an unknown kind
    (("ranked", "tags", "all", "ndcg@0"), 0.5),   # a cutoff that cannot be
    (("ctr", "score_histogram"), [[0, 1, -1, 0]]),  # a negative weight sum
    (("run", "started"), "2026-12-01 23:59"),       # not ISO 8601 UTC
    (("run", "ranks"), 0),
])
def test_the_schema_refuses_a_broken_output(config_run: dict[str, Any],
                                            path: tuple[str, ...], value: Any) -> None:
    result = copy.deepcopy(config_run)
    target = result
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_a_missing_field_is_refused(rows_file: Path, tmp_path: Path) -> None:
    result = evaluate(["--metrics", "pn", str(rows_file)], tmp_path)
    del result["pn"]["tie_pairs"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


def _names(node: Any) -> set[str]:
    """Every property name the schema declares."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("properties",):
                found |= set(value)
            found |= _names(value)
    elif isinstance(node, list):
        for item in node:
            found |= _names(item)
    return found


def test_every_name_of_the_schema_is_in_the_reference() -> None:
    documented = set(re.findall(r"`([a-z_0-9@]+)`", REFERENCE))
    missing = sorted(_names(SCHEMA) - documented)
    assert not missing, f"names of the schema missing from docs/json.md: {missing}"
