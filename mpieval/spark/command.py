"""``mpieval eval --engine spark FILE... | table:NAME``: the command line over Spark.

The files (TSV/CSV with a header row, optionally gzip, or Parquet; local paths or the
URIs the cluster's Spark reads) or a table of the session's catalog (``table:NAME``, a
Hive table) are read by Spark and evaluated by :func:`mpieval.spark.run`; the log lines,
``--json``, ``--report`` and ``--save-state`` are the command line's. Spark is a local
session (``local[*]``) unless ``--spark-master`` names one; under ``spark-submit``
(:mod:`mpieval.spark.submit`) the session is the one spark-submit set up.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from mpieval import pipeline, readers
from mpieval.comm import Comm
from mpieval.config import MetricSpec, column_types
from mpieval.errors import InputError

TABLE = "table:"


def run_eval(args: argparse.Namespace, comm: Comm, specs: list[MetricSpec],
             invocation: pipeline.Invocation | None = None) -> int:
    """``mpieval eval --engine spark`` of the metrics ``specs`` (its flags'): returns the
    exit status."""
    from mpieval import spark

    if comm.size > 1:
        raise InputError("--engine spark", "runs in one process (Spark's executors do the "
                         "work): start it without mpiexec")
    if args.json:
        pipeline.check_writable(args.json)
    if args.report:
        from mpieval import report

        report.require_plotting()
        report.check_output(args.report, "--report")
    session = spark_session(args.spark_master)
    from pyspark.errors import AnalysisException

    try:
        df, source = read(session, args.files, args.format, specs)
    except AnalysisException as error:  # no such table, file or column
        raise InputError(", ".join(args.files), _first_line(error)) from None

    def record(ranks: int, rows: int, results: Any) -> dict[str, Any]:
        assert invocation is not None
        return pipeline.run_record(invocation, ranks, rows, pipeline.weight_entries(
            pipeline.weight_meanings(specs), results))

    ran = spark.run(df, specs, save_state=args.save_state, source=source,
                    record=None if invocation is None else record)
    pipeline.output(specs, dict(ran.results), args.json, args.report,
                    run=None if invocation is None else
                    lambda: record(ran.results.partitions, ran.rows, ran.results))
    return 0


def _first_line(error: BaseException) -> str:
    """Spark's message without its query plan and stack."""
    return str(error).strip().splitlines()[0]


def spark_session(master: str | None) -> Any:
    """The Spark session: ``master`` when given; under ``spark-submit`` the one it set up;
    else a local one (``local[*]``), whose Python workers run this interpreter."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.appName("mpieval")
               .config("spark.ui.showConsoleProgress", "false"))  # stderr: mpieval's lines
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # not started by spark-submit
        builder = builder.master("local[*]")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def read(session: Any, inputs: Sequence[str], forced: str | None,
         specs: Sequence[MetricSpec]) -> tuple[Any, str]:
    """The rows of ``inputs`` as one DataFrame, and how errors name them: a table
    (``table:NAME``, alone), or files of one format. Text is read as text and each
    number column cast (a value that is not a number is then a null value of its row)."""
    tables = [name for name in inputs if name.startswith(TABLE)]
    if tables:
        if len(inputs) > 1:
            raise InputError(tables[0], "a table is read alone (one table, no files)")
        return session.table(tables[0][len(TABLE):]), tables[0]
    formats = {readers.file_format(path, forced) for path in inputs}
    if len(formats) > 1:
        raise InputError("FILE", f"files of one format, got {', '.join(sorted(formats))}")
    fmt = formats.pop()
    source = inputs[0] if len(inputs) == 1 else f"{inputs[0]} and {len(inputs) - 1} more"
    if fmt == "parquet":
        return session.read.parquet(*inputs), source
    from pyspark.sql import functions

    df = session.read.csv(list(inputs), header=True, sep="\t" if fmt == "tsv" else ",",
                          inferSchema=False)
    numbers = {"float": "double", "int": "bigint"}
    casts = {column: numbers[kind] for column, kind in column_types(specs).items()
             if kind in numbers and column in df.columns}
    return df.withColumns({column: functions.col(column).try_cast(to)
                           for column, to in casts.items()}), source
