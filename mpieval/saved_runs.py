"""Saved runs: ``mpieval eval --save-state DIR`` writes each rank's metric state, and
``mpieval merge DIR...`` computes the metrics of several saved runs together (a week from
seven daily runs) without reading their files again.

A saved run is a directory (a local path or a URI: :mod:`mpieval.locations`) holding
``state-RANK.npz`` per rank (:func:`mpieval.checkpoint.to_bytes`: plain arrays, written
atomically) and ``run.json``,
written last by rank 0: the number of ranks, the rows read, and each metric's name, kind
and log prefix (and a weighted one's weight column and meaning).
Every kind's state merges (summed parts add, rows concatenate), so any number of ranks
merges any number of runs: each rank loads its share of all the saved states.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mpieval import checkpoint, locations, slices
from mpieval.comm import Comm
from mpieval.config import MetricSpec
from mpieval.errors import InputError, OutputError, RemoteError, StateFormatError, StoreError
from mpieval.kinds import kind_named
from mpieval.metric import Evaluator, Result

RUN_FILE = "run.json"
T = TypeVar("T")


def state_file(directory: str, rank: int) -> str:
    return locations.join(directory, f"state-{rank:05d}.npz")


def save_run(directory: str, specs: Sequence[MetricSpec], evaluator: Evaluator,
             comm: Comm, *, rows: int | None = None,
             weights: Mapping[str, Mapping[str, str]] | None = None,
             run: Mapping[str, Any] | None = None) -> None:
    """Collective: every rank writes its state, then rank 0 the run's description (a
    directory without ``run.json`` is an unfinished save): the ranks, the rows read
    (``rows``, every rank's), each metric's name, kind, log prefix and, for a
    weighted one, its ``weight`` (``weights``: the column and what a weight means), and
    rank 0's ``run`` object of the JSON (its ``id`` and ``inputs``: what ``merge`` keeps).

    The directory then holds this run only: a run saved there before loses its
    ``run.json`` first (while the new states are written, the directory is an
    unfinished save), and its states of ranks this run does not have are removed before
    the new ``run.json`` is written. When a write fails, every rank raises the error
    (:func:`mpieval.locations.output_failure`: a full disk is an ``OutputError``, exit 1;
    a path at fault an :class:`InputError` of ``--save-state``, exit 2) and nothing is
    left: the states written are removed, and the directory too if this run made it."""
    shown = locations.redact(directory)

    def begin() -> bool:
        made = _writing(shown, lambda: locations.make_directory(directory))
        _writing(shown, lambda: locations.remove(locations.join(directory, RUN_FILE)))
        return made

    made = comm.agreed(lambda: begin() if comm.rank == 0 else False)
    weights = weights or {}
    description = {"ranks": comm.size, "rows": rows, "metrics": [
        {"name": spec.name, "kind": spec.kind, "prefix": spec.log_prefix,
         **({"weight": dict(weights[spec.name])} if spec.name in weights else {})}
        for spec in specs], **({"run": dict(run)} if run is not None else {})}

    def write_state() -> None:
        _writing(shown, lambda: locations.make_directory(directory))
        _writing(shown, lambda: locations.write_atomically(
            state_file(directory, comm.rank), checkpoint.to_bytes(evaluator.state_dict()),
            flag="--save-state"))

    def finish() -> None:
        for name in _state_names(directory):
            if int(name[len("state-"):-len(".npz")]) >= comm.size:  # an earlier run's
                _writing(shown, functools.partial(locations.remove,
                                                  locations.join(directory, name)))
        _writing(shown, lambda: locations.write_json(locations.join(directory, RUN_FILE),
                                                     description, flag="--save-state"))

    try:
        comm.agreed(write_state)
        comm.agreed(lambda: finish() if comm.rank == 0 else None)
    except (InputError, StoreError, OutputError, RemoteError):  # raised on every rank
        if comm.rank == 0:  # every rank's write has ended: agreed steps end together
            _discard(directory, made)
        raise


_STATE_NAME = re.compile(r"^state-\d{5,}\.npz$")


def _state_names(directory: str) -> list[str]:
    """The names of the rank states in a saved run's directory."""
    return [name for name in locations.names_in(directory) if _STATE_NAME.match(name)]


def _writing(shown: str, step: Callable[[], T]) -> T:
    """``step()``, an ``OSError`` it raises reported as an error of ``--save-state``."""
    try:
        return step()
    except OSError as error:
        raise locations.output_failure("--save-state", shown, error) from None


def _discard(directory: str, made: bool) -> None:
    """After a failed save: its states and description removed (an earlier run's too:
    without its ``run.json`` it was no longer a saved run), and the directory if the
    save made it. Best effort: the save's own error is the one reported."""
    with contextlib.suppress(OSError, InputError, StoreError):
        for name in [*_state_names(directory), RUN_FILE]:
            locations.remove(locations.join(directory, name))
        if made:
            locations.remove_directory(directory)


def read_run(directory: str) -> dict[str, Any]:
    """A saved run's description (``run.json``); a missing or unfinished run is an
    :class:`InputError` naming the directory."""
    path = locations.join(directory, RUN_FILE)
    try:
        run: dict[str, Any] = json.loads(locations.read_bytes(path))
        return run
    except (OSError, ValueError) as error:  # InputError is a ValueError
        problem = error.problem if isinstance(error, InputError) else str(error)
        raise InputError(locations.redact(directory), "is not a saved run (mpieval eval "
                         f"--save-state): {problem}") from None


@dataclass(frozen=True)
class Merged:
    """The saved runs computed together: the metrics, their results, the rows the runs
    read (None when a run saved before the count was kept) and the weighted metrics'
    weight column and meaning (from the first run)."""

    specs: list[MetricSpec]
    results: dict[str, Result]
    rows: int | None
    weights: dict[str, dict[str, str]]
    runs: list[dict[str, Any]]  # each saved run's ``run`` object and its ``state`` directory


def merge_runs(directories: Sequence[str], comm: Comm) -> Merged:
    """Collective: the metrics of every saved run computed together. The runs must hold
    the same metric names and kinds (their options must match too)."""
    runs = comm.agreed(lambda: _runs(directories) if comm.rank == 0 else None)
    runs = comm.allgather(runs)[0]
    counts = [run.get("rows") for _, run in runs]
    rows = None if None in counts else sum(counts)
    weights = {m["name"]: m["weight"] for m in runs[0][1]["metrics"] if "weight" in m}
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
            metric = kind_named(spec.kind).build(options, comm)
            if slices.STATE_KEY in saved:  # a sliced metric's state: its slices too
                metric = slices.from_state(metric, saved)
            metrics[spec.name] = metric
        evaluator = Evaluator(metrics, comm)
        try:
            evaluator.load_state_dicts(mine)
        except StateFormatError as error:
            raise InputError("merge", str(error)) from None
        except ValueError as error:
            raise InputError("merge", f"the saved runs differ: {error}") from None
        return evaluator

    try:
        evaluator = comm.agreed(load, catch=(InputError, StoreError, OSError))
    except OSError as error:
        raise InputError("merge", f"cannot read a saved state: {error}") from None
    merged = [{**run.get("run", {}), "state": locations.redact(directory)}
              for directory, run in runs]
    return Merged(specs, evaluator.compute(), rows, weights, merged)


def _load(path: str) -> dict[str, dict[str, Any]]:
    return checkpoint.from_bytes(locations.read_bytes(path))


def _runs(directories: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    seen: dict[str, str] = {}
    for directory in directories:  # as `eval` refuses a file given twice
        key = locations.locate(directory.rstrip("/") or "/").key
        if key in seen:
            raise InputError(locations.redact(directory), f"is given twice (also as "
                             f"{seen[key]}): its runs would count twice")
        seen[key] = locations.redact(directory)
    runs = [(directory, read_run(directory)) for directory in directories]
    ids: dict[str, str] = {}
    for directory, run in runs:  # a copy of a saved run is the same run
        run_id = run.get("run", {}).get("id")
        if run_id in ids:
            raise InputError(locations.redact(directory), f"holds the same run as "
                             f"{ids[run_id]} (run.id {run_id}): its rows would count twice")
        if run_id is not None:
            ids[run_id] = locations.redact(directory)
    names = [(m["name"], m["kind"]) for m in runs[0][1]["metrics"]]
    for directory, run in runs[1:]:
        other = [(m["name"], m["kind"]) for m in run["metrics"]]
        if other != names:
            raise InputError(directory, f"holds the metrics {other}, {runs[0][0]} holds "
                                        f"{names}")
    return runs


def _plain(value: Any) -> Any:
    return value.item() if getattr(value, "ndim", None) == 0 else value
