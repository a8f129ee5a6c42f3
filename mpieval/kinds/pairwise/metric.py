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
from mpieval.kinds.pairwise import KIND
from mpieval.metric import FieldsResult, Metric
from mpieval.state import Part, State, Summed
from mpieval.validation import as_vector, check_binary, check_lengths


def pairwise_cell(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Each row's cell ``2 left + right`` (uint8, 0 to 3) of validated 0/1 labels."""
    cell: np.ndarray = (left != 0).view(np.uint8) << 1
    cell |= (right != 0).view(np.uint8)
    return cell


def pairwise_cells(cell: np.ndarray) -> np.ndarray:
    """Counts of rows by cell (:func:`pairwise_cell`) as float64 cells of shape (2, 2):
    ``cells[l, r]`` is the number of rows with left label ``l`` and right label ``r``."""
    return np.bincount(cell, minlength=4).astype(np.float64).reshape(2, 2)


@dataclass(frozen=True)
class PairwiseResult(FieldsResult):
    """Result of the ``pairwise`` kind: ``ins`` rows split by their (left, right) labels;
    ``window``: the same counts over the recent window (``window=``), or None."""

    kind = KIND.name

    ins: int
    same_label_click: int
    left_label_click: int
    right_label_click: int
    same_label_unclick: int
    window: PairwiseResult | None = None

    @classmethod
    def from_cells(cls, cells: np.ndarray) -> PairwiseResult:
        """The result from the (2, 2) cells ``[left, right]``."""
        return cls(
            ins=int(cells.sum()),
            same_label_click=int(cells[1, 1]),
            left_label_click=int(cells[1, 0]),
            right_label_click=int(cells[0, 1]),
            same_label_unclick=int(cells[0, 0]),
        )

    def to_log_line(self, name: str) -> str:
        return (
            f"{name}: Ins={self.ins:d} Same_label_click={self.same_label_click:d} "
            f"Left_label_click={self.left_label_click:d} "
            f"Right_label_click={self.right_label_click:d} "
            f"Same_label_unclick={self.same_label_unclick:d}"
        )


class PairwiseMetric(Metric):
    """Counts of pair instances by their (left, right) 0/1 labels.

    ``update(left_label, right_label)`` takes two 1-D arrays of equal length, every
    value 0 or 1 (bool, int or float); anything else is an :class:`InputError`.
    State: ``cells`` (2, 2), rows by ``[left, right]`` label, merged by addition.

    With ``window=N`` (:data:`~mpieval.declaration.WINDOW`), the metric also keeps each of
    the last ``N`` rows of this rank as its cell (1 byte a row), and ``compute()`` adds
    ``window``, the counts over those rows of every rank.

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    window : int, optional
        Rows of this rank's recent window (counts over them in ``result.window``).

    Raises
    ------
    InputError
        A bad ``window`` (``update()``: a label other than 0/1, raised again by
        ``compute()`` on every rank).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import PairwiseMetric
    >>> metric = PairwiseMetric()
    >>> metric.update(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0]))
    >>> print(metric.compute().to_log_line("pairs"))
    pairs: Ins=4 Same_label_click=1 Left_label_click=1 Right_label_click=1 Same_label_unclick=1
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    window: int | None

    def __init__(self, comm: Comm | Any | None = None, *, window: int | None = None) -> None:
        super().__init__(comm, window=window)

    def state_layout(self) -> dict[str, Part]:
        return {"cells": Summed((2, 2))}

    def update(self, left_label: Any, right_label: Any) -> None:
        """Add a batch of pair instances (local: no communication)."""
        with self._validating():
            left = as_vector("left_label", left_label)
            right = as_vector("right_label", right_label)
            check_lengths(left_label=left, right_label=right)
            check_binary("left_label", left)
            check_binary("right_label", right)
        self._add(cell=pairwise_cell(left, right))

    def _accumulate(self, state: State, cell: np.ndarray) -> None:
        """Count rows, given as their cells, into ``state``."""
        state.summed("cells")[...] += pairwise_cells(cell)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        return {"cells": self.state.summed("cells")}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> PairwiseResult:
        return PairwiseResult.from_cells(sums["cells"])
