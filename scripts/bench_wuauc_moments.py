#!/usr/bin/env python3
"""The cost of the wuauc kind's per-user moments (issue 32: the sums of each user in a
fixed order, for the intervals of the row values): ``WuaucMetric.compute()`` on the same
rows with the moments and without them (the pass over users given no moments to sum, or
their pass of its own replaced by a no-op), alternating, the medians of ``--repeats``
runs each and their ratio. Repeat with:

    .venv/bin/python scripts/bench_wuauc_moments.py [--rows 2000000] [--repeats 5]

Rows: Zipf(1.3) users (a heavy head, many light users) among 300,000, float32 preds, 10%
clicks, 4 tags. Timings are noisy on a shared machine: say the load beside the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from mpieval import Comm, WuaucMetric
from mpieval.kinds.wuauc import kernels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    uid = rng.zipf(1.3, n) % 300_000
    pred = rng.random(n).astype(np.float32)
    label = (rng.random(n) < 0.1).astype(np.int8)
    tag = rng.integers(0, 4, n)
    real = kernels._core.wuauc.moment_sums
    real_users = kernels._core.wuauc.user_sums
    real_grouped = kernels._core.wuauc.grouped_user_sums

    def users_without_moments(*args: object) -> int:
        """The pass over users, its moments (the last argument) left out."""
        return real_users(*args[:-1], kernels._NO_MOMENTS)

    def grouped_without_moments(*args: object) -> None:
        """The pass over grouped rows (no weights, no compared model), its moments left out."""
        real_grouped(*args[:-1], kernels._NO_MOMENTS)

    def compute_seconds() -> tuple[float, float]:
        """Wall and CPU seconds (every thread) of one compute()."""
        metric = WuaucMetric(comm=Comm.local())
        metric.update(uid, pred, label, tag=tag)
        start, cpu = time.perf_counter(), time.process_time()
        metric.compute()
        return time.perf_counter() - start, time.process_time() - cpu

    times: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    try:
        for _ in range(args.repeats):
            for mode in times:
                kernels._core.wuauc.moment_sums = (real if mode == "with"
                                                   else lambda *_: None)
                kernels._core.wuauc.user_sums = (real_users if mode == "with"
                                                 else users_without_moments)
                kernels._core.wuauc.grouped_user_sums = (real_grouped if mode == "with"
                                                         else grouped_without_moments)
                times[mode].append(compute_seconds())
    finally:
        kernels._core.wuauc.moment_sums = real
        kernels._core.wuauc.user_sums = real_users
        kernels._core.wuauc.grouped_user_sums = real_grouped
    for k, clock in enumerate(("wall", "CPU")):
        with_, without = (statistics.median(run[k] for run in times[mode])
                          for mode in ("with", "without"))
        print(f"compute() {clock}, median of {args.repeats}: with the moments {with_:.3f} s, "
              f"without {without:.3f} s, ratio {with_ / without:.2f}")
    print(f"load {os.getloadavg()[0]:.2f}")

if __name__ == "__main__":
    main()
