"""The primitives of mpieval's collectives over a Paddle process group: the only module that
imports paddle, loaded only when a group is given (or, with ``comm=None``, when the
program initialised Paddle's parallel environment, and neither an MPI launcher started it
nor ``torch.distributed`` is initialised).

A module of its own, as :mod:`mpieval.transport.torch` is: Paddle is an optional, large
dependency that an MPI or torch job must never load. :class:`mpieval.comm.Comm` builds
every collective on the few primitives here; what it shares with torch's transport is
:mod:`mpieval.transport.group`'s.

Buffers are CPU tensors sharing memory with the numpy arrays (DLPack), so the group must
have a CPU backend: gloo (what ``paddle.distributed.launch`` gives on a CPU build). For a
group whose backend is another (NCCL: device tensors only), mpieval creates a gloo group
over the same ranks once, the first time a metric uses that group (``new_group`` is
collective: every process must resolve its first metric on such a group at the same
point). Paddle's gloo backend has no all-to-all, and its point-to-point ``send`` and
``recv`` number their messages with a counter of the group that every op advances, so
ranks that send different numbers of messages lose step: the per-user exchange gathers
every rank's counts (``all_gather``), then each rank in turn ``scatter`` s its rows, in
slots as large as the most it sends any one rank (docs/paddle.md gives the bytes).

Paddle's gloo operations give up after 30 seconds of waiting for another rank, and there
is no option to wait longer: a rank that reaches ``compute()`` later than that (a slower
shard, a loaded machine) would end the job. So the ranks meet on the job's TCP store,
whose waits have Paddle's rendezvous timeout (30 minutes), before the collectives that
follow local work (:meth:`PaddleTransport._meet`), as mpieval's MPI transport meets on a
non-blocking barrier before each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import paddle
import paddle.distributed as dist
from paddle.base import core
from paddle.utils.dlpack import from_dlpack

from mpieval.transport.group import GroupTransport
from mpieval.transport.waiting import wait_until

_OPS: dict[str, Any] = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX}


def _tensor(array: np.ndarray) -> paddle.Tensor:
    """A CPU tensor over ``array``'s memory (no copy: a collective writes into the array)."""
    return from_dlpack(np.ascontiguousarray(array))


class PaddleTransport(GroupTransport):
    """The primitives over one Paddle process group (CPU tensors). A non-gloo group's
    gloo twin is kept by the group's id (Paddle keeps every group)."""

    _twins: ClassVar[dict[int, Any]] = {}
    _arrivals: ClassVar[dict[int, int]] = {}  # collectives met so far, by the group's id

    def __init__(self, group: Any) -> None:
        if not dist.is_initialized():
            raise RuntimeError("a Paddle group was given but Paddle's parallel environment "
                               "is not initialised (paddle.distributed.init_parallel_env())")
        if group.rank < 0:
            raise RuntimeError(f"this process (global rank {dist.get_rank()}) is not a "
                               f"member of the Paddle group given (ranks {group.ranks})")
        super().__init__(group)
        self.rank, self.size = self.group.rank, self.group.nranks
        self.store = core.create_or_get_global_tcp_store()

    def _on_host(self, group: Any) -> bool:
        return str(dist.get_backend(group)).lower() == "gloo"  # not NCCL, XCCL

    def _twin_key(self, group: Any) -> Any:
        return group.id

    def _gloo_group(self, group: Any) -> Any:
        return dist.new_group(ranks=list(group.ranks),
                              backend="gloo")  # type: ignore[arg-type]  # typed: nccl

    def arrive(self) -> None:
        return  # met on the store where ranks may come apart (_meet), not before each one

    def _meet(self) -> None:
        """Meet the group's other ranks on the job's store (Paddle's TCP store, whose
        waits last as long as Paddle's rendezvous): one count a meeting, polled with
        sleeps; the gloo collective that follows finds every rank there. A store call is
        slow (docs/benchmarks.md), so ranks meet there only before an agreement (the
        first collective of every compute and every agreed step) and an exchange: where
        one rank may come after long local work; every rank takes the same decision."""
        number = self._arrivals.get(self.group.id, 0) + 1
        self._arrivals[self.group.id] = number
        key = f"mpieval/{self.group.id}/{number}"
        self.store.add(key, 1)
        wait_until(lambda: self.store.add(key, 0) >= self.size)

    def barrier(self) -> None:
        self._meet()

    def reduce(self, local: np.ndarray, op: str, *, in_place: bool = False) -> np.ndarray:
        if op == "max":  # an agreement (Comm.agree, Comm.any)
            self._meet()
        total = local if in_place else local.copy()
        if total.size:  # gloo refuses an empty one (every rank's is the same size)
            dist.all_reduce(_tensor(total), op=_OPS[op], group=self.group)
        return total

    def start_sum(self, local: np.ndarray) -> tuple[np.ndarray, Callable[[], bool]]:
        total = local.copy()  # the tensor shares its memory: the sum is written there
        if not total.size:
            return total, lambda: True
        task = dist.all_reduce(_tensor(total), op=_OPS["sum"], group=self.group,
                               sync_op=False)
        return total, task.is_completed

    def alltoall(self, counts: np.ndarray) -> np.ndarray:
        """Every rank's counts gathered (kept for :meth:`alltoallv`: the sizes of each
        rank's scatter); the column of this rank returned."""
        self._meet()
        gathered: list[Any] = []
        dist.all_gather(gathered, _tensor(np.ascontiguousarray(counts, dtype=np.int64)),
                        group=self.group)
        self.counts = np.stack([row.numpy() for row in gathered])  # [source, destination]
        return self.counts[:, self.rank].astype(counts.dtype)

    def alltoallv(self, outgoing: np.ndarray, send_counts: np.ndarray,
                  recv_counts: np.ndarray) -> np.ndarray:
        """As bytes (every dtype travels), one ``scatter`` from each rank that sends rows
        to another: every destination gets a slot of the most rows that rank sends to
        any other, its own rows first (the counts of the last :meth:`alltoall` say how
        many; hashed users make the slots nearly even). This rank's own rows copied."""
        width = outgoing.dtype.itemsize
        incoming = np.empty(int(recv_counts.sum()), dtype=outgoing.dtype)
        send_at = np.concatenate(([0], np.cumsum(send_counts))) * width
        recv_at = np.concatenate(([0], np.cumsum(recv_counts))) * width
        sent, received = outgoing.view(np.uint8), incoming.view(np.uint8)
        here = self.rank
        received[recv_at[here]:recv_at[here + 1]] = sent[send_at[here]:send_at[here + 1]]
        others = ~np.eye(self.size, dtype=bool)
        slots = np.where(others, self.counts, 0).max(axis=1) * width  # bytes, per source
        for source in range(self.size):
            slot = int(slots[source])
            if slot == 0:
                continue
            mine = _tensor(np.empty(slot, dtype=np.uint8))
            if source == here:
                padded = np.zeros((self.size, slot), dtype=np.uint8)
                for to in range(self.size):
                    if to != here:
                        rows = sent[send_at[to]:send_at[to + 1]]
                        padded[to, :len(rows)] = rows
                dist.scatter(mine, [_tensor(row) for row in padded],
                             src=self.group.ranks[source], group=self.group)
            else:
                dist.scatter(mine, src=self.group.ranks[source], group=self.group)
                size = recv_at[source + 1] - recv_at[source]
                received[recv_at[source]:recv_at[source + 1]] = np.from_dlpack(mine)[:size]
        return incoming

    def allgather(self, obj: Any) -> list[Any]:
        gathered: list[Any] = []
        dist.all_gather_object(gathered, obj, group=self.group)
        return gathered

