"""The command line: ``mpieval eval [OPTIONS] FILE...`` and ``mpieval demo``.

Run alone or under ``mpiexec -n N``. Rank 0 inspects the files and plans who reads
what (:mod:`mpieval.split`), every rank reads its pieces in lockstep rounds
(:mod:`mpieval.readers`) and feeds its metrics, and after every round the ranks sum a
few counters, so that a bad line on any rank stops every rank at once
(:meth:`Comm.agree`). Rank 0 prints the Abacus lines on stdout, warnings and progress
on stderr, and writes ``--json`` atomically.

Exit status: 0 success; 2 bad input or usage (``file:line: column C: problem``), on
every rank; 1 anything else (traceback, then ``MPI_Abort``: nothing hangs).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from mpieval import readers, split
from mpieval.comm import Comm, abort
from mpieval.config import (
    MetricSpec,
    column_types,
    column_uses,
    load_config,
    specs_from_flags,
)
from mpieval.errors import DataError, InputError, RemoteError, UidCollisionError
from mpieval.kinds import KINDS, kind_named
from mpieval.metric import Evaluator, Metric, Result
from mpieval.readers import Batch

# Flags that choose columns or options of --metrics; with --config they are errors.
_METRIC_FLAGS = {
    "metrics": "--metrics", "pred": "--pred", "label": "--label", "uid": "--uid",
    "tag": "--tag", "weight": "--weight", "left_label": "--left-label",
    "right_label": "--right-label", "pn_ties": "--pn-ties", "table_size": "--table-size",
    "soft_labels": "--soft-labels", "name": "--name",
}


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpieval",
        description="Abacus/Paddle CTR metrics over prediction files, on any number of "
        "MPI ranks (run under mpiexec -n N, or alone).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ev = commands.add_parser(
        "eval", help="evaluate metrics over prediction files",
        description="Evaluate metrics over TSV/CSV (header row, optionally gzip) or "
        "Parquet files. Files and row ranges are split across ranks.",
    )
    ev.add_argument("files", nargs="+", metavar="FILE")
    ev.add_argument("--metrics", metavar="LIST",
                    help="comma list of kinds: auc, wuauc, pn, pairwise (default auc)")
    ev.add_argument("--pred", metavar="COL", help="prediction column (default pred)")
    ev.add_argument("--label", metavar="COL", help="label column (default label)")
    ev.add_argument("--uid", metavar="COL", help="user id column (default uid)")
    ev.add_argument("--tag", metavar="COL", help="tag column: adds per-tag blocks to wuauc")
    ev.add_argument("--weight", metavar="COL", help="sample weight column (auc)")
    ev.add_argument("--left-label", metavar="COL", help="pairwise left label (default left_label)")
    ev.add_argument("--right-label", metavar="COL",
                    help="pairwise right label (default right_label)")
    ev.add_argument("--pn-ties", choices=KINDS["pn"].options["ties"].choices,
                    help="how pn counts tied pairs (default negative)")
    ev.add_argument("--table-size", type=_positive_int, metavar="N",
                    help="auc histogram buckets (default 1000000)")
    ev.add_argument("--soft-labels", action="store_true", default=None,
                    help="auc: accept labels anywhere in [0, 1]")
    ev.add_argument("--name", metavar="PREFIX", help="prefix of the log lines (default: the kind)")
    ev.add_argument("--config", metavar="FILE.toml", help="several named metrics at once")
    ev.add_argument("--json", metavar="PATH", help="write the results as JSON (rank 0)")
    ev.add_argument("--format", choices=split.FORMATS, help="default: from the file name")
    ev.add_argument("--progress", action="store_true",
                    help="print progress on stderr (default: only when it is a terminal)")
    demo = commands.add_parser(
        "demo", help="the main job on built-in synthetic data",
        description="Write synthetic prediction files like a training run's dumps and "
        "evaluate every metric kind over them.",
    )
    demo.add_argument("--rows", type=_positive_int, default=300_000, help="rows (default 300000)")
    demo.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    demo.add_argument("--dir", metavar="DIR", help="write the demo files (and demo.toml) here "
                      "and keep them (default: a temporary directory, removed)")
    page = commands.add_parser(
        "report", help="a self-contained HTML page of one or more runs",
        description="One HTML page of the --json results of one or more runs (figures inline: "
        "it opens offline and prints): curves overlaid, tables side by side. Needs the "
        "'report' extra (matplotlib).",
    )
    page.add_argument("runs", nargs="+", metavar="RUN.json")
    page.add_argument("-o", "--output", required=True, metavar="PAGE.html", help="the page")
    return parser


def command() -> int:
    """The ``mpieval`` console script (and ``python -m mpieval``): :func:`main` in a
    process of its own, with two start-up and exit costs cut.

    - numba probes scipy's BLAS when it loads its kernels, which imports ``scipy.linalg``
      (0.15 s) when scipy is installed; mpieval's kernels call no BLAS, so the probe is
      told that there is none (a ``None`` in ``sys.modules`` makes an import fail).
    - At exit the interpreter's last garbage collections walk every object numba made
      (about 0.2 s); objects still alive then are frozen out of them (``gc.freeze``).
    """
    sys.modules.setdefault("scipy.linalg.cython_blas", None)  # type: ignore[assignment]
    status = main()
    gc.freeze()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mpieval`` with ``argv`` (default: the command line); returns the exit status.

    Started by an MPI launcher, the ranks are the world's; started alone, the command
    runs as one rank without loading MPI (:meth:`Comm.world_or_alone`).
    """
    comm = Comm.world_or_alone()
    _quiet_warnings()
    try:
        with _only_rank_zero_speaks(comm):
            args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, or a usage error: the same on every rank
        comm.close()
        return int(done.code or 0)
    try:
        readers.use_threads(threads_per_rank(comm))
        if args.command == "demo":
            from mpieval import demo

            status = demo.run(comm, rows=args.rows, json_path=args.json, directory=args.dir)
        elif args.command == "report":
            from mpieval import report

            comm.agreed(lambda: report.write_report(args.runs, args.output)
                        if comm.rank == 0 else None)
            status = 0
        else:
            status = run_eval(args, comm, warming=warm_up(kinds_asked(args)))
    except InputError as error:  # collective: every rank holds the same error
        if comm.rank == 0:
            print(f"mpieval: error: {error}", file=sys.stderr, flush=True)
        status = 2
    except (RemoteError, UidCollisionError) as error:  # raised on every rank by Comm.agree
        if comm.rank == 0:
            print(f"mpieval: error: {error}", file=sys.stderr, flush=True)
        status = 1
    except Exception:
        traceback.print_exc()
        abort(1)
    comm.close()
    return status


def threads_per_rank(comm: Comm) -> int:
    """Threads a rank reads with: ``MPIEVAL_THREADS`` when set; otherwise every core this
    process may use when it runs alone, and one per rank under ``mpiexec -n N`` (N > 1),
    as clusters expect: more cores are used by running more ranks."""
    text = os.environ.get("MPIEVAL_THREADS")
    if text is not None:
        count = int(text) if text.strip().isdigit() else 0
        if count < 1:
            raise InputError("MPIEVAL_THREADS", f"must be a positive integer, got {text!r}")
        return count
    if comm.size > 1:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


@contextlib.contextmanager
def _only_rank_zero_speaks(comm: Comm) -> Iterator[None]:
    if comm.rank == 0:
        yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        yield


def _quiet_warnings() -> None:
    """Warnings as one ``mpieval: warning: ...`` line on stderr."""

    def show(message: Any, category: Any, filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        print(f"mpieval: warning: {message}", file=file or sys.stderr, flush=True)

    warnings.showwarning = show


# -- eval ------------------------------------------------------------------------------


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


def run_eval(args: argparse.Namespace, comm: Comm, *,
             warming: threading.Thread | None = None) -> int:
    """``mpieval eval``: every rank runs it; returns the exit status."""
    return run_job(
        comm, lambda: plan_job(specs_from_args(args), args.files, comm.size,
                               forced_format=args.format, json_path=args.json),
        json_path=args.json, progress=args.progress, warming=warming,
    )


def kinds_asked(args: argparse.Namespace) -> list[str]:
    """The kinds ``mpieval eval`` will probably run (a guess made before any check)."""
    if args.config is None:
        return (args.metrics or "auc").split(",")
    try:
        return [spec.kind for spec in load_config(args.config)]
    except (InputError, OSError):
        return []  # the run itself reports it


# While the warm-up thread runs Python, the main thread, back from each pyarrow call that
# released the GIL, waits up to the switch interval for it (5 ms by default).
_WARM_UP_SWITCH_INTERVAL = 0.5e-3


def warm_up(kind_names: Iterable[str]) -> threading.Thread:
    """Load the kinds' compiled kernels on a background thread, started now.

    numba spends 0.3 to 0.5 s of a fresh process importing itself and loading the kernels
    from its cache. On this thread it overlaps what the main thread does meanwhile:
    importing pyarrow and MPI, planning, and parsing the first batches, which
    :func:`evaluate` holds back until the kernels are in. Only a speed-up: a name that
    is not a kind, or a failure here, is left for the real run to meet and report.
    """

    def load() -> None:
        interval = sys.getswitchinterval()
        sys.setswitchinterval(_WARM_UP_SWITCH_INTERVAL)
        try:
            for name in dict.fromkeys(kind_names):
                if name in KINDS:
                    with contextlib.suppress(Exception):
                        KINDS[name].load().warm_up()
        finally:
            sys.setswitchinterval(interval)

    thread = threading.Thread(target=load, name="mpieval-warm-up")
    thread.start()
    return thread


def run_job(comm: Comm, make_job: Callable[[], Job], *, json_path: str | None,
            progress: bool = False, warming: threading.Thread | None = None) -> int:
    """Collective: plan on rank 0 (``make_job``), share the plan, evaluate, report."""
    job, error = None, None
    if comm.rank == 0:
        try:
            job = make_job()
        except InputError as caught:
            error = caught
    comm.agree(error)
    job = comm.allgather(job)[0]
    results = evaluate(job, comm, progress=progress or (comm.rank == 0 and _tty()),
                       warming=warming)
    error = None
    if comm.rank == 0:
        print_results(job.specs, results)
        if json_path:
            try:
                write_json(json_path, Evaluator.to_dict(results))
            except OSError as caught:
                error = InputError("--json", f"cannot write {json_path}: {caught}")
    comm.agree(error)
    return 0


def _tty() -> bool:
    return sys.stderr.isatty()


def specs_from_args(args: argparse.Namespace) -> list[MetricSpec]:
    """The metrics the options ask for: ``--config``, or ``--metrics`` and its flags."""
    if args.config is not None:
        given = [flag for dest, flag in _METRIC_FLAGS.items() if getattr(args, dest) is not None]
        if given:
            raise InputError(given[0], "cannot be used with --config (say it in the config)")
        return load_config(args.config)
    return specs_from_flags(
        args.metrics or "auc",
        columns={
            "pred": args.pred, "label": args.label, "uid": args.uid, "tag": args.tag,
            "weight": args.weight, "left_label": args.left_label,
            "right_label": args.right_label,
        },
        options={"table_size": args.table_size, "soft_labels": args.soft_labels,
                 "ties": args.pn_ties},
        prefix=args.name,
    )


def plan_job(specs: list[MetricSpec], paths: Sequence[str], ranks: int, *,
             forced_format: str | None = None, json_path: str | None = None) -> Job:
    """Check the metrics, the files and the output path, and plan the reads (rank 0)."""
    for spec in specs:
        kind_named(spec.kind).load()  # a kind missing from this build fails here
    types = column_types(specs)
    if json_path:
        check_writable(json_path)
    files = inspect_files(paths, forced_format, column_uses(specs))
    return Job(specs=specs, files=files, pieces=split.plan(files, ranks), types=types)


def inspect_files(paths: Sequence[str], forced: str | None, uses: dict[str, str]
                  ) -> list[split.InputFile]:
    """Every file inspected and checked for the columns in ``uses``; no file twice."""
    seen: dict[str, str] = {}
    files = []
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise DataError(path, f"is given twice (also as {seen[real]}): its rows "
                            "would count twice")
        seen[real] = path
        file = readers.inspect(path, readers.file_format(path, forced))
        readers.check_columns(file, uses)
        files.append(file)
    return files


def check_writable(path: str) -> None:
    """The directory of ``path`` exists and is writable (checked before reading)."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise InputError("--json", f"cannot write {path}: it exists and is not a regular file")
    if not os.path.isdir(directory):
        raise InputError("--json", f"cannot write {path}: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise InputError("--json", f"cannot write {path}: {directory} is not writable")


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
            values[arg] = array if keep is None else array[keep]
        try:
            self.metric.update(**values)
        except InputError as error:
            raise self._located(error, batch, keep) from None

    def _located(self, error: InputError, batch: Batch, keep: np.ndarray | None) -> DataError:
        column = self.spec.columns.get(error.field, error.field)
        problem = error.problem.replace("pass soft_labels=True", "pass --soft-labels")
        if error.first_index is None:
            return DataError(batch.path, problem, column)
        row = error.first_index if keep is None else int(np.flatnonzero(keep)[error.first_index])
        if error.value is not None:
            problem = f"value {error.value!r} {problem}"
        return DataError(batch.where(row), problem, column)


# Batches held back while the kernels load (see warm_up): at most this many file bytes.
_HELD_BYTES = 64 << 20
# File bytes a rank reads between two agreements with the others (see evaluate).
_ROUND_BYTES = 8 << 20


def evaluate(job: Job, comm: Comm, *, progress: bool = False,
             warming: threading.Thread | None = None) -> dict[str, Result]:
    """Collective: read this rank's pieces in lockstep with the others, then compute.

    The ranks read in rounds of about ``_ROUND_BYTES`` of file each, and after each round
    agree (one small ``Allreduce``) on whether any failed, so that a bad line anywhere
    stops every rank within a round. While ``warming`` (:func:`warm_up`) still loads the
    kernels, batches are read and held (up to ``_HELD_BYTES`` of file), then fed in
    order: parsing needs no kernel.
    """
    error: InputError | None = None
    evaluator = None
    try:
        metrics = {
            spec.name: kind_named(spec.kind).build(spec.options, comm) for spec in job.specs
        }
        evaluator = Evaluator(metrics, comm)
    except InputError as caught:
        error = caught
    comm.agree(error)
    assert evaluator is not None
    tasks = [Task(spec, evaluator[spec.name]) for spec in job.specs]
    batches = _batches(job, comm.rank)
    meter = Progress(job.total_bytes) if progress and comm.rank == 0 else None
    rows = bytes_done = held_bytes = 0
    held: list[Batch] = []
    reading = True
    while True:
        error = None
        try:
            round_bytes = 0
            while reading and round_bytes < _ROUND_BYTES:
                batch = next(batches, None)
                if batch is None:
                    reading = False
                else:
                    rows += batch.rows
                    bytes_done += batch.bytes
                    round_bytes += batch.bytes
                    held.append(batch)
                    held_bytes += batch.bytes
                loading = warming is not None and warming.is_alive()
                if not reading or not loading or held_bytes > _HELD_BYTES:
                    for ready in held:
                        for task in tasks:
                            task.feed(ready)
                    held.clear()
                    held_bytes = 0
        except InputError as caught:
            error = caught
        # One small Allreduce per round: a failure anywhere, whether anyone still reads,
        # and the progress counters.
        totals = comm.sum(np.array([error is not None, reading, rows, bytes_done], np.float64))
        if totals[0]:
            comm.agree(error)
        if meter is not None:
            meter.show(int(totals[2]), int(totals[3]), final=not totals[1])
        if not totals[1]:
            break
    return evaluator.compute()


def _batches(job: Job, rank: int) -> Iterator[Batch]:
    for piece in job.pieces[rank]:
        yield from readers.read_piece(job.files[piece.file], piece, job.types)


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
        for line in results[spec.name].to_log_line(spec.log_prefix).splitlines():
            print(line, file=out)
    out.flush()


def write_json(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file beside it, then a rename."""
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w") as out:
            json.dump(data, out, indent=2, allow_nan=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
