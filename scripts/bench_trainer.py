#!/usr/bin/env python3
"""Benchmark of mpieval inside a trainer (issue 10). Repeat with:

    .venv/bin/python scripts/bench_trainer.py        # starts its 2-process parts itself

- ``update()`` of ``auc`` from CPU torch tensors against the same data as numpy arrays
  (rows/s, medians, alternating; the target is at least 0.9x).
- ``compute()`` of ``auc`` at T = 1,000,000 with 2 processes: over torch gloo (torchrun)
  and over MPI (mpiexec), medians of the ranks' slowest.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import numpy as np
from timing import median_time

ROWS, BATCH, T = 4_000_000, 100_000, 1_000_000


def update_throughput(repeat: int) -> None:
    import torch

    from mpieval import AucMetric

    rng = np.random.default_rng(0)
    pred = rng.random(ROWS, dtype=np.float32)
    label = (rng.random(ROWS) < 0.2).astype(np.int64)
    batches = [(pred[i : i + BATCH], label[i : i + BATCH]) for i in range(0, ROWS, BATCH)]
    tensors = [(torch.from_numpy(p), torch.from_numpy(y)) for p, y in batches]

    def feed(data) -> None:
        metric = AucMetric(table_size=T)
        for p, y in data:
            metric.update(p, y)

    feed(batches)  # compiled kernels loaded
    numpy_s, torch_s = [], []
    for _ in range(repeat):  # alternating, so that the machine's load hits both alike
        numpy_s.append(median_time(lambda: feed(batches), 1))
        torch_s.append(median_time(lambda: feed(tensors), 1))
    numpy_rate, torch_rate = ROWS / np.median(numpy_s), ROWS / np.median(torch_s)
    print(f"update() auc, {ROWS:,} rows in batches of {BATCH:,}: numpy {numpy_rate / 1e6:.1f} "
          f"M rows/s, CPU torch tensors {torch_rate / 1e6:.1f} M rows/s "
          f"({torch_rate / numpy_rate:.2f}x)")


def compute_time(repeat: int) -> None:
    """One process of the 2-process compute benchmark (under torchrun or mpiexec)."""
    from mpieval import AucMetric

    if "TORCHELASTIC_RUN_ID" in os.environ:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    metric = AucMetric(table_size=T)
    rng = np.random.default_rng(metric.comm.rank)
    metric.update(rng.random(1_000_000), (rng.random(1_000_000) < 0.2).astype(np.int64))
    metric.compute()
    times = [median_time(metric.compute, 1) for _ in range(repeat)]
    slowest = metric.comm.allgather(times)
    if metric.comm.rank == 0:
        transport = type(metric.comm._transport).__name__
        per_run = np.max(np.array(slowest), axis=0)
        print(f"compute() auc T={T:,}, {metric.comm.size} processes, {transport}: "
              f"median {np.median(per_run) * 1e3:.1f} ms (of {repeat})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("part", nargs="?", choices=["update", "compute"])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.part == "update":
        return update_throughput(args.repeat)
    if args.part == "compute":
        return compute_time(args.repeat)
    here, bin_dir = os.path.abspath(__file__), os.path.dirname(sys.executable)
    update_throughput(args.repeat)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([os.path.join(bin_dir, "torchrun"), "--nproc_per_node", "2",
                    "--master_port", str(port), here, "compute", "--repeat",
                    str(args.repeat)], check=True, stderr=subprocess.DEVNULL)
    subprocess.run([os.path.join(bin_dir, "mpiexec"), "-n", "2", sys.executable, here,
                    "compute", "--repeat", str(args.repeat)], check=True)


if __name__ == "__main__":
    main()
