"""A metric's slices on a report page (``--slice``: each kind's block gains ``slices``,
keyed ``COL=VALUE`` or ``a=x*b=y``, each the kind's block over those rows, or a too small
slice's counts with ``"too_small": true``), shown as tags are: in the summary the slices
where B is significantly better or worse (the worst first, by name, with their effect and
q over the slices of their column), and per slice column a figure of the kind's headline
value (with ``--compare`` a forest plot of B - A, bars adjusted over the column's slices)
and a table of every slice, too small ones named but not drawn.

What a kind shows of a slice is its section's
:class:`~mpieval.report.section.SliceView`; this module names no kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mpieval.report import figures
from mpieval.report.figures import Difference
from mpieval.report.html import (
    Q_LEVEL,
    cell,
    difference,
    difference_cell,
    escape,
    estimate,
    is_number,
    value_text,
)
from mpieval.report.runs import Run
from mpieval.report.section import Section, SliceView
from mpieval.report.tags import (
    DRAWN_TAGS,
    differing,
    differs,
    drawn_tags,
    significant,
    tag_tables,
    where_listed,
)

if TYPE_CHECKING:
    from mpieval.report.page import Model, Page

CROSS = "*"
TOO_SMALL = ("too small to measure: fewer rows than <code>--min-slice-rows</code>; its "
             "counts only")


def column_of(name: str) -> str:
    """The column (or cross ``a*b``) of a slice's name: ``country=US`` -> ``country``,
    ``a=x*b=y`` -> ``a*b``."""
    return CROSS.join(part.partition("=")[0] for part in name.split(CROSS))


def slices_of(run: Run, name: str) -> dict[str, dict[str, Any]]:
    """The slices of metric ``name`` of ``run`` ({} without)."""
    found = run.metrics[name].get("slices")
    return found if isinstance(found, dict) else {}


def columns(runs: Sequence[Run], name: str) -> dict[str, list[str]]:
    """Each slice column (in the order met) and its slices over ``runs``: the most rows
    first, ties by name."""
    rows: dict[str, float] = {}
    for run in runs:
        for slice_name, block in slices_of(run, name).items():
            count = _rows(block)
            rows[slice_name] = max(rows.get(slice_name, 0.0), count if count is not None else 0)
    found: dict[str, list[str]] = {}
    for slice_name in rows:
        found.setdefault(column_of(slice_name), []).append(slice_name)
    return {column: sorted(names, key=lambda n: (-rows[n], n))
            for column, names in found.items()}


def _rows(block: dict[str, Any]) -> float | None:
    value = block.get("rows")
    return float(value) if is_number(value) else None


def too_small(block: dict[str, Any] | None) -> bool:
    return block is not None and block.get("too_small") is True


def _values(view: SliceView, block: dict[str, Any]) -> dict[str, Any]:
    """The block of a slice's values (``{}`` for a too small one or a layout the view
    does not read)."""
    if too_small(block):
        return {}
    try:
        return view.values(block)
    except (KeyError, StopIteration, TypeError):
        return {}


# -- the summary -------------------------------------------------------------------------


def summary_lines(page: Page, name: str, runs: Sequence[Run], section: Section) -> list[str]:
    """Per run and slice column, how many slices and how many too small; per compared run
    and column, the slices where B is significantly better or worse (q over the column's
    slices), the worst first."""
    view = section.slices
    lines = []
    for run in runs:
        slices = slices_of(run, name)
        if not slices:
            continue
        prefix = f"{escape(run.label)}: " if len(page.runs) > 1 else ""
        for column, names in columns([run], name).items():
            small = [n for n in names if too_small(slices[n])]
            text = (f"{prefix}slices by <code>{escape(column)}</code>: {len(names):,}"
                    + (f" ({len(small):,} too small to measure)" if small else ""))
            if view is not None and view.fields:
                text += _count_differing(view, {n: slices[n] for n in names})
            lines.append(text)
            if view is None:
                continue
            blocks = {n: _values(view, slices[n]) for n in names}
            label = (f"{escape(run.label)}: B \u2212 A" if len(page.runs) > 1 else "B \u2212 A")
            lines += differing(f"{label} by <code>{escape(column)}</code>", blocks,
                               dict(view.fields), section.declaration, skip=())
    return lines


def _count_differing(view: SliceView, slices: dict[str, dict[str, Any]]) -> str:
    """``; B differs at q < 0.05 in 2 of 9 measured`` ('' when no slice is compared)."""
    measured = [_values(view, block) for block in slices.values() if not too_small(block)]
    compared = [block["compare"] for block in measured
                if isinstance(block.get("compare"), dict)]
    if not compared:
        return ""
    fields = [field for field, _ in view.fields]
    count = sum(1 for c in compared if differs(c, fields))
    return f"; B differs at q &lt; {Q_LEVEL} in {count} of {len(compared)} measured"


# -- the section -------------------------------------------------------------------------


def section_html(page: Page, name: str, runs: Sequence[Run], section: Section) -> str:
    """Per slice column, the figure of the headline value and the table of every slice
    ('' when no run has slices)."""
    found = columns(runs, name)
    if not found:
        return ""
    view = section.slices
    parts = ["<h3>Slices</h3>"]
    if view is None or not view.fields:
        parts.append("<p class=small>This version of the report does not draw this kind's "
                     "slices: " + ", ".join(escape(n) for names in found.values()
                                             for n in names) + ".</p>")
        return "".join(parts)
    # each run's slices' value blocks, and those where B differs: read once for every column
    per_run = [{n: _values(view, block) for n, block in slices_of(run, name).items()}
               for run in runs]
    kept = significant(per_run, [field for field, _ in view.fields])
    for column, names in found.items():
        parts.append(f"<h4>By <code>{escape(column)}</code></h4>")
        parts.append(_figures(page, name, runs, section, view, column, names, per_run))
        parts.append(tag_tables(names, names[:DRAWN_TAGS],
                                lambda shown: _table(page, name, runs, section, view, shown),
                                what="slices", kept=kept))
    parts.append("<p class=small>Each slice: the metric over the rows of that value (of that "
                 "pair of values for a cross), with its 95% interval; B \u2212 A: the paired "
                 "difference with its interval, p-value and q-value (Benjamini-Hochberg over "
                 "the slices of the column). A slice " + TOO_SMALL + ".</p>")
    return "".join(parts)


def _figures(page: Page, name: str, runs: Sequence[Run], section: Section, view: SliceView,
             column: str, names: Sequence[str], per_run: Sequence[dict[str, dict[str, Any]]]
             ) -> str:
    """The dot plot of the headline value per slice (each model with its interval) and,
    with --compare, the forest plot of B - A of it; too small slices named, not drawn.
    ``per_run``: each run's slices' value blocks (:func:`_values`)."""
    field, what = view.fields[0]
    drawn = drawn_tags(names, per_run, [field], lambda values: field not in values)
    small = [n for n in names if all(too_small(slices_of(run, name).get(n))
                                     for run in runs if n in slices_of(run, name))]
    out = []
    if drawn:
        models = _models(page, name, runs, view)
        panels = [(f"{what}", [(model.series, [estimate(_model_block(model, blocks, n), field)
                                               for n in drawn])
                               for model, blocks in models])]
        svg = figures.intervals(drawn, panels, page.key(name, f"slices-{column}"),
                                category="slice")
        caption = (f"{escape(what)} per slice of <code>{escape(column)}</code> with its 95% "
                   "interval.")
        if len(drawn) < len(names) - len(small):
            caption += (f" {len(drawn)} of {len(names) - len(small)} measured slices drawn: "
                        "the largest and the most significant differences; "
                        f"{where_listed(len(names), 'slices', 'the table')}.")
        if any(model.is_b for model, _ in models):
            caption += " Filled markers: model A; open markers: model B."
        out.append(page.figure(svg, caption + _small_text(small), wide=True))
        rows = _differences(page, name, runs, view, field, drawn, section)
        if rows:
            out.append(page.differences(name, rows, what, over=f"slices of {column}"))
    elif small:
        out.append(f"<p class=small>No slice of <code>{escape(column)}</code> to draw."
                   f"{_small_text(small)}</p>")
    return f"<div class=figures>{''.join(out)}</div>" if out else ""


def _small_text(small: Sequence[str]) -> str:
    if not small:
        return ""
    return (" Too small to measure, not drawn: " + ", ".join(escape(n) for n in small)
            + " (fewer rows than <code>--min-slice-rows</code>).")


def _models(page: Page, name: str, runs: Sequence[Run], view: SliceView
            ) -> list[tuple[Model, dict[str, dict[str, Any]]]]:
    """The models of the runs (their colours the page's) and each run's slices' values."""
    out = []
    for model in page.models([(run, _values(view, run.metrics[name])) for run in runs]):
        blocks = {n: _values(view, block) for n, block in slices_of(model.run, name).items()}
        out.append((model, blocks))
    return out


def _model_block(model: Model, blocks: dict[str, dict[str, Any]], name: str
                 ) -> dict[str, Any] | None:
    """A model's values in a slice: A's block, or B's (the slice's compare block)."""
    block = blocks.get(name)
    if not block:
        return None
    if model.is_b:
        compare = block.get("compare")
        return compare if isinstance(compare, dict) else None
    return block


def _differences(page: Page, name: str, runs: Sequence[Run], view: SliceView, field: str,
                 drawn: Sequence[str], section: Section) -> list[Difference]:
    """B - A of ``field`` in each drawn slice of each run, where it has an interval."""
    higher = section.declaration.direction(field) != "lower"
    rows = []
    for run in runs:
        for slice_name in drawn:
            compare = _values(view, slices_of(run, name).get(slice_name) or {}).get("compare")
            label = slice_name + (f" · {run.label}" if len(page.runs) > 1 else "")
            row = difference(label, compare, field, higher_is_better=higher)
            if row is not None:
                rows.append(row)
    return rows


def _table(page: Page, name: str, runs: Sequence[Run], section: Section, view: SliceView,
           shown: Sequence[str]) -> str:
    """One row per slice and run: its rows, each of the view's values (A; B and B - A
    when compared); a too small slice says so."""
    several = len(runs) > 1
    compared = any(isinstance(_values(view, block).get("compare"), dict)
                   for run in runs for block in slices_of(run, name).values())
    head = ["Slice", *(["Run"] if several else []), "Rows"]
    for _, what in view.fields:
        head += [f"{what} A", f"{what} B", f"{what} B \u2212 A"] if compared else [what]
    rows, classes = [], []
    for slice_name in shown:
        first = True
        for run in runs:
            block = slices_of(run, name).get(slice_name)
            if block is None:
                continue
            values = _values(view, block)
            cells = [escape(slice_name) if first else "",
                     *([escape(run.label)] if several else []),
                     value_text(block.get("rows"), "rows", counts={"rows"})]
            if too_small(block):
                width = len(head) - len(cells)
                cells += [f"<span class=undefined>{TOO_SMALL}</span>", *[""] * (width - 1)]
            else:
                b = values.get("compare") if isinstance(values.get("compare"), dict) else None
                for field, _ in view.fields:
                    cells.append(cell(values, field, compact=True, counts=page.counts))
                    if compared:
                        cells.append(cell(b, field, compact=True) if b else "")
                        cells.append(difference_cell(values, b, field, compact=True)
                                     if b else "")
            rows.append(cells)
            classes.append("group" if first and several else "")
            first = False
    return page.table("tags", head, rows, left=(0, 1) if several else (0,),
                      row_classes=classes, label=f"{name}: slices")
