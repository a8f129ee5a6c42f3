"""What a Spark partition computes, and how the driver joins the partitions: no pyspark
here (the executors' half and the driver's half of :mod:`mpieval.spark`, testable alone).

A partition is a rank alone: it feeds its rows to the metrics as the command line feeds a
rank's batches (:class:`mpieval.pipeline.Task`), then runs the metrics' own compute
(:func:`mpieval.metric.compute_all`) on a :class:`RoundComm`, one rank without MPI whose
sums are the job's. Every other collective of a compute is answered locally, which is
right because the driver made every partition's view the job's beforehand:

- the rows of a user are in one partition (the Spark shuffle by the uid column did the
  exchange that :mod:`mpieval.exchange` does over MPI), so moving rows to their owner
  moves nothing;
- a per-user metric knows every tag of the job before its first row
  (:func:`tag_values` in a first pass, :func:`seed_tags`), so the tags a rank agrees on
  alone are the job's.

Sums are rounds. In round ``k`` a partition computes with the totals of the sums before
it (``answers``) and ends at its ``k``-th sum, returning that part (:class:`RoundEnd`);
the driver adds the parts and its own (:func:`driver_round`: the driver is a rank with no
rows). Most computes sum once (one round over the data); one that sums again in its
finish (``auc`` with ``compare``: the paired spread needs the summed tables) takes a
round more. The parts are exact sums (:mod:`mpieval.kernels.exact`) and counts, so they
add to the same bits in any order: the results are those of ``mpieval eval`` on any
partitioning.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

from mpieval import checkpoint, locations
from mpieval.comm import Comm
from mpieval.config import MetricSpec
from mpieval.errors import InputError, OutputError, StoreError, UidCollisionError
from mpieval.kinds import kind_named
from mpieval.metric import Evaluator, Metric, Result, compute_all
from mpieval.pipeline import Task
from mpieval.readers import Batch
from mpieval.readers.parquet import _check_parquet_column
from mpieval.saved_runs import state_file
from mpieval.state import Rows
from mpieval.tags import TagCodes
from mpieval.user_rows import UserRowsMetric

# Errors a partition reports to the driver, which raises the first partition's: as the
# command line's ranks agree on the lowest rank's error.
REPORTED = (InputError, UidCollisionError, StoreError, OutputError)


class RoundEnd(BaseException):
    """A compute stopped at the sum the driver has no total for yet: ``part`` is this
    rank's part of it. A BaseException, so that no handler of the compute takes it."""

    def __init__(self, part: np.ndarray) -> None:
        super().__init__("round ended")
        self.part = part


class RoundComm(Comm):
    """One rank without MPI whose ``k``-th :meth:`sum` returns the job's total
    ``answers[k]``, and past the answers given ends the round (:class:`RoundEnd`)."""

    sums_only = True

    def __init__(self, answers: Sequence[np.ndarray]) -> None:
        self._transport = None
        self._set_size()
        self._answers = list(answers)
        self._sums = 0

    def sum(self, buffer: np.ndarray, *, scratch: bool = False) -> np.ndarray:
        local = np.ascontiguousarray(buffer, dtype=np.float64)
        if self._sums == len(self._answers):
            raise RoundEnd(local.copy())
        total = self._answers[self._sums]
        self._sums += 1
        if total.shape != local.shape:  # pragma: no cover - every rank sums one layout
            raise RuntimeError(f"sum {self._sums}: {local.shape} here, {total.shape} in total")
        return total.copy()


@dataclass(frozen=True)
class Plan:
    """What every partition of a round is given (pickled once per round)."""

    specs: list[MetricSpec]
    types: dict[str, str]  # column -> how it is read (mpieval.config.column_types)
    tags: dict[str, list[Any]] = field(default_factory=dict)  # metric -> the job's tags
    answers: list[np.ndarray] = field(default_factory=list)  # totals of the earlier sums
    save_state: str | None = None  # round 0 writes each partition's state there
    source: str = "DataFrame"  # names the rows in errors


@dataclass(frozen=True)
class Part:
    """What a partition returns, and what partitions' answers add to
    (:func:`combine`)."""

    partition: int  # the lowest partition it covers
    rows: int = 0
    part: np.ndarray | None = None  # the part of the round's sum; None: the compute ended
    tags: dict[str, list[Any]] = field(default_factory=dict)  # tag_values' pass
    error: tuple[int, BaseException] | None = None  # the first partition's error


def combine(first: Part, second: Part) -> Part:
    """Two answers as one: rows and parts added (exact: in any order the same bits), tags
    joined, the error of the lower partition kept (as ranks agree on the lowest rank's)."""
    errors = [part.error for part in (first, second) if part.error is not None]
    if first.part is None or second.part is None:
        summed = first.part if second.part is None else second.part
    else:
        summed = first.part + second.part
    tags = {name: sorted({*first.tags.get(name, ()), *second.tags.get(name, ())})
            for name in {*first.tags, *second.tags}}
    return Part(min(first.partition, second.partition), first.rows + second.rows, summed,
                tags, min(errors, key=lambda error: error[0]) if errors else None)


def has_rows(spec: MetricSpec) -> bool:
    """Whether the metric keeps rows until compute (a per-user kind, or ``auc`` with
    ``compare``): a metric whose kind reads a uid then needs each user in one partition."""
    metric = kind_named(spec.kind).build(spec.options, Comm.local())
    return any(isinstance(part, Rows) for part in metric.state.layout.values())


def user_column(spec: MetricSpec) -> str | None:
    """The column of the uid the metric groups its rows by, or None."""
    ids = kind_named(spec.kind).ids
    return next((column for arg, column in spec.columns.items() if arg in ids), None)


def tagged(specs: Iterable[MetricSpec]) -> list[MetricSpec]:
    """The per-user metrics with a tag column, whose tags :func:`tag_values` finds first."""
    return [spec for spec in specs if user_column(spec) is not None
            and any(arg in kind_named(spec.kind).names for arg in spec.columns)]


# -- the executors' half -------------------------------------------------------------------


def batches(record_batches: Iterable[pa.RecordBatch], types: Mapping[str, str],
            where: str) -> Iterator[Batch]:
    """Arrow record batches of a partition as the readers' batches: every column checked
    as a Parquet file's is (no null, a type that fits its use), rows located as
    ``WHERE: row N`` from 1 (a partition's rows in the order Spark gives them)."""
    first = 0
    for record_batch in record_batches:
        columns = {}
        for name in record_batch.schema.names:
            array = record_batch.column(name)
            if pa.types.is_dictionary(array.type):
                array = array.dictionary_decode()
            if pa.types.is_large_string(array.type):
                array = array.cast(pa.string())
            columns[name] = array
        file: Any = SimpleNamespace(path=where)  # what the check reads of a file
        for column, kind in types.items():
            _check_parquet_column(file, column, kind, columns[column], first)
        yield Batch(path=where, columns=columns, rows=record_batch.num_rows, bytes=0,
                    _locate=lambda row, offset=first: f"{where}: row {offset + row + 1}")
        first += record_batch.num_rows


def tag_values(specs: Sequence[MetricSpec], partition: int, batches: Iterable[Batch]) -> Part:
    """The first pass of a job with tagged per-user metrics (:func:`tagged`): each one's
    tag values among the rows that count (its mask and filters) in this partition."""
    tasks = [Task(spec, kind_named(spec.kind).build(spec.options, Comm.local()))
             for spec in specs]
    found: dict[str, set[Any]] = {spec.name: set() for spec in specs}
    try:
        for batch in batches:
            for task in tasks:
                keep = task.rows(batch)
                column = next(column for arg, column in task.spec.columns.items()
                              if arg in task.kind.names)
                coded = batch.names(column)
                values, _ = TagCodes().check(coded if keep is None else coded[keep],
                                             batch.rows if keep is None else int(keep.sum()))
                found[task.spec.name].update(values)
    except REPORTED as error:
        return Part(partition, error=(partition, error))
    return Part(partition, tags={name: sorted(values) for name, values in found.items()})


def seed_tags(metric: Metric, tags: Sequence[Any] | None) -> None:
    """A fresh per-user metric that knows the job's tags before its rows: the tags it then
    agrees on alone are the job's, each partition's sums of the same layout."""
    if tags and isinstance(metric, UserRowsMetric):
        metric._tags = TagCodes(list(tags))


def evaluator(plan: Plan) -> Evaluator:
    """The plan's metrics, fresh, on one rank of their own, knowing the job's tags."""
    metrics = {}
    for spec in plan.specs:
        metric = kind_named(spec.kind).build(spec.options, Comm.local())
        seed_tags(metric, plan.tags.get(spec.name))
        metrics[spec.name] = metric
    return Evaluator(metrics, Comm.local())


def partition_round(plan: Plan, partition: int, batches: Iterable[Batch]) -> Part:
    """A partition's round: feed its rows, save its state (round 0, with ``save_state``),
    compute until the sum the plan has no total for, and return its part of it."""
    metrics = evaluator(plan)
    tasks = [Task(spec, metrics[spec.name]) for spec in plan.specs]
    rows = 0
    try:
        for batch in batches:
            rows += batch.rows
            for task in tasks:
                task.feed(batch)
        if plan.save_state is not None and not plan.answers:
            save_partition(plan.save_state, partition, metrics)
        with warnings.catch_warnings():  # the driver's compute warns, once
            warnings.simplefilter("ignore")
            compute_all(dict(metrics), RoundComm(plan.answers))
    except RoundEnd as end:
        return Part(partition, rows=rows, part=end.part)
    except REPORTED as error:
        return Part(partition, rows=rows, error=(partition, error))
    return Part(partition, rows=rows)


def save_partition(directory: str, partition: int, metrics: Evaluator) -> None:
    """The partition's state as rank ``partition``'s of a saved run
    (:mod:`mpieval.saved_runs`): ``mpieval merge`` takes it with MPI runs' states."""
    try:
        locations.make_directory(directory)
        locations.write_atomically(state_file(directory, partition),
                                   checkpoint.to_bytes(metrics.state_dict()),
                                   flag="--save-state")
    except OSError as error:
        raise locations.output_failure("--save-state", locations.redact(directory),
                                       error) from None


def encode(part: Part) -> pa.RecordBatch:
    """A partition's answer as the one row of the round's output (``part binary``)."""
    return pa.RecordBatch.from_pydict({"part": [pickle.dumps(part)]},
                                      schema=pa.schema([("part", pa.binary())]))


def decode(value: bytes) -> Part:
    """A partition's answer from its row (:func:`encode`)."""
    part: Part = pickle.loads(value)
    return part


def raise_error(part: Part) -> Part:
    """The combined answer, or its error raised (the first partition's)."""
    if part.error is not None:
        raise part.error[1]
    return part


# -- the driver's half ---------------------------------------------------------------------


def driver_round(plan: Plan) -> np.ndarray | dict[str, Result]:
    """The driver as a rank with no rows: its part of the next sum the plan has no total
    for, or, once the plan answers every sum, the results (with the warnings of
    undefined values, as the command line's)."""
    try:
        return compute_all(dict(evaluator(plan)), RoundComm(plan.answers))
    except RoundEnd as end:
        return end.part


def total(own: np.ndarray, parts: Part) -> np.ndarray:
    """The round's sum: the driver's part and the partitions' (combined)."""
    if parts.part is None:  # pragma: no cover - every partition sums as often
        raise RuntimeError("the partitions ended their compute before the driver")
    summed: np.ndarray = own + parts.part
    return summed
