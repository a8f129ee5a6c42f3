"""The ``wuauc`` kind's section of a report page: WUAUC and UAUC per tag with their
intervals as a dot plot, a table of the tags' values, users and rows, and with
``--compare`` the differences B - A per tag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mpieval import figures
from mpieval.report import OLDER, Model, Page, Run, cell, escape, estimate, ratio_text

TAG_FIELDS = ("wuauc", "uauc", "logloss", "copc")


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    tags = list(dict.fromkeys(tag for run in runs for tag in run.metrics[name]["tags"]))
    if "all" in tags:
        tags.remove("all")
        tags.insert(0, "all")
    models = page.models([(run, run.metrics[name]["tags"].get("all") or
                           next(iter(run.metrics[name]["tags"].values()))) for run in runs])
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
                    blocks[tag] = values["compare"]
            else:
                blocks[tag] = values
        per_model.append((model, blocks))
    panels = []
    for field, xlabel in (("wuauc", "WUAUC: per-user AUC weighted by the user's rows"),
                          ("uauc", "UAUC: mean of per-user AUC")):
        panels.append((f"{xlabel} (0.5 = random)", [
            (model.series, [estimate(blocks.get(tag), field) for tag in tags])
            for model, blocks in per_model]))
    svg = figures.intervals(tags, panels, page.key(name, "tags"))
    caption = "WUAUC and UAUC per tag"
    if not without:
        caption += " with their 95% intervals (users as independent clusters)"
    caption += "; \"all\" covers every row."
    if any(m.is_b for m in models):
        caption += " Filled dots: model A; open diamonds: model B."
    parts = [f"<div class=figures>{page.figure(svg, caption, wide=True)}</div>",
             tag_table(tags, per_model)]
    compared = [(run.label, values["compare"], tag) for run in runs
                for tag, values in run.metrics[name]["tags"].items()
                if values.get("compare")]
    parts.append(page.differences(name, compared, len(runs) > 1))
    return "".join(parts), notes

def tag_table(tags: Sequence[str],
              per_model: Sequence[tuple[Model, dict[str, dict[str, Any]]]]) -> str:
    several = len(per_model) > 1
    head = ("<th class=left>Tag</th>" + ("<th class=left>Model</th>" if several else "")
            + "".join(f"<th>{f.upper() if f != 'logloss' else 'LogLoss'}</th>"
                      for f in TAG_FIELDS)
            + "<th>Valid users / all</th><th>Valid rows / all</th>")
    body = []
    for tag in tags:
        for k, (model, blocks) in enumerate(per_model):
            block = blocks.get(tag)
            if block is None:
                continue
            first = k == 0 or all(tag not in b for _, b in per_model[:k])
            cells = "".join(f"<td>{cell(block, f)}</td>" for f in TAG_FIELDS)
            counts = "".join(
                f"<td>{ratio_text(block, valid, real)}</td>"
                for valid, real in (("valid_user_count", "real_user_count"),
                                    ("valid_ins_num", "real_ins_num")))
            label = f"<td class=left>{escape(model.series.label)}</td>" if several else ""
            tag_cell = escape(tag) if first else ""
            body.append(f"<tr{' class=group' if first else ''}><td class=left>{tag_cell}"
                        f"</td>{label}{cells}{counts}</tr>")
    return (f"<div class=table-wrap><table class=tags><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>"
            "<p class=small>A user is valid when their rows hold both a click and a "
            "non-click (their AUC is defined); LogLoss is in nats per row over all rows; "
            "COPC = actual CTR / predicted CTR.</p>")
