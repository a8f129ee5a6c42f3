"""The ``ranking`` kind on a report page: its summary line and its section, per tag (by
rows; the tags past the first :data:`~mpieval.report.tags.DRAWN_TAGS` in a table that
opens on demand), NDCG, NDCG@K, Recall@K, MRR, MAP@K and hit rate@K with their 95%
intervals ("too few users" below the statistics' minimum), and the users and rows behind
them, one row per run; beside Recall@K the share of valid users of at most K rows (their
Recall@K is 1 whatever the ranking; ``users_le_k``), flagged in the summary when it is
most of them; a dot plot of the first cutoff's NDCG@K and Recall@K per tag (each model
with its own interval); with ``--compare`` the verdict B - A of NDCG and the first
cutoff's NDCG@K in the summary with the tags where B is significantly better or worse,
forest plots of B - A of NDCG@K and Recall@K per tag and a table of the differences B - A
per tag (paired by user: interval, p- and q-value)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.kinds.ranking import KIND
from mpieval.report import figures
from mpieval.report.figures import Difference
from mpieval.report.html import (
    OLDER,
    difference,
    difference_cell,
    escape,
    estimate,
    is_number,
    q_count,
    ratio_text,
    tag_cell,
    too_few,
    value_text,
    verdict,
)
from mpieval.report.page import Model, Page
from mpieval.report.runs import Run
from mpieval.report.section import Section, SliceView
from mpieval.report.tags import (
    DRAWN_TAGS,
    differing,
    drawn_tags,
    lists_all,
    ordered_tags,
    significant,
    tag_tables,
    where_listed,
)

VALUES = ("ndcg", "recall", "mrr", "map", "hit_rate")
NAMES = {"ndcg": "NDCG", "recall": "Recall", "mrr": "MRR", "map": "MAP", "hit_rate": "Hit rate"}
PANEL_NAMES = {"ndcg": "DCG of the first K / the ideal", "recall": "relevant rows in the "
               "first K / all relevant"}
# The share of valid users of at most K rows from which the page flags a Recall@K as
# mostly trivial (their Recall@K is 1 whatever the ranking).
TRIVIAL_SHARE = 50.0
NOTE = ("<p class=small>Per user, rows ranked by pred (highest first), gain = label (or "
        "2^label \u2212 1), discount 1 / log2(rank + 1); tied preds share the average over "
        "the orders of the tie. NDCG@K = DCG@K / ideal DCG@K; Recall@K = relevant rows "
        "(label &gt; 0) expected among the first K / the user's relevant rows; MRR = 1 / "
        "rank of the first relevant row; MAP@K = the sum of precision@i at the relevant "
        "ranks i \u2264 K / min(K, relevant rows); hit rate@K = a relevant row among the "
        "first K. A user is valid when a row of theirs is relevant; each value is the mean "
        "over valid users, its 95% interval [low, high] with users as independent "
        "clusters. \"all\" covers every row. Under Recall@K: the share of the valid users "
        "with at most K rows, whose Recall@K (and hit rate@K) is 1 whatever the ranking: "
        "the higher it is, the less Recall@K says.</p>")
COMPARED_NOTE = ("<p class=small>B \u2212 A: the mean over the valid users of each user's "
                 "difference, its 95% interval, p-value (paired t-test over the users) and "
                 "the tag's q-value (Benjamini-Hochberg over the tags).</p>")


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """Per run, NDCG and the first cut-off's NDCG@K and Recall@K over every row; per
    compared run, the verdict B - A of NDCG and the first NDCG@K, and how many tags
    differ."""
    fields = [field for field in _overall(runs[0].metrics[name])
              if field.startswith(("ndcg", "recall"))]
    fields.sort(key=_order)
    shown = [field for field in fields if "@" not in field][:1] + _plotted(fields)
    lines = page.run_lines(name, runs, [(field, _heading(field)) for field in shown],
                           _overall)
    recalls = [field for field in shown if field.startswith("recall@")]
    for run in runs:
        said = [text for field in recalls
                if (text := short_users_text(_overall(run.metrics[name]), field))]
        if said:
            prefix = f"{escape(run.label)}: " if len(runs) > 1 else ""
            lines.append(prefix + "; ".join(said))
    for run in runs:
        compare = _overall(run.metrics[name]).get("compare")
        if not isinstance(compare, dict):
            continue
        label = (f"{escape(run.label)}: B \u2212 A" if len(runs) > 1 else "B \u2212 A")
        tested = [field for field in shown if field.startswith("ndcg")]
        lines.append(f"<b>{label}</b> ({escape(str(compare.get('pred', 'compare')))}): "
                     + "; ".join(verdict(compare, field, _heading(field)) for field in tested))
        tags = run.metrics[name]["tags"]
        counts = [f"{_heading(field)} {text}" for field in tested
                  if (text := q_count(tags, field))]
        if counts:
            lines.append(f"<b>{label} by tag</b>: " + "; ".join(counts))
        lines += differing(label, tags, {field: _heading(field) for field in
                                         [*tested, *recalls]}, KIND)
    return lines


def short_users_text(block: dict[str, Any], field: str) -> str:
    """``68% of valid users have at most 10 rows: their Recall@10 is 1 whatever the
    ranking`` ('' when the run does not count them, ``users_le_k``)."""
    cutoff = field.partition("@")[2]
    short = (block.get("users_le_k") or {}).get(cutoff)
    users = block.get("valid_user_count")
    if not is_number(short) or not is_number(users) or users <= 0:
        return ""
    share = 100.0 * short / users
    text = (f"{share:.0f}% of valid users have at most {cutoff} rows: their "
            f"{_heading(field)} is 1 whatever the ranking")
    if share >= TRIVIAL_SHARE:
        text = f"<span class=flag>⚠ {text} (a high {_heading(field)} says little)</span>"
    return text


def _overall(metric: dict[str, Any]) -> dict[str, Any]:
    tags: dict[str, dict[str, Any]] = metric["tags"]
    return tags.get("all") or next(iter(tags.values()))


def _order(field: str) -> tuple[int, int]:
    """The JSON's order: ndcg, ndcg@K, recall@K, mrr, map@K, hit_rate@K, cutoffs
    ascending."""
    value, _, cutoff = field.partition("@")
    return (2 * VALUES.index(value) + (value == "ndcg" and cutoff != ""), int(cutoff or 0))


def _is_value(field: str) -> bool:
    return field.partition("@")[0] in VALUES


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The HTML of metric ``name`` over the runs that have it, and notes about them."""
    blocks = [run.metrics[name] for run in runs]
    tags = ordered_tags([block.get("tags", {}) for block in blocks], "real_ins_num")
    fields = list(dict.fromkeys(
        field for block in blocks for values in block.get("tags", {}).values()
        for field in values if _is_value(field)))
    fields.sort(key=_order)
    without = [run.label for run, block in zip(runs, blocks, strict=True)
               if not any("ci95" in values for values in block.get("tags", {}).values())]
    notes = [f"No intervals in {escape(', '.join(without))} {OLDER}."] if without else []
    tables = figures_html(page, name, runs, fields, tags)
    kept = significant([block.get("tags", {}) for block in blocks], fields)
    tables += tag_tables(tags, tags[:DRAWN_TAGS],
                         lambda shown: tag_table(page, name, runs, fields, shown), kept=kept)
    if any(isinstance(values.get("compare"), dict) for block in blocks
           for values in block.get("tags", {}).values()):
        tables += "<h3>B against A</h3>" + tag_tables(
            tags, tags[:DRAWN_TAGS],
            lambda shown: difference_table(page, name, runs, fields, shown),
            kept=kept) + COMPARED_NOTE
    return tables + NOTE, notes


def tag_table(page: Page, name: str, runs: Sequence[Run], fields: Sequence[str],
              tags: Sequence[str]) -> str:
    """One row per tag and run: its values of ``fields``, its valid users and rows."""
    several = len(runs) > 1
    head = (["Tag", *(["Run"] if several else []), *(_heading(field) for field in fields),
             "Valid users / all", "Rows"])
    rows, classes = [], []
    for tag in tags:
        first = True
        for run in runs:
            values: dict[str, Any] | None = run.metrics[name].get("tags", {}).get(tag)
            if values is None:
                continue
            label = [escape(run.label)] if several else []
            users = values.get("valid_user_count")
            rows.append([escape(tag) if first else "", *label,
                         *(tag_cell(values, field, users, counts=KIND.counts)
                           + _share_note(values, field) for field in fields),
                         ratio_text(values, "valid_user_count", "real_user_count",
                                    counts=KIND.counts),
                         value_text(values.get("real_ins_num"), "real_ins_num",
                                    counts=KIND.counts)])
            classes.append("group" if first else "")
            first = False
    return page.table("tags", head, rows, left=(0, 1) if several else (0,),
                      row_classes=classes)


def _share_note(values: dict[str, Any], field: str) -> str:
    """Under a Recall@K: the share of the tag's valid users of at most K rows."""
    if not field.startswith("recall@"):
        return ""
    share = _share(values, field)
    return (f"<span class=ci>{share} of users ≤ {field.partition('@')[2]} rows</span>"
            if share else "")


def difference_table(page: Page, name: str, runs: Sequence[Run], fields: Sequence[str],
                     tags: Sequence[str]) -> str:
    """One row per tag and compared run: B - A of each of ``fields`` (the paired
    difference, its interval, p- and q-value)."""
    several = len(runs) > 1
    head = ["Tag", *(["Run"] if several else []), "B", *(_heading(field) for field in fields)]
    rows, classes = [], []
    for tag in tags:
        first = True
        for run in runs:
            values: dict[str, Any] | None = run.metrics[name].get("tags", {}).get(tag)
            compare = None if values is None else values.get("compare")
            if not isinstance(compare, dict):
                continue
            assert values is not None
            label = [escape(run.label)] if several else []
            rows.append([escape(tag) if first else "", *label,
                         escape(str(compare.get("pred", ""))),
                         *(difference_cell(values, compare, field, compact=True)
                           for field in fields)])
            classes.append("group" if first else "")
            first = False
    return page.table("tags", head, rows, left=(0, 1, 2) if several else (0, 1),
                      row_classes=classes)


# -- the figures: NDCG@K and Recall@K per tag, B - A per tag ----------------------------


def figures_html(page: Page, name: str, runs: Sequence[Run], fields: Sequence[str],
                 tags: Sequence[str]) -> str:
    """The dot plot of NDCG@K and Recall@K (the first cutoff) per drawn tag, each model
    with its own interval, and with ``--compare`` a forest plot of B - A of each."""
    plotted = _plotted(fields)
    if not plotted:
        return ""
    blocks = [run.metrics[name].get("tags", {}) for run in runs]
    drawn = drawn_tags(tags, blocks, plotted, _too_few)
    if not drawn:
        return ""
    models = page.models([(run, _overall(run.metrics[name])) for run in runs])
    per_model = [(model, _tag_blocks(model, name)) for model in models]
    panels = [(f"{_heading(field)}: {PANEL_NAMES[field.partition('@')[0]]}",
               [(model.series, [estimate(tb.get(tag), field) for tag in drawn])
                for model, tb in per_model]) for field in plotted]
    svg = figures.intervals(drawn, panels, page.key(name, "tags"))
    caption = (" and ".join(_heading(field) for field in plotted) + " per tag with their "
               "95% intervals (users as independent clusters); \"all\" covers every row.")
    recall = next((field for field in plotted if field.startswith("recall@")), None)
    if recall is not None:
        shares = [f"{escape(tag)} {text}" for tag in drawn[:1]
                  if (text := _share(blocks[0].get(tag) or {}, recall))]
        if shares:
            caption += (f" Valid users of at most {recall.partition('@')[2]} rows, whose "
                        f"{_heading(recall)} is 1 whatever the ranking: " + ", ".join(shares)
                        + (" (every tag's share is in the table)." if lists_all(len(tags))
                           else " (each listed tag's share is in the table)."))
    if len(drawn) < len(tags):
        caption += (f" {len(drawn)} of {len(tags)} tags drawn: the largest by rows and "
                    f"the most significant differences; {where_listed(len(tags))}.")
    if any(model.is_b for model in models):
        caption += " Filled markers: model A; open markers: model B, with its own interval."
    parts = [page.figure(svg, caption, wide=True)]
    parts += [page.differences(name, _differences(page, name, runs, drawn, field),
                               _heading(field)) for field in plotted]
    return f"<div class=figures>{''.join(part for part in parts if part)}</div>"


def _plotted(fields: Sequence[str]) -> list[str]:
    """NDCG@K and Recall@K of the first cutoff (those the run has)."""
    cutoffs = sorted({int(field.partition("@")[2]) for field in fields if "@" in field})
    if not cutoffs:
        return []
    return [f"{value}@{cutoffs[0]}" for value in ("ndcg", "recall")
            if f"{value}@{cutoffs[0]}" in fields]


def _too_few(values: dict[str, Any]) -> bool:
    return too_few(values.get("valid_user_count"))


def _tag_blocks(model: Model, name: str) -> dict[str, dict[str, Any]]:
    """The model's block of each tag (B's: the tag's compare block, its own ``ci95``)."""
    tags = model.run.metrics[name].get("tags", {})
    if not model.is_b:
        return dict(tags)
    return {tag: values["compare"] for tag, values in tags.items()
            if isinstance(values.get("compare"), dict)}


def _differences(page: Page, name: str, runs: Sequence[Run], drawn: Sequence[str],
                 field: str) -> list[Difference]:
    """B - A of ``field`` of each drawn tag of each run, where it has an interval."""
    rows = []
    for run in runs:
        for tag in drawn:
            values = run.metrics[name].get("tags", {}).get(tag) or {}
            label = tag + (f" · {run.label}" if len(page.runs) > 1 else "")
            row = difference(label, values.get("compare"), field, emphasis=tag == "all")
            if row is not None:
                rows.append(row)
    return rows


def _share(block: dict[str, Any], field: str) -> str:
    """``68%``: the share of the block's valid users of at most K rows ('' unknown)."""
    short = (block.get("users_le_k") or {}).get(field.partition("@")[2])
    users = block.get("valid_user_count")
    if not is_number(short) or not is_number(users) or users <= 0:
        return ""
    return f"{100.0 * short / users:.0f}%"


def _heading(field: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``, ``map@5`` -> ``MAP@5``."""
    value, at, cutoff = field.partition("@")
    return NAMES.get(value, value) + at + cutoff


# A slice's values the page names (its "all" tag's; the first drawn per slice column).
SLICES = SliceView((("ndcg", "NDCG"),), _overall)
SECTION = Section(KIND, draw=section, summary=summary, slices=SLICES)
