#!/usr/bin/env python3
"""The ``ranking`` kind's intervals and paired test by simulation (issues 32, 34). Repeat:

    .venv/bin/python scripts/ranking_coverage.py [--datasets 2000] [--seed 34]

Users of unequal sizes (log-uniform 5-200 rows), graded labels, ties in the preds
(tests/simulation_ranking.py). For data sets of 10, 30, 100 and 300 valid users:

- the null (models A and B exchangeable, every true difference 0): the share of data sets
  with ``X_diff_p < 0.05`` (the size of the paired test; target <= 6.5%);
- model B less noisy than A: the share whose ``X_diff_ci95`` covers the true difference,
  and whose ``ci95`` of A's value covers its truth (target 93-97%).

A null interval or p-value counts as no cover and no rejection. Prints markdown tables
with each share's binomial standard error, for docs/statistics.md.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import simulation_ranking as sim

USERS = (10, 30, 100, 300)
NULL = (1.0, 1.0)
BETTER_B = (1.0, 0.8)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    null_truth = sim.truth(rng, *NULL)
    null_truth["diff"] = dict.fromkeys(sim.NAMES, 0.0)  # exchangeable: exactly 0
    better_truth = sim.truth(rng, *BETTER_B)
    print("true values of A:", {k: round(v, 4) for k, v in better_truth["a"].items()})
    print("true B - A:", {k: round(v, 4) for k, v in better_truth["diff"].items()})
    print("their standard errors:",
          {k: float(f"{v:.2g}") for k, v in better_truth["diff_se"].items()})
    null = {users: sim.rates(rng, args.datasets, users, *NULL, null_truth) for users in USERS}
    better = {users: sim.rates(rng, args.datasets, users, *BETTER_B, better_truth)
              for users in USERS}
    table("Size of the paired test under the null (share of X_diff_p < 0.05)", null,
          "reject", args.datasets)
    table("Coverage of X_diff_ci95 under the null (true difference 0)", null,
          "diff_cover", args.datasets)
    table("Coverage of X_diff_ci95, model B better (true difference above)", better,
          "diff_cover", args.datasets)
    table("Coverage of ci95 of A's values", better, "cover", args.datasets)


def table(title: str, cells: dict[int, dict[str, dict[str, float]]], what: str,
          datasets: int) -> None:
    print(f"\n{title}, {datasets} data sets a cell\n")
    print("| value | " + " | ".join(f"{users} users" for users in cells) + " |")
    print("|---|" + "---|" * len(cells))
    for name in sim.NAMES:
        shares = [cells[users][what][name] for users in cells]
        print(f"| `{name}` | " + " | ".join(
            f"{100 * share:.1f}% ± {100 * sim.binomial_se(share, datasets):.1f}"
            for share in shares) + " |")


if __name__ == "__main__":
    main()
