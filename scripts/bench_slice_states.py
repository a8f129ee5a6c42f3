"""A checkpoint of many slices that are metrics of their own: ``state_dict()``,
``checkpoint.save``, ``checkpoint.load`` and ``load_state_dict`` of a sliced ``wuauc``
(and a saved run's ``mpieval merge``), builds in turn.

    .venv/bin/python scripts/bench_slice_states.py                     # this checkout
    .venv/bin/python scripts/bench_slice_states.py --python OLD/bin/python .venv/bin/python

Data: ``scripts/bench_tags.py``'s Zipf file (2M rows shaped like traffic, a slice column
``tag60000`` whose values are drawn Zipf-like: about 2,000 slices of 100 rows or more,
each a metric of its own, and 56,000 smaller ones), made by it when missing. A child
process updates a ``SlicedMetric(WuaucMetric(), ["tag60000"])`` with the rows in batches
of 65,536, then times each step by its wall time (``time.perf_counter``; the file's write
and read are most of their steps) and checks that the loaded metric computes what the
saved one does. ``--merge``: also ``mpieval eval --metrics wuauc,pn --uid uid --slice
tag60000 --save-state DIR`` (one rank) and ``mpieval merge DIR``, wall time of each.
Medians of ``--repeats``, each repeat running every build in turn; ``uptime``'s load is
printed before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_tags import OUTSIDE, generate, uptime

CHILD = r"""
import json, os, sys, tempfile, time, warnings
import numpy as np, pyarrow.parquet as pq
from mpieval import Evaluator, WuaucMetric, checkpoint
from mpieval.slices import SlicedMetric
warnings.simplefilter("ignore")
path, column = sys.argv[1:3]
table = pq.read_table(path, columns=["uid", "pred", "label", column])
rows = {name: table.column(name).to_numpy() for name in table.column_names}
metric = SlicedMetric(WuaucMetric(), [column])
for start in range(0, len(rows["uid"]), 65536):
    part = {name: values[start : start + 65536] for name, values in rows.items()}
    metric.update(uid=part["uid"], pred=part["pred"], label=part["label"],
                  slices={column: part[column]})
out = {}
with tempfile.TemporaryDirectory() as tmp:
    file = os.path.join(tmp, "metrics-0.npz")
    start = time.perf_counter()
    state = Evaluator({"m": metric}).state_dict()
    out["state_dict"] = time.perf_counter() - start
    out["entries"] = len(state["m"])
    start = time.perf_counter()
    checkpoint.save(file, state)
    out["save"] = time.perf_counter() - start
    out["mb"] = os.path.getsize(file) / 2**20
    start = time.perf_counter()
    loaded = checkpoint.load(file)
    out["load"] = time.perf_counter() - start
resumed = Evaluator({"m": SlicedMetric(WuaucMetric(), [column])})
start = time.perf_counter()
resumed.load_state_dict(loaded)
out["load_state_dict"] = time.perf_counter() - start
same = resumed.compute()["m"].to_dict() == metric.compute().to_dict()
out["same"] = same
print(json.dumps(out))
"""

STEPS = ("state_dict", "save", "load", "load_state_dict")


def api_once(python: str, path: Path) -> dict:
    done = subprocess.run([python, "-c", CHILD, str(path), "tag60000"], capture_output=True,
                          text=True, check=True, cwd=OUTSIDE)
    return json.loads(done.stdout.strip().splitlines()[-1])


def merge_once(python: str, path: Path) -> dict:
    """Wall seconds of a one-rank ``eval --save-state`` and of ``merge`` of it."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "saved"
        for step, command in (
                ("eval --save-state", ["eval", "--metrics", "wuauc,pn", "--uid", "uid",
                                       "--slice", "tag60000", "--save-state", str(saved),
                                       "--json", str(Path(tmp) / "a.json"), str(path)]),
                ("merge", ["merge", str(saved), "--json", str(Path(tmp) / "b.json")])):
            start = time.perf_counter()
            subprocess.run([python, "-m", "mpieval", *command], capture_output=True,
                           check=True, cwd=OUTSIDE)
            out[step] = time.perf_counter() - start
        a, b = (json.loads((Path(tmp) / name).read_text()) for name in ("a.json", "b.json"))
        a.pop("run"), b.pop("run")
        out["same"] = a == b
        out["files"] = len(list(saved.iterdir()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", nargs="+", default=[sys.executable],
                        help="the interpreters whose mpieval is measured, in turn")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--merge", action="store_true",
                        help="also a saved run's eval --save-state and merge")
    args = parser.parse_args()
    path = generate(2_000_000, [4, 60_000], zipf=True)
    print(f"# {path.name}; load before: {uptime()}", flush=True)
    runs: dict[str, list[dict]] = {python: [] for python in args.python}
    merges: dict[str, list[dict]] = {python: [] for python in args.python}
    for _ in range(args.repeats):
        for python in args.python:
            runs[python].append(api_once(python, path))
            if args.merge:
                merges[python].append(merge_once(python, path))
    for python in args.python:
        one = runs[python]
        steps = "  ".join(f"{step} {statistics.median(run[step] for run in one):6.3f} s"
                          for step in STEPS)
        print(f"{python}\n  {one[0]['entries']:,} entries, {one[0]['mb']:.0f} MB  {steps}  "
              f"same results: {all(run['same'] for run in one)}", flush=True)
        if args.merge:
            done = merges[python]
            print("  " + "  ".join(
                f"{step} {statistics.median(run[step] for run in done):6.3f} s"
                for step in ("eval --save-state", "merge"))
                + f"  merged as evaluated: {all(run['same'] for run in done)}", flush=True)
    print(f"# medians of {args.repeats}; load after: {uptime()}")


if __name__ == "__main__":
    main()
