"""The ``wuauc`` kind's summary lines and section of a report page: WUAUC and UAUC per tag
with their intervals as a dot plot (at most :data:`~mpieval.report.DRAWN_TAGS` tags: the
largest and the most significant), a table of the tags' values, users and rows (tags by
rows; those not drawn in a table that opens on demand), and with ``--compare`` the
differences B - A per tag as forest plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval import figures
from mpieval.figures import Difference, Estimate
from mpieval.report import (
    OLDER,
    Page,
    Run,
    cell,
    difference_cell,
    escape,
    estimate,
    flags,
    headline,
    pair,
    q_count,
    ratio_text,
    tag_cell,
    too_few,
    value_text,
    verdict,
)

TAG_FIELDS = ("wuauc", "uauc", "logloss", "copc")
PER_USER = ("wuauc", "uauc")  # the fields with per-user intervals and paired differences
NAMES = {"wuauc": "WUAUC", "uauc": "UAUC", "logloss": "LogLoss", "copc": "COPC"}


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """Per model, the values over every row (``all``); per compared run the verdict B - A
    and how many tags differ."""
    lines = []
    for model in page.models([(run, _overall(run, name)) for run in runs]):
        block = model.block
        base = page.baseline_block(name, model)
        if base is not None:
            base = _overall_block(base)
            if model.is_b and base.get("compare"):
                base = base["compare"]
        values = []
        for field in ("wuauc", "uauc", "copc"):
            text = headline(block, field, NAMES[field])
            if text and base is not None:
                text += page.change(block.get(field), base.get(field))
            if text:
                values.append(text)
        scope = "all rows" if "all" in model.run.metrics[name]["tags"] else "first tag"
        line = f"{escape(model.series.label)} ({scope}): " + ", ".join(values)
        line += "".join(f"<span class=flag>⚠ {flag}</span>"
                        for flag in flags(block, ("wuauc", "uauc", "copc")))
        lines.append(line)
        if model.is_b:
            label = f"{escape(model.run.label)}: B \u2212 A" if len(page.runs) > 1 else "B \u2212 A"
            lines += [f"<b>{label}</b>: {verdict(block, field, NAMES[field])}"
                      for field in PER_USER]
            tags = model.run.metrics[name]["tags"]
            counts = [f"{NAMES[field]} {text}" for field in PER_USER
                      if (text := q_count(tags, field))]
            if counts:
                lines.append(f"<b>{label} by tag</b>: " + "; ".join(counts))
    return lines


def _overall(run: Run, name: str) -> dict[str, Any]:
    return _overall_block(run.metrics[name])


def _overall_block(metric: dict[str, Any]) -> dict[str, Any]:
    tags = metric["tags"]
    return tags.get("all") or next(iter(tags.values()))


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    all_tags = [run.metrics[name]["tags"] for run in runs]
    tags = page.ordered_tags(all_tags)
    models = page.models([(run, _overall(run, name)) for run in runs])
    notes = []
    without = [run.label for run in runs
               if not any("ci95" in v for v in run.metrics[name]["tags"].values())]
    if without:
        notes.append(f"No intervals in {escape(', '.join(without))} {OLDER}.")
    per_model = []  # (model, {tag: block})
    for model in models:
        blocks = {}
        for tag, values in model.run.metrics[name]["tags"].items():
            if model.is_b:
                if values.get("compare") is not None:
                    blocks[tag] = {**values["compare"], "valid_user_count":
                                   values.get("valid_user_count")}
            else:
                blocks[tag] = values
        per_model.append((model, blocks))
    drawn = page.drawn_tags(tags, all_tags, PER_USER)
    parts = []
    if drawn:
        panels = []
        for field, xlabel in (("wuauc", "WUAUC (users' AUC, weighted by rows)"),
                              ("uauc", "UAUC (mean of users' AUC)")):
            panels.append((xlabel, [
                (model.series, [estimate(blocks.get(tag), field) for tag in drawn])
                for model, blocks in per_model]))
        svg = figures.intervals(drawn, panels, page.key(name, "tags"))
        caption = "WUAUC and UAUC per tag"
        if not without:
            caption += " with their 95% intervals (users as independent clusters)"
        caption += "; \"all\" covers every row."
        if len(drawn) < len(tags):
            caption += (f" {len(drawn)} of {len(tags)} tags drawn: the largest by rows and "
                        "the most significant differences; every tag is in the tables.")
        if any(m.is_b for m in models):
            caption += " Filled dots: model A; open diamonds: model B."
        parts.append(f"<div class=figures>{page.figure(svg, caption, wide=True)}</div>")
    parts.append(page.tag_tables(tags, drawn, lambda shown: tag_table(page, name, shown,
                                                                        runs)))
    if any(too_few(values) for tb in all_tags for values in tb.values()):
        notes.append("Tags with too few valid users for an interval (fewer than the "
                     "statistics' minimum) are not drawn; the tables say so.")
    figures_html = []
    for field in PER_USER:
        rows = []
        for run in runs:
            for tag in drawn:
                values = run.metrics[name]["tags"].get(tag)
                compare = (values or {}).get("compare")
                if not compare or too_few(values or {}) \
                        or not isinstance(compare.get(f"{field}_diff"), (int, float)):
                    continue
                low, high = pair(compare.get(f"{field}_diff_ci95"))
                if low is None or high is None:
                    continue
                label = tag + (f" · {run.label}" if len(page.runs) > 1 else "")
                rows.append(Difference(label, Estimate(compare[f"{field}_diff"], low, high),
                                       compare.get(f"{field}_diff_p"),
                                       compare.get(f"{field}_diff_q"), emphasis=tag == "all"))
        figures_html.append(page.differences(name, rows, NAMES[field]))
    if any(figures_html):
        parts.append(f"<h3>B against A</h3><div class=figures>{''.join(figures_html)}</div>")
    return "".join(parts), notes


def tag_table(page: Page, name: str, tags: Sequence[str], runs: Sequence[Run]) -> str:
    """One row per tag (and run): WUAUC and UAUC of A, of B and B - A with --compare, A's
    LogLoss and COPC, the users and rows; values of later runs with their change against
    the baseline's."""
    several = len(runs) > 1
    compared = any(values.get("compare") for run in runs
                   for values in run.metrics[name]["tags"].values())
    head = ["Tag", *(["Run"] if several else []), "Valid users / all", "Rows"]
    for field in PER_USER:
        head += [f"{NAMES[field]} A", f"{NAMES[field]} B", f"{NAMES[field]} B \u2212 A"] \
            if compared else [NAMES[field]]
    head += [f"{NAMES[field]}{' A' if compared else ''}" for field in TAG_FIELDS
             if field not in PER_USER]
    rows, classes = [], []
    base_tags = (page.baseline.metrics.get(name) or {}).get("tags", {}) \
        if page.baseline is not None else {}
    for tag in tags:
        first = True
        for run in runs:
            a = run.metrics[name]["tags"].get(tag)
            if a is None:
                continue
            b = a.get("compare")
            base = base_tags.get(tag) if run is not page.baseline else None
            cells = [escape(tag) if first else "", *([escape(run.label)] if several else []),
                     ratio_text(a, "valid_user_count", "real_user_count"),
                     value_text(a.get("real_ins_num"), "real_ins_num")]
            for field in PER_USER:
                text = tag_cell(a, field)
                if base is not None:
                    text += page.change(a.get(field), base.get(field))
                cells.append(text)
                if compared:
                    cells.append(tag_cell({**b, "valid_user_count": a.get(
                        "valid_user_count")}, field) if b else "")
                    cells.append(_tag_difference(a, b, field) if b else "")
            cells += [cell(a, field, compact=True) for field in TAG_FIELDS
                      if field not in PER_USER]
            rows.append(cells)
            classes.append("group" if first and several else "")
            first = False
    return (page.table("tags", head, rows, left=(0, 1) if several else (0,),
                       row_classes=classes)
            + "<p class=small>Under a value: its 95% interval [low, high]. A user is valid "
            "when their rows hold both a click and a "
            "non-click (their AUC is defined); LogLoss is in nats per row over all rows; "
            "COPC = actual CTR / predicted CTR."
            + (" B \u2212 A: the paired difference by user with its interval, p-value and the "
               "tag's q-value (Benjamini-Hochberg over the tags)." if compared else "")
            + "</p>")


def _tag_difference(a: dict[str, Any], b: dict[str, Any], field: str) -> str:
    if field in PER_USER and too_few(a) and f"{field}_diff" in b:
        return (difference_cell(a, {f"{field}_diff": b[f"{field}_diff"]}, field)
                + "<span class=ci>too few users</span>")
    return difference_cell(a, b, field, compact=True)
