"""Mergeable state: what one rank accumulates, in one contiguous float64 buffer.

A state merges with another by adding buffers, so ranks merge with one ``Allreduce``
and shards merge in any order. Counts are stored as float64, which holds integers
exactly up to 2**53 (9e15 rows); nothing is float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpieval.kernels import auc as auc_kernels


@dataclass(frozen=True)
class AucState:
    """Histogram table and sums of the ``auc`` kind.

    Layout of ``buffer`` (length ``2 T + 4``): ``T`` negative buckets, ``T`` positive
    buckets, then abserr, sqrerr, pred sum and the row count. 16 MB at T = 1,000,000,
    whatever the number of rows.
    """

    buffer: np.ndarray

    @classmethod
    def empty(cls, table_size: int) -> AucState:
        return cls(np.zeros(2 * table_size + auc_kernels.N_SUMS, dtype=np.float64))

    @property
    def table_size(self) -> int:
        return (len(self.buffer) - auc_kernels.N_SUMS) // 2

    @property
    def table(self) -> np.ndarray:
        """View of shape (2, T): row 0 negatives, row 1 positives."""
        t = self.table_size
        return self.buffer[: 2 * t].reshape(2, t)

    @property
    def sums(self) -> np.ndarray:
        return self.buffer[2 * self.table_size :]

    def merge(self, other: AucState) -> AucState:
        """A new state holding both; neither input changes."""
        if len(other.buffer) != len(self.buffer):
            raise ValueError("cannot merge auc states of different table sizes")
        return AucState(self.buffer + other.buffer)
