"""Issue 15: ``mpieval eval --metrics auc`` on a 10M-row TSV from a local S3 server (moto
in server mode on 127.0.0.1) against the same file on local disk, one rank.

Medians of alternating runs; prints both times and the ratio local / S3 (speed of S3 as
a share of local speed; the target is >= 0.7). The server shares the machine's cores.

    .venv/bin/python scripts/bench_remote.py [--rows 10000000] [--repeats 5] [--dir DIR]
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
import pyarrow.csv as pacsv
import pyarrow.fs as pafs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_remote import moto_server, s3_environment


def make_tsv(path: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    pred = rng.random(rows).round(6)
    label = (rng.random(rows) < pred).astype(np.int8)
    table = pa.table({"pred": pred, "label": label})
    with pa.OSFile(str(path), "wb") as out:
        out.write(b"pred\tlabel\n")
        pacsv.write_csv(table, out, write_options=pacsv.WriteOptions(
            include_header=False, delimiter="\t", quoting_style="none"))


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", help="keep the TSV here (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(args.dir or scratch)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"bench-{args.rows}.tsv"
        if not path.exists():
            make_tsv(path, args.rows)
        size = path.stat().st_size
        with moto_server() as port:
            env = dict(os.environ, **s3_environment(port))
            store = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                                      access_key="testing", secret_key="testing",
                                      region="us-east-1", allow_bucket_creation=True)
            store.create_dir("bench")
            pafs.copy_files(str(path), "bench/bench.tsv", source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=store)
            command = [sys.executable, "-m", "mpieval", "eval", "--metrics", "auc"]
            local, remote = [], []
            timed([*command, str(path)], env)  # warm: the page cache
            for _ in range(args.repeats):
                local.append(timed([*command, str(path)], env))
                remote.append(timed([*command, "s3://bench/bench.tsv"], env))
    a, b = statistics.median(local), statistics.median(remote)
    print(f"{args.rows:,} rows, {size / 1e6:.0f} MB, medians of {args.repeats} alternating runs")
    print(f"local disk: {a:.2f} s   ({', '.join(f'{t:.2f}' for t in local)})")
    print(f"S3 (moto):  {b:.2f} s   ({', '.join(f'{t:.2f}' for t in remote)})")
    print(f"S3 speed / local speed: {a / b:.2f}x (target >= 0.7)")


if __name__ == "__main__":
    main()
