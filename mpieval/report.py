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
import json
import math
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mpieval import figures
from mpieval.config import RUN_KEY
from mpieval.errors import InputError
from mpieval.figures import Estimate, Series
from mpieval.kinds import KINDS

# Fields that are counts, in every kind: printed with thousands separators.
COUNTS = frozenset().union(*(kind.counts for kind in KINDS.values()))
OLDER = "(written by an older mpieval, or without the statistics)"


@dataclass(frozen=True)
class Run:
    """One result file: its path, the short label the page calls it by, its metrics."""

    path: str
    label: str
    metrics: dict[str, dict[str, Any]]


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
        check_result(data)
    except ValueError as error:
        raise InputError(path, str(error)) from None
    return Run(path=path, label=label or run_label(path), metrics=metrics_of(data))


def metrics_of(data: dict[str, Any]) -> dict[str, Any]:
    """The metric blocks of a result object: every key but the run's provenance
    (``run``, absent from files of older versions)."""
    return {name: block for name, block in data.items() if name != RUN_KEY}


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
    if not isinstance(data, dict) or not metrics_of(data):
        found = type(data).__name__ if not isinstance(data, dict) else "no metric"
        raise ValueError(f"is not an mpieval result: expected an object of metrics keyed by "
                         f"name, found {found}")
    if not isinstance(data.get(RUN_KEY, {}), dict):
        raise ValueError(f"is not an mpieval result: {RUN_KEY!r} is not the run's object")
    for name, block in metrics_of(data).items():
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


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_values(block: dict[str, Any], fields: Iterable[str], where: str) -> None:
    for field in fields:
        value = block[field]
        if value is not None and not is_number(value):
            raise ValueError(f"{where}: {field} is {value!r}, not a number or null")


def _check_statistics(block: dict[str, Any], where: str) -> None:
    for field, width in (("roc_curve", 2), ("calibration_curve", 3)):
        points = block.get(field)
        if points is None:
            continue
        if not isinstance(points, list) or not all(
                isinstance(p, list) and len(p) == width and all(is_number(v) for v in p)
                for p in points):
            what = "[fpr, tpr] pairs" if width == 2 else "[mean_pred, actual_ctr, rows] triples"
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
    write_page(output, render([Run(path=source, label=label, metrics=metrics_of(results))]),
               flag=flag)


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


class Page:
    """Builds the page section by section; counts the figures for unique SVG ids."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self.runs = list(runs)
        self.figure_count = 0

    def html(self) -> str:
        names = list(dict.fromkeys(name for run in self.runs for name in run.metrics))
        sections = [self.section(name) for name in names]
        toc = "".join(f'<li><a href="#{_anchor(name)}">{escape(name)}</a></li>' for name in names)
        title = "mpieval report: " + ", ".join(run.label for run in self.runs)
        return _PAGE.format(title=escape(title), style=_STYLE, runs=self.runs_table(),
                            toc=toc, sections="\n".join(sections))

    def runs_table(self) -> str:
        rows = "".join(
            f"<tr><td class=left>{escape(run.label)}</td><td class=path>{escape(run.path)}</td>"
            f"<td class=left>{escape(', '.join(run.metrics))}</td></tr>"
            for run in self.runs)
        return ("<table class=runs><thead><tr><th class=left>Run</th><th class=left>File</th>"
                f"<th class=left>Metrics</th></tr></thead><tbody>{rows}</tbody></table>")

    # One section per metric name: the runs that have it, drawn by its kind.
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
        several = len(blocks) > 1
        models: list[Model] = []
        for run, block in blocks:
            compare = block.get("compare")
            a_label = run.label
            if compare is not None:
                a_label = f"{run.label}: A" if several else "A"
            models.append(Model(run, block, self.series(a_label, len(models)), False))
            if compare is not None:
                b_label = f"B ({compare.get('pred', 'compare')})"
                if several:
                    b_label = f"{run.label}: {b_label}"
                models.append(Model(run, compare, self.series(b_label, len(models), True), True))
        return models

    def series(self, label: str, index: int, dashed: bool = False) -> Series:
        return Series(label, figures.PALETTE[index % len(figures.PALETTE)], dashed)

    def figure(self, svg: str, caption: str, wide: bool = False) -> str:
        return (f"<figure class=\"plot{' wide' if wide else ''}\">{svg}"
                f"<figcaption>{caption}</figcaption></figure>")

    def key(self, name: str, what: str) -> str:
        self.figure_count += 1
        return f"f{self.figure_count}-{_anchor(name)}-{what}"

    def value_table(self, models: Sequence[Model], fields: dict[str, str]) -> str:
        """One row per value (those any model has), one column per model; intervals below."""
        shown = [f for f in fields if any(f in m.block for m in models)]
        head = "".join(f"<th>{escape(m.series.label)}</th>" for m in models)
        body = []
        for field in shown:
            cells = "".join(f"<td>{cell(m.block, field)}</td>" for m in models)
            body.append(f"<tr><td class=desc>{escape(fields[field])}</td>{cells}</tr>")
        return (f"<div class=table-wrap><table class=values><thead><tr><th class=left>Value"
                f"</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")

    def differences(self, name: str, compared: Sequence[tuple[str, dict[str, Any], str]],
                    several: bool) -> str:
        """The differences B - A of the compare blocks: a forest plot and a table.
        ``compared`` holds (run label, compare block, what the values are of, e.g. a tag)."""
        rows = []  # label, field, compare block, estimate, p
        for run_label, compare, scope in compared:
            for field, value in compare.items():
                if not field.endswith("_diff"):
                    continue
                low, high = pair(compare.get(f"{field}_ci95"))
                label = field[: -len("_diff")].upper() + (f" · {scope}" if scope else "")
                if several:
                    label += f" · {run_label}"
                rows.append((label, field, compare, Estimate(value, low, high),
                             compare.get(f"{field}_p")))
        if not rows:
            return ""
        svg = figures.differences([figures.Difference(label, estimate, p)
                                     for label, _, _, estimate, p in rows],
                                    "Difference B - A (same units as the value)",
                                    self.key(name, "differences"))
        figure = self.figure(svg, "Differences B - A with their paired 95% intervals and "
                             "two-sided p-values; an interval that misses the dotted zero line "
                             "is drawn in red.", wide=True)
        body = "".join(
            f"<tr><td class=left>{escape(label)}</td>"
            f"<td>{value_text(estimate.value, signed=True)}</td>"
            f"<td>{interval_text(estimate.low, estimate.high, present=f'{field}_ci95' in compare)}"
            f"</td><td>{escape(p_text(p))}</td></tr>"
            for label, field, compare, estimate, p in rows)
        table = ("<div class=table-wrap><table class=diffs><thead><tr><th class=left>Difference"
                 "</th><th>B - A</th><th>95% interval</th><th>p (two-sided)</th></tr></thead>"
                 f"<tbody>{body}</tbody></table></div>")
        return f"<h3>B against A</h3><div class=figures>{figure}</div>{table}"

    # a kind without a section of its own, and the tables kinds share -------------------
    def other(self, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
        fields = {f: f for run in runs for f, v in run.metrics[name].items()
                  if f != "kind" and (v is None or is_number(v) or isinstance(v, str))}
        note = "A kind this version of the report does not know: its plain values."
        return self.count_table(runs, name, fields, share_of=None), [note]

    def count_table(self, runs: Sequence[Run], name: str, fields: dict[str, str],
                    share_of: str | None) -> str:
        shown = [f for f in fields if any(f in run.metrics[name] for run in runs)]
        head = "".join(f"<th>{escape(run.label)}</th>" for run in runs)
        body = []
        for field in shown:
            cells = []
            for run in runs:
                block = run.metrics[name]
                text = cell(block, field)
                total = block.get(share_of) if share_of else None
                value = block.get(field)
                if field != share_of and isinstance(value, (int, float)) \
                        and isinstance(total, (int, float)) and total > 0:
                    text += f"<span class=ci>{100.0 * value / total:.1f}% of rows</span>"
                cells.append(f"<td>{text}</td>")
            body.append(f"<tr><td class=desc>{escape(fields[field])}</td>{''.join(cells)}</tr>")
        return (f"<div class=table-wrap><table class=counts><thead><tr><th class=left>Value"
                f"</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


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


def value_text(value: Any, field: str = "", signed: bool = False) -> str:
    if value is None:
        return "<span class=undefined title='undefined for this data (null in the JSON)'>" \
               "undefined</span>"
    if isinstance(value, str):
        return escape(value)
    if field in COUNTS and float(value).is_integer():
        return f"{int(value):,}"
    if field in COUNTS:
        return f"{value:,.1f}"
    return f"{value:+.4g}" if signed else f"{value:.6g}"


def interval_text(low: float | None, high: float | None, present: bool = True) -> str:
    if not present:
        return ""
    if low is None or high is None:
        return "<span class=undefined>undefined</span>"
    return f"{low:.6g} to {high:.6g}"


def cell(block: dict[str, Any], field: str) -> str:
    """A value, and its 95% interval below it when the block has one."""
    if field not in block:
        return "<span class=absent title='not in this run'>·</span>"
    text = value_text(block[field], field)
    intervals = block.get("ci95")
    if isinstance(intervals, dict) and field in intervals:
        low, high = pair(intervals[field])
        text += f"<span class=ci>95%: {interval_text(low, high)}</span>"
    return text


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
.kind { font: .78rem ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  color: #444; background: #f0f0f0; border-radius: 3px; padding: 1px 6px;
  vertical-align: middle; }
nav.toc ul { margin: .2rem 0 0; padding-left: 1.2rem; columns: 3 14rem; }
nav.toc a { color: #0b5394; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr));
  gap: 14px 28px; margin: .6rem 0; }
figure.plot { margin: 0; min-width: 0; break-inside: avoid; page-break-inside: avoid; }
figure.plot.wide { grid-column: 1 / -1; }
figure.plot svg { display: block; width: 100%; height: auto; }
figcaption { font-size: .84rem; color: #444; margin-top: .2rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: .9rem; margin: .5rem 0 .8rem;
  font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e4e4e4; text-align: right;
  vertical-align: top; white-space: nowrap; }
th { font-weight: 600; border-bottom: 1.5px solid #bbb; }
.left { text-align: left; }
td.desc { text-align: left; white-space: normal; min-width: 15rem; max-width: 30rem;
  color: #333; }
td.path { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .82rem; text-align: left; white-space: normal; word-break: break-all; }
tr.group td { border-top: 1.5px solid #cfcfcf; }
.ci { display: block; color: #666; font-size: .76rem; }
.undefined { color: #8a8a8a; font-style: italic; }
.absent { color: #aaa; }
.note { background: #fff7e0; border-left: 3px solid #e69f00; margin: .5rem 0;
  padding: 5px 10px; font-size: .88rem; }
.context { font-size: .88rem; color: #333; max-width: 60rem; }
.context ul { margin: .2rem 0; }
.small { font-size: .82rem; color: #555; max-width: 60rem; }
@media (max-width: 700px) { main { padding: 12px; } .figures { grid-template-columns: 1fr; } }
@media print {
  @page { size: A4; margin: 13mm; }
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav.toc { display: none; }
  .figures { grid-template-columns: 1fr 1fr; gap: 8px 16px; }
  h2, h3 { break-after: avoid; page-break-after: avoid; }
  h2 { margin-top: 1.2rem; }
  table, .note, .context { break-inside: avoid; page-break-inside: avoid; }
  .table-wrap { overflow: visible; }
  td.desc { min-width: 0; }
  .note { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
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
<h1>mpieval report</h1>
{runs}
<p class=small>Values as written by <code>mpieval eval --json</code>. Under a value, in small
type: its 95% interval. <i>undefined</i>: the value is not defined for the data (null in the
JSON); a dot: the run does not have the value. CTRs are clicks per row (0 to 1).</p>
<nav class=toc><ul>{toc}</ul></nav>
{sections}
</main>
</body>
</html>
"""
