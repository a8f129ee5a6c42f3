"""The report's recorded pages: a fixed corpus of result files and the HTML page that
``mpieval report`` renders from each case of it, compared byte for byte by
``tests/test_report.py`` (a change of the presentation code that is not meant to change
the page must leave them as they are).

    .venv/bin/python scripts/report_pages.py          # render the pages anew (meant changes)
    .venv/bin/python scripts/report_pages.py --runs   # make the result files anew, then render

The corpus is ``tests/report_pages/``: ``runs/*.json.gz``, the ``--json`` files of real
``mpieval eval``, ``merge`` and ``demo`` runs on data made here at fixed seeds (every kind,
``--compare`` of ``auc``, ``wuauc`` and ``ranking``, tags, tags with too few users, many
tags, importance weights, a merged run, undefined values, a miscalibrated and a reversed
model) and two files written by hand from them (an older mpieval's file without
statistics or ``run`` object, a kind this version does not know); ``cases.json``, which
files each page shows (one alone, several side by side, or a run's own ``--report``
page); ``pages/NAME.html.gz``, the pages; ``matplotlib.txt``, the matplotlib version
that drew them (the SVG's bytes are that version's: the test compares them only under
it).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "report_pages"

# Each page: the run files it shows, in order; "run": the page a run's --report writes.
CASES: dict[str, dict[str, Any]] = {
    "demo": {"runs": ["demo.json"]},
    "compared": {"runs": ["compared.json"]},
    "compared-run": {"runs": ["compared.json"], "run": True},
    "many-tags": {"runs": ["many_tags.json"]},
    "importance": {"runs": ["importance.json"]},
    "merged": {"runs": ["merged.json"]},
    "ranking": {"runs": ["ranking.json"]},
    "undefined": {"runs": ["undefined.json"]},
    "older": {"runs": ["older.json"]},
    "baseline": {"runs": ["plain.json", "compared.json", "miscalibrated.json",
                          "reversed.json"]},
    "side-by-side": {"runs": ["demo.json", "older.json", "merged.json"]},
    "slices": {"runs": ["sliced.json"]},
}
SLICE_MIN_ROWS = 100  # --min-slice-rows of the sliced run


def ab_rows(rows: int, tags: int, seed: int, small_tags: int = 0) -> dict[str, np.ndarray]:
    """Rows of an A/B test: users in ``tags`` tags of falling size, a model B better than A
    (``pred_b``), graded labels and pair labels; the last ``small_tags`` tags hold 3 users
    each."""
    rng = np.random.default_rng(seed)
    users = max(rows // 12, 1)
    uid = rng.integers(0, users, rows)
    sizes = 1.0 / np.arange(1, tags + 1) ** 0.7
    user_tag = rng.choice(tags, users, p=sizes / sizes.sum())
    for k in range(small_tags):
        user_tag[3 * k:3 * k + 3] = tags + k
    names = np.array([f"t{t:03d}" for t in range(tags + small_tags)])
    logit = -2.2 + rng.normal(0, 0.8, users)[uid] + rng.normal(0, 0.9, rows)
    label = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    pred = 1 / (1 + np.exp(-(0.6 * logit - 0.9 + rng.normal(0, 0.9, rows))))
    pred_b = 1 / (1 + np.exp(-(0.7 * logit - 0.7 + rng.normal(0, 0.7, rows))))
    return {"uid": uid, "tag": names[user_tag[uid]], "pred": np.round(pred, 5),
            "pred_b": np.round(pred_b, 5), "label": label,
            "grade": label * (1 + (rng.random(rows) < 0.3)),
            "left": (rng.random(rows) < 0.3).astype(np.int64),
            "right": (rng.random(rows) < 0.2).astype(np.int64),
            "w": np.where(label == 1, 1.0, 10.0)}


def mpieval(*argv: str) -> None:
    """``mpieval ARGV`` in this process, quietly; it must succeed."""
    from mpieval import cli
    from mpieval.errors import UndefinedMetricWarning

    with warnings.catch_warnings(), open(os.devnull, "w") as null, \
            contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        status = cli.main(list(argv))
    if status != 0:
        raise SystemExit(f"mpieval {' '.join(argv)}: exit status {status}")


def make_runs(runs: Path) -> None:
    """The result files, from real runs in a scratch directory (named there relatively,
    so the files' commands do not name this machine's paths)."""
    runs.mkdir(parents=True, exist_ok=True)
    every = ["--metrics", "auc,wuauc,pn,pairwise,ranking", "--tag", "tag", "--label", "label",
             "--left-label", "left", "--right-label", "right", "--k", "3,10"]
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        data = ab_rows(20_000, 6, seed=3, small_tags=2)
        pq.write_table(pa.table(data), "ab.parquet")
        mpieval("eval", "--metrics", "auc,wuauc", "--tag", "tag", "--compare", "pred_b",
                "ab.parquet", "--json", "compared.json")
        mpieval("eval", "--metrics", "auc,wuauc", "--tag", "tag", "ab.parquet",
                "--json", "plain.json")
        pq.write_table(pa.table({**data, "pred": np.round(np.clip(data["pred"] * 1.6, 0, 1),
                                                          5)}), "scaled.parquet")
        mpieval("eval", "--metrics", "auc,wuauc", "--tag", "tag", "scaled.parquet",
                "--json", "miscalibrated.json")
        pq.write_table(pa.table({**data, "pred": 1 - data["pred"]}), "reversed.parquet")
        mpieval("eval", "--metrics", "auc,wuauc", "--tag", "tag", "reversed.parquet",
                "--json", "reversed.json")
        pq.write_table(pa.table(ab_rows(12_000, 40, seed=4)), "tags.parquet")
        mpieval("eval", "--metrics", "auc,wuauc", "--tag", "tag", "--compare", "pred_b",
                "tags.parquet", "--json", "many_tags.json")
        mpieval("eval", "--metrics", "auc", "--weight", "w", "--weights", "importance",
                "ab.parquet", "--json", "importance.json")
        ranking_run("ab.parquet")
        half = {name: column[:10_000] for name, column in data.items()}
        rest = {name: column[10_000:] for name, column in data.items()}
        pq.write_table(pa.table(half), "day1.parquet")
        pq.write_table(pa.table(rest), "day2.parquet")
        mpieval("eval", *every, "day1.parquet", "--save-state", "day1")
        mpieval("eval", *every, "day2.parquet", "--save-state", "day2")
        mpieval("merge", "day1", "day2", "--json", "merged.json")
        few = {name: column[:40] for name, column in data.items()}
        few["label"] = np.zeros(40, np.int64)  # no clicks: AUC, WUAUC, NE... undefined
        few["grade"] = np.zeros(40, np.int64)
        pq.write_table(pa.table(few), "few.parquet")
        mpieval("eval", *every, "few.parquet", "--json", "undefined.json")
        sliced_run(data)
        mpieval("demo", "--rows", "6000", "--dir", "demo", "--json", "demo.json")
        Path("older.json").write_text(json.dumps(older(json.loads(
            Path("demo.json").read_text())), indent=2) + "\n")
        for name in ("compared", "plain", "miscalibrated", "reversed", "many_tags",
                     "importance", "ranking", "merged", "undefined", "demo", "older",
                     "sliced"):
            (runs / f"{name}.json.gz").write_bytes(gzip.compress(
                Path(f"{name}.json").read_bytes(), mtime=0))
        os.chdir(ROOT)


def ranking_run(data: str) -> None:
    """The ``ranking`` run of the corpus (graded labels, tags, model B compared)."""
    mpieval("eval", "--metrics", "ranking", "--uid", "uid", "--label", "grade",
            "--tag", "tag", "--k", "2,5", "--compare", "pred_b", data, "--json",
            "ranking.json")


def sliced_run(data: dict[str, np.ndarray]) -> None:
    """``sliced.json``: auc, wuauc and ranking compared, sliced by a country column (B
    worse in DE, a country of too few rows) and by country*device, in the layout of
    ``--slice`` (each slice a run over its rows; until ``--slice`` writes it itself)."""
    rng = np.random.default_rng(5)
    n = len(data["pred"])
    country = rng.choice(np.array(["US", "DE", "FR", "JP", "LU"]), n,
                         p=[0.45, 0.25, 0.17, 0.1275, 0.0025])
    device = np.where(rng.random(n) < 0.6, "phone", "desktop")
    pred_b = data["pred_b"].copy()
    de = country == "DE"
    pred_b[de] = np.round(np.clip(data["pred"][de] + rng.normal(0, 0.15, de.sum()), 0, 1), 5)
    rows = {**data, "pred_b": pred_b, "country": country, "device": device}
    argv = ["--metrics", "auc,wuauc,ranking", "--tag", "tag", "--compare", "pred_b",
            "--k", "2,5"]
    pq.write_table(pa.table(rows), "sliced.parquet")
    mpieval("eval", *argv, "sliced.parquet", "--json", "sliced.json")
    whole = json.loads(Path("sliced.json").read_text())
    for columns in (("country",), ("country", "device")):
        keys = [tuple(rows[c][i] for c in columns) for i in range(n)]
        for key in sorted(set(keys)):
            chosen = np.array([k == key for k in keys])
            label = "*".join(f"{c}={v}" for c, v in zip(columns, key, strict=True))
            count = int(chosen.sum())
            if count < SLICE_MIN_ROWS:
                parts: dict[str, Any] = {name: {"rows": count, "too_small": True}
                                         for name in whole if name != "run"}
            else:
                pq.write_table(pa.table({c: v[chosen] for c, v in rows.items()}),
                               "part.parquet")
                mpieval("eval", *argv, "part.parquet", "--json", "part.json")
                parts = {name: {**block, "rows": count} for name, block in
                         json.loads(Path("part.json").read_text()).items() if name != "run"}
            for name, block in parts.items():
                whole[name].setdefault("slices", {})[label] = block
    for name, block in whole.items():
        if name != "run":
            for column in dict.fromkeys(slice_column(s) for s in block["slices"]):
                slice_q_values([b for s, b in block["slices"].items()
                                if slice_column(s) == column])
    Path("sliced.json").write_text(json.dumps(whole, indent=2) + "\n")


def slice_column(name: str) -> str:
    """``country=US`` -> ``country``; ``a=x*b=y`` -> ``a*b``."""
    return "*".join(part.partition("=")[0] for part in name.split("*"))


def slice_q_values(blocks: list[dict[str, Any]]) -> None:
    """Beside each ``X_diff_p`` without a q-value in the slice blocks of one column (at
    the same place in each), ``X_diff_q``: Benjamini-Hochberg over those slices, written
    here from its definition (q of the i-th smallest of m p-values: the least ``p_j m /
    j`` over j >= i, at most 1)."""
    found: dict[tuple[tuple[str, ...], str], list[tuple[dict[str, Any], Any]]] = {}

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in list(node.items()):
            if isinstance(value, dict):
                walk(value, (*path, key))
            elif key.endswith("_diff_p") and key[:-2] + "_q" not in node:
                found.setdefault((path, key), []).append((node, value))

    for block in blocks:
        walk(block, ())
    for (_, key), places in found.items():
        tested = sorted((p, i) for i, (_, p) in enumerate(places) if p is not None)
        q: dict[int, float] = {}
        least = 1.0
        for rank in range(len(tested), 0, -1):
            p, i = tested[rank - 1]
            least = min(least, p * len(tested) / rank)
            q[i] = least
        for i, (node, _) in enumerate(places):
            node[key[:-2] + "_q"] = q.get(i)


def older(demo: dict[str, Any]) -> dict[str, Any]:
    """The demo's results as an older mpieval wrote them (no ``run`` object, no
    statistics), and a metric of a kind this version does not know."""
    statistics = ("ci95", "compare", "roc_curve", "calibration_curve", "pr_curve",
                  "score_histogram", "ece", "auprc", "ne", "logloss")

    def plain(block: Any) -> Any:
        if not isinstance(block, dict):
            return block
        return {key: plain(value) for key, value in block.items() if key not in statistics}

    data = {name: plain(block) for name, block in demo.items() if name != "run"}
    data["user_ctr"] = {"kind": "future", "score": 0.5, "rows": 6000, "note": "from later"}
    return data


def unpack(runs: Path, scratch: Path) -> None:
    """The corpus's result files (``runs/NAME.json.gz``) as ``scratch/NAME.json``."""
    for packed in sorted(runs.glob("*.json.gz")):
        (scratch / packed.name[:-3]).write_bytes(gzip.decompress(packed.read_bytes()))


def render(case: dict[str, Any], directory: Path) -> str:
    """The page of one case: ``mpieval report`` of its files (in ``directory``, named
    relatively to it), or the page that its run's ``--report`` writes."""
    from mpieval import report

    previous = os.getcwd()
    os.chdir(directory)
    try:
        if case.get("run"):
            with tempfile.TemporaryDirectory() as scratch:
                page = os.path.join(scratch, "run.html")
                data = json.loads(Path(case["runs"][0]).read_text())
                report.write_run_report(data, page, json_path=case["runs"][0])
                return Path(page).read_text(encoding="utf-8")
        return report.render(report.load_runs(case["runs"]))
    finally:
        os.chdir(previous)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", action="store_true",
                        help="make the result files anew before rendering the pages")
    args = parser.parse_args()
    import matplotlib

    if args.runs:
        make_runs(CORPUS / "runs")
    (CORPUS / "cases.json").write_text(json.dumps(CASES, indent=2) + "\n")
    (CORPUS / "matplotlib.txt").write_text(matplotlib.__version__ + "\n")
    pages = CORPUS / "pages"
    pages.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        unpack(CORPUS / "runs", Path(scratch))
        for name, case in CASES.items():
            text = render(case, Path(scratch))
            (pages / f"{name}.html.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
            print(f"{name}: {len(text):,} characters", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
