"""Saved runs: ``mpieval eval --save-state DIR`` writes each rank's metric state, and
``mpieval merge DIR...`` computes the metrics of several saved runs together (a week from
seven daily runs) without reading their files again.

A saved run is a directory (a local path or a URI: :mod:`mpieval.locations`) holding
``state-RANK.npz`` per rank (:func:`mpieval.checkpoint.to_bytes`: plain arrays, written
atomically) and ``run.json``,
written last by rank 0: the number of ranks and each metric's name, kind and log prefix.
Every kind's state merges (summed parts add, rows concatenate), so any number of ranks
merges any number of runs: each rank loads its share of all the saved states.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mpieval import checkpoint, locations
from mpieval.comm import Comm
from mpieval.config import MetricSpec
from mpieval.errors import InputError, StoreError
from mpieval.kinds import kind_named
from mpieval.metric import Evaluator, Result

RUN_FILE = "run.json"


def state_file(directory: str, rank: int) -> str:
    return locations.join(directory, f"state-{rank:05d}.npz")


def save_run(directory: str, specs: Sequence[MetricSpec], evaluator: Evaluator,
             comm: Comm) -> None:
    """Collective: every rank writes its state, then rank 0 the run's description (a
    directory without ``run.json`` is an unfinished save). A directory that cannot be
    written is an :class:`InputError` of ``--save-state`` on every rank."""

    def write_state() -> None:
        try:
            locations.make_directory(directory)
            locations.write_atomically(state_file(directory, comm.rank),
                                       checkpoint.to_bytes(evaluator.state_dict()),
                                       flag="--save-state")
        except OSError as error:
            raise InputError("--save-state", f"cannot write {locations.redact(directory)}: "
                             f"{error}") from None

    comm.agreed(write_state)
    if comm.rank != 0:
        comm.agreed(lambda: None)
        return
    description = {"ranks": comm.size, "metrics": [
        {"name": spec.name, "kind": spec.kind, "prefix": spec.log_prefix} for spec in specs]}

    def write_description() -> None:
        from mpieval.pipeline import write_json

        try:
            write_json(locations.join(directory, RUN_FILE), description, flag="--save-state")
        except OSError as error:
            raise InputError("--save-state", f"cannot write {locations.redact(directory)}: "
                             f"{error}") from None

    comm.agreed(write_description)


def read_run(directory: str) -> dict[str, Any]:
    """A saved run's description (``run.json``); a missing or unfinished run is an
    :class:`InputError` naming the directory."""
    path = locations.join(directory, RUN_FILE)
    try:
        return json.loads(locations.read_bytes(path))
    except (OSError, ValueError) as error:  # InputError is a ValueError
        problem = error.problem if isinstance(error, InputError) else str(error)
        raise InputError(locations.redact(directory), "is not a saved run (mpieval eval "
                         f"--save-state): {problem}") from None


def merge_runs(directories: Sequence[str], comm: Comm) -> tuple[list[MetricSpec],
                                                                 dict[str, Result]]:
    """Collective: the metrics of every saved run computed together. The runs must hold
    the same metric names and kinds (their options must match too)."""
    runs = comm.agreed(lambda: _runs(directories) if comm.rank == 0 else None)
    runs = comm.allgather(runs)[0]
    first = runs[0][1]["metrics"]
    specs = [MetricSpec(name=m["name"], kind=m["kind"], columns={}, prefix=m["prefix"])
             for m in first]
    files = [state_file(directory, rank) for directory, run in runs
             for rank in range(run["ranks"])]

    def load() -> Evaluator:
        mine = [_load(files[i]) for i in checkpoint.shares(len(files), comm.rank, comm.size)]
        states = mine or [_load(files[0])]
        metrics = {}
        for spec in specs:
            saved = states[0][spec.name]
            options = {key.split(".", 1)[1]: _plain(value) for key, value in saved.items()
                       if key.startswith("options.")}
            metrics[spec.name] = kind_named(spec.kind).build(options, comm)
        evaluator = Evaluator(metrics, comm)
        try:
            evaluator.load_state_dicts(mine)
        except ValueError as error:
            raise InputError("merge", f"the saved runs differ: {error}") from None
        return evaluator

    try:
        evaluator = comm.agreed(load, catch=(InputError, StoreError, OSError))
    except OSError as error:
        raise InputError("merge", f"cannot read a saved state: {error}") from None
    return specs, evaluator.compute()


def _load(path: str) -> dict[str, dict[str, Any]]:
    return checkpoint.from_bytes(locations.read_bytes(path))


def _runs(directories: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    runs = [(directory, read_run(directory)) for directory in directories]
    names = [(m["name"], m["kind"]) for m in runs[0][1]["metrics"]]
    for directory, run in runs[1:]:
        other = [(m["name"], m["kind"]) for m in run["metrics"]]
        if other != names:
            raise InputError(directory, f"holds the metrics {other}, {runs[0][0]} holds "
                                        f"{names}")
    return runs


def _plain(value: Any) -> Any:
    return value.item() if getattr(value, "ndim", None) == 0 else value
