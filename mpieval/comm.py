"""Every collective mpieval makes, and the only module that imports mpi4py.

:class:`Comm` wraps a communicator: it duplicates the one it is given (a trainer's
sub-communicator works and mpieval's messages never mix with the trainer's), or runs
as a single rank when mpi4py is absent or ``MPIEVAL_NO_MPI=1`` is set. The collectives:

- :meth:`Comm.agree` — small ``Allreduce`` of an error flag (+ ``allgather`` of the
  messages when one is set): every rank raises the same error or none does
  (:meth:`Comm.agreed` runs a step and agrees on its errors: the one way to go on together);
- :meth:`Comm.sum` — one ``Allreduce`` of a float64 buffer: how states merge;
- :meth:`Comm.exchange` — ``Alltoall`` of counts, then ``Alltoallv`` per typed column:
  how per-user rows reach the rank that owns their user;
- :meth:`Comm.allgather` — pickled, for small objects only (tag names, error texts);
- :meth:`Comm.any` — small ``Allreduce`` of a flag (readers stop together).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from mpieval.errors import InputError, RemoteError

T = TypeVar("T")


def _mpi() -> Any | None:
    """The ``mpi4py.MPI`` module, or None when MPI is absent or switched off."""
    if os.environ.get("MPIEVAL_NO_MPI") == "1":
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI


# Set in a process that an MPI launcher started (mpiexec/mpirun of MPICH, Intel MPI,
# MVAPICH or Open MPI; srun; Cray's aprun and PALS). Prefixes of variable names.
_LAUNCHER_VARIABLES = (
    "PMI_", "PMIX_", "OMPI_", "MV2_", "HYDI_", "MPI_LOCALNRANKS", "SLURM_PROCID",
    "ALPS_APP_PE", "PALS_",
)


def launched_by_mpi(environ: Mapping[str, str] | None = None) -> bool:
    """Whether an MPI launcher seems to have started this process (from its environment)."""
    names = os.environ if environ is None else environ
    return any(name.startswith(_LAUNCHER_VARIABLES) for name in names)


class Comm:
    """A communicator for mpieval's collectives (or one rank without MPI)."""

    def __init__(self, mpi_comm: Any | None = None, *, duplicate: bool = True) -> None:
        mpi = _mpi()
        if mpi is None:
            if mpi_comm is not None:
                raise RuntimeError("a communicator was given but mpi4py is unavailable")
            self._comm = None
            self._owned = False
            self.rank, self.size = 0, 1
            return
        base = mpi.COMM_WORLD if mpi_comm is None else mpi_comm
        _arrive(base)
        self._comm = base.Dup() if duplicate else base
        self._owned = duplicate
        self.rank, self.size = self._comm.Get_rank(), self._comm.Get_size()

    @classmethod
    def local(cls) -> Comm:
        """One rank on its own, without MPI (a reference, or metrics kept per process)."""
        comm = cls.__new__(cls)
        comm._comm, comm._owned, comm.rank, comm.size = None, False, 0, 1
        return comm

    @classmethod
    def world_or_alone(cls) -> Comm:
        """The world when an MPI launcher started this process, else :meth:`local`
        without loading MPI at all (it saves the command line part of its start-up)."""
        return cls() if launched_by_mpi() else cls.local()

    @classmethod
    def resolve(cls, comm: Comm | Any | None) -> Comm:
        """A :class:`Comm` from a Comm, an mpi4py communicator, or None (the world)."""
        return comm if isinstance(comm, Comm) else cls(comm)

    def close(self) -> None:
        """Free the duplicated communicator (collective)."""
        if self._comm is not None and self._owned:
            self._comm.Free()
        self._comm = None

    # -- collectives -------------------------------------------------------------

    def agree(self, error: BaseException | None) -> None:
        """Collective: raise the lowest-ranked error on every rank, or return on all.

        The rank that owns the error re-raises its own exception object; the others
        raise a copy (an :class:`InputError` with the same fields, or a
        :class:`RemoteError` naming the rank).
        """
        if self._comm is None:
            if error is not None:
                raise error
            return
        flag = np.array([0 if error is None else 1], dtype=np.int64)
        total = np.empty_like(flag)
        _arrive(self._comm)
        self._comm.Allreduce(flag, total)
        if total[0] == 0:
            return
        summaries = self._comm.allgather(None if error is None else _summarize(error))
        origin = next(r for r, s in enumerate(summaries) if s is not None)
        if origin == self.rank:
            assert error is not None
            raise error
        raise _rebuild(summaries[origin], origin)

    def agreed(
        self,
        step: Callable[[], T],
        catch: type[BaseException] | tuple[type[BaseException], ...] = InputError,
    ) -> T:
        """Collective: run ``step`` on this rank, then agree (:meth:`agree`) on the errors
        of the ``catch`` types it raised: every rank returns its own value, or every rank
        raises the lowest-ranked error. Other exceptions propagate at once (unexpected:
        the command line ends the job)."""
        error: BaseException | None = None
        value: T | None = None
        try:
            value = step()
        except catch as caught:
            error = caught
        self.agree(error)
        return value  # type: ignore[return-value]  # set: no error was agreed on

    def any(self, flag: bool) -> bool:
        """Collective: whether any rank passed True."""
        if self._comm is None:
            return flag
        local = np.array([int(flag)], dtype=np.int64)
        total = np.empty_like(local)
        _arrive(self._comm)
        self._comm.Allreduce(local, total)
        return bool(total[0])

    def sum(self, buffer: np.ndarray) -> np.ndarray:
        """Collective: the element-wise sum over ranks, as a new array (input unchanged)."""
        local = np.ascontiguousarray(buffer)
        if self._comm is None:
            return local.copy()
        total = np.empty_like(local)
        _arrive(self._comm)
        self._comm.Allreduce(local, total)
        return total

    def exchange(
        self, dest: np.ndarray, columns: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Collective: send row ``i`` of every column to rank ``dest[i]``.

        Returns the rows this rank received, grouped by source rank in rank order and,
        within a source, in their original order.
        """
        if self._comm is None:
            return {name: np.ascontiguousarray(col) for name, col in columns.items()}
        mpi = _mpi()
        assert mpi is not None  # a communicator exists, so MPI was loaded
        order = np.argsort(dest, kind="stable")
        send_counts = np.bincount(dest, minlength=self.size).astype(np.int64)
        recv_counts = np.empty_like(send_counts)
        _arrive(self._comm)
        self._comm.Alltoall(send_counts, recv_counts)
        send_displ = np.concatenate(([0], np.cumsum(send_counts)[:-1]))
        recv_displ = np.concatenate(([0], np.cumsum(recv_counts)[:-1]))
        received = {}
        for name, column in columns.items():
            outgoing = np.ascontiguousarray(column[order])
            incoming = np.empty(int(recv_counts.sum()), dtype=outgoing.dtype)
            datatype = mpi.BYTE if outgoing.dtype.kind == "b" else None
            if datatype is None:
                send = [outgoing, (send_counts, send_displ)]
                recv = [incoming, (recv_counts, recv_displ)]
            else:
                send = [outgoing, (send_counts, send_displ), datatype]
                recv = [incoming, (recv_counts, recv_displ), datatype]
            self._comm.Alltoallv(send, recv)
            received[name] = incoming
        return received

    def allgather(self, obj: Any) -> list[Any]:
        """Collective: every rank's small object, in rank order (pickled: keep it small)."""
        if self._comm is None:
            return [obj]
        _arrive(self._comm)
        return self._comm.allgather(obj)

    def barrier(self) -> None:
        if self._comm is not None:
            _arrive(self._comm)


# Waiting for the other ranks: poll a non-blocking barrier, sleeping between polls.
_FIRST_NAP, _LONGEST_NAP = 20e-6, 2e-3


# Set when this process was interrupted (SIGINT, noted by the command line's handler): a
# rank waiting for the others stops waiting, so that the interrupt ends it (see abort).
_interrupted = False


def note_interrupt() -> None:
    """Record an interrupt (called from a SIGINT handler): :func:`_arrive` then raises
    KeyboardInterrupt instead of waiting on."""
    global _interrupted
    _interrupted = True


def _arrive(comm: Any) -> None:
    """Return once every rank of ``comm`` has arrived here, sleeping while waiting.

    MPI implementations busy-poll inside a blocking collective; with more ranks than free
    cores (a laptop, a shared CI machine) a rank spinning in a collective steals the CPU
    from the rank it waits for (the README's "How it is built" gives the measured cost).
    Every collective of this module first meets the others here, so the blocking call
    that follows finds everyone present and hardly waits. An interrupt (:func:`note_interrupt`)
    ends the wait with KeyboardInterrupt.
    """
    request = comm.Ibarrier()
    nap = _FIRST_NAP
    while not request.Test():
        if _interrupted:
            raise KeyboardInterrupt
        time.sleep(nap)
        nap = min(2 * nap, _LONGEST_NAP)


def _summarize(error: BaseException) -> tuple:
    """Plain fields of an error, for the other ranks (no exception objects pickled)."""
    if isinstance(error, InputError):
        value = error.value if isinstance(error.value, (int, float, str, bytes)) else None
        return ("input", error.field, error.problem, error.count, error.first_index, value)
    return ("other", type(error).__name__, str(error))


def _rebuild(summary: tuple, origin: int) -> BaseException:
    if summary[0] == "input":
        _, field, problem, count, first_index, value = summary
        return InputError(field, problem, count=count, first_index=first_index, value=value)
    _, type_name, text = summary
    return RemoteError(f"rank {origin} failed: {type_name}: {text}")


def abort(code: int = 1) -> None:
    """End every rank of the world now (after an unhandled error or an interrupt on one
    rank): ``MPI_Abort(code)`` when there are other ranks, else ``SystemExit(code)``."""
    mpi = sys.modules.get("mpi4py.MPI")  # None: this process never loaded MPI
    with contextlib.suppress(Exception):  # a closed stream must not stop the abort
        sys.stdout.flush()
        sys.stderr.flush()
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized() \
            and mpi.COMM_WORLD.Get_size() > 1:
        mpi.COMM_WORLD.Abort(code)
    raise SystemExit(code)


def abort_on_unhandled_error() -> None:
    """Make an uncaught exception on any rank end the whole job instead of hanging it.

    For programs that own ``MPI.COMM_WORLD`` (mpieval's CLI, a training script); as
    ``python -m mpi4py`` does.
    """

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        traceback.print_exception(kind, value, tb)
        abort(1)

    sys.excepthook = hook
