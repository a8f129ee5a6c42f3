"""Real ``--json`` outputs of every kind validate against the JSON Schema (assembled from
the kinds' fragments by :func:`mpieval.schema.results_schema`, served by the docs as
schema/results.schema.json); each kind's fragment agrees with its declaration and its
result; every name of the schema is documented (the shared ones in docs/json.md, a kind's
on its page)."""

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
from kinds import NAMES, build, fixture

from mpieval import Evaluator
from mpieval.errors import UndefinedMetricWarning
from mpieval.kinds import KINDS
from mpieval.schema import results_schema

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = results_schema()
REFERENCE = (ROOT / "docs" / "json.md").read_text()
WINDOWED = [name for name in NAMES
            if "window" in {option.name for option in KINDS[name].declared_options}]


def toml_value(value: Any) -> str:
    """A config value as TOML: text, a number, a boolean, a list, an inline table."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)  # a string quoted, true/false, a number


def config_name(kind: str, name: str) -> str:
    """The metric name of a fixture's config table: its name after the kind's."""
    return f"{kind}_{name}"


def config() -> str:
    """A config of every kind: each fixture's ``configs`` tables."""
    return "".join(
        f"[metrics.{config_name(kind, name)}]\nkind = {toml_value(kind)}\n"
        + "".join(f"{key} = {toml_value(value)}\n" for key, value in table.items()) + "\n"
        for kind in NAMES for name, table in fixture(kind).configs.items())


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
    """The JSON of a run of every kind (:func:`config`), with --compare and tags."""
    (rows_file.parent / "metrics.toml").write_text(config())
    return evaluate(["--config", "metrics.toml", str(rows_file)], rows_file.parent)


@pytest.mark.parametrize("kind", NAMES)
def test_every_kind_with_compare_and_tags_validates(config_run: dict[str, Any],
                                                    kind: str) -> None:
    mine = {name: config_run[config_name(kind, name)] for name in fixture(kind).configs}
    assert mine and all(block["kind"] == kind for block in mine.values())
    jsonschema.validate({**mine, "run": config_run["run"]}, SCHEMA,
                        cls=jsonschema.Draft202012Validator)


def test_the_config_run_set_what_it_is_checked_with(config_run: dict[str, Any]) -> None:
    assert "compare" in config_run["auc_ctr"]
    assert "compare" in config_run["wuauc_users"]["tags"]["feed"]
    assert config_run["auc_empty"]["auc"] is None
    assert config_run["run"]["weights"]["auc_ctr_weighted"]["column"] == "weight"
    jsonschema.validate(config_run, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_the_command_line_flags_validate(rows_file: Path, tmp_path: Path) -> None:
    result = evaluate(["--metrics", ",".join(NAMES), "--tag", "tag", "--compare", "pred_b",
                       str(rows_file)], tmp_path)
    assert sorted(result) == sorted([*NAMES, "run"])
    jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("kind", WINDOWED)
def test_windows_of_the_trainer_api_validate(kind: str) -> None:
    metric = build(kind, {**fixture(kind).fast_options, "window": 50})
    metric.update(**fixture(kind).plain_rows(np.random.default_rng(5), 200))
    with warnings.catch_warnings():  # bucket error over 200 rows: beside the point
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = json.loads(json.dumps(Evaluator.to_dict(Evaluator({"m": metric}).compute())))
    assert "window" in result["m"]
    jsonschema.validate(result, SCHEMA, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("path, value", [
    (("auc_ctr", "auc"), "0.7"),                    # a number written as text
    (("auc_ctr", "ci95", "auc"), [0.1]),            # an interval that is not a pair
    (("wuauc_users", "tags", "all", "valid_user_count"), 1.5),
    (("pairwise_pairs", "kind"), "pair"),           # an unknown kind
    (("ranking_ranked", "tags", "all", "ndcg@0"), 0.5),  # a cutoff that cannot be
    (("auc_ctr", "score_histogram"), [[0, 1, -1, 0]]),  # a negative weight sum
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


def test_every_shared_name_of_the_schema_is_in_the_reference() -> None:
    shared = {name: part for name, part in SCHEMA["$defs"].items()
              if not any(name == kind or name.startswith(kind + "_") for kind in NAMES)}
    documented = set(re.findall(r"`([a-z_0-9@]+)`", REFERENCE))
    missing = sorted(_names(shared) - documented)
    assert not missing, f"names of the schema missing from docs/json.md: {missing}"


@pytest.mark.parametrize("kind", NAMES)
def test_every_name_of_a_kinds_fragment_is_on_its_page(kind: str) -> None:
    page = (ROOT / "docs" / "kinds" / f"{kind}.md").read_text()
    documented = set(re.findall(r"`([a-z_0-9@]+)`", page)) | {"kind"}  # every block's (json.md)
    missing = sorted(_names(KINDS[kind].schema()) - documented)
    assert not missing, f"names of {kind}'s schema missing from docs/kinds/{kind}.md: {missing}"


def _block(fragment: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node``, or the definition of the fragment it refers to (``$ref``)."""
    ref = node.get("$ref")
    return fragment["$defs"][ref.rsplit("/", 1)[1]] if ref else node


def _declares(block: dict[str, Any], name: str) -> bool:
    """Whether a block's schema names the field ``name`` (a property or a pattern's)."""
    return name in block.get("properties", {}) or any(
        re.search(pattern, name) for pattern in block.get("patternProperties", {}))


@pytest.mark.parametrize("kind", NAMES)
def test_a_kinds_fragment_agrees_with_its_declaration_and_result(kind: str) -> None:
    """Its ``$defs`` are named after the kind; ``Kind.required`` (and ``tag_required``) are
    fields of its block (of each tag block); every field of its blocks is a field of the
    result's JSON (made with the default options and each of the fixture's variants)."""
    declared, fragment = KINDS[kind], KINDS[kind].schema()
    assert set(fragment) == {"$defs"} and kind in fragment["$defs"]
    assert all(name == kind or name.startswith(kind + "_") for name in fragment["$defs"])
    block = fragment["$defs"][kind]
    assert block["properties"]["kind"] == {"const": kind}
    assert [name for name in declared.required if not _declares(block, name)] == []
    tag_block = None
    if declared.tag_required is not None:
        tag_block = _block(fragment, block["properties"]["tags"]["additionalProperties"])
        assert [name for name in declared.tag_required if not _declares(tag_block, name)] == []
    fields: set[str] = set()
    tag_fields: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for options in ({}, *fixture(kind).variants):
            metric = build(kind, {**fixture(kind).fast_options, **options})
            metric.update(**fixture(kind).rows_for(options, np.random.default_rng(2), 400))
            result = metric.compute().to_dict()
            fields |= set(result)
            for tag in result.get("tags", {}).values():
                tag_fields |= set(tag)
    assert sorted(set(block["properties"]) - fields) == []
    if tag_block is not None:
        assert sorted(set(tag_block["properties"]) - tag_fields) == []
