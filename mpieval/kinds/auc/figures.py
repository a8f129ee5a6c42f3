"""The ``auc`` kind's figures on a report page: the ROC curve, the calibration plot (with
Wilson's intervals and the share of rows per predicted-CTR range), the precision-recall
curve and the scores by class; drawn with the report's plumbing
(:mod:`mpieval.report.figures`: its style, colours and inline SVG)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mpieval.kinds.auc.kernels import (
    CALIBRATION_GROUPS,
    expected_calibration_error,
    merge_calibration,
)
from mpieval.report.figures import GREY, WIDTH, Series, new_figure, plain, styled, svg

Z95 = 1.959964

# -- ROC -------------------------------------------------------------------------------


@styled
def lift(curves: Sequence[tuple[Series, Sequence[dict[str, float]]]], key: str) -> str:
    """Lift at the top fractions of rows by pred (``[{"fraction", "ctr", "lift",
    "recall"}, ...]`` per model): the top rows' CTR over the overall CTR, against the
    fraction on a log axis, the line 1 a random pick."""
    figure = new_figure(WIDTH, WIDTH * 0.72)
    ax = figure.add_subplot()
    ax.axhline(1.0, color=GREY, linewidth=1.0, linestyle=":", label="random pick (lift 1)")
    summary = []
    top = 1.0
    for series, points in curves:
        shown = [p for p in points if p.get("lift") is not None]
        if not shown:
            continue
        fractions = [100.0 * p["fraction"] for p in shown]
        lifts = [p["lift"] for p in shown]
        top = max(top, *lifts)
        ax.plot(fractions, lifts, color=series.color, linestyle=series.linestyle,
                marker=series.marker, markersize=4.0, linewidth=1.5,
                label=series.label)
        summary.append(f"{series.label}: " + ", ".join(
            f"top {100 * p['fraction']:g}% lift {p['lift']:.3g} (recall {p['recall']:.3g})"
            for p in shown))
    ax.set_xscale("log")
    ticks = sorted({100.0 * p["fraction"] for _, points in curves for p in points})
    ax.set_xticks(ticks, labels=[f"{t:g}%" for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(0, top * 1.1)
    ax.set_xlabel("Top rows by pred (share of all rows, log scale)")
    ax.set_ylabel("Lift: their CTR / the overall CTR")
    ax.set_title("Lift at the top of the ranking")
    ax.legend(loc="upper right", frameon=True, framealpha=0.9)
    return svg(figure, key, "Lift at the top of the ranking",
               "Lift of the top rows by pred: " + "; ".join(summary) + ".")


@styled
def roc(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """ROC curves ``[fpr, tpr]`` overlaid, with the chance diagonal."""
    figure = new_figure(WIDTH, WIDTH * 0.92)
    ax = figure.add_subplot()
    ax.plot([0, 1], [0, 1], color=GREY, linewidth=0.8, linestyle=":", label="chance (AUC 0.5)")
    summary = []
    for series, points in curves:
        fpr = [point[0] for point in points]
        tpr = [point[1] for point in points]
        ax.plot(fpr, tpr, color=series.color, linestyle=series.linestyle, linewidth=1.5,
                label=series.label)
        area = sum((fpr[i] - fpr[i - 1]) * (tpr[i] + tpr[i - 1]) / 2
                   for i in range(1, len(fpr)))
        summary.append(f"{series.label} AUC {area:.3f}" if len(fpr) > 1
                       else f"{series.label} no curve")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.005)
    ax.set_aspect("equal")
    ax.set_xlabel("False positive rate (share of non-clicks ranked above the threshold)")
    ax.set_ylabel("True positive rate (share of clicks)")
    ax.set_title("ROC curve")
    ax.legend(loc="lower right", frameon=True, framealpha=0.9)
    desc = (f"ROC curves: {', '.join(summary)} (areas under the drawn curves); "
            "the diagonal is a random ranking.")
    return svg(figure, key, "ROC curve", desc)


# -- calibration -----------------------------------------------------------------------


def wilson(ctr: float, rows: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a share ``ctr`` of ``rows`` (a weight sum counts as that
    many rows): ``(c - h, c + h)`` with ``c = (ctr + z^2 / 2n) / (1 + z^2 / n)`` and
    ``h = z sqrt(ctr (1 - ctr) / n + z^2 / 4n^2) / (1 + z^2 / n)``. Unlike Wald's interval
    it has a width at 0 and at all clicks, and stays within [0, 1]."""
    if rows <= 0:
        return 0.0, 1.0
    z2 = z * z
    scale = 1.0 + z2 / rows
    centre = (ctr + z2 / (2 * rows)) / scale
    half = z * math.sqrt(max(ctr * (1 - ctr), 0.0) / rows + z2 / (4 * rows * rows)) / scale
    low = 0.0 if ctr <= 0 else max(centre - half, 0.0)
    return low, 1.0 if ctr >= 1 else min(centre + half, 1.0)


@dataclass(frozen=True)
class View:
    """The range both axes of the calibration plot show, and whether they are logarithmic."""

    low: float
    high: float
    log: bool


def calibration_view(curves: Sequence[Sequence[Sequence[float]]],
                     count: int = CALIBRATION_GROUPS) -> View:
    """Axes that show where the rows are: logarithmic when the drawn bins' mean preds span
    a factor 10 or more, else linear; covering the drawn bins (mean pred, actual CTR and
    interval), and the preds of the JSON's bins between 0.5% and 99.5% of the rows."""
    values: list[float] = []
    preds: list[float] = []
    for points in curves:
        for pred, actual, rows in merge_calibration(points, count):
            preds.append(pred)
            values += [pred, actual, *wilson(actual, rows)]
        usable = [(p, r) for p, _, r in points if r > 0]
        total = sum(r for _, r in usable)
        below = 0.0
        for pred, rows in usable:
            if below + rows >= 0.005 * total and below <= 0.995 * total:
                values.append(pred)
            below += rows
    if not preds:
        return View(0.0, 1.0, False)
    smallest = min(preds)
    if smallest > 0 and max(preds) >= 10 * smallest:
        positive = [v for v in values if v > 0]
        return View(min(positive) / 1.25, min(max(positive) * 1.25, 1.0), True)
    low, high = min(values), max(values)
    pad = 0.05 * (high - low) or 0.05 * max(high, 0.01)
    return View(max(low - pad, 0.0), min(high + pad, 1.0), False)


def _log_ticks(ax: Any, axis: str, view: View) -> None:
    """Ticks at 1, 2, 5 times powers of ten (only the powers over wide ranges), written as
    plain decimals: "0.002", not a superscript the browser cannot search."""
    from matplotlib.ticker import FixedLocator, NullLocator

    decades = math.log10(view.high / view.low)
    multiples = (1, 2, 5) if decades <= 3 else (1,)
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(view.low)) - 1,
                                          math.ceil(math.log10(view.high)) + 1)
             for m in multiples]
    ticks = [t for t in ticks if view.low <= t <= view.high]
    which = ax.xaxis if axis == "x" else ax.yaxis
    which.set_major_locator(FixedLocator(ticks))
    which.set_minor_locator(NullLocator())
    which.set_major_formatter(lambda value, _: plain(value))


@styled
def calibration(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """Reliability plot: actual CTR against mean predicted CTR in bins of about equal rows,
    each with its Wilson 95% interval, the diagonal, axes showing where the rows are
    (:func:`calibration_view`), and below it the share of rows per predicted-CTR range."""
    figure = new_figure(WIDTH, WIDTH * 1.12)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3.2, 1])
    merged = [(series, points, merge_calibration(points)) for series, points in curves]
    merged = [item for item in merged if item[2]]
    view = calibration_view([points for _, points, _ in merged])
    top.plot([view.low, view.high], [view.low, view.high], color=GREY, linewidth=0.8,
             linestyle=":", label="perfect calibration")
    summary = [_calibration_points(top, series, points, bins, view)
               for series, points, bins in merged]
    top.set_ylabel("Actual CTR in the bin (clicks per row)")
    scale = "log scales" if view.log else "linear scales"
    top.set_title(f"Calibration ({CALIBRATION_GROUPS} bins of about equal rows, {scale})")
    top.legend(loc="upper left", frameon=True, framealpha=0.9)
    _rows_histogram(bottom, [(series, points) for series, points, _ in merged], view)
    bottom.set_xlabel("Mean predicted CTR in the bin (clicks per row)")
    if view.log:
        _log_scales(top, bottom, view)
    top.set_xlim(view.low, view.high)
    top.set_ylim(view.low, view.high)
    desc = (f"Calibration: actual CTR against mean predicted CTR in bins of about equal rows "
            f"with Wilson 95% intervals, {scale} from {plain(view.low)} to "
            f"{plain(view.high)}. " + " ".join(summary))
    return svg(figure, key, "Calibration", desc)


def _calibration_points(ax: Any, series: Series, points: Sequence[Sequence[float]],
                        bins: Sequence[tuple[float, float, float]], view: View) -> str:
    """One model's merged bins with their Wilson intervals (a bin without clicks on log
    scales marked at the axis' foot); its line of the description."""
    bounds = [wilson(a, r) for _, a, r in bins]
    preds = [p for p, _, _ in bins]
    actuals = [a for _, a, _ in bins]
    below = [max(a - low, 0.0) for a, (low, _) in zip(actuals, bounds, strict=True)]
    above = [max(high - a, 0.0) for a, (_, high) in zip(actuals, bounds, strict=True)]
    ece = expected_calibration_error(points)
    label = series.label + ("" if math.isnan(ece) else f" (ECE {ece:.4f})")
    ax.errorbar(preds, actuals, yerr=[below, above], color=series.color,
                linestyle=series.linestyle, linewidth=1.0, marker="o", markersize=3.5,
                elinewidth=0.8, capsize=0, label=label)
    if view.log:  # a bin without clicks: its point sits below the axis, marked at its foot
        zeros = [p for p, a in zip(preds, actuals, strict=True) if a <= 0]
        if zeros:
            ax.plot(zeros, [view.low] * len(zeros), linestyle="none", marker="v",
                    markersize=4.5, color=series.color, clip_on=False)
    return _calibration_summary(series.label, bins, bounds, ece)


def _log_scales(top: Any, bottom: Any, view: View) -> None:
    """Both plots' x axis and the top's y axis logarithmic, with plain ticks."""
    for ax in (top, bottom):
        ax.set_xscale("log", nonpositive="clip")
    top.set_yscale("log", nonpositive="clip")
    _log_ticks(top, "x", view)
    _log_ticks(top, "y", view)


def _calibration_summary(label: str, bins: Sequence[tuple[float, float, float]],
                         bounds: Sequence[tuple[float, float]], ece: float) -> str:
    """One model's line of the description: ECE and the bin furthest off the diagonal."""
    text = f"{label}: {len(bins)} bins"
    if not math.isnan(ece):
        text += f", ECE {ece:.4f}"
    worst = max(range(len(bins)), key=lambda i: abs(bins[i][1] - bins[i][0]))
    pred, actual, _ = bins[worst]
    low, high = bounds[worst]
    return (text + f"; largest gap at mean pred {pred:.4g}: actual CTR {actual:.4g} "
            f"(95% {low:.4g} to {high:.4g}).")


def _rows_histogram(ax: Any, curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
                    view: View) -> None:
    """The share of rows per predicted-CTR range (30 equal ranges of the view, on its
    scale), as steps; the JSON's bins fall in the range of their mean pred."""
    ranges = 30
    if view.log:
        start, stop = math.log10(view.low), math.log10(view.high)
        edges = [10.0 ** (start + (stop - start) * i / ranges) for i in range(ranges + 1)]
    else:
        edges = [view.low + (view.high - view.low) * i / ranges for i in range(ranges + 1)]
    for series, points in curves:
        counts = [0.0] * ranges
        total = sum(r for _, _, r in points if r > 0) or 1.0
        for pred, _, rows in points:
            if rows > 0 and edges[0] <= pred <= edges[-1]:
                position = (math.log10(pred) - start) / (stop - start) if view.log else \
                    (pred - view.low) / (view.high - view.low)
                counts[min(int(position * ranges), ranges - 1)] += rows
        ax.stairs([100.0 * c / total for c in counts], edges, color=series.color,
                  linestyle=series.linestyle, linewidth=1.0)
    ax.set_ylabel("Rows (%)")
    ax.set_ylim(bottom=0)


# -- precision and recall; scores by class -------------------------------------------


PR_HEAD = 0.02  # the share of recall whose precision may be cut off the axis


@styled
def precision_recall(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str,
                     base_rates: Sequence[float | None]) -> str:
    """Precision-recall curves ``[recall, precision]`` overlaid, each with its no-skill
    line: the precision of a random ranking, the actual CTR (``base_rates``, None when
    unknown)."""
    figure = new_figure(WIDTH, WIDTH * 0.92)
    ax = figure.add_subplot()
    summary = []
    drawn: list[float] = []
    for (series, points), base in zip(curves, base_rates, strict=True):
        recall = [point[0] for point in points]
        precision = [point[1] for point in points]
        ax.plot(recall, precision, color=series.color, linestyle=series.linestyle,
                linewidth=1.5, label=series.label)
        text = series.label
        middle = _precision_at(points, 0.5)
        if middle is not None:
            text += f" precision {middle:.3g} at recall 0.5"
        if base is not None:
            if base not in drawn:  # A and B of one run share their labels: one line
                drawn.append(base)
                mine = f"{series.label}: " if len(set(base_rates) - {None}) > 1 else ""
                ax.axhline(base, color=series.color if mine else GREY, linestyle=":",
                           linewidth=1.0, label=f"{mine}random ranking (actual CTR {base:.3g})")
            text += f" (random ranking {base:.3g})"
        summary.append(text)
    ax.set_xlim(0, 1)
    top, spike = _precision_top(curves, base_rates)
    ax.set_ylim(0, top)
    if spike is not None:
        note = f"axis cut: the first {PR_HEAD:.0%} of recall reaches precision {spike:.2f}"
        summary.append(note)
    ax.set_xlabel("Recall (share of clicks ranked above the threshold)"
                  + (f"\n\u2191 {note}" if spike is not None else ""))
    ax.set_ylabel("Precision (share of clicks among rows above it)")
    ax.set_title("Precision-recall curve")
    ax.legend(loc="upper right", frameon=True, framealpha=0.9)
    return svg(figure, key, "Precision-recall curve",
                f"Precision-recall curves: {'; '.join(summary)}.")


def _precision_top(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
                   base_rates: Sequence[float | None]) -> tuple[float, float | None]:
    """The top of the y axis: 1, or a fifth above the highest precision past the first
    :data:`PR_HEAD` of recall (and the base rates) when the few rows ranked first (a
    handful of clicks at recall near 0) reach more than that; then also their highest
    precision, which the axis cuts (None when nothing is cut)."""
    body = [point[1] for _, points in curves for point in points if point[0] >= PR_HEAD]
    head = [point[1] for _, points in curves for point in points if point[0] < PR_HEAD]
    known = body + [base for base in base_rates if base is not None]
    if not known or not head:
        return 1.005, None
    top = min(1.005, max(known) * 1.2 + 0.02)
    spike = max(head)
    return (top, spike) if spike > top else (1.005, None)


def _precision_at(points: Sequence[Sequence[float]], recall: float) -> float | None:
    """The precision of the first point at or past ``recall`` (points by recall up)."""
    for point in points:
        if point[0] >= recall:
            return float(point[1])
    return None


def _logit(pred: float) -> float:
    return math.log(pred / (1.0 - pred))


@styled
def score_distributions(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
                        key: str) -> str:
    """The distribution of pred among clicks (top) and non-clicks (bottom), one line per
    model, from histograms ``[pred_low, pred_high, negatives, positives]``: the share of
    the class's rows per bin, on a logit scale of pred when the bins allow (the end bins,
    reaching 0 and 1, drawn as wide as their neighbours)."""
    figure = new_figure(WIDTH, WIDTH * 0.95)
    axes = figure.subplots(2, 1, sharex=True)
    # Per model: its bins' typical width on the logit scale (the end bins, reaching 0 and
    # 1, are drawn that wide), and the view: one such width beyond the inner edges.
    steps = [_typical_width(bins) for _, bins in curves]
    axis = _pred_axis(curves, steps)
    summary = []
    for ax, column, what in ((axes[0], 3, "clicks"), (axes[1], 2, "non-clicks")):
        summary += [_class_shares(ax, series, bins, step, axis, column, what)
                    for (series, bins), step in zip(curves, steps, strict=True)]
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"% of {what} per bin")
        ax.set_title(f"{what[0].upper()}{what[1:]}", fontsize=9.0, loc="left")
    logit, start, stop = axis.logit, axis.start, axis.stop
    if logit:
        _logit_ticks(axes[1], start, stop)
    axes[1].set_xlim(start, stop)
    axes[1].set_xlabel("Predicted CTR" + (" (logit scale)" if logit else ""))
    if len(curves) > 1:
        axes[0].legend(loc="upper right", frameon=True, framealpha=0.9)
    figure.suptitle("Predicted CTR by class", fontsize=10.0)
    return svg(figure, key, "Predicted CTR by class",
                f"Distributions of predicted CTR among clicks and non-clicks: "
                f"{'; '.join(summary)}.")


@dataclass(frozen=True)
class PredAxis:
    """The x axis of the scores by class: logit of pred from ``start`` to ``stop``, or
    (``logit`` False) pred itself from 0 to 1."""

    logit: bool
    start: float
    stop: float

    def place(self, pred: float) -> float:
        """Where a pred (a bin's edge) sits on the axis; 0 and 1 at its ends."""
        if not self.logit:
            return pred
        if pred <= 0 or pred >= 1:
            return self.start if pred <= 0 else self.stop
        return min(max(_logit(pred), self.start), self.stop)


def _pred_axis(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
               steps: Sequence[float | None]) -> PredAxis:
    """Logit of pred when every model's bins have a typical width (``steps``), one such
    width beyond the inner edges; else pred from 0 to 1."""
    if not curves or any(step is None for step in steps):
        return PredAxis(False, 0.0, 1.0)
    return PredAxis(True,
                    min(_logit(_inner(bins)[0]) - (step or 0.0)
                        for (_, bins), step in zip(curves, steps, strict=True)),
                    max(_logit(_inner(bins)[-1]) + (step or 0.0)
                        for (_, bins), step in zip(curves, steps, strict=True)))


def _class_shares(ax: Any, series: Series, bins: Sequence[Sequence[float]],
                  step: float | None, axis: PredAxis, column: int, what: str) -> str:
    """One model's share of a class's rows (``column`` of the bins) per bin, as steps
    (a bin's share spread over the width it is drawn); its line of the description. On a
    logit axis the end bins, which reach 0 and 1 and so hold a whole tail, are not drawn as
    steps (their share would stand as a false peak at the axis' ends): their shares are
    said in the description and in a note of the plot (:func:`_tail_note`)."""
    total = sum(b[column] for b in bins)
    if total <= 0:
        return f"{series.label}: no {what}"
    drawn = [b for b in bins if not axis.logit or (0.0 < b[0] and b[1] < 1.0)]
    tails = ""
    if axis.logit and drawn:
        below = 100.0 * sum(b[column] for b in bins if b[0] <= 0.0) / total
        above = 100.0 * sum(b[column] for b in bins if b[1] >= 1.0) / total
        tails = (f", {below:.1f}% below {drawn[0][0]:.3g} and {above:.1f}% above "
                 f"{drawn[-1][1]:.3g} (not drawn)")
    else:
        drawn = list(bins)
    edges = [axis.place(drawn[0][0])] + [axis.place(b[1]) for b in drawn]
    shares = [100.0 * b[column] / total
              * ((step or 0.0) / max(high - low, 1e-12) if axis.logit else 1.0)
              for b, (low, high) in zip(drawn, itertools.pairwise(edges), strict=True)]
    ax.stairs(shares, edges, color=series.color, linestyle=series.linestyle,
              linewidth=1.2, label=series.label)
    return f"{series.label}: median pred of {what} in {_median_bin(bins, column)}{tails}"


def _inner(bins: Sequence[Sequence[float]]) -> list[float]:
    """The bins' edges strictly between 0 and 1, in order."""
    return sorted({edge for b in bins for edge in b[:2] if 0.0 < edge < 1.0})


def _typical_width(bins: Sequence[Sequence[float]]) -> float | None:
    """The median width of the bins between inner edges on the logit scale; None when
    there are fewer than two inner edges (the plot is then linear in pred)."""
    inner = _inner(bins)
    if len(inner) < 2:
        return None
    widths = sorted(_logit(high) - _logit(low) for low, high in itertools.pairwise(inner))
    return widths[len(widths) // 2]


def _median_bin(bins: Sequence[Sequence[float]], column: int) -> str:
    """The pred range of the bin holding the class's median row, as text."""
    total = sum(b[column] for b in bins)
    below = 0.0
    for b in bins:
        below += b[column]
        if below >= total / 2:
            return f"{b[0]:.3g} to {b[1]:.3g}"
    return "none"


def _logit_ticks(ax: Any, start: float, stop: float) -> None:
    """Ticks of a logit axis at preds 1, 2, 5 times powers of ten and their mirrors above
    0.5, labelled with the pred itself."""
    from matplotlib.ticker import FixedLocator, NullLocator

    low = [m * 10.0 ** e for e in range(-8, 0) for m in (1, 2, 5) if m * 10.0 ** e < 0.5]
    preds = [*low, 0.5, *(1 - p for p in reversed(low))]
    ticks = [(p, _logit(p)) for p in preds if start <= _logit(p) <= stop]
    if len(ticks) > 9:
        ticks = [(p, t) for p, t in ticks if plain(min(p, 1 - p)).strip("0.") in ("1", "5")]
    ax.xaxis.set_major_locator(FixedLocator([t for _, t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    labels = {round(t, 9): plain(p) if p <= 0.5 else f"{p:.8f}".rstrip("0")
              for p, t in ticks}
    ax.xaxis.set_major_formatter(lambda value, _: labels.get(round(value, 9), ""))
