#!/usr/bin/env python3
"""Where one ``mpieval eval`` run's time goes, by phase (issue 37): the command run in this
process (under ``mpiexec`` too: every rank prints its own) with timers around its steps.

    .venv/bin/python scripts/bench_phases.py --metrics auc,wuauc --uid uid --tag tag FILE
    .venv/bin/mpiexec -n 2 .venv/bin/python scripts/bench_phases.py --metrics auc,wuauc \\
        --uid uid --tag tag FILE FILE_B

The arguments are ``mpieval eval``'s. Phases (seconds; wall time, and the CPU time of the
thread that ran the step: the compiled steps release the GIL, so a step run on several
threads adds each thread's): ``read`` (the reader's batches: the parse, on pyarrow's own
threads, is in its wall time only), ``update`` (the metrics fed a batch), ``move`` (rows
moved to their owners after a round), ``compute`` (the whole of it) and inside it
``row sums``, ``parts``, ``group`` (the rows grouped by user), ``moments`` (the
per-user moments pass of issue 32), ``user sums`` (the per-user AUC pass), ``finish``;
``total`` is the command's, start-up excluded; ``waiting`` (part of the phases above) is
the time the ranks spent meeting before a collective (the MPI transport's ``_arrive``: a
non-blocking barrier polled with sleeps), where a rank waits for one still reading.
``--round-bytes N`` sets ``pipeline._ROUND_BYTES`` (a huge value: no moves while reading).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

TIMES: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            entry = TIMES[name]
            entry[0] += time.perf_counter() - wall
            entry[1] += time.thread_time() - cpu
            entry[2] += 1
    return wrapper


def timed_iterator(name: str, make: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        iterator = make(*args, **kwargs)
        step = timed(name, lambda: next(iterator, None))
        while (item := step()) is not None:
            yield item
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--round-bytes", type=int)
    own, argv = parser.parse_known_args()
    from mpieval import pipeline
    from mpieval.cli import main as mpieval_main
    from mpieval.kinds.pn import metric as pn_metric
    from mpieval.kinds.wuauc import kernels
    from mpieval.kinds.wuauc import metric as wuauc_metric
    from mpieval.transport import mpi as mpi_transport
    from mpieval.user_rows import UserRowsMetric

    if own.round_bytes:
        pipeline._ROUND_BYTES = own.round_bytes
    pipeline._batches = timed_iterator("read", pipeline._batches)
    pipeline.Task.feed = timed("update", pipeline.Task.feed)
    UserRowsMetric.move_rows = timed("move", UserRowsMetric.move_rows)
    pn_metric.PnMetric.move_rows = timed("move", pn_metric.PnMetric.move_rows)
    pipeline.Evaluator.compute = timed("compute", pipeline.Evaluator.compute)
    mpi_transport._arrive = timed("waiting", mpi_transport._arrive)
    core = kernels._core.wuauc
    for name, label in (("parts", "parts"), ("group", "group"), ("group_rows", "group"),
                        ("moment_sums", "moments"), ("user_sums", "user sums"),
                        ("grouped_user_sums", "user sums"), ("row_sums", "row sums")):
        if hasattr(core, name):  # an older tree may lack one
            setattr(core, name, timed(f"  {label}", getattr(core, name)))
    wuauc_metric.WuaucMetric.finish = timed("  finish", wuauc_metric.WuaucMetric.finish)
    start = time.perf_counter()
    status = mpieval_main(["eval", *argv], own_process=True)
    total = time.perf_counter() - start
    rank = ""
    if "mpi4py.MPI" in sys.modules:
        rank = f"rank {sys.modules['mpi4py.MPI'].COMM_WORLD.Get_rank()}: "
    print(f"{rank}phase: wall s, thread CPU s, calls", file=sys.stderr)
    for name in ("read", "update", "move", "compute", "  row sums", "  parts", "  group",
                 "  moments", "  user sums", "  finish"):
        wall, cpu, calls = TIMES[name]
        print(f"{rank}{name:12s} {wall:7.3f} {cpu:7.3f} {calls:6d}", file=sys.stderr)
    print(f"{rank}{'total':12s} {total:7.3f}", file=sys.stderr)
    wall, cpu, calls = TIMES["waiting"]
    print(f"{rank}{'waiting':12s} {wall:7.3f} {cpu:7.3f} {calls:6d}", file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
