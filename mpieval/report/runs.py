"""The runs a report page shows: result files (``--json``) read and checked.

:func:`load_run` reads and checks one result file (the layout of the JSON reference, each
block as its kind's :class:`~mpieval.report.section.Section` checks it; a file that is not
an mpieval result, or of another layout, is an :class:`InputError` naming it).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mpieval.config import GATE_KEY, RUN_KEY
from mpieval.errors import InputError
from mpieval.report.section import Section


@dataclass(frozen=True)
class Run:
    """One result file: its path, the short label the page calls it by, its metrics, and
    its provenance (the JSON's top-level ``run`` object; None in files of older versions)."""

    path: str
    label: str
    metrics: dict[str, dict[str, Any]]
    provenance: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None  # the gate's verdict (eval --gate), if the run has one


def load_run(path: str, sections: Mapping[str, Section], label: str | None = None) -> Run:
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
        check_result(metrics, sections)
    except ValueError as error:
        raise InputError(path, str(error)) from None
    return Run(path=path, label=label or run_label(path), metrics=metrics,
               provenance=provenance, gate=gate_verdict(data))


def gate_verdict(data: Any) -> dict[str, Any] | None:
    """The gate's block of a result (``mpieval eval --gate``), or None."""
    block = data.get(GATE_KEY) if isinstance(data, dict) else None
    if isinstance(block, dict) and isinstance(block.get("passed"), bool) and isinstance(
            block.get("checks"), list):
        return block
    return None


def split_provenance(data: Any) -> tuple[Any, dict[str, Any] | None]:
    """The metrics of a result and its ``run`` object (None when the file has none: older
    versions; a block named ``run`` with a ``kind`` is a metric of such a file). The gate's
    block (``gate``, ``mpieval eval --gate``) is left out of both."""
    if isinstance(data, dict) and isinstance(data.get(GATE_KEY), dict) and not isinstance(
            data[GATE_KEY].get("kind"), str):
        data = {name: block for name, block in data.items() if name != GATE_KEY}
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


def load_runs(paths: Sequence[str], sections: Mapping[str, Section]) -> list[Run]:
    """Every file checked; labels are the file names, or the paths when names repeat."""
    names = [run_label(path) for path in paths]
    if len(set(names)) < len(names):
        names = list(paths)
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return [load_run(path, sections, label)
            for path, label in zip(paths, labels, strict=True)]


def check_result(data: Any, sections: Mapping[str, Section]) -> None:
    """Raise ValueError (a one-line message) unless ``data`` is an mpieval result: an
    object of metric blocks, each with a kind, each of a kind in ``sections`` as its
    section checks it (:meth:`Section.check`); a block of another kind is drawn as plain
    values."""
    if not isinstance(data, dict) or not data:
        found = type(data).__name__ if not isinstance(data, dict) else "no metric"
        raise ValueError(f"is not an mpieval result: expected an object of metrics keyed by "
                         f"name, found {found}")
    for name, block in data.items():
        if not isinstance(block, dict) or not isinstance(block.get("kind"), str):
            raise ValueError(f"is not an mpieval result: {name!r} is not a metric block with "
                             "a kind")
        section = sections.get(block["kind"])
        if section is not None:
            section.check(block, f"metric {name!r}")
