#!/usr/bin/env python3
"""Benchmark of the ``pn`` kind (issue 4), one rank. Repeat with:

    .venv/bin/python scripts/bench_pn.py                 # defaults below; medians of 3 runs

- 10M rows, 1M users (random uint64 uids), labels in {0,1,2,3}, float32-like preds:
  ``PnMetric.compute()`` (the uid exchange + the per-user count) against one ``np.sort``
  of the 10M uint64 uids timed in the same run; target: at most 8x.
- one user with 1,000,000 rows (5e11 pairs, never enumerated): target under 10 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from timing import median_time

from mpieval.comm import Comm
from mpieval.kinds.pn.kernels import pair_counts
from mpieval.kinds.pn.metric import PnMetric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--big-user", type=int, default=1_000_000, help="rows of the one user")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    comm = Comm()
    if comm.size != 1:
        raise SystemExit("bench_pn.py measures one rank: run it without mpiexec")
    rng = np.random.default_rng(0)
    user_keys = rng.integers(0, 2**64 - 1, size=args.users, dtype=np.uint64, endpoint=True)
    uid = user_keys[rng.integers(0, args.users, size=args.rows)]
    pred = rng.random(args.rows).astype(np.float32)
    label = rng.integers(0, 4, size=args.rows).astype(np.int8)

    pair_counts(np.array([0, 3]), np.zeros(3), np.arange(3.0))  # compile outside the timing

    metric = PnMetric(comm=comm)
    start = time.perf_counter()
    metric.update(uid, pred, label)
    t_update = time.perf_counter() - start
    results = []
    t_compute = median_time(lambda: results.append(metric.compute()), args.repeat)
    t_sort = median_time(lambda: np.sort(uid), args.repeat)
    result = results[-1]
    print(f"{args.rows:,} rows, {args.users:,} users, labels 0..3, one rank "
          f"(medians of {args.repeat})")
    print(f"  update (validate + buffer)  {t_update:7.2f} s")
    print(f"  compute (exchange + count)  {t_compute:7.2f} s")
    print(f"  np.sort of the uint64 uids  {t_sort:7.2f} s")
    print(f"  compute / np.sort           {t_compute / t_sort:7.2f} x   (target <= 8)")
    print(f"  {result.to_log_line('pn')}  tie_pairs={result.tie_pairs}")

    m = args.big_user
    big = PnMetric(comm=comm)
    big.update(np.zeros(m, dtype=np.int64), rng.random(m), rng.integers(0, 4, size=m))
    results = []
    t_big = median_time(lambda: results.append(big.compute()), args.repeat)
    print(f"one user with {m:,} rows ({m * (m - 1) // 2:,} pairs)")
    print(f"  compute                     {t_big:7.2f} s     (target < 10 s)")
    print(f"  {results[-1].to_log_line('pn_one_user')}")


if __name__ == "__main__":
    main()
