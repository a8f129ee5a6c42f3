"""Checkpoints of metric state: plain arrays in ``.npz`` files, and how saved ranks'
states are shared out when a run resumes on a different number of ranks.

A metric's :meth:`~mpieval.metric.Metric.state_dict` (an Evaluator's: one per name) holds
no communicator, only arrays and numbers. Every kind's state merges (summed parts add,
rows concatenate), so a checkpoint written on N ranks resumes on M: rank ``r`` of M loads
the saved states :func:`shares` gives it and merges them
(:meth:`~mpieval.metric.Metric.load_state_dicts`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any, BinaryIO

import numpy as np

SEPARATOR = "/"  # between a metric's name and its state's keys in a file


def shares(saved: int, rank: int, size: int) -> list[int]:
    """The saved ranks (of ``saved``) that rank ``rank`` of ``size`` loads: every
    ``size``-th, so each saved state is loaded by exactly one rank."""
    return list(range(rank, saved, size))


def flatten(states: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """An Evaluator's state (metric name -> state) as one flat mapping ``NAME/KEY``."""
    return {f"{name}{SEPARATOR}{key}": value
            for name, state in states.items() for key, value in state.items()}


def unflatten(flat: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The inverse of :func:`flatten`, in the saved order of names."""
    states: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        name, _, field = key.rpartition(SEPARATOR)
        states.setdefault(name, {})[field] = value
    return states


def save(path: str | os.PathLike[str], states: Mapping[str, Mapping[str, Any]]) -> None:
    """Write an Evaluator's state to ``path`` (``.npz``) atomically and durably: a reader
    sees the old file or the whole new one, never part of it, and after a crash (power
    lost) the new one once ``save`` has returned: the file is flushed to disk before it
    is renamed into place, and the directory after
    (:func:`mpieval.locations.write_atomically`, as every output of mpieval). The file
    has the mode the umask gives (0644 under umask 022).

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file (its directory must exist).
    states : mapping
        :meth:`mpieval.Evaluator.state_dict` (one per rank: a file per rank).

    Raises
    ------
    OSError
        The file cannot be written; nothing is left behind.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from mpieval import AucMetric, Evaluator, checkpoint
    >>> ev = Evaluator({"ctr": AucMetric(table_size=100)})
    >>> ev["ctr"].update(np.array([0.3, 0.7]), np.array([0, 1]))
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics-0.npz")
    >>> checkpoint.save(path, ev.state_dict())
    >>> resumed = Evaluator({"ctr": AucMetric(table_size=100)})
    >>> resumed.load_state_dict(checkpoint.load(path))
    >>> resumed.compute()["ctr"].auc
    1.0
    """
    from mpieval import locations  # pyarrow's, loaded when a checkpoint is saved

    locations.write_atomically(os.fspath(path), lambda file: _write_npz(file, states))


def _write_npz(file: BinaryIO, states: Mapping[str, Mapping[str, Any]]) -> None:
    arrays = {key: np.asarray(value) for key, value in flatten(states).items()}
    np.savez(file, **arrays)  # type: ignore[arg-type]  # numpy stubs: allow_pickle


def to_bytes(states: Mapping[str, Mapping[str, Any]]) -> bytes:
    """An Evaluator's state as the bytes of a ``.npz`` file (for a store: one write)."""
    out = io.BytesIO()
    _write_npz(out, states)
    return out.getvalue()


def from_bytes(data: bytes) -> dict[str, dict[str, Any]]:
    """The inverse of :func:`to_bytes`."""
    with np.load(io.BytesIO(data), allow_pickle=False) as file:
        return unflatten({key: file[key] for key in file.files})


def load(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """An Evaluator's state saved by :func:`save` (values as arrays; 0-d for numbers).

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.

    Returns
    -------
    dict
        The state by metric name, for :meth:`mpieval.Evaluator.load_state_dict` (or
        several ranks' for :meth:`~mpieval.Evaluator.load_state_dicts`).

    Raises
    ------
    OSError
        The file cannot be read.

    Examples
    --------
    >>> import os, tempfile
    >>> from mpieval import AucMetric, Evaluator, checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), "metrics-0.npz")
    >>> checkpoint.save(path, Evaluator({"ctr": AucMetric(table_size=10)}).state_dict())
    >>> sorted(checkpoint.load(path))
    ['ctr']
    """
    with np.load(path, allow_pickle=False) as file:
        return unflatten({key: file[key] for key in file.files})
