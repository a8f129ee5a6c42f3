#!/usr/bin/env python3
"""The release gate's example (scripts/example-gate.toml) on the demo's rows, with a
regressing and an improving candidate:

    scripts/gate_demo.py DIR [--rows N]

Writes the demo's files (``mpieval demo --dir DIR/demo``), then two TSV files with their
rows, a ``country`` column (from the uid) and a candidate pred ``pred_b``, recalibrated:
in ``regress.tsv`` the pred's logit with noise added in one country (BR: a worse ranking
there), in ``improve.tsv`` moved a little towards the label (a better one); runs
``mpieval eval --config scripts/example-gate-metrics.toml FILE --gate
scripts/example-gate.toml`` on each and prints the gate's lines and exit status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
COUNTRIES = np.array(["US", "DE", "JP", "BR"])
SHARES = np.cumsum([0.4, 0.3, 0.2, 0.1])


def demo_rows(directory: Path, rows: int) -> pa.Table:
    """The demo's rows (every file it writes, read back as one table)."""
    mpieval = Path(sys.executable).parent / "mpieval"
    subprocess.run([str(mpieval), "demo", "--rows", str(rows), "--dir", str(directory)],
                   check=True, capture_output=True)
    tables = []
    for path in sorted(directory.iterdir()):
        if path.suffix == ".parquet":
            tables.append(pq.read_table(path))
        elif ".tsv" in path.name:
            tables.append(pacsv.read_csv(path, parse_options=pacsv.ParseOptions(
                delimiter="\t")))
    columns = ["uid", "pred", "label"]
    return pa.concat_tables([t.select(columns).cast(tables[0].select(columns).schema)
                             for t in tables])


def candidates(table: pa.Table, seed: int = 7) -> dict[str, pa.Table]:
    """``regress`` and ``improve``: the rows with ``country`` and a candidate ``pred_b``,
    each recalibrated (an intercept on the logit: COPC 1 over all rows)."""
    rng = np.random.default_rng(seed)
    uid = table["uid"].to_numpy().astype(np.uint64)
    country = COUNTRIES[np.searchsorted(SHARES, (uid % 1000) / 1000, side="right")]
    pred = np.clip(table["pred"].to_numpy().astype(np.float64), 1e-6, 1 - 1e-6)
    label = table["label"].to_numpy().astype(np.float64)
    logit = np.log(pred / (1 - pred))
    small = rng.normal(scale=0.05, size=len(logit))
    made = {  # worse in Brazil only; a little better everywhere
        "regress": logit + small + np.where(country == "BR",
                                            rng.normal(scale=0.5, size=len(logit)), 0),
        "improve": logit + small + 0.03 * (2 * label - 1),
    }
    return {name: table.append_column("country", pa.array(country)).append_column(
        "pred_b", pa.array(np.round(_calibrated(b, label.mean()), 6)))
        for name, b in made.items()}


def _calibrated(logit: np.ndarray, ctr: float) -> np.ndarray:
    """``sigmoid(logit + c)`` with the ``c`` that makes their mean ``ctr`` (bisection)."""
    low, high = -20.0, 20.0
    for _ in range(100):
        c = (low + high) / 2
        low, high = (c, high) if np.mean(1 / (1 + np.exp(-(logit + c)))) < ctr else (low, c)
    return 1 / (1 + np.exp(-(logit + (low + high) / 2)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--rows", type=int, default=300_000)
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    table = demo_rows(args.directory / "demo", args.rows)
    mpieval = Path(sys.executable).parent / "mpieval"
    for name, rows in candidates(table).items():
        path = args.directory / f"{name}.tsv"
        pacsv.write_csv(rows, path, pacsv.WriteOptions(delimiter="\t", quoting_style="none"))
        done = subprocess.run(
            [str(mpieval), "eval", "--config", "scripts/example-gate-metrics.toml",
             str(path.resolve()), "--gate", "scripts/example-gate.toml"],
            capture_output=True, text=True, cwd=ROOT)
        print(f"$ mpieval eval --config scripts/example-gate-metrics.toml {name}.tsv "
              "--gate scripts/example-gate.toml")
        print("\n".join(line for line in done.stdout.splitlines()))
        print(f"(exit {done.returncode})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
