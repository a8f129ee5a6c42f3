"""What every metric kind shares: error handling, the compute protocol, and the
:class:`Evaluator` that computes several named metrics with one ``Allreduce``.

A metric's compute has two steps: :meth:`Metric.local_part` returns this rank's
summable float64 buffer (it may run collectives first, e.g. moving a user's rows to
the rank that owns the user), and :meth:`Metric.finish` turns the summed buffer into a
frozen result. :func:`compute_all` runs the steps for many metrics with one ``sum``.
Results appear on every rank, identical; warnings about undefined values only on rank 0.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, Protocol

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...
    def to_log_line(self, name: str) -> str: ...


class Metric(ABC):
    """Base of the metric kinds: local updates, a collective compute."""

    kind: ClassVar[str]

    def __init__(self, comm: Comm | Any | None = None) -> None:
        self._comm_given = comm
        self._comm: Comm | None = None
        self._error: InputError | None = None

    @property
    def comm(self) -> Comm:
        """The communicator (resolved on first use: the world, or one rank without MPI)."""
        if self._comm is None:
            self._comm = Comm.resolve(self._comm_given)
        return self._comm

    def _record(self, error: InputError) -> InputError:
        """Remember a bad update so that the next collective compute fails on every rank."""
        if self._error is None:
            self._error = error
        return error

    @property
    def error(self) -> InputError | None:
        """The first bad-input error since the last reset, if any."""
        return self._error

    @classmethod
    def warm_up(cls) -> None:
        """Load the kind's compiled kernels now rather than at their first call (numba
        reads them from its disk cache: 0.3 to 0.5 s in a fresh process). Optional: the
        command line calls it on a background thread while it reads."""
        return  # a kind without compiled kernels has nothing to load

    @abstractmethod
    def reset(self) -> None:
        """Forget every row (for the next pass)."""

    @abstractmethod
    def local_part(self, comm: Comm) -> np.ndarray:
        """This rank's summable buffer (collective: every rank calls it in step)."""

    @abstractmethod
    def finish(self, total: np.ndarray, comm: Comm) -> Result:
        """The result from the buffer summed over ranks."""

    def compute(self) -> Result:
        """Collective: the result over every rank's rows (on every rank)."""
        return compute_all({self.kind: self}, self.comm)[self.kind]


def compute_all(metrics: Mapping[str, Metric], comm: Comm) -> dict[str, Result]:
    """Collective: compute several metrics with one error agreement and one ``sum``."""
    comm.agree(next((m.error for m in metrics.values() if m.error is not None), None))
    parts = [np.asarray(m.local_part(comm), dtype=np.float64) for m in metrics.values()]
    total = comm.sum(np.concatenate(parts) if parts else np.zeros(0))
    results: dict[str, Result] = {}
    offset = 0
    for (name, metric), part in zip(metrics.items(), parts, strict=True):
        with _warnings_named(name, metric.kind):
            results[name] = metric.finish(total[offset : offset + len(part)], comm)
        offset += len(part)
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
