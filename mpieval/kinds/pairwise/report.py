"""The ``pairwise`` kind's summary line and section of a report page: its counts, run by run."""

from __future__ import annotations

from collections.abc import Sequence

from mpieval.kinds.pairwise import FIELDS
from mpieval.report import Page, Run

HEADLINE = (("ins", "pair instances"), ("same_label_click", "both clicked"),
            ("left_label_click", "left only"), ("right_label_click", "right only"))

def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    return page.count_table(runs, name, FIELDS, share_of="ins"), []

def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """One line per run: its main values, and their change against the baseline."""
    return page.run_lines(name, runs, HEADLINE)
