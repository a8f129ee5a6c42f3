"""What every metric kind shares: its declaration, error handling, the compute protocol,
and the :class:`Evaluator` that computes several named metrics with one ``Allreduce``.

A kind is declared once, in its folder (:class:`mpieval.declaration.Kind`: the
:class:`~mpieval.declaration.Input` s that ``update()`` takes, each read from one column
by the command line, and its :class:`~mpieval.declaration.Option` s with their defaults
and checks); its metric class takes ``inputs`` and ``options`` from there and declares its
state's parts (:mod:`mpieval.state`), which the base class creates, resets and merges.

A metric's compute has two steps: :meth:`Metric.local_sums` returns this rank's named
summable parts (it may run collectives first, e.g. moving a user's rows to the rank that
owns the user), and :meth:`Metric.finish` turns the parts summed over ranks into a frozen
result. :func:`compute_all` packs the parts of many metrics into one buffer and sums it
with one ``Allreduce``. Results appear on every rank, identical; warnings about undefined
values only on rank 0.

A kind with a ``window`` option (:data:`WINDOW`) ends its ``update()`` with
:meth:`Metric._add`, which counts the validated batch (the kind's
:meth:`Metric._accumulate`) and keeps its rows in the metric's recent window
(:mod:`mpieval.window`); :func:`compute_all` counts each window into a fresh state, sums
its parts in the same buffer, and sets the result's ``window`` to the same kind's result
over the window's rows.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import numbers
import sys
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import pairwise
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.declaration import Input, Option, checked_options, signature_problem
from mpieval.errors import InputError, StateFormatError, UndefinedMetricWarning
from mpieval.kernels import exact
from mpieval.rows import RowBuffer
from mpieval.state import Part, Stacked, State, Summed, pack_taking, unpack
from mpieval.validation import check_metric_mapping
from mpieval.window import RecentRows

if TYPE_CHECKING:  # imported where rows move: a kind without rows never loads the exchange
    from mpieval.exchange import Moved

STATE_FORMAT = 4
"""The layout of a metric's :meth:`~Metric.state_dict` (its keys and their meaning), saved
in it as ``format``: raised when a change would make an older version misread a state
(a part renamed, reshaped or meaning something else), so that such a state is refused by
name. States saved before the field existed are format 1. Format 2: the per-user kinds'
tag codes are uint32, 2**32 - 1 the code of a row without a tag (format 1's were uint16,
65,535 for no tag: read as such, ``mpieval.user_rows``). Format 3: a sliced metric's
slices' own states are packed into a few entries (``mpieval.slices``: format 2's, one
entry a slice and part, read as such). Format 4: ``pn`` keeps its rows as the other
per-user kinds (``mpieval.user_rows``: the checks of string uids apart, ``checks.check``,
their low 32 bits; format 3's ``rows.check`` beside every key, read as such). tests/data/states
keeps a saved run of every format, which each version must still read."""


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...
    def to_log_line(self, name: str) -> str: ...


class FieldsResult:
    """A frozen result dataclass whose JSON object is its kind and its fields in order
    (NaN as ``null``); a ``window`` field, when set, is the same kind's object over the
    recent window (:func:`window_dict`), and is left out when None."""

    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        window: Result | None = getattr(self, "window", None)
        fields = {k: v for k, v in logline.json_fields(self).items() if k != "window"}
        if window is not None:
            fields["window"] = window_dict(window)
        return {"kind": self.kind, **fields}


def window_dict(window: Result) -> dict[str, Any]:
    """The JSON object of a result over the recent window: the kind's usual names, without
    ``kind`` (the enclosing block's)."""
    return {name: value for name, value in window.to_dict().items() if name != "kind"}


class OnComm:
    """Something that communicates on a communicator given once (or None) and resolved
    on first use; pickled without it (resolved again after loading), copied with it."""

    def __init__(self, comm: Comm | Any | None) -> None:
        self._comm_given = comm
        self._comm: Comm | None = None

    @property
    def comm(self) -> Comm:
        """The communicator, resolved on first use (:meth:`Comm.resolve`: the MPI world
        under an MPI launcher, else torch's default group when initialised, else one
        rank)."""
        if self._comm is None:
            self._comm = Comm.resolve(self._comm_given)
        return self._comm

    @comm.setter
    def comm(self, comm: Comm | Any | None) -> None:
        """Use ``comm`` from now on (e.g. after unpickling in a trainer)."""
        self._comm_given, self._comm = comm, None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the communicator: it is resolved again on first use after
        loading (the default one, or the one set with ``metric.comm = ...``)."""
        state = dict(self.__dict__)
        state["_comm"] = state["_comm_given"] = None
        if "_moved" in state:  # it names a communicator: the rows count as not moved
            state["_moved"] = None
        return state

    def __copy__(self) -> OnComm:
        """A shallow copy on the same communicator."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        return copied


_PLAIN_VALUES = (numbers.Number, str, bytes, list, tuple, dict, set, frozenset, np.ndarray)
"""Values that are no communicator (an option's value: ``AucMetric(1000)``)."""


class Metric(OnComm, ABC):
    """Base of the metric kinds: a declaration, local updates, a collective compute.

    A kind sets ``kind``, ``inputs`` and ``options``, implements :meth:`state_layout`,
    ``update``, :meth:`local_sums` and :meth:`finish`; its constructor passes its options
    to ``Metric.__init__``, which checks them (the declared checks), sets them as
    attributes and creates the empty state.
    """

    kind: ClassVar[str]
    inputs: ClassVar[tuple[Input, ...]]
    options: ClassVar[tuple[Option, ...]] = ()
    arguments: ClassVar[tuple[str, ...]] = ()  # the class's keywords that are not options
    # local_sums returns float64 arrays made for the call, which nothing else holds (the
    # per-user kinds' per-tag sums): on one rank they go to finish as they are, not copied
    # (finish may take them out of its sums); else they are copied, as the sum's buffer is
    fresh_sums: ClassVar[bool] = False
    window: int | None = None  # rows of the recent window (kinds that declare WINDOW)

    def __init__(self, comm: Comm | Any | None = None, **options: Any) -> None:
        if isinstance(comm, _PLAIN_VALUES):  # an option given by position
            raise TypeError(
                f"{type(self).__name__}() takes a communicator or None first, got {comm!r}: "
                f"options are keyword arguments ({type(self).__name__}"
                f"({self.options[0].name if self.options else 'option'}={comm!r}))")
        super().__init__(comm)
        for name, value in self.check_options(options).items():
            setattr(self, name, value)
        self.reset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind's class (one that sets ``kind``) takes ``comm=None`` first, then its
        kind's options as keyword-only arguments with their declared defaults
        (``AucMetric(comm=None, *, table_size=1_000_000, ...)``), and any of its own
        ``arguments``: a constructor that says otherwise is a :class:`TypeError` here, when
        the class is defined."""
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "kind"):
            problem = signature_problem(inspect.signature(cls), cls.options, cls.arguments)
            if problem is not None:
                raise TypeError(f"{cls.__name__}() {problem}")

    # -- the declaration -------------------------------------------------------------

    @classmethod
    def check_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every option of the kind, given or default, checked."""
        return checked_options(cls.kind, cls.options, given)

    @classmethod
    def option(cls, name: str) -> Option:
        """The declared option ``name``."""
        return next(option for option in cls.options if option.name == name)

    @abstractmethod
    def state_layout(self) -> dict[str, Part]:
        """The parts of the state (names, shapes, how each merges), from the options."""

    # -- state -----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every row, the window's too, and any recorded error (for the next pass)."""
        self._error: InputError | None = None
        self.state = State(self.state_layout())
        self._recent = None if self.window is None else RecentRows(self.window)
        self._moved: Moved | None = None  # which kept rows are at their owner rank

    def move_rows(self, comm: Comm) -> None:
        """Collective, for a kind that keeps rows per user: send the rows kept since the
        last move to the ranks of ``comm`` that own their users, so that each rank holds
        its own users' rows, once; ``compute()`` on ``comm`` then moves only the rows
        kept after. Called by every rank at the same point (the command line calls it
        after each reading round, a trainer may between batches); results are the same
        bits with or without it. Other kinds keep no rows: nothing."""

    def _moved_rows(self, comm: Comm, rows: RowBuffer) -> Moved:
        """The record of the rows of ``rows`` at their owners on ``comm``: this metric's,
        or a new one (none there yet) when it was made for other rows or ranks."""
        from mpieval.exchange import Moved

        moved = self._moved
        if moved is None or not moved.at_owners(comm, rows):
            moved = self._moved = Moved(comm, rows)
        return moved

    def reserve(self, rows: int) -> None:
        """About ``rows`` rows are coming to this empty metric (local; a hint, as a reader
        that knows its bytes gives): a kind that keeps its rows keeps them in arrays sized
        once (:meth:`mpieval.rows.RowBuffer.reserve`), with nothing to join at compute;
        the others ignore it."""
        for name in self.state:
            part = self.state[name]
            if isinstance(part, RowBuffer):
                part.reserve(rows)

    def _add(self, **columns: np.ndarray | None) -> None:
        """Count a validated batch into the state and, with a window, keep its rows as
        the window's newest (the last step of ``update()`` of a kind with a window)."""
        if not self._deferred:
            self._accumulate(self.state, **columns)
        if self._recent is not None:
            self._recent.keep(columns)
        if self._validated is not None:
            self._validated.append(columns)

    _validated: list[dict[str, np.ndarray | None]] | None = None
    _deferred = False

    @contextmanager
    def _keeping_validated(self, *, defer: bool = False,
                           ) -> Iterator[list[dict[str, np.ndarray | None]]]:
        """Within: each batch :meth:`_add` counts is also appended, as validated, to the
        list given (a sliced metric's slices count the base's validated rows, not checked
        again); a kind whose ``update()`` does not end in :meth:`_add` appends nothing.
        ``defer``: :meth:`_add` appends the batch without counting it into the state; the
        caller counts it (:meth:`_accumulate_slices` with ``whole``, or
        :meth:`_accumulate`)."""
        kept: list[dict[str, np.ndarray | None]] = []
        self._validated, self._deferred = kept, defer
        try:
            yield kept
        finally:
            self._validated, self._deferred = None, False

    def _accumulate(self, state: State, *args: Any, **kwargs: Any) -> None:
        """Count validated rows (the columns :meth:`_add` was given) into ``state``; a
        window counts its kept rows again with it. Kinds with a ``window`` implement it."""
        raise NotImplementedError(f"kind {self.kind} has no window")

    def stacks_slices(self) -> bool:
        """Whether slices of this metric (:mod:`mpieval.slices`) may keep their states
        stacked (:class:`~mpieval.state.Stacked`: one array per part for every slice)
        rather than a metric each: a kind whose ``update()`` ends in :meth:`_add`, whose
        state is summed parts only, and whose :meth:`local_sums` gives those parts as
        they are and :meth:`finish` reads nothing else of the metric's state. False
        unless a kind says so."""
        return False

    def _accumulate_slices(self, stacked: Stacked, codes: np.ndarray, *args: Any,
                           **kwargs: Any) -> bool:
        """Count validated rows (the columns :meth:`_add` was given) into the stacked
        states of many slices at once, row ``i`` into state ``codes[d, i]`` for each slice
        column ``d``, as :meth:`_accumulate` of each slice's rows would, and every row into
        keyword ``whole`` (a State: the sliced metric's own, as its :meth:`_accumulate` of
        these rows would) in the same pass; False when the kind has no such pass for these
        rows (counting nothing: the caller then counts ``whole`` and each slice's rows with
        :meth:`_accumulate`). None here."""
        return False

    def recent(self) -> Metric | None:
        """This rank's window as a metric of its own (a fresh state that counted the
        kept rows, no window), or None when the metric has no window."""
        if self._recent is None:
            return None
        recent = copy.copy(self)
        recent.state, recent._recent = State(self.state_layout()), None
        for batch in self._recent:
            self._accumulate(recent.state, **batch)
        return recent

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both (e.g. two shards of one rank); neither
        changes. Both must be of one kind with the same options."""
        if type(other) is not type(self) or self._options() != other._options():
            raise ValueError(f"cannot merge {self._describe()} with {other._describe()}")
        merged = copy.copy(self)
        merged.state = self.state.merge(other.state)
        if self._recent is not None and other._recent is not None:
            merged._recent = self._recent.merged(other._recent)
        merged._error = self._error or other._error
        return merged

    def _options(self) -> dict[str, Any]:
        return {option.name: getattr(self, option.name) for option in self.options}

    def _describe(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self._options().items())
        return f"{type(self).__name__}({options})"

    def layout(self) -> str:
        """What ranks must agree on before merging this metric: kind, options, and each
        part's shape (summed) or columns (rows)."""
        parts = ", ".join(
            f"{name}={part.shape if isinstance(part, Summed) else sorted(part.dtypes)}"
            for name, part in self.state.layout.items())
        return f"{self._describe()} with state {parts}"

    # -- checkpoints -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """This rank's state as plain values: ``kind``, ``format`` (:data:`STATE_FORMAT`),
        ``options.NAME`` for each option,
        each summed part as a float64 array, each rows part's columns as ``PART.COLUMN``
        arrays (copies), the window's kept rows as ``window.*`` arrays
        (:meth:`RecentRows.state_dict`), and the kind's own extras; no communicator.
        Every value saves in an ``.npz`` file (:mod:`mpieval.checkpoint`)."""
        state: dict[str, Any] = {"kind": self.kind, "format": STATE_FORMAT}
        state.update({f"options.{o.name}": getattr(self, o.name) for o in self.options
                      if getattr(self, o.name) is not None})  # an absent option is None
        for name, part in self.state.layout.items():
            if isinstance(part, Summed):
                state[name] = self.state.summed(name).copy()
            else:
                for column, values in self.state.rows(name).columns().items():
                    state[f"{name}.{column}"] = values.copy()
        if self._recent is not None:
            state.update(self._recent.state_dict())
        if self._error is not None:
            state.update(_error_state(self._error))
        state.update(self._extra_state())
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (this rank's, or another rank's: see
        :meth:`load_state_dicts`); the metric's options must be the saved ones."""
        self.load_state_dicts([state])

    def load_state_dicts(self, states: Sequence[Mapping[str, Any]]) -> None:
        """Restore the merge of several saved states (e.g. the parts of a checkpoint
        written on more ranks than there are now: summed parts add, rows concatenate,
        and the windows' kept rows are all kept, in the order of ``states``, so that the
        job's window is the saved one; later batches cut it back to ``window`` rows,
        oldest first). No states: an empty metric."""
        self.reset()
        merged: Metric = self
        for index, state in enumerate(states):
            part = copy.copy(self)
            part.reset()
            part._load_one(state)
            merged = part if index == 0 else merged.merge(part)
        self.__dict__.update(merged.__dict__)

    def _load_one(self, state: Mapping[str, Any]) -> None:
        kind = _plain(state.get("kind"))
        if kind != self.kind:
            raise ValueError(f"a saved {kind} state cannot load into a {self.kind} metric")
        saved_format = _plain(state.get("format", 1))  # states from before it was saved: 1
        if saved_format > STATE_FORMAT:
            raise StateFormatError(
                f"a {kind} state of format {saved_format}, written by a newer mpieval: "
                f"this version reads state formats up to {STATE_FORMAT}")
        self._load_extra_state(state)
        # an option absent from a saved state is its default: an option whose value is
        # None is not saved, and a state saved before an option existed has its default
        saved = {option.name: _plain(state.get(f"options.{option.name}", option.default))
                 for option in self.options}
        mine = {option.name: getattr(self, option.name) for option in self.options}
        if saved != mine:
            raise ValueError(f"saved options {saved} differ from this metric's {mine}")
        later = self._parts_added_later()
        missing = [name for name in self._saved_names() if name not in state
                   and name not in later]
        if missing:
            raise StateFormatError(
                f"a {kind} state of format {saved_format} without {', '.join(missing)}: "
                f"not a state this version (format {STATE_FORMAT}) wrote, or damaged")
        for name, part in self.state.layout.items():
            if name in later and name not in state:
                continue  # left at 0: the kind says what that means (_parts_added_later)
            if isinstance(part, Summed):
                values = np.asarray(state[name], dtype=np.float64)
                if values.shape != part.shape:
                    raise ValueError(f"saved part {name} has shape {values.shape}, "
                                     f"expected {part.shape}")
                self.state.summed(name)[...] = values
            else:
                rows = self.state.rows(name)
                columns = {c: np.asarray(state[f"{name}.{c}"]) for c in rows.dtypes}
                for column, values in columns.items():
                    if values.dtype != rows.dtypes[column]:
                        rows.widen(column, values.dtype)
                rows.append(**columns)
        if self.window is not None:
            self._recent = RecentRows.from_state_dict(self.window, state)
        self._error = _saved_error(state)

    def _parts_added_later(self) -> frozenset[str]:
        """Summed parts a state of this format may lack, saved before they existed: left
        at 0 on load, which the kind reads as unknown (the ``auc`` kind's moments: its
        intervals of logloss and the rest are then null, with a warning)."""
        return frozenset()

    def _saved_names(self) -> list[str]:
        """The keys of :meth:`state_dict` that every saved state of this metric holds."""
        names = []
        for name, part in self.state.layout.items():
            if isinstance(part, Summed):
                names.append(name)
            else:
                names += [f"{name}.{column}" for column in self.state.rows(name).dtypes]
        return names

    def _extra_state(self) -> dict[str, Any]:
        """State kept outside the declared parts (a kind's own; saved beside them)."""
        return {}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`_extra_state` (before the parts are loaded); none by default."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Metric:
        """A copy of the state on the same communicator."""
        copied = copy.copy(self)
        for name, value in self.__dict__.items():
            if name not in ("_comm", "_comm_given", "_moved"):
                setattr(copied, name, copy.deepcopy(value, memo))
        copied._moved = None  # the copy's rows are other buffers: none counts as moved
        return copied

    # -- errors ----------------------------------------------------------------------

    @property
    def error(self) -> InputError | None:
        """The first bad-input error since the last reset, if any."""
        return self._error

    @contextmanager
    def _validating(self) -> Iterator[None]:
        """Around an update's checks: a bad batch raises its :class:`InputError` and is
        remembered, so that the next collective compute fails on every rank."""
        try:
            yield
        except InputError as error:
            if self._error is None:
                self._error = error
            raise error from None

    # -- compute ---------------------------------------------------------------------

    @abstractmethod
    def update(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch of rows (local: no communication); a bad batch changes nothing."""

    @abstractmethod
    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """This rank's summable parts, by name (collective: every rank calls it in step,
        and every rank returns the same names and shapes)."""

    @abstractmethod
    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> Result:
        """The result from the parts summed over ranks."""

    @classmethod
    def finished_together(cls, metrics: Sequence[Metric], sums: Sequence[dict[str, np.ndarray]],
                          comm: Comm) -> list[tuple[Result, str | None]] | None:
        """The results of several metrics of this kind (a sliced metric's slices) from
        their parts, each as its :meth:`finish` makes it, with the undefined-value warning
        it would give (None: none), in one pass over them all; None when the kind (or
        these metrics' options) finishes them one at a time."""
        return None

    def compute(self) -> Result:
        """Collective: the result over every rank's rows (on every rank)."""
        return compute_all({self.kind: self}, self.comm)[self.kind]


def compute_all(metrics: Mapping[str, Metric], comm: Comm) -> dict[str, Result]:
    """Collective: compute several metrics with one error agreement and one ``sum`` of
    their packed parts (a rank alone, which has nothing to sum, hands each metric its
    parts as they are: copied when the metric holds them, see ``Metric.fresh_sums``).

    Parameters
    ----------
    metrics : mapping of str to Metric
        The metrics by name, the same names, kinds and options on every rank.
    comm : Comm
        The communicator (every rank of it calls ``compute_all`` at the same point).

    Returns
    -------
    dict of str to result
        Each metric's result, identical on every rank.

    Raises
    ------
    InputError
        A bad batch given to any metric on any rank, raised on every rank.
    LayoutMismatchError
        Ranks that disagree on the metrics or their options.

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import AucMetric, Comm, PairwiseMetric, compute_all
    >>> auc, pairs = AucMetric(), PairwiseMetric()
    >>> auc.update(np.array([0.3, 0.7]), np.array([0, 1]))
    >>> pairs.update(np.array([1, 0]), np.array([1, 1]))
    >>> results = compute_all({"ctr": auc, "pairs": pairs}, Comm.local())
    >>> results["ctr"].auc, results["pairs"].ins
    (1.0, 2)
    """
    comm.agree(next((m.error for m in metrics.values() if m.error is not None), None),
               layout="\n".join(f"{name}: {m.layout()}" for name, m in metrics.items()))
    # each metric, then its window (if any) as a metric of its own: every part in one sum
    computed: list[tuple[str, Metric, bool]] = []
    for name, metric in metrics.items():
        computed.append((name, metric, False))
        recent = metric.recent()
        if recent is not None:
            computed.append((name, recent, True))
    parts = [m.local_sums(comm) for _, m, _ in computed]
    if comm.alone:  # no sum to make: each part as it is
        sums_of = [{key: np.asarray(value, np.float64) if metric.fresh_sums
                    else np.array(value, np.float64) for key, value in part.items()}
                   for (_, metric, _), part in zip(computed, parts, strict=True)]
    else:
        sums_of = _summed(parts, comm)
    del parts
    results: dict[str, Result] = {}
    for (name, metric, is_window), sums in zip(computed, sums_of, strict=True):
        with warnings_named(f"{name} window" if is_window else name, metric.kind):
            result = metric.finish(sums, comm)
        if is_window:  # results are frozen dataclasses with a window field
            result = dataclasses.replace(cast(Any, results[name]), window=result)
        results[name] = result
    return results


def _summed(parts: list[dict[str, np.ndarray]], comm: Comm) -> list[dict[str, np.ndarray]]:
    """Collective: each metric's parts summed over the ranks, in one ``sum`` of them
    packed (each part freed as it is copied: many tags), as views of the total."""
    shapes_of = [{key: np.shape(value) for key, value in part.items()} for part in parts]
    packed = pack_taking(parts)
    total = comm.sum(packed, scratch=True)
    del packed
    sums_of, offset = [], 0
    for shapes in shapes_of:
        size = sum(int(np.prod(shape)) for shape in shapes.values())
        sums_of.append(unpack(total[offset : offset + size], shapes))
        offset += size
    return sums_of


def _error_state(error: InputError) -> dict[str, Any]:
    """A remembered bad-input error as plain values (``error.*``), so that a checkpoint
    of a metric whose ``update()`` failed still fails its ``compute()`` after loading."""
    state: dict[str, Any] = {"error.field": error.field, "error.problem": error.problem}
    if error.count is not None:
        state["error.count"] = error.count
    if error.first_index is not None:
        state["error.first_index"] = error.first_index
    if isinstance(error.value, (bool, int, float, str)):
        state["error.value"] = error.value
    return state


def _saved_error(state: Mapping[str, Any]) -> InputError | None:
    """The error :func:`_error_state` saved, or None."""
    if "error.field" not in state:
        return None
    return InputError(str(_plain(state["error.field"])), str(_plain(state["error.problem"])),
                      count=_plain(state.get("error.count")),
                      first_index=_plain(state.get("error.first_index")),
                      value=_plain(state.get("error.value")))


def _plain(value: Any) -> Any:
    """A saved value as a plain Python value (a 0-d array from an ``.npz`` file, a numpy
    scalar or a tuple saved as an array)."""
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else tuple(value.tolist())
    return value.item() if isinstance(value, np.generic) else value


_NAMED: ContextVar[tuple[str, str] | None] = ContextVar("mpieval_named", default=None)
"""(name, kind) of the metric whose result is being finished, for its warnings."""


@contextmanager
def warnings_named(name: str, kind: str) -> Iterator[None]:
    """Undefined values of one metric's finish are warned under the metric's name
    (``item_sim: no rows``, not ``auc: no rows``). No ``catch_warnings`` here: it would
    reset Python's warning registries at every compute, and a user's ``"once"`` filter
    with them."""
    token = _NAMED.set((name, kind))
    try:
        yield
    finally:
        _NAMED.reset(token)


def finishing_name(default: str) -> str:
    """The name of the metric whose result is being finished (:func:`warnings_named`), or
    ``default`` outside one."""
    named = _NAMED.get()
    return default if named is None else named[0]


_COLLECTED: ContextVar[list[str] | None] = ContextVar("mpieval_collected", default=None)
"""While :func:`undefined_collected` lasts: the undefined-value warnings, kept, not warned."""


@contextmanager
def undefined_collected() -> Iterator[list[str]]:
    """Within: each undefined-value warning (:func:`warn_undefined`, its message as it would
    be shown, named by :func:`warnings_named`) is appended to the list given instead of
    warned, so that the caller can warn once for many (a sliced metric: once per reason
    over its slices, :func:`warn_undefined_message` then)."""
    collected: list[str] = []
    token = _COLLECTED.set(collected)
    try:
        yield collected
    finally:
        _COLLECTED.reset(token)


def warn_undefined(comm: Comm, message: str) -> None:
    """One warning for the whole job (rank 0) that a value is undefined (NaN)."""
    if comm.rank == 0:
        _warn_undefined(message)


def warn_undefined_message(message: str) -> None:
    """Warn ``message`` as :func:`warn_undefined` does, on this rank (a message collected by
    :func:`undefined_collected`, on rank 0)."""
    _warn_undefined(message)


def _warn_undefined(message: str) -> None:
    """Warn :class:`UndefinedMetricWarning` ``message`` from the caller's code (the first
    frame outside mpieval: filters by module, and ``-W error``, name the trainer's call),
    shown as one line, ``mpieval: warning: MESSAGE``, as the command line prints it,
    rather than Python's default of mpieval's file, line and source line. Each call warns
    (no registry: Python's once-per-location rule would hide a later pass's undefined
    value); a filter of the user's (``"once"``, ``"ignore"``, ``"error"``) still applies.
    """
    named = _NAMED.get()
    if named is not None and message.startswith(named[1] + ":"):
        message = named[0] + message[len(named[1]) :]
    collected = _COLLECTED.get()
    if collected is not None:
        collected.append(message)
        return
    frame = sys._getframe(1)
    while frame.f_back is not None and _in_mpieval(frame):
        frame = frame.f_back
    with _undefined_on_one_line():
        warnings.warn_explicit(message, UndefinedMetricWarning, frame.f_code.co_filename,
                               frame.f_lineno, module=frame.f_globals.get("__name__"))


def _in_mpieval(frame: Any) -> bool:
    name = frame.f_globals.get("__name__", "")
    return isinstance(name, str) and (name == "mpieval" or name.startswith("mpieval."))


@contextmanager
def _undefined_on_one_line() -> Iterator[None]:
    """While it lasts (the one ``warn`` of an undefined value), Python's warning format
    shows :class:`UndefinedMetricWarning` as ``mpieval: warning: MESSAGE``; every other
    warning keeps the format it had, and the format is restored after, so that no other
    warning of the program ever changes."""
    previous = warnings.formatwarning

    def formatted(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, line: str | None = None) -> str:
        if issubclass(category, UndefinedMetricWarning):
            return f"mpieval: warning: {message}\n"
        return previous(message, category, filename, lineno, line)

    warnings.formatwarning = formatted
    try:
        yield
    finally:
        warnings.formatwarning = previous


class Evaluator(OnComm, Mapping[str, Metric]):
    """Several named metrics computed together on one communicator: one agreement on
    errors and one ``Allreduce`` of every metric's packed state per :meth:`compute`.

    Parameters
    ----------
    metrics : mapping of str to Metric
        The metrics by name (the name starts their log lines and keys their JSON).
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where :meth:`compute` communicates; None: resolved on first use.

    Raises
    ------
    InputError
        A name that is empty or holds a space, tab, newline or ``=``.

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import AucMetric, Evaluator, WuaucMetric
    >>> ev = Evaluator({"item_sim": AucMetric(), "t7_join": WuaucMetric()})
    >>> ev["item_sim"].update(np.array([0.2, 0.8, 0.6]), np.array([0, 1, 0]))
    >>> ev["t7_join"].update(uid=np.array([5, 5]), pred=np.array([0.2, 0.8]),
    ...                      label=np.array([0, 1]))
    >>> results = ev.compute()
    >>> for line in Evaluator.log_lines(results):
    ...     print(line.split()[:2])
    ['item_sim:', 'auc=1']
    ['t7_join:', 'Tag=all']
    >>> sorted(Evaluator.to_dict(results))
    ['item_sim', 't7_join']
    """

    def __init__(self, metrics: Mapping[str, Metric], comm: Comm | Any | None = None) -> None:
        super().__init__(comm)
        check_metric_mapping(metrics)
        self._metrics = dict(metrics)

    def __deepcopy__(self, memo: dict[int, Any]) -> Evaluator:
        copied = copy.copy(self)
        copied._metrics = copy.deepcopy(self._metrics, memo)
        return copied

    def state_dict(self) -> dict[str, dict[str, Any]]:
        """Every metric's :meth:`Metric.state_dict`, by name."""
        return {name: metric.state_dict() for name, metric in self._metrics.items()}

    def load_state_dict(self, state: Mapping[str, Mapping[str, Any]]) -> None:
        """Restore :meth:`state_dict` (the same names)."""
        self.load_state_dicts([state])

    def load_state_dicts(self, states: Sequence[Mapping[str, Mapping[str, Any]]]) -> None:
        """Restore the merge of several saved states (:meth:`Metric.load_state_dicts`); each
        must hold this evaluator's metric names (a ``ValueError`` naming both lists)."""
        for state in states:
            if set(state) != set(self._metrics):
                raise ValueError(f"the saved state holds the metrics {sorted(state)}, this "
                                 f"evaluator {sorted(self._metrics)}")
        for name, metric in self._metrics.items():
            metric.load_state_dicts([state[name] for state in states])

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)

    def compute(self) -> dict[str, Result]:
        """Collective: every metric's result, on every rank."""
        return compute_all(self._metrics, self.comm)

    def reset(self) -> None:
        for metric in self._metrics.values():
            metric.reset()

    @staticmethod
    def log_lines(results: Mapping[str, Result]) -> list[str]:
        """The Abacus log lines of ``results``, in order."""
        return [line for name, r in results.items() for line in r.to_log_line(name).splitlines()]

    @staticmethod
    def to_dict(results: Mapping[str, Result]) -> dict[str, dict[str, Any]]:
        """The JSON object of ``results`` (the names of the JSON reference)."""
        return {name: r.to_dict() for name, r in results.items()}


def narrowed_sums(parts: dict[str, exact.Sums], comm: Comm,
                  firsts: dict[str, int] | None = None
                  ) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, np.ndarray]]:
    """Collective: per-tag exact sums (``mpieval.kernels.exact`` accumulators, 68 digits,
    or the digits from ``firsts[name]`` on of a part cut to a window of them; or pairs,
    :class:`~mpieval.kernels.exact.Pairs`) made ready for the job's sum:
    ``(narrowed, first_digit, totals)``.

    A part every rank holds as pairs is summed here (:func:`_owners_summed`: each rank
    sums the pairs of its share of the tags and rounds them, then every rank gets every
    share's floats), and given in ``totals`` (first digit
    :data:`~mpieval.kernels.exact.ROUNDED`), not in ``narrowed``: many tags, 16 bytes a
    sum sent rather than a window of digits, and no rank makes every tag's digits. The
    other parts (pairs made digits when some rank holds the part as digits) are cut to
    the window of digits that some rank uses, with each part's first digit
    (:func:`mpieval.kernels.exact.window_to_floats` rounds them): the same floats, the
    digits outside the window being 0 on every rank, in a fraction of the bytes (a tag's
    sums use about 5 digits). One ``allgather`` of each rank's digits used; every digit on
    a communicator whose sums alone are the job's (:attr:`Comm.sums_only`); on one rank,
    which sends nothing (:func:`compute_all`), each part as it is, in its own window.

    Memory: each part is taken out of ``parts`` as it is cut or summed (left empty), so
    that a caller that holds no other reference frees it then (many tags: the parts and
    their cut copies are not all held at once)."""
    firsts = {name: (firsts or {}).get(name, 0) for name in parts}
    names = list(parts)
    if comm.alone:  # nothing sent: the windows (or floats: exact.ROUNDED) as they are
        for name, part in parts.items():
            if isinstance(part, exact.Pairs):  # (a kernel rounds them on a rank alone)
                parts[name], firsts[name] = part.to_floats(columns=True), exact.ROUNDED
        return {name: cast(np.ndarray, parts.pop(name)) for name in names}, firsts, {}
    assert exact.ROUNDED not in firsts.values(), "parts rounded on a rank alone only"
    totals: dict[str, np.ndarray] = {}
    paired = [name for name in names if isinstance(parts[name], exact.Pairs)]
    if paired and not comm.sums_only:  # summed by their owners where every rank has pairs
        views = comm.allgather(paired)
        everywhere = [name for name in paired if all(name in view for view in views)]
        totals = _owners_summed(parts, everywhere, comm)
        for name in totals:
            firsts[name] = exact.ROUNDED
    for name in names:  # pairs not summed above: as digits
        held = parts.get(name)
        if isinstance(held, exact.Pairs):
            parts[name], firsts[name] = held.digits()
    left = [name for name in names if name not in totals]
    digits = cast(dict[str, np.ndarray], parts)
    if comm.sums_only:
        return ({name: _widened(digits.pop(name), firsts[name], 0, exact.DIGITS)
                 for name in left}, {name: 0 for name in left}, totals)
    narrowed, first_digit = {}, {name: firsts[name] for name in names}
    if left:
        ranges = comm.allgather({name: _shifted(exact.used_digits(digits[name]), firsts[name])
                                 for name in left})
        for name in left:
            first, stop = exact.joined_digits([rank_ranges[name] for rank_ranges in ranges])
            first_digit[name] = first
            narrowed[name] = _widened(digits.pop(name), firsts[name], first, stop)
    return narrowed, first_digit, totals


def _owners_summed(parts: dict[str, exact.Sums], names: list[str],
                   comm: Comm) -> dict[str, np.ndarray]:
    """Collective: the sums of each part of ``names`` (pairs of shape ``(blocks, fields)``,
    the same shape on every rank) over every rank, rounded once: rank ``r`` owns the
    blocks ``blocks * r // size ..``, gets every rank's pairs and spills of them (an
    ``Alltoallv`` of 16 bytes a sum, and one of the spills), adds them exactly and rounds
    them; then every rank gets every owner's floats (an ``Alltoallv`` of 8 bytes a sum),
    each field's column whole (Fortran order, as a rank alone rounds them). Empty when a
    sum overflowed on some rank (the caller sums the parts as digits then, which hold any
    sum: they are left in ``parts``); else the parts are taken out of ``parts`` before
    the floats are sent (many tags: the pairs freed first)."""
    rounded: dict[str, np.ndarray] = {}
    owned: dict[str, tuple[int, np.ndarray]] = {}  # each part's fields and owners' bounds
    overflow = False
    for name in names:
        part = parts[name]
        assert isinstance(part, exact.Pairs)
        blocks, fields = part.shape
        bounds = np.array([blocks * rank // comm.size for rank in range(comm.size + 1)],
                          dtype=np.int64)
        owned[name] = fields, bounds
        table, counts, spills, spill_counts = part.sent(bounds)
        _, tables = comm.exchange_packed(table, counts)
        received_counts, received = comm.exchange_packed(spills, spill_counts)
        total, over = exact.Pairs.received(tables, received, received_counts, fields)
        del tables, received
        overflow |= over
        rounded[name] = total.to_floats(columns=True).T  # (fields, my blocks), C order
        del total, part
    if comm.any(overflow):
        return {}
    for name in names:
        del parts[name]
    totals: dict[str, np.ndarray] = {}
    for name, mine in rounded.items():
        fields, bounds = owned[name]
        _, every = comm.exchange_packed(np.tile(mine.reshape(-1), comm.size),
                                        np.full(comm.size, mine.size, dtype=np.int64))
        held = np.empty((fields, int(bounds[-1])), dtype=np.float64)
        at = 0
        for lo, hi in pairwise(bounds.tolist()):
            held[:, lo:hi] = every[at: at + fields * (hi - lo)].reshape(fields, hi - lo)
            at += fields * (hi - lo)
        del every
        totals[name] = held.T
    return totals


def _shifted(used: tuple[int, int], first: int) -> tuple[int, int]:
    """:func:`mpieval.kernels.exact.used_digits` of a window from digit ``first`` on, as
    digits of the whole accumulator."""
    return used if used[1] <= used[0] else (used[0] + first, used[1] + first)


def _widened(part: np.ndarray, first: int, start: int, stop: int) -> np.ndarray:
    """The digits ``start .. stop - 1`` of accumulators held from digit ``first`` on
    (``part``): a slice when the window holds them all, else a copy with 0 in the others."""
    lo, hi = start - first, stop - first
    if lo >= 0 and hi <= part.shape[-1]:
        return np.ascontiguousarray(part[..., lo:hi])
    out = np.zeros((*part.shape[:-1], stop - start), dtype=np.float64)
    src_lo, src_hi = max(lo, 0), min(hi, part.shape[-1])
    if src_hi > src_lo:
        out[..., src_lo - lo: src_hi - lo] = part[..., src_lo:src_hi]
    return out
