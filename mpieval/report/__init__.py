"""``mpieval report``: one self-contained HTML page of one or more runs' ``--json`` results.

This module is the entry, the one place where the kinds meet the page: :func:`sections`
takes each registered kind's :class:`~mpieval.report.section.Section` from its declaration
(``Kind.report``), and :func:`load_runs`, :func:`render`, :func:`write_report` and
:func:`write_run_report` hand them to the shared modules, none of which names a kind:

- :mod:`mpieval.report.runs`: result files read and checked (each block by its kind's
  section);
- :mod:`mpieval.report.page`: the page, a header, a summary and one section per metric
  drawn by its kind's section (pure: runs in, text out);
- :mod:`mpieval.report.html`, :mod:`mpieval.report.tags`: the values, intervals,
  differences and tag tables that sections share;
- :mod:`mpieval.report.figures`: the figures' plumbing (matplotlib drawings inlined as
  SVG: the optional ``report`` extra) and the figures any kind may draw;
- :mod:`mpieval.report.section`: what a kind declares for the page.

A kind's section and its own figures live in its folder
(``mpieval/kinds/<kind>/report.py``, ``figures.py``). No script, no font and no image is
fetched: the page opens offline and prints as it shows. The page is written atomically,
to a path or a store's URI (:func:`mpieval.locations.write_atomically`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from mpieval import locations
from mpieval.errors import InputError
from mpieval.report import figures, runs
from mpieval.report.page import Page
from mpieval.report.runs import Run, gate_verdict, split_provenance
from mpieval.report.section import Section


def sections() -> dict[str, Section]:
    """Every registered kind's section, by kind name (each imported now)."""
    from mpieval.kinds import KINDS

    found = {}
    for kind in KINDS.values():
        section = kind.report_section()
        if section is not None:
            found[kind.name] = section
    return found


def load_run(path: str, label: str | None = None) -> Run:
    """The result file at ``path``, checked by its kinds' sections."""
    return runs.load_run(path, sections(), label)


def load_runs(paths: Sequence[str]) -> list[Run]:
    """Every file checked; labels are the file names, or the paths when names repeat."""
    return runs.load_runs(paths, sections())


def render(shown: Sequence[Run], by_kind: Mapping[str, Section] | None = None) -> str:
    """The HTML page of ``shown`` (checked by :func:`load_run`), self-contained, drawn by
    the sections ``by_kind`` (the registered kinds' when None)."""
    require_plotting()
    return Page(shown, sections() if by_kind is None else by_kind).html()


def require_plotting() -> None:
    """Nothing, or an :class:`InputError` saying how to install matplotlib."""
    try:
        figures.require_matplotlib()
    except ImportError as error:
        raise InputError("report", str(error)) from None


def write_report(paths: Sequence[str], output: str, *, flag: str = "-o") -> None:
    """Read and check the runs at ``paths`` and write their page to ``output``
    atomically; nothing is written when anything is wrong (:class:`InputError`)."""
    loaded = load_runs(paths)
    check_output(output, flag)
    write_page(output, render(loaded), flag=flag)


def write_run_report(results: dict[str, Any], output: str, *, json_path: str | None = None,
                     flag: str = "--report") -> None:
    """The page of one run's results (the object ``--json`` writes), for ``--report``."""
    name = os.path.basename(output)
    label = name.rsplit(".", 1)[0] if "." in name[1:] else name
    source = json_path or "(this run; no --json file)"
    metrics, provenance = split_provenance(results)
    write_page(output, render([Run(path=source, label=label, metrics=metrics,
                                   provenance=provenance, gate=gate_verdict(results))]),
               flag=flag)


def check_output(path: str, flag: str = "-o") -> None:
    """``path`` (a local path or a URI) can be written: as every output's
    (:func:`mpieval.locations.check_writable`)."""
    locations.check_writable(path, flag)


def write_page(path: str, text: str, flag: str = "-o") -> None:
    """Write ``text`` to ``path`` (a local path or a URI) atomically, as every output is
    (:func:`mpieval.locations.write_atomically`); a failure is an error of ``flag``."""
    check_output(path, flag)
    locations.write_atomically(path, text.encode("utf-8"), flag=flag)
