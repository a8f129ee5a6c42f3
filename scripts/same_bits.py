"""The same bits before and after a change of the kernels: a fixed corpus of ``mpieval
eval`` runs, each run's ``--json`` bytes stored in a folder outside the repository.

    .venv/bin/python scripts/same_bits.py record /tmp/same-bits-before   # on the old tree
    .venv/bin/python scripts/same_bits.py record /tmp/same-bits-before --source OLD_CHECKOUT
    .venv/bin/python scripts/same_bits.py record /tmp/same-bits-after    # on the new one
    .venv/bin/python scripts/same_bits.py compare /tmp/same-bits-before /tmp/same-bits-after

The corpus (data written to ``--data``, default ``/tmp/same-bits-data``, the same bytes
every time): every kind (auc, wuauc, pn, pairwise, ranking), weights, soft labels, ``--compare``,
tags, slices, the three pn ties modes, small tables, string and integer uids, a file of a
few rows, and the files of ``mpieval demo --dir`` with their ``demo.toml``; each run at 1, 2 and 3
ranks (``mpiexec`` beside this Python). ``compare`` lists every JSON whose results (all
but the ``run`` object: when, the command line) differ, and any missing, and exits 1
then; it also checks that each run gives the same results at every rank count (but those
of ``FLOAT_TABLES``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

BIN = Path(sys.executable).parent
RANKS = (1, 2, 3)
FLOAT_TABLES = {"auc-fweight", "auc-soft", "auc-soft-weight", "auc-slice-soft"}
"""Runs whose table buckets are float sums (fractional weights, soft labels): their last
bits depend on the split of the rows (docs/kinds/auc.md), so only their bytes before and
after are compared, not those of different rank counts."""


def write_data(data: Path, mpieval: list[str]) -> None:
    """The corpus's input files (deterministic)."""
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20)
    n = 60_000
    users = rng.integers(0, 3000, n)
    truth = rng.beta(2, 6, n)
    pred = np.round(np.clip(truth + rng.normal(0, 0.08, n), 0, 1), 5)
    pred_b = np.round(np.clip(truth + rng.normal(0, 0.12, n), 0, 1), 3)  # many ties
    label = (rng.random(n) < truth).astype(np.int8)
    columns = {
        "uid": users,
        "suid": np.char.add("user-", users.astype(str)),
        "pred": pred,
        "pred_b": pred_b,
        "label": label,
        "soft": np.round(rng.random(n) * truth, 4),
        "grade": label * rng.integers(1, 4, n),
        "weight": rng.integers(1, 5, n).astype(np.float64),
        "fweight": np.round(rng.random(n) * 3, 3),
        "tag": np.array(["feed", "search", "video", "mall", ""])[rng.integers(0, 5, n)],
        "left_label": rng.integers(0, 2, n),
        "right_label": rng.integers(0, 2, n),
    }
    columns["tag"][columns["tag"] == ""] = "none"
    table = pa.table(columns)
    # a heavy user (a run longer than the kernels' chunk)
    heavy = {k: v[:40_000].copy() for k, v in columns.items()}
    heavy["uid"][:] = 7
    heavy["suid"][:] = "heavy"
    for name, part in (("main.tsv", table), ("heavy.tsv", pa.table(heavy)),
                       ("small.tsv", table.slice(0, 10)), ("tiny.tsv", table.slice(10, 3))):
        pacsv.write_csv(part, str(data / name), write_options=pacsv.WriteOptions(
            delimiter="\t", quoting_style="none"))
    demo = data / "demo"
    if not (demo / "demo.toml").exists():
        subprocess.run([*mpieval, "demo", "--rows", "40000", "--dir", str(demo)], check=True,
                       stdout=subprocess.DEVNULL)


def corpus(data: Path) -> list[tuple[str, list[str]]]:
    """(name, arguments of ``mpieval eval``) of every run."""
    main = str(data / "main.tsv")
    heavy = str(data / "heavy.tsv")
    small = str(data / "small.tsv")
    tiny = str(data / "tiny.tsv")
    demo = sorted(str(p) for p in (data / "demo").iterdir() if p.name.startswith("part-"))
    return [
        ("auc", ["--metrics", "auc", main]),
        ("auc-table10", ["--metrics", "auc", "--table-size", "10", main]),
        ("auc-table1000-f32", ["--metrics", "auc", "--table-size", "1000", main, small]),
        ("auc-weight", ["--metrics", "auc", "--weight", "weight", main]),
        ("auc-fweight", ["--metrics", "auc", "--weight", "fweight", "--table-size", "5000",
                         main]),
        ("auc-soft", ["--metrics", "auc", "--label", "soft", "--soft-labels", main]),
        ("auc-soft-weight", ["--metrics", "auc", "--label", "soft", "--soft-labels",
                             "--weight", "fweight", main]),
        ("auc-compare", ["--metrics", "auc", "--compare", "pred_b", main]),
        ("auc-compare-weight", ["--metrics", "auc", "--compare", "pred_b", "--weight",
                                "weight", "--table-size", "100", main]),
        ("wuauc", ["--metrics", "wuauc", main]),
        ("wuauc-suid-tag", ["--metrics", "wuauc", "--uid", "suid", "--tag", "tag", main]),
        ("wuauc-compare-tag", ["--metrics", "wuauc", "--tag", "tag", "--compare", "pred_b",
                               main]),
        ("wuauc-heavy", ["--metrics", "wuauc,pn", "--tag", "tag", main, heavy]),
        ("wuauc-heavy-suid", ["--metrics", "auc,wuauc", "--uid", "suid", "--compare",
                              "pred_b", heavy]),
        ("pn-negative", ["--metrics", "pn", "--pred", "pred_b", main]),
        ("pn-ignore", ["--metrics", "pn", "--pn-ties", "ignore", "--pred", "pred_b", main]),
        ("pn-half", ["--metrics", "pn", "--pn-ties", "half", "--label", "grade", main]),
        ("pairwise", ["--metrics", "pairwise", main]),
        ("all-kinds", ["--metrics", "auc,wuauc,pn,pairwise", "--tag", "tag", "--compare",
                       "pred_b", main]),
        ("all-small", ["--metrics", "auc,wuauc,pn,pairwise", "--tag", "tag", small, tiny]),
        ("tiny", ["--metrics", "auc,wuauc,pn", "--table-size", "7", tiny]),
        ("demo", ["--config", str(data / "demo" / "demo.toml"), *demo]),
        ("auc-slice", ["--metrics", "auc", "--slice", "tag,left_label,tag*right_label",
                       "--min-slice-rows", "50", main, small]),
        ("auc-slice-table", ["--metrics", "auc", "--table-size", "1000", "--slice",
                             "tag,uid", "--slice-table-size", "300", "--min-slice-rows", "25",
                             main]),
        ("auc-slice-weight", ["--metrics", "auc", "--weight", "weight", "--slice",
                              "tag,left_label", main]),
        ("auc-slice-soft", ["--metrics", "auc", "--label", "soft", "--soft-labels",
                            "--slice", "tag", main]),
        ("auc-slice-compare", ["--metrics", "auc", "--compare", "pred_b", "--slice",
                               "tag*left_label", main]),
        ("all-kinds-slice", ["--metrics", "auc,wuauc,pn,pairwise", "--tag", "tag",
                             "--slice", "grade,tag*grade", main, tiny]),
        ("ranking", ["--metrics", "ranking", "--tag", "tag", main]),
        ("ranking-grade-exp", ["--metrics", "ranking", "--label", "grade", "--gain",
                               "exponential", "--k", "1,3,100", "--uid", "suid", main]),
        ("ranking-ties-compare", ["--metrics", "ranking", "--pred", "pred_b", "--compare",
                                  "pred", "--tag", "tag", main, heavy]),
        ("ranking-slice", ["--metrics", "ranking", "--label", "grade", "--slice", "tag",
                           main, small]),
    ]


# ``mpieval`` from another source folder (``--source``): the package installed in this
# environment is kept out of the import path.
_FROM_SOURCE = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path"
    " if 'editable' not in type(f).__module__.lower()];"
    " sys.path.insert(0, sys.argv.pop(1)); from mpieval.cli import command; sys.exit(command())"
)


def record(out: Path, data: Path, source: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    mpieval = ([sys.executable, "-c", _FROM_SOURCE, str(source)] if source
               else [str(BIN / "mpieval")])
    write_data(data, mpieval)
    for name, args in corpus(data):
        for ranks in RANKS:
            path = out / f"{name}-n{ranks}.json"
            command = [str(BIN / "mpiexec"), "-n", str(ranks), *mpieval, "eval",
                       *args, "--json", str(path)]
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=600)
            (out / f"{name}-n{ranks}.log").write_text(done.stdout + done.stderr)
            status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "-"
            print(f"{name:24} n={ranks} {status:8} {digest}", flush=True)


def results_of(path: Path) -> str:
    """A JSON's results: everything but its ``run`` object (when it ran, the command line
    with its paths), every value as written."""
    document = json.loads(path.read_bytes())
    document.pop("run", None)
    return json.dumps(document, sort_keys=True)


def compare(before: Path, after: Path) -> int:
    bad = 0
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    for name in names:
        a, b = before / name, after / name
        if not a.exists() or not b.exists():
            print(f"missing {name}: {'before' if not a.exists() else 'after'}")
            bad += 1
        elif results_of(a) != results_of(b):
            print(f"DIFFERS {name}")
            bad += 1
    # each run's JSON is the same at every rank count
    for folder in (before, after):
        runs = {p.name.rsplit("-n", 1)[0] for p in folder.glob("*.json")} - FLOAT_TABLES
        for run in sorted(runs):
            blobs = {results_of(folder / f"{run}-n{r}.json") for r in RANKS
                     if (folder / f"{run}-n{r}.json").exists()}
            if len(blobs) > 1:
                print(f"ranks differ: {folder}/{run}")
                bad += 1
    print(f"{len(names)} JSON files compared, {bad} differences")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--data", type=Path, default=Path("/tmp/same-bits-data"))
    rec.add_argument("--source", type=Path,
                     help="run the mpieval package of this folder instead of the installed one")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.data, args.source)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
