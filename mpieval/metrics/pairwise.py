"""The ``pairwise`` kind: label-combination counts of pair instances.

Every row is one pair instance with a left and a right 0/1 label::

    left = 1, right = 1  ->  same_label_click
    left = 1, right = 0  ->  left_label_click
    left = 0, right = 1  ->  right_label_click
    left = 0, right = 0  ->  same_label_unclick

and ``ins`` is the number of rows (the four counts add up to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import InputError
from mpieval.metric import Metric
from mpieval.validation import as_vector, check_binary, check_lengths

# Layout of the summable state: the four cells indexed by 2 * left + right, then ins.
_UNCLICK, _RIGHT, _LEFT, _CLICK, _INS = range(5)
N_CELLS = 5


def pairwise_counts(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The state of a batch of validated 0/1 labels: float64 ``[same_label_unclick,
    right_label_click, left_label_click, same_label_click, ins]`` (cell ``2 l + r``)."""
    cell = 2 * (left != 0).astype(np.intp) + (right != 0).astype(np.intp)
    counts = np.bincount(cell, minlength=4).astype(np.float64)
    return np.append(counts, float(len(cell)))


@dataclass(frozen=True)
class PairwiseState:
    """Summable counts (float64: exact up to 2**53 rows); merges by addition."""

    buffer: np.ndarray

    @classmethod
    def empty(cls) -> PairwiseState:
        return cls(np.zeros(N_CELLS, dtype=np.float64))

    def merge(self, other: PairwiseState) -> PairwiseState:
        """A new state holding both; neither input changes."""
        return PairwiseState(self.buffer + other.buffer)


@dataclass(frozen=True)
class PairwiseResult:
    """Result of the ``pairwise`` kind: ``ins`` rows split by their (left, right) labels."""

    ins: int
    same_label_click: int
    left_label_click: int
    right_label_click: int
    same_label_unclick: int

    @classmethod
    def from_state(cls, state: PairwiseState) -> PairwiseResult:
        b = state.buffer
        return cls(
            ins=int(b[_INS]),
            same_label_click=int(b[_CLICK]),
            left_label_click=int(b[_LEFT]),
            right_label_click=int(b[_RIGHT]),
            same_label_unclick=int(b[_UNCLICK]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "pairwise",
            "ins": self.ins,
            "same_label_click": self.same_label_click,
            "left_label_click": self.left_label_click,
            "right_label_click": self.right_label_click,
            "same_label_unclick": self.same_label_unclick,
        }

    def to_log_line(self, name: str) -> str:
        return (
            f"{name}: Ins={self.ins:d} Same_label_click={self.same_label_click:d} "
            f"Left_label_click={self.left_label_click:d} "
            f"Right_label_click={self.right_label_click:d} "
            f"Same_label_unclick={self.same_label_unclick:d}"
        )


class PairwiseMetric(Metric):
    """Counts of pair instances by their (left, right) 0/1 labels; state: 5 numbers.

    ``update(left_label, right_label)`` takes two 1-D arrays of equal length, every
    value 0 or 1 (bool, int or float); anything else is an :class:`InputError`.
    """

    kind = "pairwise"

    def __init__(self, comm: Comm | Any | None = None) -> None:
        super().__init__(comm)
        self.state = PairwiseState.empty()

    def update(self, left_label: Any, right_label: Any) -> None:
        """Add a batch of pair instances (local: no communication)."""
        try:
            left = as_vector("left_label", left_label)
            right = as_vector("right_label", right_label)
            check_lengths(left_label=left, right_label=right)
            check_binary("left_label", left, hint="")
            check_binary("right_label", right, hint="")
        except InputError as error:
            raise self._record(error) from None
        self.state = self.state.merge(PairwiseState(pairwise_counts(left, right)))

    def reset(self) -> None:
        self.state = PairwiseState.empty()
        self._error = None

    def local_part(self, comm: Comm) -> np.ndarray:
        return self.state.buffer

    def finish(self, total: np.ndarray, comm: Comm) -> PairwiseResult:
        return PairwiseResult.from_state(PairwiseState(np.array(total, dtype=np.float64)))
