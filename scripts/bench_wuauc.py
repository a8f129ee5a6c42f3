"""Benchmark of the ``wuauc`` kind: compute() time against one np.sort, peak memory per row.

One rank (the issue's target)::

    /tmp/venv/bin/python scripts/bench_wuauc.py                      # 10M rows of traffic
    /tmp/venv/bin/python scripts/bench_wuauc.py --shape uniform      # 1M users, 3 tags
    /tmp/venv/bin/python scripts/bench_wuauc.py --pred-dtype float64  # general (non-float32) preds

Two ranks (time in the exchange versus the whole compute)::

    mpiexec -n 2 /tmp/venv/bin/python scripts/bench_wuauc.py

Rows are made batch by batch from a seeded generator (a user's rows land on every rank),
so the input never sits in memory whole: the memory figures are the metric's own.
``compute()`` and ``np.sort`` of the 10M uint64 keys are timed alternately in the same
process, several times each, and the medians compared. Peak memory: the resident set's
high-water mark (``VmHWM``, reset after the set-up) minus the resident set before the first
update, and tracemalloc's peak of allocated bytes (which counts the untouched capacity of
the growing buffers too), both per row held on this rank.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import traffic

import mpieval.kinds.wuauc.metric as wuauc_module
from mpieval.comm import Comm
from mpieval.kinds.wuauc.metric import WuaucMetric

TAG_NAMES = np.array(["feed", "home", "search"])


def batches(args: argparse.Namespace, comm: Comm) -> Iterator[dict[str, np.ndarray]]:
    """This rank's share of the rows, ``args.batch`` rows at a time."""
    per_rank = args.rows // comm.size + (comm.rank < args.rows % comm.size)
    if args.shape != "uniform":
        rows = traffic.source(args.shape, seed=11 + comm.rank)
        dtype = np.float32 if args.pred_dtype == "float32" else np.float64
        for start in range(0, per_rank, args.batch):
            batch = rows.rows(min(args.batch, per_rank - start))
            batch["pred"] = batch["pred"].astype(dtype)
            yield batch
        return
    users = np.random.default_rng(7).integers(0, 2**63, size=args.users, dtype=np.int64)
    rng = np.random.default_rng([11, comm.rank])
    for start in range(0, per_rank, args.batch):
        n = min(args.batch, per_rank - start)
        pred = rng.random(n, dtype=np.float32 if args.pred_dtype == "float32" else np.float64)
        yield {
            "uid": users[rng.integers(0, args.users, size=n)],
            "pred": pred,
            "label": (rng.random(n) < pred).astype(np.int8),
            "tag": TAG_NAMES[rng.integers(0, len(TAG_NAMES), size=n)],
        }


def rss_bytes(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def median_time(fn: Callable[[], Any], repeats: int, comm: Comm) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        comm.barrier()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--shape", choices=(*traffic.SHAPES, "uniform"), default="traffic",
                        help="the rows (scripts/traffic.py): traffic (default), heavy, or "
                             "uniform (--users users of equal activity, uniform preds, three "
                             "tags: the figures before issue 37)")
    parser.add_argument("--users", type=int, default=1_000_000, help="users of --shape uniform")
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pred-dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also report tracemalloc's peak (a separate, slower pass)")
    args = parser.parse_args()
    comm = Comm()
    say = print if comm.rank == 0 else (lambda *a, **k: None)

    # Memory: the metric's rows, then a compute, with the high-water mark reset first.
    metric = WuaucMetric(comm=comm)
    baseline = rss_bytes("VmRSS")
    reset_peak_rss()
    start = time.perf_counter()
    for batch in batches(args, comm):
        metric.update(batch["uid"], batch["pred"], batch["label"], batch["tag"])
        del batch
    update_seconds = time.perf_counter() - start
    after_update = rss_bytes("VmHWM") - baseline
    result = metric.compute()
    peak = rss_bytes("VmHWM") - baseline
    rows = metric.rows

    # Time: compute() and one np.sort of as many uint64 keys, alternately.
    keys = np.random.default_rng(3).integers(0, 2**64 - 1, size=args.rows, dtype=np.uint64)
    exchange_seconds: list[float] = []
    exchange = wuauc_module.exchange_to_owners

    def timed_exchange(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        owned = exchange(*a, **k)
        exchange_seconds.append(time.perf_counter() - start)
        return owned

    wuauc_module.exchange_to_owners = timed_exchange
    compute_times, sort_times = [], []
    for _ in range(args.repeats):
        compute_times.append(median_time(metric.compute, 1, comm)[0])
        sort_times.append(median_time(lambda: np.sort(keys), 1, comm)[0])
    wuauc_module.exchange_to_owners = exchange
    compute_s, sort_s = statistics.median(compute_times), statistics.median(sort_times)
    exchange_s = statistics.median(exchange_seconds)
    slowest = comm.allgather((compute_s, exchange_s, peak, after_update, rows))

    say(f"rows={args.rows} shape={args.shape} (uniform: users={args.users} "
        f"tags={len(TAG_NAMES)}) ranks={comm.size} "
        f"pred={args.pred_dtype} batch={args.batch} repeats={args.repeats}")
    say(f"update (all batches, rank 0): {update_seconds:.2f} s")
    say(f"np.sort of {args.rows} uint64 keys: {sort_s:.3f} s (median)")
    for rank, (c, x, p, u, n) in enumerate(slowest):
        say(f"rank {rank}: rows={n} compute={c:.3f} s exchange={x:.3f} s "
            f"({x / c:.0%} of compute) peak_rss={p / 2**20:.0f} MiB = {p / max(n, 1):.1f} B/row "
            f"(after updates {u / max(n, 1):.1f} B/row)")
    worst = max(c for c, *_ in slowest)
    say(f"compute / np.sort = {worst / sort_s:.2f}x (target <= 5)")
    say(f"peak memory per row = {max(p / max(n, 1) for _, _, p, _, n in slowest):.1f} B "
        "(target < 64)")
    say(result.to_log_line("bench_wuauc"))

    if args.tracemalloc:
        del metric, keys
        metric = WuaucMetric(comm=comm)
        tracemalloc.start()
        for batch in batches(args, comm):
            metric.update(batch["uid"], batch["pred"], batch["label"], batch["tag"])
            del batch
        metric.compute()
        _, traced = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        say(f"tracemalloc peak (allocated, rank 0): {traced / 2**20:.0f} MiB = "
            f"{traced / max(metric.rows, 1):.1f} B/row")


if __name__ == "__main__":
    main()
