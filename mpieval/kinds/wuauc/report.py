"""The ``wuauc`` kind on a report page: its summary lines and its section, WUAUC and UAUC
per tag with their intervals as a dot plot (at most :data:`~mpieval.report.tags.DRAWN_TAGS`
tags: the largest and the most significant), a table of the tags' values, users and rows
(tags by rows; those not drawn in a table that opens on demand), and with ``--compare``
the differences B - A per tag as forest plots. Its sane ranges: WUAUC and UAUC above 0.5,
COPC in [0.8, 1.25]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.kinds.wuauc import KIND
from mpieval.report import figures, verdicts
from mpieval.report.figures import Difference
from mpieval.report.html import (
    OLDER,
    cell,
    difference,
    difference_cell,
    escape,
    estimate,
    q_count,
    ratio_text,
    tag_cell,
    too_few,
    value_text,
)
from mpieval.report.page import Model, Page
from mpieval.report.runs import Run
from mpieval.report.section import Flag, Section, SliceView
from mpieval.report.tags import (
    differing,
    drawn_tags,
    ordered_tags,
    significant,
    tag_tables,
    where_listed,
)
from mpieval.report.verdicts import Family

TAG_FIELDS = ("wuauc", "uauc", "logloss", "copc")
PER_USER = ("wuauc", "uauc")  # the fields with per-user intervals and paired differences
NAMES = {"wuauc": "WUAUC", "uauc": "UAUC", "logloss": "LogLoss", "copc": "COPC"}
HEADLINE = tuple((field, NAMES[field]) for field in ("wuauc", "uauc", "copc"))
PANELS = (("wuauc", "WUAUC (users' AUC, weighted by rows)"),
          ("uauc", "UAUC (mean of users' AUC)"))
# What decides between two models (B - A), in the verdict's order.
FAMILIES = (
    Family("ranking", (("wuauc", "WUAUC"), ("uauc", "UAUC")), "ranks better", "ranks worse"),
    Family("calibration", (("copc", "COPC"),), "is better calibrated", "is worse calibrated",
           lambda a, b: verdicts.prediction_ratio(a.get("copc"), b.get("copc"))),
    Family("loss", (("logloss", "LogLoss"),), "has a lower loss", "has a higher loss"),
)
COPC_RANGE = (0.8, 1.25)
FLAGS = (
    Flag(("copc",), lambda value, _: not COPC_RANGE[0] <= value <= COPC_RANGE[1],
         f"COPC outside [{COPC_RANGE[0]}, {COPC_RANGE[1]}]: miscalibrated"),
    Flag(PER_USER, lambda value, _: value <= 0.5, "{FIELD} ≤ 0.5: no better than random"),
)
TABLE_NOTE = ("<p class=small>Under a value: its 95% interval [low, high]. A user is valid "
              "when their rows hold both a click and a "
              "non-click (their AUC is defined); LogLoss is in nats per row over all rows; "
              "COPC = actual CTR / predicted CTR.")
COMPARED_NOTE = (" B \u2212 A: the paired difference by user with its interval, p-value and "
                 "the tag's q-value (Benjamini-Hochberg over the tags).")


def _users(values: dict[str, Any]) -> Any:
    return values.get("valid_user_count")


def _too_few(values: dict[str, Any]) -> bool:
    """A tag with fewer valid users than a per-user interval needs."""
    return too_few(_users(values))


def _overall(run: Run, name: str) -> dict[str, Any]:
    return _overall_block(run.metrics[name])


def _overall_block(metric: dict[str, Any]) -> dict[str, Any]:
    """The block of every row (``all``), else the first tag's."""
    tags: dict[str, dict[str, Any]] = metric["tags"]
    return tags.get("all") or next(iter(tags.values()))


# -- the summary -------------------------------------------------------------------------


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """Per model, the values over every row (``all``); per compared run the verdict B - A
    and how many tags differ."""
    lines = []
    a_block: dict[str, Any] = {}
    for model in page.models([(run, _overall(run, name)) for run in runs]):
        lines.append(_model_line(page, name, model))
        if model.is_b:
            lines += _compared_lines(page, name, model, a_block)
        else:
            a_block = model.block
    return lines


def _model_line(page: Page, name: str, model: Model) -> str:
    block = model.block
    base = page.baseline_block(name, model)
    if base is not None:
        base = _overall_block(base)
        if model.is_b and base.get("compare"):
            base = base["compare"]
    scope = "all rows" if "all" in model.run.metrics[name]["tags"] else "first tag"
    line = f"{escape(model.series.label)} ({scope}): " + page.headlines(block, HEADLINE, base)
    return line + "".join(f"<span class=flag>⚠ {flag}</span>"
                          for flag in SECTION.flag_texts(block, ("wuauc", "uauc", "copc")))


def _compared_lines(page: Page, name: str, model: Model, a_block: dict[str, Any]) -> list[str]:
    """B - A over every row, how many tags differ, and the tags where B is significantly
    better or worse, by name."""
    label = page.compared_label(model)
    lines = verdicts.lines(KIND, label, a_block, model.block, FAMILIES)
    tags = model.run.metrics[name]["tags"]
    counts = [f"{NAMES[field]} {text}" for field in PER_USER if (text := q_count(tags, field))]
    if counts:
        lines.append(f"<b>{label} by tag</b>: " + "; ".join(counts))
    lines += _differing_tags(label, tags)
    return lines


def _differing_tags(label: str, tags: dict[str, dict[str, Any]]) -> list[str]:
    """The tags (``all`` aside) where B is significantly worse, then better, at q < 0.05
    (:func:`mpieval.report.tags.differing`)."""
    return differing(label, tags, NAMES, KIND)


# -- the section -------------------------------------------------------------------------


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The dot plot of the drawn tags, the tags' tables, B against A per tag."""
    all_tags = [run.metrics[name]["tags"] for run in runs]
    tags = ordered_tags(all_tags, "real_ins_num")
    models = page.models([(run, _overall(run, name)) for run in runs])
    notes = []
    without = [run.label for run in runs
               if not any("ci95" in v for v in run.metrics[name]["tags"].values())]
    if without:
        notes.append(f"No intervals in {escape(', '.join(without))} {OLDER}.")
    drawn = drawn_tags(tags, all_tags, PER_USER, _too_few)
    parts = []
    if drawn:
        parts.append(_dots(page, name, models, tags, drawn, intervals=not without))
    parts.append(tag_tables(tags, drawn, lambda shown: tag_table(page, name, shown, runs),
                            kept=significant(all_tags, NAMES)))
    if any(_too_few(values) for tb in all_tags for values in tb.values()):
        notes.append("Tags with too few valid users for an interval (fewer than the "
                     "statistics' minimum) are not drawn; the tables say so.")
    forests = [page.differences(name, _differences(page, name, runs, drawn, field),
                                NAMES[field]) for field in PER_USER]
    if any(forests):
        parts.append(f"<h3>B against A</h3><div class=figures>{''.join(forests)}</div>")
    return "".join(parts), notes


def _tag_blocks(model: Model, name: str) -> dict[str, dict[str, Any]]:
    """The model's block of each tag (B's: the tag's compare block with A's users)."""
    tags = model.run.metrics[name]["tags"]
    if not model.is_b:
        return dict(tags)
    return {tag: {**values["compare"], "valid_user_count": _users(values)}
            for tag, values in tags.items() if values.get("compare") is not None}


def _dots(page: Page, name: str, models: Sequence[Model], tags: Sequence[str],
          drawn: Sequence[str], intervals: bool) -> str:
    """The dot plot of WUAUC and UAUC of the drawn tags, each model a series."""
    per_model = [(model, _tag_blocks(model, name)) for model in models]
    panels = [(xlabel, [(model.series, [estimate(blocks.get(tag), field) for tag in drawn])
                        for model, blocks in per_model])
              for field, xlabel in PANELS]
    svg = figures.intervals(drawn, panels, page.key(name, "tags"))
    caption = "WUAUC and UAUC per tag"
    if intervals:
        caption += " with their 95% intervals (users as independent clusters)"
    caption += "; \"all\" covers every row."
    if len(drawn) < len(tags):
        caption += (f" {len(drawn)} of {len(tags)} tags drawn: the largest by rows and "
                    f"the most significant differences; {where_listed(len(tags))}.")
    if any(m.is_b for m in models):
        caption += " Filled dots: model A; open diamonds: model B."
    return f"<div class=figures>{page.figure(svg, caption, wide=True)}</div>"


def _differences(page: Page, name: str, runs: Sequence[Run], drawn: Sequence[str],
                 field: str) -> list[Difference]:
    """B - A of ``field`` of each drawn tag of each run, where it has an interval."""
    rows = []
    for run in runs:
        for tag in drawn:
            values = run.metrics[name]["tags"].get(tag) or {}
            if _too_few(values):
                continue
            label = tag + (f" · {run.label}" if len(page.runs) > 1 else "")
            row = difference(label, values.get("compare"), field, emphasis=tag == "all")
            if row is not None:
                rows.append(row)
    return rows


# -- the tags' table ---------------------------------------------------------------------


def tag_table(page: Page, name: str, tags: Sequence[str], runs: Sequence[Run]) -> str:
    """One row per tag (and run): WUAUC and UAUC of A, of B and B - A with --compare, A's
    LogLoss and COPC, the users and rows; values of later runs with their change against
    the baseline's."""
    several = len(runs) > 1
    compared = any(values.get("compare") for run in runs
                   for values in run.metrics[name]["tags"].values())
    base_tags = (page.baseline.metrics.get(name) or {}).get("tags", {}) \
        if page.baseline is not None else {}
    rows, classes = [], []
    for tag in tags:
        first = True
        for run in runs:
            a = run.metrics[name]["tags"].get(tag)
            if a is None:
                continue
            base = base_tags.get(tag) if run is not page.baseline else None
            rows.append([escape(tag) if first else "",
                         *([escape(run.label)] if several else []),
                         *_tag_cells(page, a, base, compared)])
            classes.append("group" if first and several else "")
            first = False
    return (page.table("tags", _tag_head(several, compared), rows,
                       left=(0, 1) if several else (0,), row_classes=classes)
            + TABLE_NOTE + (COMPARED_NOTE if compared else "") + "</p>")


def _tag_head(several: bool, compared: bool) -> list[str]:
    head = ["Tag", *(["Run"] if several else []), "Valid users / all", "Rows"]
    for field in PER_USER:
        head += [f"{NAMES[field]} A", f"{NAMES[field]} B", f"{NAMES[field]} B \u2212 A"] \
            if compared else [NAMES[field]]
    return head + [f"{NAMES[field]}{' A' if compared else ''}" for field in TAG_FIELDS
                   if field not in PER_USER]


def _tag_cells(page: Page, a: dict[str, Any], base: dict[str, Any] | None,
               compared: bool) -> list[str]:
    """A tag's cells after its label: users and rows, the per-user values (of A, of B and
    B - A when compared; A's with its change against ``base``), the other values."""
    b = a.get("compare")
    cells = [ratio_text(a, "valid_user_count", "real_user_count", counts=KIND.counts),
             value_text(a.get("real_ins_num"), "real_ins_num", counts=KIND.counts)]
    for field in PER_USER:
        text = tag_cell(a, field, _users(a))
        if base is not None:
            text += page.change(a, base, field)
        cells.append(text)
        if compared:
            cells.append(tag_cell(b, field, _users(a)) if b else "")
            cells.append(_tag_difference(a, b, field) if b else "")
    # a tag of too few users: its LogLoss and COPC without their (null) intervals
    plain = ({**a, "ci95": {k: v for k, v in a.get("ci95", {}).items() if v is not None}}
             if _too_few(a) else a)
    return cells + [cell(plain, field, compact=True) for field in TAG_FIELDS
                    if field not in PER_USER]


def _tag_difference(a: dict[str, Any], b: dict[str, Any], field: str) -> str:
    if field in PER_USER and _too_few(a) and f"{field}_diff" in b:
        return (difference_cell(a, {f"{field}_diff": b[f"{field}_diff"]}, field)
                + "<span class=ci>too few users</span>")
    return difference_cell(a, b, field, compact=True)


# A slice's values the page names (its "all" tag's; the first drawn per slice column).
SLICES = SliceView((("wuauc", "WUAUC"), ("uauc", "UAUC")), _overall_block)
SECTION = Section(KIND, draw=section, summary=summary, flags=FLAGS, slices=SLICES)
