"""The report's figures: matplotlib drawings returned as inline SVG text.

matplotlib is the optional ``report`` extra: it is imported when the first figure is drawn
(:func:`require_matplotlib` says how to install it). No pyplot and no display: each figure
is a :class:`matplotlib.figure.Figure` saved straight to SVG, with its text as glyph
outlines (it looks the same wherever the page is opened or printed, whatever fonts are
installed), a fixed hash salt and no date (the same data gives the same bytes), and ids
unique to the figure (several SVGs share one HTML document).
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe & Ito's palette: told apart with every common colour-vision deficiency, and in grey.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
GREY = "#8c8c8c"
WIDTH = 5.0  # inches; the page shows two figures side by side at a laptop's width

_STYLE: dict[Any, Any] = {
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
    "svg.fonttype": "path",
}

# Bins drawn in the calibration plot: the JSON's bins (about equal rows each) merged.
CALIBRATION_POINTS = 20
Z95 = 1.959964


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


@_styled
def roc(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """ROC curves ``[fpr, tpr]`` overlaid, with the chance diagonal."""
    figure = _new_figure(WIDTH, WIDTH * 0.92)
    ax = figure.add_subplot()
    ax.plot([0, 1], [0, 1], color=GREY, linewidth=0.8, linestyle=":", label="chance (AUC 0.5)")
    for series, points in curves:
        fpr = [point[0] for point in points]
        tpr = [point[1] for point in points]
        ax.plot(fpr, tpr, color=series.color, linestyle=series.linestyle, linewidth=1.5,
                label=series.label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.005)
    ax.set_aspect("equal")
    ax.set_xlabel("False positive rate (share of non-clicks ranked above the threshold)")
    ax.set_ylabel("True positive rate (share of clicks)")
    ax.set_title("ROC curve")
    ax.legend(loc="lower right", frameon=True, framealpha=0.9)
    return _svg(figure, key)


def merge_bins(points: Sequence[Sequence[float]], count: int = CALIBRATION_POINTS
               ) -> list[tuple[float, float, float]]:
    """Adjacent calibration bins ``[mean_pred, actual_ctr, rows]`` merged into at most
    ``count`` bins of about equal rows: rows-weighted means, so a merged bin's values are
    exactly those of its rows together."""
    usable = [(p, a, r) for p, a, r in points if r > 0 and p is not None and a is not None]
    total = sum(r for _, _, r in usable)
    if not usable or total <= 0:
        return []
    groups: list[list[float]] = []  # [pred * rows, clicks, rows]
    below = 0.0
    last = -1
    for pred, actual, rows in usable:
        index = min(int(below * count / total), count - 1)
        if index != last:
            groups.append([0.0, 0.0, 0.0])
            last = index
        group = groups[-1]
        group[0] += pred * rows
        group[1] += actual * rows
        group[2] += rows
        below += rows
    return [(p / r, c / r, r) for p, c, r in groups]


@_styled
def calibration(curves: Sequence[tuple[Series, Sequence[Sequence[float]]]], key: str) -> str:
    """Reliability plot: actual CTR against mean predicted CTR per bin, with the diagonal,
    each point's 95% binomial interval, and below it the rows per predicted-CTR range."""
    figure = _new_figure(WIDTH, WIDTH * 1.12)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3.2, 1])
    merged = [(series, merge_bins(points)) for series, points in curves]
    merged = [(series, bins) for series, bins in merged if bins]
    high = max([max(p, a) for _, bins in merged for p, a, _ in bins]
               + [p for _, points in curves for p, _, r in points if r > 0], default=1.0)
    high = min(1.0, high * 1.04) if high > 0 else 1.0
    top.plot([0, high], [0, high], color=GREY, linewidth=0.8, linestyle=":",
             label="perfect calibration")
    for series, bins in merged:
        preds = [p for p, _, _ in bins]
        actuals = [a for _, a, _ in bins]
        spread = [Z95 * math.sqrt(max(a * (1 - a), 0.0) / r) for _, a, r in bins]
        top.errorbar(preds, actuals, yerr=spread, color=series.color, linestyle=series.linestyle,
                     linewidth=1.0, marker="o", markersize=3.5, elinewidth=0.8, capsize=0,
                     label=series.label)
    top.set_xlim(0, high)
    top.set_ylim(0, high)
    top.set_ylabel("Actual CTR in the bin (clicks per row)")
    top.set_title(f"Calibration ({CALIBRATION_POINTS} bins of about equal rows)")
    top.legend(loc="upper left", frameon=True, framealpha=0.9)
    _rows_histogram(bottom, curves, high)
    bottom.set_xlabel("Mean predicted CTR in the bin (clicks per row)")
    return _svg(figure, key)


def _rows_histogram(ax: Any, curves: Sequence[tuple[Series, Sequence[Sequence[float]]]],
                    high: float) -> None:
    """Rows per predicted-CTR range (40 equal ranges up to ``high``), as steps."""
    ranges = 40
    width = high / ranges
    for series, points in curves:
        counts = [0.0] * ranges
        for pred, _, rows in points:
            if pred is not None and rows > 0:
                counts[min(int(pred / width), ranges - 1)] += rows
        total = sum(counts) or 1.0
        shares = [100.0 * c / total for c in counts]
        edges = [i * width for i in range(ranges + 1)]
        ax.stairs(shares, edges, color=series.color, linestyle=series.linestyle, linewidth=1.0)
    ax.set_ylabel("Rows (%)")
    ax.set_ylim(bottom=0)


@_styled
def intervals(categories: Sequence[str],
              panels: Sequence[tuple[str, Sequence[tuple[Series, Sequence[Estimate]]]]],
              key: str) -> str:
    """A dot plot: one panel per measure (title, x label), one row per category, one dot
    per series with its 95% interval as a bar."""
    count = max((len(rows) for _, rows in panels), default=1)
    height = 1.2 + 0.3 * len(categories) * max(1.0, 0.55 * count)
    figure = _new_figure(WIDTH * 2, height)
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    positions = list(range(len(categories)))[::-1]  # the first category on top
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
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.08)
    axes[0].set_yticks(positions, labels=list(categories))
    axes[0].set_ylim(-0.6, len(categories) - 0.4)
    _legend(figure, [series for series, _ in panels[0][1]] if panels else [])
    return _svg(figure, key)


@_styled
def differences(rows: Sequence[tuple[str, Estimate, str]], xlabel: str, key: str) -> str:
    """A forest plot of differences B - A: one row per difference (label, estimate with
    its 95% interval, the p-value's text shown on the right), and the no-difference line."""
    height = 1.1 + 0.32 * len(rows)
    figure = _new_figure(WIDTH * 2, height)
    ax = figure.add_subplot()
    positions = list(range(len(rows)))[::-1]
    ax.axvline(0.0, color=GREY, linewidth=0.9, linestyle=":")
    for y, (_, estimate, _) in zip(positions, rows, strict=True):
        if estimate.value is None:
            continue
        ax.errorbar([estimate.value], [y], xerr=estimate.errors,
                    color=PALETTE[4] if estimate.excludes_zero else PALETTE[0],
                    marker="o", markersize=4.5, elinewidth=1.4, capsize=3, linestyle="none")
    ax.set_yticks(positions, labels=[label for label, _, _ in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.grid(axis="y", visible=False)
    ax.margins(x=0.1)
    ax.set_xlabel(xlabel)
    side = ax.twinx()
    side.set_ylim(ax.get_ylim())
    side.set_yticks(positions, labels=[p for _, _, p in rows])
    side.tick_params(axis="y", length=0)
    side.grid(False)
    for name in ("top", "right", "left", "bottom"):
        side.spines[name].set_visible(False)
    return _svg(figure, key)


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


def _svg(figure: Figure, key: str) -> str:
    """The figure as an ``<svg>`` element for inline use: no XML prolog, no fixed size
    (the page's CSS sizes it; the viewBox keeps the proportions), ids prefixed by ``key``."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": key}):
        figure.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", key)
    text = re.sub(r'id="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r'(href|xlink:href)="#([^"]+)"', rf'\1="#{prefix}-\2"', text)
    return re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
