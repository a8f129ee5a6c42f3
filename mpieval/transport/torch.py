"""The primitives of mpieval's collectives over a ``torch.distributed`` process group: the
only module that imports torch, loaded only when a group is given (or, with ``comm=None``,
when the program initialised ``torch.distributed`` and no MPI launcher started it).

A module of its own: torch is an optional, large dependency that an MPI job must never
load, and :mod:`mpieval.comm` is imported by every metric. :class:`mpieval.comm.Comm`
builds every collective on the few primitives here, as on MPI's
(:mod:`mpieval.transport.mpi`); a reader of ``comm`` still sees every collective mpieval
makes. What it shares with Paddle's transport is :mod:`mpieval.transport.group`'s.

Buffers are CPU tensors sharing memory with the numpy arrays (``torch.from_numpy``), so
the group must have a CPU backend: gloo (``init_process_group("gloo")``, or
``"cpu:gloo,cuda:nccl"``). For a group whose only backend is NCCL (device tensors only),
mpieval creates a gloo group over the same ranks once, the first time a metric uses that
group, and uses it from then on: metric state lives in host memory, where ``update()``
accumulates it, and a few megabytes a compute are cheaper to send from the host than to
copy to a device and back. ``new_group`` is collective over the default group: every
process must resolve its first metric on an NCCL group at the same point.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch
import torch.distributed as dist

from mpieval.transport.group import GroupTransport

_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}


class TorchTransport(GroupTransport):
    """The primitives over one ``torch.distributed`` process group (CPU tensors).

    A gloo group still alive when the interpreter exits can end the process in
    ``terminate()``: none is kept beyond the metrics that use it. An NCCL group's gloo
    twin is kept as long as the NCCL group lives.
    """

    _twins: ClassVar[weakref.WeakKeyDictionary[Any, Any]] = weakref.WeakKeyDictionary()

    def __init__(self, group: Any) -> None:
        if not dist.is_initialized():
            raise RuntimeError("a torch process group was given but torch.distributed "
                               "is not initialised")
        super().__init__(group)
        self.rank, self.size = dist.get_rank(self.group), dist.get_world_size(self.group)

    def _on_host(self, group: Any) -> bool:
        backend = str(dist.get_backend(group)).lower()
        return "gloo" in backend or "mpi" in backend  # not NCCL (or another device-only)

    def _twin_key(self, group: Any) -> Any:
        return group

    def _gloo_group(self, group: Any) -> Any:
        return dist.new_group(ranks=dist.get_process_group_ranks(group), backend="gloo")

    def arrive(self) -> None:
        return  # gloo waits without spinning: nothing to meet before a collective

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def reduce(self, local: np.ndarray, op: str, *, in_place: bool = False) -> np.ndarray:
        total = local if in_place else local.copy()
        dist.all_reduce(torch.from_numpy(total), op=_OPS[op], group=self.group)
        return total

    def start_sum(self, local: np.ndarray) -> tuple[np.ndarray, Callable[[], bool]]:
        total = local.copy()
        work = dist.all_reduce(torch.from_numpy(total), op=_OPS["sum"], group=self.group,
                               async_op=True)
        return total, work.is_completed

    def alltoall(self, counts: np.ndarray) -> np.ndarray:
        received = np.empty_like(counts)
        dist.all_to_all_single(torch.from_numpy(received),
                               torch.from_numpy(np.ascontiguousarray(counts)), group=self.group)
        return received

    def alltoallv(self, outgoing: np.ndarray, send_counts: np.ndarray,
                  recv_counts: np.ndarray) -> np.ndarray:
        """As bytes, so that every dtype travels (gloo has no uint64)."""
        width = outgoing.dtype.itemsize
        incoming = np.empty(int(recv_counts.sum()), dtype=outgoing.dtype)
        dist.all_to_all_single(
            torch.from_numpy(incoming.view(np.uint8)),
            torch.from_numpy(np.ascontiguousarray(outgoing).view(np.uint8)),
            output_split_sizes=(recv_counts * width).tolist(),
            input_split_sizes=(send_counts * width).tolist(),
            group=self.group,
        )
        return incoming

    def allgather(self, obj: Any) -> list[Any]:
        gathered: list[Any] = [None] * self.size
        dist.all_gather_object(gathered, obj, group=self.group)
        return gathered
