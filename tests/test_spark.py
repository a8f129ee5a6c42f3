"""mpieval.spark against ``mpieval eval --json`` on the same rows: every kind, tags,
compare, weights, uneven and empty partitions, a heavy user, bad input, saved states that
merge with MPI runs' (Spark in local mode, ``local[2]``; one session for the module)."""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime (scripts/setup installs it)", allow_module_level=True)
pytestmark = pytest.mark.filterwarnings("ignore::mpieval.errors.UndefinedMetricWarning")

from test_docs_schema import config as docs_schema_config  # noqa: E402

from mpieval import cli  # noqa: E402
from mpieval.errors import InputError  # noqa: E402
from mpieval.kinds import KINDS  # noqa: E402
from mpieval.spark import evaluate, rounds  # noqa: E402

# Every kind with its options, from the registry (each fixture's config tables: tags, a
# compared model, weights), and what a config adds: importance weights, a mask, filters.
CONFIG = docs_schema_config() + """
[metrics.ctr_importance]
kind = "auc"
weight = "weight"
weights = "importance"
table_size = 500

[metrics.masked]
kind = "wuauc"
tag = "tag"
mask = "left_label"

[metrics.filtered]
kind = "auc"
filters = { tag = "b" }
"""


def test_the_config_has_every_kind() -> None:
    assert {line.split('"')[1] for line in CONFIG.splitlines()
            if line.startswith("kind")} == set(KINDS)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("mpieval-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def table(rng: np.random.Generator, n: int, *, users: int = 60,
          heavy: float = 0.0) -> pa.Table:
    """Rows of every column the config reads: text uids (a heavy user holds ``heavy`` of
    the rows), preds (some float32 values, some not), 0/1 labels and grades, tags,
    weights."""
    uid = rng.integers(0, users, n)
    uid[: int(heavy * n)] = users  # the heavy user
    pred = rng.random(n)
    pred[::3] = np.round(pred[::3] * 64) / 64  # float32 values: kept narrow per partition
    label = (rng.random(n) < pred).astype(np.int64)
    return pa.table({
        "uid": pa.array([f"u{u}" for u in uid]),
        "pred": pred,
        "pred_b": np.clip(pred + rng.normal(0, 0.2, n), 0, 1),
        "label": label,
        "grade": label * rng.integers(1, 3, n),
        "left_label": rng.integers(0, 2, n),
        "right_label": rng.integers(0, 2, n),
        "tag": pa.array(rng.choice(["a", "b", "c"], n)),
        "weight": rng.integers(1, 4, n).astype(np.float64),
    })


def cli_json(tmp_path, data: pa.Table, *args: str) -> dict:
    """``mpieval eval --json`` of ``data`` (a Parquet file), without its ``run`` block."""
    path = tmp_path / "rows.parquet"
    pq.write_table(data, path)
    out = tmp_path / "cli.json"
    assert cli.main(["eval", str(path), *args, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    del result["run"]
    return result


def frame(spark, data: pa.Table, partitions: int):
    return spark.createDataFrame(data).repartition(partitions)


def partitioned(spark, data: pa.Table, partition_of_row: list[int]):
    """``data`` in the partitions given row by row (uneven, or empty ones)."""
    count = max(partition_of_row) + 1
    placed_rows = list(zip(partition_of_row, data.to_pylist(), strict=True))
    rows = spark.sparkContext.parallelize(placed_rows)
    placed = rows.partitionBy(count, lambda index: index).values()
    return spark.createDataFrame(placed.map(lambda row: tuple(row.values())),
                                 spark.createDataFrame(data.slice(0, 1)).schema)


@pytest.fixture(scope="module")
def config_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("config") / "every.toml"
    path.write_text(CONFIG)
    return str(path)


def test_every_kind_equals_the_command_line_to_the_bit(spark, tmp_path, config_path) -> None:
    data = table(np.random.default_rng(1), 3000)
    want = cli_json(tmp_path, data, "--config", config_path)
    got = evaluate(frame(spark, data, 3), config=config_path)
    assert json.loads(got.to_json()) == want
    assert got.to_json() == json.dumps(want, indent=2) + "\n"
    assert got.rows == 3000


def test_uneven_and_empty_partitions_and_a_heavy_user(spark, tmp_path, config_path) -> None:
    data = table(np.random.default_rng(2), 2000, users=5, heavy=0.1)
    want = cli_json(tmp_path, data, "--config", config_path)
    uneven = partitioned(spark, data, [0] * 10 + [2] * 1800 + [3] * 190)  # 1 is empty
    assert uneven.rdd.glom().map(len).collect() == [10, 0, 1800, 190]
    # the per-user metrics' shuffle: 6 users (one of 10% of the rows) in 7 partitions
    got = evaluate(uneven, config=config_path, partitions=7)
    assert json.loads(got.to_json()) == want
    summed = cli_json(tmp_path, data, "--metrics", "auc,pairwise")
    assert evaluate(uneven, metrics="auc,pairwise").to_dict() == summed  # no shuffle


def test_flags_as_keywords(spark, tmp_path) -> None:
    """... and the session's Arrow batch size is its own again afterwards."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "777")
    data = table(np.random.default_rng(3), 1500)
    want = cli_json(tmp_path, data, "--metrics", "auc,wuauc,ranking", "--tag", "tag",
                    "--k", "2,4", "--table-size", "300", "--name", "job")
    got = evaluate(frame(spark, data, 2), metrics="auc,wuauc,ranking", tag="tag", k="2,4",
                   table_size=300, name="job")
    assert got.to_dict() == want
    assert got.log_lines()[0].startswith("job: auc=")
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "777"
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


def test_bad_input_is_the_command_lines_error(spark, tmp_path) -> None:
    data = table(np.random.default_rng(5), 400)
    bad = data.set_column(1, "pred", pa.array(np.r_[data["pred"].to_numpy()[:-1], 1.5]))
    path = tmp_path / "bad.parquet"
    pq.write_table(bad, path)
    from mpieval import pipeline
    from mpieval.comm import Comm

    with pytest.raises(InputError) as cli_error:  # the command line's, before its one line
        specs = cli.specs_from_args(cli.build_parser().parse_args(
            ["eval", str(path), "--metrics", "wuauc"]))
        pipeline.evaluate(pipeline.plan_job(specs, [str(path)], 1), Comm.local())
    with pytest.raises(InputError) as spark_error:
        evaluate(frame(spark, bad, 2), metrics="wuauc")
    assert spark_error.value.problem == cli_error.value.problem
    assert spark_error.value.column == cli_error.value.column == "pred"
    assert "DataFrame, partition " in str(spark_error.value)


def test_bad_options_and_columns(spark) -> None:
    df = spark.createDataFrame([("u", 0.5, 1)], ["uid", "pred", "label"])
    with pytest.raises(InputError, match="--weights: is about the --weight column"):
        evaluate(df, weights="importance")
    with pytest.raises(InputError, match="column tag: not found"):
        evaluate(df, metrics="wuauc", tag="tag")
    with pytest.raises(InputError, match="colour: is not a column or option"):
        evaluate(df, colour="red")
    with pytest.raises(InputError, match="metrics: cannot be used with config"):
        evaluate(df, metrics="auc", config="x.toml")


def test_a_spark_state_merges_with_an_mpi_runs(spark, tmp_path, config_path) -> None:
    rng = np.random.default_rng(6)
    first, second = table(rng, 900), table(rng, 700)
    both = pa.concat_tables([first, second])
    want = cli_json(tmp_path, both, "--config", config_path)
    spark_state, mpi_state = str(tmp_path / "spark"), str(tmp_path / "mpi")
    evaluate(frame(spark, first, 3), config=config_path, save_state=spark_state,
             partitions=3)
    path = tmp_path / "second.parquet"
    pq.write_table(second, path)
    assert cli.main(["eval", str(path), "--config", config_path,
                     "--save-state", mpi_state]) == 0
    for order in ([spark_state, mpi_state], [mpi_state, spark_state]):
        out = tmp_path / "merged.json"
        assert cli.main(["merge", *order, "--json", str(out)]) == 0
        merged = json.loads(out.read_text())
        assert merged["run"]["rows"] == 1600
        del merged["run"]
        assert merged == want


def test_partition_rounds_alone() -> None:
    """Two answers combine whatever their order; the lower partition's error wins."""
    low = rounds.Part(1, rows=2, part=np.array([1.0, 2.0]), error=(1, InputError("a", "x")))
    high = rounds.Part(4, rows=3, part=np.array([0.5, 0.0]), error=(4, InputError("b", "y")))
    for first, second in ((low, high), (high, low)):
        both = rounds.combine(first, second)
        assert (both.partition, both.rows, list(both.part)) == (1, 5, [1.5, 2.0])
        assert both.error[1].field == "a"


def test_the_command_line_over_spark(spark, tmp_path, capsys) -> None:
    data = table(np.random.default_rng(7), 1000)
    path = tmp_path / "rows.tsv"
    columns = data.column_names
    lines = ["\t".join(columns)] + ["\t".join(str(row[c]) for c in columns)
                                    for row in data.to_pylist()]
    path.write_text("\n".join(lines) + "\n")
    spark.createDataFrame(data).createOrReplaceTempView("dumps")
    outputs = {}
    for engine, inputs in (("mpi", [str(path)]), ("spark", [str(path)]),
                           ("spark", ["table:dumps"])):
        out = tmp_path / "out.json"
        capsys.readouterr()
        assert cli.main(["eval", *inputs, "--metrics", "auc,wuauc", "--tag", "tag",
                         "--json", str(out), "--engine", engine]) == 0
        result = json.loads(out.read_text())
        run = result.pop("run")
        assert (run["rows"], run["inputs"]) == (1000, inputs)
        outputs[engine, inputs[0]] = (result, capsys.readouterr().out)
    want = outputs["mpi", str(path)]
    assert outputs["spark", str(path)] == want
    assert outputs["spark", "table:dumps"][0] == want[0]  # numbers typed: the same bits too


def test_engine_flags() -> None:
    from mpieval.spark.submit import arguments

    assert arguments(["eval", "f.tsv"]) == ["eval", "f.tsv", "--engine", "spark"]
    assert arguments(["merge", "d"]) == ["merge", "d"]
    assert cli.main(["eval", "f.tsv", "--spark-master", "local[1]"]) == 2


def test_a_missing_table_is_bad_input(spark, capsys) -> None:
    assert cli.main(["eval", "table:no_such_dumps", "--engine", "spark"]) == 2
    assert "mpieval: error: table:no_such_dumps: " in capsys.readouterr().err
