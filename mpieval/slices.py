"""Slices: a metric's whole block again over the rows of each value of a column
(``--slice country``), or of each pair of values of two columns (``--slice
country*device``), in the same pass over the data.

:class:`SlicedMetric` wraps one metric of any kind (the *base*: every row) and holds one
more metric of the same kind per slice value, made as values appear. Each batch's rows
are grouped by their slice (one stable sort of the batch's codes, not a loop a row) and
each group updates its slice's metric with the rows in their order, as a run given only
those rows would: a slice's result is that run's, bit for bit, on any number of ranks.
A kind whose ``update()`` ends in counting its validated columns (``Metric._add``) is
checked once, by the base: its slices count the base's validated columns, taken in slice
order once per dimension. A per-user kind's slices get the batch's uids made keys once
(:class:`~mpieval.keys.HashedIds`); a batch of more than :data:`WAIT_FROM` slices (in a
dimension) keeps its rows until :data:`PENDING_ROWS` rows wait, then each slice takes its
rows of all of them in one ``update()`` (:meth:`SlicedMetric._flush`; before a compute, a
checkpoint or a merge too). A slice of fewer than ``min_rows`` rows so far has no metric:
its rows wait on (joined as one batch; a checkpoint saves them so), and it gets a
metric once it has the rows (at a compute, over every rank) or at a merge; a slice that
never has them never costs a metric.
At compute the ranks first agree on the slices and their rows (one ``allgather`` of
small dicts); every rank then packs the same slices' parts in the same order (sorted
values) into the one ``Allreduce`` of :func:`mpieval.metric.compute_all`. A slice of
fewer than ``min_rows`` rows (over every rank) gives only its row count and
``too_small``: its state is not summed and no value is computed.

Sub-metrics may take other options than the base (``options``): the command line gives
``auc`` slices a smaller table (``--slice-table-size``, default
:data:`DEFAULT_SLICE_TABLE_SIZE` buckets, with its ``auc_tie_bound`` reported as ever), so
that a thousand slices do not each hold a table of a million buckets.

The result (:class:`SlicedResult`) is the base's, whose JSON block gains ``slices`` keyed
``COL=VALUE`` (``a=x*b=y``), each the kind's block over those rows with ``rows``; a
compare p-value (``X_diff_p``) that has no q-value beside it gains ``X_diff_q``,
Benjamini-Hochberg over the slices of the same column (or cross). Its log lines are the
base's, then one set per slice named ``NAME[COL=VALUE]``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import io
import json
import pickle
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise, repeat
from typing import Any

import numpy as np
import pyarrow as pa

from mpieval.comm import Comm
from mpieval.errors import InputError, StateFormatError
from mpieval.kernels.codes import lookup_counted
from mpieval.kernels.stats import bh_q_values
from mpieval.keys import HashedIds, hashed_ids
from mpieval.logline import json_number
from mpieval.metric import (
    Metric,
    Result,
    compute_all,
    finishing_name,
    undefined_collected,
    warn_undefined_message,
    warnings_named,
)
from mpieval.state import Part, Stacked
from mpieval.tags import TagCodes, dicts_made, distinct, gc_paused, without_gc
from mpieval.validation import Coded, all_log_words, check_log_word

DEFAULT_MIN_ROWS = 100
"""Rows a slice needs (over every rank) for its values; fewer: its row count and
``"too_small": true``."""

DEFAULT_SLICE_TABLE_SIZE = 10_000
"""Buckets of a slice's ``auc`` table on the command line (``--slice-table-size``): a
slice's values are those of ``--table-size`` of this size over its rows, and its
``auc_tie_bound`` says how far the coarser table can move its AUC."""

CROSS = "*"
STATE_KEY = "slices.layout"  # the state_dict entry that marks a sliced metric's state
STACKED = "stacked."  # stacked slices' parts (local_sums: stacked.N., state_dict: slices.stacked.)
WAITING = "waiting."  # the rows of slices too small for a metric (state_dict: slices.waiting.)
PACKED = "packed."  # the slices' own states packed (state_dict: slices.packed., _packed)
PACKED_LENGTHS = "packed_lengths."  # each slice's length in a joined part (slices.packed_lengths.)
PACKED_DTYPES = "packed_dtypes."  # each slice's dtype in a joined part, when they differ
WAIT_FROM = 32
"""A per-user kind's batch of more slices than this (in a dimension) keeps its rows
waiting, joined with the next batches' and given to each slice in one ``update()`` once
:data:`PENDING_ROWS` rows wait (:meth:`SlicedMetric._flush`), not an ``update()`` a slice
and batch."""
PENDING_ROWS = 1 << 21
"""Rows kept waiting for their slices (:data:`WAIT_FROM`) before they are given."""
ONE_RANK_ROWS = 1 << 20
"""On several ranks, a slice with values of at most this many rows (over every rank), of
a kind whose slices are metrics of their own (the per-user kinds, ``auc`` with a compared
model), is computed whole on one rank (:meth:`SlicedMetric._computed_whole`), not by its
own moves and sums with every rank in step: those cost a few collectives a slice, at each
of which the ranks wait for each other, slice after slice."""
_WHOLE = "\x00"  # the name a slice computed whole warns under until finish() names it

Key = tuple[Any, ...]  # a slice's values, one per column of its dimension
GIVEN = -1  # a waiting row's slice code in a dimension whose slice already has it (_flush)
Coding = tuple[list[Key], np.ndarray]  # a batch's slices in a dimension, each row's index


def parse_slices(field: str, given: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """``["country", "country*device"]`` as ``(("country",), ("country", "device"))``:
    each a column, or two columns crossed with ``*``; an :class:`InputError` of ``field``
    for an empty name, a cross of more than two, a column twice or a dimension twice."""
    dimensions: list[tuple[str, ...]] = []
    for text in given:
        if not isinstance(text, str):
            raise InputError(field, f"must be column names (strings), got {text!r}")
        columns = tuple(part.strip() for part in text.split(CROSS))
        if not all(columns):
            raise InputError(field, f"{text!r}: an empty column name")
        if len(columns) > 2:
            raise InputError(field, f"{text!r}: a cross is of two columns (a*b)")
        if len(set(columns)) != len(columns):
            raise InputError(field, f"{text!r}: a column crossed with itself")
        for column in columns:
            check_log_word(field, column)
            if "[" in column or "]" in column:
                raise InputError(field, f"{column!r}: a slice column's name holds no [ or ]")
        if columns in dimensions:
            raise InputError(field, f"{text!r} is given twice")
        dimensions.append(columns)
    return tuple(dimensions)


def dimension_name(columns: Sequence[str]) -> str:
    return CROSS.join(columns)


def slice_name(columns: Sequence[str], key: Key) -> str:
    """The slice's JSON key and log-line suffix: ``country=US``, ``country=US*device=ios``."""
    if len(columns) == 1 == len(key):  # (many slices of one column: no join)
        return f"{columns[0]}={key[0]}"
    return CROSS.join(f"{column}={value}" for column, value in zip(columns, key, strict=True))


@dataclass(frozen=True)
class Slice:
    """One slice of a result: its dimension's columns, its values, the rows it holds over
    every rank, its result (None: fewer rows than the metric's ``min_rows``) and its name
    (:func:`slice_name`; made here when not given)."""

    columns: tuple[str, ...]
    key: Key
    rows: int
    result: Result | None
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name:  # (an attribute, not a property: read for the JSON, the log
            # lines and the q-values of each of many slices)
            object.__setattr__(self, "name", slice_name(self.columns, self.key))


@dataclass(frozen=True)
class SlicedResult:
    """A sliced metric's result: the base's (its attributes are the base's:
    ``result.auc``), and the slices, by dimension then sorted value."""

    base: Result
    slices: tuple[Slice, ...]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.base, name)

    def __getitem__(self, name: str) -> Slice:
        """The slice named ``name`` (``"country=US"``)."""
        for one in self.slices:
            if one.name == name:
                return one
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        block = self.base.to_dict()
        blocks: dict[str, dict[str, Any]] = {}
        # many slices (tags.gc_paused); their blocks get q-values below (tags.dicts_made)
        with gc_paused(), dicts_made():
            for one in self.slices:
                if one.result is None:
                    blocks[one.name] = {"rows": one.rows, "too_small": True}
                else:
                    blocks[one.name] = {**one.result.to_dict(), "rows": one.rows}
        for columns in dict.fromkeys(one.columns for one in self.slices):
            _add_q_values([blocks[one.name] for one in self.slices if one.columns == columns])
        block["slices"] = blocks
        return block

    def to_log_line(self, name: str) -> str:
        lines = [self.base.to_log_line(name)]
        for one in self.slices:
            named = f"{name}[{one.name}]"
            lines.append(f"{named}: too_small rows={one.rows}" if one.result is None
                         else one.result.to_log_line(named))
        return "\n".join(lines)


def _add_q_values(blocks: list[dict[str, Any]]) -> None:
    """Beside every ``X_diff_p`` without an ``X_diff_q`` in the slice blocks of one
    dimension (at the same place in each), ``X_diff_q``: Benjamini-Hochberg over those
    slices (a p-value that is null, or a slice without it, does not count)."""
    found: dict[tuple[tuple[str, ...], str], list[tuple[dict[str, Any], float]]] = {}
    for block in blocks:
        if "too_small" in block:  # its row count only
            continue
        for path, node in _objects(block, ()):
            for key, value in node.items():
                if key.endswith("_diff_p") and key[:-2] + "_q" not in node:
                    p = float("nan") if value is None else float(value)
                    found.setdefault((path, key), []).append((node, p))
    for (_, key), places in found.items():
        q_values = bh_q_values([p for _, p in places])
        for (node, _), q in zip(places, q_values, strict=True):
            node[key[:-2] + "_q"] = json_number(q)


def _objects(node: dict[str, Any], path: tuple[str, ...]
             ) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    yield path, node
    for key, value in list(node.items()):
        if isinstance(value, dict):
            yield from _objects(value, (*path, key))


class SlicedMetric(Metric):
    """A metric of any kind and the same kind's metric per slice value.

    Parameters
    ----------
    metric : Metric
        The base (every row); fresh, no window. Its kind, options and communicator are
        the slices' too, but for ``options``.
    slices : sequence of str
        Slice columns, or two crossed (``"country*device"``).
    min_rows : int
        Rows a slice needs over every rank for its values (:data:`DEFAULT_MIN_ROWS`).
    options : mapping, optional
        Options of the slices' metrics that differ from the base's (``table_size``).

    ``update()`` takes the base's arguments and ``slices``, a mapping of each slice
    column to its values (a :class:`~mpieval.validation.Coded` column, or integers or
    strings).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import AucMetric
    >>> sliced = SlicedMetric(AucMetric(), ["country"], min_rows=1)
    >>> sliced.update(np.array([0.2, 0.8, 0.6, 0.4]), np.array([0, 1, 0, 1]),
    ...               slices={"country": np.array(["US", "US", "FR", "FR"])})
    >>> result = sliced.compute()
    >>> result.auc, result["country=US"].result.auc, result["country=FR"].result.auc
    (0.75, 1.0, 0.0)
    """

    def __init__(self, metric: Metric, slices: Sequence[str], *,
                 min_rows: int = DEFAULT_MIN_ROWS,
                 options: Mapping[str, Any] | None = None) -> None:
        if isinstance(metric, SlicedMetric) or metric.window is not None:
            raise ValueError("slices are of a metric without a window or slices of its own")
        if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 0:
            raise InputError("min_slice_rows", f"must be an integer >= 0, got {min_rows!r}")
        self.kind = metric.kind  # type: ignore[misc]  # the base's kind, per instance
        self.base = metric
        # the base's id inputs (uid), and its update()'s arguments by position (_ids_hashed)
        self._ids = frozenset(spec.name for spec in metric.inputs if spec.role == "id")
        self._arguments = tuple(inspect.signature(metric.update).parameters)
        self.dimensions = parse_slices("slices", slices)
        self.min_rows = min_rows
        # the declared options (not a class's own arguments such as extra_keys)
        self.sub_options = {**Metric._options(metric), **(options or {})}
        super(Metric, self).__init__(metric._comm_given)  # OnComm's: no options of its own
        self.reset()

    # -- the declaration and state -----------------------------------------------------

    def state_layout(self) -> dict[str, Part]:
        return self.base.state_layout()

    def reset(self) -> None:
        self.base.reset()
        self._error: InputError | None = None
        self._moved = None
        self._recent = None
        self._whole: dict[tuple[int, int], tuple[Result, list[str]]] = {}
        # per dimension: slice values -> its metric, and its rows on this rank
        self._metrics: list[dict[Key, Metric]] = [{} for _ in self.dimensions]
        self._rows: list[dict[Key, int]] = [{} for _ in self.dimensions]
        # a kind that stacks its slices (Metric.stacks_slices): every slice's state in the
        # rows of one Stacked, per dimension slice values -> row; one metric finishes them
        self._finisher = self._slice_metric() if self.base.stacks_slices() else None
        self._stacked = (None if self._finisher is None
                         else Stacked(self._finisher.state_layout()))
        self._row_of: list[dict[Key, int]] = [{} for _ in self.dimensions]
        # every slice value seen, numbered in order of first appearance, per column; a
        # cross's pairs of numbers numbered so too; per dimension, its slices by number:
        # the batches' slices are coded by these numbers (_codes)
        self._known: dict[str, TagCodes] = {}
        self._pairs = [TagCodes() for _ in self.dimensions]
        self._keys: list[list[Key]] = [[] for _ in self.dimensions]
        # batches whose slices' rows wait (_flush): their arguments and slice codes
        self._pending: list[tuple[tuple[Any, ...], dict[str, Any], list[Coding]]] = []
        self._pending_rows = 0
        self._small_rows = 0  # of those, the rows of small slices that waited on (_flush)
        self._counted = 0  # the first batches that wait whose rows are counted in _rows

    @property
    def error(self) -> InputError | None:
        # read before every compute (compute_all): the slices with rows enough here get
        # theirs, and any error of their update() fails every rank's compute
        self._flush(self._small_here)
        if self._error is not None:
            return self._error
        return self.base.error or next((m.error for ms in self._metrics for m in ms.values()
                                        if m.error is not None), None)

    def _slice_metric(self) -> Metric:
        return type(self.base)(comm=self.base._comm_given, **self.sub_options)

    def layout(self) -> str:
        names = ", ".join(dimension_name(columns) for columns in self.dimensions)
        options = ", ".join(f"{k}={v!r}" for k, v in self.sub_options.items())
        return (f"{self.base.layout()} sliced by {names} (min_rows={self.min_rows}, "
                f"slices {options})")

    def reserve(self, rows: int) -> None:
        self.base.reserve(rows)

    def recent(self) -> Metric | None:
        return None

    def move_rows(self, comm: Comm) -> None:
        """The base's rows move; the slices' move at compute (once each)."""
        self.base.move_rows(comm)

    # -- updates -----------------------------------------------------------------------

    @without_gc
    def update(self, *args: Any, slices: Mapping[str, Any], **columns: Any) -> None:
        """Add a batch: the base's arguments, and each slice column's values."""
        rows = self._length(args, columns)
        with self._validating():
            found = [self._codes(number, slices, rows)
                     for number in range(len(self.dimensions))]
            coded = [coding for coding, _ in found]
            if self._stacked is None:  # the slices are updated a slice at a time
                args, columns = self._ids_hashed(args, columns)
        # stacked: the base's rows are counted with its slices' (_update_stacked)
        with self.base._keeping_validated(defer=self._stacked is not None) as validated:
            self.base.update(*args, **columns)
        batch = validated[0] if len(validated) == 1 else None
        if batch is not None and not all(value is None or (isinstance(value, np.ndarray)
                                                           and len(value) == rows)
                                         for value in batch.values()):
            batch = None
        if self._stacked is not None:
            if batch is None:
                raise TypeError(f"kind {self.kind} stacks its slices but its update() does "
                                "not end in counting its validated columns")
            self._update_stacked([_present(*coding) for coding in coded], batch, rows)
            return
        if rows == 0:
            return
        kept = None if batch is not None or max(count for _, count in found) <= WAIT_FROM \
            else _kept(args, columns)
        if kept is not None and (not self._pending or _shape(*kept) == _shape(
                *self._pending[0][:2])):
            self._pending.append((*kept, coded))  # its rows counted when it is joined
            self._pending_rows += rows
            if self._pending_rows >= max(PENDING_ROWS, 2 * self._small_rows):
                self._flush(self._small_here)
            return
        self._flush()  # the rows that wait go first: each slice's rows in their order
        if kept is not None:
            self._pending.append((*kept, coded))
            self._pending_rows = rows
            return
        self._count(coded)
        self._update_slices(args, columns, coded, batch)

    def _count(self, coded: list[Coding], first: int = 0) -> None:
        """Add the rows from row ``first`` of ``coded`` (each row's slice in every
        dimension) to the slices' row counts, a slice new here after those before it."""
        for counts, (keys, codes) in zip(self._rows, coded, strict=True):
            found = np.bincount(codes[first:], minlength=len(keys))
            numbers = np.flatnonzero(found)  # (the slices of the rows, not every one seen)
            for number, count in zip(numbers.tolist(), found[numbers].tolist(), strict=True):
                key = keys[number]
                counts[key] = counts.get(key, 0) + count

    def _count_waiting(self) -> None:
        """The row counts of the batches that wait and are not counted yet added."""
        fresh = self._pending[self._counted:]
        if fresh:
            self._count([_joined_codes([batch[2][index] for batch in fresh])
                         for index in range(len(self.dimensions))])
            self._counted = len(self._pending)

    def _update_slices(self, args: tuple[Any, ...], columns: Mapping[str, Any],
                       coded: list[Coding], batch: dict[str, np.ndarray | None] | None
                       ) -> None:
        """Each slice's metric given its rows of ``args`` and ``columns`` (the rows' slices
        ``coded``), in their order; a new slice's metric made first. ``batch``: the base's
        validated columns (a kind that counts them), given instead."""
        groups = [_grouped(keys, codes) for keys, codes in coded]
        for metrics, (keys, order, bounds) in zip(self._metrics, groups, strict=True):
            if batch is not None:  # the base's validated rows, in slice order once
                ordered = {name: None if value is None else value[order]
                           for name, value in batch.items()}
            for index in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():  # with rows
                key, start, stop = keys[index], int(bounds[index]), int(bounds[index + 1])
                metric = metrics.get(key)
                if metric is None:
                    metric = metrics[key] = self._slice_metric()
                if batch is not None:  # checked once, by the base: counted as they are
                    metric._add(**{name: None if value is None else value[start:stop]
                                   for name, value in ordered.items()})
                else:
                    self._update_slice(metric, args, columns, order[start:stop])

    @without_gc
    def _flush(self, small: Callable[[int, list[Key]], np.ndarray] | None = None) -> None:
        """The rows that wait (:meth:`update`) given to their slices: the batches joined,
        each slice's rows in one ``update()``, in their order, its metric made first.
        ``small``: which slices (of a dimension's number, its slices' values) have too
        few rows yet for a metric of their own, as booleans: their rows wait on, joined as one batch
        (a row given to its slice of one dimension coded :data:`GIVEN` in it), and
        no metric is made for them. A slice's ``update()`` that fails (the metric itself
        took these rows) is remembered: the next compute fails on every rank."""
        pending, self._pending, self._pending_rows = self._pending, [], 0
        counted, self._counted, self._small_rows = self._counted, 0, 0
        if not pending:
            return
        args = tuple(_joined([batch[0][i] for batch in pending])
                     for i in range(len(pending[0][0])))
        columns = {name: _joined([batch[1][name] for batch in pending])
                   for name in pending[0][1]}
        coded = [_joined_codes([batch[2][index] for batch in pending])
                 for index in range(len(self.dimensions))]
        self._count(coded, sum(len(batch[2][0][1]) for batch in pending[:counted]))
        del pending
        given: list[Coding] | None = coded
        waiting = None
        if small is not None:
            given, waiting = _waiting(coded, small)
        try:
            if given is not None:
                self._update_slices(args, columns, given, None)
        except InputError as error:
            if self._error is None:
                self._error = error
        if waiting is not None:
            rows, codes = waiting
            if len(rows) < len(coded[0][1]):  # (every row waiting on: the joined ones kept)
                args = tuple(_take(values, rows) for values in args)
                columns = {name: _take(values, rows) for name, values in columns.items()}
            self._pending = [(args, columns, codes)]
            self._pending_rows = self._small_rows = len(rows)
            self._counted = 1

    def _small_here(self, dimension: int, keys: list[Key]) -> np.ndarray:
        """Which slices of ``keys`` are without a metric and of fewer than ``min_rows``
        rows on this rank."""
        return self._small(dimension, keys, self._rows[dimension])

    def _small(self, dimension: int, keys: list[Key], rows: Mapping[Key, int]) -> np.ndarray:
        """Which slices of ``keys`` are without a metric and of fewer than ``min_rows``
        ``rows``, as booleans (a map a list, not a call a slice: many slices)."""
        made = self._metrics[dimension]
        counts = np.fromiter(map(rows.get, keys, repeat(0)), dtype=np.int64, count=len(keys))
        small: np.ndarray = (counts < self.min_rows) & ~np.fromiter(
            map(made.__contains__, keys), dtype=bool, count=len(keys))
        return small

    def _update_stacked(self, coded: list[tuple[list[Key], np.ndarray]],
                        batch: dict[str, np.ndarray | None], rows: int) -> None:
        """Count the base's validated rows into the stacked slices: each row's slice of
        every dimension as a row of the stacked states (new slices get a row of zeros:
        every slice of ``coded`` has rows, :meth:`_codes`), then the kind's pass over
        every slice at once, or, where it has none for these rows, its count of each
        slice's rows."""
        assert self._stacked is not None and self._finisher is not None
        new = [[key for key in keys if key not in index]
               for (keys, _), index in zip(coded, self._row_of, strict=True)]
        first = self._stacked.append(sum(len(keys) for keys in new))  # grown once a batch
        for keys, index in zip(new, self._row_of, strict=True):
            index.update(zip(keys, range(first, first + len(keys)), strict=True))
            first += len(keys)
        codes = np.empty((len(self.dimensions), rows), dtype=np.int32)
        for dimension, (keys, local) in enumerate(coded):
            index, counts = self._row_of[dimension], self._rows[dimension]
            seen = np.zeros(len(keys), dtype=np.int64)
            lookup_counted(local, np.array([index[key] for key in keys], dtype=np.int32),
                           codes[dimension], seen)
            assert seen.all(), "a slice of the batch without rows (_codes gives none)"
            for key, count in zip(keys, seen.tolist(), strict=True):
                counts[key] = counts.get(key, 0) + count
        if self._finisher._accumulate_slices(self._stacked, codes, **batch,
                                             whole=self.base.state):
            return
        self.base._accumulate(self.base.state, **batch)
        for dimension in range(len(self.dimensions)):
            keys, local = coded[dimension]
            _, order, bounds = _grouped(keys, local)
            ordered = {name: None if value is None else value[order]
                       for name, value in batch.items()}
            for number in range(len(keys)):
                start, stop = int(bounds[number]), int(bounds[number + 1])
                if start < stop:
                    state = self._stacked.state(int(codes[dimension, order[start]]))
                    self._finisher._accumulate(state, **{
                        name: None if value is None else value[start:stop]
                        for name, value in ordered.items()})

    def _ids_hashed(self, args: tuple[Any, ...], columns: Mapping[str, Any]
                    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments with the kind's ids (``uid``) made keys once
        (:class:`~mpieval.keys.HashedIds`), for the base and every slice's rows: a slice's
        ``update()`` then takes its rows' keys, not its rows' text to hash again."""
        ids = self._ids
        if not ids:
            return args, dict(columns)
        names = list(self._arguments[: len(args)])
        names += [""] * (len(args) - len(names))  # too many: the base's update() says so
        return (tuple(hashed_ids(name, value) if name in ids and value is not None else value
                      for name, value in zip(names, args, strict=True)),
                {name: hashed_ids(name, value) if name in ids and value is not None else value
                 for name, value in columns.items()})

    @staticmethod
    def _update_slice(metric: Metric, args: tuple[Any, ...], columns: Mapping[str, Any],
                      rows: np.ndarray) -> None:
        """``metric.update()`` with the rows ``rows`` of each argument."""
        taken = [_take(values, rows) for values in (*args, *columns.values())]
        metric.update(*taken[: len(args)], **dict(zip(columns, taken[len(args):],
                                                      strict=True)))

    @staticmethod
    def _length(args: tuple[Any, ...], columns: Mapping[str, Any]) -> int:
        first = args[0] if args else next(v for v in columns.values() if v is not None)
        return len(first)

    def _codes(self, number: int, slices: Mapping[str, Any], rows: int
               ) -> tuple[Coding, int]:
        """The slices of a batch in dimension ``number``: the dimension's slices seen so far
        (:meth:`_keyed`, this batch's added) and each row's index among them, and how many
        of them the batch's rows hold."""
        dimension = self.dimensions[number]
        numbered = []
        for column in dimension:
            if column not in slices:
                raise InputError(column, "a slice column without values")
            seen, inverse = _slice_values(column, slices[column], rows)
            try:
                numbered.append(self._known.setdefault(column, TagCodes()).codes(
                    seen, inverse, check=functools.partial(_check_slice_values, column)))
            except InputError as error:  # a value's: named by its first row (file, line)
                if error.value is None or error.value not in seen:
                    raise
                first = int(np.flatnonzero(inverse == seen.index(error.value))[0])
                raise InputError(column, error.problem, first_index=first) from None
        if len(dimension) == 1:
            return (self._keyed(number), numbered[0]), len(seen)
        pairs, code = np.unique((numbered[0].astype(np.int64) << 32) | numbered[1],
                                return_inverse=True)
        codes = self._pairs[number].codes(pairs.tolist(), code.reshape(-1))
        return (self._keyed(number), codes), len(pairs)

    def _keyed(self, number: int) -> list[Key]:
        """Dimension ``number``'s slices seen so far, by their number (a column's: its
        value's; a cross's: its pair's, ``first << 32 | second``), the new ones' keys made."""
        keys, dimension = self._keys[number], self.dimensions[number]
        if len(dimension) == 1:
            keys.extend(zip(self._known[dimension[0]].values[len(keys):]))  # (value,) each
        else:
            one, two = (self._known[column].values for column in dimension)
            keys.extend((one[pair >> 32], two[pair & 0xFFFFFFFF])
                        for pair in self._pairs[number].values[len(keys):])
        return keys

    def _global(self, number: int, keys: list[Key], codes: np.ndarray) -> Coding:
        """Rows' slices of dimension ``number`` coded among ``keys`` (a saved state's
        waiting rows: :data:`GIVEN` too) as among the dimension's slices (:meth:`_codes`);
        the values were checked when they were first read."""
        numbered = []
        for at, column in enumerate(self.dimensions[number]):
            values, known = [key[at] for key in keys], self._known.setdefault(column, TagCodes())
            known.take(values)
            numbered.append(known.of(values).astype(np.int64))
        if len(numbered) == 2:
            pairs = ((numbered[0] << 32) | numbered[1]).tolist()
            self._pairs[number].take(pairs)
            numbered = [self._pairs[number].of(pairs).astype(np.int64)]
        return self._keyed(number), np.append(numbered[0], GIVEN)[codes]  # GIVEN: the last

    # -- compute -----------------------------------------------------------------------

    def _agreed(self, comm: Comm) -> list[list[tuple[Key, int]]]:
        """Collective: every dimension's slices over every rank (sorted) with their rows;
        each rank makes the metrics it lacks of the slices with values (a slice too small
        for them is neither summed nor finished: no metric of its own is made here)."""
        self._count_waiting()
        views = comm.allgather(self._rows)
        totals: list[dict[Key, int]] = [dict(rows) for rows in views[0]]
        for view in views[1:]:
            for index, counts in enumerate(totals):
                for key, rows in view[index].items():
                    counts[key] = counts.get(key, 0) + rows
        # the waiting rows of the slices with values now (over every rank) given
        self._flush(lambda index, keys: self._small(index, keys, totals[index]))
        agreed: list[list[tuple[Key, int]]] = []
        for metrics, counts in zip(self._metrics, totals, strict=True):
            ordered = _in_order(counts)
            if self._stacked is None:
                for key, rows in ordered:
                    if rows >= self.min_rows and key not in metrics:  # (most are small)
                        metrics[key] = self._slice_metric()
            agreed.append(ordered)
        return agreed

    @without_gc
    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        self._layout = self._agreed(comm)
        sums = {f"base.{name}": value for name, value in self.base.local_sums(comm).items()}
        if self._stacked is not None:  # the slices with values, in order: views, no copy
            kept = [self._row_of[index].get(key, -1) for index, ordered in
                    enumerate(self._layout) for key, count in ordered if count >= self.min_rows]
            arrays = {name: self._stacked[name] for name in self._stacked.layout}
            zeros = {name: np.zeros(array.shape[1:]) for name, array in arrays.items()}
            for number, row in enumerate(kept):
                sums.update({f"{STACKED}{number}.{name}": zeros[name] if row < 0
                             else array[row] for name, array in arrays.items()})
            return sums
        self._whole = self._computed_whole(comm)
        for index, number, key in self._summed_here():
            sums.update({f"{index}.{number}.{name}": value for name, value
                         in self._metrics[index][key].local_sums(comm).items()})
        return sums

    def _summed_here(self) -> Iterator[tuple[int, int, Key]]:
        """The slices with values that are metrics of their own summed by every rank (not
        computed whole on one rank): their dimension, number in the agreed order and
        values."""
        for index, ordered in enumerate(self._layout):
            for number, (key, rows) in enumerate(ordered):
                if rows >= self.min_rows and (index, number) not in self._whole:
                    yield index, number, key

    def _computed_whole(self, comm: Comm) -> dict[tuple[int, int], tuple[Result, list[str]]]:
        """Collective, on several ranks (slices that are metrics of their own): each slice
        with values of at most :data:`ONE_RANK_ROWS` rows computed whole on one rank, its
        owner (the largest first, each to the rank with the fewest rows so far), from
        every rank's state of it (one exchange), its result and warnings then shared (one
        ``allgather``); by (dimension, number in the agreed order). A slice's compute
        that fails on its owner fails every rank's."""
        if comm.size < 2 or self._stacked is not None:
            return {}
        chosen = [(index, number, key, rows) for index, ordered in enumerate(self._layout)
                  for number, (key, rows) in enumerate(ordered)
                  if self.min_rows <= rows <= ONE_RANK_ROWS]
        if not chosen:
            return {}
        loads = [0] * comm.size
        owner: dict[tuple[int, int], int] = {}
        for index, number, _, rows in sorted(chosen, key=lambda one: -one[3]):
            rank = loads.index(min(loads))
            owner[index, number] = rank
            loads[rank] += rows
        # each slice's state here pickled as it is made (a copy of its rows at a time)
        outgoing: list[list[bytes]] = [[] for _ in range(comm.size)]
        own: list[tuple[tuple[int, int], dict[str, Any]]] = []
        for index, number, key, _ in chosen:
            if self._rows[index].get(key, 0):  # its rows here: its metric holds them
                state = self._metrics[index][key].state_dict()
                rank = owner[index, number]
                if rank == comm.rank:
                    own.append(((index, number), state))
                else:
                    outgoing[rank].append(pickle.dumps(((index, number), state),
                                                       pickle.HIGHEST_PROTOCOL))
                del state
        received = _exchanged(comm, outgoing)
        received[comm.rank] = own
        states: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for part in received:  # by source rank
            for slot, state in part:
                states.setdefault(slot, []).append(state)
        del received, own
        mine: dict[tuple[int, int], tuple[Result, list[str]]] = {}
        failed: Exception | None = None
        for index, number, _, _ in chosen:
            if owner[index, number] == comm.rank:
                try:
                    mine[index, number] = self._whole_result(states.pop((index, number), []))
                except Exception as error:  # raised on every rank by the agreement below
                    failed = error
                    break
        comm.agree(failed)
        done: dict[tuple[int, int], tuple[Result, list[str]]] = {}
        for view in comm.allgather(mine):
            done.update(view)
        return done

    def _whole_result(self, states: list[dict[str, Any]]) -> tuple[Result, list[str]]:
        """A slice's result from every rank's state of it, on this rank alone, and its
        undefined-value warnings (named :data:`_WHOLE`, renamed at :meth:`finish`)."""
        local = Comm.local()
        metric = type(self.base)(comm=local, **self.sub_options)
        metric.load_state_dicts(states)
        with undefined_collected() as said:
            result = compute_all({_WHOLE: metric}, local)[_WHOLE]
        return result, said

    @without_gc
    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> SlicedResult:
        parts = _by_metric(sums)
        base = self.base.finish(parts.get("base.", {}), comm)
        named = finishing_name(self.kind)
        slices = []
        done = 0  # the stacked slices finished
        warned: dict[str, list[str]] = {}  # a slice's warning without its name -> slices
        together = self._finished_together(parts, comm)
        for index, (columns, metrics, ordered) in enumerate(zip(
                self.dimensions, self._metrics, self._layout, strict=True)):
            for number, (key, rows) in enumerate(ordered):
                text = slice_name(columns, key)
                if rows < self.min_rows:  # too small: its rows only
                    slices.append(Slice(columns, key, rows, None, text))
                    continue
                name = f"{named}[{text}]"
                whole = self._whole.get((index, number)) or together.get((index, number))
                if whole is not None:  # computed on one rank, or with the others here
                    result = whole[0]  # (its warnings: rank 0's)
                    said = [name + message[len(_WHOLE):] if message.startswith(_WHOLE)
                            else message for message in whole[1]] if comm.rank == 0 else []
                else:
                    with warnings_named(name, self.kind), undefined_collected() as said:
                        if self._finisher is not None:
                            result = self._finisher.finish(
                                parts.get(f"{STACKED}{done}.", {}), comm)
                            done += 1
                        else:
                            result = metrics[key].finish(parts.get(f"{index}.{number}.", {}),
                                                         comm)
                for message in said:
                    if message.startswith(f"{name}: "):
                        warned.setdefault(message[len(name) + 2:], []).append(text)
                    else:
                        warn_undefined_message(message)
                slices.append(Slice(columns, key, rows, result, text))
        for message, names in warned.items():
            warn_undefined_message(_slices_warning(named, names, message))
        return SlicedResult(base, tuple(slices))

    def _finished_together(self, parts: dict[str, dict[str, np.ndarray]], comm: Comm
                           ) -> dict[tuple[int, int], tuple[Result, list[str]]]:
        """The slices with values that are metrics of their own, not computed whole on one
        rank, finished at once by their kind (:meth:`Metric.finished_together`: many
        slices, one pass), by (dimension, number in the agreed order), each with its
        warning named :data:`_WHOLE` (as :meth:`_whole_result`'s); none when the kind
        finishes them one at a time."""
        if self._finisher is not None:
            return {}
        slots = [(index, number, self._metrics[index][key])
                 for index, number, key in self._summed_here()]
        if len(slots) < 2:
            return {}
        done = type(self.base).finished_together(
            [metric for _, _, metric in slots],
            [parts.get(f"{index}.{number}.", {}) for index, number, _ in slots], comm)
        if done is None:
            return {}
        kind = f"{self.kind}:"
        return {(index, number): (result, [] if said is None else [
                    _WHOLE + said[len(self.kind):] if said.startswith(kind) else said])
                for (index, number, _), (result, said) in zip(slots, done, strict=True)}

    # -- merging and checkpoints -------------------------------------------------------

    def merge(self, other: Metric) -> Metric:
        if not isinstance(other, SlicedMetric) or self.layout() != other.layout():
            raise ValueError(f"cannot merge {self.layout()} with {other.layout()}")
        self._flush()
        other._flush()
        merged = copy.copy(self)
        merged._pending = []  # its own list, not self's (both are flushed above)
        # its own numbering of the slice values (self's, then other's as they come)
        merged._known = {column: codes.copy() for column, codes in self._known.items()}
        merged._pairs = [codes.copy() for codes in self._pairs]
        merged._keys = [list(keys) for keys in self._keys]
        merged.base = self.base.merge(other.base)
        if self._stacked is not None and other._stacked is not None:
            merged._stacked = copy.deepcopy(self._stacked)
            merged._row_of = [dict(index) for index in self._row_of]
            merged._rows = [dict(rows) for rows in self._rows]
            merged._add_stacked(other._row_of, other._rows, {
                name: other._stacked[name] for name in other._stacked.layout})
            merged._error = self._error or other._error
            return merged
        merged._metrics, merged._rows = [], []
        for mine, theirs, my_rows, their_rows in zip(self._metrics, other._metrics,
                                                      self._rows, other._rows, strict=True):
            metrics = dict(mine)
            for key, metric in theirs.items():
                metrics[key] = metrics[key].merge(metric) if key in metrics else metric
            merged._metrics.append(metrics)
            merged._rows.append({key: my_rows.get(key, 0) + their_rows.get(key, 0)
                                 for key in {**my_rows, **their_rows}})
        merged._error = self._error or other._error
        return merged

    def state_dict(self) -> dict[str, Any]:
        """The base's state, beside it :data:`STATE_KEY` (the dimensions, ``min_rows``,
        the slices' options and each slice's values and rows, as JSON text) and the
        slices' own states packed into a few entries (:func:`_packed`: many slices, a
        checkpoint of a few dozen arrays, not a dozen a slice), what does not pack under
        ``slices.DIMENSION.NUMBER.``; the rows of slices still too small for a metric of
        their own as they wait, under ``slices.waiting.``."""
        self._flush(self._small_here)  # a slice with rows enough here gets them
        state = self.base.state_dict()
        layout: dict[str, Any] = {
            "dimensions": [dimension_name(columns) for columns in self.dimensions],
            "min_rows": self.min_rows, "options": self.sub_options}
        if self._stacked is not None:  # each slice: its values, rows and stacked row
            layout["stacked"] = [[[list(key), self._rows[index][key], row]
                                  for key, row in self._row_of[index].items()]
                                 for index in range(len(self.dimensions))]
            state[STATE_KEY] = json.dumps(layout)
            state.update({f"slices.{STACKED}{name}": np.array(self._stacked[name])
                          for name in self._stacked.layout})
            return state
        # the slices in the order their rows came (then those made at a compute without
        # rows here), not as their rows were given: the same checkpoint however they waited
        ordered = [[(key, metrics[key]) for key in rows if key in metrics]
                   + [(key, metric) for key, metric in metrics.items() if key not in rows]
                   for metrics, rows in zip(self._metrics, self._rows, strict=True)]
        layout["slices"] = [[[list(key), self._rows[index].get(key, 0)] for key, _ in slices]
                            for index, slices in enumerate(ordered)]
        if self._pending:  # (one batch: the flush above joined them)
            args, columns, coded = self._pending[0]
            layout["small"] = [[[list(key), count] for key, count in rows.items()
                                if key not in metrics]
                               for metrics, rows in zip(self._metrics, self._rows, strict=True)]
            layout["waiting"] = {
                "args": [_saved(f"slices.{WAITING}arg{i}", values, state)
                         for i, values in enumerate(args)],
                "columns": {name: _saved(f"slices.{WAITING}col.{name}", values, state)
                            for name, values in columns.items()},
                "slices": [[list(key) for key in keys] for keys, _ in coded]}
            state.update({f"slices.{WAITING}codes{index}": codes
                          for index, (_, codes) in enumerate(coded)})
        slots = [(index, number) for index, slices in enumerate(ordered)
                 for number in range(len(slices))]
        packed, layout["packed"], rest = _packed(
            [metric.state_dict() for slices in ordered for _, metric in slices])
        state[STATE_KEY] = json.dumps(layout)
        state.update(packed)
        for (index, number), own in zip(slots, rest, strict=True):
            state.update({f"slices.{index}.{number}.{name}": value
                          for name, value in own.items()})
        return state

    def load_state_dicts(self, states: Sequence[Mapping[str, Any]]) -> None:
        self.reset()
        self.base.load_state_dicts([{k: v for k, v in state.items()
                                     if not k.startswith("slices.")} for state in states])
        parts: list[dict[Key, list[dict[str, Any]]]] = [{} for _ in self.dimensions]
        for state in states:
            saved = read_layout(state)
            dimensions = [tuple(text.split(CROSS)) for text in saved["dimensions"]]
            if (dimensions != list(self.dimensions) or saved["min_rows"] != self.min_rows
                    or saved["options"] != _plain_options(self.sub_options)):
                raise ValueError(f"saved slices {saved['dimensions']} (min_rows "
                                 f"{saved['min_rows']}, options {saved['options']}) differ "
                                 f"from this metric's: {self.layout()}")
            if ("stacked" in saved) != (self._stacked is not None):
                raise ValueError(f"saved slices {saved['dimensions']} are "
                                 f"{'' if 'stacked' in saved else 'not '}stacked, this "
                                 f"metric's are {'' if self._stacked else 'not '}stacked")
            if self._stacked is not None:
                self._load_stacked(saved["stacked"], state)
                continue
            of_slice = _by_slice(state)
            _unpacked(saved, state, of_slice)
            for index, listed in enumerate(saved["slices"]):
                for number, (values, rows) in enumerate(listed):
                    key = tuple(values)
                    parts[index].setdefault(key, []).append(of_slice.get((index, number), {}))
                    self._rows[index][key] = self._rows[index].get(key, 0) + int(rows)
            for index, listed in enumerate(saved.get("small", [])):
                for values, rows in listed:
                    key = tuple(values)
                    self._rows[index][key] = self._rows[index].get(key, 0) + int(rows)
            if "waiting" in saved:
                self._load_waiting(saved["waiting"], state)
        for index, by_key in enumerate(parts):
            for key, states_of in by_key.items():
                metric = self._metrics[index][key] = self._slice_metric()
                metric.load_state_dicts(states_of)

    def _load_waiting(self, saved: Mapping[str, Any], state: Mapping[str, Any]) -> None:
        """Add a saved state's waiting rows (:meth:`state_dict`; their slices' rows are
        counted) as a batch that waits."""
        args = tuple(_loaded(f"slices.{WAITING}arg{i}", kind, state)
                     for i, kind in enumerate(saved["args"]))
        columns = {name: _loaded(f"slices.{WAITING}col.{name}", kind, state)
                   for name, kind in saved["columns"].items()}
        coded = [self._global(index, [tuple(values) for values in keys],
                              np.asarray(state[f"slices.{WAITING}codes{index}"]))
                 for index, keys in enumerate(saved["slices"])]
        if self._pending and _shape(args, columns) != _shape(*self._pending[0][:2]):
            self._flush()  # other arguments (another rank's pred dtype): given first
        self._pending.append((args, columns, coded))
        self._pending_rows += len(coded[0][1])
        self._small_rows = self._pending_rows
        self._counted = len(self._pending)

    def _load_stacked(self, listed: list[list[list[Any]]], state: Mapping[str, Any]) -> None:
        """Add a saved state's stacked slices (``listed``: per dimension each slice's
        values, rows and row in the saved arrays)."""
        assert self._stacked is not None
        index = [{tuple(values): row for values, _, row in slices} for slices in listed]
        rows = [{tuple(values): count for values, count, _ in slices} for slices in listed]
        self._add_stacked(index, rows, {name: np.asarray(state[f"slices.{STACKED}{name}"])
                                        for name in self._stacked.layout})

    def _add_stacked(self, index: Sequence[Mapping[Key, int]],
                     rows: Sequence[Mapping[Key, int]], arrays: Mapping[str, np.ndarray]
                     ) -> None:
        """Add other stacked slices: per dimension each slice's row in ``arrays`` (the
        parts, stacked) and its rows; a slice not here yet gets a row first."""
        assert self._stacked is not None
        theirs, mine = [], []
        for dimension, (their_index, their_rows) in enumerate(zip(index, rows, strict=True)):
            for key, row in their_index.items():
                here = self._row_of[dimension].get(key)
                if here is None:
                    here = self._row_of[dimension][key] = self._stacked.append()
                theirs.append(row)
                mine.append(here)
                counts = self._rows[dimension]
                counts[key] = counts.get(key, 0) + int(their_rows[key])
        if theirs:
            taken = np.array(theirs, dtype=np.int64)
            self._stacked.add(np.array(mine, dtype=np.int64),
                              {name: array[taken] for name, array in arrays.items()})


def _by_slice(state: Mapping[str, Any]) -> dict[tuple[int, int], dict[str, Any]]:
    """A saved sliced state's slices' own states (``slices.DIMENSION.NUMBER.NAME``), each
    under its names, by (dimension, number): one pass over the state's entries, not one a
    slice (many slices)."""
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for name, value in state.items():
        parts = name.split(".", 3)
        if len(parts) == 4 and parts[0] == "slices" and parts[1].isdigit() \
                and parts[2].isdigit():
            found.setdefault((int(parts[1]), int(parts[2])), {})[parts[3]] = value
    return found


_PLAIN = (str, int, float, bool)


def _packed(states: list[dict[str, Any]]
            ) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    """The slices' own states (:meth:`SlicedMetric.state_dict`, in its order) packed: a
    part every slice holds as the same plain value (its kind, format, options) saved once
    (``"same"``), a part every slice holds as an array (:func:`_joinable`) joined along
    its first axis with each slice's length, and each slice's dtype when they differ
    (``"joined"``); the entries, how each part was packed (for the layout) and, for
    each slice, its parts that were not."""
    if not states:
        return {}, {}, []
    entries: dict[str, Any] = {}
    how: dict[str, str] = {}
    for name, first in states[0].items():
        values: list[Any] = [state.get(name) for state in states]
        if isinstance(first, _PLAIN) and all(
                type(value) is type(first) and value == first for value in values):
            entries[f"slices.{PACKED}{name}"], how[name] = first, "same"
        elif _joinable(values):
            held = [value for value in values if len(value)]
            joined = entries[f"slices.{PACKED}{name}"] = (
                np.concatenate(held) if held else values[0])
            entries[f"slices.{PACKED_LENGTHS}{name}"] = np.array(
                [len(value) for value in values], dtype=np.int64)
            if any(value.dtype != joined.dtype for value in values):
                entries[f"slices.{PACKED_DTYPES}{name}"] = np.array(
                    [value.dtype.str for value in values])
            how[name] = "joined"
    rest = [{name: value for name, value in state.items() if name not in how}
            for state in states]
    return entries, how, rest


def _joinable(values: list[Any]) -> bool:
    """Whether :func:`_packed` joins a part whose value in each slice is ``values``: arrays
    of one shape but the first axis, those with elements of one dtype, or of floats or
    of text of several widths (each slice's dtype saved, its values held exactly)."""
    first = values[0]
    if not (isinstance(first, np.ndarray) and first.ndim and all(
            isinstance(value, np.ndarray) and value.shape[1:] == first.shape[1:]
            for value in values)):
        return False
    dtypes = {value.dtype for value in values if len(value)}
    kinds = {dtype.kind for dtype in dtypes}
    return len(dtypes) <= 1 or (len(kinds) == 1 and kinds <= {"f", "U"})


def _unpacked(saved: Mapping[str, Any], state: Mapping[str, Any],
              of_slice: dict[tuple[int, int], dict[str, Any]]) -> None:
    """The parts :func:`_packed` packed in ``state`` (``saved``: its layout) added to
    each slice's own state in ``of_slice`` (by dimension and number), a joined part's
    piece a view of it (or of its own dtype, when saved); a state saved before slices
    were packed has none."""
    slots = [(index, number) for index, listed in enumerate(saved["slices"])
             for number in range(len(listed))]
    for name, how in saved.get("packed", {}).items():
        value = state.get(f"slices.{PACKED}{name}")
        if value is None or (how != "same" and f"slices.{PACKED_LENGTHS}{name}" not in state):
            raise StateFormatError(f"a sliced state without its slices' part {name}: "
                                   "damaged")
        if how == "same":
            pieces: list[Any] = [value] * len(slots)
        else:
            joined = np.asarray(value)
            lengths = np.asarray(state[f"slices.{PACKED_LENGTHS}{name}"], dtype=np.int64)
            if len(lengths) != len(slots) or int(lengths.sum()) != len(joined):
                raise StateFormatError(
                    f"a sliced state whose slices' part {name} has {len(lengths)} lengths "
                    f"summing to {int(lengths.sum())} for {len(slots)} slices and "
                    f"{len(joined)} rows: damaged")
            bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
            pieces = [joined[start:stop] for start, stop in pairwise(bounds)]
            dtypes = state.get(f"slices.{PACKED_DTYPES}{name}")
            if dtypes is not None:
                if len(dtypes) != len(slots):
                    raise StateFormatError(f"a sliced state whose slices' part {name} has "
                                           f"{len(dtypes)} dtypes for {len(slots)} slices: "
                                           "damaged")
                pieces = [piece.astype(dtype, copy=False) for piece, dtype
                          in zip(pieces, np.asarray(dtypes).tolist(), strict=True)]
        for slot, piece in zip(slots, pieces, strict=True):
            of_slice.setdefault(slot, {})[name] = piece


def read_layout(state: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`STATE_KEY` entry of a sliced metric's saved state, parsed."""
    text = state[STATE_KEY]
    if isinstance(text, np.ndarray):
        text = text.item()
    layout: dict[str, Any] = json.loads(str(text))
    return layout


def from_state(metric: Metric, state: Mapping[str, Any]) -> SlicedMetric:
    """A fresh sliced metric like the one that saved ``state`` (its slices, ``min_rows``
    and slice options), of base ``metric``."""
    saved = read_layout(state)
    return SlicedMetric(metric, saved["dimensions"], min_rows=int(saved["min_rows"]),
                        options=saved["options"])


def _plain_options(options: Mapping[str, Any]) -> dict[str, Any]:
    plain: dict[str, Any] = json.loads(json.dumps(dict(options)))
    return plain


def _by_metric(sums: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """The summed parts of :meth:`SlicedMetric.local_sums` by the metric they are of
    (``base.``, a slice's ``DIMENSION.NUMBER.`` or a stacked one's ``stacked.NUMBER.``),
    each under its own name, in one pass (not one pass over every slice's parts per
    slice)."""
    parts: dict[str, dict[str, np.ndarray]] = {}
    for name, value in sums.items():
        if name.startswith("base."):
            prefix, rest = "base.", name[len("base."):]
        elif name.startswith(STACKED):
            number, rest = name[len(STACKED):].split(".", 1)
            prefix = f"{STACKED}{number}."
        else:
            index, number, rest = name.split(".", 2)
            prefix = f"{index}.{number}."
        parts.setdefault(prefix, {})[rest] = value
    return parts


WARNED_NAMES = 5
"""Slices named in a warning of several (``auc: 180 slices (site=a, ...): ...``)."""


def _slices_warning(name: str, slices: list[str], message: str) -> str:
    """One warning for every slice of metric ``name`` whose own would be ``message``: that
    one (``auc[site=x]: ...``) for a slice alone, else the number of slices and the first
    of them (``auc: 180 slices (site=a, site=b, ...): ...``)."""
    if len(slices) == 1:
        return f"{name}[{slices[0]}]: {message}"
    named = ", ".join(slices[:WARNED_NAMES]) + (", ..." if len(slices) > WARNED_NAMES else "")
    return f"{name}: {len(slices)} slices ({named}): {message}"


def _grouped(keys: list[Key], code: np.ndarray) -> tuple[list[Key], np.ndarray, np.ndarray]:
    """The rows of a batch in slice order (stable: each slice's rows in their order) and
    each slice's bounds in it, from each row's slice ``code`` among ``keys``; rows coded
    :data:`GIVEN` (in no slice here: :meth:`SlicedMetric._flush`) come first, before the
    first slice's bound."""
    given = code.dtype.kind == "i" and len(code) > 0 and int(code.min()) < 0
    code = code + 1 if given else code  # GIVEN as 0, the slices from 1
    width = len(keys) + given
    # a stable sort of small integers is numpy's radix sort: one pass, not a merge sort
    small = np.uint8 if width <= 1 << 8 else np.uint16 if width <= 1 << 16 else None
    order = np.argsort(code if small is None else code.astype(small), kind="stable")
    counts = np.bincount(code, minlength=width)
    bounds = np.zeros(len(keys) + 1, dtype=np.int64)
    bounds[0] = counts[0] if given else 0
    np.cumsum(counts[1:] if given else counts, out=bounds[1:])
    bounds[1:] += bounds[0]
    return keys, order, bounds


def _present(keys: list[Key], codes: np.ndarray) -> Coding:
    """A batch's slices coded among a dimension's (:meth:`SlicedMetric._codes`) as among
    those its rows hold, in the dimension's order."""
    found = np.bincount(codes, minlength=len(keys))
    present = np.flatnonzero(found)
    renumber = np.zeros(len(keys), dtype=np.int64)
    renumber[present] = np.arange(len(present))
    return [keys[number] for number in present.tolist()], renumber[codes]


def _in_order(counts: Mapping[Key, int]) -> list[tuple[Key, int]]:
    """The slices of ``counts`` with their rows, sorted by their values (:func:`_sort_key`);
    those of one column of ASCII digits only (ids read as text) by arrays: their numbers,
    then their text (as the key compares them), not a key a slice."""
    items = list(counts.items())  # (in the dict's order: no key looked up again)
    if items and all(len(key) == 1 for key, _ in items):
        texts = [value for (value,), _ in items]
        if all(type(text) is str and text.isascii() and text.isdigit() for text in texts):
            numbers = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
            order = np.lexsort((np.array(texts), numbers)).tolist()
            return [items[at] for at in order]
    return sorted(items, key=lambda item: _sort_key(item[0]))


def _sort_key(key: Key) -> tuple[tuple[Any, ...], ...]:
    """Slices in order of their values: integers first (should a column mix them with
    text), in order; then text that is a decimal number (``-5``, ``2``, ``10.25``; the
    command line reads a slice column as text), in order of its number; then other text
    in natural order, its runs of digits compared as numbers (``site2`` before
    ``site10``). Ties (``02`` and ``2``) go by the text: no two values compare equal."""
    return tuple((0, value) if not isinstance(value, str)
                 else (1, float(value), value) if (value.isascii() and value.isdigit())
                 or _NUMBER.fullmatch(value)
                 else (2, _natural(value), value) for value in key)


def _natural(text: str) -> tuple[tuple[int, str | int], ...]:
    """``text`` as its runs of digits (numbers) and of other characters (text), in order:
    a natural sort key. A run of digits sorts before text at the same place."""
    return tuple((0, int(run)) if run.isdigit() else (1, run)
                 for run in _RUNS.findall(text))


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_RUNS = re.compile(r"[0-9]+|[^0-9]+")


def _take(values: Any, rows: np.ndarray) -> Any:
    """The rows ``rows`` (indexes, ascending) of one ``update()`` argument."""
    if values is None:
        return None
    if isinstance(values, (Coded, HashedIds)):
        return values[rows]
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.take(pa.array(rows))
    return np.asarray(values)[rows]


def _waiting(coded: list[Coding], small: Callable[[int, list[Key]], np.ndarray]
             ) -> tuple[list[Coding] | None, tuple[np.ndarray, list[Coding]] | None]:
    """The rows' slices ``coded`` split by ``small`` (:meth:`SlicedMetric._flush`): the
    slices to give (a row of a small slice coded :data:`GIVEN` in its dimension; None:
    every row's slices are small), and the rows that wait on (those of a small slice in any
    dimension; None: none) with their slices (a row given in a dimension coded
    :data:`GIVEN` there)."""
    # each slice's flag, and False last: what a row coded GIVEN (-1) reads
    smalls = [np.append(small(dimension, keys), False)[codes]
              for dimension, (keys, codes) in enumerate(coded)]
    waits = np.logical_or.reduce(smalls)
    if not waits.any():
        return coded, None
    rows = np.flatnonzero(waits)
    every = len(rows) == len(waits)
    given: list[Coding] | None = None if all(one.all() for one in smalls) else []
    kept: list[Coding] = []
    for small_rows, (keys, codes) in zip(smalls, coded, strict=True):
        codes = codes.astype(np.int64, copy=False)  # signed, for GIVEN (-1)
        if given is not None:
            given.append((keys, np.where(small_rows, GIVEN, codes)))
        taken, small_taken = (codes, small_rows) if every else (codes[rows], small_rows[rows])
        kept.append((keys, np.where(small_taken, taken, GIVEN).astype(np.int32)))
    return given, (rows, kept)


def _exchanged(comm: Comm, outgoing: list[list[bytes]]) -> list[list[Any]]:
    """Collective: the pickles ``outgoing[r]`` sent to rank ``r`` (one ``Alltoallv`` of
    their bytes, each copied once into the send buffer and then let go), and the objects
    each rank sent to this one, by source rank, in their order (none from this rank)."""
    counts = np.array([sum(map(len, pickles)) for pickles in outgoing], dtype=np.int64)
    packed = np.empty(int(counts.sum()), dtype=np.uint8)
    at = 0
    for pickles in outgoing:
        pickles.reverse()  # each let go once copied, in order
        while pickles:
            data = pickles.pop()
            packed[at:at + len(data)] = np.frombuffer(data, dtype=np.uint8)
            at += len(data)
            del data
    received_counts, received = comm.exchange_packed(packed, counts)
    del packed
    by_source: list[list[Any]] = []
    at = 0
    for count in received_counts.tolist():
        stream = io.BytesIO(received[at:at + count].tobytes())
        by_source.append([])
        while stream.tell() < count:
            by_source[-1].append(pickle.load(stream))
        at += count
    return by_source


def _saved(name: str, values: Any, state: dict[str, Any]) -> Any:
    """A waiting argument saved in ``state`` under ``name`` (:meth:`SlicedMetric.state_dict`,
    of a type :func:`_kept` keeps): what it is, for :func:`_loaded`."""
    if values is None:
        return None
    if isinstance(values, HashedIds):
        state[f"{name}.keys"] = values.keys
        if values.checks is not None:
            state[f"{name}.checks"] = values.checks
        return "hashed" if values.checks is not None else "hashed unchecked"
    if isinstance(values, Coded):
        state[f"{name}.codes"] = np.asarray(values.codes)
        return ["coded", list(values.values)]
    state[name] = values
    return "array"


def _loaded(name: str, kind: Any, state: Mapping[str, Any]) -> Any:
    """A waiting argument :func:`_saved` saved."""
    if kind is None:
        return None
    if kind in ("hashed", "hashed unchecked"):
        checks = None if kind == "hashed unchecked" else np.asarray(state[f"{name}.checks"])
        return HashedIds(np.asarray(state[f"{name}.keys"]), checks)
    if isinstance(kind, list) and kind[0] == "coded":
        return Coded(tuple(kind[1]), np.asarray(state[f"{name}.codes"]))
    return np.asarray(state[name])


def _kept(args: tuple[Any, ...], columns: Mapping[str, Any]
          ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The arguments of a batch kept to wait for their slices (:meth:`SlicedMetric._flush`):
    copies (the caller may reuse its arrays), or None when one of them is of a type not
    joined here (its slices then take their rows at once)."""
    def copied(values: Any) -> Any:
        if values is None:
            return None
        if isinstance(values, HashedIds):
            return HashedIds(np.array(values.keys),
                             None if values.checks is None else np.array(values.checks))
        if isinstance(values, Coded):
            return Coded(values.values, np.array(values.codes))
        if isinstance(values, np.ndarray) and values.ndim == 1:
            return np.array(values)
        raise TypeError

    try:
        return (tuple(copied(values) for values in args),
                {name: copied(values) for name, values in columns.items()})
    except TypeError:
        return None


def _shape(args: tuple[Any, ...], columns: Mapping[str, Any]) -> tuple[Any, ...]:
    """What must be the same of two batches for their kept arguments to be joined: the
    arguments given, their types and dtypes."""
    def of(values: Any) -> Any:
        if isinstance(values, HashedIds):
            return (HashedIds, values.keys.dtype, values.checks is None)
        if isinstance(values, Coded):
            return (Coded, values.codes.dtype)
        return None if values is None else (np.ndarray, values.dtype)

    return (tuple(of(values) for values in args),
            tuple((name, of(values)) for name, values in columns.items()))


def _joined(parts: list[Any]) -> Any:
    """Kept arguments of several batches (:func:`_kept`, of one :func:`_shape`) as one."""
    first = parts[0]
    if first is None or len(parts) == 1:
        return first
    if isinstance(first, HashedIds):
        return HashedIds(np.concatenate([part.keys for part in parts]),
                         None if first.checks is None
                         else np.concatenate([part.checks for part in parts]))
    if isinstance(first, Coded):
        values, codes = _union([(part.values, part.codes) for part in parts])
        return Coded(tuple(values), codes)
    return np.concatenate(parts)


def _joined_codes(parts: list[Coding]) -> Coding:
    """The slices of several batches in one dimension as one (:func:`_union`)."""
    return parts[0] if len(parts) == 1 else _union(parts)


def _union(parts: Sequence[tuple[Sequence[Any], np.ndarray]]) -> tuple[list[Any], np.ndarray]:
    """Several batches' values, each with its rows' indexes among them, as one: the values
    in the order they came, each row's index among them. Batches coded among the same
    values (a dimension's slices: :meth:`SlicedMetric._codes`) keep them."""
    if all(values is parts[0][0] for values, _ in parts):
        return parts[0][0], np.concatenate([codes for _, codes in parts])  # type: ignore[return-value]
    values = list(dict.fromkeys(chain.from_iterable(values for values, _ in parts)))
    index = dict(zip(values, range(len(values)), strict=True))
    # (an index GIVEN reads the last: GIVEN)
    codes = [np.append(np.fromiter(map(index.__getitem__, part), dtype=np.int64,
                                   count=len(part)), GIVEN)[local] for part, local in parts]
    return values, np.concatenate(codes)


def _slice_values(column: str, values: Any, rows: int) -> tuple[list[Any], np.ndarray]:
    """A slice column's distinct values (Python ints or strs; each new one then checked
    once, :func:`_check_slice_values`) and each row's index among them; an
    :class:`InputError` naming the column."""
    try:
        values_seen, inverse = distinct(values)
    except InputError as error:
        raise InputError(column, error.problem.replace("tag", "slice value"),
                         count=error.count, first_index=error.first_index,
                         value=error.value) from None
    if len(inverse) != rows:
        raise InputError(column, f"length mismatch: {column}={len(inverse)}, rows={rows}")
    return values_seen, np.asarray(inverse)


def _check_slice_values(column: str, values: list[Any]) -> None:
    """Each slice value that is text is a word of the log line without ``*``, ``[`` or
    ``]`` (which would break its slice's name); an :class:`InputError` naming the column
    and the first that is not (all of them looked at once first: many slices)."""
    texts = [value for value in values if isinstance(value, str)]
    joined = "a".join(texts)
    if all_log_words(texts) and not ("*" in joined or "[" in joined or "]" in joined):
        return
    for value in texts:
        check_log_word(column, value)
        if "*" in value or "[" in value or "]" in value:
            raise InputError(column, f"slice value {value!r} holds *, [ or ], which "
                             "would break the slice's name", value=value)
