"""``mpieval demo``: the main job on built-in synthetic data.

The rows look like a CTR model's prediction dumps: actual CTR about 0.18, users of very
uneven activity (a Pareto tail: most users have a row or two, a few have thousands),
four tags, graded labels (0 no click, 1 click, 2 conversion) and pair instances (two
items shown together, a click label for each). They are written as the shards of a
training run (TSV, gzip TSV and Parquet) and evaluated by the same code as
``mpieval eval --config``, with every metric kind this build has.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import shutil
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from mpieval import locations, pipeline
from mpieval.comm import Comm
from mpieval.config import MetricSpec, parse_toml, specs_from_config
from mpieval.errors import KindUnavailable
from mpieval.kinds import KINDS, kind_named

TAGS = ("feed", "search", "video", "mall")
TAG_SHARE = (0.45, 0.25, 0.2, 0.1)
TAG_BIAS = (0.0, 0.5, -0.3, -0.6)
SEED = 20240601

# The demo's metrics, as a user would write them (see scripts/example-metrics.toml): each
# kind's own (its declaration's ``demo``), over the columns of synthetic_rows.
CONFIG = "\n".join(kind.demo for kind in KINDS.values() if kind.demo)

# Shards of the synthetic run: name and share of the rows.
SHARDS = (("part-00000.tsv", 0.4), ("part-00001.tsv", 0.25), ("part-00002.tsv.gz", 0.15),
          ("part-00003.parquet", 0.2))


def synthetic_rows(rows: int, seed: int = SEED) -> dict[str, np.ndarray]:
    """Columns uid, tag, pred, label, grade, left_label, right_label of ``rows`` rows."""
    rng = np.random.default_rng(seed)
    users = max(rows // 20, 1)
    activity = rng.pareto(1.5, users) + 0.05
    user = rng.choice(users, size=rows, p=activity / activity.sum())
    user_ids = rng.choice(np.int64(2) ** 40, size=users, replace=False) + 10**9
    tag = rng.choice(len(TAGS), size=rows, p=TAG_SHARE)
    user_bias = rng.normal(0.0, 0.7, users)
    logit = -1.72 + user_bias[user] + np.asarray(TAG_BIAS)[tag] + rng.normal(0.0, 0.6, rows)
    truth = 1.0 / (1.0 + np.exp(-logit))
    label = (rng.random(rows) < truth).astype(np.int8)
    pred = np.round(1.0 / (1.0 + np.exp(-(logit + rng.normal(0.0, 0.7, rows)))), 6)
    grade = label * (1 + (rng.random(rows) < 0.25)).astype(np.int8)
    left = (rng.random(rows) < truth).astype(np.int8)
    right = (rng.random(rows) < np.where(left == 1, 0.45, 0.12)).astype(np.int8)
    return {
        "uid": user_ids[user],
        "tag": np.asarray(TAGS)[tag],
        "pred": pred,
        "label": label,
        "grade": grade,
        "left_label": left,
        "right_label": right,
    }


def write_shards(directory: str, rows: int) -> list[str]:
    """The synthetic rows as files in ``directory`` (byte-identical for the same rows)."""
    data = pa.table(synthetic_rows(rows))
    paths, start = [], 0
    for k, (name, share) in enumerate(SHARDS):
        stop = rows if k == len(SHARDS) - 1 else start + int(rows * share)
        part = data.slice(start, stop - start)
        path = os.path.join(directory, name)
        if name.endswith(".parquet"):
            pq.write_table(part, path, row_group_size=max(len(part) // 4, 1))
        else:
            sink = pa.BufferOutputStream()
            sink.write(("\t".join(part.column_names) + "\n").encode())
            pacsv.write_csv(part, sink, write_options=pacsv.WriteOptions(
                include_header=False, delimiter="\t", quoting_style="none"))
            text = sink.getvalue().to_pybytes()
            with open(path, "wb") as out:
                out.write(gzip.compress(text, mtime=0) if name.endswith(".gz") else text)
        paths.append(path)
        start = stop
    return paths


def run(comm: Comm, *, rows: int, json_path: str | None = None, directory: str | None = None,
        report_path: str | None = None, invocation: pipeline.Invocation | None = None) -> int:
    """Collective: write the shards (rank 0; other ranks too when they cannot see them),
    evaluate every available kind, print the lines. Returns the exit status.

    ``directory``: where the files (and ``demo.toml``) are written and kept; None: a
    temporary directory, removed at the end. ``report_path``: the HTML report's file.
    ``invocation``: the command line, for the JSON's ``run`` object (its inputs are the
    shards)."""
    specs, skipped = _available_specs()
    keep = directory is not None
    made = comm.agreed(lambda: _write_files(directory, rows) if comm.rank == 0 else None)
    where: str = comm.allgather(made)[0]
    paths = [os.path.join(where, name) for name, _ in SHARDS]
    if comm.rank != 0 and not all(os.path.exists(p) for p in paths):  # no shared disk
        os.makedirs(where, exist_ok=True)
        made = where
        write_shards(where, rows)
    comm.barrier()
    if comm.rank == 0:
        _announce(rows, where, comm.size, skipped)
    try:
        return pipeline.run_job(
            comm, lambda: pipeline.plan_job(specs, paths, comm.size, json_path=json_path,
                                            report_path=report_path),
            json_path=json_path, report_path=report_path,
            invocation=None if invocation is None else dataclasses.replace(invocation,
                                                                           inputs=paths),
        )
    finally:
        comm.barrier()
        if made is not None and not keep:
            shutil.rmtree(made, ignore_errors=True)


def _available_specs() -> tuple[list[MetricSpec], list[str]]:
    """The demo's metrics whose kind this build has, and ``name (why)`` of the others."""
    config = parse_toml(CONFIG)
    skipped = []
    for name, table in list(config["metrics"].items()):
        try:
            kind_named(table["kind"]).load()
        except KindUnavailable as error:
            skipped.append(f"{name} ({error.problem})")
            del config["metrics"][name]
    return specs_from_config(config, "demo config"), skipped


def _announce(rows: int, directory: str, ranks: int, skipped: list[str]) -> None:
    print(f"mpieval demo: {rows:,} synthetic rows in {len(SHARDS)} files under {directory}, "
          f"{ranks} rank{'s' if ranks > 1 else ''}", file=sys.stderr)
    for item in skipped:
        print(f"mpieval demo: skipping {item}", file=sys.stderr)
    sys.stderr.flush()


def _write_files(directory: str | None, rows: int) -> str:
    """The shards in ``directory`` with ``demo.toml`` beside them, or the shards alone in
    a new temporary directory (None); returns the directory (rank 0). A failure to write
    them is an error of ``demo`` (a full disk: exit 1, :func:`locations.output_failure`),
    and a temporary directory is removed."""
    temporary = None
    try:
        if directory is None:
            directory = temporary = tempfile.mkdtemp(prefix="mpieval-demo-")
            write_shards(directory, rows)
            return directory
        os.makedirs(directory, exist_ok=True)
        write_shards(directory, rows)
        with open(os.path.join(directory, "demo.toml"), "w") as out:
            out.write(CONFIG)
        return directory
    except OSError as error:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
        where = directory or "a temporary directory"
        raise locations.output_failure("demo", f"the demo files in {where}", error) from None
