"""The report's figures: matplotlib drawings returned as inline SVG text.

matplotlib is the optional ``report`` extra: it is imported when the first figure is drawn
(:func:`require_matplotlib` says how to install it). No pyplot and no display: each figure
is a :class:`matplotlib.figure.Figure` saved straight to SVG, with its text kept as text
(found with the browser's search, read by screen readers; a font stack that falls back to
the reader's sans-serif), a ``<title>`` and a ``<desc>`` that summarise it from its data
(``role="img"``, ``aria-labelledby``), a fixed hash salt and no metadata (the same data
gives the same bytes), no fixed size (a ``viewBox``: the page's CSS scales it, up to
1.25 times its drawn size), and ids unique to the figure (several SVGs share one HTML
document).

Colours: :data:`PALETTE` gives one colour per model, :data:`BETTER`, :data:`WORSE` and
:data:`NEUTRAL` the direction of a difference; every one has a contrast of at least 3:1
on white (WCAG's rule for graphics) and they are told apart with the common colour-vision
deficiencies (Okabe & Ito's colours); the figures never rely on colour alone (line styles,
marker fill, legend text).
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec
from xml.sax.saxutils import escape, quoteattr

from mpieval.kinds.auc.kernels import (
    CALIBRATION_GROUPS,
    expected_calibration_error,
    merge_calibration,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe & Ito's blue, vermillion, bluish green, reddish purple and black: each at least
# 3:1 on white (their orange, sky blue and yellow are not, so they are left out).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000")
BETTER = "#009E73"  # B significantly better than A
WORSE = "#D55E00"  # B significantly worse
NEUTRAL = "#767676"  # no evidence of a difference
GREY = "#8c8c8c"  # reference lines (chance, perfect calibration, zero)
WIDTH = 5.0  # inches; the page shows two figures side by side at a laptop's width
# Fonts the text is set in: matplotlib lays the text out with the first (it ships with
# it, and it is among the widest), a browser uses the first it has.
FONTS = ("DejaVu Sans", "Helvetica Neue", "Helvetica", "Arial", "Liberation Sans")

_STYLE: dict[Any, Any] = {
    "font.size": 9.0,
    "font.family": "sans-serif",
    "font.sans-serif": list(FONTS),
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "axes.unicode_minus": False,  # "-0.01" as typed, so the browser's search finds it
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
    "svg.fonttype": "none",
}

Z95 = 1.959964
SIGNIFICANCE = 0.05  # the q-value under which a tag's difference counts as significant


P = ParamSpec("P")


def _styled(draw: Callable[P, str]) -> Callable[P, str]:
    """Draw with the report's style (font sizes, grid, spines) in force."""

    @functools.wraps(draw)
    def styled(*args: P.args, **kwargs: P.kwargs) -> str:
        import matplotlib

        with matplotlib.rc_context(_STYLE):
            return draw(*args, **kwargs)

    return styled


def require_matplotlib() -> None:
    """Import matplotlib, or raise ImportError saying how to install it."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError as error:
        raise ImportError("needs matplotlib, the optional 'report' extra: "
                          f"pip install 'mpieval[report]' ({error})") from None


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


@dataclass(frozen=True)
class Series:
    """One model of one run in a figure: its legend label, colour and line style."""

    label: str
    color: str
    dashed: bool = False

    @property
    def linestyle(self) -> str:
        return "--" if self.dashed else "-"


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval (either bound None when the run has none)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def errors(self) -> list[list[float]] | None:
        """matplotlib's ``xerr`` of the interval: the distances below and above the value."""
        if self.value is None or self.low is None or self.high is None:
            return None
        return [[max(self.value - self.low, 0.0)], [max(self.high - self.value, 0.0)]]

    @property
    def excludes_zero(self) -> bool:
        return self.has_interval and not (self.low or 0.0) <= 0.0 <= (self.high or 0.0)


@dataclass(frozen=True)
class Difference:
    """One row of the forest plot: a difference B - A with its interval, its p-value and,
    for a per-tag value, its q-value (false discovery rate over the tags)."""

    label: str
    estimate: Estimate
    p: float | None = None
    q: float | None = None
    higher_is_better: bool = True
    emphasis: bool = False  # the overall row ("all"), drawn first and in bold

    @property
    def significant(self) -> bool:
        """With a q-value, q < 0.05; otherwise the 95% interval excludes 0."""
        if self.q is not None:
            return not math.isnan(self.q) and self.q < SIGNIFICANCE
        return self.estimate.excludes_zero

    @property
    def direction(self) -> str:
        """``better`` or ``worse`` (for B) when significant, else ``no evidence``."""
        value = self.estimate.value
        if not self.significant or value is None or value == 0:
            return "no evidence"
        return "better" if (value > 0) == self.higher_is_better else "worse"


# -- ROC -------------------------------------------------------------------------------


@_styled
def roc(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """ROC curves ``[fpr, tpr]`` overlaid, with the chance diagonal."""
    figure = _new_figure(WIDTH, WIDTH * 0.92)
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
    return _svg(figure, key, "ROC curve", desc)


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
    which.set_major_formatter(lambda value, _: _plain(value))


def _plain(value: float) -> str:
    """A tick value as a short plain decimal (no exponent above 1e-5)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


@_styled
def calibration(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """Reliability plot: actual CTR against mean predicted CTR in bins of about equal rows,
    each with its Wilson 95% interval, the diagonal, axes showing where the rows are
    (:func:`calibration_view`), and below it the share of rows per predicted-CTR range."""
    figure = _new_figure(WIDTH, WIDTH * 1.12)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3.2, 1])
    merged = [(series, points, merge_calibration(points)) for series, points in curves]
    merged = [item for item in merged if item[2]]
    view = calibration_view([points for _, points, _ in merged])
    top.plot([view.low, view.high], [view.low, view.high], color=GREY, linewidth=0.8,
             linestyle=":", label="perfect calibration")
    summary = []
    for series, points, bins in merged:
        bounds = [wilson(a, r) for _, a, r in bins]
        preds = [p for p, _, _ in bins]
        actuals = [a for _, a, _ in bins]
        below = [max(a - low, 0.0) for a, (low, _) in zip(actuals, bounds, strict=True)]
        above = [max(high - a, 0.0) for a, (_, high) in zip(actuals, bounds, strict=True)]
        ece = expected_calibration_error(points)
        label = series.label + ("" if math.isnan(ece) else f" (ECE {ece:.4f})")
        top.errorbar(preds, actuals, yerr=[below, above], color=series.color,
                     linestyle=series.linestyle, linewidth=1.0, marker="o", markersize=3.5,
                     elinewidth=0.8, capsize=0, label=label)
        if view.log:  # a bin without clicks: its point sits below the axis, marked at its foot
            zeros = [p for p, a in zip(preds, actuals, strict=True) if a <= 0]
            if zeros:
                top.plot(zeros, [view.low] * len(zeros), linestyle="none", marker="v",
                         markersize=4.5, color=series.color, clip_on=False)
        summary.append(_calibration_summary(series.label, bins, bounds, ece))
    top.set_ylabel("Actual CTR in the bin (clicks per row)")
    scale = "log scales" if view.log else "linear scales"
    top.set_title(f"Calibration ({CALIBRATION_GROUPS} bins of about equal rows, {scale})")
    top.legend(loc="upper left", frameon=True, framealpha=0.9)
    _rows_histogram(bottom, [(series, points) for series, points, _ in merged], view)
    bottom.set_xlabel("Mean predicted CTR in the bin (clicks per row)")
    if view.log:
        for ax in (top, bottom):
            ax.set_xscale("log", nonpositive="clip")
        top.set_yscale("log", nonpositive="clip")
        _log_ticks(top, "x", view)
        _log_ticks(top, "y", view)
    top.set_xlim(view.low, view.high)
    top.set_ylim(view.low, view.high)
    desc = (f"Calibration: actual CTR against mean predicted CTR in bins of about equal rows "
            f"with Wilson 95% intervals, {scale} from {_plain(view.low)} to "
            f"{_plain(view.high)}. " + " ".join(summary))
    return _svg(figure, key, "Calibration", desc)


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


@_styled
def precision_recall(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str,
                     base_rates: Sequence[float | None]) -> str:
    """Precision-recall curves ``[recall, precision]`` overlaid, each with its no-skill
    line: the precision of a random ranking, the actual CTR (``base_rates``, None when
    unknown)."""
    figure = _new_figure(WIDTH, WIDTH * 0.92)
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
    ax.set_ylim(0, 1.005)
    ax.set_xlabel("Recall (share of clicks ranked above the threshold)")
    ax.set_ylabel("Precision (share of clicks among rows above it)")
    ax.set_title("Precision-recall curve")
    ax.legend(loc="upper right", frameon=True, framealpha=0.9)
    return _svg(figure, key, "Precision-recall curve",
                f"Precision-recall curves: {'; '.join(summary)}.")


def _precision_at(points: Sequence[Sequence[float]], recall: float) -> float | None:
    """The precision of the first point at or past ``recall`` (points by recall up)."""
    for point in points:
        if point[0] >= recall:
            return float(point[1])
    return None


def _logit(pred: float) -> float:
    return math.log(pred / (1.0 - pred))


@_styled
def score_distributions(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
                        key: str) -> str:
    """The distribution of pred among clicks (top) and non-clicks (bottom), one line per
    model, from histograms ``[pred_low, pred_high, negatives, positives]``: the share of
    the class's rows per bin, on a logit scale of pred when the bins allow (the end bins,
    reaching 0 and 1, drawn as wide as their neighbours)."""
    figure = _new_figure(WIDTH, WIDTH * 0.95)
    axes = figure.subplots(2, 1, sharex=True)
    # Per model: its bins' typical width on the logit scale (the end bins, reaching 0 and
    # 1, are drawn that wide), and the view: one such width beyond the inner edges.
    steps = [_typical_width(bins) for _, bins in curves]
    logit = all(step is not None for step in steps) and bool(curves)
    if logit:
        start = min(_logit(_inner(bins)[0]) - (step or 0.0)
                    for (_, bins), step in zip(curves, steps, strict=True))
        stop = max(_logit(_inner(bins)[-1]) + (step or 0.0)
                   for (_, bins), step in zip(curves, steps, strict=True))
    else:
        start, stop = 0.0, 1.0

    def place(pred: float) -> float:
        if not logit:
            return pred
        return start if pred <= 0 else stop if pred >= 1 else min(max(_logit(pred), start), stop)

    summary = []
    for ax, column, what in ((axes[0], 3, "clicks"), (axes[1], 2, "non-clicks")):
        for (series, bins), step in zip(curves, steps, strict=True):
            total = sum(b[column] for b in bins)
            if total <= 0:
                summary.append(f"{series.label}: no {what}")
                continue
            edges = [place(bins[0][0])] + [place(b[1]) for b in bins]
            shares = [100.0 * b[column] / total
                      * ((step or 0.0) / max(high - low, 1e-12) if logit else 1.0)
                      for b, (low, high) in zip(bins, itertools.pairwise(edges), strict=True)]
            ax.stairs(shares, edges, color=series.color, linestyle=series.linestyle,
                      linewidth=1.2, label=series.label)
            summary.append(f"{series.label}: median pred of {what} in {_median_bin(bins, column)}")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"% of {what} per bin")
        ax.set_title(f"{what[0].upper()}{what[1:]}", fontsize=9.0, loc="left")
    if logit:
        _logit_ticks(axes[1], start, stop)
    axes[1].set_xlim(start, stop)
    axes[1].set_xlabel("Predicted CTR" + (" (logit scale)" if logit else ""))
    if len(curves) > 1:
        axes[0].legend(loc="upper right", frameon=True, framealpha=0.9)
    figure.suptitle("Predicted CTR by class", fontsize=10.0)
    return _svg(figure, key, "Predicted CTR by class",
                f"Distributions of predicted CTR among clicks and non-clicks: "
                f"{'; '.join(summary)}.")


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
        ticks = [(p, t) for p, t in ticks if _plain(min(p, 1 - p)).strip("0.") in ("1", "5")]
    ax.xaxis.set_major_locator(FixedLocator([t for _, t in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    labels = {round(t, 9): _plain(p) if p <= 0.5 else f"{p:.8f}".rstrip("0")
              for p, t in ticks}
    ax.xaxis.set_major_formatter(lambda value, _: labels.get(round(value, 9), ""))


# -- many values at once ---------------------------------------------------------------


@_styled
def intervals(categories: Sequence[str],
              panels: Sequence[tuple[str, Sequence[tuple[Series, Sequence[Estimate]]]]],
              key: str) -> str:
    """A dot plot: one panel per measure (title, x label), one row per category, one dot
    per series with its 95% interval as a bar."""
    count = max((len(rows) for _, rows in panels), default=1)
    height = 1.2 + 0.3 * len(categories) * max(1.0, 0.55 * count)
    figure = _new_figure(WIDTH * 1.2, height)
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    positions = list(range(len(categories)))[::-1]  # the first category on top
    summary = []
    for ax, (xlabel, rows) in zip(axes, panels, strict=True):
        for s, (series, estimates) in enumerate(rows):
            offset = (s - (len(rows) - 1) / 2) * min(0.7 / max(len(rows), 1), 0.25)
            for y, estimate in zip(positions, estimates, strict=True):
                if estimate.value is None:
                    continue
                ax.errorbar([estimate.value], [y - offset], xerr=estimate.errors,
                            color=series.color,
                            marker="o" if not series.dashed else "D", markersize=4.5,
                            markerfacecolor="white" if series.dashed else series.color,
                            elinewidth=1.2, capsize=2.5, linestyle="none")
            if categories and estimates:
                summary.append(f"{xlabel.split(':')[0]} of {series.label} for "
                               f"{categories[0]}: {_estimate_text(estimates[0])}")
        ax.set_xlabel(textwrap.fill(xlabel, 72 // max(len(panels), 1)))
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.08)
    axes[0].set_yticks(positions, labels=list(categories))
    axes[0].set_ylim(-0.6, len(categories) - 0.4)
    _legend(figure, [series for series, _ in panels[0][1]] if panels else [])
    title = " and ".join(xlabel.split(":")[0] for xlabel, _ in panels) + " by tag"
    desc = (f"{title}: {len(categories)} tags with 95% intervals. "
            + "; ".join(summary) + ".")
    return _svg(figure, key, title, desc)


def _estimate_text(estimate: Estimate, signed: bool = False) -> str:
    if estimate.value is None:
        return "undefined"
    sign = "+" if signed else ""
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:{sign}.4f}"
    return f"{estimate.value:{sign}.4f} (95% {estimate.low:{sign}.4f} to {estimate.high:{sign}.4f})"


def _p_text(p: float | None, name: str = "p") -> str:
    """A p- or q-value as the page prints it."""
    if p is None or math.isnan(p):
        return f"{name} undefined"
    if p < 1e-4:
        return f"{name} < 0.0001"
    return f"{name} = {p:.2g}" if p < 0.01 else f"{name} = {p:.2f}"


def _signed(value: float, step: float) -> str:
    """``value`` with its sign, to the decimals that ``step`` (a tick step or an interval's
    half width) needs for two significant digits."""
    decimals = min(max(1 - math.floor(math.log10(step)), 0), 8) if step > 0 else 4
    text = f"{value:+.{decimals}f}"
    return "0" if float(text) == 0 else text


@_styled
def differences(rows: Sequence[Difference], xlabel: str, key: str) -> str:
    """A forest plot of differences B - A, one row per difference from the top: its 95%
    interval as a bar, the colour its direction (:data:`BETTER`, :data:`WORSE`,
    :data:`NEUTRAL`), the marker filled when significant, hollow when not; on the right the
    value and its p- (or q-) value; the x axis fitted to the intervals and 0; the height
    grows with the rows."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, MaxNLocator

    height = 1.45 + 0.27 * max(len(rows), 1)
    figure = _new_figure(WIDTH * 1.2, height)
    ax = figure.add_subplot()
    positions = list(range(len(rows)))[::-1]
    ax.axvline(0.0, color=GREY, linewidth=0.9, linestyle=":")
    colours = {"better": BETTER, "worse": WORSE, "no evidence": NEUTRAL}
    ends = [0.0]
    right = []
    summary = []
    for y, row in zip(positions, rows, strict=True):
        estimate = row.estimate
        if estimate.value is None:
            right.append("undefined")
            continue
        colour = colours[row.direction]
        size = 6.5 if row.emphasis else 5.0
        ax.errorbar([estimate.value], [y], xerr=estimate.errors, color=colour,
                    marker="o", markersize=size, markeredgewidth=1.3,
                    markerfacecolor=colour if row.significant else "white",
                    elinewidth=2.0 if row.emphasis else 1.4, capsize=3, linestyle="none")
        ends += [v for v in (estimate.value, estimate.low, estimate.high) if v is not None]
        half = abs(estimate.value)
        if estimate.low is not None and estimate.high is not None:
            half = (estimate.high - estimate.low) / 2 or half
        half = half or 1e-4
        text = _signed(estimate.value, half)
        text += "  " + (_p_text(row.q, "q") if row.q is not None else _p_text(row.p))
        if row.direction != "no evidence":
            text += f"  {row.direction}"
        right.append(text)
        summary.append(f"{row.label} {_estimate_text(estimate, signed=True)}, "
                       f"{_p_text(row.q, 'q') if row.q is not None else _p_text(row.p)}, "
                       f"{row.direction}")
    low, high = min(ends), max(ends)
    span = high - low or max(abs(high), 1e-3)
    low, high = low - 0.06 * span, high + 0.06 * span
    ticks = [t for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
             if low <= t <= high]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else span
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(lambda value, _: _signed(value, step * 5))
    ax.set_xlim(low, high)
    ax.set_yticks(positions, labels=[row.label for row in rows])
    for label, row in zip(ax.get_yticklabels(), rows, strict=True):
        if row.emphasis:
            label.set_fontweight("bold")
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(textwrap.fill(xlabel, 72))
    side = ax.twinx()
    side.set_ylim(ax.get_ylim())
    side.set_yticks(positions, labels=right)
    side.tick_params(axis="y", length=0)
    side.grid(False)
    for name in ("top", "right", "left", "bottom"):
        side.spines[name].set_visible(False)
    present = [d for d in ("better", "worse", "no evidence") if any(r.direction == d for r in rows)]
    meaning = {"better": "B better (significant)", "worse": "B worse (significant)",
               "no evidence": "no evidence of a difference"}
    handles = [Line2D([], [], color=colours[d], marker="o", markersize=5.0, linestyle="none",
                      markerfacecolor="white" if d == "no evidence" else colours[d],
                      label=meaning[d]) for d in present]
    if handles:
        figure.legend(handles=handles, loc="outside upper center", ncols=len(handles),
                      frameon=False)
    better = sum(r.direction == "better" for r in rows)
    worse = sum(r.direction == "worse" for r in rows)
    desc = (f"Differences B - A with 95% intervals: {len(rows)} rows, {better} significantly "
            f"better, {worse} significantly worse. " + "; ".join(summary) + ".")
    return _svg(figure, key, "Differences B - A", desc)


def _legend(figure: Figure, series: Sequence[Series]) -> None:
    if len(series) < 2:
        return
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=s.color, marker="D" if s.dashed else "o",
                                markerfacecolor="white" if s.dashed else s.color,
                                linestyle="none", label=s.label)
        for s in series
    ]
    figure.legend(handles=handles, loc="outside upper center", ncols=min(len(handles), 4),
                  frameon=False)


def _svg(figure: Figure, key: str, title: str, desc: str) -> str:
    """The figure as an ``<svg>`` element for inline use: no XML prolog, comments or
    metadata, no fixed size (the page's CSS sizes it; the viewBox keeps the proportions),
    ids prefixed by ``key``, and an accessible name and description (``title``, ``desc``)."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"mpieval-{key}"}):
        figure.savefig(out, format="svg",
                       metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = out.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", key)
    text = re.sub(r'id="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r'(href|xlink:href)="#([^"]+)"', rf'\1="#{prefix}-\2"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
    opening = re.match(r"<svg[^>]*>", text)
    assert opening is not None
    tag = re.sub(r' (width|height)="[^"]*"', "", opening.group(0))
    labelled = quoteattr(f"{prefix}-title {prefix}-desc")
    # At most a quarter above its drawn size (96 px an inch), so a figure alone on a row
    # of a wide screen keeps text of a normal size; narrower screens scale it down.
    largest = round(figure.get_figwidth() * 96 * 1.25)
    tag = (tag[:-1] + f' role="img" aria-labelledby={labelled}'
           f' style="max-width: min(100%, {largest}px)">')
    accessible = (f'\n <title id="{prefix}-title">{escape(title)}</title>'
                  f'\n <desc id="{prefix}-desc">{escape(desc)}</desc>')
    return tag + accessible + text[opening.end():]

