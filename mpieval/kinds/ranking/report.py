"""The ``ranking`` kind on a report page: its summary line and its section, per tag (by
rows; the tags past the first :data:`~mpieval.report.tags.DRAWN_TAGS` in a table that
opens on demand), NDCG, NDCG@K, Recall@K, MRR, MAP@K and hit rate@K with their 95%
intervals ("too few users" below the statistics' minimum), and the users and rows behind
them, one row per run; with ``--compare`` the verdict B - A of NDCG and the first
cutoff's NDCG@K in the summary, and a table of the differences B - A per tag (paired by
user: interval, p- and q-value)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.kinds.ranking import KIND
from mpieval.report.html import (
    OLDER,
    difference_cell,
    escape,
    q_count,
    ratio_text,
    tag_cell,
    value_text,
    verdict,
)
from mpieval.report.page import Page
from mpieval.report.runs import Run
from mpieval.report.section import Section
from mpieval.report.tags import DRAWN_TAGS, ordered_tags, tag_tables

VALUES = ("ndcg", "recall", "mrr", "map", "hit_rate")
NAMES = {"ndcg": "NDCG", "recall": "Recall", "mrr": "MRR", "map": "MAP", "hit_rate": "Hit rate"}
NOTE = ("<p class=small>Per user, rows ranked by pred (highest first), gain = label (or "
        "2^label \u2212 1), discount 1 / log2(rank + 1); tied preds share the average over "
        "the orders of the tie. NDCG@K = DCG@K / ideal DCG@K; Recall@K = relevant rows "
        "(label &gt; 0) expected among the first K / the user's relevant rows; MRR = 1 / "
        "rank of the first relevant row; MAP@K = the sum of precision@i at the relevant "
        "ranks i \u2264 K / min(K, relevant rows); hit rate@K = a relevant row among the "
        "first K. A user is valid when a row of theirs is relevant; each value is the mean "
        "over valid users, its 95% interval [low, high] with users as independent "
        "clusters. \"all\" covers every row.</p>")
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
    shown = [field for field in fields if "@" not in field][:1] + [
        field for field in fields if "@" in field][:2]
    lines = page.run_lines(name, runs, [(field, _heading(field)) for field in shown],
                           _overall)
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
    return lines


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
    tables = tag_tables(tags, tags[:DRAWN_TAGS],
                        lambda shown: tag_table(page, name, runs, fields, shown))
    if any(isinstance(values.get("compare"), dict) for block in blocks
           for values in block.get("tags", {}).values()):
        tables += "<h3>B against A</h3>" + tag_tables(
            tags, tags[:DRAWN_TAGS],
            lambda shown: difference_table(page, name, runs, fields, shown)) + COMPARED_NOTE
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
                           for field in fields),
                         ratio_text(values, "valid_user_count", "real_user_count",
                                    counts=KIND.counts),
                         value_text(values.get("real_ins_num"), "real_ins_num",
                                    counts=KIND.counts)])
            classes.append("group" if first else "")
            first = False
    return page.table("tags", head, rows, left=(0, 1) if several else (0,),
                      row_classes=classes)


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


def _heading(field: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``, ``map@5`` -> ``MAP@5``."""
    value, at, cutoff = field.partition("@")
    return NAMES.get(value, value) + at + cutoff


SECTION = Section(KIND, draw=section, summary=summary)
