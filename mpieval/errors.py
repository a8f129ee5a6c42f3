"""The errors and warnings mpieval raises."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input data or usage.

    Carries the field (column) name, how many values are bad and the first bad
    index, so that the command line can turn it into ``file:line: column ...``.
    """

    def __init__(
        self,
        field: str,
        problem: str,
        *,
        count: int | None = None,
        first_index: int | None = None,
        value: object = None,
    ) -> None:
        self.field = field
        self.problem = problem
        self.count = count
        self.first_index = first_index
        self.value = value
        super().__init__(self._message())

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

    def __reduce__(self):  # keep the structured fields when pickled across ranks
        return _rebuild_input_error, (
            type(self), self.field, self.problem, self.count, self.first_index, self.value
        )


def _rebuild_input_error(cls, field, problem, count, first_index, value):
    return cls(field, problem, count=count, first_index=first_index, value=value)


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined for the data seen (one class only, no rows, ...): it is NaN."""
