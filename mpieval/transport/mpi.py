"""The primitives of mpieval's collectives over an MPI communicator: the only module that
imports mpi4py (when a :class:`~mpieval.comm.Comm` is made over MPI, not before).

An MPI communicator given to mpieval is duplicated once, so that mpieval's messages never
mix with the trainer's; every transport on the same base communicator shares that
duplicate (cached on the base as an MPI attribute, freed when the base is freed; the
world's at exit), so creating a metric per pass costs no communicator.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

import numpy as np

from mpieval.transport.waiting import wait_until


def mpi() -> Any | None:
    """The ``mpi4py.MPI`` module, or None when MPI is absent or switched off
    (``MPIEVAL_NO_MPI=1``)."""
    if os.environ.get("MPIEVAL_NO_MPI") == "1":
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI


def lighter_start_on_one_node(environ: MutableMapping[str, str] | None = None) -> bool:
    """Before MPI is loaded (the command line's start): when MPICH's Hydra started every
    rank of the job on this node (``MPI_LOCALNRANKS`` equals ``PMI_SIZE``), tell UCX,
    which the ``mpich`` wheel's library loads as one of its network modules, not to install
    its memory hooks (``UCX_MEM_EVENTS=no``), unless the variable is set. The hooks serve
    UCX's cache of memory registered for network transfers, which ranks on one node never
    make (MPICH moves their messages through shared memory), and installing them is a
    good part of the library's load (docs/benchmarks.md, The command line). Returns
    whether it set the variable."""
    names = os.environ if environ is None else environ
    if "mpi4py.MPI" in sys.modules or "UCX_MEM_EVENTS" in names:
        return False
    size, local = names.get("PMI_SIZE"), names.get("MPI_LOCALNRANKS")
    if size is None or size != local:
        return False
    names["UCX_MEM_EVENTS"] = "no"
    return True


class MpiTransport:
    """The primitives over an mpi4py communicator (upper-case buffer calls for arrays)."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    @classmethod
    def of(cls, base: Any | None) -> MpiTransport:
        """The transport over the shared duplicate of ``base`` (None: the world)."""
        module = mpi()
        assert module is not None
        return cls(_duplicate_of(module.COMM_WORLD if base is None else base))

    def arrive(self) -> None:
        _arrive(self.comm)

    def barrier(self) -> None:
        _arrive(self.comm)

    def reduce(self, local: np.ndarray, op: str, *, in_place: bool = False) -> np.ndarray:
        module = mpi()
        assert module is not None  # a communicator exists, so MPI was loaded
        reduction = module.SUM if op == "sum" else module.MAX
        if in_place:  # no fresh result buffer: a large sum's pages are not touched anew
            self.comm.Allreduce(module.IN_PLACE, local, op=reduction)
            return local
        total = np.empty_like(local)
        self.comm.Allreduce(local, total, op=reduction)
        return total

    def start_sum(self, local: np.ndarray) -> tuple[np.ndarray, Callable[[], bool]]:
        module = mpi()
        assert module is not None
        total = np.empty_like(local)
        request = self.comm.Iallreduce(local, total, op=module.SUM)
        return total, request.Test

    def alltoall(self, counts: np.ndarray) -> np.ndarray:
        received = np.empty_like(counts)
        self.comm.Alltoall(counts, received)
        return received

    def alltoallv(self, outgoing: np.ndarray, send_counts: np.ndarray,
                  recv_counts: np.ndarray) -> np.ndarray:
        module = mpi()
        assert module is not None
        incoming = np.empty(int(recv_counts.sum()), dtype=outgoing.dtype)
        send_displ = np.concatenate(([0], np.cumsum(send_counts)[:-1]))
        recv_displ = np.concatenate(([0], np.cumsum(recv_counts)[:-1]))
        record = None
        if outgoing.dtype.kind == "V":  # records of itemsize bytes: a type of their own
            record = module.BYTE.Create_contiguous(outgoing.dtype.itemsize).Commit()
        typed = [module.BYTE] if outgoing.dtype.kind == "b" else [record] if record else []
        try:
            self.comm.Alltoallv([outgoing, (send_counts, send_displ), *typed],
                                [incoming, (recv_counts, recv_displ), *typed])
        finally:
            if record is not None:
                record.Free()
        return incoming

    def allgather(self, obj: Any) -> list[Any]:
        gathered: list[Any] = self.comm.allgather(obj)
        return gathered


# The duplicate of each base communicator, kept on the base as an MPI attribute: MPI frees
# it (the delete callback) when the base is freed. Created with the first duplicate.
_duplicate_key: int | None = None
_live_duplicates: list[Any] = []


def _duplicate_of(base: Any) -> Any:
    """The one duplicate of ``base`` that every transport on it shares (collective the
    first time: ``Dup``)."""
    global _duplicate_key
    module = mpi()
    assert module is not None
    if _duplicate_key is None:
        _duplicate_key = module.Comm.Create_keyval(delete_fn=_free_duplicate)
        atexit.register(_free_every_duplicate)  # runs before mpi4py's finalize (LIFO)
    duplicate = base.Get_attr(_duplicate_key)
    if duplicate is None:
        _arrive(base)
        duplicate = base.Dup()
        base.Set_attr(_duplicate_key, duplicate)
        _live_duplicates.append(duplicate)
    return duplicate


def _free_duplicate(base: Any, key: int, duplicate: Any) -> None:
    """MPI's delete callback: the base is being freed, so is its duplicate."""
    if duplicate in _live_duplicates:
        _live_duplicates.remove(duplicate)
    duplicate.Free()


def _free_every_duplicate() -> None:
    module = sys.modules.get("mpi4py.MPI")
    if module is None or module.Is_finalized():
        return
    for duplicate in list(_live_duplicates):
        if duplicate != module.COMM_NULL:
            duplicate.Free()
    _live_duplicates.clear()


def live_duplicates() -> int:
    """How many duplicated communicators mpieval holds (one per base communicator used)."""
    return len(_live_duplicates)


def _arrive(comm: Any) -> None:
    """Return once every rank of ``comm`` has arrived here, sleeping while waiting
    (:mod:`mpieval.transport.waiting`): every collective of this transport first meets
    the others here, so the blocking call that follows finds everyone present and hardly
    waits. (Polling the collective itself, ``Ialltoallv`` and the like, with sleeps would
    not do: MPICH advances a non-blocking collective only inside ``Test``, so a large one
    would stall between polls; ``scripts/bench_waiting.py`` measures both.)"""
    wait_until(comm.Ibarrier().Test)
