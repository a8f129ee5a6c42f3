"""The ``ranking`` kind on a report page: its summary line and its section, per tag (by
rows; the tags past the first :data:`~mpieval.report.tags.DRAWN_TAGS` in a table that
opens on demand), NDCG, NDCG@K and Recall@K with their 95% intervals ("too few users"
below the statistics' minimum), and the users and rows behind them, one row per run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.kinds.ranking import KIND
from mpieval.report.html import OLDER, escape, ratio_text, tag_cell, value_text
from mpieval.report.page import Page
from mpieval.report.runs import Run
from mpieval.report.section import Section
from mpieval.report.tags import DRAWN_TAGS, ordered_tags, tag_tables

NOTE = ("<p class=small>Per user, rows ranked by pred (highest first), gain = label, "
        "discount 1 / log2(rank + 1); tied preds share the average over the orders of "
        "the tie. NDCG@K = DCG@K / ideal DCG@K; Recall@K = relevant rows (label &gt; 0) "
        "expected among the first K / the user's relevant rows. A user is valid when "
        "a row of theirs is relevant; each value is the mean over valid users, its 95% "
        "interval [low, high] with users as independent clusters. \"all\" covers every "
        "row.</p>")


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """Per run, NDCG and the first cut-off's NDCG@K and Recall@K over every row."""
    fields = [field for field in _overall(runs[0].metrics[name])
              if field.startswith(("ndcg", "recall"))]
    fields.sort(key=_order)
    shown = [field for field in fields if "@" not in field][:1] + [
        field for field in fields if "@" in field][:2]
    return page.run_lines(name, runs, [(field, _heading(field)) for field in shown], _overall)


def _overall(metric: dict[str, Any]) -> dict[str, Any]:
    tags = metric["tags"]
    return tags.get("all") or next(iter(tags.values()))


def _order(field: str) -> tuple[bool, bool, int]:
    return (not field.startswith("ndcg"), field != "ndcg", int(field.partition("@")[2] or 0))


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The HTML of metric ``name`` over the runs that have it, and notes about them."""
    blocks = [run.metrics[name] for run in runs]
    tags = ordered_tags([block.get("tags", {}) for block in blocks], "real_ins_num")
    fields = list(dict.fromkeys(
        field for block in blocks for values in block.get("tags", {}).values()
        for field in values if field.startswith(("ndcg", "recall"))))
    fields.sort(key=_order)
    without = [run.label for run, block in zip(runs, blocks, strict=True)
               if not any("ci95" in values for values in block.get("tags", {}).values())]
    notes = [f"No intervals in {escape(', '.join(without))} {OLDER}."] if without else []
    tables = tag_tables(tags, tags[:DRAWN_TAGS],
                        lambda shown: tag_table(page, name, runs, fields, shown))
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


def _heading(field: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``."""
    value, at, cutoff = field.partition("@")
    return {"ndcg": "NDCG", "recall": "Recall"}.get(value, value) + at + cutoff


SECTION = Section(KIND, draw=section, summary=summary)
