"""Speed and memory of ``mpieval eval`` (issue 5), against baselines measured in the same run.

    .venv/bin/python scripts/bench_cli.py            # everything, medians of 3 runs
    .venv/bin/python scripts/bench_cli.py --repeats 5 --skip-2gb
    .venv/bin/python scripts/bench_cli.py --parse-ratio --rows 30000000 --repeats 5
    .venv/bin/python scripts/bench_cli.py --only-main-job --shape heavy
    .venv/bin/python scripts/bench_cli.py --moves --repeats 5

Data (generated once under ``bench-data/``, which git ignores, by ``scripts/traffic.py``
in the shape ``--shape`` names: ``traffic``, the default, about 580,000 users in 10M rows
and beta-like preds; ``heavy``, the old generator, most rows in a few users): a
10-million-row TSV ``uid, pred, label, tag`` (about 240 MB), and a 2 GB TSV made of ten
copies of its rows (only when the disk has room).

``--parse-ratio`` (issue 37): ``mpieval eval --metrics auc`` on a file of ``--rows`` rows
(default 30M, so that start-up is a small share) against a bare ``pyarrow.csv.read_csv``
of its pred and label columns (``include_columns``; every core), each a command of its own,
alternating, medians of ``--repeats`` — target: at most 1.25x; with the phases of one
mpieval run (``--progress``: start-up, reading, compute).

Figures:
- ``--metrics auc`` wall time (the whole command: start-up, read, compute, print; alone, so
  with every core) against pyarrow parsing the same file with ``pyarrow.csv.read_csv``
  (defaults: all columns, every core), both in this process and as a command of its own
  (``python -c``: start-up included, like mpieval's) — target: at most 1.5x the parse; and
  against ``pandas.read_csv`` + ``sklearn.metrics.roc_auc_score`` in a fresh process —
  target: at least 4x faster;
- mpieval's own read (``mpieval.readers``, pred and label) on every core and on one;
- ``--metrics auc,wuauc`` against the parse (reported);
- ``mpiexec -n 2`` against ``mpiexec -n 1`` on the one file, each rank one thread
  (``MPIEVAL_THREADS=1``; two ranks have one each by default) — target: at least 1.6x
  faster; whole command, and the reading phase alone (from ``--progress``'s last line);
- ``--metrics auc`` on the 2 GB file: peak RSS of each rank (``/usr/bin/time``) — target:
  under 400 MB; alone (every core) and at two ranks; and 2 ranks against 1 there.

The main job's three figures (issue 13; ``--only-main-job`` runs just these), each command
alternating with its baseline, medians of ``--repeats``:
- the per-user path: ``--metrics auc,wuauc --uid uid --tag tag`` against ``--metrics auc``
  on the 10M-row file, alone — target: at most 2.0x, and a peak RSS of at most 500 MB;
- coordination: ``mpiexec -n 2`` (one thread a rank) on two 10M-row files against two
  independent one-rank runs, one file each, started together (each in a session of its
  own, as ``mpiexec`` starts each rank) — target: at most 1.05x, the pairs' median; also
  against the two runs plus the launcher's own cost (``mpiexec -n 2`` of a program that
  only initialises MPI, less two bare Python start-ups side by side);
  ``scripts/bench_weak.py`` accounts for the difference, phase by phase;
- start-up: ``--metrics auc`` on a 10-row file, alone — target: at most 0.3 s.

``--moves``: the coordination figure's ``auc`` moves no rows; this isolates what issue 36's
moves of the per-user rows while reading cost: ``mpiexec -n 2`` ``auc,wuauc`` on the two
files as it runs against the same with one reading round (``pipeline._ROUND_BYTES`` set
huge: no move before compute, the rows moved at compute as before issue 36), alternating.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.csv as pacsv
import traffic

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"
BIN = Path(sys.executable).parent
MPIEVAL = str(BIN / "mpieval")
MPIEXEC = os.environ.get("MPIEXEC") or str(BIN / "mpiexec")
ROWS = 10_000_000


def generate(path: Path, rows: int, seed: int = 1, string_uids: bool = False,
             shape: str = "traffic") -> None:
    """``rows`` rows of uid, pred, label, tag of the shape (``scripts/traffic.py``); with
    ``string_uids``, each uid written as the string ``u<number>`` (the same users)."""
    traffic.write(path, rows, shape, seed, string_uids)


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


def timed_command(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=None if env is None else {**os.environ, **env})
    return time.perf_counter() - start


def parse_default(path: Path) -> float:
    start = time.perf_counter()
    pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t"))
    return time.perf_counter() - start


def mpieval_read(path: Path, threads: int) -> float:
    """mpieval's own read of the columns auc needs (pred and label as float64), on
    ``threads`` threads: chunks of whole lines parsed by ``read_csv``."""
    from mpieval import readers, split

    readers.use_threads(threads)
    file = readers.inspect(str(path), "tsv")
    start = time.perf_counter()
    for _ in readers.read_piece(file, split.Piece(0, 0, file.size),
                                {"pred": "float", "label": "float"}):
        pass
    seconds = time.perf_counter() - start
    readers.use_threads(os.cpu_count() or 1)
    return seconds


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


ONE_THREAD = {"MPIEVAL_THREADS": "1"}
SHAPE = "traffic"  # --shape
PARSE_TWO_COLUMNS = (
    "import sys, pyarrow.csv as c\n"
    "c.read_csv(sys.argv[1], parse_options=c.ParseOptions(delimiter='\\t'),\n"
    "           convert_options=c.ConvertOptions(include_columns=['pred', 'label']))\n"
)


def phases(path: Path) -> str:
    """Where one ``mpieval eval --metrics auc --progress`` run's time goes: start-up (to
    the first progress line's start of reading), reading (rows over the last line's
    rate), and the rest (compute, output)."""
    start = time.perf_counter()
    done = subprocess.run([MPIEVAL, "eval", "--metrics", "auc", "--progress", str(path)],
                          check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - start
    last = [line for line in done.stderr.splitlines() if "rows/s" in line][-1]
    rows, rate = (int(field.split()[0].replace(",", ""))
                  for field in last.removeprefix("mpieval: ").split(", ")[:2])
    reading = rows / rate
    return (f"one run {wall:.2f} s, of which reading {reading:.2f} s, the rest "
            f"{wall - reading:.2f} s")


def parse_ratio(rows: int, r: int) -> None:
    """Issue 37: ``--metrics auc`` against a bare parse of its two columns, alternating."""
    path = DATA / f"{rows // 1_000_000}m-{SHAPE}.tsv"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        generate(path, rows, shape=SHAPE)
    print(f"{path}: {rows:,} rows, {path.stat().st_size / 1e6:.0f} MB; {os.cpu_count()} "
          f"cores, load {os.getloadavg()[0]:.2f}", flush=True)
    auc, parse = [], []
    timed_command([MPIEVAL, "eval", "--metrics", "auc", str(path)])  # warm-up: page cache
    for _ in range(r):
        auc.append(timed_cpu([MPIEVAL, "eval", "--metrics", "auc", str(path)]))
        parse.append(timed_cpu([sys.executable, "-c", PARSE_TWO_COLUMNS, str(path)]))
    for k, clock in enumerate(("wall", "user CPU", "CPU (user + system)")):
        a, p = (statistics.median(run[k] for run in runs) for runs in (auc, parse))
        pairs = sorted(x[k] / y[k] for x, y in zip(auc, parse, strict=True))
        print(f"{clock}: --metrics auc {a:.2f} s against read_csv of pred and label {p:.2f} s "
              f"(medians of {r}, alternating): {a / p:.2f}x ({verdict(a / p <= 1.25)} <= "
              f"1.25x); pairs' ratios {pairs[0]:.2f}-{pairs[-1]:.2f}x")
    print(f"load {os.getloadavg()[0]:.2f} (on a busy machine read the user CPU time: the parse "
          "keeps its 2 GB of columns, whose pages then cost it system and wall time)")
    print(f"phases: {phases(path)}")


def rank_times(ranks: int, argv: list[str], repeats: int
               ) -> tuple[float, list[float], float]:
    """Median wall time of ``mpiexec -n ranks mpieval ARGV --progress`` (each rank one
    thread), with the CPU seconds (user + system) of each rank in that run (``/usr/bin/time
    -o``, one file per rank) and the seconds of its reading phase (rows over the rate that
    ``--progress`` prints last: from the start of reading to its end, start-up excluded)."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(repeats):
            timed = ('exec /usr/bin/time -f "%U %S" -o "$0/cpu.$PMI_RANK" "$@"')
            command = [MPIEXEC, "-n", str(ranks), "sh", "-c", timed, scratch, MPIEVAL, *argv,
                       "--progress"]
            start = time.perf_counter()
            done = subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, **ONE_THREAD})
            wall = time.perf_counter() - start
            cpu = []
            for rank in range(ranks):
                with open(os.path.join(scratch, f"cpu.{rank}")) as times:
                    cpu.append(round(sum(map(float, times.read().split()[-2:])), 2))
            last = [line for line in done.stderr.splitlines() if "rows/s" in line][-1]
            rows, rate = (int(field.split()[0].replace(",", ""))
                          for field in last.removeprefix("mpieval: ").split(", ")[:2])
            runs.append((wall, cpu, rows / rate))
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


def peak_rss_per_rank(ranks: int, path: Path, env: dict[str, str] | None = None) -> list[int]:
    """Peak RSS (MB) of each rank of ``mpieval eval --metrics auc`` on ``path`` (0 ranks:
    alone, without mpiexec)."""
    with tempfile.TemporaryDirectory() as scratch:
        timed = 'exec /usr/bin/time -f "%M" -o "$0/rss.${PMI_RANK:-0}" "$@"'
        command = ["sh", "-c", timed, scratch, MPIEVAL, "eval", "--metrics", "auc", str(path)]
        if ranks:
            command = [MPIEXEC, "-n", str(ranks), *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        peaks = []
        for rank in range(max(ranks, 1)):
            with open(os.path.join(scratch, f"rss.{rank}")) as kilobytes:
                peaks.append(int(kilobytes.read().split()[-1]) // 1024)
    return peaks


def timed_cpu(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, user CPU seconds and user + system CPU seconds (``getrusage``) of one
    run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed_command(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    return wall, user, user + after.ru_stime - before.ru_stime


def timed_rss(command: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (MB, ``/usr/bin/time``) of one run of ``command``."""
    with tempfile.TemporaryDirectory() as scratch:
        report = os.path.join(scratch, "rss")
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", report, *command], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, **(env or {})})
        wall = time.perf_counter() - start
        with open(report) as kilobytes:
            return wall, int(kilobytes.read().split()[-1]) // 1024


def timed_together(commands: list[list[str]], env: dict[str, str] | None = None) -> float:
    """Wall seconds of ``commands`` started together, until the last one ends. Each runs in
    a session of its own, as ``mpiexec`` starts each rank: on a busy machine the kernel
    shares the CPU between sessions' autogroups, so runs started from one session would
    share one share against the ranks' two."""
    start = time.perf_counter()
    running = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **(env or {})})
               for command in commands]
    for process in running:
        if process.wait():
            raise subprocess.CalledProcessError(process.returncode, process.args)
    return time.perf_counter() - start


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-2gb", action="store_true")
    parser.add_argument("--only-2gb", action="store_true", help="only the 2 GB figures")
    parser.add_argument("--only-main-job", action="store_true",
                        help="only the main job's figures (per-user path, coordination, "
                             "start-up)")
    parser.add_argument("--compiled-core", action="store_true",
                        help="only issue 20's figures: the per-user path on string uids "
                             "and the start-up of every kind")
    parser.add_argument("--parse-ratio", action="store_true",
                        help="only issue 37's figure: --metrics auc against a bare parse of "
                             "its two columns, on --rows rows")
    parser.add_argument("--moves", action="store_true",
                        help="only the cost of issue 36's moves while reading: mpiexec -n 2 "
                             "auc,wuauc on two 10M-row files with and without them")
    parser.add_argument("--rows", type=int, default=30_000_000,
                        help="rows of --parse-ratio's file (default 30M)")
    traffic.add_shape_argument(parser)
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    global SHAPE
    SHAPE = args.shape
    if args.parse_ratio:
        parse_ratio(args.rows, args.repeats)
        return
    ten = DATA / f"10m-{SHAPE}.tsv"
    if not ten.exists():
        print(f"generating {ten} ...", flush=True)
        generate(ten, ROWS, shape=SHAPE)
    tiny = DATA / f"tiny-{SHAPE}.tsv"
    if not tiny.exists():
        with open(ten, "rb") as src:
            tiny.write_bytes(b"".join(src.readline() for _ in range(11)))
    size_mb = ten.stat().st_size / 1e6
    r = args.repeats
    print(f"{ten}: {ROWS:,} rows, {size_mb:.0f} MB; medians of {r} runs; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}\n", flush=True)

    if args.only_main_job:
        main_job(ten, tiny, r)
        return
    if args.moves:
        moves(ten, r)
        return
    if args.compiled_core:
        compiled_core(tiny, r)
        return
    if not args.only_2gb:
        ten_million_rows(ten, tiny, r)
        main_job(ten, tiny, r)
    if not args.skip_2gb:
        two_gigabytes(ten, r)


def main_job(ten: Path, tiny: Path, r: int) -> None:
    """The per-user path, the coordination of two ranks and the start-up (issue 13)."""
    auc, both, peak = [], [], []
    for _ in range(r):
        auc.append(timed_rss([MPIEVAL, "eval", "--metrics", "auc", str(ten)])[0])
        wall, rss = timed_rss([MPIEVAL, "eval", "--metrics", "auc,wuauc", "--uid", "uid",
                               "--tag", "tag", str(ten)])
        both.append(wall)
        peak.append(rss)
    ratio = statistics.median(both) / statistics.median(auc)
    print(f"\nper-user path: --metrics auc,wuauc --uid uid --tag tag "
          f"{statistics.median(both):.2f} s against --metrics auc "
          f"{statistics.median(auc):.2f} s: {ratio:.2f}x "
          f"({verdict(ratio <= 2.0)} <= 2.0x); peak RSS {max(peak)} MB (highest of {r}; "
          f"{verdict(max(peak) <= 500)} <= 500 MB)")

    other = second_file(ten)
    argv = [MPIEVAL, "eval", "--metrics", "auc"]
    ranks, alone, launcher, bare = [], [], [], []
    for _ in range(r):
        ranks.append(timed_command([MPIEXEC, "-n", "2", *argv, str(ten), str(other)],
                                   env=ONE_THREAD))
        alone.append(timed_together([[*argv, str(ten)], [*argv, str(other)]], ONE_THREAD))
        launcher.append(timed_command([MPIEXEC, "-n", "2", sys.executable, "-c",
                                       "from mpi4py import MPI"]))
        bare.append(timed_together([[sys.executable, "-c", "pass"]] * 2))
    cost = statistics.median(launcher) - statistics.median(bare)
    bound = statistics.median(alone) + cost
    ratio = statistics.median(ranks) / bound
    pairs = statistics.median(r / a for r, a in zip(ranks, alone, strict=True))
    print(f"coordination: mpiexec -n 2 on two files {statistics.median(ranks):.2f} s; two "
          f"independent runs together {statistics.median(alone):.2f} s: pairs' median "
          f"{pairs:.3f}x ({verdict(pairs <= 1.05)} <= 1.05x); against the runs + the "
          f"launcher's {cost:.2f} s (MPI's start and end): {ratio:.3f}x")

    startup, floor = [], []
    for _ in range(r):
        startup.append(timed_command([MPIEVAL, "eval", "--metrics", "auc", str(tiny)]))
        floor.append(timed_command([sys.executable, "-c", "import numpy, pyarrow.csv"]))
    print(f"start-up: --metrics auc on a 10-row file {statistics.median(startup):.2f} s "
          f"({verdict(statistics.median(startup) <= 0.3)} <= 0.3 s); Python importing numpy "
          f"and pyarrow.csv alone {statistics.median(floor):.2f} s"
          + (" (PYTHONDONTWRITEBYTECODE is set: every import compiles its source)"
             if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""))


NO_MOVES = ("import sys\nfrom mpieval import pipeline\npipeline._ROUND_BYTES = 1 << 50\n"
            "from mpieval.cli import command\nsys.exit(command())\n")


def moves(ten: Path, r: int) -> None:
    """Issue 36's moves while reading, isolated: ``mpiexec -n 2`` (one thread a rank)
    ``--metrics auc,wuauc --uid uid --tag tag`` on two 10M-row files as it runs (a move
    after every reading round of ``pipeline._ROUND_BYTES``) against the same with one
    reading round (no move before compute), alternating, medians of ``r``."""
    other = second_file(ten)
    argv = ["eval", "--metrics", "auc,wuauc", "--uid", "uid", "--tag", "tag", str(ten),
            str(other)]
    runs: dict[str, list[tuple[float, float, float]]] = {"with": [], "without": []}
    os.environ.update(ONE_THREAD)
    for _ in range(r):
        runs["with"].append(timed_cpu([MPIEXEC, "-n", "2", MPIEVAL, *argv]))
        runs["without"].append(timed_cpu([MPIEXEC, "-n", "2", sys.executable, "-c", NO_MOVES,
                                          *argv]))
    for k, clock in enumerate(("wall", "user CPU", "CPU (user + system)")):
        a, b = (statistics.median(run[k] for run in runs[mode]) for mode in runs)
        print(f"moves while reading, {clock}: with {a:.2f} s, without {b:.2f} s: {a / b:.2f}x "
              f"(medians of {r}, alternating)")
    print(f"load {os.getloadavg()[0]:.2f}")


def second_file(ten: Path) -> Path:
    """A second file of the same rows as ``ten`` (a hard link if it can)."""
    other = DATA / f"10m-{SHAPE}-b.tsv"
    if not other.exists():
        try:
            os.link(ten, other)
        except OSError:
            shutil.copyfile(ten, other)
    return other


def compiled_core(tiny: Path, r: int) -> None:
    """Issue 20: ``auc,wuauc --uid uid --tag tag`` against ``auc`` alone on 10M rows whose
    uids are strings (target 2.0x, peak RSS 500 MB), alternating; a 10-row file with
    each kind against ``python -c "import numpy, pyarrow.csv"`` (target 2.0x); the
    package's bytecode compiled before both (``compileall``: the state of a normal install, whose
    pip compiles it; an editable install under ``PYTHONDONTWRITEBYTECODE`` would compile
    every module from source on every run)."""
    strings = DATA / f"10m-{SHAPE}-string-uids.tsv"
    if not strings.exists():
        print(f"generating {strings} ...", flush=True)
        generate(strings, ROWS, string_uids=True, shape=SHAPE)
    compile_package()
    auc, both, peak = [], [], []
    for _ in range(r):
        auc.append(timed_rss([MPIEVAL, "eval", "--metrics", "auc", str(strings)])[0])
        wall, rss = timed_rss([MPIEVAL, "eval", "--metrics", "auc,wuauc", "--uid", "uid",
                               "--tag", "tag", str(strings)])
        both.append(wall)
        peak.append(rss)
    ratio = statistics.median(both) / statistics.median(auc)
    print(f"per-user path, string uids: --metrics auc,wuauc --uid uid --tag tag "
          f"{statistics.median(both):.2f} s against --metrics auc "
          f"{statistics.median(auc):.2f} s: {ratio:.2f}x ({verdict(ratio <= 2.0)} <= 2.0x); "
          f"peak RSS {max(peak)} MB (highest of {r}; {verdict(max(peak) <= 500)} <= 500 MB)")
    kinds = {"auc": ["--metrics", "auc"], "auc,wuauc": ["--metrics", "auc,wuauc", "--tag", "tag"],
             "auc,wuauc,pn": ["--metrics", "auc,wuauc,pn", "--tag", "tag"]}
    floor = []
    runs: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(r):
        floor.append(timed_command([sys.executable, "-c", "import numpy, pyarrow.csv"]))
        for name, argv in kinds.items():
            runs[name].append(timed_command([MPIEVAL, "eval", *argv, str(tiny)]))
    base = statistics.median(floor)
    print(f"python -c 'import numpy, pyarrow.csv': {base:.2f} s")
    for name, times in runs.items():
        ratio = statistics.median(times) / base
        print(f"  10-row file, {name:24} {statistics.median(times):.2f} s: {ratio:.2f}x "
              f"({verdict(ratio <= 2.0)} <= 2.0x)")


def compile_package() -> None:
    """Compile the installed package's modules to bytecode (``__pycache__``), as pip does
    when it installs a wheel."""
    spec = importlib.util.find_spec("mpieval")
    assert spec is not None and spec.submodule_search_locations
    for folder in spec.submodule_search_locations:
        compileall.compile_dir(folder, quiet=1)


def ten_million_rows(ten: Path, tiny: Path, r: int) -> None:
    parse = median(lambda: parse_default(ten), r)
    parse_command = median(lambda: timed_command([sys.executable, "-c", PYARROW_PARSE, str(ten)]),
                           r)
    read_all = median(lambda: mpieval_read(ten, os.cpu_count() or 1), r)
    read_one = median(lambda: mpieval_read(ten, 1), r)
    startup = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc", str(tiny)]), r)
    # a large run's fixed cost: the start-up with the per-user kind's modules too
    fixed = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc,wuauc", "--tag",
                                          "tag", str(tiny)]), r)
    auc = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc", str(ten)]), r)
    pandas = median(lambda: timed_command([sys.executable, "-c", PANDAS_SKLEARN, str(ten)]), r)
    both = median(lambda: timed_command([MPIEVAL, "eval", "--metrics", "auc,wuauc", "--tag",
                                         "tag", str(ten)]), r)
    print(f"pyarrow read_csv, defaults, in this process     {parse:7.2f} s")
    print(f"pyarrow read_csv, defaults, a command (python -c){parse_command:6.2f} s")
    print(f"mpieval's read, pred+label, every core          {read_all:7.2f} s")
    print(f"mpieval's read, pred+label, one thread          {read_one:7.2f} s")
    print(f"mpieval start-up (10-row file)                  {startup:7.2f} s")
    print(f"  ... with wuauc (10-row file, auc,wuauc)       {fixed:7.2f} s")
    print(f"mpieval eval --metrics auc                      {auc:7.2f} s   "
          f"{auc / parse_command:.2f}x the read_csv command "
          f"({verdict(auc <= 1.5 * parse_command)} <= 1.5x); "
          f"{auc / parse:.2f}x read_csv in this process ({verdict(auc <= 1.5 * parse)})")
    print(f"  the same without start-up                     {auc - fixed:7.2f} s   "
          f"{(auc - fixed) / parse:.2f}x read_csv in this process, "
          f"{(auc - fixed) / read_all:.2f}x mpieval's read")
    print(f"pandas.read_csv + roc_auc_score (fresh process) {pandas:7.2f} s   "
          f"mpieval {pandas / auc:.1f}x faster ({verdict(pandas >= 4 * auc)} >= 4x)")
    print(f"mpieval eval --metrics auc,wuauc --tag tag      {both:7.2f} s   "
          f"{both / parse_command:.2f}x the read_csv command, "
          f"{both / parse:.2f}x read_csv in this process")

    cores = free_cores()
    for metrics in (["--metrics", "auc"], ["--metrics", "auc,wuauc", "--tag", "tag"]):
        argv = ["eval", *metrics, str(ten)]
        one, one_cpu, one_read = rank_times(1, argv, r)
        two, two_cpu, two_read = rank_times(2, argv, r)
        label = metrics[1]
        target = (f" ({verdict(one / two >= 1.6)} >= 1.6x)" if label == "auc" else "")
        print(f"mpiexec -n 1, one thread, {label:9s} CPU/rank {one_cpu} s   {one:7.2f} s; "
              f"reading {one_read:.2f} s")
        print(f"mpiexec -n 2, one thread, {label:9s} CPU/rank {two_cpu} s   {two:7.2f} s   "
              f"{one / two:.2f}x faster{target}; reading {two_read:.2f} s: "
              f"{one_read / two_read:.2f}x faster")
    print(f"(cores free for this run, measured: {cores:.1f} of {os.cpu_count()}; with fewer than "
          "two free the 2-rank figure measures the machine, not the split)")



def two_gigabytes(ten: Path, r: int) -> None:
    big = DATA / f"2g-{SHAPE}.tsv"
    if not big.exists():
        free = shutil.disk_usage(DATA).free
        if free < 10 * ten.stat().st_size + 5e9:
            print(f"\n2 GB file skipped: only {free / 1e9:.1f} GB free under {DATA}")
            return
        print(f"\nwriting {big} ...", flush=True)
        repeat_file(ten, big, 10)
    print(f"\n{big}: {big.stat().st_size / 1e9:.2f} GB, {10 * ROWS:,} rows")
    walls = {}
    for ranks, env, label in ((0, None, "alone, every core"),
                              (1, ONE_THREAD, "mpiexec -n 1, one thread"),
                              (2, None, "mpiexec -n 2, one thread each")):
        runs = []
        for _ in range(r):
            start = time.perf_counter()
            rss = peak_rss_per_rank(ranks, big, env)
            runs.append((time.perf_counter() - start, rss))
        walls[ranks] = statistics.median(wall for wall, _ in runs)
        rss = [max(peaks) for peaks in zip(*(peaks for _, peaks in runs), strict=True)]
        print(f"--metrics auc, {label:29s}: peak RSS per rank {rss} MB (highest of {r} runs), "
              f"{walls[ranks]:.1f} s ({verdict(max(rss) < 400)} < 400 MB)")
    print(f"2 ranks vs 1, one thread each, on the 2 GB file (start-up amortised): "
          f"{walls[1] / walls[2]:.2f}x faster; cores free now: {free_cores():.1f}")


if __name__ == "__main__":
    main()
