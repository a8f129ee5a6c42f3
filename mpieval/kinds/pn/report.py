"""The ``pn`` kind's section of a report page: its counts, run by run."""

from __future__ import annotations

from collections.abc import Sequence

from mpieval.kinds.pn import FIELDS
from mpieval.report import Page, Run


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    return page.count_table(runs, name, FIELDS, share_of=None), []
