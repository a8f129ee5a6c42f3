"""Every collective mpieval makes.

:class:`Comm` runs mpieval's collectives over a *transport* (:mod:`mpieval.transport`): an
MPI communicator (:mod:`mpieval.transport.mpi`, the only module that imports mpi4py), a
``torch.distributed`` process group (:mod:`mpieval.transport.torch`, loaded only when a
group is given), a Paddle process group (:mod:`mpieval.transport.paddle`, the same), or
none (one rank).
The collectives, each built on the transport's few primitives:

- :meth:`Comm.agree` — small ``max`` reduction of an error flag and a hash of what the
  ranks are about to do (+ ``allgather`` of the messages when a flag is set or the hashes
  differ): every rank raises the same error or none does (:meth:`Comm.agreed` runs a step
  and agrees on its errors: the one way to go on together);
- :meth:`Comm.sum` — one sum reduction of a float64 buffer: how states merge;
  :meth:`Comm.start_sum` starts one that the caller collects later (the command line's
  reading rounds agree on one while the next round reads);
- :meth:`Comm.exchange` — all-to-all of counts, then all-to-all-v per typed column:
  how per-user rows reach the rank that owns their user (:meth:`Comm.exchange_packed`:
  one all-to-all-v of rows the caller packed by destination, a move's);
- :meth:`Comm.allgather` — pickled, for small objects only (tag names, error texts);
- :meth:`Comm.any` — small reduction of a flag (readers stop together);
- :meth:`Comm.barrier`.

Lifecycle: an MPI communicator given to mpieval is duplicated once, so that mpieval's
messages never mix with the trainer's; every :class:`Comm` on the same base communicator
shares that duplicate (:mod:`mpieval.transport.mpi`), so creating a metric per pass costs
no communicator.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from mpieval.errors import (
    InputError,
    LayoutMismatchError,
    OutputError,
    RemoteError,
    StoreError,
)
from mpieval.transport import Transport, initialised_group, mpi, of_group
from mpieval.transport.waiting import wait_until

T = TypeVar("T")


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


# Set by a launcher to the number of processes of the job (torchrun, Paddle's launcher,
# srun's job step, MPI launchers: Open MPI, MPICH's Hydra and Intel MPI, MVAPICH, PALS).
_JOB_SIZE_VARIABLES = (
    "WORLD_SIZE", "PADDLE_TRAINERS_NUM", "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE", "PALS_SIZE",
)


def job_size_said(environ: Mapping[str, str] | None = None) -> tuple[str, int] | None:
    """The launcher's variable that gives the most processes for this job (above one),
    and that number; None when none does."""
    names = os.environ if environ is None else environ
    said = []
    for name in _JOB_SIZE_VARIABLES:
        with contextlib.suppress(KeyError, ValueError):
            said.append((int(names[name]), name))
    size, name = max(said, default=(1, ""))
    return (name, size) if size > 1 else None


def check_whole_job(comm: Comm, hint: str, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`InputError` when the environment says this process is one of more
    processes than ``comm`` has: its results would be those of part of the job only.
    ``hint`` says how to give the whole job's communicator."""
    said = job_size_said(environ)
    if said is not None and said[1] > comm.size:
        name, size = said
        found = "only this process" if comm.size == 1 else f"{comm.size} processes"
        raise InputError(name, f"is {size}: this process is one of {size}, but the "
                         f"communicator found has {found}, so results would cover part "
                         f"of the job; {hint}")


_TRAINER_HINT = (
    "initialise the job's group first (torch.distributed.init_process_group, "
    "paddle.distributed.init_parallel_env, or start under mpiexec), or pass comm= (an "
    "mpi4py communicator, a torch.distributed or Paddle group), or comm=Comm.local() for "
    "each process's own values")


class Comm:
    """A communicator for mpieval's collectives (or one rank without one).

    ``Comm(base)`` takes an mpi4py communicator (or None: the MPI world) and shares the
    cached duplicate of it; :meth:`resolve` also takes a ``torch.distributed`` or Paddle
    process group. Without MPI (mpi4py absent, ``MPIEVAL_NO_MPI=1``) ``Comm()`` is one rank.

    Parameters
    ----------
    mpi_comm : mpi4py communicator, optional
        The communicator to duplicate (once per communicator, shared by every metric on
        it); None: the MPI world.

    Raises
    ------
    RuntimeError
        A communicator given while mpi4py is unavailable.

    Examples
    --------
    >>> from mpieval import AucMetric, Comm
    >>> comm = Comm.local()
    >>> comm.rank, comm.size
    (0, 1)
    >>> AucMetric(comm=comm).comm is comm
    True
    """

    sums_only = False
    """True for a communicator whose sums alone are the job's (a Spark partition's: its
    other collectives are answered by this rank alone), so a sum's layout must not depend
    on what a rank's data holds."""

    @property
    def alone(self) -> bool:
        """One rank whose sum is its own buffer (not a communicator whose sums alone are
        the job's): there is nothing to sum, and nothing to send for one."""
        return self.size == 1 and not self.sums_only

    @property
    def sums_owned(self) -> bool:
        """Several ranks whose collectives are the job's: a sum may be made by the rank
        that owns it from every rank's part (many tags' sums: the tags split over the
        ranks, :func:`mpieval.metric.narrowed_sums`), rather than by one ``sum``."""
        return not self.alone and not self.sums_only

    def __init__(self, mpi_comm: Any | None = None) -> None:
        if mpi.mpi() is None:
            if mpi_comm is not None:
                raise RuntimeError("a communicator was given but mpi4py is unavailable")
            self._transport: Transport | None = None
        else:
            self._transport = mpi.MpiTransport.of(mpi_comm)
        self._set_size()

    def _set_size(self) -> None:
        transport = self._transport
        self.rank, self.size = (0, 1) if transport is None else (transport.rank, transport.size)

    @classmethod
    def over(cls, transport: Transport | None) -> Comm:
        """A Comm over ``transport`` (None: one rank)."""
        comm = cls.__new__(cls)
        comm._transport = transport
        comm._set_size()
        return comm

    @classmethod
    def local(cls) -> Comm:
        """One rank on its own, without MPI (a reference, or metrics kept per process)."""
        return cls.over(None)

    @classmethod
    def world_or_alone(cls) -> Comm:
        """The world when an MPI launcher started this process, else :meth:`local`
        without loading MPI at all (it saves the command line part of its start-up)."""
        return cls() if launched_by_mpi() else cls.local()

    @classmethod
    def resolve(cls, comm: Comm | Any | None) -> Comm:
        """A :class:`Comm` from a Comm, an mpi4py communicator, a ``torch.distributed``
        or Paddle process group, or None: the MPI world when an MPI launcher started this
        process; else torch's default group when ``torch.distributed`` is initialised;
        else Paddle's default group when Paddle's parallel environment is initialised;
        else one rank. With None, an :class:`InputError` when the launcher's variables
        give more processes than the communicator found (:func:`check_whole_job`)."""
        if isinstance(comm, Comm):
            return comm
        if comm is None:
            found = cls._found()
            check_whole_job(found, _TRAINER_HINT)
            return found
        transport = of_group(comm)
        return cls(comm) if transport is None else cls.over(transport)

    @classmethod
    def _found(cls) -> Comm:
        """What ``comm=None`` stands for (:meth:`resolve`)."""
        if launched_by_mpi():
            return cls()
        group = initialised_group()
        return cls.local() if group is None else cls.resolve(group)

    def close(self) -> None:
        """Stop using the communicator (the shared duplicate stays for other metrics)."""
        self._transport = None

    # -- collectives -------------------------------------------------------------

    def agree(self, error: BaseException | None, layout: str | None = None) -> None:
        """Collective: raise the lowest-ranked error on every rank, or return on all.

        The rank that owns the error re-raises its own exception object; the others
        raise a copy naming the rank (an :class:`InputError` of the same class and
        fields, ``rank K: ...``, or a :class:`RemoteError`). With ``layout`` (a
        description of what comes next: the metrics, their options and state shapes),
        ranks whose descriptions differ raise :class:`LayoutMismatchError` on every rank,
        naming the ranks and the first difference.
        """
        transport = self._transport
        if transport is None:
            if error is not None:
                raise error
            return
        digest = 0 if layout is None else _digest(layout)
        flags = np.array([0 if error is None else 1, digest, -digest], dtype=np.int64)
        transport.arrive()
        top = transport.reduce(flags, "max")
        mismatch = top[1] != -top[2]
        if top[0] == 0 and not mismatch:
            return
        summary = None if error is None else _summarize(error)
        views = transport.allgather((summary, layout if mismatch else None))
        if mismatch:
            raise LayoutMismatchError(_mismatch_message([v[1] for v in views]))
        origin = next(r for r, (s, _) in enumerate(views) if s is not None)
        if origin == self.rank:
            assert error is not None
            raise error
        raise _rebuild(views[origin][0], origin)

    def agreed(
        self,
        step: Callable[[], T],
        catch: type[BaseException] | tuple[type[BaseException], ...] = (
            InputError, StoreError, OutputError),
    ) -> T:
        """Collective: run ``step`` on this rank, then agree (:meth:`agree`) on the errors
        of the ``catch`` types it raised (by default bad input, a store's transient fault
        and an output that could not be written, which the command line reports as one
        line): every rank returns its own
        value, or every rank raises the lowest-ranked error. Other exceptions propagate at
        once (unexpected: the command line ends the job)."""
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
        if self._transport is None:
            return flag
        self._transport.arrive()
        return bool(self._transport.reduce(np.array([int(flag)], dtype=np.int64), "max")[0])

    def sum(self, buffer: np.ndarray, *, scratch: bool = False) -> np.ndarray:
        """Collective: the element-wise sum over ranks, as a new array (input unchanged).
        ``scratch``: the buffer is the caller's to give up: the sum is written over it (a
        contiguous one), which is returned, not a copy."""
        local = np.ascontiguousarray(buffer)
        if self._transport is None:
            return local if scratch else local.copy()
        self._transport.arrive()
        return self._transport.reduce(local, "sum", in_place=scratch)

    def start_sum(self, buffer: np.ndarray) -> PendingSum:
        """Collective, without waiting: start :meth:`sum`; its :meth:`PendingSum.result`
        waits for the total (sleeping between polls, as every wait here does). Every rank
        starts the same sums in the same order, and collects each before the next
        blocking collective."""
        local = np.ascontiguousarray(buffer).copy()
        if self._transport is None:
            return PendingSum(local, lambda: True, local)
        return PendingSum(*self._transport.start_sum(local), local)

    def exchange(
        self, dest: np.ndarray, columns: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Collective: send row ``i`` of every column to rank ``dest[i]``.

        Returns the rows this rank received, grouped by source rank in rank order and,
        within a source, in their original order.
        """
        transport = self._transport
        if transport is None:
            return {name: np.ascontiguousarray(col) for name, col in columns.items()}
        order = np.argsort(dest, kind="stable")
        send_counts = np.bincount(dest, minlength=self.size).astype(np.int64)
        transport.arrive()
        recv_counts = transport.alltoall(send_counts)
        return {name: transport.alltoallv(np.ascontiguousarray(column[order]), send_counts,
                                          recv_counts)
                for name, column in columns.items()}

    def exchange_packed(self, packed: np.ndarray, send_counts: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Collective: ``packed`` (one item a row, the rows of each rank together in rank
        order, ``send_counts[j]`` (int64) of them to rank ``j``) sent as it is, with no
        sort and no copy: ``(recv_counts, received)``, the rows received from each rank
        and those rows, in rank order. A row may be a record of bytes (a void dtype)."""
        transport = self._transport
        if transport is None:
            return np.asarray(send_counts, dtype=np.int64), packed
        send_counts = np.ascontiguousarray(send_counts, dtype=np.int64)
        transport.arrive()
        recv_counts = transport.alltoall(send_counts)
        return recv_counts, transport.alltoallv(packed, send_counts, recv_counts)

    def allgather(self, obj: Any) -> list[Any]:
        """Collective: every rank's small object, in rank order (pickled: keep it small)."""
        if self._transport is None:
            return [obj]
        self._transport.arrive()
        return self._transport.allgather(obj)

    def barrier(self) -> None:
        """Collective: return once every rank has arrived."""
        if self._transport is not None:
            self._transport.barrier()


class PendingSum:
    """A sum started by :meth:`Comm.start_sum`."""

    def __init__(self, total: np.ndarray, complete: Callable[[], bool],
                 sent: np.ndarray) -> None:
        self._total = total
        self._complete = complete
        self._sent = sent  # the send buffer lives until the sum is complete

    def result(self) -> np.ndarray:
        """The sum over ranks, once every rank has started it (waits without spinning)."""
        wait_until(self._complete)
        return self._total


# -- errors and agreement --------------------------------------------------------------


def _digest(layout: str) -> int:
    """A 62-bit hash of ``layout`` (the same on every rank; Python's ``hash`` is not)."""
    import hashlib  # here: a run of one rank never needs it (it loads OpenSSL, 3-4 ms)

    return int.from_bytes(hashlib.blake2b(layout.encode(), digest_size=8).digest(), "big") >> 2


def _mismatch_message(layouts: list[str | None]) -> str:
    """Which ranks differ from rank 0, and the first line where they do."""
    reference = (layouts[0] or "").splitlines()
    groups: dict[str, list[int]] = {}
    for rank, layout in enumerate(layouts):
        groups.setdefault(layout or "", []).append(rank)
    parts = []
    for layout, ranks in groups.items():
        if ranks[0] == 0:
            continue
        lines = layout.splitlines()
        at = next((i for i, (a, b) in enumerate(zip(reference, lines, strict=False))
                   if a != b),
                  min(len(reference), len(lines)))
        mine = reference[at] if at < len(reference) else "(nothing)"
        theirs = lines[at] if at < len(lines) else "(nothing)"
        parts.append(f"rank 0 has {mine}, rank{'s' if len(ranks) > 1 else ''} "
                     f"{', '.join(map(str, ranks))} {'have' if len(ranks) > 1 else 'has'} "
                     f"{theirs}")
    return "ranks compute different metrics: " + "; ".join(parts)


def _summarize(error: BaseException) -> tuple[Any, ...]:
    """Plain fields of an error, for the other ranks (an InputError pickles its fields)."""
    if isinstance(error, InputError):
        try:
            pickle.dumps(error)
        except Exception:  # an odd value: send the fields without it
            error = InputError(error.field, error.problem, count=error.count,
                               first_index=error.first_index)
        return ("input", error)
    return ("other", type(error).__name__, str(error))


def _rebuild(summary: tuple[Any, ...], origin: int) -> BaseException:
    """The error another rank raised, naming that rank."""
    if summary[0] == "input":
        error: InputError = summary[1]
        error.rank = origin
        error.args = (f"rank {origin}: {error.args[0] if error.args else ''}",)
        return error
    _, type_name, text = summary
    return RemoteError(f"rank {origin} failed: {type_name}: {text}")


_ABORT_GRACE = 0.25  # seconds


def abort(code: int = 1) -> None:
    """End every rank of the world now (after an unhandled error or an interrupt on one
    rank): ``MPI_Abort(code)`` when there are other ranks, else ``SystemExit(code)``."""
    loaded = sys.modules.get("mpi4py.MPI")  # None: this process never loaded MPI
    with contextlib.suppress(Exception):  # a closed stream must not stop the abort
        sys.stdout.flush()
        sys.stderr.flush()
    if loaded is not None and loaded.Is_initialized() and not loaded.Is_finalized() \
            and loaded.COMM_WORLD.Get_size() > 1:
        # The launcher forwards a rank's output through a pipe; MPI_Abort kills the job
        # at once, so give it a moment to pass on what was just written (the traceback).
        time.sleep(_ABORT_GRACE)
        loaded.COMM_WORLD.Abort(code)
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
