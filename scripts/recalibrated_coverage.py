#!/usr/bin/env python3
"""Coverage of the 95% intervals of the ``auc`` kind's ``ne_recalibrated`` and
``ne_recalibrated_diff`` by simulation (tests/simulation_recalibrated.py: a click with
probability ``sigmoid(z + base)``, model A ``sigmoid(0.8 z - 1)``, model B ``sigmoid(z -
2)``, the truth by quadrature). Repeat with:

    .venv/bin/python scripts/recalibrated_coverage.py [--datasets 1000] [--seed 34]

Prints, per number of rows, the share of data sets whose interval covers the truth and its
binomial standard error ``sqrt(s (1 - s) / D)``; the target band is 93-97%.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import simulation_recalibrated


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10_000])
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| rows | datasets | ne_recalibrated covered | ne_recalibrated_diff covered |")
    print("|---|---|---|---|")
    for n in args.rows:
        value, diff = simulation_recalibrated.coverage(rng, args.datasets, n)
        se = [math.sqrt(s * (1 - s) / args.datasets) for s in (value, diff)]
        print(f"| {n:,} | {args.datasets} | {value:.3f} ± {se[0]:.3f} | {diff:.3f} ± "
              f"{se[1]:.3f} |", flush=True)


if __name__ == "__main__":
    main()
