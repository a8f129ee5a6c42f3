#!/usr/bin/env python3
"""Benchmark of the ``auc`` kind (issue 2). Repeat with:

    .venv/bin/python scripts/bench_auc.py            # runs its 2-rank part under mpiexec itself

One rank, 10M rows (float32 pred, int8 label, CTR ~0.18):
- ``update()`` rows/s (validation included), against numpy's plain ``bincount`` of the
  table alone, the best numpy-only form (chunked for cache), a bare fused loop in C
  (``bench_update.plain_loop``), and ``sklearn.metrics.roc_auc_score`` on the same arrays,
  all in this run (medians).
- ``compute()`` at T = 1,000,000, including the Allreduce merge, at 2 ranks.
- the bucket-error sweep of the compiled kernel.
- state bytes per metric, before and after 10M rows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_update import plain_loop
from timing import median_time

N_ROWS = 10_000_000
T = 1_000_000



def ctr_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pred = rng.beta(2, 9, n).astype(np.float32)  # mean ~0.18
    label = (rng.random(n) < pred).astype(np.int8)
    return pred, label


def single_rank(repeat: int) -> None:
    from sklearn.metrics import roc_auc_score

    from mpieval import AucMetric, Comm
    from mpieval.kinds.auc.kernels import bucket_error_from_table

    pred, label = ctr_data(N_ROWS)

    def update() -> None:
        metric = AucMetric(table_size=T, comm=Comm.local())
        metric.update(pred, label)

    def plain_bincount() -> None:
        bucket = np.minimum((pred.astype(np.float64) * T).astype(np.intp), T - 1)
        np.bincount(bucket + label.astype(np.intp) * T, minlength=2 * T)

    def chunked_numpy(chunk: int = 1 << 16) -> None:  # the best numpy-only form found
        table = np.zeros(2 * T)
        scaled, diff = np.empty(chunk), np.empty(chunk)
        index = np.empty(N_ROWS, dtype=np.intp)
        abserr = sqrerr = pred_sum = 0.0
        for start in range(0, N_ROWS, chunk):
            p, y = pred[start : start + chunk], label[start : start + chunk]
            m = len(p)
            s, d, ix = scaled[:m], diff[:m], index[start : start + m]
            np.multiply(p, float(T), out=s, dtype=np.float64)
            ix[...] = s
            np.minimum(ix, T - 1, out=ix)
            ix += y.astype(np.intp) * T
            np.subtract(p, y, out=d, dtype=np.float64)
            sqrerr += float(d @ d)
            abserr += float(np.abs(d, out=d).sum())
            pred_sum += float(p.sum(dtype=np.float64))
        table += np.bincount(index, minlength=2 * T)

    folder = tempfile.mkdtemp()
    plain = plain_loop(Path(folder))
    table, plain_sums = np.zeros((2, T)), np.zeros(3)
    update()  # warm-up
    t_update = median_time(update, repeat)
    t_bincount = median_time(plain_bincount, repeat)
    t_chunked = median_time(chunked_numpy, repeat)
    t_fused = median_time(lambda: plain(pred, label, table, plain_sums), repeat)
    shutil.rmtree(folder)
    t_sklearn = median_time(lambda: roc_auc_score(label, pred), max(1, repeat // 2))
    rate = N_ROWS / t_update / 1e6
    print(f"update(): {t_update * 1e3:.1f} ms for 10M rows = {rate:.0f} M rows/s")
    print(f"  numpy plain bincount (table only): {N_ROWS / t_bincount / 1e6:.0f} M rows/s")
    print(f"  chunked numpy, table and sums:     {N_ROWS / t_chunked / 1e6:.0f} M rows/s")
    print(f"  fused plain loop (C, g++ -O2):     {N_ROWS / t_fused / 1e6:.0f} M rows/s")
    print(f"  sklearn roc_auc_score:             {t_sklearn * 1e3:.0f} ms "
          f"-> update() is {t_sklearn / t_update:.1f}x faster")

    metric = AucMetric(table_size=T, comm=Comm.local())
    before = metric.state.buffer.nbytes
    metric.update(pred, label)
    print(f"state: {before / 2**20:.1f} MiB before, {metric.state.buffer.nbytes / 2**20:.1f} MiB "
          f"after 10M rows")

    negatives, positives = metric.state.summed("table").copy()
    t_kernel = median_time(lambda: bucket_error_from_table(negatives, positives), repeat)
    print(f"bucket error sweep, T=1e6: compiled {t_kernel * 1e3:.1f} ms")


def compute_part(repeat: int) -> None:
    from mpieval import AucMetric, Comm

    comm = Comm()
    pred, label = ctr_data(N_ROWS)
    lo = comm.rank * N_ROWS // comm.size
    hi = (comm.rank + 1) * N_ROWS // comm.size
    metric = AucMetric(table_size=T, comm=comm)
    metric.update(pred[lo:hi], label[lo:hi])
    metric.compute()  # warm-up (compiles or loads the cached kernel)
    times = []
    for _ in range(repeat):
        comm.barrier()
        start = time.perf_counter()
        result = metric.compute()
        times.append(time.perf_counter() - start)
    slowest = comm.allgather(statistics.median(times))
    if comm.rank == 0:
        print(f"compute() at T=1e6, {comm.size} ranks, 10M rows in all: "
              f"{max(slowest) * 1e3:.1f} ms (median of {repeat}, slowest rank)")
        print("  " + result.to_log_line("bench"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compute-part", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    if args.compute_part:
        compute_part(args.repeat)
        return
    single_rank(args.repeat)
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    subprocess.run(
        [mpiexec, "-n", str(args.ranks), sys.executable, __file__, "--compute-part",
         "--repeat", str(args.repeat)],
        check=True,
    )


if __name__ == "__main__":
    main()
