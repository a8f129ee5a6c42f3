"""``mpieval report``: the page of the demo's JSON, of an A/B run and of several runs; bad
input exits 2 and writes nothing; the page parses, is self-contained, holds one figure per
expected plot, and a real headless Chromium draws every figure.

The A/B results come from :func:`simulated_run`: rows simulated here and the statistics
of the JSON reference ("Statistics") computed from them with numpy, under exactly the names the
JSON uses (roc_curve, calibration_curve, ci95, compare with *_diff, *_diff_ci95, *_diff_p).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

from mpieval import cli, report
from mpieval.errors import UndefinedMetricWarning

pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Z95 = 1.959964


# -- a simulated run with every statistic ----------------------------------------------


def _roc(pred: np.ndarray, label: np.ndarray, points: int = 1000) -> list[list[float]]:
    order = np.argsort(-pred, kind="stable")
    tp = np.cumsum(label[order])
    fp = np.cumsum(1 - label[order])
    keep = np.linspace(0, len(pred) - 1, min(points, len(pred))).astype(int)
    return [[0.0, 0.0], *np.column_stack([fp[keep] / fp[-1], tp[keep] / tp[-1]]).tolist()]


def _calibration(pred: np.ndarray, label: np.ndarray, points: int = 1000) -> list[list[float]]:
    order = np.argsort(pred, kind="stable")
    bins = np.array_split(order, min(points, len(pred)))
    return [[float(pred[b].mean()), float(label[b].mean()), float(len(b))] for b in bins]


def _auc(pred: np.ndarray, label: np.ndarray) -> float:
    ranks = np.empty(len(pred))
    ranks[np.argsort(pred, kind="stable")] = np.arange(1, len(pred) + 1)
    positives = label.sum()
    negatives = len(label) - positives
    return float((ranks[label == 1].sum() - positives * (positives + 1) / 2)
                 / (positives * negatives))


def _auc_stderr(auc: float, positives: float, negatives: float) -> float:
    """Hanley & McNeil's standard error of an AUC."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (auc * (1 - auc) + (positives - 1) * (q1 - auc * auc)
                + (negatives - 1) * (q2 - auc * auc)) / (positives * negatives)
    return math.sqrt(variance)


def _p(diff: float, stderr: float) -> float:
    return math.erfc(abs(diff) / stderr / math.sqrt(2))


def _auc_block(pred: np.ndarray, label: np.ndarray) -> dict[str, Any]:
    num = len(pred)
    actual, predicted = float(label.mean()), float(pred.mean())
    clipped = np.clip(pred, 1e-15, 1 - 1e-15)
    logloss = float(-np.mean(label * np.log(clipped) + (1 - label) * np.log(1 - clipped)))
    entropy = -(actual * math.log(actual) + (1 - actual) * math.log(1 - actual))
    auc = _auc(pred, label)
    positives = float(label.sum())
    se_auc = _auc_stderr(auc, positives, num - positives)
    se_ctr = math.sqrt(actual * (1 - actual) / num)
    se_pred = float(pred.std() / math.sqrt(num))
    copc = actual / predicted
    se_copc = copc * math.hypot(se_ctr / actual, se_pred / predicted)
    return {
        "kind": "auc", "auc": auc, "bucket_error": 0.05 + 0.4 * abs(1 - copc),
        "rmse": float(np.sqrt(np.mean((pred - label) ** 2))),
        "mae": float(np.mean(np.abs(pred - label))), "num": num, "actual_ctr": actual,
        "predicted_ctr": predicted, "copc": copc, "positives": int(positives), "rows": num,
        "table_size": 1_000_000, "logloss": logloss, "ne": logloss / entropy,
        "auprc": float(np.mean(np.cumsum(label[np.argsort(-pred)]) / np.arange(1, num + 1))),
        "auc_tie_bound": 2e-6, "roc_curve": _roc(pred, label),
        "calibration_curve": _calibration(pred, label),
        "ci95": {"auc": [auc - Z95 * se_auc, auc + Z95 * se_auc],
                 "actual_ctr": [actual - Z95 * se_ctr, actual + Z95 * se_ctr],
                 "predicted_ctr": [predicted - Z95 * se_pred, predicted + Z95 * se_pred],
                 "copc": [copc - Z95 * se_copc, copc + Z95 * se_copc]},
    }


def _tag_block(uid: np.ndarray, pred: np.ndarray, label: np.ndarray) -> dict[str, Any]:
    order = np.argsort(uid, kind="stable")
    users, starts, rows = np.unique(uid[order], return_index=True, return_counts=True)
    aucs = np.full(len(users), -1.0)
    for u, (start, count) in enumerate(zip(starts, rows, strict=True)):
        mine = order[start:start + count]
        if 0 < label[mine].sum() < count:
            aucs[u] = _auc(pred[mine], label[mine])
    valid = aucs >= 0
    uauc = float(aucs[valid].mean())
    wuauc = float((aucs[valid] * rows[valid]).sum() / rows[valid].sum())
    spread = float(aucs[valid].std() / math.sqrt(valid.sum()))
    actual, predicted = float(label.mean()), float(pred.mean())
    clipped = np.clip(pred, 1e-15, 1 - 1e-15)
    return {
        "wuauc": wuauc, "uauc": uauc,
        "logloss": float(-np.mean(label * np.log(clipped) + (1 - label) * np.log(1 - clipped))),
        "actual_ctr": actual, "predicted_ctr": predicted, "copc": actual / predicted,
        "real_user_count": len(users), "real_ins_num": len(pred),
        "valid_user_count": int(valid.sum()), "valid_ins_num": int(rows[valid].sum()),
        "ci95": {"uauc": [uauc - Z95 * spread, uauc + Z95 * spread],
                 "wuauc": [wuauc - 1.1 * Z95 * spread, wuauc + 1.1 * Z95 * spread]},
    }


def _compared(a: dict[str, Any], b: dict[str, Any], names: tuple[str, ...], column: str
              ) -> dict[str, Any]:
    """``b``'s values under their usual names, and B - A for each of ``names``."""
    compare: dict[str, Any] = {"pred": column}
    compare.update({k: v for k, v in b.items() if k not in ("kind", "ci95")})
    for name in names:
        diff = b[name] - a[name]
        low_a, high_a = a["ci95"][name]
        stderr = (high_a - low_a) / (2 * Z95) / 2.5  # paired: much tighter than either
        compare[f"{name}_diff"] = diff
        compare[f"{name}_diff_ci95"] = [diff - Z95 * stderr, diff + Z95 * stderr]
        compare[f"{name}_diff_p"] = _p(diff, stderr)
    return compare


def simulated_run(seed: int, rows: int = 40_000, compare: bool = True) -> dict[str, Any]:
    """A run of every kind with every statistic, on simulated CTR rows: model A, and
    with ``compare`` a better model B (``pred_b``) on the same rows."""
    rng = np.random.default_rng(seed)
    users = rows // 25
    user = rng.integers(0, users, rows)
    tags = np.array(["feed", "search", "video"])[rng.choice(3, rows, p=[0.5, 0.3, 0.2])]
    logit = -1.6 + rng.normal(0, 0.7, users)[user] + rng.normal(0, 0.6, rows)
    label = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    pred_a = np.round(1 / (1 + np.exp(-(logit + 0.1 + rng.normal(0, 0.8, rows)))), 6)
    pred_b = np.round(1 / (1 + np.exp(-(logit + rng.normal(0, 0.65, rows)))), 6)
    auc_a, auc_b = _auc_block(pred_a, label), _auc_block(pred_b, label)
    if compare:
        auc_a["compare"] = _compared(auc_a, auc_b, ("auc",), "pred_b")
    tag_blocks = {}
    for tag in ("all", "feed", "search", "video"):
        rows_of = np.ones(rows, bool) if tag == "all" else tags == tag
        a = _tag_block(user[rows_of], pred_a[rows_of], label[rows_of])
        if compare:
            b = _tag_block(user[rows_of], pred_b[rows_of], label[rows_of])
            a["compare"] = _compared(a, b, ("uauc", "wuauc"), "pred_b")
        tag_blocks[tag] = a
    grade = label * (1 + (rng.random(rows) < 0.25))
    return {
        "ctr": auc_a,
        "user_ctr": {"kind": "wuauc", "tags": tag_blocks},
        "grade_pn": {"kind": "pn", "average_pn": 1.74, "ins_number": rows,
                     "positive_pairs": int(grade.sum() * 80), "negative_pairs": 46000,
                     "tie_pairs": 3, "ties": "negative"},
        "pair_click": {"kind": "pairwise", "ins": rows, "same_label_click": 3300,
                       "left_label_click": 4100, "right_label_click": 3900,
                       "same_label_unclick": rows - 11300},
    }


# -- helpers ---------------------------------------------------------------------------


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text; fails on unbalanced tags."""

    VOID = frozenset({"meta", "br", "img", "link", "input", "hr", "col", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    elements.close()
    assert elements.stack == []
    return elements


def figures_of(elements: Elements) -> list[str]:
    """The class lists of the page's figures."""
    return [attrs.get("class") or "" for tag, attrs in elements.tags if tag == "figure"]


def assert_self_contained(page: str, elements: Elements) -> None:
    for tag, attrs in elements.tags:
        for name in ("src", "href", "xlink:href", "srcset", "data", "action"):
            value = attrs.get(name) or ""
            assert not value.startswith(("http:", "https:", "//")), (tag, name, value)
        assert tag not in ("script", "link", "iframe", "img", "object"), tag
    assert "@import" not in page and "@font-face" not in page
    assert "url(http" not in page and "url(//" not in page


def write_json(path: str, data: dict[str, Any]) -> str:
    with open(path, "w") as out:
        json.dump(data, out)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def demo_json(tmp_path_factory) -> str:
    """The JSON of a small ``mpieval demo``, which also writes its page (``demo.html``)."""
    directory = tmp_path_factory.mktemp("demo")
    path = str(directory / "demo.json")
    with warnings.catch_warnings():  # bucket error is undefined on so few rows: as it should
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        assert cli.main(["demo", "--rows", "20000", "--json", path,
                         "--report", str(directory / "demo.html")]) == 0
    return path


@pytest.fixture(scope="module")
def ab_json(tmp_path_factory) -> str:
    return write_json(str(tmp_path_factory.mktemp("ab") / "ab.json"), simulated_run(7))


# -- the pages -------------------------------------------------------------------------


def test_demo_page(tmp_path, capsys, demo_json):
    page_path = str(tmp_path / "demo.html")
    status, out, err = run(capsys, "report", demo_json, "-o", page_path)
    assert (status, out, err) == (0, "", "")
    page = open(page_path).read()
    by_demo = open(os.path.join(os.path.dirname(demo_json), "demo.html")).read()
    # the same page, but its label (the command in the header names both files)
    assert by_demo.replace("demo.html", "demo.json") == page.replace("demo.html", "demo.json")
    elements = parse(page)
    assert_self_contained(page, elements)
    # item_sim and item_sim_search: lift, ROC, calibration, precision-recall and scores by
    # class each; user_ctr: one dot plot with the wuauc blocks' intervals; grade_ranking:
    # one dot plot of NDCG@K and Recall@K per tag.
    assert figures_of(elements) == ["plot"] * 10 + ["plot wide"] * 2
    text = " ".join(elements.text)
    assert "No intervals" not in text and "users as independent clusters" in text
    for name in ("item_sim", "item_sim_search", "user_ctr", "grade_pn", "pair_click"):
        assert f'id="m-{name}"' in page
    assert "24,047,029" in text or "positive_pairs" not in page  # counts with separators


def test_ab_page_has_every_figure(tmp_path, capsys, ab_json):
    page_path = str(tmp_path / "ab.html")
    assert run(capsys, "report", ab_json, "-o", page_path)[0] == 0
    page = open(page_path).read()
    elements = parse(page)
    assert_self_contained(page, elements)
    # ctr: ROC, calibration, differences; user_ctr: dot plot, differences of WUAUC, UAUC.
    assert figures_of(elements) == ["plot", "plot", "plot wide", "plot wide", "plot wide",
                                    "plot wide"]
    svgs = [attrs for tag, attrs in elements.tags if tag == "svg"]
    assert len(svgs) == 6 and all("viewbox" in attrs for attrs in svgs)
    ids = [attrs["id"] for _, attrs in elements.tags if attrs.get("id")]
    assert len(ids) == len(set(ids))  # the inline SVGs share one document
    text = " ".join(elements.text)
    assert "B (pred_b)" in text and "p < 0.0001" in text
    assert "No ROC" not in text and "No intervals" not in text


def test_several_runs_overlay_and_side_by_side(tmp_path, capsys, ab_json, demo_json):
    plain = write_json(str(tmp_path / "yesterday.json"), simulated_run(8, compare=False))
    page_path = str(tmp_path / "both.html")
    assert run(capsys, "report", plain, ab_json, demo_json, "-o", page_path)[0] == 0
    elements = parse(open(page_path).read())
    heads = [data for data in elements.text if data in ("yesterday", "ab: A", "ab: B (pred_b)",
                                                        "demo")]
    assert {"yesterday", "ab: A", "ab: B (pred_b)", "demo"} <= set(heads)
    # ctr (yesterday, ab): ROC, calibration, differences; user_ctr (all three runs): dots,
    # differences of WUAUC and UAUC (ab's); item_sim and item_sim_search (demo's): lift,
    # ROC, calibration, precision-recall and scores by class each; grade_ranking (demo's):
    # its dot plot per tag.
    assert figures_of(elements) == ["plot", "plot", "plot wide", "plot wide", "plot wide",
                                    "plot wide"] + ["plot"] * 10 + ["plot wide"]
    assert "Not in demo." in " ".join(elements.text)


def test_the_same_input_gives_the_same_figure():
    from mpieval.kinds.auc import figures as auc_figures
    from mpieval.report import figures

    curve = simulated_run(11, rows=3000)["ctr"]["roc_curve"]
    series = figures.Series("A", figures.PALETTE[0])
    first = auc_figures.roc([(series, curve)], "same")
    assert first == auc_figures.roc([(series, curve)], "same")
    assert 'id="same-' in first and "<?xml" not in first


def test_null_values_and_missing_intervals_read_as_such(tmp_path):
    data = simulated_run(9, rows=5000, compare=False)
    data["ctr"]["auc"] = None
    data["ctr"]["ci95"]["copc"] = None
    data["user_ctr"]["tags"]["video"]["uauc"] = None
    del data["user_ctr"]["tags"]["video"]["ci95"]
    path = write_json(str(tmp_path / "nulls.json"), data)
    page = report.render(report.load_runs([path]))
    text = " ".join(parse(page).text)
    assert "undefined" in text


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not an mpieval result"),
    ("{}", "is not an mpieval result"),
    ('{"auc": 0.7}', "is not an mpieval result"),
    ('{"x": {"kind": "auc", "auc": 0.7}}', "older or unknown layout: metric 'x' (auc) has no"),
    ('{"u": {"kind": "wuauc", "all": {"wuauc": 0.6}}}', "has no 'tags'"),
    ('{"x": {"kind": "pn", "average_pn": "high", "ins_number": 1, "positive_pairs": 1,'
     ' "negative_pairs": 1}}', "average_pn is 'high', not a number"),
])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, ab_json, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    page_path = tmp_path / "page.html"
    status, out, err = run(capsys, "report", ab_json, str(bad), "-o", str(page_path))
    assert status == 2 and out == ""
    assert err.startswith(f"mpieval: error: {bad}: ") and message in err, err
    assert err.count("\n") == 1
    assert os.listdir(tmp_path) == ["bad.json"]


def test_a_malformed_curve_is_bad_input(tmp_path, capsys):
    data = simulated_run(10, rows=3000)
    data["ctr"]["roc_curve"] = [[0.0, 0.0], [0.5]]
    path = write_json(str(tmp_path / "curve.json"), data)
    status, _, err = run(capsys, "report", path, "-o", str(tmp_path / "page.html"))
    assert status == 2 and "roc_curve is not a list of [fpr, tpr] pairs" in err
    assert not (tmp_path / "page.html").exists()


def test_missing_file_and_output_directory(tmp_path, capsys, ab_json):
    status, _, err = run(capsys, "report", str(tmp_path / "none.json"), "-o",
                         str(tmp_path / "page.html"))
    assert status == 2 and "none.json: cannot read it" in err
    status, _, err = run(capsys, "report", ab_json, "-o", str(tmp_path / "no" / "page.html"))
    assert status == 2 and "-o: cannot write" in err


def test_output_is_required(capsys, ab_json):
    status, _, err = run(capsys, "report", ab_json)
    assert status == 2 and "-o" in err


def test_without_matplotlib_a_clear_error(tmp_path, capsys, ab_json, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page_path = tmp_path / "page.html"
    status, _, err = run(capsys, "report", ab_json, "-o", str(page_path))
    assert status == 2
    assert "needs matplotlib" in err and "pip install 'mpieval[report]'" in err
    assert not page_path.exists()


# -- --report on eval and demo ---------------------------------------------------------


def test_eval_writes_the_report_at_the_end(tmp_path, capsys):
    from test_cli import rows, write

    data = write(str(tmp_path / "part.tsv"), rows(3000))
    json_path, page_path = tmp_path / "run.json", tmp_path / "run.html"
    status, out, err = run(capsys, "eval", "--metrics", "auc,wuauc", "--tag", "tag", data,
                           "--json", str(json_path), "--report", str(page_path))
    assert status == 0 and out.startswith("auc: auc=")
    assert f"mpieval: report written to {page_path}\n" in err
    page = page_path.read_text()
    elements = parse(page)
    assert_self_contained(page, elements)
    assert str(json_path) in elements.text  # the runs table names the JSON file
    assert 'id="m-auc"' in page and 'id="m-wuauc"' in page
    # the page of the run equals the page of its JSON, but for the run's label
    written = json.loads(json_path.read_text())
    loaded = report.load_run(str(json_path))
    assert loaded.provenance == written.pop("run") and loaded.metrics == written


def test_an_importance_weighted_run_says_how_its_intervals_read_the_weights(tmp_path, capsys):
    from test_cli import rows, write

    data = rows(3000)
    data["w"] = np.where(data["label"] == 1, 1.0, 10.0)  # negatives kept at a rate of 0.1
    source = write(str(tmp_path / "part.tsv"), data)
    json_path, page_path = tmp_path / "run.json", tmp_path / "run.html"
    status, _, err = run(capsys, "eval", "--metrics", "auc", "--weight", "w", "--weights",
                         "importance", source, "--json", str(json_path), "--report",
                         str(page_path))
    assert status == 0, err
    written = json.loads(json_path.read_text())
    assert written["auc"]["weights"] == "importance"
    total = written["run"]["weights"]["auc"]["sum"]
    assert total == pytest.approx(float(data["w"].sum()))
    page = page_path.read_text()
    header = page[page.index("<header>"):page.index("</header>") + 9]
    text = " ".join(" ".join(parse(header).text).split())
    for words in ("importance weights (inverse sampling rates)", "effective size",
                  "3,000 rows", f"weights summing to {total:,.6g}"):
        assert words in text, words


@pytest.mark.parametrize("broken", ["matplotlib", "directory"])
def test_eval_report_problems_stop_before_reading(tmp_path, capsys, monkeypatch, broken):
    from test_cli import rows, write

    data = write(str(tmp_path / "part.tsv"), rows(500))
    page_path = tmp_path / "run.html"
    if broken == "matplotlib":
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    else:
        page_path = tmp_path / "missing" / "run.html"
    status, out, err = run(capsys, "eval", data, "--json", str(tmp_path / "run.json"),
                           "--report", str(page_path))
    assert status == 2 and out == ""
    assert ("needs matplotlib" if broken == "matplotlib" else "--report: cannot write") in err
    assert sorted(os.listdir(tmp_path)) == ["part.tsv"]


def test_the_report_under_mpiexec_is_written_once(tmp_path):
    from test_cli import rows, write
    from test_cli_mpi import MPIEVAL, MPIEXEC, launch

    if not (os.path.exists(MPIEVAL) and os.path.exists(MPIEXEC)):
        pytest.skip("needs the installed mpieval and mpiexec beside the test interpreter")
    data = write(str(tmp_path / "part.tsv"), rows(4000))
    page_path = tmp_path / "run.html"
    proc, _ = launch(2, "eval", "--metrics", "auc,wuauc", "--tag", "tag", data,
                     "--report", page_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("report written to") == 1
    assert sorted(os.listdir(tmp_path)) == ["part.tsv", "run.html"]
    parse(page_path.read_text())


def test_the_demo_script_writes_the_report():
    """scripts/demo passes --report demo-report.html (run from the repository)."""
    with open(os.path.join(ROOT, "scripts", "demo")) as script:
        text = script.read()
    assert text.count("--report demo-report.html") == 2


# -- in a real browser -----------------------------------------------------------------


def _chromium() -> str:
    """Chromium's path; installed from Debian's packages when absent and we are root."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.STDOUT,
                 "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
        subprocess.run(["apt-get", "update", "-qq"], timeout=600, check=False, **quiet)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], timeout=900,
                       check=False, **quiet)
        found = shutil.which("chromium")
        if found:
            return found
    pytest.skip("Chromium is not installed and could not be installed from Debian's "
                "packages (needs root and apt-get)")


@pytest.fixture(scope="module")
def chromium() -> str:
    return _chromium()


# Injected into a copy of the page (the page itself has no script): the figures' boxes.
_MEASURE = """<script>
addEventListener("load", () => {
  const boxes = [...document.querySelectorAll("figure.plot svg")].map(e => {
    const r = e.getBoundingClientRect();
    return [r.left + scrollX, r.top + scrollY, r.width, r.height].map(Math.round);
  });
  const out = document.createElement("pre");
  out.id = "boxes";
  out.textContent = JSON.stringify({boxes, height: document.documentElement.scrollHeight});
  document.body.append(out);
});
</script>"""


def _browser(chromium: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
            capture_output=True, timeout=180, check=False)


def read_png(path: str) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG (what Chromium writes) as a (height, width, 3) array."""
    with open(path, "rb") as source:
        data = source.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    assert header is not None
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    channels = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8)
    stride = width * channels
    rows = raw.reshape(height, stride + 1)
    image = np.zeros((height, stride), np.int32)
    previous = np.zeros(stride, np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 1:  # Sub
            line = line.copy()
            for x in range(channels, stride):
                line[x] = (line[x] + line[x - channels]) & 255
        elif kind == 2:  # Up
            line = (line + previous) & 255
        elif kind == 3:  # Average
            line = line.copy()
            for x in range(stride):
                left = line[x - channels] if x >= channels else 0
                line[x] = (line[x] + (left + previous[x]) // 2) & 255
        elif kind == 4:  # Paeth
            line = line.copy()
            for x in range(stride):
                a = line[x - channels] if x >= channels else 0
                b = previous[x]
                c = previous[x - channels] if x >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        image[y] = line
        previous = line
    return image.reshape(height, width, channels)[:, :, :3].astype(np.uint8)


def _load_image(path: str) -> np.ndarray:
    try:
        from PIL import Image  # comes with matplotlib
    except ImportError:
        return read_png(path)
    with Image.open(path) as picture:
        return np.asarray(picture.convert("RGB"))


def test_chromium_draws_every_figure(tmp_path, ab_json, chromium):
    """Each figure's box in a real browser's screenshot holds a drawing: dark pixels
    (axes, text), several colours (the curves), not one flat colour."""
    plain = write_json(str(tmp_path / "yesterday.json"), simulated_run(8, compare=False))
    page = report.render(report.load_runs([plain, ab_json]))
    page_path = tmp_path / "page.html"
    page_path.write_text(page)
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", _MEASURE + "</body>"))
    dom = _browser(chromium, "--window-size=1280,1000", "--dump-dom", measured.as_uri())
    text = dom.stdout.decode()
    start = text.index('<pre id="boxes">') + len('<pre id="boxes">')
    layout = json.loads(text[start:text.index("</pre>", start)].replace("&quot;", '"'))
    boxes = layout["boxes"]
    assert len(boxes) == 6  # ctr: ROC, calibration, differences; user_ctr: dots, 2 differences
    height = min(layout["height"] + 10, 16000)
    shot = tmp_path / "page.png"
    done = _browser(chromium, f"--window-size=1280,{height}", f"--screenshot={shot}",
                    page_path.as_uri())
    assert shot.exists(), done.stderr.decode()[-2000:]
    keep = os.environ.get("MPIEVAL_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
    image = _load_image(str(shot))
    assert image.shape[1] == 1280
    for left, top, width, box_height in boxes:
        assert width > 300 and box_height > 150, (left, top, width, box_height)
        assert top + box_height <= image.shape[0]
        region = image[top:top + box_height, left:left + width].astype(np.int32)
        gray = region.mean(axis=2)
        assert gray.std() > 10, (left, top)  # not blank
        assert (gray < 100).mean() > 0.003, (left, top)  # axes and labels drawn
        colourful = (region.max(axis=2) - region.min(axis=2)) > 60
        assert colourful.mean() > 0.001, (left, top)  # data drawn in colour


def test_one_class_only_says_why_there_is_no_roc_curve(tmp_path):
    data = simulated_run(12, rows=3000, compare=False)
    data["ctr"].update(auc=None, roc_curve=[])
    data["ctr"]["ci95"]["auc"] = None
    page = report.render(report.load_runs([write_json(str(tmp_path / "one.json"), data)]))
    elements = parse(page)
    assert "No ROC curve in one: it needs both clicks and non-clicks." in elements.text
    assert figures_of(elements) == ["plot", "plot wide"]  # calibration; user_ctr's dots


# -- the summary, provenance, baseline, tags (from real `mpieval eval` results) ---------

MINUS = "\u2212"


def ab_rows(rows: int, tags: int, seed: int = 3, small_tags: int = 0) -> dict[str, np.ndarray]:
    """Rows of an A/B test: users in ``tags`` tags of falling size (the first the largest),
    a model B better than A; the last ``small_tags`` tags hold 3 users each (the recorded
    pages' maker, :func:`report_pages.ab_rows`, without its other columns)."""
    data = _pages_script().ab_rows(rows, tags, seed, small_tags)
    return {name: data[name] for name in ("uid", "tag", "pred", "pred_b", "label")}


def eval_json(tmp_path, name: str, data: dict[str, np.ndarray], *flags: str) -> str:
    """The --json of a real ``mpieval eval`` over ``data``."""
    from test_cli import write

    source = write(str(tmp_path / f"{name}.tsv"), data)
    path = str(tmp_path / f"{name}.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), \
                contextlib.redirect_stderr(null):
            assert cli.main(["eval", *flags, source, "--json", path]) == 0
    return path


@pytest.fixture(scope="module")
def compared_json(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("compared")
    return eval_json(directory, "compared", ab_rows(60_000, 6, small_tags=2), "--metrics",
                     "auc,wuauc", "--tag", "tag", "--compare", "pred_b")


def section_text(page: str, section_id: str) -> str:
    """The text of the ``<section id=...>`` of ``page``."""
    start = page.index(f'<section id="{section_id}"')
    return "".join(parse(page[start:page.index("</section>", start) + 10]).text)


def p_words(p: float) -> str:
    """A p-value as the page is to print it (two significant digits below 0.01)."""
    if p < 1e-4:
        return "p < 0.0001"
    return f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


def test_the_summary_comes_before_any_figure(compared_json, demo_json):
    for path in (compared_json, demo_json):
        page = report.render(report.load_runs([path]))
        summary = page.index('<section id="summary">')
        assert summary < page.index("<svg")
        assert page.index("</section>", summary) < page.index("<svg")
        text = section_text(page, "summary")
        assert "AUC" in text and "95%" in text


def test_the_verdict_of_a_compare_run(compared_json):
    """The summary says B - A of AUC, WUAUC and UAUC with the paired interval and p-value
    of the JSON, to 4 decimals (the intervals here are wider than 0.002), and how many tags
    differ at q < 0.05."""
    data = json.load(open(compared_json))
    page = report.render(report.load_runs([compared_json]))
    text = " ".join(section_text(page, "summary").split())
    checks = [(data["auc"]["compare"], "auc", "AUC")]
    checks += [(data["wuauc"]["tags"]["all"]["compare"], field, field.upper())
               for field in ("wuauc", "uauc")]
    for compare, field, name in checks:
        diff, (low, high) = compare[f"{field}_diff"], compare[f"{field}_diff_ci95"]
        assert high - low >= 0.002, (field, low, high)
        expected = (f"{name} {diff:+.4f} (95% {low:+.4f} to {high:+.4f}, "
                    f"{p_words(compare[f'{field}_diff_p'])})")
        assert expected in text, (expected, text)
        direction = ("B better" if low > 0 else "B worse" if high < 0
                     else "no evidence of a difference")
        assert f"{expected} {direction}" in text
        # B better in the ranking values here: the overall sentence says so first
        assert f"B {MINUS} A: B ranks better" in text
        assert text.index(f"B {MINUS} A: B ranks better") < text.index(expected)
    tags = {tag: values for tag, values in data["wuauc"]["tags"].items() if tag != "all"}
    for field in ("wuauc", "uauc"):
        qs = [values["compare"][f"{field}_diff_q"] for values in tags.values()]
        significant = sum(1 for q in qs if q is not None and q < 0.05)
        assert f"{field.upper()} {significant} of {len(tags)} tags differ at q < 0.05" in text
    assert "too few users" in text  # the two tags of 3 users are untested


def test_value_tables_have_a_b_minus_a_column(compared_json):
    data = json.load(open(compared_json))
    page = report.render(report.load_runs([compared_json]))
    elements = parse(page)
    cells = [(attrs.get("data-label"), index) for index, (tag, attrs) in
             enumerate(elements.tags) if tag == "td"]
    assert any(label == f"B {MINUS} A" for label, _ in cells)
    start = page.index('<section id="m-auc"')
    table = page[start:page.index("</table>", start)]
    diff = data["auc"]["compare"]["auc_diff"]
    low, high = data["auc"]["compare"]["auc_diff_ci95"]
    assert f"<th>B {MINUS} A</th>" in table
    assert f'<td data-label="B {MINUS} A">{diff:+.4g}<span class=ci>95%: {low:+.4g} to ' \
           f"{high:+.4g}</span>" in table


def test_tags_with_too_few_users_are_said_so_and_not_drawn(compared_json, monkeypatch):
    from mpieval.report import figures

    data = json.load(open(compared_json))
    small = [tag for tag, values in data["wuauc"]["tags"].items()
             if values["valid_user_count"] < 10]
    assert small and all(data["wuauc"]["tags"][tag]["ci95"]["uauc"] is None for tag in small)
    drawn: dict[str, list[Any]] = {"intervals": [], "differences": []}
    real_intervals, real_differences = figures.intervals, figures.differences

    def intervals(categories, panels, key, category="tag"):
        drawn["intervals"].extend(categories)
        return real_intervals(categories, panels, key, category)

    def differences(rows, xlabel, key, over="tags"):
        drawn["differences"].extend(row.label for row in rows)
        return real_differences(rows, xlabel, key, over)

    monkeypatch.setattr(figures, "intervals", intervals)
    monkeypatch.setattr(figures, "differences", differences)
    page = report.render(report.load_runs([compared_json]))
    assert drawn["intervals"] and drawn["differences"]
    assert not set(small) & set(drawn["intervals"])
    assert not set(small) & set(drawn["differences"])
    start = page.index('<section id="m-wuauc"')
    for tag in small:
        row = page[page.index(f">{tag}</td>", start):]
        row = row[:row.index("</tr>")]
        assert "too few users" in row and "95%:" not in row, row


def test_provenance_in_the_header(tmp_path, ab_json):
    data = simulated_run(13, rows=3000, compare=False)
    data["run"] = {"mpieval_version": "9.8.7", "command": ["mpieval", "eval", "--weight", "w",
                                                           "part-0.tsv"],
                   "started": "2026-12-01T23:59:01Z", "inputs": ["part-0.tsv"], "ranks": 3,
                   "rows": 3000, "weights": {"ctr": {"column": "w", "meaning": "frequency",
                                                     "sum": 7412.5}}}
    with_run = write_json(str(tmp_path / "new.json"), data)
    runs = report.load_runs([with_run, ab_json])
    assert runs[0].provenance == data["run"] and "run" not in runs[0].metrics
    assert runs[1].provenance is None
    page = report.render(runs)
    header = page[page.index("<header>"):page.index("</header>") + 9]
    text = " ".join(" ".join(parse(header).text).split())
    for words in ("9.8.7", "2026-12-01T23:59:01Z", "mpieval eval --weight w part-0.tsv",
                  "3,000 rows, 3 ranks", "weights summing to 7,412.5", "frequency weights",
                  "no provenance"):
        assert words in text, words
    assert "weights summing to 7,412.5" in section_text(page, "summary")


def test_a_run_that_is_not_an_object_is_bad_input(tmp_path, capsys):
    data = simulated_run(14, rows=3000, compare=False)
    data["run"] = [1, 2]
    path = write_json(str(tmp_path / "bad.json"), data)
    status, _, err = run(capsys, "report", path, "-o", str(tmp_path / "page.html"))
    assert status == 2 and "its 'run' is list, not the run's object" in err
    data["run"] = {"kind": "pn", "average_pn": 1.0, "ins_number": 3, "positive_pairs": 2,
                   "negative_pairs": 2}  # an older file's metric named run
    runs = report.load_runs([write_json(str(tmp_path / "older.json"), data)])
    assert runs[0].provenance is None and "run" in runs[0].metrics


def test_the_first_run_is_the_baseline_and_odd_values_are_flagged(tmp_path):
    base = simulated_run(15, rows=4000, compare=False)
    today = json.loads(json.dumps(base))
    today["ctr"].update(auc=base["ctr"]["auc"] + 0.0123, ne=1.015, copc=0.6)
    today["user_ctr"]["tags"]["all"]["wuauc"] = 0.49
    empty = json.loads(json.dumps(base))
    empty["ctr"].update(actual_ctr=0.0, positives=0, auc=None)
    paths = [write_json(str(tmp_path / f"{name}.json"), data)
             for name, data in (("yesterday", base), ("today", today), ("noclick", empty))]
    page = report.render(report.load_runs(paths))
    summary = " ".join(section_text(page, "summary").split())
    change = today["ctr"]["auc"] - base["ctr"]["auc"]
    # the change with its interval: the two runs as independent samples (same widths here)
    (low, high) = base["ctr"]["ci95"]["auc"]
    half = math.hypot((high - low) / 2, (high - low) / 2)
    said = f"Δ {change:+.4g} (95% {change - half:+.3g} to {change + half:+.3g}) vs yesterday"
    assert said in summary, said
    header = page[page.index("<header>"):page.index("</header>") + 9]
    assert "baseline" in " ".join(parse(header).text)
    for flag in ("NE ≥ 1", "COPC outside [0.8, 1.25]", "WUAUC ≤ 0.5", "no clicks in the run"):
        assert flag in summary, flag
    yesterday_line = summary[summary.index("yesterday:"):summary.index("today:")]
    assert "Δ" not in yesterday_line and "⚠" not in yesterday_line  # the baseline's own
    table = " ".join(section_text(page, "m-ctr").split())
    assert said in table and "NE ≥ 1" in table


def test_300_tags_fit_in_a_megabyte_and_12_figures(tmp_path, monkeypatch):
    from mpieval.report import figures

    path = eval_json(tmp_path, "tags300", ab_rows(30_000, 300, seed=4), "--metrics",
                     "auc,wuauc", "--tag", "tag", "--compare", "pred_b")
    data = json.load(open(path))
    assert len(data["wuauc"]["tags"]) == 301
    drawn: list[str] = []
    real_intervals = figures.intervals
    monkeypatch.setattr(figures, "intervals", lambda categories, panels, key: (
        drawn.extend(categories), real_intervals(categories, panels, key))[1])
    page = report.render(report.load_runs([path]))
    assert len(page.encode()) <= 1_000_000
    assert 0 < page.count("<svg") <= 12
    assert 0 < len(drawn) <= 20 and drawn[0] == "all"
    start = page.index('<section id="m-wuauc"')
    assert "<details>" in page[start:]
    listed = re.findall(r'<td data-label="Tag" class=left>([^<]*)</td>', page[start:])
    assert sorted(listed) == sorted(data["wuauc"]["tags"])  # every tag, once
    rows = [data["wuauc"]["tags"][tag]["real_ins_num"] for tag in listed[1:]]
    assert listed[0] == "all"
    drawn_rows = rows[:len(drawn) - 1]
    rest = rows[len(drawn) - 1:]
    assert drawn_rows == sorted(drawn_rows, reverse=True)
    assert rest == sorted(rest, reverse=True)


def test_many_tags_list_the_largest_and_every_significant_one(tmp_path, monkeypatch):
    """Past ``LISTED_TAGS`` tags, a metric's tables list the most rows first up to that
    many (the drawn included), every tag where B differs at q < 0.05 wherever it comes,
    and say how many are left out (a 60,000-tag page would be hundreds of MB)."""
    from mpieval.report import tags as report_tags

    path = eval_json(tmp_path, "tags300", ab_rows(30_000, 300, seed=4), "--metrics",
                     "wuauc", "--tag", "tag", "--compare", "pred_b")
    tags = json.load(open(path))["wuauc"]["tags"]
    monkeypatch.setattr(report_tags, "LISTED_TAGS", 20)
    monkeypatch.setattr(report_tags, "DRAWN_TAGS", 2)  # all and the most significant
    page = report.render(report.load_runs([path]))
    start = page.index('<section id="m-wuauc"')
    opens = page.index("<details>", start)
    cell = r'<td data-label="Tag" class=left>([^<]*)</td>'
    drawn = re.findall(cell, page[start:opens])
    others = re.findall(cell, page[opens:page.index("</details>", opens)])
    by_rows = sorted(tags, key=lambda tag: (tag != "all", -tags[tag]["real_ins_num"], tag))
    significant = {tag for tag, values in tags.items() if any(
        (q := values["compare"].get(f"{field}_diff_q")) is not None and q < 0.05
        for field in ("wuauc", "uauc", "logloss", "copc"))}
    rest = [tag for tag in by_rows if tag not in drawn]
    late = [tag for tag in rest[18:] if tag in significant]
    assert len(drawn) == 2 and late  # (the data: a significant tag past the first 20)
    assert others == rest[:18] + late
    left = len(tags) - len(drawn) - len(others)
    text = " ".join(section_text(page, "m-wuauc").split())
    assert f"{left:,} more tags, none with more rows than these or a difference" in text
    assert "the tables list 20 of the 301, the largest, and every one where B" in text
    monkeypatch.setattr(report_tags, "LISTED_TAGS", 1000)
    page = report.render(report.load_runs([path]))
    assert "more tags, none" not in page and "every tag is in the tables" in page


def test_tables_stack_on_narrow_screens(compared_json):
    """Every table cell names its column (data-label), which the narrow-screen CSS shows
    beside the value when the table stacks; figures scale to the page's width."""
    page = report.render(report.load_runs([compared_json]))
    elements = parse(page)
    for tag, attrs in elements.tags:
        if tag == "table":
            assert "stack" in (attrs.get("class") or "")
        if tag == "td":
            assert attrs.get("data-label"), attrs
    assert "@media (max-width: 700px)" in page and "content: attr(data-label)" in page
    assert "max-width: 100%" in page and "break-inside: avoid" in page


def test_a_model_keeps_its_colour_in_every_figure(tmp_path, ab_json, monkeypatch):
    """The same model is drawn in the same colour in every figure of the page (ctr's
    curves and user_ctr's dots) and in every run, different models in different colours,
    none a direction's; the runs differ in line style or marker."""
    from mpieval.kinds.auc import figures as auc_figures
    from mpieval.report import figures

    seen: list[tuple[str, str]] = []
    seen_series: list[Any] = []

    def spy(name: str) -> None:
        module = figures if name == "intervals" else auc_figures
        real = getattr(module, name)

        def draw(*args: Any, **kwargs: Any) -> str:
            first = args[0] if name != "intervals" else [series for series, _ in args[1][0][1]]
            for item in first:
                series = item[0] if isinstance(item, tuple) else item
                seen.append((series.label, series.color))
                seen_series.append(series)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, draw)

    for name in ("roc", "calibration", "intervals"):
        spy(name)
    yesterday = simulated_run(8, compare=False)
    del yesterday["ctr"]  # ctr has models A and B of ab only; user_ctr yesterday's too
    plain = write_json(str(tmp_path / "yesterday.json"), yesterday)
    report.render(report.load_runs([plain, ab_json]))
    colours = dict(seen)
    assert set(seen) == set(colours.items())  # one colour per label
    assert set(colours) == {"yesterday", "ab: A", "ab: B (pred_b)"}
    # model A is one colour in both runs, B another; neither is a direction's colour
    assert colours["yesterday"] == colours["ab: A"] != colours["ab: B (pred_b)"]
    assert not set(colours.values()) & {figures.BETTER, figures.WORSE}
    styles = {(s.label, s.linestyle, s.marker) for s in seen_series}
    assert len({(style, marker) for _, style, marker in styles}) == 3  # runs told apart


# -- the recorded pages: the corpus renders byte for byte as recorded ---------------------

PAGES = os.path.join(ROOT, "tests", "report_pages")


@functools.cache
def _pages_script() -> Any:
    """scripts/report_pages.py, which makes the recorded pages, as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "report_pages", os.path.join(ROOT, "scripts", "report_pages.py"))
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _recorded_cases() -> dict[str, Any]:
    with open(os.path.join(PAGES, "cases.json")) as cases:
        return json.load(cases)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus's result files unpacked, and scripts/report_pages.py (which renders)."""
    script = _pages_script()
    directory = tmp_path_factory.mktemp("corpus")
    script.unpack(script.CORPUS / "runs", directory)
    return script, directory


@pytest.mark.parametrize("name", sorted(_recorded_cases()))
def test_the_corpus_renders_the_recorded_pages(corpus, name):
    """Each case's page is the recorded one, byte for byte (``scripts/report_pages.py``
    records them anew when a change means to change the page)."""
    import gzip

    import matplotlib

    script, directory = corpus
    with open(os.path.join(PAGES, "matplotlib.txt")) as recorded:
        version = recorded.read().strip()
    if matplotlib.__version__ != version:
        pytest.skip(f"the pages were drawn by matplotlib {version}, this is "
                    f"{matplotlib.__version__}: its SVG bytes differ")
    assert script.CASES == _recorded_cases()
    with gzip.open(os.path.join(PAGES, "pages", f"{name}.html.gz"), "rt",
                   encoding="utf-8", newline="") as page:
        expected = page.read()
    rendered = script.render(script.CASES[name], directory)
    if rendered != expected:
        at = next((i for i, (a, b) in enumerate(zip(rendered, expected, strict=False))
                   if a != b), min(len(rendered), len(expected)))
        pytest.fail(f"{name}: the page differs from the recorded one at character {at}: "
                    f"{rendered[max(at - 80, 0):at + 80]!r} against "
                    f"{expected[max(at - 80, 0):at + 80]!r}")


# -- to a store: --report and -o take a URI, as --json does -------------------------------


@pytest.fixture(scope="module")
def store():
    """A moto S3 server (as tests/test_remote.py starts it) with an empty bucket, and the
    environment that points at it."""
    pytest.importorskip("moto", reason="the S3 tests need moto[server] (the test extra)")
    import pyarrow.fs as pafs
    from test_remote import BUCKET, moto_server, s3_environment

    with moto_server() as port, pytest.MonkeyPatch.context() as patch:
        for name, value in s3_environment(port).items():
            patch.setenv(name, value)
        bucket = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                                   allow_bucket_creation=True)
        bucket.create_dir(BUCKET)
        yield bucket, BUCKET


def test_the_report_is_written_to_a_store(store, tmp_path, capsys):
    from test_cli import rows, write

    bucket, name = store
    data = write(str(tmp_path / "part.tsv"), rows(2000))
    uri = f"s3://{name}/pages/run.html"
    status, _, err = run(capsys, "eval", "--metrics", "auc,wuauc", "--tag", "tag", data,
                         "--json", f"s3://{name}/pages/run.json", "--report", uri)
    assert status == 0, err
    assert f"mpieval: report written to {uri}\n" in err
    page = bucket.open_input_file(f"{name}/pages/run.html").read().decode()
    assert 'id="m-auc"' in page and 'id="m-wuauc"' in page
    parse(page)
    # `mpieval report -o URI`: the page of a local file, the same bytes as rendered here
    local = str(tmp_path / "run.json")
    with open(local, "wb") as out:
        out.write(bucket.open_input_file(f"{name}/pages/run.json").read())
    status, _, err = run(capsys, "report", local, "-o", f"s3://{name}/pages/again.html")
    assert status == 0, err
    assert bucket.open_input_file(f"{name}/pages/again.html").read().decode() == \
        report.render(report.load_runs([local]))


def test_a_report_to_a_missing_bucket_is_an_error_before_reading(store, tmp_path, capsys,
                                                                  ab_json):
    from test_cli import rows, write

    data = write(str(tmp_path / "part.tsv"), rows(500))
    status, out, err = run(capsys, "eval", data, "--report", "s3://no-such-bucket/run.html")
    assert status == 2 and out == ""
    assert "--report: cannot write s3://no-such-bucket/run.html: no bucket" in err, err
    status, out, err = run(capsys, "report", ab_json, "-o", "s3://no-such-bucket/page.html")
    assert status == 2 and "-o: cannot write s3://no-such-bucket/page.html: no bucket" in err


# -- the shared presentation modules know no kind ------------------------------------------

SHARED = sorted(os.path.join(ROOT, "mpieval", "report", name)
                for name in os.listdir(os.path.join(ROOT, "mpieval", "report"))
                if name.endswith(".py"))


def _declared_words() -> tuple[set[str], set[str]]:
    """Every registered kind's name, and the fields its declaration and section name."""
    names, fields = set(), set()
    for name, section in report.sections().items():
        kind = section.declaration
        names.add(name)
        fields |= {*kind.required, *(kind.tag_required or ()), *kind.counts, *section.curves,
                   *(field for flag in section.flags for field in flag.fields)}
        fields |= {section.rows} if section.rows else set()
    return names, fields


def _run_fields() -> set[str]:
    """The fields of the JSON's ``run`` object (the header reads them: not a kind's)."""
    from mpieval import pipeline

    return set(pipeline.run_record(pipeline.invocation([], []), 1, 0, {}))


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_a_shared_presentation_module_names_no_kind_and_no_kinds_field(path):
    """No kind's name in the text of a module of mpieval/report (any case, as a word), no
    string in its code that is a kind's declared field (how a block's field is read), and
    no import of a kind: the entry (``__init__``) alone imports the registry, the
    declarations, to hand their sections to the page."""
    import ast

    names, fields = _declared_words()
    assert names and "rows" in fields  # the registry and its sections were read
    with open(path, encoding="utf-8") as source:
        text = source.read()
    for name in names:
        assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I), name
    tree = ast.parse(text)
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not strings & (fields - _run_fields()), strings & fields
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names]
    kinds = [module for module in imported if module.startswith("mpieval.kinds")]
    assert kinds == (["mpieval.kinds"] if path.endswith("__init__.py") else []), kinds
    assert "importlib" not in imported


def test_a_kinds_field_in_a_shared_module_would_be_found(tmp_path):
    """The check above finds a kind's field read by a shared module."""
    import ast

    _, fields = _declared_words()
    tree = ast.parse('value = block.get("valid_user_count")')
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert strings & fields == {"valid_user_count"}


# -- the verdict over every value --------------------------------------------------------


def _verdict_run(compared_json: str, **changes: Any) -> dict[str, Any]:
    """The compared run with its auc compare block given paired differences of COPC, ECE,
    LogLoss and NE: ``changes`` maps a field to (B's value, diff, low, high, p)."""
    data = json.load(open(compared_json))
    compare = data["auc"]["compare"]
    for field, (value, diff, low, high, p) in changes.items():
        compare[field] = value
        compare[f"{field}_diff"], compare[f"{field}_diff_ci95"] = diff, [low, high]
        compare[f"{field}_diff_p"] = p
    return data


def test_the_verdict_names_a_worse_calibration_beside_a_better_ranking(compared_json,
                                                                         tmp_path):
    """B ranks better but over-predicts (COPC 0.99 -> 0.76): the overall line says both,
    the worse calibration by how far each model's mean pred is from the actual rate; the
    calibration and loss lines give each value's paired difference and direction (lower
    is better for ECE and LogLoss, closest to 1 for COPC)."""
    data = json.load(open(compared_json))
    data["auc"]["copc"] = 0.99
    path = write_json(str(tmp_path / "over.json"), data)
    data = _verdict_run(path, copc=(0.76, -0.23, -0.25, -0.21, 1e-6),
                        ece=(0.061, 0.057, 0.05, 0.064, 1e-6),
                        logloss=(0.43, 0.015, 0.01, 0.02, 1e-5),
                        ne=(0.99, 0.001, -0.002, 0.004, 0.5))
    data["auc"]["copc"] = 0.99
    page = report.render(report.load_runs([write_json(str(tmp_path / "v.json"), data)]))
    text = " ".join(section_text(page, "summary").split())
    assert (f"B {MINUS} A: B ranks better, but is worse calibrated (over-predicts: 1.32x "
            "the actual rate, A 1.01x) and has a higher loss") in text, text
    assert (f"B {MINUS} A, calibration: COPC -0.2300 (95% -0.2500 to -0.2100, "
            "p < 0.0001) B worse") in text
    assert "ECE +0.0570 (95% +0.0500 to +0.0640, p < 0.0001) B worse" in text
    assert f"B {MINUS} A, loss: LogLoss +0.0150" in text and "B worse; NE +0.0010" in text
    assert "NE +0.0010 (95% -0.0020 to +0.0040, p = 0.50) no evidence of a difference" in text
    # B that is closer to 1 in COPC is better calibrated, whichever way it moved
    better = _verdict_run(path, copc=(1.0, 0.01, 0.005, 0.015, 0.001))
    better["auc"]["copc"] = 0.99
    page = report.render(report.load_runs([write_json(str(tmp_path / "b.json"), better)]))
    text = " ".join(section_text(page, "summary").split())
    assert f"B {MINUS} A: B ranks better, is better calibrated and has a lower loss" in text, text


def test_the_summary_names_the_tags_where_b_differs_worst_first(compared_json, tmp_path):
    """The tags where B is significantly worse (q < 0.05), largest effect first, then those
    where it is better, each by name with its effect and q; a tag whose q is 0.2 is not
    named even though its own 95% interval misses 0."""
    data = json.load(open(compared_json))
    tags = [t for t in data["wuauc"]["tags"] if t != "all"
            and data["wuauc"]["tags"][t].get("compare", {}).get("wuauc_diff_q") is not None]
    assert len(tags) >= 3
    effects = {tags[0]: (-0.012, 0.01), tags[1]: (-0.035, 0.003), tags[2]: (0.02, 0.2)}
    for tag in tags:  # no other difference of any tag counts (the run's own are real)
        for field in ("wuauc", "uauc", "copc", "logloss"):
            if f"{field}_diff_q" in data["wuauc"]["tags"][tag]["compare"]:
                data["wuauc"]["tags"][tag]["compare"][f"{field}_diff_q"] = 0.9
    for tag, (diff, q) in effects.items():
        compare = data["wuauc"]["tags"][tag]["compare"]
        compare["wuauc_diff"], compare["wuauc_diff_ci95"] = diff, [diff - 0.005, diff + 0.005]
        compare["wuauc_diff_q"] = q
    page = report.render(report.load_runs([write_json(str(tmp_path / "t.json"), data)]))
    text = " ".join(section_text(page, "summary").split())
    line = (f"B {MINUS} A: B worse in {tags[1]} (WUAUC -0.0350, q = 0.003), {tags[0]} "
            "(WUAUC -0.0120, q = 0.01)")
    assert line in text, text
    assert f"in {tags[2]} (" not in text


def test_a_merged_runs_header_names_the_files_each_saved_run_read(tmp_path, capsys):
    """`mpieval merge s1 s2`'s page says which dumps the merged result covers: each saved
    run's state and the files it read (run.merged), not only "s1 s2"."""
    from test_cli import write

    rng = np.random.default_rng(4)
    paths = []
    for k in range(2):
        data = {"pred": np.round(rng.random(500), 6), "label": rng.integers(0, 2, 500)}
        paths.append(write(str(tmp_path / f"day{k + 1}.tsv"), data))
    for k, path in enumerate(paths):
        assert run(capsys, "eval", "--metrics", "auc", path, "--save-state",
                   str(tmp_path / f"s{k + 1}"))[0] == 0
    merged = str(tmp_path / "m.json")
    assert run(capsys, "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--json",
               merged)[0] == 0
    page = report.render(report.load_runs([merged]))
    header = " ".join(parse(page[page.index("<header>"):page.index("</header>") + 9]).text)
    assert "merged from:" in header
    for k, path in enumerate(paths):
        assert f"s{k + 1}" in header and path in header, (path, header)


def test_a_model_that_only_over_predicts_is_named_worse_calibrated(tmp_path):
    """B = 1.3 x A (the same ranking, over-predicting) from a real run: the summary's
    verdict says B is worse calibrated and has a higher loss, and finds no evidence of a
    ranking difference."""
    data = ab_rows(20_000, 3)
    data["pred_b"] = np.minimum(np.round(data["pred"] * 1.3, 6), 1.0)
    path = eval_json(tmp_path, "over", data, "--metrics", "auc", "--compare", "pred_b")
    page = report.render(report.load_runs([path]))
    text = " ".join(section_text(page, "summary").split())
    assert f"B {MINUS} A: B is worse calibrated (over-predicts:" in text, text
    assert "has a higher loss" in text
    assert "no evidence of a difference in ranking" in text


def test_hashed_svg_ids_are_numbered_by_their_order():
    """A clip path's id is matplotlib's hash of its rectangle's floats to the last bit: two
    machines whose layouts differ in the last bit wrote different ids for the same drawing.
    Numbered by order instead, the same drawing has the same bytes; distinct ids stay
    distinct and every reference follows its id."""
    from mpieval.report.figures import _numbered_ids

    def drawing(first: str, second: str) -> str:
        return (f'<path clip-path="url(#{first})"/><use xlink:href="#m0123456789"/>'
                f'<path clip-path="url(#{second})"/><path clip-path="url(#{first})"/>'
                f'<clipPath id="{first}"/><clipPath id="{second}"/>'
                f'<path id="m0123456789"/><text>p0123456789ab</text>')

    one = _numbered_ids(drawing("p98874c7b56", "p42d82cf33c"))
    assert one == _numbered_ids(drawing("p7fb7665de0", "p42d82cf33c"))
    assert one == ('<path clip-path="url(#p0)"/><use xlink:href="#m1"/>'
                   '<path clip-path="url(#p2)"/><path clip-path="url(#p0)"/>'
                   '<clipPath id="p0"/><clipPath id="p2"/>'
                   '<path id="m1"/><text>p0123456789ab</text>')
