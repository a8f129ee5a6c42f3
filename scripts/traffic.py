"""Benchmark rows shaped like a CTR team's traffic dumps (issue 37), shared by the
benchmark scripts (run as ``python scripts/bench_*.py``, so this folder is on ``sys.path``).

Two shapes, chosen with ``--shape`` (:func:`add_shape_argument`):

- ``traffic`` (the default): 60% of the rows from a Zipf head of 100,000 users (a user's
  share falls as ``1 / (rank + 2)``: the heaviest has about 1.9% of the rows, 31 users more
  than 16,384 rows each in 10M), the other 40% spread evenly over 480,000 light users
  (about 8 rows each): about 580,000 distinct users in 10M rows. A row's true CTR is a
  Beta(2, 8) draw (mean 0.2) moved on the logit scale by its user's own effect (normal, sd
  0.4); the pred is the model's noisy estimate of it (logit noise, sd 0.35), so preds are
  beta-like around 0.2 as a real model's are, written with six decimals; the label is a
  Bernoulli draw of the true CTR; four tags of unequal shares (45, 25, 20, 10%).
- ``heavy``: the generator the benchmarks used before (``uid = zipf(1.3) * 2654435761 mod
  2,000,000``: 7.4M of 10M rows in 48 users of more than 16,384 rows, one of them a quarter
  of the rows; preds a Beta(2, 8) draw plus normal noise, clipped to [0, 1]; four tags of
  equal shares). The same bytes as before, for the heavy-user case.

:func:`write` writes a TSV or Parquet file (by its suffix) in chunks of 1M rows, with
vectorised numpy and pyarrow: 10M rows in a few seconds.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

SHAPES = ("traffic", "heavy")
TAGS = np.array(["feed", "search", "video", "mall"])
TAG_SHARES = np.array([0.45, 0.25, 0.20, 0.10])
HEAD_USERS = 100_000
HEAD_SHARE = 0.6
LIGHT_USERS = 480_000
CHUNK = 1_000_000
COUNTRIES = np.array(["US", "IN", "BR", "ID", "MX", "DE", "JP", "FR", "GB", "NG"])
COUNTRY_SHARES = np.array([0.40, 0.20, 0.10, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02, 0.02])
SITES = np.array([f"site{i:03d}" for i in range(200)])
SITE_SHARES = 1.0 / np.arange(1, 201) / np.sum(1.0 / np.arange(1, 201))


def slice_columns(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Two columns to slice by (``--slice-columns``): ``country``, 10 values of skewed
    shares (40% to 2%), and ``site``, 200 values of Zipf shares (1/rank: 17% to 0.1%);
    drawn from their own generator, so that the other columns stay the same bytes."""
    return {"country": COUNTRIES[rng.choice(len(COUNTRIES), n, p=COUNTRY_SHARES)],
            "site": SITES[rng.choice(len(SITES), n, p=SITE_SHARES)]}


def add_shape_argument(parser: argparse.ArgumentParser) -> None:
    """``--shape traffic|heavy`` (default traffic)."""
    parser.add_argument("--shape", choices=SHAPES, default="traffic",
                        help="the rows' shape: traffic (default: ~580k users in 10M rows, "
                             "no user above 2%%, beta-like preds) or heavy (the old "
                             "generator: a few users hold most rows)")


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class Traffic:
    """The ``traffic`` shape's users (their Zipf head's cumulative shares and every user's
    effect, drawn once from ``seed``) and its row chunks."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = np.random.default_rng(seed)
        rank = np.arange(1, HEAD_USERS + 1)
        weights = 1.0 / (rank + 2.0)
        self.head_cdf = np.cumsum(weights) / weights.sum()
        self.effect = self.rng.normal(0.0, 0.4, HEAD_USERS + LIGHT_USERS)

    def users(self, n: int) -> np.ndarray:
        """Each row's user number, 0 .. HEAD_USERS + LIGHT_USERS - 1."""
        rng = self.rng
        head = np.searchsorted(self.head_cdf, rng.random(n), side="right")
        light = HEAD_USERS + rng.integers(0, LIGHT_USERS, n)
        return np.where(rng.random(n) < HEAD_SHARE, np.minimum(head, HEAD_USERS - 1), light)

    def rows(self, n: int, pred_b: bool = False) -> dict[str, np.ndarray]:
        rng = self.rng
        user = self.users(n)
        truth = _sigmoid(_logit(rng.beta(2.0, 8.0, n)) + self.effect[user])
        columns = {
            "uid": (user.astype(np.int64) * 2654435761 + 12345) % (1 << 32),
            "pred": np.round(_sigmoid(_logit(truth) + rng.normal(0.0, 0.35, n)), 6),
            "label": (rng.random(n) < truth).astype(np.int8),
            "tag": TAGS[rng.choice(len(TAGS), n, p=TAG_SHARES)],
        }
        if pred_b:
            columns["pred_b"] = np.round(_sigmoid(_logit(truth) + rng.normal(0.0, 0.5, n)), 6)
        return columns


class Heavy:
    """The ``heavy`` shape: the old generator, draw for draw."""

    def __init__(self, seed: int = 1) -> None:
        self.rng = np.random.default_rng(seed)

    def rows(self, n: int, pred_b: bool = False) -> dict[str, np.ndarray]:
        rng = self.rng
        uid = (rng.zipf(1.3, n) * 2654435761) % 2_000_000
        truth = rng.beta(2, 8, n)
        columns = {
            "uid": uid,
            "pred": np.round(np.clip(truth + rng.normal(0, 0.05, n), 0, 1), 6),
            "label": (rng.random(n) < truth).astype(np.int8),
            "tag": TAGS[rng.integers(0, 4, n)],
        }
        if pred_b:
            columns["pred_b"] = np.round(np.clip(truth + rng.normal(0, 0.08, n), 0, 1), 6)
        return columns


def source(shape: str, seed: int = 1) -> Traffic | Heavy:
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    return Traffic(seed) if shape == "traffic" else Heavy(seed)


def preds(n: int, shape: str = "traffic", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows' pred (float64, six decimals) and label (int8) of the shape, in memory."""
    rows = source(shape, seed)
    parts = [rows.rows(min(CHUNK, n - start)) for start in range(0, n, CHUNK)]
    return (np.concatenate([p["pred"] for p in parts]),
            np.concatenate([p["label"] for p in parts]))


def write(path: Path, rows: int, shape: str = "traffic", seed: int = 1,
          string_uids: bool = False, pred_b: bool = False, slices: bool = False) -> None:
    """``rows`` rows of uid, pred, label, tag (and pred_b) of the shape, written in chunks
    (bounded memory) to a ``.parquet`` file, or a TSV otherwise; with ``string_uids``, each
    uid written as the string ``u<number>`` (the same users); with ``slices``, the
    columns of :func:`slice_columns` too."""
    generator = source(shape, seed)
    slice_rng = np.random.default_rng([seed, 34])
    tmp = path.with_name(path.name + ".tmp")
    parquet = path.suffix == ".parquet"
    writer: pq.ParquetWriter | None = None
    with open(tmp, "wb") as out:
        for start in range(0, rows, CHUNK):
            columns = generator.rows(min(CHUNK, rows - start), pred_b)
            if string_uids:
                columns["uid"] = np.char.add("u", columns["uid"].astype(str))
            if slices:
                columns.update(slice_columns(slice_rng, len(columns["pred"])))
            table = pa.table(columns)
            if parquet:
                if writer is None:
                    writer = pq.ParquetWriter(out, table.schema)
                writer.write_table(table)
                continue
            if start == 0:
                out.write("\t".join(table.column_names).encode() + b"\n")
            sink = pa.BufferOutputStream()
            pacsv.write_csv(table, sink, write_options=pacsv.WriteOptions(
                include_header=False, delimiter="\t", quoting_style="none"))
            out.write(sink.getvalue().to_pybytes())
        if writer is not None:
            writer.close()
    os.replace(tmp, path)


def summary(path: Path) -> str:
    """Rows, distinct users and the heaviest user's share of a written file (for a check)."""
    if path.suffix == ".parquet":
        table = pq.read_table(path, columns=["uid", "pred"])
    else:
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t"),
                               convert_options=pacsv.ConvertOptions(
                                   include_columns=["uid", "pred"]))
    _, counts = np.unique(table.column("uid").to_numpy(), return_counts=True)
    pred = table.column("pred").to_numpy()
    rows = table.num_rows
    return (f"{rows:,} rows, {len(counts):,} users, heaviest {counts.max() / rows:.1%}, "
            f"{counts[counts > 16384].sum() / rows:.1%} of rows in {(counts > 16384).sum()} "
            f"users of more than 16,384; pred mean {pred.mean():.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="a .tsv or .parquet file to write")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--string-uids", action="store_true")
    parser.add_argument("--pred-b", action="store_true", help="a second model's pred too")
    parser.add_argument("--slice-columns", action="store_true",
                        help="columns to slice by too: country (10 values), site (200)")
    add_shape_argument(parser)
    args = parser.parse_args()
    write(args.path, args.rows, args.shape, args.seed, args.string_uids, args.pred_b,
          args.slice_columns)
    print(f"{args.path}: {summary(args.path)}")
