"""A report page: a header (the runs and their provenance), the summary, then one section
per metric, each drawn by its kind's :class:`~mpieval.report.section.Section`.

The page is given the sections, by kind, and names no kind: a metric whose kind has no
section shows its plain values. :class:`Page` holds what the sections share: the models
of a metric (A, and B with ``--compare``) with one colour per model over every figure
and run (the runs told apart by line style and marker), the baseline (the first of
several runs) and the changes against it, the tables and the figures' frames. A run
with ``--compare`` adds model B's values and the differences B - A with intervals and
p-values; several runs are overlaid in each figure and set side by side in each table.
Values a run lacks (the statistics of an older mpieval) are said to be missing, never
invented.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpieval.report import figures, slices
from mpieval.report.figures import Series
from mpieval.report.html import (
    anchor,
    cell,
    difference_cell,
    escape,
    headline,
    is_number,
    pair,
    weighting_text,
)
from mpieval.report.runs import Run
from mpieval.report.section import Section
from mpieval.report.style import PAGE, STYLE

# Value columns a table holds at most beside the values' names: more would not fit a
# laptop's screen; further runs go to a table below.
MAX_VALUE_COLUMNS = 4
SUMMARY_NOTE = ("<p class=small>Each value with its 95% interval; B \u2212 A: the paired "
                "difference of the two models on the same rows (or users), its interval and "
                "two-sided p-value. Δ: the change against the baseline run, with a 95% "
                "interval when both values have one (the two runs as independent samples). "
                "⚠ marks a value outside its sane range.</p>")


@dataclass(frozen=True)
class Model:
    """One run's model in a metric: A (the run's pred), or B (its ``--compare`` column)."""

    run: Run
    block: dict[str, Any]  # A's block, or the compare block for B
    series: Series
    is_b: bool


class Page:
    """Builds the page of ``runs`` with the ``sections`` of their kinds (by kind name);
    keeps one colour per model over every figure and run, and counts the figures for unique
    SVG ids. With several runs the first is the baseline. ``counts``: the fields that are
    counts in any of the kinds (printed with thousands separators)."""

    def __init__(self, runs: Sequence[Run], sections: Mapping[str, Section]) -> None:
        self.runs = list(runs)
        self.sections = dict(sections)
        self.counts = frozenset().union(*(section.counts for section in sections.values()))
        self.baseline = self.runs[0] if len(self.runs) > 1 else None
        self.figure_count = 0
        self.colours: dict[str, str] = {}

    def html(self) -> str:
        names = list(dict.fromkeys(name for run in self.runs for name in run.metrics))
        summary = self.summary(names)
        sections = [self.section(name) for name in names]
        toc = "".join(f'<li><a href="#{anchor(name)}">{escape(name)}</a></li>' for name in names)
        title = "mpieval report: " + ", ".join(run.label for run in self.runs)
        return PAGE.format(title=escape(title), style=STYLE, runs=self.runs_table(),
                           summary=summary, toc=toc, sections="\n".join(sections))

    def present(self, name: str) -> tuple[str, list[Run]]:
        """The kind of metric ``name`` (its first run's) and the runs that have it as that
        kind."""
        present = [run for run in self.runs if name in run.metrics]
        kind = present[0].metrics[name]["kind"]
        return kind, [run for run in present if run.metrics[name]["kind"] == kind]

    # the header: each run, where it comes from ---------------------------------------
    def runs_table(self) -> str:
        rows = [self.run_row(run) for run in self.runs]
        table = self.table("runs", ["Run", "File, inputs, command", "Started (UTC)", "Read",
                                    "Weights", "Metrics"], rows, left=(0, 1, 2, 4, 5))
        note = ""
        if self.baseline is not None:
            note = (f"<p class=small>The first run named, <b>{escape(self.baseline.label)}</b>, "
                    "is the baseline: every value of the other runs shows its change against "
                    "it (Δ).</p>")
            # on a phone the runs' provenance opens on demand: the verdict stays on the
            # first screen (the print shows the table)
            named = ", ".join(escape(run.label) for run in self.runs)
            table = (f"<div class=runs-wide>{table}</div><details class=runs-narrow>"
                     f"<summary>The runs ({named}): files, inputs, commands</summary>"
                     f"{table}</details>")
        return table + note

    def run_row(self, run: Run) -> list[str]:
        """A run's row of the header: its label, where it comes from, when, how much."""
        label = escape(run.label) + (" <span class=base>baseline</span>"
                                     if run is self.baseline else "") + gate_text(run)
        prov = run.provenance
        if prov is None:
            return [label, f"<span class=path>{escape(run.path)}</span>",
                    "<span class=undefined>no provenance: the JSON has no "
                    "<code>run</code> object (written by an older mpieval)</span>",
                    "", "", escape(", ".join(run.metrics))]
        started = escape(str(prov.get("started", "?")))
        version = escape(str(prov.get("mpieval_version", "?")))
        ranks, rows_read = prov.get("ranks"), prov.get("rows")
        scale = ", ".join(part for part in (
            f"{rows_read:,} rows" if is_number(rows_read) else "",
            f"{ranks} rank{'s' if ranks != 1 else ''}" if is_number(ranks) else "") if part)
        inputs = prov.get("inputs") or []
        command = prov.get("command") or []
        source = (f"<span class=path>{escape(run.path)}</span>"
                  f"<span class=ci>inputs: <span class=path>"
                  f"{escape(' '.join(map(str, inputs)) or '(none named)')}</span></span>"
                  f"{_merged_text(prov.get('merged'))}"
                  f"<span class=ci>command: <code class=path>"
                  f"{escape(' '.join(map(str, command)))}</code></span>")
        return [label, source, f"{started}<span class=ci>mpieval {version}</span>",
                escape(scale), self.weights_text(run), escape(", ".join(run.metrics))]

    def weights_text(self, run: Run) -> str:
        """How the run's metrics were weighted, from its provenance ('' when unweighted)."""
        weights = (run.provenance or {}).get("weights")
        if not isinstance(weights, dict) or not weights:
            return "none" if run.provenance is not None else ""
        parts = []
        for name, spec in weights.items():
            if not isinstance(spec, dict):
                continue
            parts.append(f"{escape(name)}: {weighting_text(spec, self.rows(run, name))}")
        return "<br>".join(parts)

    def rows(self, run: Run, name: str) -> Any:
        """The rows a metric of ``run`` counted, where its kind says (else None)."""
        block = run.metrics.get(name) or {}
        section = self.sections.get(block.get("kind", ""))
        return block.get(section.rows) if section is not None and section.rows else None

    # the summary: one line per metric, before any figure ------------------------------
    def summary(self, names: Sequence[str]) -> str:
        items = []
        for name in names:
            kind, present = self.present(name)
            section = self.sections.get(kind)
            lines = section.summary(self, name, present) if section is not None else [
                "a kind this version of the report does not know: its plain values below"]
            if section is not None:
                lines += slices.summary_lines(self, name, present, section)
            inner = "".join(f"<li>{line}</li>" for line in lines)
            items.append(f'<li><a href="#{anchor(name)}"><b>{escape(name)}</b></a> '
                         f"<span class=kind>{escape(kind)}</span><ul>{inner}</ul></li>")
        return (f'<section id="summary"><h2>Summary</h2><ul class=summary>{"".join(items)}</ul>'
                f"{SUMMARY_NOTE}</section>")

    def baseline_block(self, name: str, model: Model) -> dict[str, Any] | None:
        """The block ``model``'s values are compared with: the baseline run's model of the
        same role (A, or B when the baseline has one), or None (no baseline, or the
        model is the baseline's)."""
        if self.baseline is None or model.run is self.baseline:
            return None
        block = self.baseline.metrics.get(name)
        if block is None or block.get("kind") != model.run.metrics[name].get("kind"):
            return None
        return block

    def change(self, block: dict[str, Any], base: dict[str, Any], field: str) -> str:
        """``field``'s change from ``base`` (the baseline's block) to ``block``, as a small
        line ('' when undefined), with a 95% interval when both values have one: the two
        runs read as independent samples (another day's rows), the interval's half width
        the root of the sum of the two halves' squares."""
        value, before = block.get(field), base.get(field)
        if self.baseline is None or not is_number(value) or not is_number(before):
            return ""
        change = value - before
        text = f"Δ {change:+.4g}"
        halves = [_half_width(b, field) for b in (block, base)]
        if halves[0] is not None and halves[1] is not None and field not in self.counts:
            half = math.hypot(halves[0], halves[1])
            text += f" (95% {change - half:+.3g} to {change + half:+.3g})"
        return f"<span class=delta>{text} vs {escape(self.baseline.label)}</span>"

    def headlines(self, block: dict[str, Any], fields: Sequence[tuple[str, str]],
                  base: dict[str, Any] | None) -> str:
        """``fields`` (field, name) of ``block`` as the summary says them, each with its
        change against ``base`` (the baseline's block; None: none)."""
        values = []
        for field, what in fields:
            text = headline(block, field, what, counts=self.counts)
            if text and base is not None:
                text += self.change(block, base, field)
            if text:
                values.append(text)
        return ", ".join(values)

    def run_lines(self, name: str, runs: Sequence[Run], fields: Sequence[tuple[str, str]],
                  block_of: Callable[[dict[str, Any]], dict[str, Any]] | None = None
                  ) -> list[str]:
        """Summary lines of a metric without models A and B: per run its headline values
        (``fields``: field, name) and their changes against the baseline.
        ``block_of(metric block)`` picks the block the values are in (the block itself)."""
        pick = block_of or (lambda block: block)
        base = None
        if self.baseline is not None and name in self.baseline.metrics:
            base = pick(self.baseline.metrics[name])
        return [f"{escape(run.label)}: " + self.headlines(
            pick(run.metrics[name]), fields, base if run is not self.baseline else None)
            for run in runs]

    # one section per metric name: the runs that have it, drawn by its kind -----------
    def section(self, name: str) -> str:
        kind, present = self.present(name)
        notes = [f"{escape(run.label)} has {escape(name)} as kind "
                 f"{escape(run.metrics[name]['kind'])}; it is left out here."
                 for run in self.runs
                 if name in run.metrics and run.metrics[name]["kind"] != kind]
        absent = [run.label for run in self.runs if name not in run.metrics]
        if absent:
            notes.append(f"Not in {escape(', '.join(absent))}.")
        section = self.sections.get(kind)
        body, more_notes = (section.draw(self, name, present) if section is not None
                            else self.other(name, present))
        notes += more_notes
        if section is not None:
            body += slices.section_html(self, name, present, section)
        note_html = "".join(f"<p class=note>{note}</p>" for note in notes)
        return (f'<section id="{anchor(name)}"><h2>{escape(name)} <span class=kind>'
                f"{escape(kind)}</span></h2>{self.weights_note(name, present)}{note_html}"
                f"{body}</section>")

    def weights_note(self, name: str, runs: Sequence[Run]) -> str:
        """Which weights the metric's values use, from each run's ``weights`` entries:
        ``weighted by `w` (importance)`` or ``unweighted`` (said once when every run
        agrees)."""
        said = [(run.label, _weights_words(run, name)) for run in runs]
        words = {text for _, text in said}
        if len(words) == 1:
            text = next(iter(words))
        else:
            text = "; ".join(f"{escape(label)}: {text}" for label, text in said)
        return f"<p class=weights>Weights: {text}.</p>"

    def models(self, blocks: Sequence[tuple[Run, dict[str, Any]]]) -> list[Model]:
        """A and, with ``--compare``, B of each run, each with its colour and label."""
        several = len(self.runs) > 1
        models: list[Model] = []
        for run, block in blocks:
            place = self.runs.index(run) if run in self.runs else 0
            compare = block.get("compare")
            a_label = run.label
            if compare is not None:
                a_label = f"{run.label}: A" if several else "A"
            models.append(Model(run, block, self.series("A", a_label, run=place), False))
            if compare is not None:
                b_model = f"B ({compare.get('pred', 'compare')})"
                b_label = f"{run.label}: {b_model}" if several else b_model
                models.append(Model(run, compare, self.series(b_model, b_label, True, place),
                                    True))
        return models

    def compared_label(self, model: Model) -> str:
        """``B - A`` (with several runs, the run's label before it)."""
        if len(self.runs) > 1:
            return f"{escape(model.run.label)}: B \u2212 A"
        return "B \u2212 A"

    def series(self, model: str, label: str, dashed: bool = False, run: int = 0) -> Series:
        """The figures' series of a model (``model``: ``A``, or ``B (COLUMN)``) of the run
        at place ``run``, called ``label``: a model keeps its colour over the page, in
        every run (:data:`~mpieval.report.figures.MODEL_COLOURS`, never a direction's
        colour), the run its line style and marker."""
        if model not in self.colours:
            colours = figures.MODEL_COLOURS
            self.colours[model] = colours[len(self.colours) % len(colours)]
        return Series(label, self.colours[model], dashed, run)

    def figure(self, svg: str, caption: str, wide: bool = False) -> str:
        """A figure and its caption; in the tab order, as on a phone it may scroll."""
        return (f"<figure class=\"plot{' wide' if wide else ''}\" tabindex=0>{svg}"
                f"<figcaption>{caption}</figcaption></figure>")

    def key(self, name: str, what: str) -> str:
        self.figure_count += 1
        return f"f{self.figure_count}-{anchor(name)}-{what}"

    @staticmethod
    def table(cls: str, head: Sequence[str], rows: Sequence[Sequence[str]], *,
              left: Sequence[int] = (0,), row_classes: Sequence[str] | None = None,
              label: str = "") -> str:
        """A table whose cells carry their column's name (``data-label``): on a narrow
        screen each row stacks as label: value lines instead of scrolling sideways.
        ``head`` is plain text; the cells are HTML. Its box scrolls sideways when it must,
        reached by the keyboard (a named region in the tab order)."""
        heads = "".join(f"<th{' class=left' if i in left else ''}>{escape(h)}</th>"
                        for i, h in enumerate(head))
        body = []
        for r, row in enumerate(rows):
            extra = row_classes[r] if row_classes else ""
            cells = "".join(
                f"<td data-label=\"{escape(head[i])}\"{' class=left' if i in left else ''}>"
                f"{text}</td>" for i, text in enumerate(row))
            body.append(f"<tr{f' class={extra}' if extra else ''}>{cells}</tr>")
        name = escape(label or f"{cls} table")
        return (f"<div class=table-wrap tabindex=0 role=region aria-label=\"{name}\">"
                f"<table class=\"{cls} stack\"><thead><tr>{heads}</tr>"
                f"</thead><tbody>{''.join(body)}</tbody></table></div>")

    def value_table(self, name: str, models: Sequence[Model], fields: dict[str, str]) -> str:
        """One row per value (those any model has), one column per model, and after each
        run's B a column B - A (with the paired interval and p-value where the run has
        them); intervals, changes against the baseline and flags below the values. Runs
        whose columns would not fit a laptop's screen beside the first go to tables below
        it (:data:`MAX_VALUE_COLUMNS` value columns a table, a run's columns together)."""
        shown = [f for f in fields if any(f in m.block for m in models)]
        groups: list[list[tuple[str, Any]]] = [[]]  # tables of (heading, cell of a field)
        for k, model in enumerate(models):
            columns: list[tuple[str, Any]] = [
                (model.series.label, lambda f, m=model: self.value_cell(name, m, f))]
            if model.is_b:
                a = models[k - 1]
                heading = "B \u2212 A" + (f" ({model.run.label})" if len(self.runs) > 1 else "")
                columns.append((heading, lambda f, a=a, b=model: difference_cell(
                    a.block, b.block, f, counts=self.counts)))
            if k > 0 and models[k - 1].run is model.run:  # B beside its run's A
                groups[-1] += columns
            elif groups[-1] and len(groups[-1]) + _run_width(models, k) > MAX_VALUE_COLUMNS:
                groups.append(columns)
            else:
                groups[-1] += columns
        tables = []
        for group in groups:
            rows = [[f"<span class=desc>{escape(fields[field])}</span>",
                     *(text(field) for _, text in group)] for field in shown]
            tables.append(self.table("values", ["Value", *(heading for heading, _ in group)],
                                     rows, label=f"{name}: values"))
        return "".join(tables)

    def value_cell(self, name: str, model: Model, field: str) -> str:
        text = cell(model.block, field, counts=self.counts)
        base = self.baseline_block(name, model)
        if base is not None and field in model.block:
            role = (base.get("compare") if model.is_b else None) or base
            text += self.change(model.block, role, field)
        section = self.sections.get(model.run.metrics[name]["kind"])
        flag = section.flag(field, model.block.get(field), model.block) if section else ""
        return text + (f"<span class=flag>⚠ {flag}</span>" if flag else "")

    def differences(self, name: str, rows: Sequence[figures.Difference], what: str,
                    over: str = "tags") -> str:
        """A forest plot of differences B - A (``rows``: those with an interval; ``over``:
        what their q-values adjust over, and what a row is: the tags, the slices of a
        column)."""
        if not rows:
            return ""
        svg = figures.differences(rows, f"{what} B \u2212 A (same units as the value)",
                                  self.key(name, "differences"), over)
        whose = "the tag's" if over == "tags" else "the slice's"
        return self.figure(svg, f"{what}: difference B \u2212 A with its paired 95% interval. "
                           "Colour says the direction (B better, B worse, no evidence); a filled "
                           "marker is significant (the interval excludes 0"
                           + (f", and {whose} q-value is below 0.05" if any(
                               row.q is not None for row in rows) else "")
                           + "), a hollow one is not.", wide=True)

    # a kind without a section of its own, and the tables kinds share -------------------
    def other(self, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
        fields = {f: f for run in runs for f, v in run.metrics[name].items()
                  if f != "kind" and (v is None or is_number(v) or isinstance(v, str))}
        note = "A kind this version of the report does not know: its plain values."
        return self.count_table(runs, name, fields, share_of=None), [note]

    def count_table(self, runs: Sequence[Run], name: str, fields: dict[str, str],
                    share_of: str | None) -> str:
        """One row per value (those any run has), one column per run: the value, its share
        of ``share_of`` (a field: the whole), its change against the baseline."""
        shown = [f for f in fields if any(f in run.metrics[name] for run in runs)]
        rows = [[f"<span class=desc>{escape(fields[field])}</span>",
                 *(self.count_cell(run, name, field, share_of) for run in runs)]
                for field in shown]
        return self.table("counts", ["Value", *(run.label for run in runs)], rows)

    def count_cell(self, run: Run, name: str, field: str, share_of: str | None) -> str:
        block = run.metrics[name]
        text = cell(block, field, counts=self.counts)
        total = block.get(share_of) if share_of else None
        value = block.get(field)
        if field != share_of and isinstance(value, (int, float)) \
                and isinstance(total, (int, float)) and total > 0:
            text += f"<span class=ci>{100.0 * value / total:.1f}% of rows</span>"
        if self.baseline is not None and run is not self.baseline:
            base = self.baseline.metrics.get(name) or {}
            if base.get("kind") == block.get("kind"):
                text += self.change(block, base, field)
        return text


def _merged_text(merged: Any) -> str:
    """What a merged run covers: each saved run's state, the files it read, when, on how
    many ranks ('' for a run that is not a merge)."""
    if not isinstance(merged, list) or not merged:
        return ""
    items = []
    for part in merged:
        if not isinstance(part, dict):
            continue
        inputs = " ".join(map(str, part.get("inputs") or [])) or "inputs not recorded"
        when = [str(part["started"])] if part.get("started") else []
        ranks = part.get("ranks")
        if is_number(ranks):
            when.append(f"{ranks} rank{'s' if ranks != 1 else ''}")
        items.append(f"<li><span class=path>{escape(str(part.get('state', '?')))}</span>: "
                     f"<span class=path>{escape(inputs)}</span>"
                     + (f" ({escape(', '.join(when))})" if when else "") + "</li>")
    return f"<span class=ci>merged from:<ul class=merged>{''.join(items)}</ul></span>"


def _weights_words(run: Run, name: str) -> str:
    """How ``run``'s metric ``name`` is weighted, in a few words."""
    if run.provenance is None:
        return "not recorded (a file of an older mpieval)"
    entries = run.provenance.get("weights")
    spec = entries.get(name) if isinstance(entries, dict) else None
    if not isinstance(spec, dict):
        return "unweighted (every row counts once)"
    column = escape(str(spec.get("column", "?")))
    meaning = escape(str(spec.get("meaning", "frequency")))
    return f"weighted by <code>{column}</code> ({meaning})"


def _run_width(models: Sequence[Model], k: int) -> int:
    """The columns of the run whose first model is ``models[k]``: 1, or 3 with B and B - A."""
    return 3 if k + 1 < len(models) and models[k + 1].is_b else 1


def _half_width(block: dict[str, Any], field: str) -> float | None:
    """Half the width of ``field``'s 95% interval in ``block`` (None: it has none)."""
    intervals = block.get("ci95")
    if not isinstance(intervals, dict):
        return None
    low, high = pair(intervals.get(field))
    return None if low is None or high is None else (high - low) / 2


def gate_text(run: Run) -> str:
    """The gate's verdict beside a run's label (``mpieval eval --gate``): ``gate: PASS`` or
    ``gate: FAIL, F of N checks``; '' without a gate."""
    if run.gate is None:
        return ""
    failed = sum(check.get("passed") is False for check in run.gate["checks"]
                 if isinstance(check, dict))
    checks = len(run.gate["checks"])
    verdict = "PASS" if run.gate["passed"] else f"FAIL, {failed} of {checks} checks"
    return (f"<span class=ci>gate: <b>{escape(verdict)}</b> "
            f"(<span class=path>{escape(str(run.gate.get('rules_file', '')))}</span>)</span>")

