#!/usr/bin/env python3
"""Coverage of the 95% intervals by simulation (issue 12). Repeat with:

    .venv/bin/python scripts/stats_coverage.py [--datasets 1000]

For binormal data sets (tests/simulation.py: positives N(d, 1), negatives N(0, 1), pred =
sigmoid(score), 30% positives) of several sizes and separations, the share of data sets
whose interval covers the true value: auc (Phi(d / sqrt 2)), actual_ctr, predicted_ctr,
copc. The target band is 93-97%; with D data sets a share's standard error is
sqrt(0.95 * 0.05 / D).

Then the paired A/B test (``compare``): one binormal score per row, each model adding its
own noise. Under the null (equal noise) the share of p < 0.05 (target 3-7%) and of
``auc_diff`` intervals covering 0 (93-97%); with model B better by 0.005 AUC on 1M rows,
the power (share of p < 0.01) and the coverage of the true difference.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import simulation

from mpieval.kernels import stats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--power-datasets", type=int, default=200)
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
    print(f"\nA/B under the null ({args.datasets} data sets each; noise 0.7 on both models)")
    print(f"{'rows':>8} {'d':>4} {'p<0.05':>8} {'covers 0':>9}")
    for n in (2000, 20_000):
        for d in (0.5, 1.5):
            rates = simulation.ab_rates(rng, args.datasets, n, d, 0.7, 0.7)
            print(f"{n:>8} {d:>4} {100 * rates['p<0.05']:>7.1f}% {100 * rates['covers']:>8.1f}%",
                  flush=True)
    # model B better by 0.005: noise_b solves Phi(d / sqrt(2 (1 + s^2))) = auc_a + 0.005;
    # the models share the score, less so as the noise grows
    d = 1.0
    for noise_a in (0.5, 1.5):
        auc_a = simulation.paired_auc(d, noise_a)
        q = stats.z_value(2 * (auc_a + 0.005) - 1)  # Phi^-1(auc_a + 0.005)
        noise_b = math.sqrt(d * d / (2 * q * q) - 1)
        rates = simulation.ab_rates(rng, args.power_datasets, 1_000_000, d, noise_a, noise_b)
        print(f"\nA/B with AUC {auc_a:.4f} vs {auc_a + 0.005:.4f} (noise {noise_a} vs "
              f"{noise_b:.3f}) on 1M rows, {args.power_datasets} data sets: power (p < 0.01) "
              f"{100 * rates['p<0.01']:.1f}%, p < 0.05 {100 * rates['p<0.05']:.1f}%, "
              f"interval covers the true difference {100 * rates['covers']:.1f}%", flush=True)


if __name__ == "__main__":
    main()
