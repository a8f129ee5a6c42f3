"""The command line: ``mpieval eval [OPTIONS] FILE...`` and ``mpieval demo``.

Run alone or under ``mpiexec -n N``. This module is the front end: it parses the
arguments, sets the reading threads, starts loading the kernels, and turns the options
into the metrics and files of a job that :mod:`mpieval.pipeline` plans, reads in
lockstep on every rank and reports (Abacus lines on stdout, warnings and progress on
stderr, ``--json`` written atomically, all by rank 0).

Exit status: 0 success; 2 bad input or usage (``file:line: column C: problem``; a missing
or forbidden file of a store too), on every rank; 1 a store's transient fault that outlived
the retries (one line naming the URI, on every rank), an output that could not be written
(a full disk, an I/O error: one line naming it), or anything else (traceback, then
``MPI_Abort``: nothing hangs); 130 interrupted (Ctrl-C on any rank or on ``mpiexec``:
:func:`main`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TextIO

from mpieval import comm as comm_module
from mpieval import locations, memory, pipeline, readers, split
from mpieval.comm import Comm, abort
from mpieval.config import GATE_KEY, MetricSpec, load_config, specs_from_flags, with_slices
from mpieval.declaration import Input, Option
from mpieval.errors import InputError, OutputError, RemoteError, StoreError, UidCollisionError
from mpieval.kernels import parallel
from mpieval.kinds import KINDS
from mpieval.slices import DEFAULT_MIN_ROWS, DEFAULT_SLICE_TABLE_SIZE
from mpieval.transport import mpi as mpi_transport
from mpieval.transport import waiting
from mpieval.validation import check_log_word


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error said as every other error is: one line, ``mpieval:
    error: ...`` with the command to ask for help, status 2 (not the usage block)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("mpieval").strip()
        hint = f"mpieval {command} --help" if command else "mpieval --help"
        self.exit(2, f"mpieval: error: {message} (see {hint})\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mpieval",
        description="Abacus/Paddle CTR metrics over prediction files, on any number of "
        "MPI ranks (run under mpiexec -n N, or alone).",
    )
    parser.add_argument("--version", action=_PrintVersion, nargs=0,
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ev = commands.add_parser(
        "eval", help="evaluate metrics over prediction files",
        description="Evaluate metrics over TSV/CSV (header row, optionally gzip) or "
        "Parquet files. Files and row ranges are split across ranks.",
    )
    ev.add_argument("files", nargs="+", metavar="FILE")
    ev.add_argument("--metrics", metavar="LIST",
                    help=f"comma list of kinds: {', '.join(KINDS)} (default auc)")
    add_kind_flags(ev)
    _add_slice_flags(ev)
    ev.add_argument("--name", metavar="PREFIX", help="prefix of the log lines (default: the kind)")
    ev.add_argument("--config", metavar="FILE.toml", help="several named metrics at once")
    _add_outputs(ev)
    ev.add_argument("--format", choices=split.FORMATS, help="default: from the file name")
    ev.add_argument("--save-state", metavar="DIR",
                    help="also write each rank's metric state (for `mpieval merge`)")
    ev.add_argument("--progress", action="store_true",
                    help="print progress on stderr (default: only when it is a terminal)")
    ev.add_argument("--engine", choices=("mpi", "spark"), default="mpi",
                    help="mpi: this process and its mpiexec ranks read the files (default); "
                    "spark: Spark reads them, or table:NAME (the 'spark' extra)")
    ev.add_argument("--spark-master", metavar="URL",
                    help="with --engine spark: the Spark master (default: local[*], or "
                    "spark-submit's)")
    merge = commands.add_parser(
        "merge", help="the results of several saved runs together",
        description="Compute the metrics of runs saved with `mpieval eval --save-state DIR` "
        "together, without reading their files again.",
    )
    merge.add_argument("directories", nargs="+", metavar="DIR")
    _add_outputs(merge)
    demo = commands.add_parser(
        "demo", help="the main job on built-in synthetic data",
        description="Write synthetic prediction files like a training run's dumps and "
        "evaluate every metric kind over them.",
    )
    demo.add_argument("--rows", type=_positive_int, default=300_000, help="rows (default 300000)")
    _add_outputs(demo)
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
    _add_gate(commands, ev)
    return parser


def _add_slice_flags(ev: argparse.ArgumentParser) -> None:
    """``--slice`` and its two settings (every kind; docs/slices.md)."""
    ev.add_argument("--slice", metavar="COL[,COL...]",
                    help="also each metric's block per value of these columns (a*b: per "
                    "pair of values of two columns)")
    ev.add_argument("--min-slice-rows", type=int, metavar="N",
                    help=f"rows a slice needs for its values (default {DEFAULT_MIN_ROWS})")
    ev.add_argument("--slice-table-size", type=int, metavar="N",
                    help="buckets of a slice's auc table (default the smaller of "
                    f"{DEFAULT_SLICE_TABLE_SIZE} and --table-size)")


def _add_outputs(command: argparse.ArgumentParser) -> None:
    """The outputs beside the log lines, the same for eval, merge and demo."""
    command.add_argument("--json", metavar="PATH", help="write the results as JSON (rank 0)")
    command.add_argument("--report", metavar="PATH",
                         help="also write the run's HTML report (rank 0; the 'report' extra)")


class _PrintVersion(argparse.Action):
    """``--version``: the version is looked up only when asked for (it costs a read of
    the package's metadata)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        import mpieval

        try:
            print(f"mpieval {mpieval.__version__}", flush=True)
        except BrokenPipeError:  # `mpieval --version | true`: nobody reads it
            pipeline.stdout_to_devnull()
        parser.exit()


def kind_flags() -> dict[str, list[tuple[str, Input | Option]]]:
    """Every flag the kinds declare, in registry order: ``--flag`` -> the (kind, input or
    option) it sets. A column flag of several kinds (``--pred``) is one flag; a flag both
    an input and an option (``--compare``: model B's column, and the result's name for
    it) sets both."""
    flags: dict[str, list[tuple[str, Input | Option]]] = {}
    for kind in KINDS.values():
        for spec in kind.flagged:
            flags.setdefault(spec.flag, []).append((kind.name, spec))
    return flags


def add_kind_flags(parser: argparse.ArgumentParser) -> None:
    """The kinds' flags with their help, generated from the declarations."""
    for flag, uses in kind_flags().items():
        kinds = ", ".join(dict.fromkeys(name for name, _ in uses))
        first = uses[0][1]
        option = next((spec for _, spec in uses if isinstance(spec, Option)), None)
        if isinstance(first, Input):
            default = f"; default {first.default_column}" if first.default_column else ""
            parser.add_argument(flag, metavar="COL", help=f"{first.help} ({kinds}{default})")
        elif option is not None and option.parse is None:
            parser.add_argument(flag, action="store_true", default=None,
                                help=f"{option.help} ({kinds})")
        elif option is not None and option.parse is not None:
            default = "" if option.default is None else f"; default {option.default}"
            parser.add_argument(flag, type=option.parse, choices=option.choices or None,
                                metavar=option.metavar, help=f"{option.help} ({kinds}{default})")


def _flag_dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def command() -> int:
    """The ``mpieval`` console script (and ``python -m mpieval``): :func:`main` in a
    process of its own, with two exit costs cut.

    - At exit the interpreter's last garbage collections walk every object still alive;
      those are frozen out of them (``gc.freeze``).
    - A run that read a store and failed with status 1 exits at once (:func:`_exit_now`).
    """
    status = main(own_process=True)
    if status == 1 and locations.stores_opened():
        _exit_now(status)
    gc.freeze()
    return status


def _exit_now(status: int) -> None:
    """End the process without the interpreter's shutdown. After a failed run that read a
    store, one of pyarrow's I/O threads may still be inside a read the store's client is
    retrying; destroying its thread pool at shutdown would end the process with
    ``std::terminate`` (status 134) instead of ``status``. Under ``mpiexec`` the job ends
    as after an unexpected error (``MPI_Abort(status)``: every rank, ``mpiexec`` exits
    with ``status``)."""
    with contextlib.suppress(SystemExit):  # several ranks: MPI_Abort; alone: SystemExit
        abort(status)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


INTERRUPTED = 130  # the shell's status for a command ended by SIGINT (128 + 2)


def main(argv: Sequence[str] | None = None, *, own_process: bool = False) -> int:
    """Run ``mpieval`` with ``argv`` (default: the command line); returns the exit status.

    Started by an MPI launcher, the ranks are the world's; started alone, the command
    runs as one rank without loading MPI (:meth:`Comm.world_or_alone`).

    Ctrl-C (SIGINT) on any rank, or on ``mpiexec``, which passes it to every rank, ends
    the job with status 130: the interrupted rank stops where it is (a rank waiting in a
    collective stops waiting), removes a half-written ``--json`` temporary file, and
    ends every rank (``MPI_Abort(130)``); no JSON is written.
    """
    with _interrupts_noted():
        try:
            return _main(argv, own_process)
        except KeyboardInterrupt:
            print("mpieval: interrupted", file=sys.stderr, flush=True)
            abort(INTERRUPTED)
    return INTERRUPTED  # pragma: no cover - abort does not return


@contextlib.contextmanager
def _interrupts_noted() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt as usual and also sets the flag that a wait in a
    collective checks (:func:`mpieval.transport.waiting.note_interrupt`); the old handler
    is back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        waiting.note_interrupt()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


_WHOLE_JOB_HINT = (
    "the command line's ranks are MPI's: start it with mpiexec -n N (an MPI whose launcher "
    "mpi4py's library answers), or without the launcher for one process")


def _main(argv: Sequence[str] | None, own_process: bool = False) -> int:
    if own_process:
        _tune_memory(argv)
    mpi_transport.lighter_start_on_one_node()
    comm = Comm.world_or_alone()
    _quiet_warnings()
    try:
        with _only_rank_zero_speaks(comm):
            args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, or a usage error: the same on every rank
        comm.close()
        return int(done.code or 0)
    invoked = pipeline.invocation(sys.argv[1:] if argv is None else argv,
                                  getattr(args, "files", getattr(args, "directories", [])))
    try:
        comm_module.check_whole_job(comm, _WHOLE_JOB_HINT)
        threads = threads_per_rank(comm)
        readers.use_threads(threads)
        parallel.use_threads(threads)
        if args.command == "demo":
            from mpieval import demo

            status = demo.run(comm, rows=args.rows, json_path=args.json, directory=args.dir,
                              report_path=args.report, invocation=invoked)
        elif args.command == "merge":
            status = run_merge(args, comm, invoked)
        elif args.command == "gate":
            status = run_gate(args, comm)
        elif args.command == "report":
            from mpieval import report

            comm.agreed(lambda: report.write_report(args.runs, args.output)
                        if comm.rank == 0 else None)
            status = 0
        else:
            status = _eval_in(args, comm, invoked)
    except InputError as error:  # collective: every rank holds the same error
        if comm.rank == 0:
            print(f"mpieval: error: {error}", file=sys.stderr, flush=True)
        status = 2
    except (RemoteError, UidCollisionError, StoreError, OutputError) as error:  # Comm.agree
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


def run_eval(args: argparse.Namespace, comm: Comm, *,
             invocation: pipeline.Invocation | None = None) -> int:
    """``mpieval eval``: every rank runs it; returns the exit status. ``invocation``: the
    command line, for the JSON's ``run`` object."""
    rules = _gate_rules(args, comm)

    def plan() -> pipeline.Job:
        job = pipeline.plan_job(specs_from_args(args), args.files, comm.size,
                                forced_format=args.format, json_path=args.json,
                                report_path=args.report)
        if rules is not None:
            from mpieval import gate

            gate.check_metric_names(rules, [spec.name for spec in job.specs], args.gate)
        return job

    return pipeline.run_job(
        comm, plan, json_path=args.json, progress=args.progress,
        save_state=args.save_state, report_path=args.report, invocation=invocation,
        gate=None if rules is None else _gate_hook(rules, args.gate),
    )


def run_merge(args: argparse.Namespace, comm: Comm,
              invocation: pipeline.Invocation | None = None) -> int:
    """``mpieval merge DIR... [--json PATH] [--report PATH]``: every rank runs it; returns
    the status. ``invocation``: the command line, for the JSON's ``run`` object."""
    from mpieval.saved_runs import merge_runs

    def check_outputs() -> None:
        if args.json:
            pipeline.check_writable(args.json)
        if args.report:
            from mpieval import report

            report.require_plotting()
            report.check_output(args.report, "--report")

    comm.agreed(lambda: check_outputs() if comm.rank == 0 else None)
    merged = merge_runs(args.directories, comm)
    record = None if invocation is None else (lambda: {**pipeline.run_record(
        invocation, comm.size, merged.rows, pipeline.weight_entries(merged.weights,
                                                                    merged.results)),
        "merged": merged.runs})
    comm.agreed(lambda: pipeline.output(merged.specs, merged.results, args.json, args.report,
                                        run=record)
                if comm.rank == 0 else None)
    return 0


def _tune_memory(argv: Sequence[str] | None) -> None:
    """In the command's own process, before MPI starts: an ``eval`` of a per-user kind (its
    rows kept until compute) has glibc map large blocks and keep the smaller ones it frees
    (:func:`mpieval.memory.map_large_blocks`), and numpy ask for no transparent huge pages
    (:func:`mpieval.memory.no_huge_pages`). Before MPI's start, not after it: set after
    it, the kept blocks left a 2-rank ``pn`` run nearly as slow as without them (the
    benchmarks page). The command line is read quietly here; its errors are reported once
    MPI has started, by rank 0."""
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            args = build_parser().parse_args(argv)
    except SystemExit:
        return
    if args.command == "eval" and args.engine != "spark" and any(
            KINDS[name].ids for name in kinds_asked(args) if name in KINDS):
        memory.map_large_blocks()  # a per-user kind keeps its rows until compute
        memory.no_huge_pages()


def _eval_in(args: argparse.Namespace, comm: Comm,
             invocation: pipeline.Invocation | None = None) -> int:
    """``mpieval eval``, set up for the kinds it asks for."""
    if args.engine == "spark":
        if args.gate is not None:
            raise InputError("--gate", "is for --engine mpi (check a Spark run's --json with "
                             "mpieval gate RUN.json RULES.toml)")
        from mpieval.spark.command import run_eval as run_on_spark

        specs = specs_from_args(args)
        if any(spec.slices for spec in specs):
            raise InputError("--slice" if args.config is None else "slice",
                             "is for --engine mpi (Spark runs have no slices yet)")
        return run_on_spark(args, comm, specs, invocation)
    if args.spark_master is not None:
        raise InputError("--spark-master", "is for --engine spark")
    return run_eval(args, comm, invocation=invocation)


def kinds_asked(args: argparse.Namespace) -> list[str]:
    """The kinds ``mpieval eval`` will probably run (a guess made before any check)."""
    if args.config is None:
        return (args.metrics or "auc").split(",")
    try:
        return [spec.kind for spec in load_config(args.config)]
    except (InputError, OSError):
        return []  # the run itself reports it


def specs_from_args(args: argparse.Namespace) -> list[MetricSpec]:
    """The metrics the options ask for: ``--config``, or ``--metrics`` and its flags."""
    _check_flag_values(args)
    flags = kind_flags()
    if args.config is not None:
        given = [flag for flag in ("--metrics", "--name", *flags, *_SLICE_FLAGS)
                 if getattr(args, _flag_dest(flag)) is not None]
        if given:
            raise InputError(given[0], "cannot be used with --config (say it in the config)")
        return load_config(args.config)
    columns: dict[str, str | None] = {}
    options: dict[str, Any] = {}
    for flag, uses in flags.items():
        value = getattr(args, _flag_dest(flag))
        for _, spec in uses:
            (columns if isinstance(spec, Input) else options)[spec.name] = value
    specs = specs_from_flags(args.metrics or "auc", columns=columns, options=options,
                             prefix=args.name)
    slices = None if args.slice is None else args.slice.split(",")
    if args.slice_table_size is not None and not any("table_size" in spec.options
                                                     for spec in specs):
        raise InputError("--slice-table-size", f"no metric of --metrics {args.metrics} "
                         "has a table (--table-size)")
    return [with_slices(spec, slices, args.min_slice_rows,
                        args.slice_table_size if "table_size" in spec.options else None,
                        _SLICE_FLAGS) for spec in specs]


_SLICE_FLAGS = ("--slice", "--min-slice-rows", "--slice-table-size")


def _check_flag_values(args: argparse.Namespace) -> None:
    """Values that would otherwise fall back to a default or write nowhere, silently."""
    if args.metrics is not None and not args.metrics.strip():
        raise InputError("--metrics", f"is empty: list one or more kinds ({', '.join(KINDS)})")
    if args.name is not None:
        check_log_word("--name", args.name)
    if args.json is not None:
        if not args.json:
            raise InputError("--json", "is empty: give the path of the JSON file")
        if args.json == "-":
            raise InputError("--json", "'-' (stdout) is not supported: stdout carries the "
                             "log lines; give a file path")


# -- the gate ----------------------------------------------------------------------------


def _add_gate(commands: Any, ev: argparse.ArgumentParser) -> None:
    """``mpieval gate RUN.json RULES.toml`` and ``mpieval eval --gate RULES.toml``."""
    gate = commands.add_parser(
        "gate", help="check a run's results against release rules",
        description="Check the --json result of a run against the rules of a TOML file "
        "([[rule]] tables: docs/gate.md). One line per check on stdout; exit 0 when every "
        "rule holds, 3 when one fails, 2 on bad input.",
    )
    gate.add_argument("run", metavar="RUN.json")
    gate.add_argument("rules", metavar="RULES.toml")
    ev.add_argument("--gate", metavar="RULES.toml",
                    help="check the results against these rules (docs/gate.md): their lines "
                    "after the log lines, a gate block in --json, exit 3 when one fails")


def _gate_rules(args: argparse.Namespace, comm: Comm) -> list[Any] | None:
    """``--gate``'s rules, read on rank 0 before the run (a bad file: exit 2 on every
    rank); None without ``--gate``."""
    if args.gate is None:
        return None
    from mpieval import gate

    return comm.agreed(lambda: gate.load_rules(args.gate) if comm.rank == 0 else [])


def _gate_hook(rules: list[Any], source: str) -> pipeline.Gate:
    """The gate of a run (rank 0, :data:`mpieval.pipeline.Gate`): its lines on stdout,
    its block in the JSON object."""
    from mpieval import gate

    def checked(data: dict[str, Any]) -> bool:
        verdict = gate.check(rules, data, source)
        _print_lines(verdict.lines())
        data[GATE_KEY] = verdict.to_dict()
        return verdict.passed

    return checked


def _print_lines(lines: list[str]) -> None:
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        pipeline.stdout_to_devnull()


def run_gate(args: argparse.Namespace, comm: Comm) -> int:
    """``mpieval gate RUN.json RULES.toml``: rank 0 checks, every rank returns the status
    (0 passed, 3 failed; bad input raises on every rank)."""
    from mpieval import gate

    def checked() -> bool:
        rules = gate.load_rules(args.rules)
        verdict = gate.check(rules, gate.load_results(args.run), args.rules)
        _print_lines(verdict.lines())
        return verdict.passed

    passed = comm.agreed(lambda: checked() if comm.rank == 0 else True)
    return gate.FAILED if comm.any(not passed) else 0
