#!/usr/bin/env python3
"""Weak scaling of ``mpieval eval`` by accounting (issue 37): ``mpiexec -n 2`` on two files
against two independent one-rank runs, one file each, started together.

    .venv/bin/python scripts/bench_weak.py pairs --repeats 5 [--metrics auc] [FILE FILE_B]
    .venv/bin/python scripts/bench_weak.py account --repeats 6 [--source OLD_TREE]
    .venv/bin/mpiexec -n 2 .venv/bin/python scripts/bench_weak.py timeline FILE FILE_B
    .venv/bin/python scripts/bench_weak.py timeline FILE          # one rank, for comparison

Both sides run with ``MPIEVAL_THREADS=1`` (what ``mpiexec -n 2`` gives a rank by default;
``--threads``), each process in a session of its own, as ``mpiexec`` starts its ranks (the
kernel's autogroups then share a busy machine's CPU alike between the two sides; started
from one session, the two independent runs would share one group's share). The files
default to ``scripts/bench_cli.py``'s two 10M-row traffic files (``bench-data/10m-traffic.tsv``
and its hard link ``-b``). ``--metrics`` and ``--extra=ARG`` (repeated) make the command;
``--source DIR`` runs ``mpieval`` from another source folder with its built ``_core`` (a
tree before a change).

``pairs``: alternating, each rank / process under ``/usr/bin/time`` (its user and system
CPU seconds); prints per pair the wall and CPU of the 2-rank run and of the two runs
together, then the medians of the pairs' ratios, with the load average. ``--baseline DIR``:
each repeat also a pair of the tree in DIR, the trees in turn.

``account``: ``timeline`` runs of both sides, alternating; per phase, the medians (then
the means) over processes and runs of each side's wall and CPU seconds, and their
difference: where the 2-rank run's extra time goes (a mean counts the runs where a rank
waited long, spinning, in ``MPI_Init``; the median of each phase leaves them out).

``timeline``: one ``mpieval eval`` in this process with marks at its steps (wall seconds
since the process started, from ``/proc/self/stat``, and the process's CPU seconds, every
thread): the imports, MPI's start (``Comm.world_or_alone``), the plan, the reading rounds
(with the time spent collecting each round's sum), compute (with the time spent meeting
the others before a collective), the output. Every rank prints its own, on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MPIEVAL = os.environ.get("MPIEVAL") or str(BIN / "mpieval")
MPIEXEC = os.environ.get("MPIEXEC") or str(BIN / "mpiexec")
FILES = [str(ROOT / "bench-data" / name) for name in ("10m-traffic.tsv", "10m-traffic-b.tsv")]
TIMED = 'exec /usr/bin/time -f "%e %U %S" -o "$0/cpu.${PMI_RANK:-$1}" "${@:2}"'


# -- pairs ------------------------------------------------------------------------------


def run_timed(commands: list[list[str]], env: dict[str, str], scratch: str | None = None
              ) -> tuple[float, list[float]]:
    """Wall seconds until the last of ``commands`` (started together, each in a session of
    its own, as ``mpiexec`` starts each rank) ends, and the CPU seconds (user + system) of
    each process each wraps: under ``mpiexec`` every rank's (``/usr/bin/time``'s files
    ``cpu.RANK`` in ``scratch``)."""
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory())
        start = time.perf_counter()
        running = []
        for index, command in enumerate(commands):
            launcher, rest = (command[:3], command[3:]) if command[0] == MPIEXEC else ([], command)
            wrapped = [*launcher, "bash", "-c", TIMED, scratch, str(index), *rest]
            running.append(subprocess.Popen(wrapped, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True,
                                            env={**os.environ, **env}))
        for process in running:
            if process.wait():
                raise subprocess.CalledProcessError(process.returncode, process.args)
        wall = time.perf_counter() - start
        cpu = []
        for name in sorted(n for n in os.listdir(scratch) if n.startswith("cpu.")):
            with open(os.path.join(scratch, name)) as times:
                fields = times.read().split()[-3:]
            cpu.append(float(fields[1]) + float(fields[2]))
    return wall, cpu


# ``mpieval`` from another source folder (``--source``; scripts/same_bits.py's way): the
# package installed in this environment is kept out of the import path.
_FROM_SOURCE = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path"
    " if 'editable' not in type(f).__module__.lower()];"
    " sys.path.insert(0, sys.argv.pop(1)); from mpieval.cli import command; sys.exit(command())"
)


def use_source(source: str | None) -> None:
    """Import ``mpieval`` from ``source`` (a folder with the package and its built
    ``_core``) instead of the installed one."""
    if source:
        sys.meta_path[:] = [f for f in sys.meta_path
                            if "editable" not in type(f).__module__.lower()]
        sys.path.insert(0, source)


def pairs(args: argparse.Namespace) -> None:
    files = args.files or FILES
    trees = {"this tree": args.source}
    if args.baseline:
        trees = {"baseline": args.baseline, **trees}
    env = {"MPIEVAL_THREADS": str(args.threads)}
    print(f"load {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; {args.metrics} "
          f"{' '.join(args.extra)}; MPIEVAL_THREADS={args.threads}", flush=True)
    ratios: dict[str, list[tuple[float, float]]] = {tree: [] for tree in trees}
    for repeat in range(args.repeats):
        for tree, source in (trees.items() if repeat % 2 == 0 else reversed(trees.items())):
            command = [sys.executable, "-c", _FROM_SOURCE, source] if source else [MPIEVAL]
            argv = [*command, "eval", "--metrics", args.metrics, *args.extra]
            measured = {}
            for mode in (("ranks", "alone") if repeat % 2 == 0 else ("alone", "ranks")):
                if mode == "ranks":
                    measured[mode] = run_timed([[MPIEXEC, "-n", "2", *argv, *files]], env)
                else:
                    measured[mode] = run_timed([[*argv, file] for file in files], env)
            (wall2, cpu2), (wall1, cpu1) = measured["ranks"], measured["alone"]
            ratios[tree].append((wall2 / wall1, sum(cpu2) / sum(cpu1)))
            print(f"{tree}, pair {repeat + 1}: mpiexec -n 2 {wall2:.2f} s wall, CPU "
                  f"{' + '.join(f'{c:.2f}' for c in cpu2)}; two alone {wall1:.2f} s, CPU "
                  f"{' + '.join(f'{c:.2f}' for c in cpu1)}: {ratios[tree][-1][0]:.3f}x wall, "
                  f"{ratios[tree][-1][1]:.3f}x CPU (load {os.getloadavg()[0]:.2f})", flush=True)
    for tree, measured_ratios in ratios.items():
        wall, cpu = (statistics.median(r[k] for r in measured_ratios) for k in (0, 1))
        print(f"{tree}: median of {args.repeats} pairs: {wall:.3f}x wall, {cpu:.3f}x CPU "
              f"(target <= 1.05x)")
    print(f"load {os.getloadavg()[0]:.2f}")


# -- timeline ---------------------------------------------------------------------------


def started_ago() -> float:
    """Seconds since this process started (``/proc/self/stat``, to the clock tick)."""
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as uptime:
        now = float(uptime.read().split()[0])
    return now - ticks / os.sysconf("SC_CLK_TCK")


ORIGIN = time.perf_counter() - started_ago()
MARKS: list[tuple[str, float, float]] = []
SPANS: dict[str, list[float]] = {}


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def mark(label: str) -> None:
    MARKS.append((label, time.perf_counter() - ORIGIN, cpu_now()))


def marked(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark(f"{label} starts")
        try:
            return function(*args, **kwargs)
        finally:
            mark(f"{label} ends")
    return wrapper


def spanned(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), cpu_now()
        try:
            return function(*args, **kwargs)
        finally:
            span = SPANS.setdefault(label, [0.0, 0.0, 0])
            span[0] += time.perf_counter() - wall
            span[1] += cpu_now() - cpu
            span[2] += 1
    return wrapper


def timeline(args: argparse.Namespace) -> None:
    mark("python started")
    use_source(args.source)
    from mpieval import cli, comm, pipeline
    from mpieval.kinds import kind_named
    from mpieval.transport import mpi as mpi_transport

    mark("mpieval imported")
    comm.Comm.world_or_alone = marked("MPI start (Comm.world_or_alone)",
                                      comm.Comm.world_or_alone)
    pipeline.plan_job = marked("plan (rank 0)", pipeline.plan_job)
    pipeline.evaluate_job = marked("evaluate_job", pipeline.evaluate_job)
    pipeline._return_freed_memory = marked("freed memory returned",
                                           pipeline._return_freed_memory)
    pipeline.Evaluator.compute = marked("compute", pipeline.Evaluator.compute)
    pipeline.output = marked("output", pipeline.output)
    comm.PendingSum.result = spanned("a round's sum collected", comm.PendingSum.result)
    mpi_transport._arrive = spanned("meeting before a collective", mpi_transport._arrive)
    pipeline.Task.feed = spanned("update", pipeline.Task.feed)
    comm.Comm.sum = spanned("sum (compute's Allreduce)", comm.Comm.sum)
    comm.Comm.agree = spanned("agree (errors)", comm.Comm.agree)
    comm.Comm.allgather = spanned("allgather", comm.Comm.allgather)
    from mpieval.user_rows import UserRowsMetric

    UserRowsMetric.move_rows = spanned("move (per-user rows to their owners)",
                                       UserRowsMetric.move_rows)
    for kind in ("auc",):
        metric_class = type(kind_named(kind).build({}, comm.Comm.local()))
        metric_class.local_sums = spanned(f"{kind} local_sums", metric_class.local_sums)
        metric_class.finish = spanned(f"{kind} finish", metric_class.finish)
    status = cli._main(["eval", "--metrics", args.metrics, *args.extra, *args.files])
    mark("command done")
    rank = ""
    if "mpi4py.MPI" in sys.modules:
        rank = f"rank {sys.modules['mpi4py.MPI'].COMM_WORLD.Get_rank()}: "
    out = os.environ.get("BENCH_WEAK_OUT")
    if out:  # for ``account``: the marks and spans of this process, as JSON
        with open(f"{out}.{os.environ.get('PMI_RANK', args.index)}.json", "w") as file:
            json.dump({"marks": MARKS, "spans": SPANS}, file)
    else:
        lines = [f"{rank}{'wall s':>7} {'CPU s':>7}  mark"]
        lines += [f"{rank}{wall:7.3f} {cpu:7.3f}  {label}" for label, wall, cpu in MARKS]
        lines += [f"{rank}{'':15}  {label}: {wall:.3f} s wall, {cpu:.3f} s CPU, {calls} calls"
                  for label, (wall, cpu, calls) in SPANS.items()]
        print("\n".join(lines), file=sys.stderr, flush=True)
    sys.exit(status)


# -- account ----------------------------------------------------------------------------

# The phases of a run: from one mark to the next (``timeline``), and the process's exit
# (``command done`` to the end that ``/usr/bin/time`` saw: MPI's finalize, the interpreter's).
PHASES = [
    ("interpreter start", None, "python started"),
    ("imports (mpieval, numpy, pyarrow)", "python started", "mpieval imported"),
    ("MPI start (import, MPI_Init, Dup)", "MPI start (Comm.world_or_alone) starts",
     "MPI start (Comm.world_or_alone) ends"),
    ("plan, shared; metrics made", "MPI start (Comm.world_or_alone) ends",
     "evaluate_job starts"),
    ("reading rounds (read, update, sums)", "evaluate_job starts",
     "freed memory returned starts"),
    ("compute", "compute starts", "compute ends"),
    ("output, last agreement", "compute ends", "command done"),
    ("exit (MPI_Finalize, interpreter)", "command done", None),
]


def account(args: argparse.Namespace) -> None:
    """``timeline`` runs of ``mpiexec -n 2`` on the two files and of two processes on one
    file each, started together (each in its own session, as ``mpiexec`` starts its
    ranks: the kernel's autogroups then share the CPU alike), alternating; the median per
    phase of each process's wall and CPU seconds, and the difference."""
    files = args.files or FILES
    script = [sys.executable, str(Path(__file__).resolve()), "timeline", "--metrics",
              args.metrics, *(f"--extra={e}" for e in args.extra),
              *([f"--source={args.source}"] if args.source else [])]
    env = {"MPIEVAL_THREADS": str(args.threads)}
    rows: dict[str, list[dict[str, tuple[float, float]]]] = {"alone": [], "ranks": []}
    print(f"load {os.getloadavg()[0]:.2f}; {args.metrics} {' '.join(args.extra)}; "
          f"MPIEVAL_THREADS={args.threads}; {args.repeats} runs of each, alternating",
          flush=True)
    for repeat in range(args.repeats):
        order = ("ranks", "alone") if repeat % 2 == 0 else ("alone", "ranks")
        for mode in order:
            with tempfile.TemporaryDirectory() as scratch:
                out = os.path.join(scratch, "timeline")
                if mode == "ranks":
                    commands = [[MPIEXEC, "-n", "2", *script, *files]]
                else:
                    commands = [[*script, f"--index={i}", file] for i, file in enumerate(files)]
                run_timed(commands, {**env, "BENCH_WEAK_OUT": out}, scratch)
                for index in range(len(files)):
                    rows[mode].append(phases_of(out, scratch, index))
    for average in (statistics.median, statistics.fmean):
        title = f"phase ({average.__name__}s over processes and runs)"
        lines = [f"{title:40} {'alone':>13} {'2 ranks':>13} {'difference':>13}",
                 f"{'':40} {'wall':>6} {'CPU':>6} {'wall':>6} {'CPU':>6} {'wall':>6} {'CPU':>6}"]
        for name, _, _ in [*PHASES, ("total", None, None)]:
            cells = []
            for mode in ("alone", "ranks"):
                wall, cpu = (average(row[name][k] for row in rows[mode]) for k in (0, 1))
                cells.append((wall, cpu))
            (w1, c1), (w2, c2) = cells
            lines.append(f"{name:40} {w1:6.3f} {c1:6.3f} {w2:6.3f} {c2:6.3f} {w2 - w1:+6.3f} "
                         f"{c2 - c1:+6.3f}")
        print("\n".join(lines))
    print(f"load {os.getloadavg()[0]:.2f}")


def phases_of(out: str, scratch: str, index: int) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds per phase of one process (its marks and its ``/usr/bin/time``)."""
    with open(f"{out}.{index}.json") as file:
        marks = {label: (wall, cpu) for label, wall, cpu in json.load(file)["marks"]}
    with open(os.path.join(scratch, f"cpu.{index}")) as times:
        elapsed, user, system = map(float, times.read().split()[-3:])
    end = (elapsed, user + system)
    phases = {}
    for name, first, last in PHASES:
        a = (0.0, 0.0) if first is None else marks[first]
        b = end if last is None else marks[last]
        phases[name] = (b[0] - a[0], b[1] - a[1])
    phases["total"] = end
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("pairs", "timeline", "account"))
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--metrics", default="auc")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--source", help="mpieval from this source folder (a tree before)")
    parser.add_argument("--baseline", help="pairs: also, alternating, mpieval from this "
                        "source folder (a tree before)")
    parser.add_argument("--extra", action="append", default=[],
                        help="one more argument of mpieval eval (repeat it: "
                             "--extra=--uid --extra=uid)")
    args = parser.parse_intermixed_args()
    {"pairs": pairs, "timeline": timeline, "account": account}[args.mode](args)


if __name__ == "__main__":
    main()
