"""Many tags against few on the same rows (issue 36 item 3): ``compute()`` and a whole
``mpieval eval`` of the per-user kinds with ``--tag``, 60,000 (and more) distinct tags
against 4, paired.

    .venv/bin/python scripts/bench_tags.py                       # 200k rows, wuauc and ranking
    .venv/bin/python scripts/bench_tags.py --rows 2000000 --repeats 5 --tags 4 60000
    .venv/bin/python scripts/bench_tags.py --python OLD/bin/python .venv/bin/python  # before, after
    .venv/bin/python scripts/bench_tags.py --compare --kinds wuauc  # paired A/B per tag
    .venv/bin/python scripts/bench_tags.py --slice --modes eval --kinds wuauc pn ranking
    .venv/bin/python scripts/bench_tags.py --slice --modes eval --zipf --rows 2000000

For ``eval``, measure builds installed from wheels (``pip wheel .``, one venv each): the
checkout's editable install compiles its bytecode at every start where none is written
(``PYTHONDONTWRITEBYTECODE``), which adds to the 4-tag time and lowers the ratio.

Data (generated once under ``bench-data/tags/``, which git ignores): one Parquet file of
``--rows`` rows shaped like traffic (many light users, uniform over ``rows / 10`` users,
plus a Zipf head of a third of the rows over 10,000 users; preds Beta(2, 8), labels
Bernoulli(pred)) with one integer tag column per tag count (``tag4``, ``tag60000``, ...),
each tag drawn uniformly, every tag present: the runs differ only in the tag column.
``--compare``: a copy of that file with a second model's pred (``pred_b``, the pred plus
Normal(0, 0.05) noise), every run then comparing the two (``compare="pred_b"``,
``--compare pred_b``). ``--zipf``: a file whose tag columns are drawn Zipf-like instead
(value ``k`` with weight ``1 / (k + 10) ** 1.1``, every value present): a head of large
values and a long tail of small ones, as item or page ids are.

``--slice``: the column is a slice column (``eval --slice COL``, ``eval`` only): each
value's whole block, below ``--min-slice-rows`` (100) only its row count.

Each repeat runs every tag count once, in turn (paired: the ratio against the fewest tags
is taken within a repeat, then its median over ``--repeats``). ``compute``: a child
process updates the metric with the rows, then times ``compute()`` by its CPU time
(``time.process_time``: user + system, less sensitive than wall time to the other
processes of a shared machine); ``eval``: ``python -m mpieval eval --metrics KIND --tag
COL`` under ``/usr/bin/time`` (user + system seconds, the process's peak RSS; with
``--ranks N`` under ``mpiexec -n N``: every rank's seconds, the largest rank's peak, and
the wall time: many tags on several ranks, whose per-tag sums the tags' owners sum). A
run that fails (exit status 2: a tag count over the kinds' limit, 2**31 - 1) is reported as
``refused``, with its peak. ``uptime``'s load is printed before and after.
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

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data" / "tags"
OUTSIDE = tempfile.gettempdir()
"""The children's working directory: not the checkout, whose ``mpieval`` folder would come
first on ``python -c``'s and ``-m``'s path (``--python``'s own build is measured)."""

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, pyarrow.parquet as pq
from mpieval import RankingMetric, WuaucMetric
path, kind, column, compare = sys.argv[1:5]
table = pq.read_table(path, columns=["uid", "pred", "label", column]
                      + (["pred_b"] if compare == "yes" else []))
rows = {name: table.column(name).to_numpy() for name in table.column_names}
metric = {"wuauc": WuaucMetric, "ranking": RankingMetric}[kind](
    compare="pred_b" if compare == "yes" else None)
label = rows["label"] if kind == "wuauc" else rows["label"].astype(np.float64)
b = {"compare": rows["pred_b"]} if compare == "yes" else {}
out = {}
try:
    metric.update(uid=rows["uid"], pred=rows["pred"], label=label, tag=rows[column], **b)
    del table, rows, label
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = metric.compute()
    out["cpu"] = time.process_time() - start
    out["blocks"] = len(result.blocks)
except Exception as error:  # a tag count over the limit: refused
    out["refused"] = f"{type(error).__name__}: {error}"
out["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def generate(rows: int, tag_counts: list[int], seed: int = 36, compare: bool = False,
             zipf: bool = False) -> Path:
    """The rows with a tag column per count (written once; a new count adds a file); with
    ``compare`` a second model's pred too (``pred_b``: the pred plus noise, the other
    columns the same rows); ``zipf``: tags drawn Zipf-like (module docstring)."""
    path = DATA / (f"rows{rows}-tags{'-'.join(map(str, tag_counts))}"
                   + ("-zipf" if zipf else "") + ".parquet")
    if compare:
        compared = path.with_name(path.stem + "-compare.parquet")
        if not compared.exists():
            table = pq.read_table(generate(rows, tag_counts, seed, zipf=zipf))
            pred = table.column("pred").to_numpy()
            noisy = pred + np.random.default_rng(seed + 1).normal(0, 0.05, len(pred))
            tmp = compared.with_suffix(".part")
            pq.write_table(table.append_column("pred_b", pa.array(np.clip(noisy, 1e-6,
                                                                          1 - 1e-6))),
                           tmp, row_group_size=500_000)
            tmp.rename(compared)
        return compared
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    head = rng.random(rows) < 1 / 3
    uid = np.where(head, rng.zipf(1.2, rows) % 10_000,
                   10_000 + rng.integers(0, max(rows // 10, 1), rows)).astype(np.int64)
    pred = rng.beta(2, 8, rows)
    label = (rng.random(rows) < pred).astype(np.int8)
    columns = {"uid": uid, "pred": pred, "label": label}
    for count in tag_counts:
        if zipf:
            weight = 1 / (np.arange(count) + 10.0) ** 1.1
            tag = rng.choice(count, rows, p=weight / weight.sum())
        else:
            tag = rng.integers(0, count, rows)
        tag[: min(count, rows)] = rng.permutation(count)[: min(count, rows)]  # each present
        columns[f"tag{count}"] = tag.astype(np.int64)
    tmp = path.with_suffix(".part")
    pq.write_table(pa.table(columns), tmp, row_group_size=500_000)
    tmp.rename(path)
    return path


def compute_once(python: str, path: Path, kind: str, count: int, compare: bool) -> dict:
    done = subprocess.run([python, "-c", CHILD, str(path), kind, f"tag{count}",
                           "yes" if compare else "no"],
                          capture_output=True, text=True, check=True, cwd=OUTSIDE)
    return json.loads(done.stdout.strip().splitlines()[-1])


def eval_once(python: str, path: Path, kind: str, count: int, compare: bool,
              by: str = "--tag", ranks: int = 1) -> dict:
    """One ``mpieval eval`` (under ``mpiexec -n ranks``, the interpreter's own, from 2
    ranks on): the CPU of every rank, the largest rank's peak, the wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        times = Path(tmp) / "time"
        python = os.path.abspath(python)  # (the children run elsewhere: OUTSIDE)
        launcher = [] if ranks == 1 else [str(Path(python).parent / "mpiexec"), "-n",
                                          str(ranks)]
        start = time.perf_counter()
        done = subprocess.run(
            [*launcher, "/usr/bin/time", "-a", "-o", str(times), "-f", "%U %S %M", python,
             "-m", "mpieval", "eval", "--metrics", kind, "--uid", "uid", by, f"tag{count}",
             *(["--compare", "pred_b"] if compare else []),
             "--json", str(Path(tmp) / "out.json"), str(path)],
            capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
            cwd=OUTSIDE)
        wall = time.perf_counter() - start
        each = [line.split()[-3:] for line in times.read_text().splitlines()
                if len(line.split()) >= 3]
    out: dict = {"cpu": sum(float(user) + float(system) for user, system, _ in each),
                 "peak_kb": max(int(peak) for _, _, peak in each), "wall": wall}
    if done.returncode:
        out["refused"] = f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:120]}"
    return out


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--tags", type=int, nargs="+", default=[4, 60_000])
    parser.add_argument("--kinds", nargs="+", default=["wuauc", "ranking"])
    parser.add_argument("--modes", nargs="+", default=["compute", "eval"],
                        choices=["compute", "eval"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare", action="store_true",
                        help="every run compares a second model (pred_b: the pred plus "
                        "noise), paired A/B per tag")
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="the interpreters whose mpieval is measured (a build before, "
                        "this one): each repeat runs every one in turn")
    parser.add_argument("--slice", action="store_true",
                        help="the column as a slice column (eval --slice), eval only")
    parser.add_argument("--zipf", action="store_true",
                        help="tag columns drawn Zipf-like, not uniformly")
    parser.add_argument("--ranks", type=int, default=1,
                        help="eval under mpiexec -n RANKS (the CPU of every rank, the "
                        "largest rank's peak, the wall time), eval only")
    args = parser.parse_args()
    if args.ranks > 1 and "compute" in args.modes:
        parser.error("--ranks measures eval only: add --modes eval")
    if args.slice and "compute" in args.modes:
        parser.error("--slice measures eval only: add --modes eval")
    path = generate(args.rows, sorted(set(args.tags)), compare=args.compare, zipf=args.zipf)
    print(f"# {args.rows:,} rows, {'slices' if args.slice else 'tags'} {args.tags}"
          f"{' (Zipf)' if args.zipf else ''}, python {' '.join(args.python)}"
          + (", compare pred_b" if args.compare else ""))
    print(f"# load before: {uptime()}")
    base = min(args.tags)
    for mode in args.modes:
        once = compute_once if mode == "compute" else eval_once
        for kind in args.kinds:
            runs = {(python, count): [] for python in args.python for count in args.tags}
            for _ in range(args.repeats):
                for python in args.python:  # in turn, within one repeat
                    for count in args.tags:
                        runs[python, count].append(
                            once(python, path, kind, count, args.compare)
                            if mode == "compute" else eval_once(
                                python, path, kind, count, args.compare,
                                "--slice" if args.slice else "--tag", args.ranks))
            for python in args.python:
                if len(args.python) > 1:
                    print(f"# {python}")
                for count in args.tags:
                    report(mode, kind, count, base, runs[python, count], runs[python, base],
                           "slices" if args.slice else "tags")
    print(f"# load after: {uptime()}")


def report(mode: str, kind: str, count: int, base: int, runs: list[dict],
           base_runs: list[dict], what: str = "tags") -> None:
    """One line: the CPU median, its paired ratio against ``base`` tags (or slices:
    ``what``), the peak."""
    cpu = [run["cpu"] for run in runs if "cpu" in run]
    peak = statistics.median(run["peak_kb"] for run in runs) / 1024
    refused = next((run["refused"] for run in runs if "refused" in run), "")
    ratio = [run["cpu"] / base_runs[i]["cpu"] for i, run in enumerate(runs)
             if "cpu" in run and "cpu" in base_runs[i] and "refused" not in run]
    wall = [run["wall"] for run in runs if "wall" in run]
    print(f"{mode:8} {kind:8} {what}={count:>9,}  cpu median "
          f"{statistics.median(cpu) if cpu else float('nan'):8.3f} s  "
          + (f"wall median {statistics.median(wall):8.3f} s  " if wall else "") +
          f"x{statistics.median(ratio) if ratio else float('nan'):7.2f} vs "
          f"{base} {what} (paired median of {len(ratio)})  peak {peak:8.1f} MB"
          + (f"  refused: {refused}" if refused else ""), flush=True)


if __name__ == "__main__":
    main()
