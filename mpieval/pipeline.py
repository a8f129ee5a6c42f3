"""The evaluation pipeline behind ``mpieval eval`` and ``mpieval demo``.

Rank 0 inspects the files and plans who reads what (:func:`plan_job`, :mod:`mpieval.split`)
and the plan is shared; every rank then reads its pieces (:mod:`mpieval.readers`) in
lockstep rounds (:func:`reading_rounds`) and feeds its metrics (:class:`Task`); after
every round the ranks sum a few counters, so that a bad line on any rank stops every rank
at once, and the per-user kinds move the round's rows to their users' owner ranks
(:meth:`mpieval.metric.Metric.move_rows`: a rank keeps its own users' rows once). Rank 0
prints the Abacus lines (:func:`print_results`), shows progress (:class:`Progress`) and
writes the JSON atomically (:func:`mpieval.locations.write_json`). Inputs and outputs may
be URIs (:mod:`mpieval.locations`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from mpieval import locations, memory, readers, split
from mpieval.comm import Comm
from mpieval.config import RUN_KEY, MetricSpec, column_types, column_uses
from mpieval.errors import DataError, InputError, OutputError, StoreError
from mpieval.kinds import kind_named
from mpieval.metric import Evaluator, Metric, Result
from mpieval.readers import Batch
from mpieval.slices import SlicedMetric
from mpieval.tags import dicts_as_written, gc_paused
from mpieval.validation import check_log_word

# File bytes a rank reads between two agreements with the others (see reading_rounds).
_ROUND_BYTES = 16 << 20


# -- planning (rank 0) -------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """What every rank needs to evaluate: planned on rank 0, then shared."""

    specs: list[MetricSpec]
    files: list[split.InputFile]
    pieces: list[list[split.Piece]]  # per rank
    types: dict[str, str]  # column -> float / int / string (text files)

    @property
    def total_bytes(self) -> int:
        return sum(file.weight for file in self.files)


def plan_job(specs: list[MetricSpec], paths: Sequence[str], ranks: int, *,
             forced_format: str | None = None, json_path: str | None = None,
             report_path: str | None = None) -> Job:
    """Check the metrics, the files and the output paths, and plan the reads (rank 0)."""
    for spec in specs:
        kind_named(spec.kind).load()  # a kind missing from this build fails here
        check_log_word(f"metric name {spec.name!r}" if not spec.prefix else "--name",
                       spec.log_prefix)
    types = column_types(specs)
    if json_path:
        check_writable(json_path)
    if report_path:
        from mpieval import report

        report.require_plotting()
        report.check_output(report_path, "--report")
    files = inspect_files(paths, forced_format, column_uses(specs))
    return Job(specs=specs, files=files, pieces=split.plan(files, ranks), types=types)


def inspect_files(paths: Sequence[str], forced: str | None, uses: dict[str, str]
                  ) -> list[split.InputFile]:
    """Every file inspected and checked for the columns in ``uses``; no file twice.

    A path or URI with glob characters names the files that match it on the store's
    listing (:func:`mpieval.locations.expand`); only rank 0 lists and inspects: the plan
    carries every file's size, header and row groups to the other ranks.
    """
    seen: dict[str, str] = {}
    files = []
    for path in (found for given in paths for found in locations.expand(given)):
        location = locations.locate(path)
        if location.key in seen:
            raise DataError(location.shown, f"is given twice (also as {seen[location.key]}): "
                            "its rows would count twice")
        seen[location.key] = location.shown
        file = readers.inspect(path, forced)  # the format from the name unless forced
        readers.check_columns(file, uses)
        files.append(file)
    return files


def check_writable(path: str, flag: str = "--json") -> None:
    """``path`` (a local path or a URI) can be written (checked before reading)."""
    locations.check_writable(path, flag)


# -- the job, every rank -----------------------------------------------------------------


Gate = Callable[[dict[str, Any]], bool]
"""A run's gate (``mpieval eval --gate``): given the results' JSON object, prints its lines,
adds its block and says whether it passed (:func:`mpieval.cli._gate_hook`)."""


def run_job(comm: Comm, make_job: Callable[[], Job], *, json_path: str | None,
            progress: bool = False, save_state: str | None = None, report_path: str | None = None,
            invocation: Invocation | None = None, gate: Gate | None = None) -> int:
    """Collective: plan on rank 0 (``make_job``), share the plan, evaluate, write the
    outputs; with ``save_state``, also save each rank's metric state there
    (:mod:`mpieval.saved_runs`). With ``invocation``, the JSON and the report have the
    run's ``run`` object (:func:`run_record`). With ``gate`` (:data:`Gate`), the status is
    ``mpieval.gate.FAILED`` (3) on every rank when it fails."""
    planned = comm.agreed(lambda: make_job() if comm.rank == 0 else None)
    job: Job = comm.allgather(planned)[0]
    done = evaluate_job(job, comm, progress=progress or (comm.rank == 0 and _tty()),
                        save_state=save_state, invocation=invocation)
    record = None if invocation is None else (
        lambda: run_record(invocation, comm.size, done.rows, done.weights))
    passed = comm.agreed(lambda: output(job.specs, done.results, json_path, report_path,
                                        run=record, gate=gate)
                         if comm.rank == 0 else True)
    if gate is None:
        return 0
    from mpieval.gate import FAILED

    return FAILED if comm.any(not passed) else 0


def _tty() -> bool:
    return sys.stderr.isatty()


def output(specs: Sequence[MetricSpec], results: dict[str, Result], json_path: str | None,
           report_path: str | None = None, *,
           run: Callable[[], dict[str, Any]] | None = None, gate: Gate | None = None) -> bool:
    """Rank 0's output: the log lines, then the JSON file and the HTML report when asked
    for, with the object ``run()`` makes (:func:`run_record`) beside the metrics when
    given (made only when one of them is written: the version it names is read from the
    package's metadata, an import that plain runs need not pay for). A failure to
    write one is an :class:`OutputError` (a full disk, an I/O error: exit 1) or an
    :class:`InputError` of ``--json`` / ``--report`` (the path is at fault:
    :func:`mpieval.locations.output_failure`).

    With ``gate``: it is checked after the log lines (its lines follow them) and its
    block goes into the JSON; returns whether it passed (True without one). A rule that
    matches nothing is raised (:class:`InputError`) after the outputs are written.
    The cyclic garbage collector is paused meanwhile (:func:`~mpieval.tags.gc_paused`: many
    tags make a few objects a tag, none of them a cycle)."""
    with gc_paused():
        return _output(specs, results, json_path, report_path, run=run, gate=gate)


def _output(specs: Sequence[MetricSpec], results: dict[str, Result], json_path: str | None,
            report_path: str | None, *, run: Callable[[], dict[str, Any]] | None,
            gate: Gate | None) -> bool:
    try:
        print_results(specs, results)
    except BrokenPipeError:  # `mpieval eval ... | head -1`: the reader has what it wanted
        stdout_to_devnull()
    except OSError as error:
        raise _stdout_failed(error) from None
    if not (json_path or report_path or gate):
        return True
    if report_path:  # the report reads it as dicts: every tag's made
        data = Evaluator.to_dict(results)
    else:  # written and gated: many tags' dicts made a chunk at a time as they are read
        with dicts_as_written():
            data = Evaluator.to_dict(results)
    if run is not None:
        data[RUN_KEY] = run()
    passed, bad_rule = True, None
    if gate is not None:
        try:
            passed = gate(data)
        except InputError as error:
            bad_rule = error
    if json_path:
        locations.write_json(json_path, data)
    if report_path:
        from mpieval import report

        report.write_run_report(data, report_path, json_path=json_path)
        shown = (locations.redact(report_path) if locations.is_uri(report_path)
                 else os.path.abspath(report_path))
        print(f"mpieval: report written to {shown}", file=sys.stderr, flush=True)
    if bad_rule is not None:
        raise bad_rule
    return passed


def evaluate(job: Job, comm: Comm, *, progress: bool = False,
             save_state: str | None = None) -> dict[str, Result]:
    """Collective: the results of :func:`evaluate_job`."""
    return evaluate_job(job, comm, progress=progress, save_state=save_state).results


@dataclass(frozen=True)
class Evaluation:
    """What a job gave: its results, the rows read (every rank's) and the weighted
    metrics' entries of the ``run`` object (:func:`weight_entries`)."""

    results: dict[str, Result]
    rows: int
    weights: dict[str, dict[str, Any]]


def evaluate_job(job: Job, comm: Comm, *, progress: bool = False,
                 save_state: str | None = None,
                 invocation: Invocation | None = None) -> Evaluation:
    """Collective: read this rank's pieces in lockstep with the others, feeding each
    batch to the metrics as it comes, then compute; with ``save_state``, save the states
    there, with the run's ``run`` object when ``invocation`` is given."""
    evaluator = comm.agreed(lambda: _evaluator(job.specs, comm))
    tasks = [Task(spec, evaluator[spec.name]) for spec in job.specs]
    meter = Progress(job.total_bytes) if progress and comm.rank == 0 else None
    rows = 0
    first = True

    def feed(batch: Batch) -> None:
        nonlocal first
        if first and batch.rows:  # the metrics that keep rows size their arrays once
            first = False
            expected = _expected_rows(job, comm.rank, batch)
            if expected is not None:
                for task in tasks:  # room for its own users' rows, which may be more
                    task.metric.reserve(expected if comm.size == 1 else expected * 3 // 2)
        _feed(tasks, batch)

    for totals in reading_rounds(_batches(job, comm.rank), feed, comm):
        rows = totals.rows
        if meter is not None:
            meter.show(totals.rows, totals.bytes, final=totals.last)
        if not totals.last:  # the last round's rows move in compute()
            for task in tasks:
                task.metric.move_rows(comm)
    _return_freed_memory()
    try:
        results = evaluator.compute()
    except DataError:
        raise
    except InputError as error:  # of the job's totals (weights too large): name the column
        raise _with_column(job.specs, error) from None
    weighted = weight_meanings(job.specs)
    if save_state is not None:
        from mpieval.saved_runs import save_run

        run = None if invocation is None else run_record(
            invocation, comm.size, rows, weight_entries(weighted, results))
        save_run(save_state, job.specs, evaluator, comm, rows=rows, weights=weighted, run=run)
    return Evaluation(results, rows, weight_entries(weighted, results))


def _with_column(specs: Sequence[MetricSpec], error: InputError) -> InputError:
    """An error of an input of compute (``weight``) as an error of its column, when one
    metric reads that input."""
    columns = {spec.columns[error.field] for spec in specs if error.field in spec.columns}
    if len(columns) != 1:
        return error
    return InputError(f"column {columns.pop()}", error.problem)


def _return_freed_memory() -> None:
    """Before ``compute()``: give back what the read freed (pyarrow's pool, glibc's heap:
    :func:`mpieval.memory.trim_heap`) before compute allocates its own."""
    pa.default_memory_pool().release_unused()
    memory.trim_heap()


def _evaluator(specs: Sequence[MetricSpec], comm: Comm) -> Evaluator:
    metrics = {spec.name: _metric(spec, comm) for spec in specs}
    return Evaluator(metrics, comm)


def _metric(spec: MetricSpec, comm: Comm) -> Metric:
    """The metric of ``spec``: its kind's, sliced when it has slices."""
    metric = kind_named(spec.kind).build(spec.options, comm)
    if not spec.slices:
        return metric
    return SlicedMetric(metric, ["*".join(columns) for columns in spec.slices],
                        min_rows=spec.min_slice_rows, options=spec.slice_options())


def _batches(job: Job, rank: int) -> Iterator[Batch]:
    for piece in job.pieces[rank]:
        yield from readers.read_piece(job.files[piece.file], piece, job.types)


def _expected_rows(job: Job, rank: int, first: Batch) -> int | None:
    """About how many rows this rank reads (a little more), from its first batch: its
    Parquet row groups' rows, or its plain text bytes at the first batch's bytes a row.
    None for gzip text (compressed bytes) or a mix of formats."""
    pieces = [(job.files[piece.file], piece) for piece in job.pieces[rank]]
    if all(file.format == "parquet" for file, _ in pieces):
        return sum(file.row_groups[group][0] for file, piece in pieces
                   for group in range(piece.start, piece.stop))
    if not all(file.splittable for file, _ in pieces) or first.bytes <= 0:
        return None
    text = sum(piece.stop - piece.start for _, piece in pieces)
    return int(text / first.bytes * first.rows * 1.03) + 1024


def _feed(tasks: Iterable[Task], batch: Batch) -> None:
    for task in tasks:
        task.feed(batch)


# -- the run's provenance ----------------------------------------------------------------

@dataclass(frozen=True)
class Invocation:
    """How a run was started, for its ``run`` object (:func:`run_record`): the command
    line and the inputs as given, secrets redacted (:func:`mpieval.locations.redact`),
    when (UTC, ISO 8601 to the second), and the run's identity (a random UUID: two saved
    runs of the same id are one run, which ``mpieval merge`` would count twice). Each rank
    makes its own; rank 0's, which writes every output, is the run's."""

    command: list[str]
    inputs: list[str]
    started: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


def invocation(argv: Sequence[str], inputs: Sequence[str]) -> Invocation:
    """The :class:`Invocation` of ``mpieval ARGV`` reading ``inputs``, started now."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return Invocation(command=["mpieval", *(_redacted_argument(a) for a in argv)],
                      inputs=[locations.redact(path) for path in inputs],
                      started=now.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _redacted_argument(text: str) -> str:
    """A command-line argument without secrets: a URI redacted, as is the value of an
    option written ``--flag=URI``."""
    flag, equals, value = text.partition("=")
    if text.startswith("--") and equals:
        return f"{flag}={locations.redact(value)}"
    return locations.redact(text)


def run_record(invocation: Invocation, ranks: int, rows: int | None,
               weights: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The JSON's ``run`` object: ``id``, ``mpieval_version``, ``command``, ``started``,
    ``inputs``, ``ranks``, ``rows`` (rows read over every rank; null when unknown) and
    ``weights`` (per weighted metric its column, what a weight means and the sum; null
    when no metric is weighted)."""
    import mpieval

    return {"id": invocation.id, "mpieval_version": mpieval.__version__,
            "command": invocation.command, "started": invocation.started,
            "inputs": invocation.inputs, "ranks": ranks, "rows": rows,
            "weights": dict(weights) or None}


def weight_meanings(specs: Sequence[MetricSpec]) -> dict[str, dict[str, str]]:
    """The weighted metrics' weight ``column`` and what a weight means (``meaning``: the
    ``weights`` option, ``frequency`` for a kind without it), by metric name."""
    return {spec.name: {"column": spec.columns["weight"],
                        "meaning": spec.options.get("weights", "frequency")}
            for spec in specs if "weight" in spec.columns}


def weight_entries(weighted: Mapping[str, Mapping[str, str]], results: Mapping[str, Result]
                   ) -> dict[str, dict[str, Any]]:
    """The ``weights`` of the ``run`` object: for each weighted metric (name -> its weight
    ``column`` and ``meaning``) those and the ``sum`` of its weights (its result's
    ``weight_sum`` where it has one, else its ``num``)."""
    return {name: {**entry, "sum": getattr(results[name], "weight_sum", None)
                   or results[name].to_dict()["num"]}
            for name, entry in weighted.items()}


# -- reading rounds ----------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    """What every rank knows after a reading round: the rows and file bytes read so far
    over all ranks, and whether this was the last round (no rank reads any more)."""

    rows: int
    bytes: int
    last: bool


def reading_rounds(batches: Iterator[Batch], feed: Callable[[Batch], None], comm: Comm
                   ) -> Iterator[Round]:
    """Collective: read ``batches`` in rounds together with the other ranks, feeding each
    to ``feed`` as it is read; yields each round's :class:`Round`, the last one when no
    rank reads any more.

    A round reads about ``_ROUND_BYTES`` of file on this rank (until the batch that
    reaches it, or the end of this rank's input), then starts a small sum of four numbers
    over the ranks (:meth:`Comm.start_sum`): whether it failed in the round, whether it
    still reads, and the rows and bytes read so far. The sum is collected after the next
    round has been read, so a rank never waits for the others' round to end, only for
    the one before (a blocking sum a round would hold every rank in lockstep). A failed rank
    reads no more; when a sum shows a failure, every rank raises the lowest-ranked rank's
    error (:meth:`Comm.agree`): a bad line (or a store's fault) on any rank stops every rank
    one round later. A rank whose input has ended takes part in the sums until every rank's
    has.
    """
    rows = size = 0
    reading = True
    failure: InputError | StoreError | None = None
    in_flight = None  # the previous round's sum
    while True:
        if reading:
            try:
                round_rows, round_bytes, reading = _read_round(batches, feed)
            except (InputError, StoreError) as error:
                failure, reading = error, False
            else:
                rows, size = rows + round_rows, size + round_bytes
        started = comm.start_sum(np.array([failure is not None, reading, rows, size],
                                          np.float64))
        if in_flight is None:  # the first round's sum is collected after the second
            in_flight = started
            continue
        failed, still_reading, all_rows, all_bytes = in_flight.result()
        in_flight = started
        if failed or not still_reading:
            in_flight.result()  # every rank collects its last sum before going on
        if failed:
            comm.agree(failure)
        yield Round(rows=int(all_rows), bytes=int(all_bytes), last=not still_reading)
        if not still_reading:
            return


def _read_round(batches: Iterator[Batch], feed: Callable[[Batch], None]
                ) -> tuple[int, int, bool]:
    """One round of this rank: batches until ``_ROUND_BYTES`` of file or the end of the
    input, each fed as it is read. Returns the round's rows and bytes, and whether the
    input goes on."""
    rows = size = 0
    while size < _ROUND_BYTES:
        batch = next(batches, None)
        if batch is None:
            return rows, size, False
        rows += batch.rows
        size += batch.bytes
        feed(batch)
    return rows, size, True


# -- feeding one metric ------------------------------------------------------------------


class Task:
    """One named metric fed from batches: which rows count, which columns go where."""

    def __init__(self, spec: MetricSpec, metric: Metric) -> None:
        self.spec = spec
        self.kind = kind_named(spec.kind)
        self.metric = metric

    def rows(self, batch: Batch) -> np.ndarray | None:
        """The rows of ``batch`` that count (mask non-zero, filters equal), or None: all."""
        keep = None
        if self.spec.mask is not None:
            mask = batch.numbers(self.spec.mask)
            finite = np.isfinite(mask) if mask.dtype.kind == "f" else None
            if finite is not None and not finite.all():
                row = int(np.flatnonzero(~finite)[0])
                raise DataError(batch.where(row), f"mask value {float(mask[row])!r} is not finite",
                                self.spec.mask)
            keep = mask != 0
        for column, value in self.spec.filters.items():
            try:
                equal = batch.equals(column, value)
            except TypeError as error:
                raise DataError(batch.path, str(error), column) from None
            keep = equal if keep is None else keep & equal
        return keep

    def feed(self, batch: Batch) -> None:
        """Update the metric with the rows of ``batch`` that count (local)."""
        keep = self.rows(batch)
        if keep is not None and not keep.any():
            return
        values = {}
        for arg, column in self.spec.columns.items():
            if arg in self.kind.ids:
                array = batch.keys(column)
            elif arg in self.kind.names:
                array = batch.names(column)
            else:
                array = batch.numbers(column)
            if keep is not None:
                array = array.filter(keep) if isinstance(array, pa.Array) else array[keep]
            values[arg] = array
        if self.spec.slices:
            values["slices"] = self._slice_columns(batch, keep)
        try:
            self.metric.update(**values)
        except InputError as error:
            raise self._located(error, batch, keep) from None

    def _slice_columns(self, batch: Batch, keep: np.ndarray | None) -> dict[str, Any]:
        """The slice columns of ``batch``, coded (:meth:`Batch.names`), of the rows that
        count."""
        columns = {}
        for column in dict.fromkeys(c for dimension in self.spec.slices for c in dimension):
            coded = batch.names(column)
            columns[column] = coded if keep is None else coded[keep]
        return columns

    def _located(self, error: InputError, batch: Batch, keep: np.ndarray | None) -> DataError:
        column = self.spec.columns.get(error.field, error.field)
        problem = error.problem  # an option it names, named by its flag (--soft-labels)
        if error.hint is not None and error.hint.option in self.kind.options:
            option = self.kind.options[error.hint.option]
            problem = error.problem_setting(option.setting(error.hint.value))
        if error.first_index is None:
            return DataError(batch.path, problem, column)
        row = error.first_index if keep is None else int(np.flatnonzero(keep)[error.first_index])
        if error.value is not None:
            problem = f"value {error.value!r} {problem}"
        return DataError(batch.where(row), problem, column)


# -- output (rank 0) ---------------------------------------------------------------------


class Progress:
    """Rows read over all ranks, rows/s and bytes done, on stderr (rank 0)."""

    def __init__(self, total_bytes: int, stream: TextIO | None = None) -> None:
        self.total_bytes = total_bytes
        self.stream = stream or sys.stderr
        self.start = self.last = time.monotonic()
        self.tty = self.stream.isatty()

    def show(self, rows: int, bytes_done: int, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < (0.5 if self.tty else 5.0):
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        share = 100.0 * bytes_done / self.total_bytes if self.total_bytes else 100.0
        text = (f"mpieval: {rows:,} rows, {rows / elapsed:,.0f} rows/s, "
                f"{bytes_done / 1e6:,.1f} of {self.total_bytes / 1e6:,.1f} MB ({share:.0f}%)")
        end = "\n" if final or not self.tty else ""
        print(("\r" if self.tty else "") + text, end=end, file=self.stream, flush=True)


def print_results(specs: Sequence[MetricSpec], results: dict[str, Result],
                  stream: TextIO | None = None) -> None:
    """The Abacus log lines, one per metric (per tag for wuauc), on stdout."""
    out = stream or sys.stdout
    for spec in specs:
        text = results[spec.name].to_log_line(spec.log_prefix)
        if text:  # its lines as made, in one write (many tags: no list of a line a tag)
            out.write(text)
            out.write("\n")
    out.flush()


def stdout_to_devnull() -> None:
    """Send what is left in stdout's buffer, and anything printed later, to ``/dev/null``:
    after stdout failed (a full disk) or its reader left (a closed pipe), so that the
    interpreter's last flush at exit does not fail again with a traceback."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, sys.stdout.fileno())
        os.close(sink)


def _stdout_failed(error: OSError) -> OutputError:
    """The error of log lines that could not be written (stdout on a full disk)."""
    stdout_to_devnull()
    reason = getattr(error, "strerror", None) or str(error)
    return OutputError(f"stdout: cannot write the log lines: {reason}")
