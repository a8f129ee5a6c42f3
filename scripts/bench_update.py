"""``AucMetric.update()`` against a plain C loop, side by side in one run (issues 20, 37).

    nice -n 10 .venv/bin/python scripts/bench_update.py            # medians of 5
    nice -n 10 .venv/bin/python scripts/bench_update.py --repeats 9 --shape heavy

The data: 10M rows of ``scripts/traffic.py``'s shape (``--shape``: traffic, beta-like preds
around a CTR of 0.2 with six decimals; heavy, the old generator's), pred as float32, int8
label, fed in batches of 1M rows; T = 1,000,000 buckets (16 MB: the table stays in the
processor's last-level cache, so the loops' own work counts). The baseline is a plain
loop written in C, compiled here with ``g++ -O2`` into a temporary folder and called
through ctypes: it fills the same table (two rows of T float64 buckets) and three float64
sums (abserr, sqrerr, pred; no log, no exact sums). ``update()`` is the whole method:
validation, the table, the eight exact sums (logloss included). The two alternate,
``--repeats`` times each; the figure is the ratio of their medians (target: ``update()``
at 0.5x the plain loop or better), in wall time and in the process's CPU time (steadier
on a busy machine).
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import traffic

ROWS = 10_000_000
BATCH = 1_000_000
T = 1_000_000

PLAIN_LOOP = r"""
#include <cstdint>
extern "C" void plain(const float* pred, const int8_t* label, int64_t n, double* table,
                      int64_t size, double* sums) {
    double abserr = 0.0, sqrerr = 0.0, pred_sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double p = pred[i];
        const int64_t y = label[i];
        int64_t bucket = int64_t(p * double(size));
        if (bucket > size - 1) bucket = size - 1;
        table[y * size + bucket] += 1.0;
        const double d = p - double(y);
        abserr += d < 0 ? -d : d;
        sqrerr += d * d;
        pred_sum += p;
    }
    sums[0] += abserr;
    sums[1] += sqrerr;
    sums[2] += pred_sum;
}
"""


def plain_loop(folder: Path) -> Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]:
    """The plain loop, compiled with ``g++ -O2`` in ``folder``: ``f(pred, label, table,
    sums)`` over float32 pred, int8 label, a (2, T) float64 table and 3 float64 sums."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise SystemExit("bench_update: needs g++ (the baseline is compiled here)")
    source, library = folder / "plain.cpp", folder / "plain.so"
    source.write_text(PLAIN_LOOP)
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(source)],
                   check=True)
    function = ctypes.CDLL(str(library)).plain
    pointer = ctypes.c_void_p
    function.argtypes = [pointer, pointer, ctypes.c_int64, pointer, ctypes.c_int64, pointer]
    function.restype = None

    def call(pred: np.ndarray, label: np.ndarray, table: np.ndarray, sums: np.ndarray) -> None:
        function(pred.ctypes.data, label.ctypes.data, len(pred), table.ctypes.data,
                 table.shape[1], sums.ctypes.data)

    return call


def ctr_data(n: int, shape: str = "traffic", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows' float32 pred and int8 label of the shape."""
    pred, label = traffic.preds(n, shape, seed)
    return pred.astype(np.float32), label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--table-size", type=int, default=T,
                        help="T (default 1e6; 1000 keeps the table in cache: the loops' own "
                             "work, without the table's cache misses)")
    traffic.add_shape_argument(parser)
    args = parser.parse_args()
    size = args.table_size

    from mpieval import AucMetric, Comm

    pred, label = ctr_data(ROWS, args.shape)
    batches = [(pred[i : i + BATCH], label[i : i + BATCH]) for i in range(0, ROWS, BATCH)]
    with tempfile.TemporaryDirectory() as folder:
        plain = plain_loop(Path(folder))

        def run_update() -> tuple[float, float]:
            metric = AucMetric(table_size=size, comm=Comm.local())
            start, cpu = time.perf_counter(), time.process_time()
            for p, y in batches:
                metric.update(p, y)
            return time.perf_counter() - start, time.process_time() - cpu

        def run_plain() -> tuple[float, float]:
            table, sums = np.zeros((2, size)), np.zeros(3)
            start, cpu = time.perf_counter(), time.process_time()
            for p, y in batches:
                plain(p, y, table, sums)
            return time.perf_counter() - start, time.process_time() - cpu

        run_update()
        run_plain()  # warm-up: pages of the tables, the library
        updates, plains = [], []
        for _ in range(args.repeats):
            updates.append(run_update())
            plains.append(run_plain())
    for k, clock in enumerate(("wall", "CPU")):
        t_update = statistics.median(t[k] for t in updates)
        t_plain = statistics.median(t[k] for t in plains)
        print(f"{clock} time, medians of {args.repeats}, alternating:")
        print(f"  update() of auc, 10M rows ({args.shape}) in batches of 1M, T={size:<7}"
              f"{t_update * 1e3:7.1f} ms = {ROWS / t_update / 1e6:5.0f} M rows/s")
        print(f"  plain C loop (g++ -O2), table + 3 sums:              {t_plain * 1e3:7.1f} ms = "
              f"{ROWS / t_plain / 1e6:5.0f} M rows/s")
        print(f"  update() speed / plain loop speed: {t_plain / t_update:.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
