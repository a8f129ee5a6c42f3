"""The report's figures (:mod:`mpieval.report.figures` and the auc kind's,
:mod:`mpieval.kinds.auc.figures`) drawn from real results: valid SVG whose
text stays text, an accessible name and description written from the data, the same
bytes for the same data, ids unique per figure, colours of at least 3:1 that stay apart
with colour-vision deficiencies, and axes fitted to what is drawn."""

from __future__ import annotations

import itertools
import math
import re
import warnings
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from mpieval import AucMetric, UndefinedMetricWarning
from mpieval.kinds.auc import figures as auc_figures
from mpieval.kinds.auc.kernels import CALIBRATION_GROUPS, merge_calibration
from mpieval.report import figures
from mpieval.report.figures import Difference, Estimate, Series

SVG = "{http://www.w3.org/2000/svg}"
A = Series("A", figures.PALETTE[0])
B = Series("B (pred_b)", figures.PALETTE[1], dashed=True)
PHONE = 396  # px a figure gets on a 420 px wide screen (the page's 12 px padding)
LAPTOP = 600  # px a figure gets at 1280 px, two side by side


def synthetic(n: int, seed: int, ctr: float = 0.03, spread: float = 1.2,
              bias: float = 0.35) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred_a, pred_b, label)``: clicks drawn from a true CTR around ``ctr``; A
    over-predicts by ``bias`` on the logit scale, B is closer to the truth."""
    rng = np.random.default_rng(seed)
    score = rng.standard_normal(n)
    base = math.log(ctr / (1 - ctr))
    truth = 1 / (1 + np.exp(-(base + spread * score)))
    label = (rng.random(n) < truth).astype(np.float64)
    pred_a = 1 / (1 + np.exp(-(base + bias + spread * score + 0.6 * rng.standard_normal(n))))
    pred_b = 1 / (1 + np.exp(-(base + spread * score + 0.4 * rng.standard_normal(n))))
    return pred_a, pred_b, label


def auc_result(pred_a: np.ndarray, pred_b: np.ndarray, label: np.ndarray) -> dict[str, Any]:
    metric = AucMetric(compare="pred_b")
    metric.update(pred_a, label, compare=pred_b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return synthetic(60_000, 1)


@pytest.fixture(scope="module")
def result(data) -> dict[str, Any]:
    return auc_result(*data)


@pytest.fixture(scope="module")
def drawn(result) -> dict[str, str]:
    """Every figure of one A/B auc result, by name."""
    compare = result["compare"]
    return {
        "roc": auc_figures.roc([(A, result["roc_curve"]), (B, compare["roc_curve"])], "t-roc"),
        "calibration": auc_figures.calibration(
            [(A, result["calibration_curve"]), (B, compare["calibration_curve"])], "t-cal"),
        "precision_recall": auc_figures.precision_recall(
            [(A, result["pr_curve"]), (B, compare["pr_curve"])],
            "t-pr", [result["actual_ctr"], result["actual_ctr"]]),  # the same labels
        "score_distributions": auc_figures.score_distributions(
            [(A, result["score_histogram"]), (B, compare["score_histogram"])], "t-scores"),
        "differences": figures.differences(differences_of(result), "B - A", "t-diff"),
        "intervals": figures.intervals(
            ["all", "video"],
            [("WUAUC: per-user AUC", [(A, [Estimate(0.71, 0.70, 0.72), Estimate(0.69)]),
                                      (B, [Estimate(0.72, 0.71, 0.73), Estimate(None)])])],
            "t-dots"),
    }


def differences_of(result: dict[str, Any]) -> list[Difference]:
    compare = result["compare"]
    rows = []
    for field, higher_is_better in (("auc", True), ("logloss", False)):
        if compare.get(f"{field}_diff") is None:
            continue
        low, high = compare[f"{field}_diff_ci95"]
        rows.append(Difference(field.upper(), Estimate(compare[f"{field}_diff"], low, high),
                               compare.get(f"{field}_diff_p"), None, higher_is_better,
                               emphasis=field == "auc"))
    assert rows
    return rows


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def texts(root: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in root.iter(f"{SVG}text")]


def desc(root: ET.Element) -> str:
    found = root.find(f"{SVG}desc")
    assert found is not None and found.text
    return found.text


def tick_values(root: ET.Element, axis: str, panel: int | None = None) -> list[float]:
    """The numbers written at the ticks of ``axis`` ("x" or "y") of every panel, or of
    panel number ``panel`` (from 1, in the order they were made)."""
    if panel is not None:
        root = next(g for g in root.iter(f"{SVG}g") if g.get("id", "").endswith(f"-axes_{panel}"))
    values = []
    for group in root.iter(f"{SVG}g"):
        if re.search(rf"-{axis}tick_\d+$", group.get("id", "")):
            for text in texts(group):
                if text.strip():
                    values.append(float(text))
    return values


def view_box(root: ET.Element) -> list[float]:
    return [float(v) for v in root.get("viewBox", "").split()]


# -- every figure ----------------------------------------------------------------------


def test_each_figure_is_an_accessible_svg_whose_text_is_text(drawn):
    for name, svg in drawn.items():
        root = parse(svg)  # valid XML
        assert root.tag == f"{SVG}svg", name
        assert root.get("width") is None and root.get("height") is None, name  # CSS sizes it
        assert len(view_box(root)) == 4, name
        assert root.get("role") == "img", name
        title, description = root[0], root[1]
        assert (title.tag, description.tag) == (f"{SVG}title", f"{SVG}desc"), name
        assert root.get("aria-labelledby") == f"{title.get('id')} {description.get('id')}"
        assert title.text and len(description.text or "") > 40, name
        words = texts(root)
        assert len(words) >= 8, name  # title, labels and ticks, as text
        assert "DejaVuSans-" not in svg, name  # no glyph outlines
        for text in root.iter(f"{SVG}text"):
            style = text.get("style", "")
            assert "sans-serif" in style and "DejaVu Sans" in style, (name, style)
        assert "<!--" not in svg and "<metadata" not in svg and "<?xml" not in svg, name


def test_text_is_legible_on_a_phone_and_a_laptop(drawn):
    for name, svg in drawn.items():
        root = parse(svg)
        sizes = [float(m) for m in re.findall(r"font-size: ([0-9.]+)px", svg)]
        width = view_box(root)[2]
        assert min(sizes) * LAPTOP / width >= 9.0, (name, min(sizes), width)
        # on a phone the figure is drawn no narrower than --phone: text of 11 px at least
        phone = float(re.search(r"--phone: (\d+)px", root.get("style", "")).group(1))
        assert min(sizes) * max(phone, PHONE) / width >= 11.0 - 1e-9, (name, phone)
        assert phone <= 1.5 * PHONE, (name, phone)  # a short scroll sideways, at most


def test_the_same_data_gives_the_same_bytes_and_keys_make_ids_unique(result):
    curve = [(A, result["calibration_curve"])]
    first = auc_figures.calibration(curve, "one")
    assert first == auc_figures.calibration(curve, "one")
    second = auc_figures.calibration(curve, "two")
    ids = [[e.get("id") for e in parse(svg).iter() if e.get("id")] for svg in (first, second)]
    assert ids[0] and not set(ids[0]) & set(ids[1])
    for svg, own in zip((first, second), ids, strict=True):
        assert len(own) == len(set(own))
        targets = re.findall(r'href="#([^"]+)"', svg) + re.findall(r"url\(#([^)]+)\)", svg)
        assert targets and set(targets) <= set(own)  # every reference stays inside


# -- colours ---------------------------------------------------------------------------


def linear_rgb(colour: str) -> np.ndarray:
    channels = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)


def contrast_on_white(colour: str) -> float:
    """WCAG 2's contrast ratio (L1 + 0.05) / (L2 + 0.05) against white (luminance 1)."""
    luminance = float(np.array([0.2126, 0.7152, 0.0722]) @ linear_rgb(colour))
    return 1.05 / (luminance + 0.05)


def test_contrast_of_known_colours():
    assert contrast_on_white("#000000") == pytest.approx(21.0)
    assert contrast_on_white("#767676") == pytest.approx(4.54, abs=0.01)  # WCAG's grey
    assert contrast_on_white("#E69F00") < 3.0  # the orange the page used to draw B in


def test_every_data_colour_has_3_to_1_on_white():
    for colour in (*figures.PALETTE, figures.BETTER, figures.WORSE, figures.NEUTRAL):
        assert contrast_on_white(colour) >= 3.0, colour


# Machado, Oliveira & Fernandes (2009), severity 1: linear RGB of what a dichromat sees.
DEFICIENCIES = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
    "none": np.eye(3).tolist(),
}


def lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a linear RGB colour."""
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ np.clip(rgb, 0, 1)
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
def test_colours_stay_apart_with_colour_vision_deficiencies(deficiency):
    """Every two model colours, and the three direction colours, differ by a CIE76 colour
    difference of at least 10 as seen with each dichromacy (a clear difference)."""
    matrix = np.array(DEFICIENCIES[deficiency])
    for group in (figures.PALETTE, (figures.BETTER, figures.WORSE, figures.NEUTRAL)):
        seen = [lab(matrix @ linear_rgb(colour)) for colour in group]
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                assert np.linalg.norm(seen[i] - seen[j]) >= 10, (group[i], group[j])


# -- ROC -------------------------------------------------------------------------------


def test_roc_description_gives_each_models_auc(drawn, result):
    text = desc(parse(drawn["roc"]))
    found = [float(v) for v in re.findall(r"AUC (0\.\d+)", text)]
    assert len(found) == 2
    assert found[0] == pytest.approx(result["auc"], abs=0.002)
    assert found[1] == pytest.approx(result["compare"]["auc"], abs=0.002)


# -- calibration -----------------------------------------------------------------------


def test_wilson_interval_has_a_width_at_none_and_all_clicks():
    low, high = auc_figures.wilson(0.0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)  # the textbook 0 of 10
    low, high = auc_figures.wilson(1.0, 10)
    assert high == 1.0 and low == pytest.approx(1 - 0.2775, abs=1e-4)  # the same, mirrored
    low, high = auc_figures.wilson(0.5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    low, high = auc_figures.wilson(0.03, 5000)  # near Wald's when there are many rows
    wald = 1.959964 * math.sqrt(0.03 * 0.97 / 5000)
    assert high - low == pytest.approx(2 * wald, rel=0.02)


def test_merged_bins_hold_about_equal_rows(result):
    bins = merge_calibration(result["calibration_curve"])
    rows = [r for _, _, r in bins]
    total = sum(r for _, _, r in result["calibration_curve"])
    assert 15 <= len(bins) <= CALIBRATION_GROUPS
    assert sum(rows) == pytest.approx(total)
    assert max(rows) <= 2 * total / CALIBRATION_GROUPS
    clicks = sum(a * r for _, a, r in result["calibration_curve"])
    assert sum(a * r for _, a, r in bins) == pytest.approx(clicks)


def test_calibration_shows_each_models_ece(drawn, result):
    text = desc(parse(drawn["calibration"]))
    for block in (result, result["compare"]):
        assert f"ECE {block['ece']:.4f}" in text


def test_calibration_axes_are_logarithmic_and_fitted_when_preds_span_decades(drawn, result):
    root = parse(drawn["calibration"])
    assert "log scales" in desc(root)
    values = [v for block in (result, result["compare"])
              for p, a, _ in merge_calibration(block["calibration_curve"]) for v in (p, a)]
    low, high = min(values), max(values)
    assert high / low > 10
    view = auc_figures.calibration_view([result["calibration_curve"],
                                     result["compare"]["calibration_curve"]])
    assert view.log and view.low <= low and view.high >= high  # every bin drawn
    assert view.low >= low / 10 and view.high <= min(10 * high, 1.0)  # and no 10x more
    for axis, panel in (("x", 2), ("y", 1)):  # the x axis is labelled under the rows panel
        ticks = tick_values(root, axis, panel)
        positive = [t for t in ticks if t > 0]
        assert positive and min(positive) >= low / 10 and max(ticks) <= 10 * high, (axis, ticks)


def test_calibration_axes_are_linear_and_fitted_to_a_narrow_range():
    """Preds between about 0.2 and 0.5: a linear axis over where the rows are, not 0 to 1."""
    rng = np.random.default_rng(5)
    pred = 0.2 + 0.3 * rng.random(40_000)
    label = (rng.random(40_000) < pred * 0.9).astype(np.float64)
    block = auc_result(pred, pred, label)
    root = parse(auc_figures.calibration([(A, block["calibration_curve"])], "narrow"))
    assert "linear scales" in desc(root)
    view = auc_figures.calibration_view([block["calibration_curve"]])
    assert not view.log
    values = [v for p, a, _ in merge_calibration(block["calibration_curve"]) for v in (p, a)]
    assert view.low <= min(values) and view.high >= max(values)
    assert view.high - view.low <= 1.5 * (max(values) - min(values))
    assert view.low > 0.1
    for axis, panel in (("x", 2), ("y", 1)):
        ticks = tick_values(root, axis, panel)
        assert min(ticks) >= view.low and max(ticks) <= view.high, (axis, ticks)


def test_calibration_of_bins_without_clicks_draws_on_both_scales():
    points = [[0.001, 0.0, 2000.0], [0.01, 0.0, 500.0], [0.05, 0.1, 100.0]]
    for curve in (points, [[0.3, 0.0, 10.0], [0.4, 1.0, 10.0]]):
        root = parse(auc_figures.calibration([(A, curve)], "zeros"))
        assert "95%" in desc(root)


# -- precision-recall and scores by class ----------------------------------------------


def test_precision_recall_draws_the_no_skill_line_once_for_a_shared_base_rate(result):
    curve_a, curve_b = result["pr_curve"], result["compare"]["pr_curve"]
    ctr = result["actual_ctr"]
    root = parse(auc_figures.precision_recall([(A, curve_a), (B, curve_b)], "pr", [ctr, ctr]))
    legend = [t for t in texts(root) if "random ranking" in t]
    assert legend == [f"random ranking (actual CTR {ctr:.3g})"]
    text = desc(root)
    at_half = next(p for r, p in curve_a if r >= 0.5)
    assert f"A precision {at_half:.3g} at recall 0.5 (random ranking {ctr:.3g})" in text
    unknown = parse(auc_figures.precision_recall([(A, curve_a)], "pr2", [None]))
    assert not [t for t in texts(unknown) if "random ranking" in t]


def median_bin(histogram: list[list[float]], column: int) -> tuple[float, float]:
    weights = np.array([b[column] for b in histogram])
    index = int(np.searchsorted(np.cumsum(weights), weights.sum() / 2))
    return histogram[index][0], histogram[index][1]


def test_score_distributions_describe_where_each_class_lies(data, result):
    pred_a, _, _ = data
    histogram = result["score_histogram"]
    root = parse(auc_figures.score_distributions([(A, histogram)], "scores"))
    text = desc(root)
    for column, what in ((3, "clicks"), (2, "non-clicks")):
        low, high = median_bin(histogram, column)
        assert f"A: median pred of {what} in {low:.3g} to {high:.3g}" in text
    assert {"Clicks", "Non-clicks", "Predicted CTR (logit scale)"} <= set(texts(root))
    ticks = tick_values(root, "x")  # labelled with preds, not logits
    assert ticks and all(0 < t < 1 for t in ticks)
    assert min(ticks) < float(np.median(pred_a)) < max(ticks)


def test_score_distributions_without_clicks_say_so():
    histogram = [[0.0, 0.01, 50.0, 0.0], [0.01, 0.02, 80.0, 0.0], [0.02, 1.0, 20.0, 0.0]]
    text = desc(parse(auc_figures.score_distributions([(A, histogram)], "none")))
    assert "A: no clicks" in text and "A: median pred of non-clicks in 0.01 to 0.02" in text


# -- differences -----------------------------------------------------------------------


def test_significance_and_direction_of_a_difference():
    better = Difference("AUC", Estimate(0.004, 0.002, 0.006), 0.0006)
    assert better.significant and better.direction == "better"
    worse = Difference("LogLoss", Estimate(0.004, 0.002, 0.006), 0.0006, higher_is_better=False)
    assert worse.significant and worse.direction == "worse"
    unclear = Difference("AUC", Estimate(0.004, -0.001, 0.009), 0.12)
    assert not unclear.significant and unclear.direction == "no evidence"
    # a tag's difference: its q-value decides, over the tags
    assert not Difference("AUC · video", Estimate(0.004, 0.002, 0.006), 0.01, 0.2).significant
    assert Difference("AUC · video", Estimate(0.004, 0.002, 0.006), 0.001, 0.01).significant


def markers(svg: str) -> list[tuple[str, str]]:
    """The (fill, stroke) of each row's marker in the forest plot's axes (not its legend),
    from the top: of the three filled symbols on a row (two caps and the marker), the one
    in the middle."""
    axes = next(g for g in parse(svg).iter(f"{SVG}g") if g.get("id", "").endswith("-axes_1"))
    rows: dict[float, list[tuple[float, str, str]]] = {}
    for use in axes.iter(f"{SVG}use"):
        style = dict(part.split(": ") for part in use.get("style", "").split("; "))
        if "fill" in style:
            rows.setdefault(float(use.get("y", "nan")), []).append(
                (float(use.get("x", "nan")), style["fill"].lower(),
                 style.get("stroke", "").lower()))
    found = []
    for y in sorted(rows):
        assert len(rows[y]) == 3, rows[y]
        _, fill, stroke = sorted(rows[y])[1]
        found.append((fill, stroke))
    return found


def test_forest_plot_colours_direction_and_fills_significant_markers():
    rows = [Difference("AUC", Estimate(0.004, 0.002, 0.006), 0.0006, emphasis=True),
            Difference("LogLoss", Estimate(0.003, 0.001, 0.005), 0.001, higher_is_better=False),
            Difference("COPC", Estimate(0.01, -0.02, 0.04), 0.5)]
    svg = figures.differences(rows, "B - A", "forest")
    better, worse, neutral = (c.lower() for c in (figures.BETTER, figures.WORSE,
                                                   figures.NEUTRAL))
    assert markers(svg) == [(better, better), (worse, worse), ("#ffffff", neutral)]
    words = texts(parse(svg))
    assert "B better (significant)" in words and "B worse (significant)" in words
    assert "no evidence of a difference" in words
    text = desc(parse(svg))
    assert "1 significantly better, 1 significantly worse" in text
    assert "AUC +0.0040 (95% +0.0020 to +0.0060), p = 0.0006, better" in text


def test_forest_plot_axis_is_fitted_to_the_intervals():
    """An interval of width 0.004 around +0.004 is drawn on an axis of about 0 to 0.006,
    not -1 to 1."""
    svg = figures.differences([Difference("AUC", Estimate(0.004, 0.002, 0.006), 0.0006)],
                              "B - A", "fitted")
    ticks = tick_values(parse(svg), "x")
    assert ticks and min(ticks) >= -0.001 and max(ticks) <= 0.0075
    assert 0.0 in ticks and max(ticks) >= 0.006 - 1e-12
    wide = figures.differences([Difference("COPC", Estimate(-0.3, -0.5, -0.1), 0.01)],
                               "B - A", "wide")
    ticks = tick_values(parse(wide), "x")
    assert -0.7 <= min(ticks) <= -0.3 and max(ticks) >= 0.0


def test_forest_plot_grows_with_its_rows_and_keeps_20_readable():
    def height(count: int) -> float:
        rows = [Difference(f"AUC · tag {i}", Estimate(0.001 * i, 0.001 * i - 0.002,
                                                      0.001 * i + 0.002), 0.1, 0.3)
                for i in range(count)]
        return view_box(parse(figures.differences(rows, "B - A", f"rows{count}")))[3]

    two, twenty = height(2), height(20)
    per_row = (twenty - two) / 18
    assert per_row >= 1.8 * 8.0  # points per row: at least 1.8 lines of 8 pt text
    assert twenty > 3 * two


def test_a_figure_scales_down_with_the_page_and_up_by_a_quarter_at_most(drawn):
    """No fixed size (the viewBox keeps the proportions), a max-width of the page's width
    or 1.25 times the drawn size (72 points an inch, 96 px an inch), whichever is less."""
    for name, svg in drawn.items():
        root = parse(svg)
        width = view_box(root)[2]
        found = re.fullmatch(r"max-width: min\(100%, (\d+)px\); --phone: \d+px",
                             root.get("style", ""))
        assert found, (name, root.get("style"))
        assert int(found.group(1)) == pytest.approx(width * 96 / 72 * 1.25, abs=1), name


def test_long_axis_labels_are_wrapped_to_their_panel():
    long = "WUAUC: per-user AUC weighted by the user's rows (0.5 = random)"
    panels = [(long, [(A, [Estimate(0.6, 0.55, 0.65)])]),
              ("UAUC: mean of per-user AUC (0.5 = random)", [(A, [Estimate(0.6, 0.55, 0.65)])])]
    words = texts(parse(figures.intervals(["all"], panels, "wrapped")))
    lines = [w for w in words if w != "all" and not re.fullmatch(r"[-+0-9.]+", w)]
    assert " ".join(lines) == f"{long} {panels[1][0]}"  # every word, in order
    assert len(lines) >= 4 and all(len(line) <= 36 for line in lines)


def test_empty_inputs_draw_valid_figures():
    """A model with no curve (one class only), no rows, or no differences: still an SVG
    with its title and description, no error."""
    for svg in (auc_figures.roc([(A, [])], "e1"), auc_figures.calibration([(A, [])], "e2"),
                auc_figures.precision_recall([(A, [])], "e3", [None]),
                auc_figures.score_distributions([(A, [])], "e4"),
                figures.differences([Difference("AUC", Estimate(0.01))], "B - A", "e5")):
        root = parse(svg)
        assert root.find(f"{SVG}title") is not None and desc(root)


@pytest.mark.parametrize("low, high", [(-0.03, 0.03), (-0.025, 0.06), (0.0012, 0.0061),
                                       (-0.5, -0.1), (-1.2e-5, 3e-5), (-0.012, 0.055),
                                       (-2.0, 7.0), (0.0, 0.25)])
def test_every_tick_label_reads_back_as_the_tick_it_labels(low, high):
    """Ticks at -0.025 and +0.025 read -0.025 and +0.025, not -0.03 and +0.02: each label
    of the forest plot's x axis, read as a number, is its tick's position."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.use("Agg")
    ax = Figure().add_subplot()
    figures._fit_difference_axis(ax, [low, high, 0.0])
    ticks = ax.get_xticks()
    labels = [ax.xaxis.get_major_formatter()(t, i) for i, t in enumerate(ticks)]
    assert len(ticks) >= 3
    for tick, label in zip(ticks, labels, strict=True):
        written = float(label.replace("\u2212", "-"))
        assert written == pytest.approx(tick, abs=1e-12 + 1e-9 * abs(tick))
    # and in the drawn SVG, the same labels
    rows = [Difference("AUC", Estimate((low + high) / 2, low, high), 0.01)]
    written = tick_values(parse(figures.differences(rows, "B - A", "ticks")), "x")
    assert written and all(any(abs(w - t) <= 1e-9 + 1e-9 * abs(t) for t in ticks)
                           for w in written)


def test_a_forest_plots_bars_miss_zero_exactly_when_their_row_is_significant():
    """With a q-value, the bar drawn is the interval adjusted over the tags: a tag whose
    95% interval misses 0 but whose q-value is 0.2 is drawn with a bar that holds 0 (grey,
    no evidence); one with q = 0.01 with a bar that misses 0. Without a q-value, the 95%
    interval is drawn as it is."""
    from mpieval.kernels.stats import t_two_sided_p, t_value

    rng = np.random.default_rng(5)
    for _ in range(2000):
        df = float(rng.choice([3, 9, 30, 1000]))
        value, stderr = rng.normal(0, 1), rng.uniform(0.05, 2)
        p = t_two_sided_p(abs(value) / stderr, df)
        half = t_value(0.95, df) * stderr
        q = min(1.0, p * rng.uniform(1, 40))
        row = Difference("tag", Estimate(value, value - half, value + half), p, q)
        assert row.drawn.excludes_zero == row.significant == (q < 0.05)
        assert row.drawn.low <= row.estimate.low and row.drawn.high >= row.estimate.high
        plain = Difference("all", Estimate(value, value - half, value + half), p)
        assert plain.drawn == plain.estimate
        assert plain.significant == plain.estimate.excludes_zero
    search = Difference("search", Estimate(0.012, 0.0019, 0.022), 0.02, 0.2)
    assert search.estimate.excludes_zero and not search.drawn.excludes_zero
    assert search.direction == "no evidence"


def test_precision_recall_cuts_a_spike_at_recall_0_and_says_so():
    """The few rows ranked first (precision 1 at recall 0.001) no longer squeeze a curve
    that stays below 0.45 into the lower half: the y axis ends a fifth above it and the
    cut is written under the axis and in the description."""
    points = [[0.0, 1.0], [0.001, 1.0], [0.01, 0.9]] + [[r / 100, 0.45 - 0.3 * r / 100]
                                                     for r in range(2, 101)]
    svg = auc_figures.precision_recall([(A, points)], "pr-cut", [0.15])
    ticks = tick_values(parse(svg), "y")
    assert max(ticks) <= 0.6
    assert "axis cut: the first 2% of recall reaches precision 1.00" in desc(parse(svg))
    assert any("axis cut" in t for t in texts(parse(svg)))
    whole = auc_figures.precision_recall([(A, [[r / 100, 0.45] for r in range(101)])],
                                         "pr-whole", [0.15])
    assert max(tick_values(parse(whole), "y")) >= 1.0 and "cut" not in desc(parse(whole))


def test_score_distributions_do_not_draw_the_tails_as_end_bins():
    """An end bin (reaching 0 or 1) holding a third of the clicks is not drawn as a peak at
    the axis' end; the description gives the tails' shares."""
    edges = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 1.0]
    clicks = [1, 10, 12, 14, 12, 10, 30]
    bins = [[low, high, 50, c] for (low, high), c in zip(itertools.pairwise(edges), clicks,
                                                         strict=True)]
    svg = auc_figures.score_distributions([(A, bins)], "tails")
    text = desc(parse(svg))
    assert "33.7% above 0.3 (not drawn)" in text and "1.1% below 0.05" in text, text


def test_lift_figure_draws_each_models_lift_at_the_top_fractions():
    points = [{"fraction": f, "ctr": 0.2 * lift, "lift": lift, "recall": f * lift}
              for f, lift in ((0.01, 3.0), (0.02, 2.8), (0.05, 2.5), (0.1, 2.2), (0.2, 1.9),
                              (0.5, 1.4))]
    svg = auc_figures.lift([(A, points)], "lift")
    root = parse(svg)
    assert "top 1% lift 3 (recall 0.03)" in desc(root) and "top 50% lift 1.4" in desc(root)
    labels = [t for t in texts(root) if t.endswith("%")]
    assert labels[:6] == ["1%", "2%", "5%", "10%", "20%", "50%"], labels
    assert max(tick_values(root, "y")) >= 3.0
