#!/usr/bin/env python3
"""Benchmark of issue 12's statistics against another tree (e.g. main), in turn. Repeat with:

    .venv/bin/python scripts/bench_stats.py --base OTHER_CHECKOUT [--rounds 5]

Each round runs one child process per tree (``PYTHONPATH`` set to the tree), alternating,
and reports medians over the rounds:

- ``update()`` rows/s of the ``auc`` kind, one core, 10M rows (float32 pred, int8 label);
- ``compute()`` of the ``auc`` kind at T = 1,000,000 on one rank (this tree: with the
  intervals, AUPRC, tie bound and both curves);
- in this tree only: ``update()`` and ``compute()`` with ``compare`` (a second pred).

With ``--cli FILE --compare COL``, it also times the command line on FILE with and without
``--compare COL`` (this tree only, in turn).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

N_ROWS = 10_000_000
T = 1_000_000


def child(repeat: int) -> None:
    """One tree's figures, as JSON on stdout (median of ``repeat`` calls each)."""
    import warnings

    import numpy as np
    from timing import median_time

    from mpieval import AucMetric, Comm

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    pred = rng.beta(2, 9, N_ROWS).astype(np.float32)
    label = (rng.random(N_ROWS) < pred).astype(np.int8)
    metric = AucMetric(table_size=T, comm=Comm.local())
    metric.update(pred[:10], label[:10])  # loads the compiled kernels

    def update() -> None:
        metric.reset()
        metric.update(pred, label)

    figures = {"update": median_time(update, repeat)}
    metric.compute()
    figures["compute"] = median_time(metric.compute, repeat)
    try:
        paired = AucMetric(table_size=T, compare="b", comm=Comm.local())
    except Exception:  # a tree without compare
        print(json.dumps(figures))
        return
    pred_b = np.clip(pred + rng.normal(0, 0.02, N_ROWS), 0, 1).astype(np.float32)

    def update_paired() -> None:
        paired.reset()
        paired.update(pred, label, compare=pred_b)

    figures["update_compare"] = median_time(update_paired, repeat)
    paired.compute()
    figures["compute_compare"] = median_time(paired.compute, repeat)
    print(json.dumps(figures))


def run_tree(tree: str, repeat: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(repeat)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def time_command(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base", required=True, metavar="OTHER_CHECKOUT",
                        help="the tree to compare with (a checkout of another commit)")
    parser.add_argument("--cli", metavar="FILE")
    parser.add_argument("--compare", metavar="COL", default="pred_b")
    args = parser.parse_args()
    if args.child:
        child(args.repeat)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
    for _ in range(args.rounds):
        runs["this"].append(run_tree(here, args.repeat))
        runs["base"].append(run_tree(args.base, args.repeat))

    def median(tree: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[tree])

    print(f"medians of {args.rounds} rounds (each the median of {args.repeat} calls), "
          f"this tree {here} against {args.base}")
    for tree in ("base", "this"):
        t = median(tree, "update")
        print(f"  {tree:>4}: update() {N_ROWS / t / 1e6:.0f} M rows/s, compute() at T=1e6 "
              f"{median(tree, 'compute') * 1e3:.1f} ms")
    ratio = median("this", "compute") / median("base", "compute")
    print(f"  compute() this/base: {ratio:.2f}x")
    if "update_compare" in runs["this"][0]:
        print(f"  this, compare: update() {N_ROWS / median('this', 'update_compare') / 1e6:.0f}"
              f" M rows/s, compute() {median('this', 'compute_compare') * 1e3:.1f} ms")
    if args.cli:
        mpieval = [sys.executable, "-m", "mpieval", "eval", "--metrics", "auc", args.cli]
        plain, paired = [], []
        for _ in range(args.rounds):
            plain.append(time_command(mpieval))
            paired.append(time_command([*mpieval, "--compare", args.compare]))
        a, b = statistics.median(plain), statistics.median(paired)
        print(f"  CLI on {args.cli}: {a:.2f} s, with --compare {b:.2f} s ({b / a:.2f}x)")


if __name__ == "__main__":
    main()
