"""The report's figures' plumbing, and the figures any kind may draw: matplotlib drawings
returned as inline SVG text.

The plumbing: :func:`styled` (the report's style), :func:`new_figure`, :func:`svg` (the
inline element), :class:`Series` (a model's label, colour and line style), the colours.
The figures of any kind's values: :func:`intervals` (a dot plot of values with their
intervals, by category) and :func:`differences` (a forest plot of differences B - A). A
kind's own figures live in its folder (``mpieval/kinds/<kind>/figures.py``).

matplotlib is the optional ``report`` extra: it is imported when the first figure is drawn
(:func:`require_matplotlib` says how to install it). No pyplot and no display: each figure
is a :class:`matplotlib.figure.Figure` saved straight to SVG, with its text kept as text
(found with the browser's search, read by screen readers; a font stack that falls back to
the reader's sans-serif), a ``<title>`` and a ``<desc>`` that summarise it from its data
(``role="img"``, ``aria-labelledby``), a fixed hash salt and no metadata (the same data
gives the same bytes), no fixed size (a ``viewBox``: the page's CSS scales it, up to
1.25 times its drawn size), and ids unique to the figure (several SVGs share one HTML
document).

Colours: :data:`MODEL_COLOURS` gives one colour per model (model A the same in every
run, never a colour of a direction; runs are told apart by line style and marker,
:class:`Series`), :data:`BETTER`, :data:`WORSE` and :data:`NEUTRAL` the direction of a
difference; every one has a contrast of at least 3:1
on white (WCAG's rule for graphics) and they are told apart with the common colour-vision
deficiencies (Okabe & Ito's colours); the figures never rely on colour alone (line styles,
marker fill, legend text).
"""

from __future__ import annotations

import functools
import io
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ParamSpec
from xml.sax.saxutils import escape, quoteattr

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe & Ito's blue, vermillion, bluish green, reddish purple and black: each at least
# 3:1 on white (their orange, sky blue and yellow are not, so they are left out).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000")
BETTER = "#009E73"  # B significantly better than A
WORSE = "#D55E00"  # B significantly worse
NEUTRAL = "#767676"  # no evidence of a difference
# The models' colours: the palette without the directions' (BETTER, WORSE).
MODEL_COLOURS = tuple(c for c in PALETTE if c not in (BETTER, WORSE))
# A run's line styles and markers, by its place on the page: model A's, model B's.
A_STYLES = ("-", "-.", (0, (8, 2)), (0, (1, 1)))
B_STYLES = ("--", ":", (0, (4, 1, 1, 1, 1, 1)), (0, (6, 1, 1, 1)))
A_MARKERS = ("o", "s", "^", "v")
B_MARKERS = ("D", "p", "h", "8")
GREY = "#8c8c8c"  # reference lines (chance, perfect calibration, zero)
PHONE_TEXT = 11.0  # px: a figure's smallest text on a phone, at the least
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
    "legend.fontsize": 9.0,
    "xtick.labelsize": 9.0,
    "ytick.labelsize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
    "svg.fonttype": "none",
}

_NORMAL = NormalDist()
SIGNIFICANCE = 0.05  # the q-value under which a tag's difference counts as significant


P = ParamSpec("P")


def styled(draw: Callable[P, str]) -> Callable[P, str]:
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


def new_figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


@dataclass(frozen=True)
class Series:
    """One model of one run in a figure: its legend label, colour (the model's), whether
    it is model B (``dashed``: dashed lines, hollow markers) and the run's place on the
    page (``run``: its line style and marker among the runs)."""

    label: str
    color: str
    dashed: bool = False
    run: int = 0

    @property
    def linestyle(self) -> Any:
        styles = B_STYLES if self.dashed else A_STYLES
        return styles[self.run % len(styles)]

    @property
    def marker(self) -> str:
        markers = B_MARKERS if self.dashed else A_MARKERS
        return markers[self.run % len(markers)]


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
    def drawn(self) -> Estimate:
        """The interval the plot draws: the 95% interval, or with a q-value the interval
        adjusted for the tags' false discovery rate (:func:`bh_adjusted`), so that a bar
        misses 0 exactly when the row is significant."""
        if self.q is None or self.p is None:
            return self.estimate
        return bh_adjusted(self.estimate, self.p, self.q)

    @property
    def significant(self) -> bool:
        """With a q-value, q < 0.05; otherwise the 95% interval excludes 0. Either way:
        the drawn interval excludes 0."""
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


def bh_adjusted(estimate: Estimate, p: float, q: float) -> Estimate:
    """The interval of a difference at level 1 - 0.05 p / q: Benjamini-Hochberg's q-value
    over the tags sets each test's level (q = p m / rank, so p / q = rank / m, the false
    coverage-rate adjusted level of Benjamini and Yekutieli), which misses 0 exactly when
    q < 0.05. Its half width is the 95% one's, moved along the normal quantiles between the
    two widths known exactly: the 95% half width, and |value| at level 1 - p."""
    value, low, high = estimate.value, estimate.low, estimate.high
    if (value is None or low is None or high is None or not 0 < p < 1 or not 0 < q
            or math.isnan(q) or p == SIGNIFICANCE):
        return estimate
    level = min(SIGNIFICANCE * p / q, SIGNIFICANCE)
    z95, zp, z = (-_NORMAL.inv_cdf(a / 2) for a in (SIGNIFICANCE, p, level))
    half95, at_p = (high - low) / 2, abs(value)
    half = at_p + (half95 - at_p) * (z - zp) / (z95 - zp)
    scale = half / half95 if half95 > 0 else 1.0
    return Estimate(value, value - (value - low) * scale, value + (high - value) * scale)


def plain(value: float) -> str:
    """A tick value as a short plain decimal (no exponent above 1e-5)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


# -- many values at once ---------------------------------------------------------------


@styled
def intervals(categories: Sequence[str],
              panels: Sequence[tuple[str, Sequence[tuple[Series, Sequence[Estimate]]]]],
              key: str, category: str = "tag") -> str:
    """A dot plot: one panel per measure (title, x label), one row per category (a
    ``category``: tag, slice), one dot per series with its 95% interval as a bar."""
    count = max((len(rows) for _, rows in panels), default=1)
    height = 1.2 + 0.3 * len(categories) * max(1.0, 0.55 * count)
    figure = new_figure(WIDTH * 1.2, height)
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
                            marker=series.marker, markersize=4.5,
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
    title = " and ".join(xlabel.split(":")[0] for xlabel, _ in panels) + f" by {category}"
    desc = (f"{title}: {len(categories)} {category}s with 95% intervals. "
            + "; ".join(summary) + ".")
    return svg(figure, key, title, desc)


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


def tick_decimals(ticks: Sequence[float]) -> int:
    """The fewest decimals (at most 8) that write every tick exactly: 0.025 needs 3."""
    for decimals in range(9):
        if all(abs(round(t, decimals) - t) <= 1e-9 * max(abs(t), 1e-12) + 1e-15
               for t in ticks):
            return decimals
    return 8


@styled
def differences(rows: Sequence[Difference], xlabel: str, key: str, over: str = "tags") -> str:
    """A forest plot of differences B - A, one row per difference from the top: its 95%
    interval as a bar, the colour its direction (:data:`BETTER`, :data:`WORSE`,
    :data:`NEUTRAL`), the marker filled when significant, hollow when not; on the right the
    value and its p- (or q-) value; the x axis fitted to the intervals and 0; the height
    grows with the rows. ``over``: what the q-values adjust over (tags, slices)."""
    height = 1.45 + 0.27 * max(len(rows), 1)
    figure = new_figure(WIDTH * 1.2, height)
    ax = figure.add_subplot()
    positions = list(range(len(rows)))[::-1]
    ax.axvline(0.0, color=GREY, linewidth=0.9, linestyle=":")
    ends = [0.0]
    right = []
    summary = []
    for y, row in zip(positions, rows, strict=True):
        if row.estimate.value is None:
            right.append("undefined")
            continue
        ends += _draw_difference(ax, y, row)
        right.append(_difference_label(row))
        summary.append(f"{row.label} {_estimate_text(row.estimate, signed=True)}, "
                       f"{_test_text(row)}, {row.direction}")
    _fit_difference_axis(ax, ends)
    if any(row.q is not None for row in rows):
        xlabel += (f". Bars: 95% intervals; rows with a q-value: adjusted over the {over} "
                   "(level 1 - 0.05 p/q, Benjamini-Hochberg)")
    _label_rows(ax, rows, positions, right, xlabel)
    _direction_legend(figure, rows)
    better = sum(r.direction == "better" for r in rows)
    worse = sum(r.direction == "worse" for r in rows)
    desc = (f"Differences B - A with 95% intervals: {len(rows)} rows, {better} significantly "
            f"better, {worse} significantly worse. " + "; ".join(summary) + ".")
    return svg(figure, key, "Differences B - A", desc)


DIRECTION_COLOURS = {"better": BETTER, "worse": WORSE, "no evidence": NEUTRAL}
DIRECTION_MEANING = {"better": "B better (significant)", "worse": "B worse (significant)",
                     "no evidence": "no evidence of a difference"}


def _draw_difference(ax: Any, y: float, row: Difference) -> list[float]:
    """One row of the forest plot (a defined difference); the x values it reaches."""
    estimate = row.drawn
    colour = DIRECTION_COLOURS[row.direction]
    ax.errorbar([estimate.value], [y], xerr=estimate.errors, color=colour,
                marker="o", markersize=6.5 if row.emphasis else 5.0, markeredgewidth=1.3,
                markerfacecolor=colour if row.significant else "white",
                elinewidth=2.0 if row.emphasis else 1.4, capsize=3, linestyle="none")
    return [v for v in (estimate.value, estimate.low, estimate.high) if v is not None]


def _test_text(row: Difference) -> str:
    """The row's q-value when it has one, else its p-value."""
    return _p_text(row.q, "q") if row.q is not None else _p_text(row.p)


def _difference_label(row: Difference) -> str:
    """The text right of a row: the difference to the digits its interval needs, its p-
    or q-value and the direction when significant."""
    estimate = row.estimate
    assert estimate.value is not None
    half = abs(estimate.value)
    if estimate.low is not None and estimate.high is not None:
        half = (estimate.high - estimate.low) / 2 or half
    text = _signed(estimate.value, half or 1e-4) + "  " + _test_text(row)
    return text + (f"  {row.direction}" if row.direction != "no evidence" else "")


def _fit_difference_axis(ax: Any, ends: Sequence[float]) -> None:
    """The x axis over ``ends`` (the values and bounds, and 0) with a margin, its ticks
    written to the digits their step needs."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    low, high = min(ends), max(ends)
    span = high - low or max(abs(high), 1e-3)
    low, high = low - 0.06 * span, high + 0.06 * span
    ticks = [t for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
             if low <= t <= high]
    decimals = tick_decimals(ticks)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(
        lambda value, _: "0" if abs(value) < 0.5 * 10 ** -decimals else f"{value:+.{decimals}f}")
    ax.set_xlim(low, high)


def _label_rows(ax: Any, rows: Sequence[Difference], positions: Sequence[int],
                right: Sequence[str], xlabel: str) -> None:
    """The rows' labels on the left (the emphasised in bold), ``right`` on the right."""
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


def _direction_legend(figure: Figure, rows: Sequence[Difference]) -> None:
    """A legend of the directions the rows have, above the plot."""
    from matplotlib.lines import Line2D

    present = [d for d in ("better", "worse", "no evidence") if any(r.direction == d for r in rows)]
    handles = [Line2D([], [], color=DIRECTION_COLOURS[d], marker="o", markersize=5.0,
                      linestyle="none",
                      markerfacecolor="white" if d == "no evidence" else DIRECTION_COLOURS[d],
                      label=DIRECTION_MEANING[d]) for d in present]
    if handles:
        figure.legend(handles=handles, loc="outside upper center", ncols=len(handles),
                      frameon=False)


def _legend(figure: Figure, series: Sequence[Series]) -> None:
    if len(series) < 2:
        return
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=s.color, marker=s.marker,
                                markerfacecolor="white" if s.dashed else s.color,
                                linestyle="none", label=s.label)
        for s in series
    ]
    figure.legend(handles=handles, loc="outside upper center", ncols=min(len(handles), 4),
                  frameon=False)


_HASHED_ID = re.compile(r'(id="|url\(#|href="#)([pmh])([0-9a-f]{10})(?=[")])')


def _numbered_ids(text: str) -> str:
    """matplotlib's hashed ids (``p`` clip paths, ``m`` markers, ``h`` hatches) renamed
    by their order in the figure: a clip path's hash is taken of its rectangle's floats
    to the last bit, which a layout solver's last-bit differences between machines change
    while every drawn coordinate (6 decimals) stays the same."""
    numbers: dict[str, str] = {}

    def numbered(match: re.Match[str]) -> str:
        kind, digest = match.group(2), match.group(3)
        name = numbers.setdefault(kind + digest, f"{kind}{len(numbers)}")
        return match.group(1) + name

    return _HASHED_ID.sub(numbered, text)


def svg(figure: Figure, key: str, title: str, desc: str) -> str:
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
    text = _numbered_ids(text)
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", key)
    text = re.sub(r'id="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r'(href|xlink:href)="#([^"]+)"', rf'\1="#{prefix}-\2"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
    opening = re.match(r"<svg[^>]*>", text)
    assert opening is not None
    tag = re.sub(r' (width|height)="[^"]*"', "", opening.group(0))
    labelled = quoteattr(f"{prefix}-title {prefix}-desc")
    # At most a quarter above its drawn size (96 px an inch), so a figure alone on a row
    # of a wide screen keeps text of a normal size; narrower screens scale it down, a phone
    # no further than its smallest text's PHONE_TEXT px (--phone: the page's style).
    largest = round(figure.get_figwidth() * 96 * 1.25)
    sizes = [float(size) for size in re.findall(r"font-size: ?([0-9.]+)px", text)]
    phone = math.ceil(PHONE_TEXT * figure.get_figwidth() * 72 / min(sizes)) if sizes else 0
    tag = (tag[:-1] + f' role="img" aria-labelledby={labelled}'
           f' style="max-width: min(100%, {largest}px); --phone: {phone}px">')
    accessible = (f'\n <title id="{prefix}-title">{escape(title)}</title>'
                  f'\n <desc id="{prefix}-desc">{escape(desc)}</desc>')
    return tag + accessible + text[opening.end():]

