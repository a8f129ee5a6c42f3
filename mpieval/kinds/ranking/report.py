"""The ``ranking`` kind's summary line and section of a report page: per tag (by rows; the
tags past the first :data:`~mpieval.report.DRAWN_TAGS` in a table that opens on demand),
NDCG, NDCG@K and Recall@K with their 95% intervals ("too few users" below the
statistics' minimum), and the users and rows behind them, one row per run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.report import DRAWN_TAGS, OLDER, Page, Run, escape, ratio_text, tag_cell, value_text


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """Per run, NDCG and the first cut-off's NDCG@K and Recall@K over every row."""
    def overall(metric: dict[str, Any]) -> dict[str, Any]:
        tags = metric["tags"]
        return tags.get("all") or next(iter(tags.values()))

    fields = [field for field in overall(runs[0].metrics[name])
              if field.startswith(("ndcg", "recall"))]
    fields.sort(key=_order)
    shown = [field for field in fields if "@" not in field][:1] + [
        field for field in fields if "@" in field][:2]
    return page.run_lines(name, runs, [(field, _heading(field)) for field in shown], overall)


def _order(field: str) -> tuple[bool, bool, int]:
    return (not field.startswith("ndcg"), field != "ndcg", int(field.partition("@")[2] or 0))


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The HTML of metric ``name`` over the runs that have it, and notes about them."""
    blocks = [run.metrics[name] for run in runs]
    tags = page.ordered_tags([block.get("tags", {}) for block in blocks])
    fields = list(dict.fromkeys(
        field for block in blocks for values in block.get("tags", {}).values()
        for field in values if field.startswith(("ndcg", "recall"))))
    fields.sort(key=_order)
    several = len(runs) > 1
    head = (["Tag", *(["Run"] if several else []), *(_heading(field) for field in fields),
             "Valid users / all", "Rows"])

    def table(shown: Sequence[str]) -> str:
        rows, classes = [], []
        for tag in shown:
            first = True
            for run, block in zip(runs, blocks, strict=True):
                values: dict[str, Any] | None = block.get("tags", {}).get(tag)
                if values is None:
                    continue
                label = [escape(run.label)] if several else []
                rows.append([escape(tag) if first else "", *label,
                             *(tag_cell(values, field) for field in fields),
                             ratio_text(values, "valid_user_count", "real_user_count"),
                             value_text(values.get("real_ins_num"), "real_ins_num")])
                classes.append("group" if first else "")
                first = False
        return page.table("tags", head, rows, left=(0, 1) if several else (0,),
                          row_classes=classes)

    without = [run.label for run, block in zip(runs, blocks, strict=True)
               if not any("ci95" in values for values in block.get("tags", {}).values())]
    notes = [f"No intervals in {escape(', '.join(without))} {OLDER}."] if without else []
    tables = (page.tag_tables(tags, tags[:DRAWN_TAGS], table)
              + "<p class=small>Per user, rows ranked by pred (highest first), gain = label, "
              "discount 1 / log2(rank + 1); tied preds share the average over the orders of "
              "the tie. NDCG@K = DCG@K / ideal DCG@K; Recall@K = relevant rows (label &gt; 0) "
              "expected among the first K / the user's relevant rows. A user is valid when "
              "a row of theirs is relevant; each value is the mean over valid users, its 95% "
              "interval [low, high] with users as independent clusters. \"all\" covers every "
              "row.</p>")
    return tables, notes


def _heading(field: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``."""
    value, at, cutoff = field.partition("@")
    return {"ndcg": "NDCG", "recall": "Recall"}.get(value, value) + at + cutoff
