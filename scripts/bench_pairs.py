"""Per-tag sums as pairs against a window of digits (``exact.PAIRS_FROM``, issue 36): the
``wuauc`` pass over users of the same rows with their tags drawn at random among N values,
timed each way in one process, medians of ``--repeats``, and the spills the pairs keep.

    .venv/bin/python scripts/bench_pairs.py                        # 200,000 bench rows
    .venv/bin/python scripts/bench_pairs.py --scale --rows 5000000 # 5M rows of bench_scale's

Rows: ``bench-data/tags/rows200000-tags4-60000.parquet`` (``scripts/bench_tags.py`` makes
it) or, with ``--scale``, the first ``--rows`` of ``bench-data/scale/rows20000000.parquet``
(``scripts/bench_scale.py memory`` makes it). Both sums are exact and give the same floats;
the threshold is where the pairs stop costing more than the digits.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from mpieval.kernels import exact
from mpieval.kinds.wuauc import kernels

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--tags", type=int, nargs="+", default=[4, 64, 1024, 16384])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = (ROOT / "bench-data" / "scale" / "rows20000000.parquet" if args.scale
            else ROOT / "bench-data" / "tags" / "rows200000-tags4-60000.parquet")
    table = pq.read_table(path, columns=["uid", "pred", "label"])
    n = min(args.rows, table.num_rows) if args.scale else table.num_rows
    uid = table.column("uid").to_numpy()[:n].astype(np.uint64)
    pred = table.column("pred").to_numpy()[:n]
    label = table.column("label").to_numpy()[:n].astype(np.uint8)
    rng = np.random.default_rng(36)
    print(f"# {path.name}: {n:,} rows, medians of {args.repeats}")
    for n_tags in args.tags:
        codes = rng.integers(0, n_tags, n).astype(np.uint32)
        seconds, spills = {}, 0
        for name, window in (("pairs", exact.PAIRS), ("digits", kernels.WINDOW)):
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                parts, _, _ = kernels._user_auc_parts(uid, None, pred, label, codes, n_tags,
                                                      None, None, window)
                times.append(time.perf_counter() - start)
                if name == "pairs":
                    spills = sum(len(part.index) for part in parts
                                 if isinstance(part, exact.Pairs))
            seconds[name] = statistics.median(times)
        ratio = seconds["pairs"] / seconds["digits"]
        print(f"tags {n_tags:>7,}  pairs {seconds['pairs']:.3f} s  digits "
              f"{seconds['digits']:.3f} s  pairs / digits {ratio:.2f}  spills kept {spills:,}")


if __name__ == "__main__":
    main()
