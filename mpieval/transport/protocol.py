"""What every transport gives :class:`mpieval.comm.Comm`: a few collective primitives, on
which every collective of mpieval is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class Transport(Protocol):
    """The primitives a communication library gives :class:`~mpieval.comm.Comm` (every
    one collective)."""

    rank: int
    size: int

    def arrive(self) -> None:
        """Before each collective: wait for every rank without spinning, where the
        library's own wait would spin (or nothing)."""

    def barrier(self) -> None:
        """Return once every rank has arrived."""

    def reduce(self, local: np.ndarray, op: str, *, in_place: bool = False) -> np.ndarray:
        """The element-wise ``op`` (``sum`` or ``max``) over ranks, as a new array; with
        ``in_place``, written over ``local`` (contiguous, the caller's to give up), which
        is returned."""

    def start_sum(self, local: np.ndarray) -> tuple[np.ndarray, Callable[[], bool]]:
        """Start the element-wise sum over ranks without waiting: the array it will be
        written to, and a poll that returns True once it is complete."""

    def alltoall(self, counts: np.ndarray) -> np.ndarray:
        """``counts[j]`` (int64) sent to rank ``j``; returns what each rank sent here."""

    def alltoallv(self, outgoing: np.ndarray, send_counts: np.ndarray,
                  recv_counts: np.ndarray) -> np.ndarray:
        """Rows ``outgoing`` grouped by destination (``send_counts`` per rank) sent; the
        rows received (``recv_counts`` per source rank, in rank order) returned. A row is
        one value of any numpy dtype, a void one (``V<n>``: records of n bytes) too."""

    def allgather(self, obj: Any) -> list[Any]:
        """Every rank's small (pickled) object, in rank order."""
