"""Time and peak memory of ``--slice`` (issue 34), against the same run without slices.

    .venv/bin/python scripts/bench_slices.py                 # medians of 5 pairs
    .venv/bin/python scripts/bench_slices.py --repeats 7 --rows 10000000
    .venv/bin/python scripts/bench_slices.py --auc-only      # the --metrics auc pairs only
    .venv/bin/python scripts/bench_slices.py --auc-only --json   # each run writes its JSON

Data (generated once under ``bench-data/``, which git ignores, by ``scripts/traffic.py
--slice-columns``): ``--rows`` rows of the ``traffic`` shape with two columns to slice by,
``country`` (10 values, 40% to 2%) and ``site`` (200 values, Zipf shares).

Figures, each a command of its own (alone: every core), the sliced run and its baseline
alternating, ratios taken pair by pair and their median quoted:

- ``--metrics auc`` with ``--slice country,site`` against ``--metrics auc`` — target: at
  most 1.5x the time;
- ``--metrics auc,wuauc --tag tag`` with the same slices against the same run without;
- 1,000 slices of ``auc`` (``--slice seg`` over a column of 1,000 values, 2M rows,
  ``--min-slice-rows 0``): peak RSS — target: under 1 GB.

Without ``--json`` the runs write log lines only, so a slice's values that only the JSON
reads (``ne_recalibrated``, ``lift``, the AUPRC interval's terms) are not computed; with
it each run writes its JSON to a scratch file and computes them all.

Times are CPU seconds (user + system of the finished process, from ``wait4``: what the
run cost, less sensitive than wall time to the other jobs of a shared machine) and wall
seconds; memory is the process's peak RSS. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
MPIEVAL = str(Path(sys.executable).parent / "mpieval")
SLICES = ("--slice", "country,site")


def measure(argv: list[str]) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and peak RSS (MB) of one run of ``argv``."""
    with tempfile.TemporaryFile() as err:  # a file: a pipe nobody reads would fill up
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                             + err.read().decode()[-2000:])
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def paired(name: str, sliced: list[str], base: list[str], repeats: int) -> None:
    """``sliced`` and ``base`` alternating (a warm-up of each first); the medians of the
    pairs' ratios and of each one's figures."""
    measure(base)
    measure(sliced)
    ratios: list[tuple[float, float, float]] = []
    runs: list[tuple[tuple[float, float, float], tuple[float, float, float]]] = []
    for i in range(repeats):
        first, second = (base, sliced) if i % 2 == 0 else (sliced, base)
        a = measure(first)
        b = measure(second)
        got_base, got_sliced = (a, b) if first is base else (b, a)
        runs.append((got_base, got_sliced))
        ratios.append(tuple(s / b for s, b in zip(got_sliced, got_base, strict=True)))
    med = [statistics.median(r[i] for r in ratios) for i in range(3)]
    base_med = [statistics.median(r[0][i] for r in runs) for i in range(3)]
    sliced_med = [statistics.median(r[1][i] for r in runs) for i in range(3)]
    print(f"{name}: sliced / without slices, medians of {repeats} pairs: "
          f"cpu {med[0]:.2f}x, wall {med[1]:.2f}x, peak RSS {med[2]:.2f}x "
          f"(without: cpu {base_med[0]:.1f} s, wall {base_med[1]:.1f} s, "
          f"{base_med[2]:.0f} MB; sliced: cpu {sliced_med[0]:.1f} s, wall "
          f"{sliced_med[1]:.1f} s, {sliced_med[2]:.0f} MB); "
          f"cpu ratios {', '.join(f'{r[0]:.2f}' for r in ratios)}", flush=True)


def thousand_slices(rows: int) -> Path:
    """A Parquet file of ``rows`` rows: pred, label and ``seg``, 1,000 values."""
    path = DATA / f"seg1000-{rows}.parquet"
    if not path.exists():
        rng = np.random.default_rng(34)
        pred = rng.beta(2, 8, rows)
        table = pa.table({"pred": np.round(pred, 6),
                          "label": (rng.random(rows) < pred).astype(np.int8),
                          "seg": np.char.add("s", rng.integers(0, 1000, rows).astype(str))})
        pq.write_table(table, path, row_group_size=1 << 20)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-time", action="store_true", help="only the 1,000 slices")
    parser.add_argument("--auc-only", action="store_true",
                        help="only the --metrics auc pairs (no wuauc, no 1,000 slices)")
    parser.add_argument("--json", action="store_true",
                        help="each timed run also writes its --json (a scratch file): the "
                             "values only the JSON reads are then computed too")
    parser.add_argument("--mpieval", default=MPIEVAL,
                        help="the mpieval command to time (another build: a baseline)")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    path = DATA / f"traffic-slices-{args.rows}.tsv"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "traffic.py"), str(path),
                        "--rows", str(args.rows), "--slice-columns"], check=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    if not args.skip_time:
        for name, metrics in (("auc", ["--metrics", "auc"]),
                              ("auc,wuauc --tag tag", ["--metrics", "auc,wuauc", "--tag",
                                                       "tag"])):
            if args.auc_only and name != "auc":
                continue
            base = [args.mpieval, "eval", str(path), *metrics]
            if args.json:
                base += ["--json", str(Path(tempfile.gettempdir()) / "bench-slices.json")]
                name += " --json"
            paired(name, [*base, *SLICES], base, args.repeats)
    if args.auc_only:
        print(f"load average after: {os.getloadavg()}", flush=True)
        return
    seg = thousand_slices(2_000_000)
    base = [MPIEVAL, "eval", str(seg), "--metrics", "auc"]
    sliced = [*base, "--slice", "seg", "--min-slice-rows", "0"]
    for label, argv in (("without slices", base), ("1,000 slices", sliced)):
        cpu, wall, peak = measure(argv)
        print(f"auc, 2M rows, {label}: peak RSS {peak:.0f} MB (cpu {cpu:.1f} s, "
              f"wall {wall:.1f} s)", flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
