"""A metric's recent window: the last rows one rank added, kept to be counted again.

A metric made with ``window=N`` counts every batch into its state as usual (the lifetime
values) and also keeps a copy of the last ``N`` rows this rank was given, as the validated
columns that its kind counts (``auc``: pred, label, weight, compare; ``pairwise``: each
row's label cell). At compute, the kept rows are counted into a fresh state of the
metric's own layout, whose parts join the lifetime parts in the one sum.

The window is exact: the last ``N`` rows of this rank, whatever the batches (the oldest
kept batch is cut at the row). Each rank's window is its own last rows, as in TorchRec's
per-rank windows; the merged window is the sum of every rank's.

Rows rather than a ring of slot states (a state per slot of ``N / slots`` rows, folded
into the lifetime when the slot fills): at ``table_size = 1e6`` an ``auc`` state is 16 MB,
so each fold and clear of a slot moves 64 MB of memory however few rows the slot held.
With ``window=1_000_000`` in 8 slots of 125,000 rows, those folds alone took 0.6 to 0.8
times as long as ``update()`` itself on this project's machine, where copying the rows
costs a few percent (``scripts/bench_window.py``). A kept row costs its columns' bytes
(5 for a float32 pred and an int8 label, 1 for a ``pairwise`` row), and the window is
exact to the row rather than to a slot.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

Batch = dict[str, "np.ndarray | None"]  # a kind's validated columns; None: not given

PREFIX = "window."  # of the window's keys in a metric's state_dict


class RecentRows:
    """The last ``size`` rows given to one metric on this rank, as copies of their
    batches' columns, oldest first (a merge of several metrics' windows may hold more:
    see :meth:`merged`)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.batches: list[Batch] = []
        self.rows = 0

    def keep(self, columns: Mapping[str, np.ndarray | None]) -> None:
        """Keep a copy of a batch as the newest rows, and forget the rows that fall out
        of the window (cutting the oldest kept batch at the row)."""
        n = _length(columns)
        if n == 0:
            return
        older = max(0, n - self.size)  # rows of this batch already out of the window
        self.batches.append({name: None if column is None else column[older:].copy()
                             for name, column in columns.items()})
        self.rows += n - older
        while self.rows - _length(self.batches[0]) >= self.size:
            self.rows -= _length(self.batches.pop(0))
        if self.rows > self.size:
            cut = self.rows - self.size
            self.batches[0] = {name: None if column is None else column[cut:]
                               for name, column in self.batches[0].items()}
            self.rows = self.size

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    @property
    def nbytes(self) -> int:
        """Bytes of the kept columns."""
        return sum(column.nbytes for batch in self.batches for column in batch.values()
                   if column is not None)

    def merged(self, other: RecentRows) -> RecentRows:
        """The rows of both windows, this one's first (neither changes). Nothing is cut:
        the merge of two ranks' windows is what their window held together; later
        batches cut it back to ``size`` rows, oldest first."""
        merged = RecentRows(self.size)
        merged.batches = [*self.batches, *other.batches]
        merged.rows = self.rows + other.rows
        return merged

    def state_dict(self) -> dict[str, np.ndarray]:
        """The kept rows as plain arrays: ``window.rows``, the rows of each batch (oldest
        first); for each column, ``window.NAME``, its values in the batches that have
        it, concatenated (in the widest dtype), and ``window.NAME.batches``, which
        batches have it."""
        state: dict[str, np.ndarray] = {
            PREFIX + "rows": np.array([_length(b) for b in self.batches], np.int64)}
        names = list(dict.fromkeys(name for batch in self.batches for name in batch))
        for name in names:
            present = [batch.get(name) is not None for batch in self.batches]
            columns = [column for batch in self.batches
                       if (column := batch.get(name)) is not None]
            state[PREFIX + name] = np.concatenate(columns) if columns else np.zeros(0)
            state[PREFIX + name + ".batches"] = np.array(present, dtype=bool)
        return state

    @classmethod
    def from_state_dict(cls, size: int, state: Mapping[str, Any]) -> RecentRows:
        """The window saved by :meth:`state_dict` (``size``: the metric's window)."""
        lengths = np.asarray(state[PREFIX + "rows"], dtype=np.int64).tolist()
        recent = cls(size)
        recent.batches = [{} for _ in lengths]
        suffix = ".batches"
        for key in state:
            if not (key.startswith(PREFIX) and key.endswith(suffix)):
                continue
            name = key[len(PREFIX) : -len(suffix)]
            present = np.asarray(state[key], dtype=bool).tolist()
            values = np.asarray(state[PREFIX + name])
            offset = 0
            for batch, given, n in zip(recent.batches, present, lengths, strict=True):
                batch[name] = values[offset : offset + n] if given else None
                offset += n if given else 0
        recent.rows = sum(lengths)
        return recent


def _length(columns: Mapping[str, np.ndarray | None]) -> int:
    """Rows of a batch: the length of its columns (every given one has it)."""
    return next((len(column) for column in columns.values() if column is not None), 0)
