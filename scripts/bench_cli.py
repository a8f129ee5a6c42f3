"""Speed and memory of ``mpieval eval`` (issue 5), against baselines measured in the same run.

    .venv/bin/python scripts/bench_cli.py            # everything, medians of 3 runs
    .venv/bin/python scripts/bench_cli.py --repeats 5 --skip-2gb

Data (generated once under ``bench-data/``, which git ignores): a 10-million-row TSV
``uid, pred, label, tag`` (about 195 MB; users of Zipf-like activity, four tags), and a
2 GB TSV made of ten copies of its rows (only when the disk has room).

Figures:
- ``--metrics auc`` wall time (the whole command: start-up, read, compute, print) against
  pyarrow parsing the same file (``pyarrow.csv.read_csv``, defaults) and against the
  stream mpieval reads (one thread, the two columns auc needs) — target: at most 1.5x the
  parse; and against ``pandas.read_csv`` + ``sklearn.metrics.roc_auc_score`` in a fresh
  process — target: at least 4x faster;
- ``--metrics auc,wuauc`` against the parse (reported);
- ``mpiexec -n 2`` against ``mpiexec -n 1`` on the one file, each rank one thread (mpieval's
  default) — target: at least 1.6x faster;
- ``--metrics auc`` on the 2 GB file: peak RSS of each rank (``/usr/bin/time``) — target:
  under 400 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
BIN = Path(sys.executable).parent
MPIEVAL = str(BIN / "mpieval")
MPIEXEC = os.environ.get("MPIEXEC") or str(BIN / "mpiexec")
ROWS = 10_000_000
TAGS = np.array(["feed", "search", "video", "mall"])


def generate(path: Path, rows: int, seed: int = 1) -> None:
    """``rows`` rows of uid, pred, label, tag, written in chunks (bounded memory)."""
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(b"uid\tpred\tlabel\ttag\n")
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            uid = (rng.zipf(1.3, n) * 2654435761) % 2_000_000
            truth = rng.beta(2, 8, n)
            pred = np.round(np.clip(truth + rng.normal(0, 0.05, n), 0, 1), 6)
            label = (rng.random(n) < truth).astype(np.int8)
            table = pa.table({"uid": uid, "pred": pred, "label": label,
                              "tag": TAGS[rng.integers(0, 4, n)]})
            sink = pa.BufferOutputStream()
            pacsv.write_csv(table, sink, write_options=pacsv.WriteOptions(
                include_header=False, delimiter="\t", quoting_style="none"))
            out.write(sink.getvalue().to_pybytes())
    os.replace(tmp, path)


def repeat_file(source: Path, path: Path, copies: int) -> None:
    """The header of ``source`` and its data lines ``copies`` times."""
    tmp = path.with_suffix(".tmp")
    with open(source, "rb") as src, open(tmp, "wb") as out:
        header = src.readline()
        out.write(header)
        start = len(header)
        for _ in range(copies):
            src.seek(start)
            shutil.copyfileobj(src, out, 1 << 24)
    os.replace(tmp, path)


def median(seconds: Callable[[], float], repeats: int) -> float:
    return statistics.median(seconds() for _ in range(repeats))


def timed_command(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def parse_default(path: Path) -> float:
    start = time.perf_counter()
    pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t"))
    return time.perf_counter() - start


def parse_stream(path: Path) -> float:
    """The read mpieval does for auc: streaming, one thread, pred and label as float64."""
    start = time.perf_counter()
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(use_threads=False, block_size=1 << 20),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            include_columns=["pred", "label"], null_values=[],
            column_types={"pred": pa.float64(), "label": pa.float64()}),
    )
    for _ in reader:
        pass
    return time.perf_counter() - start


PYARROW_PARSE = (
    "import sys, pyarrow.csv as c\n"
    "c.read_csv(sys.argv[1], parse_options=c.ParseOptions(delimiter='\\t'))\n"
)
PANDAS_SKLEARN = (
    "import sys, pandas as pd\n"
    "from sklearn.metrics import roc_auc_score\n"
    "frame = pd.read_csv(sys.argv[1], sep='\\t')\n"
    "print(roc_auc_score(frame['label'], frame['pred']))\n"
)


def rank_times(ranks: int, argv: list[str], repeats: int) -> tuple[float, list[float]]:
    """Median wall time of ``mpiexec -n ranks mpieval ARGV``, and the CPU seconds (user +
    system) of each rank in that run (``/usr/bin/time -o`` one file per rank)."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(repeats):
            timed = ('exec /usr/bin/time -f "%U %S" -o "$0/cpu.$PMI_RANK" "$@"')
            command = [MPIEXEC, "-n", str(ranks), "sh", "-c", timed, scratch, MPIEVAL, *argv]
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            cpu = []
            for rank in range(ranks):
                with open(os.path.join(scratch, f"cpu.{rank}")) as times:
                    cpu.append(round(sum(map(float, times.read().split()[-2:])), 2))
            runs.append((wall, cpu))
    runs.sort()
    return runs[len(runs) // 2]


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass\n"


def free_cores() -> float:
    """How many cores the machine gives right now: two 1-CPU-second burns side by side take
    1 s on two free cores, 2 s on one."""
    start = time.perf_counter()
    burns = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    for burn in burns:
        burn.wait()
    return min(2.0, 2.0 / (time.perf_counter() - start))


def peak_rss_per_rank(ranks: int, path: Path) -> list[int]:
    """Peak RSS (MB) of each rank of ``mpieval eval --metrics auc`` on ``path``."""
    command = ["/usr/bin/time", "-f", "peak_rss_kb=%M", MPIEVAL, "eval", "--metrics", "auc",
               str(path)]
    if ranks:
        command = [MPIEXEC, "-n", str(ranks), *command]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return [int(line.split("=")[1]) // 1024 for line in done.stderr.splitlines()
            if line.startswith("peak_rss_kb=")]


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-2gb", action="store_true")
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    ten = DATA / "10m.tsv"
    if not ten.exists():
        print(f"generating {ten} ...", flush=True)
        generate(ten, ROWS)
    tiny = DATA / "tiny.tsv"
    if not tiny.exists():
        with open(ten, "rb") as src:
            tiny.write_bytes(b"".join(src.readline() for _ in range(11)))
    size_mb = ten.stat().st_size / 1e6
    r = args.repeats
    print(f"{ten}: {ROWS:,} rows, {size_mb:.0f} MB; medians of {r} runs; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}\n", flush=True)

    parse = median(lambda: parse_default(ten), r)
    stream = median(lambda: parse_stream(ten), r)
    startup = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc", str(tiny)]), r)
    auc = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc", str(ten)]), r)
    both = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc,wuauc", "--tag",
                                         "tag", str(ten)]), r)
    pandas = median(lambda: timed_command([sys.executable, "-c", PANDAS_SKLEARN, str(ten)]), r)
    parse_command = median(lambda: timed_command([sys.executable, "-c", PYARROW_PARSE, str(ten)]),
                           r)
    print(f"pyarrow read_csv, defaults (parse only)        {parse:7.2f} s")
    print(f"pyarrow stream, 1 thread, pred+label           {stream:7.2f} s")
    print(f"pyarrow read_csv, defaults, fresh process      {parse_command:7.2f} s")
    print(f"mpieval start-up (10-row file)                 {startup:7.2f} s")
    print(f"mpieval eval --metrics auc                     {auc:7.2f} s   "
          f"{auc / parse:.2f}x read_csv ({verdict(auc <= 1.5 * parse)} <= 1.5x), "
          f"{auc / stream:.2f}x the stream, {auc / parse_command:.2f}x read_csv in a fresh process")
    print(f"  the same without start-up                    {auc - startup:7.2f} s   "
          f"{(auc - startup) / parse:.2f}x read_csv, {(auc - startup) / stream:.2f}x the stream")
    print(f"pandas.read_csv + roc_auc_score (fresh process){pandas:7.2f} s   "
          f"mpieval {pandas / auc:.1f}x faster ({verdict(pandas >= 4 * auc)} >= 4x)")
    print(f"mpieval eval --metrics auc,wuauc --tag tag     {both:7.2f} s   "
          f"{both / parse:.2f}x read_csv, {both / stream:.2f}x the stream")

    cores = free_cores()
    for metrics in (["--metrics", "auc"], ["--metrics", "auc,wuauc", "--tag", "tag"]):
        argv = ["eval", *metrics, str(ten)]
        one, one_cpu = rank_times(1, argv, r)
        two, two_cpu = rank_times(2, argv, r)
        label = metrics[1]
        print(f"mpiexec -n 1, {label:9s} one file, CPU/rank {one_cpu} s   {one:7.2f} s")
        print(f"mpiexec -n 2, {label:9s} one file, CPU/rank {two_cpu} s   {two:7.2f} s   "
              f"{one / two:.2f}x faster" + (f" ({verdict(one / two >= 1.6)} >= 1.6x)"
                                            if label == "auc" else ""))
    print(f"(cores free for this run, measured: {cores:.1f} of {os.cpu_count()}; with fewer than "
          "two free the 2-rank figure measures the machine, not the split)")

    if args.skip_2gb:
        return
    big = DATA / "2g.tsv"
    if not big.exists():
        free = shutil.disk_usage(DATA).free
        if free < 10 * ten.stat().st_size + 5e9:
            print(f"\n2 GB file skipped: only {free / 1e9:.1f} GB free under {DATA}")
            return
        print(f"\nwriting {big} ...", flush=True)
        repeat_file(ten, big, 10)
    print(f"\n{big}: {big.stat().st_size / 1e9:.2f} GB, {10 * ROWS:,} rows")
    walls = {}
    for ranks in (1, 2):
        start = time.perf_counter()
        rss = peak_rss_per_rank(ranks, big)
        walls[ranks] = time.perf_counter() - start
        print(f"--metrics auc, mpiexec -n {ranks}: peak RSS per rank {rss} MB, "
              f"{walls[ranks]:.1f} s ({verdict(max(rss) < 400)} < 400 MB)")
    print(f"2 ranks vs 1 on the 2 GB file (start-up amortised): {walls[1] / walls[2]:.2f}x "
          f"faster; cores free now: {free_cores():.1f}")


if __name__ == "__main__":
    main()
