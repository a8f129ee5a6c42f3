#!/usr/bin/env python3
"""Benchmark of windowed values (issue 10, item 5). Repeat with:

    .venv/bin/python scripts/bench_window.py [--repeat 7]

One rank, 10M rows in batches of 100,000 (as a trainer updates per batch):
- ``update()`` throughput of ``AucMetric(table_size=1_000_000)`` (float32 pred, int8
  label, CTR ~0.18) without a window and with ``window=1_000_000``, the two timed in turn
  (alternating, so that both see the same machine), medians; the ratio is the window's
  cost (target: at most 1.10);
- the same for ``PairwiseMetric`` (int8 labels);
- for comparison, the design not taken: a ring of 8 slot states of 125,000 rows each,
  where each full slot is folded into the lifetime total and cleared (two passes over a
  state of ``2 T + 8`` float64), 80 times in 10M rows;
- ``compute()`` without and with the window, and the window's bytes.

Also per batch: the same batch given to a metric without and one with the window in
turn (each first every other batch, since the second finds the batch in cache), every
batch of the 10M rows, ``repeat`` times over; the ratio of the medians is the least
disturbed figure of the window's cost per batch.

Each run is timed in CPU seconds of this process (``time.process_time``) as well as wall
seconds: on a machine shared with other work, wall time also counts the moments another
process held the core, which swamps a difference of a few percent.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
from bench_auc import ctr_data  # the same rows as the auc benchmark

N_ROWS = 10_000_000
BATCH = 100_000
T = 1_000_000
WINDOW = 1_000_000
SLOTS = 8




def alternating(runs: dict[str, Callable[[], object]], repeat: int,
                clock: Callable[[], float] = time.process_time) -> dict[str, float]:
    """Median seconds (of ``clock``) of each run, the runs called in turn ``repeat``
    times."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = clock()
            run()
            times[name].append(clock() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    from mpieval import AucMetric, Comm, PairwiseMetric
    from mpieval.errors import UndefinedMetricWarning

    pred, label = ctr_data(N_ROWS)
    rng = np.random.default_rng(1)
    left = rng.integers(0, 2, N_ROWS).astype(np.int8)
    right = rng.integers(0, 2, N_ROWS).astype(np.int8)
    starts = range(0, N_ROWS, BATCH)
    kept: dict[str, object] = {}

    def auc(window: int | None) -> Callable[[], None]:
        def run() -> None:
            metric = AucMetric(table_size=T, window=window, comm=Comm.local())
            for s in starts:
                metric.update(pred[s : s + BATCH], label[s : s + BATCH])
            kept[f"auc {window}"] = metric
        return run

    def pairwise(window: int | None) -> Callable[[], None]:
        def run() -> None:
            metric = PairwiseMetric(window=window, comm=Comm.local())
            for s in starts:
                metric.update(left[s : s + BATCH], right[s : s + BATCH])
        return run

    total, slot = np.zeros(2 * T + 8), np.zeros(2 * T + 8)

    def slot_folds() -> None:  # the rejected design's extra work per 10M rows
        for _ in range(N_ROWS // (WINDOW // SLOTS)):
            np.add(total, slot, out=total)
            slot.fill(0.0)

    auc(None)()  # first calls: page in the tables and kernels
    runs = {"auc": auc(None), "auc window": auc(WINDOW), "pairwise": pairwise(None),
            "pairwise window": pairwise(WINDOW), "slot folds": slot_folds}
    for clock_name, clock in (("CPU", time.process_time), ("wall", time.perf_counter)):
        med = alternating(runs, args.repeat, clock)
        print(f"update(), 10M rows in batches of {BATCH:,}, window={WINDOW:,}; medians of "
              f"{args.repeat} alternating runs, {clock_name} time")
        for kind in ("auc", "pairwise"):
            plain, windowed = med[kind], med[f"{kind} window"]
            print(f"  {kind:9s} {N_ROWS / plain / 1e6:7.1f} M rows/s without window, "
                  f"{N_ROWS / windowed / 1e6:7.1f} M rows/s with: ratio {windowed / plain:.3f}")
        print(f"  not taken: {SLOTS} slot states of {WINDOW // SLOTS:,} rows at T = {T:,}: "
              f"folding and clearing a full slot {N_ROWS // (WINDOW // SLOTS)} times "
              f"costs {med['slot folds']:.3f} s, {med['slot folds'] / med['auc']:.2f}x "
              f"auc's update()")

    print(f"update() per batch of {BATCH:,}, without and with the window in turn, "
          f"medians over {args.repeat} x {len(starts)} batches, wall time")
    pairs = {"auc": (AucMetric(table_size=T, comm=Comm.local()),
                     AucMetric(table_size=T, window=WINDOW, comm=Comm.local()), (pred, label)),
             "pairwise": (PairwiseMetric(comm=Comm.local()),
                          PairwiseMetric(window=WINDOW, comm=Comm.local()), (left, right))}
    for kind, (plain_one, windowed_one, columns) in pairs.items():
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(args.repeat):
            for index, s in enumerate(starts):
                batch = [column[s : s + BATCH] for column in columns]
                turn = list(zip((plain_one, windowed_one), times, strict=True))
                for metric, spent in turn[:: 1 if index % 2 else -1]:  # either first
                    start = time.perf_counter()
                    metric.update(*batch)
                    spent.append(time.perf_counter() - start)
        plain, windowed = (statistics.median(spent) for spent in times)
        print(f"  {kind:9s} {plain * 1e3:.3f} ms without window, {windowed * 1e3:.3f} ms "
              f"with: ratio {windowed / plain:.3f}")

    plain_metric, windowed_metric = kept["auc None"], kept[f"auc {WINDOW}"]
    assert isinstance(plain_metric, AucMetric) and isinstance(windowed_metric, AucMetric)
    with warnings.catch_warnings():  # a histogram of few rows a bucket: beside the point
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        computes = alternating({"plain": plain_metric.compute,
                                "window": windowed_metric.compute}, args.repeat)
    recent = windowed_metric._recent
    assert recent is not None
    print(f"compute() at T = {T:,} (CPU): {computes['plain'] * 1e3:.0f} ms without window, "
          f"{computes['window'] * 1e3:.0f} ms with; window kept: {recent.rows:,} rows, "
          f"{recent.nbytes / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
