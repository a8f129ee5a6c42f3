"""Metrics over a Spark DataFrame, with the results of ``mpieval eval`` on the same rows.

::

    from mpieval.spark import evaluate
    results = evaluate(spark.table("ads.dumps"), metrics="auc,wuauc", uid="user", tag="slot")
    print(results.to_json())          # what mpieval eval --json writes, without "run"

The work stays on the executors; the driver receives one small state per round
(:mod:`mpieval.spark.rounds`). A job whose metrics keep rows per user (``wuauc``, ``pn``,
``ranking``) is first repartitioned by the uid column (Spark's shuffle moves each user's
rows to one partition, as :mod:`mpieval.exchange` moves them to one rank over MPI); each
partition then counts its users into exact sums, and the sums are added in a tree on the
executors (``treeAggregate``). A job with tags runs a first, light pass that finds them.
The metrics without rows (``auc``, ``pairwise``) count any partitioning as it is.

Needs the ``spark`` extra (pyspark 4); pyspark is imported only by this package, and
mpieval must be installed where the executors' Python runs.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from mpieval import locations
from mpieval.config import MetricSpec, column_types, load_config, specs_from_flags
from mpieval.errors import InputError
from mpieval.metric import Evaluator, Result
from mpieval.spark import rounds

__all__ = ["SparkResults", "evaluate"]

ARROW_BATCH_ROWS = 1 << 17
"""Rows of each Arrow batch a partition is handed while mpieval runs (Spark's
``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000 by default): fewer, larger
updates (a pass over 1M rows took 5.3 s instead of 8.6 s)."""


class SparkResults(Mapping[str, Result]):
    """The results by metric name, as the trainer API's (:meth:`mpieval.Evaluator.compute`),
    with the job's rows and partitions."""

    def __init__(self, results: Mapping[str, Result], rows: int, partitions: int,
                 prefixes: Mapping[str, str] | None = None) -> None:
        self._results = dict(results)
        self._prefixes = dict(prefixes or {})
        self.rows = rows
        self.partitions = partitions

    def __getitem__(self, name: str) -> Result:
        return self._results[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The JSON object of ``mpieval eval --json`` without its ``run`` block."""
        return Evaluator.to_dict(self._results)

    def to_json(self) -> str:
        """:meth:`to_dict` as the text ``mpieval eval --json`` writes."""
        return locations.json_text(self.to_dict())

    def log_lines(self) -> list[str]:
        """The Abacus log lines, in order (each metric's prefix: ``name``, or its own)."""
        return [line for name, result in self._results.items()
                for line in result.to_log_line(self._prefixes.get(name, name)).splitlines()]


def evaluate(df: Any, metrics: str | None = None, *, config: str | None = None,
             name: str | None = None, partitions: int | None = None,
             save_state: str | None = None, **columns: Any) -> SparkResults:
    """The metrics over the rows of the Spark DataFrame ``df``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The rows; each metric reads its columns by name (as ``mpieval eval``'s flags).
    metrics : str, optional
        A comma list of kinds, as ``--metrics`` (default ``auc``).
    config : str, optional
        A TOML config of named metrics, as ``--config`` (not with ``metrics``).
    name : str, optional
        The log lines' prefix, as ``--name``.
    partitions : int, optional
        How many partitions a job with per-user metrics is shuffled into (default: the
        session's ``spark.default.parallelism``).
    save_state : str, optional
        A directory (or URI) to save the run's state in, as ``--save-state``: each
        partition's state as a rank's, for ``mpieval merge`` with MPI runs' states.
    **columns
        The kinds' columns and options by their flags' names: ``pred="ctr"``,
        ``uid="user"``, ``tag="slot"``, ``weight="w"``, ``weights="importance"``,
        ``compare="pred_b"``, ``table_size=1000``, ``ties="half"``, ``k="5,10"``...

    Returns
    -------
    SparkResults
        The results by metric name; ``to_json()`` is ``mpieval eval --json``'s text on the
        same rows without the ``run`` block.

    Raises
    ------
    InputError
        A bad option, a missing column or bad data, as the command line reports it (a row
        is named ``DataFrame, partition P: row N``).
    """
    specs = metric_specs(metrics, config, name, columns)
    return run(df, specs, partitions=partitions, save_state=save_state).results


def metric_specs(metrics: str | None, config: str | None, name: str | None,
                 columns: Mapping[str, Any]) -> list[MetricSpec]:
    """The metrics of :func:`evaluate`'s arguments, checked as the command line's flags."""
    if config is not None:
        given = ["metrics" if metrics is not None else None, "name" if name else None,
                 *columns]
        extra = [word for word in given if word]
        if extra:
            raise InputError(extra[0], "cannot be used with config (say it in the config)")
        return load_config(config)
    from mpieval.declaration import Input
    from mpieval.kinds import KINDS

    inputs: dict[str, str | None] = {}
    options: dict[str, Any] = {}
    for kind in KINDS.values():  # as the command line's flags set them
        for spec in kind.flagged:
            value = columns.get(spec.name)
            if isinstance(spec, Input):
                inputs[spec.name] = value
            elif value is not None and spec.parse is not None and isinstance(value, str):
                options[spec.name] = spec.parse(value)
            else:
                options[spec.name] = value
    unknown = sorted(set(columns) - {*inputs, *options})
    if unknown:
        raise InputError(unknown[0], "is not a column or option of any kind (known: "
                         f"{', '.join(sorted({*inputs, *options}))})")
    return specs_from_flags(metrics or "auc", columns=inputs, options=options, prefix=name)


@dataclass(frozen=True)
class Run:
    """A job's results, the rows it read and the partitions it computed in."""

    results: SparkResults
    rows: int


def run(df: Any, specs: list[MetricSpec], *, partitions: int | None = None,
        save_state: str | None = None, source: str = "DataFrame",
        record: Callable[[int, int, dict[str, Result]], dict[str, Any] | None] | None = None
        ) -> Run:
    """The metrics ``specs`` over ``df``: the tags' pass when a per-user metric has tags,
    then a round per sum (:mod:`mpieval.spark.rounds`). ``record(partitions, rows,
    results)``: the ``run`` object a saved state keeps."""
    types = column_types(specs)
    _check_columns(df, types)
    users = {column for spec in specs if rounds.has_rows(spec)
             for column in [rounds.user_column(spec)] if column is not None}
    if len(users) > 1:
        raise InputError("uid", f"a Spark run groups its rows by one uid column; these "
                         f"metrics read {sorted(users)}: evaluate them in separate runs")
    rows_df = df.select(*types)
    plan = rounds.Plan(specs=specs, types=types, save_state=save_state, source=source)
    tagged = rounds.tagged(specs)
    with _arrow_batches(rows_df.sparkSession.conf, ARROW_BATCH_ROWS):
        if tagged:
            found = _pass(rows_df, functools.partial(_tags_partition, tagged, types, source))
            plan = rounds.Plan(**{**plan.__dict__, "tags": found.tags})
        if users:
            count = partitions or rows_df.sparkSession.sparkContext.defaultParallelism
            rows_df = rows_df.repartition(count, users.pop())
        count = rows_df.rdd.getNumPartitions()
        if save_state is not None:
            _begin_save(save_state)
        rows = None
        while True:
            own = rounds.driver_round(plan)
            if isinstance(own, dict):
                break
            answer = _pass(rows_df, functools.partial(_round_partition, plan))
            rows = answer.rows if rows is None else rows
            plan = rounds.Plan(**{**plan.__dict__,
                                  "answers": [*plan.answers, rounds.total(own, answer)]})
    if save_state is not None:
        _finish_save(save_state, specs, count, rows or 0,
                     None if record is None else record(count, rows or 0, own))
    prefixes = {spec.name: spec.log_prefix for spec in specs}
    return Run(SparkResults(own, rows or 0, count, prefixes), rows or 0)


@contextlib.contextmanager
def _arrow_batches(conf: Any, rows: int) -> Iterator[None]:
    """The session's Arrow batches of ``rows`` rows while mpieval runs, then as they were."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    previous = conf.get(key, None)
    conf.set(key, str(rows))
    try:
        yield
    finally:
        if previous is None:
            conf.unset(key)
        else:
            conf.set(key, previous)


def _check_columns(df: Any, types: Mapping[str, str]) -> None:
    """Every column a metric reads is in ``df`` (the command line's message)."""
    present = set(df.columns)
    for column in types:
        if column not in present:
            raise InputError(f"column {column}", f"not found (the DataFrame has "
                             f"{', '.join(df.columns)})")


def _pass(df: Any, function: Any) -> rounds.Part:
    """One pass over ``df``: ``function`` on each partition's Arrow batches, the answers
    combined on the executors in a tree, the first partition's error raised."""
    out = df.mapInArrow(function, "part binary")
    empty = rounds.Part(partition=1 << 62)
    combined = out.rdd.map(_decode_row).treeAggregate(empty, rounds.combine, rounds.combine)
    return rounds.raise_error(combined)


def _decode_row(row: Any) -> rounds.Part:
    return rounds.decode(row[0])


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else context.partitionId()


def _tags_partition(specs: Sequence[MetricSpec], types: Mapping[str, str], source: str,
                    record_batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    partition = _partition_id()
    where = f"{source}, partition {partition}"
    yield rounds.encode(rounds.tag_values(
        specs, partition, rounds.batches(record_batches, types, where)))


def _round_partition(plan: rounds.Plan, record_batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    partition = _partition_id()
    where = f"{plan.source}, partition {partition}"
    yield rounds.encode(rounds.partition_round(
        plan, partition, rounds.batches(record_batches, plan.types, where)))


def _begin_save(directory: str) -> None:
    """As ``--save-state`` begins: the directory made, an earlier run's ``run.json``
    removed (until the new one is written, the directory is an unfinished save)."""
    from mpieval import locations
    from mpieval.saved_runs import RUN_FILE

    locations.make_directory(directory)
    locations.remove(locations.join(directory, RUN_FILE))


def _finish_save(directory: str, specs: Sequence[MetricSpec], ranks: int, rows: int,
                 run: Mapping[str, Any] | None = None) -> None:
    """The saved run's description, as :func:`mpieval.saved_runs.save_run` writes it, a
    partition a rank; an earlier run's states of more ranks removed."""
    from mpieval import locations
    from mpieval.saved_runs import RUN_FILE, _state_names

    for name in _state_names(directory):
        if int(name[len("state-"):-len(".npz")]) >= ranks:
            locations.remove(locations.join(directory, name))
    description = {"ranks": ranks, "rows": rows, "metrics": [
        {"name": spec.name, "kind": spec.kind, "prefix": spec.log_prefix,
         **({"weight": {"column": spec.columns["weight"],
                        "meaning": spec.options.get("weights", "frequency")}}
            if "weight" in spec.columns else {})}
        for spec in specs], **({"run": dict(run)} if run is not None else {})}
    locations.write_json(locations.join(directory, RUN_FILE), description, flag="--save-state")
