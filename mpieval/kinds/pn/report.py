"""The ``pn`` kind on a report page: its summary line and its section, its counts run by
run."""

from __future__ import annotations

from collections.abc import Sequence

from mpieval.kinds.pn import FIELDS, KIND
from mpieval.report.page import Page
from mpieval.report.runs import Run
from mpieval.report.section import Section, SliceView

HEADLINE = (("average_pn", "Average PN"), ("ins_number", "rows"))


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    return page.count_table(runs, name, FIELDS, share_of=None), []


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """One line per run: its main values, and their change against the baseline."""
    return page.run_lines(name, runs, HEADLINE)


SECTION = Section(KIND, draw=section, summary=summary,
                  slices=SliceView((("average_pn", "Average PN"),)))
