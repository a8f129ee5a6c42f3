"""The ``ranking`` kind's section of a report page: per tag, NDCG, NDCG@K and Recall@K with
their 95% intervals, and the users and rows behind them, one row per run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval.report import OLDER, Page, Run, cell, escape, ratio_text, value_text


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The HTML of metric ``name`` over the runs that have it, and notes about them."""
    blocks = [run.metrics[name] for run in runs]
    tags = list(dict.fromkeys(tag for block in blocks for tag in block.get("tags", {})))
    if "all" in tags:
        tags.remove("all")
        tags.insert(0, "all")
    fields = list(dict.fromkeys(
        field for block in blocks for values in block.get("tags", {}).values()
        for field in values if field.startswith(("ndcg", "recall"))))
    fields.sort(key=lambda field: (not field.startswith("ndcg"), field != "ndcg",
                                   int(field.partition("@")[2] or 0)))
    several = len(runs) > 1
    head = ("<th class=left>Tag</th>" + ("<th class=left>Run</th>" if several else "")
            + "".join(f"<th>{escape(_heading(field))}</th>" for field in fields)
            + "<th>Valid users / all</th><th>Rows</th>")
    body = []
    for tag in tags:
        first = True
        for run, block in zip(runs, blocks, strict=True):
            values: dict[str, Any] | None = block.get("tags", {}).get(tag)
            if values is None:
                continue
            cells = "".join(f"<td>{cell(values, field)}</td>" for field in fields)
            label = f"<td class=left>{escape(run.label)}</td>" if several else ""
            body.append(
                f"<tr{' class=group' if first else ''}><td class=left>"
                f"{escape(tag) if first else ''}</td>{label}{cells}"
                f"<td>{ratio_text(values, 'valid_user_count', 'real_user_count')}</td>"
                f"<td>{value_text(values.get('real_ins_num'), 'real_ins_num')}</td></tr>")
            first = False
    without = [run.label for run, block in zip(runs, blocks, strict=True)
               if not any("ci95" in values for values in block.get("tags", {}).values())]
    notes = [f"No intervals in {escape(', '.join(without))} {OLDER}."] if without else []
    table = (f"<div class=table-wrap><table class=tags><thead><tr>{head}</tr></thead>"
             f"<tbody>{''.join(body)}</tbody></table></div>"
             "<p class=small>Per user, rows ranked by pred (highest first), gain = label, "
             "discount 1 / log2(rank + 1); tied preds share the average over the orders of "
             "the tie. NDCG@K = DCG@K / ideal DCG@K; Recall@K = relevant rows (label &gt; 0) "
             "expected among the first K / the user's relevant rows. A user is valid when "
             "a row of theirs is relevant; each value is the mean over valid users, its 95% "
             "interval with users as independent clusters. \"all\" covers every row.</p>")
    return table, notes


def _heading(field: str) -> str:
    """``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``."""
    value, at, cutoff = field.partition("@")
    return {"ndcg": "NDCG", "recall": "Recall"}.get(value, value) + at + cutoff
