"""What every metric kind shares: its declaration, error handling, the compute protocol,
and the :class:`Evaluator` that computes several named metrics with one ``Allreduce``.

A kind is declared once, on its class: the :class:`Input` s that ``update()`` takes (each
read from one column by the command line), its :class:`Option` s with their defaults and
checks, and its state's parts (:mod:`mpieval.state`), which the base class creates,
resets and merges. The kind registry (:mod:`mpieval.kinds`), the config reader and the
command line read these declarations; nothing restates them.

A metric's compute has two steps: :meth:`Metric.local_sums` returns this rank's named
summable parts (it may run collectives first, e.g. moving a user's rows to the rank that
owns the user), and :meth:`Metric.finish` turns the parts summed over ranks into a frozen
result. :func:`compute_all` packs the parts of many metrics into one buffer and sums it
with one ``Allreduce``. Results appear on every rank, identical; warnings about undefined
values only on rank 0.
"""

from __future__ import annotations

import copy
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.state import Part, State, pack, unpack


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...
    def to_log_line(self, name: str) -> str: ...


class FieldsResult:
    """A frozen result dataclass whose JSON object is its kind and its fields in order
    (NaN as ``null``)."""

    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **logline.json_fields(self)}


@dataclass(frozen=True)
class Input:
    """An argument of a kind's ``update()``, read from one column by the command line.

    ``role``: ``number`` (a numeric array), ``id`` (ids such as a uid: integers or strings,
    hashed to keys) or ``name`` (a group name shown in the results, such as a tag).
    A required input reads the column of its own name unless told otherwise; an optional
    one is left out unless a column is named. ``weight``: a sample weight (integer weights
    equal repeated rows).
    """

    name: str
    role: Literal["number", "id", "name"] = "number"
    optional: bool = False
    weight: bool = False

    @property
    def default_column(self) -> str | None:
        return None if self.optional else self.name


@dataclass(frozen=True)
class Option:
    """A constructor keyword of a kind: its default, and the check that returns the
    value to use or raises :class:`InputError` naming the option."""

    name: str
    default: Any
    check: Callable[[str, Any], Any]
    choices: tuple[Any, ...] = ()  # the values allowed, when they are few


class Metric(ABC):
    """Base of the metric kinds: a declaration, local updates, a collective compute.

    A kind sets ``kind``, ``inputs`` and ``options``, implements :meth:`state_layout`,
    ``update``, :meth:`local_sums` and :meth:`finish`; its constructor passes its options
    to ``Metric.__init__``, which checks them (the declared checks), sets them as
    attributes and creates the empty state.
    """

    kind: ClassVar[str]
    inputs: ClassVar[tuple[Input, ...]]
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, comm: Comm | Any | None = None, **options: Any) -> None:
        self._comm_given = comm
        self._comm: Comm | None = None
        for name, value in self.check_options(options).items():
            setattr(self, name, value)
        self.reset()

    # -- the declaration -------------------------------------------------------------

    @classmethod
    def check_options(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every option of the kind, given or default, checked."""
        known = {option.name: option for option in cls.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise InputError(unknown[0], f"is not an option of kind {cls.kind}")
        return {name: option.check(name, given.get(name, option.default))
                for name, option in known.items()}

    @classmethod
    def option(cls, name: str) -> Option:
        """The declared option ``name``."""
        return next(option for option in cls.options if option.name == name)

    @abstractmethod
    def state_layout(self) -> dict[str, Part]:
        """The parts of the state (names, shapes, how each merges), from the options."""

    # -- state -----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every row and any recorded error (for the next pass)."""
        self._error: InputError | None = None
        self.state = State(self.state_layout())

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both (e.g. two shards of one rank); neither
        changes. Both must be of one kind with the same options."""
        if type(other) is not type(self) or self._options() != other._options():
            raise ValueError(f"cannot merge {self._describe()} with {other._describe()}")
        merged = copy.copy(self)
        merged.state = self.state.merge(other.state)
        merged._error = self._error or other._error
        return merged

    def _options(self) -> dict[str, Any]:
        return {option.name: getattr(self, option.name) for option in self.options}

    def _describe(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self._options().items())
        return f"{type(self).__name__}({options})"

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

    @property
    def comm(self) -> Comm:
        """The communicator (resolved on first use: the world, or one rank without MPI)."""
        if self._comm is None:
            self._comm = Comm.resolve(self._comm_given)
        return self._comm

    @classmethod
    def warm_up(cls) -> None:
        """Load the kind's compiled kernels now rather than at their first call (numba
        reads them from its disk cache). Optional: the command line calls it on a
        background thread while it reads."""
        return  # a kind without compiled kernels has nothing to load

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

    def compute(self) -> Result:
        """Collective: the result over every rank's rows (on every rank)."""
        return compute_all({self.kind: self}, self.comm)[self.kind]


def compute_all(metrics: Mapping[str, Metric], comm: Comm) -> dict[str, Result]:
    """Collective: compute several metrics with one error agreement and one ``sum`` of
    their packed parts."""
    comm.agree(next((m.error for m in metrics.values() if m.error is not None), None))
    parts = [m.local_sums(comm) for m in metrics.values()]
    total = comm.sum(np.concatenate([pack(p) for p in parts]) if parts else np.zeros(0))
    results: dict[str, Result] = {}
    offset = 0
    for (name, metric), part in zip(metrics.items(), parts, strict=True):
        shapes = {key: np.shape(value) for key, value in part.items()}
        size = sum(int(np.prod(shape)) for shape in shapes.values())
        with _warnings_named(name, metric.kind):
            results[name] = metric.finish(unpack(total[offset : offset + size], shapes), comm)
        offset += size
    return results


@contextmanager
def _warnings_named(name: str, kind: str) -> Iterator[None]:
    """Warnings of one metric's finish, shown under the metric's name (``item_sim: no
    rows``, not ``auc: no rows``) and every time, not once per message: an undefined
    value in a later pass or in a second metric of the same kind is still reported."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        text = str(warning.message)
        if issubclass(warning.category, UndefinedMetricWarning) and text.startswith(kind + ":"):
            text = name + text[len(kind) :]
        warnings.warn_explicit(text, warning.category, warning.filename, warning.lineno)


def warn_undefined(comm: Comm, message: str) -> None:
    """One warning for the whole job (rank 0) that a value is undefined (NaN)."""
    if comm.rank == 0:
        warnings.warn(message, UndefinedMetricWarning, stacklevel=3)


class Evaluator(Mapping[str, Metric]):
    """Several named metrics computed together on one communicator.

    >>> ev = Evaluator({"item_sim": AucMetric(), "t7_join": WuaucMetric()})
    >>> ev["item_sim"].update(pred, label)
    >>> for line in ev.log_lines(ev.compute()): print(line)
    """

    def __init__(self, metrics: Mapping[str, Metric], comm: Comm | Any | None = None) -> None:
        self.comm = Comm.resolve(comm)
        self._metrics = dict(metrics)

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
        """The JSON object of ``results`` (INTERFACE.md names)."""
        return {name: r.to_dict() for name, r in results.items()}
