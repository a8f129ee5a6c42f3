"""``mpieval report``: one self-contained HTML page of one or more runs' ``--json`` results.

:func:`load_run` reads and checks one result file (the layout of the JSON reference, each
kind's fields as its declaration names them; a file that is not an mpieval result, or of
another layout, is an :class:`InputError` naming it),
:func:`render` turns runs into the HTML text (pure: dicts in, text out), and
:func:`write_report` does both and writes the page atomically. The figures are
matplotlib drawings inlined as SVG (:mod:`mpieval.figures`, the optional ``report``
extra): no script, no font and no image is fetched, so the page opens offline and prints
as it shows.

The page is generic: a header, the runs, and one section per metric drawn by its kind's
``report`` module (``mpieval/kinds/<kind>/report.py``: ``section(page, name, runs)``
returns the section's HTML and its notes), with the tables, figures and formatting that
kinds share here (:class:`Page`). A kind without a section shows its plain values. A run
with ``--compare`` adds model B's values and the differences B - A with intervals and
p-values; several runs are overlaid in each figure and set side by side in each table.
Values a run lacks (the statistics of an older mpieval) are said to be missing, never
invented.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import json
import math
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from mpieval import figures
from mpieval.config import RUN_KEY
from mpieval.errors import InputError
from mpieval.figures import Estimate, Series
from mpieval.kernels.stats import MIN_CLUSTERS
from mpieval.kinds import KINDS

# Fields that are counts, in every kind: printed with thousands separators.
COUNTS = frozenset().union(*(kind.counts for kind in KINDS.values()))
OLDER = "(written by an older mpieval, or without the statistics)"


@dataclass(frozen=True)
class Run:
    """One result file: its path, the short label the page calls it by, its metrics, and
    its provenance (the JSON's top-level ``run`` object; None in files of older versions)."""

    path: str
    label: str
    metrics: dict[str, dict[str, Any]]
    provenance: dict[str, Any] | None = None


# -- reading ---------------------------------------------------------------------------


def load_run(path: str, label: str | None = None) -> Run:
    """The result file at ``path``, checked; an :class:`InputError` naming it otherwise."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # /dev/zero, a pipe: never ends
            raise InputError(path, "cannot read it: not a regular file")
        with open(path, encoding="utf-8") as source:
            text = source.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"cannot read it: {getattr(error, 'strerror', None) or error}"
                         ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(path, f"is not JSON (line {error.lineno} column {error.colno}: "
                         f"{error.msg}); expected the --json output of mpieval eval") from None
    try:
        metrics, provenance = split_provenance(data)
        check_result(metrics)
    except ValueError as error:
        raise InputError(path, str(error)) from None
    return Run(path=path, label=label or run_label(path), metrics=metrics,
               provenance=provenance)


def split_provenance(data: Any) -> tuple[Any, dict[str, Any] | None]:
    """The metrics of a result and its ``run`` object (None when the file has none: older
    versions; a block named ``run`` with a ``kind`` is a metric of such a file)."""
    if not isinstance(data, dict) or RUN_KEY not in data:
        return data, None
    run = data[RUN_KEY]
    if isinstance(run, dict) and isinstance(run.get("kind"), str):
        return data, None
    if not isinstance(run, dict):
        raise ValueError(f"is not an mpieval result: its {RUN_KEY!r} is "
                         f"{type(run).__name__}, not the run's object")
    return {name: block for name, block in data.items() if name != RUN_KEY}, run


def run_label(path: str) -> str:
    name = os.path.basename(path)
    return name[:-5] if name.endswith(".json") and len(name) > 5 else name


def load_runs(paths: Sequence[str]) -> list[Run]:
    """Every file checked; labels are the file names, or the paths when names repeat."""
    names = [run_label(path) for path in paths]
    if len(set(names)) < len(names):
        names = list(paths)
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return [load_run(path, label) for path, label in zip(paths, labels, strict=True)]


def check_result(data: Any) -> None:
    """Raise ValueError (a one-line message) unless ``data`` is an mpieval result: every
    block of a known kind has the fields its declaration requires (``Kind.required``, or
    per tag ``Kind.tag_required``). The statistics are optional; when present they are
    checked."""
    if not isinstance(data, dict) or not data:
        found = type(data).__name__ if not isinstance(data, dict) else "no metric"
        raise ValueError(f"is not an mpieval result: expected an object of metrics keyed by "
                         f"name, found {found}")
    for name, block in data.items():
        if not isinstance(block, dict) or not isinstance(block.get("kind"), str):
            raise ValueError(f"is not an mpieval result: {name!r} is not a metric block with "
                             "a kind")
        kind = block["kind"]
        declared = KINDS.get(kind)
        if declared is None:  # a kind this version does not know: drawn as plain values
            continue
        where = f"metric {name!r}"
        missing = [field for field in declared.required if field not in block]
        if declared.tag_required is not None and "tags" not in block:
            missing = ["tags", *missing]
        if missing:
            raise ValueError(f"has an older or unknown layout: {where} ({kind}) has "
                             f"no {missing[0]!r}")
        if declared.tag_required is None:
            _check_values(block, declared.required, where)
            _check_statistics(block, where)
            continue
        tags = block["tags"]
        if not isinstance(tags, dict) or not tags:
            raise ValueError(f"has an older or unknown layout: {where} has no tag blocks")
        for tag, values in tags.items():
            if not isinstance(values, dict):
                raise ValueError(f"{where}, tag {tag!r}: not an object")
            missing = [field for field in declared.tag_required if field not in values]
            if missing:
                raise ValueError(f"has an older or unknown layout: {where}, tag {tag!r} "
                                 f"has no {missing[0]!r}")
            _check_values(values, declared.tag_required, f"{where}, tag {tag!r}")
            _check_statistics(values, f"{where}, tag {tag!r}")


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_values(block: dict[str, Any], fields: Iterable[str], where: str) -> None:
    for field in fields:
        value = block[field]
        if value is not None and not is_number(value):
            raise ValueError(f"{where}: {field} is {value!r}, not a number or null")


def _check_statistics(block: dict[str, Any], where: str) -> None:
    for field, what in CURVES.items():
        points = block.get(field)
        if points is None:
            continue
        width = what.count(",") + 1
        if not isinstance(points, list) or not all(
                isinstance(p, list) and len(p) == width and all(is_number(v) for v in p)
                for p in points):
            raise ValueError(f"{where}: {field} is not a list of {what}")
    intervals = block.get("ci95")
    if intervals is not None:
        if not isinstance(intervals, dict):
            raise ValueError(f"{where}: ci95 is not an object")
        for field, pair in intervals.items():
            _check_pair(pair, f"{where}: ci95 of {field}")
    compare = block.get("compare")
    if compare is not None:
        if not isinstance(compare, dict):
            raise ValueError(f"{where}: compare is not an object")
        for field, value in compare.items():
            if field.endswith("_ci95"):
                _check_pair(value, f"{where}: compare {field}")
        _check_statistics({k: v for k, v in compare.items() if k != "compare"},
                          f"{where}, compare")


# The curves of an auc block: the shape of each point, as the error message names it.
CURVES = {"roc_curve": "[fpr, tpr] pairs",
          "calibration_curve": "[mean_pred, actual_ctr, rows] triples",
          "pr_curve": "[recall, precision] pairs",
          "score_histogram": "[pred_low, pred_high, negatives, positives] rows"}


def _check_pair(pair: Any, where: str) -> None:
    if pair is not None and not (isinstance(pair, list) and len(pair) == 2
                                 and all(v is None or is_number(v) for v in pair)):
        raise ValueError(f"{where} is {pair!r}, not a [low, high] pair or null")


# -- writing ---------------------------------------------------------------------------


def require_plotting() -> None:
    """Nothing, or an :class:`InputError` saying how to install matplotlib."""
    try:
        figures.require_matplotlib()
    except ImportError as error:
        raise InputError("report", str(error)) from None


def write_report(paths: Sequence[str], output: str, *, flag: str = "-o") -> None:
    """Read and check the runs at ``paths`` and write their page to ``output``
    atomically; nothing is written when anything is wrong (:class:`InputError`)."""
    runs = load_runs(paths)
    check_output(output, flag)
    page = render(runs)
    write_page(output, page, flag=flag)


def write_run_report(results: dict[str, Any], output: str, *, json_path: str | None = None,
                     flag: str = "--report") -> None:
    """The page of one run's results (the object ``--json`` writes), for ``--report``."""
    name = os.path.basename(output)
    label = name.rsplit(".", 1)[0] if "." in name[1:] else name
    source = json_path or "(this run; no --json file)"
    metrics, provenance = split_provenance(results)
    write_page(output, render([Run(path=source, label=label, metrics=metrics,
                                   provenance=provenance)]), flag=flag)


def check_output(path: str, flag: str = "-o") -> None:
    """``path`` can be written (its directory exists and is writable)."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise InputError(flag, f"cannot write {path}: it exists and is not a regular file")
    if not os.path.isdir(directory):
        raise InputError(flag, f"cannot write {path}: no directory {directory}")


def write_page(path: str, text: str, flag: str = "-o") -> None:
    """Write ``text`` to ``path``: a temporary file beside it (fsynced), then a rename
    (and the directory fsynced), as every output is; a failure is an error of ``flag``
    (:func:`mpieval.locations.output_failure`: exit 1 for a full disk)."""
    from mpieval.checkpoint import sync_directory
    from mpieval.locations import output_failure

    check_output(path, flag)
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise output_failure(flag, path, error) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_directory(directory)


# -- the page --------------------------------------------------------------------------


def render(runs: Sequence[Run]) -> str:
    """The HTML page of ``runs`` (checked by :func:`load_run`), self-contained."""
    require_plotting()
    return Page(runs).html()


@dataclass(frozen=True)
class Model:
    """One run's model in a metric: A (the run's pred), or B (its ``--compare`` column)."""

    run: Run
    block: dict[str, Any]  # A's block, or the compare block for B
    series: Series
    is_b: bool


# Tags drawn in a figure at most ("all" included); the others are in a table on demand.
DRAWN_TAGS = 20
# A difference between models, or a tag's, counts as significant below this q-value.
Q_LEVEL = 0.05
# Sane ranges: a value outside is flagged in the text (field: (test, what it says)).
COPC_RANGE = (0.8, 1.25)


class Page:
    """Builds the page: the header (the runs and their provenance), the summary, then one
    section per metric; keeps one colour per model label over every figure, and counts
    the figures for unique SVG ids. With several runs the first is the baseline."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self.runs = list(runs)
        self.baseline = self.runs[0] if len(self.runs) > 1 else None
        self.figure_count = 0
        self.colours: dict[str, str] = {}

    def html(self) -> str:
        names = list(dict.fromkeys(name for run in self.runs for name in run.metrics))
        summary = self.summary(names)
        sections = [self.section(name) for name in names]
        toc = "".join(f'<li><a href="#{_anchor(name)}">{escape(name)}</a></li>' for name in names)
        title = "mpieval report: " + ", ".join(run.label for run in self.runs)
        return _PAGE.format(title=escape(title), style=_STYLE, runs=self.runs_table(),
                            summary=summary, toc=toc, sections="\n".join(sections))

    # the header: each run, where it comes from ---------------------------------------
    def runs_table(self) -> str:
        rows = []
        for run in self.runs:
            label = escape(run.label) + (" <span class=base>baseline</span>"
                                         if run is self.baseline else "")
            prov = run.provenance
            if prov is None:
                rows.append([label, f"<span class=path>{escape(run.path)}</span>",
                             "<span class=undefined>no provenance: the JSON has no "
                             "<code>run</code> object (written by an older mpieval)</span>",
                             "", "", escape(", ".join(run.metrics))])
                continue
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
                      f"<span class=ci>command: <code class=path>"
                      f"{escape(' '.join(map(str, command)))}</code></span>")
            rows.append([label, source, f"{started}<span class=ci>mpieval {version}</span>",
                         escape(scale), self.weights_text(run), escape(", ".join(run.metrics))])
        table = self.table("runs", ["Run", "File, inputs, command", "Started (UTC)", "Read",
                                    "Weights", "Metrics"], rows, left=(0, 1, 2, 4, 5))
        note = ""
        if self.baseline is not None:
            note = (f"<p class=small>The first run named, <b>{escape(self.baseline.label)}</b>, "
                    "is the baseline: every value of the other runs shows its change against "
                    "it (Δ).</p>")
        return table + note

    def weights_text(self, run: Run) -> str:
        """How the run's metrics were weighted, from its provenance ('' when unweighted)."""
        weights = (run.provenance or {}).get("weights")
        if not isinstance(weights, dict) or not weights:
            return "none" if run.provenance is not None else ""
        parts = []
        for name, spec in weights.items():
            if not isinstance(spec, dict):
                continue
            rows = (run.metrics.get(name) or {}).get("rows")
            parts.append(f"{escape(name)}: {weighting_text(spec, rows)}")
        return "<br>".join(parts)

    # the summary: one line per metric, before any figure ------------------------------
    def summary(self, names: Sequence[str]) -> str:
        items = []
        for name in names:
            present = [run for run in self.runs if name in run.metrics]
            kind = present[0].metrics[name]["kind"]
            present = [run for run in present if run.metrics[name]["kind"] == kind]
            summarise = kind_function(kind, "summary")
            lines = summarise(self, name, present) if summarise is not None else [
                "a kind this version of the report does not know: its plain values below"]
            inner = "".join(f"<li>{line}</li>" for line in lines)
            items.append(f'<li><a href="#{_anchor(name)}"><b>{escape(name)}</b></a> '
                         f"<span class=kind>{escape(kind)}</span><ul>{inner}</ul></li>")
        return (f'<section id="summary"><h2>Summary</h2><ul class=summary>{"".join(items)}</ul>'
                "<p class=small>Each value with its 95% interval; B \u2212 A: the paired "
                "difference of the two models on the same rows (or users), its interval and "
                "two-sided p-value. ⚠ marks a value outside its sane range.</p></section>")

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

    def change(self, value: Any, base: Any) -> str:
        """A value's change against the baseline's, as a small line ('' when undefined)."""
        if self.baseline is None or not is_number(value) or not is_number(base):
            return ""
        return (f"<span class=delta>Δ {value - base:+.4g} vs {escape(self.baseline.label)}"
                "</span>")

    def run_lines(self, name: str, runs: Sequence[Run], fields: Sequence[tuple[str, str]],
                  block_of: Any = None) -> list[str]:
        """Summary lines of a metric without models A and B: per run its headline values
        (``fields``: field, name) and their changes against the baseline.
        ``block_of(metric block)`` picks the block the values are in (the block itself)."""
        pick = block_of or (lambda block: block)
        base = None
        if self.baseline is not None and name in self.baseline.metrics:
            base = pick(self.baseline.metrics[name])
        lines = []
        for run in runs:
            block = pick(run.metrics[name])
            values = []
            for field, what in fields:
                text = headline(block, field, what)
                if text and base is not None and run is not self.baseline:
                    text += self.change(block.get(field), base.get(field))
                if text:
                    values.append(text)
            lines.append(f"{escape(run.label)}: " + ", ".join(values))
        return lines

    # one section per metric name: the runs that have it, drawn by its kind -----------
    def section(self, name: str) -> str:
        present = [run for run in self.runs if name in run.metrics]
        kind = present[0].metrics[name]["kind"]
        notes = [f"{escape(run.label)} has {escape(name)} as kind "
                 f"{escape(run.metrics[name]['kind'])}; it is left out here."
                 for run in present if run.metrics[name]["kind"] != kind]
        present = [run for run in present if run.metrics[name]["kind"] == kind]
        absent = [run.label for run in self.runs if name not in run.metrics]
        if absent:
            notes.append(f"Not in {escape(', '.join(absent))}.")
        section = KINDS[kind].report_section() if kind in KINDS else None
        body, more_notes = (section(self, name, present) if section is not None
                            else self.other(name, present))
        notes += more_notes
        note_html = "".join(f"<p class=note>{note}</p>" for note in notes)
        return (f'<section id="{_anchor(name)}"><h2>{escape(name)} <span class=kind>{escape(kind)}'
                f"</span></h2>{note_html}{body}</section>")

    def models(self, blocks: Sequence[tuple[Run, dict[str, Any]]]) -> list[Model]:
        """A and, with ``--compare``, B of each run, each with its colour and label."""
        several = len(self.runs) > 1
        models: list[Model] = []
        for run, block in blocks:
            compare = block.get("compare")
            a_label = run.label
            if compare is not None:
                a_label = f"{run.label}: A" if several else "A"
            models.append(Model(run, block, self.series(a_label), False))
            if compare is not None:
                b_label = f"B ({compare.get('pred', 'compare')})"
                if several:
                    b_label = f"{run.label}: {b_label}"
                models.append(Model(run, compare, self.series(b_label, True), True))
        return models

    def series(self, label: str, dashed: bool = False) -> Series:
        """The figures' series of a model: the same label keeps its colour on the page."""
        if label not in self.colours:
            self.colours[label] = figures.PALETTE[len(self.colours) % len(figures.PALETTE)]
        return Series(label, self.colours[label], dashed)

    def figure(self, svg: str, caption: str, wide: bool = False) -> str:
        return (f"<figure class=\"plot{' wide' if wide else ''}\">{svg}"
                f"<figcaption>{caption}</figcaption></figure>")

    def key(self, name: str, what: str) -> str:
        self.figure_count += 1
        return f"f{self.figure_count}-{_anchor(name)}-{what}"

    @staticmethod
    def table(cls: str, head: Sequence[str], rows: Sequence[Sequence[str]], *,
              left: Sequence[int] = (0,), row_classes: Sequence[str] | None = None) -> str:
        """A table whose cells carry their column's name (``data-label``): on a narrow
        screen each row stacks as label: value lines instead of scrolling sideways.
        ``head`` is plain text; the cells are HTML."""
        heads = "".join(f"<th{' class=left' if i in left else ''}>{escape(h)}</th>"
                        for i, h in enumerate(head))
        body = []
        for r, row in enumerate(rows):
            extra = row_classes[r] if row_classes else ""
            cells = "".join(
                f"<td data-label=\"{escape(head[i])}\"{' class=left' if i in left else ''}>"
                f"{text}</td>" for i, text in enumerate(row))
            body.append(f"<tr{f' class={extra}' if extra else ''}>{cells}</tr>")
        return (f"<div class=table-wrap><table class=\"{cls} stack\"><thead><tr>{heads}</tr>"
                f"</thead><tbody>{''.join(body)}</tbody></table></div>")

    def value_table(self, name: str, models: Sequence[Model], fields: dict[str, str]) -> str:
        """One row per value (those any model has), one column per model, and after each
        run's B a column B - A (with the paired interval and p-value where the run has
        them); intervals, changes against the baseline and flags below the values."""
        shown = [f for f in fields if any(f in m.block for m in models)]
        columns: list[tuple[str, Any]] = []  # heading, function of the field
        for k, model in enumerate(models):
            columns.append((model.series.label, lambda f, m=model: self.value_cell(name, m, f)))
            if model.is_b:
                a = models[k - 1]
                heading = "B \u2212 A" + (f" ({model.run.label})" if len(self.runs) > 1 else "")
                columns.append((heading, lambda f, a=a, b=model: difference_cell(a.block,
                                                                                 b.block, f)))
        rows = [[f"<span class=desc>{escape(fields[field])}</span>",
                 *(text(field) for _, text in columns)] for field in shown]
        return self.table("values", ["Value", *(heading for heading, _ in columns)], rows)

    def value_cell(self, name: str, model: Model, field: str) -> str:
        text = cell(model.block, field)
        base = self.baseline_block(name, model)
        if base is not None and field in model.block:
            role = (base.get("compare") if model.is_b else None) or base
            text += self.change(model.block.get(field), role.get(field))
        flag = flag_text(field, model.block.get(field), model.block)
        return text + (f"<span class=flag>⚠ {flag}</span>" if flag else "")

    def differences(self, name: str, rows: Sequence[figures.Difference], what: str) -> str:
        """A forest plot of differences B - A (``rows``: those with an interval)."""
        if not rows:
            return ""
        svg = figures.differences(rows, f"{what} B \u2212 A (same units as the value)",
                                  self.key(name, "differences"))
        return self.figure(svg, f"{what}: difference B \u2212 A with its paired 95% interval. "
                           "Colour says the direction (B better, B worse, no evidence); a filled "
                           "marker is significant (the interval excludes 0"
                           + (", and the tag's q-value is below 0.05" if any(
                               row.q is not None for row in rows) else "")
                           + "), a hollow one is not.", wide=True)

    # tags: sorted by rows, the few drawn, every one in a table --------------------------
    @staticmethod
    def ordered_tags(blocks: Sequence[dict[str, dict[str, Any]]]) -> list[str]:
        """The tags of ``blocks`` (each a run's ``tags``): ``all`` first, then by rows
        (the most first; ties by name)."""
        rows: dict[str, float] = {}
        for tags in blocks:
            for tag, values in tags.items():
                count = values.get("real_ins_num")
                rows[tag] = max(rows.get(tag, 0.0), float(count) if is_number(count) else 0.0)
        return sorted(rows, key=lambda tag: (tag != "all", -rows[tag], tag))

    @staticmethod
    def drawn_tags(tags: Sequence[str], blocks: Sequence[dict[str, dict[str, Any]]],
                   fields: Sequence[str]) -> list[str]:
        """At most :data:`DRAWN_TAGS` of ``tags`` (in their order) to draw: ``all``, the
        most significant by q (up to half), then the largest. A tag with too few users for
        an interval is never drawn (in the table, it says so)."""
        drawable = [tag for tag in tags
                    if not all(too_few(tb.get(tag) or {}) for tb in blocks if tag in tb)]
        def best_q(tag: str) -> float:
            qs = [values["compare"].get(f"{field}_diff_q") for tb in blocks
                  if (values := tb.get(tag)) and isinstance(values.get("compare"), dict)
                  for field in fields]
            return min([q for q in qs if is_number(q)], default=math.inf)
        chosen = ["all"] if "all" in drawable else []
        significant = sorted((tag for tag in drawable if tag != "all" and best_q(tag) < Q_LEVEL),
                             key=lambda tag: (best_q(tag), tags.index(tag)))
        chosen += significant[:DRAWN_TAGS // 2]
        for tag in drawable:
            if len(chosen) >= DRAWN_TAGS:
                break
            if tag not in chosen:
                chosen.append(tag)
        return [tag for tag in tags if tag in chosen]

    @staticmethod
    def tag_tables(tags: Sequence[str], drawn: Sequence[str], table: Any) -> str:
        """The table of the drawn tags, and when there are more, the others in a table that
        opens on demand. ``table(tags)`` makes one."""
        rest = [tag for tag in tags if tag not in drawn]
        if not rest:
            return table(tags)
        return (table(drawn) + f"<details><summary>The other {len(rest):,} tags, by rows"
                f"</summary>{table(rest)}</details>")

    # a kind without a section of its own, and the tables kinds share -------------------
    def other(self, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
        fields = {f: f for run in runs for f, v in run.metrics[name].items()
                  if f != "kind" and (v is None or is_number(v) or isinstance(v, str))}
        note = "A kind this version of the report does not know: its plain values."
        return self.count_table(runs, name, fields, share_of=None), [note]

    def count_table(self, runs: Sequence[Run], name: str, fields: dict[str, str],
                    share_of: str | None) -> str:
        shown = [f for f in fields if any(f in run.metrics[name] for run in runs)]
        rows = []
        for field in shown:
            cells = [f"<span class=desc>{escape(fields[field])}</span>"]
            for run in runs:
                block = run.metrics[name]
                text = cell(block, field)
                total = block.get(share_of) if share_of else None
                value = block.get(field)
                if field != share_of and isinstance(value, (int, float)) \
                        and isinstance(total, (int, float)) and total > 0:
                    text += f"<span class=ci>{100.0 * value / total:.1f}% of rows</span>"
                if self.baseline is not None and run is not self.baseline:
                    base = self.baseline.metrics.get(name) or {}
                    if base.get("kind") == block.get("kind"):
                        text += self.change(value, base.get(field))
                cells.append(text)
            rows.append(cells)
        return self.table("counts", ["Value", *(run.label for run in runs)], rows)


def kind_function(kind: str, attribute: str) -> Any:
    """A function of a kind's report module (``section``'s module), or None."""
    declared = KINDS.get(kind)
    if declared is None or declared.report is None:
        return None
    module = importlib.import_module(declared.report.split(":")[0])
    return getattr(module, attribute, None)


def weighting_text(spec: dict[str, Any], rows: Any = None) -> str:
    """A metric's weights as the page states them: the column, their meaning, the rows
    and the weights' sum."""
    meaning = spec.get("meaning", "frequency")
    what = {"frequency": "frequency weights: a row of weight w counts as w rows, in the "
                         "values and in their intervals",
            "importance": "importance weights (inverse sampling rates): a row of weight w "
                          "stands for w rows in the values; the intervals count each class's "
                          "effective size, (sum w)^2 / sum w^2"}.get(
        str(meaning), f"weights meaning {escape(str(meaning))}")
    total = spec.get("sum")
    counts = ", ".join(part for part in (
        f"{rows:,} rows" if is_number(rows) else "",
        f"weights summing to {total:,.6g}" if is_number(total) else "") if part)
    column = escape(str(spec.get("column", "?")))
    return f"column <code>{column}</code> ({what}){'; ' + counts if counts else ''}"


def too_few(values: dict[str, Any]) -> bool:
    """A tag with fewer valid users than a per-user interval needs (``MIN_CLUSTERS``)."""
    users = values.get("valid_user_count")
    return is_number(users) and users < MIN_CLUSTERS


def too_few_text(values: dict[str, Any]) -> str:
    return (f"<span class=ci title='an interval needs {MIN_CLUSTERS} valid users'>too few "
            f"users ({values.get('valid_user_count')} valid)</span>")


def tag_cell(values: dict[str, Any], field: str) -> str:
    """A per-user value of a tag (compact): its interval below, or "too few users" when
    the tag has fewer valid users than an interval needs."""
    if field in values and too_few(values) and values.get(field) is not None:
        return value_text(values[field], field, digits=4) + too_few_text(values)
    return cell(values, field, compact=True)


def flag_text(field: str, value: Any, block: dict[str, Any]) -> str:
    """What is wrong with a value outside its sane range ('' when in range)."""
    if not is_number(value):
        return ""
    if field == "ne" and value >= 1:
        return "NE ≥ 1: no better than predicting the base rate"
    if field == "copc" and not COPC_RANGE[0] <= value <= COPC_RANGE[1]:
        return f"COPC outside [{COPC_RANGE[0]}, {COPC_RANGE[1]}]: miscalibrated"
    if field in ("auc", "uauc", "wuauc") and value <= 0.5:
        return f"{field.upper()} ≤ 0.5: no better than random"
    if field in ("actual_ctr", "positives") and value == 0 and "num" in block:
        return "no clicks in the run"
    return ""


def flags(block: dict[str, Any], fields: Iterable[str]) -> list[str]:
    return [text for field in fields if (text := flag_text(field, block.get(field), block))]


def difference_cell(a: dict[str, Any], b: dict[str, Any], field: str,
                    compact: bool = False) -> str:
    """B - A of a value: the paired difference with its interval and p-value when B's
    block has them (``FIELD_diff``), else the plain difference of the two values."""
    if f"{field}_diff" in b:
        value = b[f"{field}_diff"]
        low, high = pair(b.get(f"{field}_diff_ci95"))
        text = value_text(value, signed=True)
        if f"{field}_diff_ci95" in b:
            text += f"<span class=ci>{interval_cell(low, high, compact, signed=True)}</span>"
        tests = [p_text(b[f"{field}_diff_p"])] if f"{field}_diff_p" in b else []
        if f"{field}_diff_q" in b:
            tests.append(q_text(b[f"{field}_diff_q"]))
        if tests:
            text += f"<span class=ci>{escape(', '.join(tests))}</span>"
        return text
    if is_number(a.get(field)) and is_number(b.get(field)) and field not in COUNTS:
        return value_text(b[field] - a[field], signed=True)
    return "<span class=absent title='not in this run'>·</span>"


def headline(block: dict[str, Any], field: str, name: str) -> str:
    """``AUC 0.6845 (95% 0.6802 to 0.6887)``, as the summary says a value."""
    if field not in block:
        return ""
    value = block[field]
    if value is None:
        return f"{name} <span class=undefined>undefined</span>"
    text = f"{name} {value_text(value, field) if field in COUNTS else f'{value:#.4g}'}"
    intervals = block.get("ci95")
    if isinstance(intervals, dict) and field in intervals:
        low, high = pair(intervals[field])
        text += (f" (95% {low:#.4g} to {high:#.4g})" if low is not None and high is not None
                 else " (95% interval undefined)")
    return text


def verdict(compare: dict[str, Any], field: str, name: str) -> str:
    """``AUC +0.0040 (95% +0.0017 to +0.0063, p = 0.0006)``: B - A with its paired interval
    and p-value, the digits set by the interval's width; with the direction in words."""
    value = compare.get(f"{field}_diff")
    if not is_number(value):
        return f"{name} <span class=undefined>undefined</span>"
    low, high = pair(compare.get(f"{field}_diff_ci95"))
    digits = difference_digits(low, high)
    inside = []
    if low is not None and high is not None:
        inside.append(f"95% {low:+.{digits}f} to {high:+.{digits}f}")
    else:
        inside.append("95% interval undefined")
    if f"{field}_diff_p" in compare:
        inside.append(p_text(compare[f"{field}_diff_p"]))
    text = f"{name} {value:+.{digits}f} ({', '.join(inside)})"
    if low is not None and high is not None and not low <= 0 <= high:
        better = value > 0
        text += (f" <span class={'better' if better else 'worse'}>B "
                 f"{'better' if better else 'worse'}</span>")
    else:
        text += " <span class=neutral>no evidence of a difference</span>"
    return text


def difference_digits(low: float | None, high: float | None) -> int:
    """Decimals for a difference: 4, more when its interval is narrower (two significant
    digits of the half-width), at most 6."""
    if low is None or high is None or high <= low:
        return 4
    half = (high - low) / 2
    return max(4, min(6, 1 - math.floor(math.log10(half))))


def q_count(tags: dict[str, dict[str, Any]], field: str) -> str:
    """``k of n tags differ at q < 0.05`` over the tags (``all`` aside) of a compared
    metric, and how many had too few users to test."""
    compared = {tag: values["compare"] for tag, values in tags.items()
                if tag != "all" and isinstance(values.get("compare"), dict)}
    if not compared or not any(f"{field}_diff_q" in c for c in compared.values()):
        return ""
    qs = [c.get(f"{field}_diff_q") for c in compared.values()]
    significant = sum(1 for q in qs if is_number(q) and q < Q_LEVEL)
    untested = sum(1 for q in qs if not is_number(q))
    text = f"{significant} of {len(compared)} tags differ at q &lt; {Q_LEVEL}"
    if untested:
        text += f" ({untested} of them untested: too few users)"
    return text


def estimate(block: dict[str, Any] | None, field: str) -> Estimate:
    if block is None:
        return Estimate(None)
    low, high = pair((block.get("ci95") or {}).get(field))
    return Estimate(block.get(field), low, high)


def pair(value: Any) -> tuple[float | None, float | None]:
    """A ``[low, high]`` of the JSON as a tuple; (None, None) for null."""
    return (value[0], value[1]) if isinstance(value, list) else (None, None)


def p_text(p: float | None) -> str:
    """A two-sided p-value as the page prints it."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p undefined"
    if p < 1e-4:
        return "p < 0.0001"
    return f"p = {p:.2g}" if p < 0.01 else f"p = {p:.2f}"


def value_text(value: Any, field: str = "", signed: bool = False, digits: int = 6) -> str:
    if value is None:
        return "<span class=undefined title='undefined for this data (null in the JSON)'>" \
               "undefined</span>"
    if isinstance(value, str):
        return escape(value)
    if field in COUNTS and float(value).is_integer():
        return f"{int(value):,}"
    if field in COUNTS:
        return f"{value:,.1f}"
    return f"{value:+.4g}" if signed else f"{value:.{digits}g}"


def interval_text(low: float | None, high: float | None, present: bool = True,
                  signed: bool = False, digits: int = 6) -> str:
    if not present:
        return ""
    if low is None or high is None:
        return "<span class=undefined>undefined</span>"
    return f"{low:+.4g} to {high:+.4g}" if signed else f"{low:.{digits}g} to {high:.{digits}g}"


def q_text(q: float | None) -> str:
    """A Benjamini-Hochberg q-value as the page prints it."""
    if q is None or (isinstance(q, float) and math.isnan(q)):
        return "q undefined"
    return "q < 0.0001" if q < 1e-4 else f"q = {q:.2g}" if q < 0.01 else f"q = {q:.2f}"


def cell(block: dict[str, Any], field: str, compact: bool = False) -> str:
    """A value, and its 95% interval below it when the block has one; ``compact`` (the
    tags' tables): 4 significant digits and the interval as ``[low, high]``."""
    if field not in block:
        return "<span class=absent title='not in this run'>·</span>"
    text = value_text(block[field], field, digits=4 if compact else 6)
    intervals = block.get("ci95")
    if isinstance(intervals, dict) and field in intervals:
        low, high = pair(intervals[field])
        text += f"<span class=ci>{interval_cell(low, high, compact)}</span>"
    return text


def interval_cell(low: float | None, high: float | None, compact: bool,
                  signed: bool = False) -> str:
    """An interval under a value: ``95%: low to high``, or compact ``[low, high]``."""
    if not compact or low is None or high is None:
        return f"95%: {interval_text(low, high, signed=signed)}"
    sign = "+" if signed else ""
    return f"[{low:{sign}.4g}, {high:{sign}.4g}]"


def ratio_text(block: dict[str, Any], part: str, whole: str) -> str:
    if part not in block and whole not in block:  # e.g. model B's block: A's counts
        return "<span class=absent title='not in this run'>·</span>"
    return f"{value_text(block.get(part), part)} / {value_text(block.get(whole), whole)}"


def escape(text: str) -> str:
    return html.escape(str(text), quote=True)


def _anchor(name: str) -> str:
    return "m-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


_STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1b1b1b;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 20px 28px 48px; }
h1 { font-size: 1.55rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 .6rem; padding-bottom: .25rem;
  border-bottom: 1px solid #d8d8d8; }
h3 { font-size: 1.02rem; margin: 1.4rem 0 .4rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .9em; }
.kind { font: .78rem ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  color: #444; background: #f0f0f0; border-radius: 3px; padding: 1px 6px;
  vertical-align: middle; }
.base { font-size: .75rem; color: #fff; background: #555; border-radius: 3px;
  padding: 0 5px; }
#summary h2 { margin-top: 1.2rem; }
ul.summary { padding-left: 1.1rem; margin: .3rem 0; }
ul.summary > li { margin: .35rem 0; }
ul.summary ul { padding-left: 1.1rem; margin: .1rem 0; }
ul.summary li { overflow-wrap: anywhere; }
.better { color: #00664a; font-weight: 600; }
.worse { color: #b03a00; font-weight: 600; }
.neutral { color: #555; }
.flag { display: block; color: #8a2b00; font-size: .8rem; }
ul.summary .flag { display: inline; margin-left: .4em; }
.delta { display: block; color: #3a3a3a; font-size: .76rem; }
ul.summary .delta { display: inline; margin-left: .3em; }
nav.toc ul { margin: .2rem 0 0; padding-left: 1.2rem; columns: 3 14rem; }
nav.toc a { color: #0b5394; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr));
  gap: 14px 28px; margin: .6rem 0; }
figure.plot { margin: 0; min-width: 0; break-inside: avoid; page-break-inside: avoid; }
figure.plot.wide { grid-column: 1 / -1; }
figure.plot svg { display: block; width: 100%; max-width: 100%; height: auto; }
figure.plot.wide svg { max-width: 980px; }
figcaption { font-size: .84rem; color: #444; margin-top: .2rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: .9rem; margin: .5rem 0 .8rem;
  font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e4e4e4; text-align: right;
  vertical-align: top; white-space: nowrap; }
th { font-weight: 600; border-bottom: 1.5px solid #bbb; }
.left { text-align: left; }
.desc { display: block; text-align: left; white-space: normal; min-width: 15rem;
  max-width: 30rem; color: #333; }
td.left { white-space: normal; }
.path { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .82rem; text-align: left; white-space: normal; word-break: break-all; }
table.runs td { max-width: 26rem; }
tr.group td { border-top: 1.5px solid #cfcfcf; }
table.tags th, table.tags td { white-space: normal; padding: 4px 7px; }
.ci { display: block; color: #666; font-size: .76rem; }
.undefined { color: #8a8a8a; font-style: italic; }
.absent { color: #aaa; }
.note { background: #fff7e0; border-left: 3px solid #e69f00; margin: .5rem 0;
  padding: 5px 10px; font-size: .88rem; }
.context { font-size: .88rem; color: #333; max-width: 60rem; }
.context ul { margin: .2rem 0; }
.small { font-size: .82rem; color: #555; max-width: 60rem; }
details { margin: .4rem 0 1rem; }
details > summary { cursor: pointer; color: #0b5394; font-size: .92rem; }
@media (max-width: 700px) {
  main { padding: 12px; }
  .figures { grid-template-columns: 1fr; }
  nav.toc ul { columns: 2 8rem; }
  /* tables stack: a row is a block, each cell a "column: value" line */
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; }
  table.stack { width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
    clip: rect(0 0 0 0); }
  table.stack tr { border-bottom: 1.5px solid #cfcfcf; padding: 3px 0; }
  table.stack td { border: 0; padding: 2px 4px; white-space: normal; text-align: right;
    overflow-wrap: anywhere; max-width: none; }
  table.stack td::after { content: ""; display: block; clear: both; }
  table.stack td::before { content: attr(data-label); float: left; max-width: 45%;
    margin-right: .8em; text-align: left; font-weight: 600; color: #333; }
  table.stack td:first-child { text-align: left; font-weight: 600; }
  table.stack td:first-child::before { content: none; }
  table.stack td:empty { display: none; }
  .desc { min-width: 0; max-width: none; }
}
@media print {
  @page { size: A4; margin: 13mm; }
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav.toc { display: none; }
  .figures { grid-template-columns: 1fr 1fr; gap: 8px 16px; }
  /* a figure is never split, and no taller than a third of a page: moving one to the
     next page leaves at most that much blank */
  figure.plot { break-inside: avoid; page-break-inside: avoid; }
  figure.plot svg { max-height: 88mm; width: auto; max-width: 100%; margin: 0 auto; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  h2 { margin-top: 1.2rem; }
  tr, .note, .context, #summary li { break-inside: avoid; page-break-inside: avoid; }
  .table-wrap { overflow: visible; }
  .desc { min-width: 12rem; }
  .note, .flag, .better, .worse { -webkit-print-color-adjust: exact;
    print-color-adjust: exact; }
}
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="mpieval report">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<main>
<header>
<h1>mpieval report</h1>
{runs}
</header>
{summary}
<p class=small>Values as written by <code>mpieval eval --json</code>. Under a value, in small
type: its 95% interval. <i>undefined</i>: the value is not defined for the data (null in the
JSON); a dot: the run does not have the value. CTRs are clicks per row (0 to 1).</p>
<nav class=toc><ul>{toc}</ul></nav>
{sections}
</main>
</body>
</html>
"""
