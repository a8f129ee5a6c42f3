#!/usr/bin/env python3
"""The cost of the reproducible sums (issue 11): ``auc`` update throughput and ``wuauc``
compute time, for two source trees in the same run. Repeat with::

    git worktree add --detach /tmp/before <commit before the exact sums>
    .venv/bin/python scripts/bench_exact_sums.py /tmp/before .

Each tree runs in its own process (``PYTHONPATH=TREE``), the two alternating, ``--runs``
times each; the figures are medians. One rank:

- ``auc`` ``update()`` of 10M rows (float32 pred, int8 label) in batches of 1M rows, and
  the weighted form (float32 weights), in rows per second;
- ``wuauc`` ``compute()`` of 10M rows over 1M users with 3 tags (the rows are held by
  update beforehand; update is not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROWS = 10_000_000
BATCH = 1_000_000
USERS = 1_000_000


def measure() -> dict[str, float]:
    """One process's figures for the tree on its PYTHONPATH."""
    import numpy as np

    from mpieval import AucMetric, Comm, WuaucMetric

    rng = np.random.default_rng(1)
    pred = rng.random(ROWS, dtype=np.float32)
    label = (rng.random(ROWS) < pred).astype(np.int8)
    weight = rng.random(ROWS, dtype=np.float32) + 0.5
    figures = {}
    for name, w in (("auc_update", None), ("auc_update_weighted", weight)):
        metric = AucMetric(comm=Comm.local())
        metric.update(pred[:1000], label[:1000], None if w is None else w[:1000])  # compile
        metric.reset()
        start = time.perf_counter()
        for i in range(0, ROWS, BATCH):
            metric.update(pred[i:i + BATCH], label[i:i + BATCH],
                          None if w is None else w[i:i + BATCH])
        figures[name] = ROWS / (time.perf_counter() - start)
    users = rng.integers(0, 2**62, size=USERS)
    tags = np.array(["feed", "home", "search"])[rng.integers(0, 3, size=ROWS)]
    metric = WuaucMetric(comm=Comm.local())
    metric.update(users[:4], pred[:4], label[:4], tags[:4])
    metric.compute()  # compile
    metric.reset()
    uid = users[rng.integers(0, USERS, size=ROWS)]
    for i in range(0, ROWS, BATCH):
        metric.update(uid[i:i + BATCH], pred[i:i + BATCH], label[i:i + BATCH],
                      tags[i:i + BATCH])
    start = time.perf_counter()
    metric.compute()
    figures["wuauc_compute"] = time.perf_counter() - start
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(args.runs):
        for which in ("before", "after"):
            tree = os.path.abspath(getattr(args, which))
            env = dict(os.environ, PYTHONPATH=tree, MPIEVAL_NO_MPI="1")
            out = subprocess.run([sys.executable, __file__, "--measure"], env=env,
                                 capture_output=True, text=True, check=True).stdout
            runs[which].append(json.loads(out.strip().splitlines()[-1]))
    print(f"medians of {args.runs} runs, alternating; before = {args.before}, "
          f"after = {args.after}")
    for key in runs["before"][0]:
        b = statistics.median(r[key] for r in runs["before"])
        a = statistics.median(r[key] for r in runs["after"])
        if key.startswith("auc"):
            print(f"{key:22s} before {b / 1e6:7.1f} M rows/s  after {a / 1e6:7.1f} M rows/s  "
                  f"after/before {a / b:.2f}")
        else:
            print(f"{key:22s} before {b:7.2f} s            after {a:7.2f} s            "
                  f"after/before {a / b:.2f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--measure"]:
        print(json.dumps(measure()))
    else:
        main()
