#!/usr/bin/env python3
"""Coverage of the 95% intervals by simulation (issue 12). Repeat with:

    .venv/bin/python scripts/coverage.py [--datasets 1000]

For binormal data sets (tests/simulation.py: positives N(d, 1), negatives N(0, 1), pred =
sigmoid(score), 30% positives) of several sizes and separations, the share of data sets
whose interval covers the true value: auc (Phi(d / sqrt 2)), actual_ctr, predicted_ctr,
copc. The target band is 93-97%; with D data sets a share's standard error is
sqrt(0.95 * 0.05 / D).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import simulation


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    names = ("auc", "actual_ctr", "predicted_ctr", "copc")
    print(f"95% interval coverage over {args.datasets} data sets each "
          f"(standard error {100 * math.sqrt(0.95 * 0.05 / args.datasets):.1f} points)")
    print(f"{'rows':>8} {'d':>4} {'true auc':>8} " + " ".join(f"{n:>13}" for n in names))
    for n in (1000, 10_000):
        for d in (0.5, 1.0, 2.0):
            coverage = simulation.auc_coverage(rng, args.datasets, n, d)
            auc = simulation.truth(d)["auc"]
            print(f"{n:>8} {d:>4} {auc:>8.4f} "
                  + " ".join(f"{100 * coverage[k]:>12.1f}%" for k in names), flush=True)


if __name__ == "__main__":
    main()
