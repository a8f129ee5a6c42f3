"""The HTML that every section of a report page shares: values, intervals, p- and
q-values, differences B - A and the summary's sentences, as text. Pure functions of the
JSON's values, knowing no kind.

A field's name decides one thing here: a count (``counts``, the fields a kind declares as
counts: :attr:`mpieval.declaration.Kind.counts`) is written with thousands separators.
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection
from typing import Any, TypeGuard

from mpieval.kernels.stats import MIN_CLUSTERS
from mpieval.report.figures import Difference, Estimate

# What the page says of statistics a run does not have.
OLDER = "(written by an older mpieval, or without the statistics)"
# A difference between models, or a tag's, counts as significant below this q-value.
Q_LEVEL = 0.05
ABSENT = "<span class=absent title='not in this run'>·</span>"
UNDEFINED = "<span class=undefined>undefined</span>"


def escape(text: str) -> str:
    return html.escape(str(text), quote=True)


def anchor(name: str) -> str:
    """The id of a metric's section."""
    return "m-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def pair(value: Any) -> tuple[float | None, float | None]:
    """A ``[low, high]`` of the JSON as a tuple; (None, None) for null."""
    return (value[0], value[1]) if isinstance(value, list) else (None, None)


def difference(label: str, compare: Any, field: str, **options: Any) -> Difference | None:
    """The forest plot's row of ``field``'s B - A in a ``compare`` block (its ``_diff``,
    ``_diff_ci95``, ``_diff_p`` and ``_diff_q``), or None without a difference and its
    interval. ``options``: :class:`Difference`'s ``higher_is_better`` and ``emphasis``."""
    if not isinstance(compare, dict) or not is_number(compare.get(f"{field}_diff")):
        return None
    low, high = pair(compare.get(f"{field}_diff_ci95"))
    if low is None or high is None:
        return None
    return Difference(label, Estimate(compare[f"{field}_diff"], low, high),
                      compare.get(f"{field}_diff_p"), compare.get(f"{field}_diff_q"), **options)


def estimate(block: dict[str, Any] | None, field: str) -> Estimate:
    """A value of ``block`` and its 95% interval, for a figure."""
    if block is None:
        return Estimate(None)
    low, high = pair((block.get("ci95") or {}).get(field))
    return Estimate(block.get(field), low, high)


# -- values ------------------------------------------------------------------------------


def p_text(p: float | None) -> str:
    """A two-sided p-value as the page prints it."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p undefined"
    if p < 1e-4:
        return "p < 0.0001"
    return f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


def q_text(q: float | None) -> str:
    """A Benjamini-Hochberg q-value as the page prints it."""
    if q is None or (isinstance(q, float) and math.isnan(q)):
        return "q undefined"
    return "q < 0.0001" if q < 1e-4 else f"q = {q:.2g}" if q < 0.01 else f"q = {q:.2f}"


def value_text(value: Any, field: str = "", signed: bool = False, digits: int = 6, *,
               counts: Collection[str] = ()) -> str:
    """A value: ``undefined`` for null, a count (``field`` in ``counts``) with thousands
    separators, else ``digits`` significant digits (4 and a sign when ``signed``)."""
    if value is None:
        return "<span class=undefined title='undefined for this data (null in the JSON)'>" \
               "undefined</span>"
    if isinstance(value, str):
        return escape(value)
    if field in counts and float(value).is_integer():
        return f"{int(value):,}"
    if field in counts:
        return f"{value:,.1f}"
    return f"{value:+.4g}" if signed else f"{value:.{digits}g}"


def interval_text(low: float | None, high: float | None, present: bool = True,
                  signed: bool = False, digits: int = 6) -> str:
    if not present:
        return ""
    if low is None or high is None:
        return UNDEFINED
    return f"{low:+.4g} to {high:+.4g}" if signed else f"{low:.{digits}g} to {high:.{digits}g}"


def interval_cell(low: float | None, high: float | None, compact: bool,
                  signed: bool = False) -> str:
    """An interval under a value: ``95%: low to high``, or compact ``[low, high]``."""
    if not compact or low is None or high is None:
        return f"95%: {interval_text(low, high, signed=signed)}"
    sign = "+" if signed else ""
    return f"[{low:{sign}.4g}, {high:{sign}.4g}]"


def cell(block: dict[str, Any], field: str, compact: bool = False, *,
         counts: Collection[str] = ()) -> str:
    """A value, and its 95% interval below it when the block has one; ``compact`` (the
    tags' tables): 4 significant digits and the interval as ``[low, high]``."""
    if field not in block:
        return ABSENT
    text = value_text(block[field], field, digits=4 if compact else 6, counts=counts)
    intervals = block.get("ci95")
    if isinstance(intervals, dict) and field in intervals:
        low, high = pair(intervals[field])
        text += f"<span class=ci>{interval_cell(low, high, compact)}</span>"
    return text


def ratio_text(block: dict[str, Any], part: str, whole: str, *,
               counts: Collection[str] = ()) -> str:
    """``part / whole`` of two values of ``block``."""
    if part not in block and whole not in block:  # e.g. model B's block: A's counts
        return ABSENT
    return (f"{value_text(block.get(part), part, counts=counts)} / "
            f"{value_text(block.get(whole), whole, counts=counts)}")


def too_few(users: Any) -> bool:
    """Fewer valid users (a count) than a per-user interval needs (``MIN_CLUSTERS``)."""
    return is_number(users) and users < MIN_CLUSTERS


def too_few_text(users: Any) -> str:
    return (f"<span class=ci title='an interval needs {MIN_CLUSTERS} valid users'>too few "
            f"users ({users} valid)</span>")


def tag_cell(values: dict[str, Any], field: str, users: Any, *,
             counts: Collection[str] = ()) -> str:
    """A per-user value of a tag (compact) whose tag has ``users`` valid users: its
    interval below, or "too few users" when they are fewer than an interval needs."""
    if field in values and too_few(users) and values.get(field) is not None:
        return value_text(values[field], field, digits=4, counts=counts) + too_few_text(users)
    return cell(values, field, compact=True, counts=counts)


# -- differences B - A -------------------------------------------------------------------


def difference_cell(a: dict[str, Any], b: dict[str, Any], field: str,
                    compact: bool = False, *, counts: Collection[str] = ()) -> str:
    """B - A of a value: the paired difference with its interval and p-value when B's
    block has them (``FIELD_diff``), else the plain difference of the two values."""
    if f"{field}_diff" in b:
        return _paired_difference(b, field, compact)
    if is_number(a.get(field)) and is_number(b.get(field)) and field not in counts:
        return value_text(b[field] - a[field], signed=True)
    return ABSENT


def _paired_difference(b: dict[str, Any], field: str, compact: bool) -> str:
    """``FIELD_diff`` of B's block, its interval and its p- and q-values below it."""
    low, high = pair(b.get(f"{field}_diff_ci95"))
    text = value_text(b[f"{field}_diff"], signed=True)
    if f"{field}_diff_ci95" in b:
        text += f"<span class=ci>{interval_cell(low, high, compact, signed=True)}</span>"
    tests = [p_text(b[f"{field}_diff_p"])] if f"{field}_diff_p" in b else []
    if f"{field}_diff_q" in b:
        tests.append(q_text(b[f"{field}_diff_q"]))
    if tests:
        text += f"<span class=ci>{escape(', '.join(tests))}</span>"
    return text


def difference_digits(low: float | None, high: float | None) -> int:
    """Decimals for a difference: 4, more when its interval is narrower (two significant
    digits of the half-width), at most 6."""
    if low is None or high is None or high <= low:
        return 4
    half = (high - low) / 2
    return max(4, min(6, 1 - math.floor(math.log10(half))))


# -- the summary's sentences ---------------------------------------------------------------


def headline(block: dict[str, Any], field: str, name: str, *,
             counts: Collection[str] = ()) -> str:
    """``NAME 0.6845 (95% 0.6802 to 0.6887)``, as the summary says a value."""
    if field not in block:
        return ""
    value = block[field]
    if value is None:
        return f"{name} {UNDEFINED}"
    shown = value_text(value, field, counts=counts) if field in counts else f"{value:#.4g}"
    text = f"{name} {shown}"
    intervals = block.get("ci95")
    if isinstance(intervals, dict) and field in intervals:
        low, high = pair(intervals[field])
        text += (f" (95% {low:#.4g} to {high:#.4g})" if low is not None and high is not None
                 else " (95% interval undefined)")
    return text


def judgement(compare: dict[str, Any], field: str, better: str = "higher",
              a_value: Any = None) -> str:
    """Whether B is ``"better"`` or ``"worse"`` than A in ``field`` (its paired 95%
    interval of B - A in ``compare`` excludes 0), ``"no evidence"`` (it holds 0), or ``""``
    (no interval). ``better``: ``"higher"``, ``"lower"`` or ``"one"`` (closest to 1: B's
    value ``compare[field]`` against A's ``a_value``)."""
    value = compare.get(f"{field}_diff")
    low, high = pair(compare.get(f"{field}_diff_ci95"))
    if not is_number(value) or low is None or high is None:
        return ""
    if low <= 0 <= high:
        return "no evidence"
    if better == "one":
        b_value = compare.get(field)
        if not (is_number(a_value) and is_number(b_value)):
            return ""
        return "better" if abs(b_value - 1) < abs(a_value - 1) else "worse"
    return "better" if (value > 0) == (better == "higher") else "worse"


def verdict(compare: dict[str, Any], field: str, name: str, better: str = "higher",
            a_value: Any = None) -> str:
    """``NAME +0.0040 (95% +0.0017 to +0.0063, p = 0.0006) B better``: B - A with its paired
    interval and p-value, the digits set by the interval's width; with the direction in
    words (:func:`judgement`: ``better`` says which way the value is better)."""
    value = compare.get(f"{field}_diff")
    if not is_number(value):
        return f"{name} {UNDEFINED}"
    low, high = pair(compare.get(f"{field}_diff_ci95"))
    digits = difference_digits(low, high)
    inside = []
    if low is not None and high is not None:
        inside.append(f"95% {low:+.{digits}f} to {high:+.{digits}f}")
    else:
        inside.append("95% interval undefined")
    if f"{field}_diff_p" in compare:
        inside.append(p_text(compare[f"{field}_diff_p"]))
    text = f"{name} {value:+.{digits}f} ({', '.join(inside)})"
    said = judgement(compare, field, better, a_value)
    if said in ("better", "worse"):
        return text + f" <span class={said}>B {said}</span>"
    return text + " <span class=neutral>no evidence of a difference</span>"


def q_count(tags: dict[str, dict[str, Any]], field: str) -> str:
    """``k of n tags differ at q < 0.05`` over the tags (``all`` aside) of a compared
    metric, and how many had too few users to test."""
    compared = {tag: values["compare"] for tag, values in tags.items()
                if tag != "all" and isinstance(values.get("compare"), dict)}
    if not compared or not any(f"{field}_diff_q" in c for c in compared.values()):
        return ""
    qs = [c.get(f"{field}_diff_q") for c in compared.values()]
    significant = sum(1 for q in qs if is_number(q) and q < Q_LEVEL)
    untested = sum(1 for q in qs if not is_number(q))
    text = f"{significant} of {len(compared)} tags differ at q &lt; {Q_LEVEL}"
    if untested:
        text += f" ({untested} of them untested: too few users)"
    return text


def weighting_text(spec: dict[str, Any], rows: Any = None) -> str:
    """A metric's weights as the page states them: the column, their meaning, the rows
    and the weights' sum."""
    meaning = spec.get("meaning", "frequency")
    what = {"frequency": "frequency weights: a row of weight w counts as w rows, in the "
                         "values and in their intervals",
            "importance": "importance weights (inverse sampling rates): a row of weight w "
                          "stands for w rows in the values; the intervals count each class's "
                          "effective size, (sum w)^2 / sum w^2"}.get(
        str(meaning), f"weights meaning {escape(str(meaning))}")
    total = spec.get("sum")
    counted = ", ".join(part for part in (
        f"{rows:,} rows" if is_number(rows) else "",
        f"weights summing to {total:,.6g}" if is_number(total) else "") if part)
    column = escape(str(spec.get("column", "?")))
    return f"column <code>{column}</code> ({what}){'; ' + counted if counted else ''}"
