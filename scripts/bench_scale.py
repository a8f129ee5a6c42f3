"""Per-rank peak memory and weak scaling of the per-user kinds (issue 36), and heavy users.

    .venv/bin/python scripts/bench_scale.py memory               # auc,wuauc at 1, 2, 4 ranks
    .venv/bin/python scripts/bench_scale.py memory --metrics pn --ranks 1 2 4
    .venv/bin/python scripts/bench_scale.py weak --repeats 5     # 2 ranks on 2x vs 2 runs of 1x
    .venv/bin/python scripts/bench_scale.py weak --metrics pn --builds OLD/mpieval NEW/mpieval
    .venv/bin/python scripts/bench_scale.py floor --metrics pn   # weak scaling with free moves
    .venv/bin/python scripts/bench_scale.py heavy --repeats 5    # one 10%-user vs 100 users
    .venv/bin/python scripts/bench_scale.py pages --ranks 1 2    # numpy's huge pages or not

Data (generated once under ``bench-data/scale/``, which git ignores): Parquet files of
``uid, pred, label, tag`` in row groups of 500,000 rows: many light users (uniform over
``--users``) plus a Zipf head (a third of the rows, Zipf(1.2) over 10,000 users); preds
Beta(2, 8) (mean 0.2, float64), labels Bernoulli(pred), four string tags. ``heavy``: the
same rows with one user given 10% of them, against the same rows with that user's rows
spread over 100 users.

``memory``: ``mpieval eval --metrics M [--uid uid --tag tag]`` at each number of ranks
(oversubscribed on a small machine: memory is what is measured), every rank under
``/usr/bin/time`` (its peak RSS); the largest peak per rank against the one-rank peak, and
the JSON outputs compared byte for byte (the ``run`` object left out). ``weak``:
``mpiexec -n 2`` on two files against two one-rank runs, one file each, started together;
medians of ``--repeats``, alternating. ``floor``: the weak-scaling ratio the job would have
if its moves cost nothing (:func:`floor`). ``heavy``: ``mpiexec -n 4`` on each, alternating:
the wall time, and the CPU time of the busiest rank (user + system; a rank that waits
for the others sleeps, so on a machine with a core a rank the job takes about as long
as its busiest rank, while an oversubscribed machine lets the waiting ranks' cores work
for the busy one and hides part of its wait from the wall time). ``pages``: at each number
of ranks (on as many files), the command as it runs (numpy asks for no transparent huge
pages: ``mpieval.memory.no_huge_pages``) against the same with numpy's default
(``NUMPY_MADVISE_HUGEPAGE=1``), alternating: the wall time and the CPU time of every rank
(user and system apart), medians of ``--repeats`` and the ratio pair by pair.
"""

from __future__ import annotations

import argparse
import json
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

from mpieval.kernels.keys import hash_decimals, owner_of

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data" / "scale"
BIN = Path(sys.executable).parent
MPIEVAL = os.environ.get("MPIEVAL") or str(BIN / "mpieval")  # another build, to compare
MPIEXEC = os.environ.get("MPIEXEC") or str(BIN / "mpiexec")
TAGS = np.array(["feed", "home", "search", "video"])
GROUP = 500_000


def generate(path: Path, rows: int, users: int, seed: int, heavy: float = 0.0,
             split_heavy: int = 0) -> Path:
    """Write ``rows`` rows to ``path`` (once): light users, a Zipf head, and with
    ``heavy`` one user with that share of the rows (spread over ``split_heavy`` users
    when given)."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    # one user id per row, in row groups (the generator never holds the file's columns twice)
    writer = None
    tmp = path.with_suffix(".part")
    for start in range(0, rows, GROUP):
        n = min(GROUP, rows - start)
        uid = rng.integers(1_000_000, 1_000_000 + users, size=n, dtype=np.int64)
        head = rng.random(n) < 1 / 3
        uid[head] = np.minimum(rng.zipf(1.2, size=int(head.sum())), 10_000)
        if heavy:
            chosen = rng.random(n) < heavy
            uid[chosen] = (10**12 if not split_heavy
                           else 10**12 + rng.integers(0, split_heavy, size=int(chosen.sum())))
        pred = rng.beta(2.0, 8.0, size=n)
        label = (rng.random(n) < pred).astype(np.int64)
        tag = TAGS[rng.integers(0, len(TAGS), size=n)]
        table = pa.table({"uid": uid, "pred": pred, "label": label, "tag": tag})
        if writer is None:
            writer = pq.ParquetWriter(tmp, table.schema)
        writer.write_table(table, row_group_size=GROUP)
    assert writer is not None
    writer.close()
    tmp.rename(path)
    return path


def metric_args(metrics: str) -> list[str]:
    args = ["--metrics", metrics, "--uid", "uid"]
    if "wuauc" in metrics or "ranking" in metrics:
        args += ["--tag", "tag"]
    return args


def run_ranks(ranks: int, path: Path, metrics: str) -> tuple[float, list[int], dict]:
    """Wall seconds, peak RSS (MB) of every rank and the JSON (without ``run``) of one run."""
    wall, peaks, _, data = run_timed(ranks, path, metrics)
    return wall, peaks, data


def run_timed(ranks: int, path: Path, metrics: str
              ) -> tuple[float, list[int], list[float], dict]:
    """:func:`run_ranks` and the CPU seconds (user + system) of every rank."""
    wall, peaks, users, systems, data = run_measured(ranks, [path], metrics)
    assert data is not None
    return wall, peaks, [u + s for u, s in zip(users, systems, strict=True)], data


def run_with(ranks: int, paths: list[Path], metrics: str, environ: dict[str, str]
             ) -> tuple[float, float, float]:
    """Wall seconds, and the user and system CPU seconds of every rank summed, of one run
    on ``paths`` with ``environ`` added to the environment (no JSON written)."""
    wall, _, users, systems, _ = run_measured(ranks, paths, metrics, environ, write=False)
    return wall, sum(users), sum(systems)


def run_measured(ranks: int, paths: list[Path], metrics: str,
                 environ: dict[str, str] | None = None, write: bool = True
                 ) -> tuple[float, list[int], list[float], list[float], dict | None]:
    """One run on ``paths`` (``environ`` added to the environment), every rank under
    ``/usr/bin/time``: wall seconds, and of every rank its peak RSS (MB), user and system
    CPU seconds; with ``write``, the JSON (without ``run``)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out.json")
        timed = 'exec /usr/bin/time -f "%M %U %S" -o "$0/rss.${PMI_RANK:-0}" "$@"'
        command = [MPIEXEC, "-n", str(ranks), "sh", "-c", timed, scratch, MPIEVAL, "eval",
                   *metric_args(metrics), *(["--json", out] if write else []),
                   *map(str, paths)]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, **(environ or {})})
        wall = time.perf_counter() - start
        peaks, users, systems = [], [], []
        for rank in range(ranks):
            with open(os.path.join(scratch, f"rss.{rank}")) as figures:
                kilobytes, user, system = figures.read().split()[-3:]
            peaks.append(int(kilobytes) // 1024)
            users.append(float(user))
            systems.append(float(system))
        data = None
        if write:
            with open(out) as text:
                data = json.load(text)
            data.pop("run", None)
    return wall, peaks, users, systems, data


def pages(args: argparse.Namespace) -> None:
    if os.environ.get("NUMPY_MADVISE_HUGEPAGE") is not None:
        raise SystemExit("pages: run it with NUMPY_MADVISE_HUGEPAGE unset")
    suffixes = ("", "b", "c", "d")[: max(args.ranks)]
    files = [generate(DATA / f"rows{args.rows}{suffix}.parquet", args.rows, args.users, seed)
             for seed, suffix in enumerate(suffixes, start=1)]
    settings = {"no huge pages": {}, "numpy's default": {"NUMPY_MADVISE_HUGEPAGE": "1"}}
    for ranks in args.ranks:
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in settings}
        for _ in range(args.repeats):
            for name, environ in settings.items():
                runs[name].append(run_with(ranks, files[:ranks], args.metrics, environ))
        print(f"{args.metrics}, {ranks} rank(s) on {ranks} file(s) of {args.rows:,} rows, "
              f"medians of {args.repeats}; load {os.getloadavg()}")
        for name, figures in runs.items():
            wall, user, system = (statistics.median(column)
                                  for column in zip(*figures, strict=True))
            print(f"  {name:16s} wall {wall:6.2f} s  user {user:6.2f} s  system "
                  f"{system:5.2f} s (every rank)")
        ratios = [a[0] / b[0] for a, b in zip(*runs.values(), strict=True)]
        print(f"  wall, no huge pages / numpy's default: median {statistics.median(ratios):.3f}"
              f" (each {' '.join(f'{r:.2f}' for r in ratios)})", flush=True)


def memory(args: argparse.Namespace) -> None:
    path = generate(DATA / f"rows{args.rows}.parquet", args.rows, args.users, 1)
    print(f"{path}: {args.rows:,} rows; --metrics {args.metrics}; load {os.getloadavg()}")
    first = None
    one = None
    for ranks in args.ranks:
        wall, peaks, data = run_ranks(ranks, path, args.metrics)
        if first is None:
            first, one = data, max(peaks)
        same = "identical" if data == first else "DIFFERENT"
        print(f"{ranks} ranks: peak RSS per rank {peaks} MB, largest {max(peaks)} MB = "
              f"{max(peaks) / one:.2f}x one rank's ({args.ranks[0]} ranks); {wall:.1f} s; "
              f"results {same}", flush=True)


def weak(args: argparse.Namespace) -> None:
    a = generate(DATA / f"rows{args.rows}.parquet", args.rows, args.users, 1)
    b = generate(DATA / f"rows{args.rows}b.parquet", args.rows, args.users, 2)
    builds = args.builds or [MPIEVAL]
    together: dict[str, list[float]] = {build: [] for build in builds}
    apart: dict[str, list[float]] = {build: [] for build in builds}
    for _ in range(args.repeats):
        for build in builds:  # every build in turn within a repeat: the machine's drift shared
            both = [MPIEXEC, "-n", "2", build, "eval", *metric_args(args.metrics), str(a), str(b)]
            alone = [[MPIEXEC, "-n", "1", build, "eval", *metric_args(args.metrics), str(p)]
                     for p in (a, b)]
            start = time.perf_counter()
            subprocess.run(both, check=True, stdout=subprocess.DEVNULL)
            together[build].append(time.perf_counter() - start)
            start = time.perf_counter()
            running = [subprocess.Popen(c, stdout=subprocess.DEVNULL) for c in alone]
            for process in running:
                assert process.wait() == 0
            apart[build].append(time.perf_counter() - start)
    for build in builds:
        ratios = [t / s for t, s in zip(together[build], apart[build], strict=True)]
        named = "" if len(builds) == 1 else f" ({build})"
        print(f"weak scaling, {args.metrics}{named}: 2 ranks on 2 files "
              f"{statistics.median(together[build]):.2f} s, two 1-rank runs together "
              f"{statistics.median(apart[build]):.2f} s: median ratio "
              f"{statistics.median(ratios):.3f} (of {args.repeats}; each "
              f"{' '.join(f'{r:.2f}' for r in ratios)}); load {os.getloadavg()}")


def owned(paths: list[Path], ranks: int) -> list[Path]:
    """The rows of ``paths`` rewritten as one file a rank, each holding exactly the rows of
    the users that rank owns at ``ranks`` ranks (written once, row groups as generated):
    what each rank of a job on ``paths`` computes on once every row has moved."""
    names = [DATA / f"{paths[0].stem}-owned{rank}of{ranks}.parquet" for rank in range(ranks)]
    if all(name.exists() for name in names):
        return names
    writers: list[pq.ParquetWriter | None] = [None] * ranks
    for path in paths:
        for group in pq.ParquetFile(path).iter_batches(batch_size=GROUP):
            table = pa.Table.from_batches([group])
            uid = table["uid"].combine_chunks()
            # the command's keys: an integer uid hashed as its decimal text (Batch.keys)
            owner = owner_of(hash_decimals(uid.to_numpy())[0], ranks)
            for rank in range(ranks):
                part = table.filter(pa.array(owner == rank))
                if writers[rank] is None:
                    writers[rank] = pq.ParquetWriter(names[rank].with_suffix(".part"),
                                                     part.schema)
                writers[rank].write_table(part, row_group_size=GROUP)  # type: ignore[union-attr]
    for rank, writer in enumerate(writers):
        assert writer is not None
        writer.close()
        names[rank].with_suffix(".part").rename(names[rank])
    return names


def floor(args: argparse.Namespace) -> None:
    """Weak scaling's floor on this data: what a 2-rank job would take if its moves cost
    nothing. Each rank of ``mpiexec -n 2`` on two files ends up with the rows of the users
    it owns, and users of both files meet there (the Zipf head's users are in both); two
    one-rank runs on those rows (one file a rank's users) take what the job's ranks do
    less the moves. Against two one-rank runs on the files as they are (the weak-scaling
    baseline) that is the floor of the weak-scaling ratio; the job itself beside them."""
    files = [generate(DATA / f"rows{args.rows}.parquet", args.rows, args.users, 1),
             generate(DATA / f"rows{args.rows}b.parquet", args.rows, args.users, 2)]
    parts = owned(files, 2)
    rows = [pq.ParquetFile(part).metadata.num_rows for part in parts]
    print(f"rows a rank owns at 2 ranks: {rows} ({max(rows) / (sum(rows) / 2):.3f}x the mean)")
    times: dict[str, list[float]] = {"apart": [], "owned": [], "job": []}

    def together(paths: list[Path]) -> float:
        alone = [[MPIEXEC, "-n", "1", MPIEVAL, "eval", *metric_args(args.metrics), str(p)]
                 for p in paths]
        start = time.perf_counter()
        running = [subprocess.Popen(c, stdout=subprocess.DEVNULL) for c in alone]
        for process in running:
            assert process.wait() == 0
        return time.perf_counter() - start

    for _ in range(args.repeats):
        times["apart"].append(together(files))
        times["owned"].append(together(parts))
        start = time.perf_counter()
        subprocess.run([MPIEXEC, "-n", "2", MPIEVAL, "eval", *metric_args(args.metrics),
                        *map(str, files)], check=True, stdout=subprocess.DEVNULL)
        times["job"].append(time.perf_counter() - start)
    apart = times["apart"]
    floors = [o / a for o, a in zip(times["owned"], apart, strict=True)]
    ratios = [j / a for j, a in zip(times["job"], apart, strict=True)]
    print(f"{args.metrics}, medians of {args.repeats}: two 1-rank runs on the files "
          f"{statistics.median(apart):.2f} s; on each rank's owned rows "
          f"{statistics.median(times['owned']):.2f} s: floor {statistics.median(floors):.3f} "
          f"(each {' '.join(f'{r:.3f}' for r in floors)}); the 2-rank job "
          f"{statistics.median(times['job']):.2f} s: weak scaling "
          f"{statistics.median(ratios):.3f} (each {' '.join(f'{r:.3f}' for r in ratios)}); "
          f"load {os.getloadavg()}")


def heavy(args: argparse.Namespace) -> None:
    one = generate(DATA / f"heavy{args.rows}.parquet", args.rows, args.users, 3, heavy=0.1)
    spread = generate(DATA / f"heavy{args.rows}split.parquet", args.rows, args.users, 3,
                      heavy=0.1, split_heavy=100)
    times: dict[str, list[float]] = {"one": [], "spread": []}
    slowest: dict[str, list[float]] = {"one": [], "spread": []}  # the busiest rank's CPU
    for _ in range(args.repeats):
        for name, path in (("one", one), ("spread", spread)):
            wall, _, cpu, _ = run_timed(args.heavy_ranks, path, args.metrics)
            times[name].append(wall)
            slowest[name].append(max(cpu))
            print(f"  {name}: {wall:.2f} s wall, CPU a rank "
                  f"{' '.join(f'{c:.2f}' for c in cpu)} s", flush=True)
    ratios = [a / b for a, b in zip(times["one"], times["spread"], strict=True)]
    busiest = [a / b for a, b in zip(slowest["one"], slowest["spread"], strict=True)]
    print(f"heavy user at {args.heavy_ranks} ranks, {args.metrics}: one 10%-user "
          f"{statistics.median(times['one']):.2f} s, spread over 100 users "
          f"{statistics.median(times['spread']):.2f} s: median ratio "
          f"{statistics.median(ratios):.3f} (of {args.repeats}); the busiest rank's CPU "
          f"{statistics.median(slowest['one']):.2f} s against "
          f"{statistics.median(slowest['spread']):.2f} s: median ratio "
          f"{statistics.median(busiest):.3f}; load {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["memory", "weak", "floor", "heavy", "pages"])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--users", type=int, default=2_000_000)
    parser.add_argument("--metrics", default="auc,wuauc")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--heavy-ranks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--builds", nargs="+", metavar="MPIEVAL",
                        help="weak: these mpieval commands in turn within each repeat")
    args = parser.parse_args()
    modes = {"memory": memory, "weak": weak, "floor": floor, "heavy": heavy, "pages": pages}
    modes[args.what](args)


if __name__ == "__main__":
    main()
