"""Every error and warning mpieval raises, in one place.

- :class:`InputError` (exit 2): bad data or usage, naming the field; :class:`DataError`
  locates it in a file; :class:`KindUnavailable` is a kind missing from this build.
- :class:`OutputError` (exit 1): an output could not be written (a full disk, an I/O
  error), although its path was checked before reading.
- :class:`StoreError` (exit 1): a store (S3, HDFS, GCS) failed in a way that is not the
  input's fault (connection, throttling, server error) and kept failing after the retries.
- :class:`RemoteError` and :class:`UidCollisionError` (exit 1): an error raised on another
  rank, and two uids that share a 64-bit key; :class:`LayoutMismatchError` (exit 1): ranks
  about to compute different metrics (names, kinds, options or state shapes differ).
- :class:`UndefinedMetricWarning`: a value is undefined (NaN) for the data seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptionHint:
    """The option whose setting would accept what an :class:`InputError` refused, named
    at the end of its problem: `` (pass soft_labels=True for labels in [0, 1])``. The
    command line spells the setting as its flag (``--soft-labels``) from the option's
    declaration."""

    option: str
    value: Any
    purpose: str

    def text(self, setting: str | None = None) -> str:
        """`` (pass SETTING PURPOSE)``; the setting by default as in Python
        (``soft_labels=True``)."""
        return f" (pass {setting or f'{self.option}={self.value!r}'} {self.purpose})"


class InputError(ValueError):
    """Bad input data or usage.

    Carries the field (column) name, how many values are bad and the first bad
    index, so that the command line can turn it into ``file:line: column ...``, and the
    option that would accept the values (``hint``, ending ``problem``), so that it can
    name the option's flag. ``rank``: the rank that raised it, when it was raised on another
    rank and is raised here too (:class:`mpieval.comm.Comm`'s agreement), else None.
    """

    rank: int | None = None

    def __init__(
        self,
        field: str,
        problem: str,
        *,
        count: int | None = None,
        first_index: int | None = None,
        value: object = None,
        hint: OptionHint | None = None,
    ) -> None:
        self.field = field
        self._bare_problem = problem
        self.problem = problem if hint is None else problem + hint.text()
        self.count = count
        self.first_index = first_index
        self.value = value
        self.hint = hint
        super().__init__(self._message())

    def problem_setting(self, setting: str) -> str:
        """The problem with the hint's option set as ``setting`` (the command line's
        ``--soft-labels``) instead of as in Python."""
        return self.problem if self.hint is None else self._bare_problem + self.hint.text(setting)

    def _message(self) -> str:
        text = f"{self.field}: {self.problem}"
        if self.count is not None:
            text += f" ({self.count} bad value{'s' if self.count != 1 else ''}"
            if self.first_index is not None:
                text += f", first at index {self.first_index}"
                if self.value is not None:
                    text += f": {self.value!r}"
            text += ")"
        return text

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # the fields, pickled across ranks
        return _rebuild_input_error, (
            type(self), self.field, self._bare_problem, self.count, self.first_index,
            self.value, self.hint,
        )


def _rebuild_input_error(cls: type[InputError], field: str, problem: str, count: int | None,
                         first_index: int | None, value: Any, hint: Any) -> InputError:
    return cls(field, problem, count=count, first_index=first_index, value=value, hint=hint)


class DataError(InputError):
    """Bad input data or a bad file, located: ``WHERE: column COL: PROBLEM``.

    ``where`` is ``path:line`` for text, ``path: row N`` for Parquet, or the path.
    """

    def __init__(self, where: str, problem: str, column: str | None = None) -> None:
        self.where = where
        self.column = column
        super().__init__(where if column is None else f"{where}: column {column}", problem)

    def __reduce__(self) -> tuple[Any, ...]:
        return DataError, (self.where, self.problem, self.column)


class KindUnavailable(InputError):
    """A known kind whose module is not in this build."""


class OutputError(RuntimeError):
    """An output (stdout, ``--json``, ``--report``, ``--save-state``) could not be written
    for a reason that is not the user's input (a full disk, an I/O error); the message
    names the output. Exit 1: the same command succeeds once the fault is gone."""


class RemoteError(RuntimeError):
    """An error raised on another rank, raised here too so that no rank goes on alone."""


class StoreError(RuntimeError):
    """A transient fault of a store (connection, throttling, server error) that outlived
    the retries; the message names the (redacted) location."""


class LayoutMismatchError(RuntimeError):
    """Ranks were about to merge different metrics (raised on every rank, naming them)."""


class UidCollisionError(RuntimeError):
    """Two different uids hashed to the same 64-bit key (about n**2 / 2**65 likely)."""


class StateFormatError(ValueError):
    """A saved state (a checkpoint, a ``--save-state`` run) of a layout this version
    cannot read: written by a newer mpieval, or missing a part; the message names the
    formats."""


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined for the data seen (one class only, no rows, ...): it is NaN.

    Warned by rank 0 from the caller's ``compute()``, at every compute that has one, and
    shown as one line, ``mpieval: warning: NAME: why`` (docs: In a trainer)."""
