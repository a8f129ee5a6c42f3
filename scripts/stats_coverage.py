#!/usr/bin/env python3
"""Coverage of the 95% intervals by simulation (issue 12). Repeat with:

    .venv/bin/python scripts/stats_coverage.py [--datasets 1000]

For binormal data sets (tests/simulation.py: positives N(d, 1), negatives N(0, 1), pred =
sigmoid(score), 30% positives) of several sizes and separations, the share of data sets
whose interval covers the true value: auc (Phi(d / sqrt 2)), actual_ctr, predicted_ctr,
copc. The target band is 93-97%; with D data sets a share's standard error is
sqrt(0.95 * 0.05 / D). Then ``uauc`` and ``wuauc`` over simulated users, each with its own
separation and score shift (tests/simulation.py ``users``).

Then the paired A/B test (``compare``): one binormal score per row, each model adding its
own noise. Under the null (equal noise) the share of p < 0.05 (target 3-7%) and of
``auc_diff`` intervals covering 0 (93-97%); with model B better by 0.005 AUC on 1M rows,
the power (share of p < 0.01) and the coverage of the true difference.

``--small-only``: the small-sample table (issue 21, docs/statistics.md): per-tag ``uauc``
and ``wuauc`` at 10, 30 and 100 valid users a tag (coverage, and the paired test under the
null); ``auc`` at 10 and 30 positives among 10,000 rows (coverage, paired test under the
null); ``actual_ctr`` and ``copc`` at 1,000 rows and a CTR of 0.002; negative
downsampling (also alone: ``--downsampling-only``): full sets of 20,000 rows at a CTR of
0.05 and 0.2 (d = 1), the non-clicks kept at 0.1 with weight 10, coverage of the
population's values with ``weights="frequency"`` (before) and ``"importance"`` (after).
A null interval or p-value counts as no cover and no rejection.

``--auc-only``: the ``auc`` kind's table of issue 32 (tests/simulation_auc.py ``table``):
high AUC with few positives, importance weights with non-clicks kept at 0.02, skewed preds,
the old cells, and every new interval and paired test at 1,000 and 100,000 rows
(``--big-datasets`` sets a cell there), each share with its binomial standard error.

``--hetero-only`` (issue 32, the wuauc table of docs/statistics.md): tags of users whose
sizes are log-uniform in 5-200 rows (tests/simulation.py ``hetero_tag_rates``): ``uauc``
and ``wuauc`` (every user valid) before (main's degrees of freedom) and after, then each
tag's row values (``actual_ctr``, ``predicted_ctr``, ``copc``, ``logloss``; no interval
before) at prevalence 2% and 20%, with ties (preds rounded to 2 decimals), with negative
downsampling (non-clicks kept at 0.1, importance weight 10), and at about 1,000 and
100,000 rows a tag; the paired tests of two equally good models (``p < 0.05``) and the
false discovery rate of ``q < 0.05`` over each run's 100 tags (under the null, the share
of runs with any discovery). Standard errors: ``sqrt(s (1 - s) / n)``.
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
    parser.add_argument("--users-only", action="store_true", help="only uauc and wuauc")
    parser.add_argument("--small-only", action="store_true",
                        help="only the small-sample table (few users, positives, clicks)")
    parser.add_argument("--downsampling-only", action="store_true",
                        help="only negative downsampling (importance weights)")
    parser.add_argument("--auc-only", action="store_true",
                        help="only the auc kind's table of issue 32")
    parser.add_argument("--big-datasets", type=int, default=1000,
                        help="sets a cell at 100,000 rows (--auc-only)")
    parser.add_argument("--auc-part", choices=simulation_auc_parts(),
                        help="one part of --auc-only (each its own seeded stream; "
                        "importance-100k: new-100k's importance-weight cells alone)")
    parser.add_argument("--hetero-only", action="store_true",
                        help="only wuauc over users of unequal size (issue 32)")
    parser.add_argument("--tags", type=int, default=2000,
                        help="tags a cell with --hetero-only")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.hetero_only:
        hetero(rng, args.tags)
        return
    if args.auc_only:
        import simulation_auc

        print("| cell | value | share | sets | se |\n|---|---|---|---|---|")
        for index, part in enumerate(simulation_auc.PARTS):
            if args.auc_part != part and (args.auc_part is not None
                                          or part == "importance-100k"):
                continue  # importance-100k repeats cells of new-100k: alone only
            part_rng = np.random.default_rng([args.seed, index])
            for cell, value, share, sets in simulation_auc.table(
                    part, part_rng, args.datasets, args.big_datasets):
                se = math.sqrt(share * (1 - share) / sets)
                print(f"| {cell} | `{value}` | {100 * share:.1f}% | {sets} | "
                      f"{100 * se:.1f} |", flush=True)
        return
    if args.downsampling_only:
        downsampling(rng, args.datasets)
        return
    if args.small_only:
        small_samples(rng, args.datasets)
        return
    if args.users_only:
        users(rng, args.datasets)
        return
    auc_and_ctrs(rng, args.datasets)
    users(rng, args.datasets)
    a_b(rng, args.datasets, args.power_datasets)


def simulation_auc_parts() -> tuple[str, ...]:
    import simulation_auc

    return simulation_auc.PARTS


def small_samples(rng: np.random.Generator, datasets: int) -> None:
    print(f"Small samples ({datasets} data sets a cell; coverage target >= 93%, rejection "
          "under the null <= 6.5%)")
    print(f"{'per-tag users':>14} {'uauc covers':>12} {'wuauc covers':>13} "
          f"{'uauc_diff p<.05':>16} {'wuauc_diff p<.05':>17}")
    for n_users in (10, 30, 100):
        r = simulation.tag_rates(rng, datasets, n_users)
        print(f"{n_users:>14} {100 * r['uauc']:>11.1f}% {100 * r['wuauc']:>12.1f}% "
              f"{100 * r['uauc_diff p<0.05']:>15.1f}% {100 * r['wuauc_diff p<0.05']:>16.1f}%",
              flush=True)
    print(f"{'positives':>14} {'auc covers':>12} {'auc_diff p<.05':>15}  (10,000 rows, d = 1)")
    for positives in (10, 30):
        r = simulation.few_positives_rates(rng, datasets, positives)
        print(f"{positives:>14} {100 * r['auc']:>11.1f}% {100 * r['auc_diff p<0.05']:>14.1f}%",
              flush=True)
    r = simulation.rare_click_coverage(rng, datasets)
    print(f"actual_ctr at 1,000 rows, CTR 0.002: covers {100 * r['actual_ctr']:.1f}%; "
          f"copc covers {100 * r['copc']:.1f}%", flush=True)
    downsampling(rng, datasets)


def downsampling(rng: np.random.Generator, datasets: int) -> None:
    print(f"Negative downsampling ({datasets} sets a CTR: 20,000 rows, d = 1; non-clicks "
          "kept at 0.1, weight 10): coverage of the population's values")
    names = ("auc", "actual_ctr", "predicted_ctr", "copc")
    print(f"{'CTR':>5} {'weights':>11} " + " ".join(f"{name:>13}" for name in names)
          + f" {'auc (full set)':>15} {'ctr (full set)':>15}")
    for ctr in (0.05, 0.2):
        r = simulation.downsampling_coverage(rng, datasets, ctr=ctr)
        for weights in ("frequency", "importance"):
            print(f"{ctr:>5} {weights:>11} "
                  + " ".join(f"{100 * r[f'{weights} {n}']:>12.1f}%" for n in names)
                  + f" {100 * r[f'{weights} auc full']:>14.1f}%"
                  f" {100 * r[f'{weights} actual_ctr full']:>14.1f}%", flush=True)


def _cell(share: float, n: float) -> str:
    return f"{100 * share:.1f}% ± {100 * math.sqrt(max(share * (1 - share), 1e-9) / n):.1f}"


def hetero(rng: np.random.Generator, tags: int) -> None:
    runs = math.ceil(tags / 100)
    print(f"wuauc, users of 5-200 rows (log-uniform), {tags} tags a cell, 100 tags a run "
          f"({runs} runs: the fdr's n)")
    print("| cell | value | before | after |\n|---|---|---|---|")
    for n_users in (10, 20):
        r = simulation.hetero_tag_rates(rng, tags, n_users, 0.2, valid=True)
        rates = {False: {key: r[f"before {key}"] for key in r if not key.startswith("b")},
                 True: r}
        for name in ("uauc", "wuauc", "uauc_diff", "wuauc_diff", "uauc_diff fdr",
                     "wuauc_diff fdr"):
            what = ("covers" if "_diff" not in name else "FDR at q < 0.05" if "fdr" in name
                    else "p < 0.05 under the null")
            n = runs if "fdr" in name else tags
            print(f"| {n_users} valid users a tag | `{name.split()[0]}` {what} | "
                  f"{_cell(rates[False][name], n)} | {_cell(rates[True][name], n)} |",
                  flush=True)
    cells = [(f"{n} users a tag, CTR {prevalence:g}{label}", n, prevalence, ties, keep, t)
             for n, prevalence, ties, keep, label, t in (
                 (10, 0.2, False, 1.0, "", tags), (10, 0.02, False, 1.0, "", tags),
                 (20, 0.2, False, 1.0, " (~1,000 rows)", tags), (20, 0.02, False, 1.0, "", tags),
                 (20, 0.2, True, 1.0, ", ties", tags),
                 (20, 0.2, False, 0.1, ", non-clicks kept at 0.1 (weight 10)", tags),
                 (2000, 0.2, False, 1.0, " (~100,000 rows)", max(tags // 10, 100)),
                 (2000, 0.02, False, 1.0, " (~100,000 rows)", max(tags // 10, 100)))]
    for label, n_users, prevalence, ties, keep, cell_tags in cells:
        r = simulation.hetero_tag_rates(rng, cell_tags, n_users, prevalence, ties=ties,
                                        keep=keep, per_run=min(100, max(1, 20_000 // n_users)))
        for name in (*simulation.ROW_VALUES, "predicted_ctr (log scale)", "logloss_diff",
                     "copc_diff"):
            what = "p < 0.05 under the null" if "_diff" in name else "covers"
            print(f"| {label} | `{name}` {what} | (none) | {_cell(r[name], cell_tags)} |",
                  flush=True)


def auc_and_ctrs(rng: np.random.Generator, datasets: int) -> None:
    names = ("auc", "actual_ctr", "predicted_ctr", "copc")
    print(f"95% interval coverage over {datasets} data sets each "
          f"(standard error {100 * math.sqrt(0.95 * 0.05 / datasets):.1f} points)")
    print(f"{'rows':>8} {'d':>4} {'true auc':>8} " + " ".join(f"{n:>13}" for n in names))
    for n in (1000, 10_000):
        for d in (0.5, 1.0, 2.0):
            coverage = simulation.auc_coverage(rng, datasets, n, d)
            auc = simulation.truth(d)["auc"]
            print(f"{n:>8} {d:>4} {auc:>8.4f} "
                  + " ".join(f"{100 * coverage[k]:>12.1f}%" for k in names), flush=True)


def users(rng: np.random.Generator, datasets: int) -> None:
    print(f"\nuauc and wuauc over simulated users ({datasets} data sets each; users "
          "with 1 + Poisson(9) rows, 30% positives, their own separation d_u ~ N(mean, sd) "
          "and score shift): coverage of the mean true AUC of a user")
    print(f"{'users':>8} {'mean':>5} {'sd':>4} {'truth':>7} {'uauc':>8} {'wuauc':>8}")
    for n_users, d_mean, d_sd in ((300, 1.0, 0.5), (2000, 0.5, 0.3), (2000, 1.5, 1.0),
                                  (20_000, 1.0, 0.5)):
        coverage = simulation.user_coverage(rng, datasets, n_users, d_mean, d_sd)
        print(f"{n_users:>8} {d_mean:>5} {d_sd:>4} {simulation.user_truth(d_mean, d_sd):>7.4f} "
              f"{100 * coverage['uauc']:>7.1f}% {100 * coverage['wuauc']:>7.1f}%", flush=True)
    print(f"\nwuauc A/B under the null ({datasets} data sets each; the users' score plus each "
          "model's own N(0, 0.7^2) noise)")
    print(f"{'users':>8} {'mean':>5} {'sd':>4} {'uauc_diff p<0.05':>17} {'covers 0':>9} "
          f"{'wuauc_diff p<0.05':>18} {'covers 0':>9}")
    for n_users, d_mean, d_sd in ((500, 1.0, 0.5), (5000, 0.5, 0.3)):
        rates = simulation.user_ab_rates(rng, datasets, n_users, d_mean, d_sd, 0.7)
        print(f"{n_users:>8} {d_mean:>5} {d_sd:>4} "
              f"{100 * rates['uauc_diff p<0.05']:>16.1f}% {100 * rates['uauc_diff covers']:>8.1f}% "
              f"{100 * rates['wuauc_diff p<0.05']:>17.1f}% "
              f"{100 * rates['wuauc_diff covers']:>8.1f}%", flush=True)


def a_b(rng: np.random.Generator, datasets: int, power_datasets: int) -> None:
    print(f"\nA/B under the null ({datasets} data sets each; noise 0.7 on both models)")
    print(f"{'rows':>8} {'d':>4} {'p<0.05':>8} {'covers 0':>9}")
    for n in (2000, 20_000):
        for d in (0.5, 1.5):
            rates = simulation.ab_rates(rng, datasets, n, d, 0.7, 0.7)
            print(f"{n:>8} {d:>4} {100 * rates['p<0.05']:>7.1f}% {100 * rates['covers']:>8.1f}%",
                  flush=True)
    # model B better by 0.005: noise_b solves Phi(d / sqrt(2 (1 + s^2))) = auc_a + 0.005;
    # the models share the score, less so as the noise grows
    d = 1.0
    for noise_a in (0.5, 1.5):
        auc_a = simulation.paired_auc(d, noise_a)
        q = stats.z_value(2 * (auc_a + 0.005) - 1)  # Phi^-1(auc_a + 0.005)
        noise_b = math.sqrt(d * d / (2 * q * q) - 1)
        rates = simulation.ab_rates(rng, power_datasets, 1_000_000, d, noise_a, noise_b)
        print(f"\nA/B with AUC {auc_a:.4f} vs {auc_a + 0.005:.4f} (noise {noise_a} vs "
              f"{noise_b:.3f}) on 1M rows, {power_datasets} data sets: power (p < 0.01) "
              f"{100 * rates['p<0.01']:.1f}%, p < 0.05 {100 * rates['p<0.05']:.1f}%, "
              f"interval covers the true difference {100 * rates['covers']:.1f}%", flush=True)


if __name__ == "__main__":
    main()
