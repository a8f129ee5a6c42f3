#!/usr/bin/env python3
"""What one rank hands to MPI per ``compute()`` (issue 13, scale on paper). Repeat with:

    for n in 2 4 8 16; do .venv/bin/mpiexec -n $n .venv/bin/python scripts/comm_bytes.py; done

Every rank makes its share of ``--rows`` rows (uids spread over every rank, 3 tags) and
feeds one metric of each kind (``auc`` at ``--table-size``, ``wuauc`` with tags, ``pn``,
``pairwise``), then computes them together. Each of the transport's primitives is wrapped
to count, per rank, the bytes it passes in: the buffer of each ``Allreduce``, the rows of
the ``Alltoallv`` bound for other ranks (and received from them), the counts of the
``Alltoall`` and the pickled objects of the ``allgather``s. Rank 0 prints the mean and
largest per rank. The bytes on the wire depend on MPI's algorithms (a ring ``Allreduce``
sends and receives about twice its buffer per rank); these are the payloads.
"""

from __future__ import annotations

import argparse
import pickle
from collections import Counter
from typing import Any

import numpy as np

from mpieval import AucMetric, Comm, Evaluator, PairwiseMetric, PnMetric, WuaucMetric
from mpieval.comm import MpiTransport

counted: Counter[str] = Counter()
calls: Counter[str] = Counter()


def counting(transport: MpiTransport) -> None:
    """Wrap ``transport``'s primitives so that they add their payloads to ``counted``."""
    reduce, alltoall, alltoallv, allgather = (transport.reduce, transport.alltoall,
                                              transport.alltoallv, transport.allgather)
    rank = transport.rank

    def counted_reduce(local: np.ndarray, op: str) -> np.ndarray:
        counted["allreduce"] += local.nbytes
        calls["allreduce"] += 1
        return reduce(local, op)

    def counted_alltoall(counts: np.ndarray) -> np.ndarray:
        counted["alltoall"] += counts.nbytes
        calls["alltoall"] += 1
        return alltoall(counts)

    def counted_alltoallv(outgoing: np.ndarray, send_counts: np.ndarray,
                          recv_counts: np.ndarray) -> np.ndarray:
        width = outgoing.dtype.itemsize
        counted["alltoallv sent"] += int(send_counts.sum() - send_counts[rank]) * width
        counted["alltoallv received"] += int(recv_counts.sum() - recv_counts[rank]) * width
        calls["alltoallv"] += 1
        return alltoallv(outgoing, send_counts, recv_counts)

    def counted_allgather(obj: Any) -> list[Any]:
        counted["allgather"] += len(pickle.dumps(obj))
        calls["allgather"] += 1
        return allgather(obj)

    transport.reduce = counted_reduce  # type: ignore[method-assign]
    transport.alltoall = counted_alltoall  # type: ignore[method-assign]
    transport.alltoallv = counted_alltoallv  # type: ignore[method-assign]
    transport.allgather = counted_allgather  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_600_000)
    parser.add_argument("--users", type=int, default=160_000)
    parser.add_argument("--table-size", type=int, default=1_000_000)
    args = parser.parse_args()
    comm = Comm()
    assert isinstance(comm._transport, MpiTransport), "run under mpiexec"
    counting(comm._transport)
    rng = np.random.default_rng([7, comm.rank])
    n = args.rows // comm.size + (comm.rank < args.rows % comm.size)
    uid = rng.integers(0, args.users, n)
    pred = rng.random(n, dtype=np.float32)
    label = (rng.random(n) < pred).astype(np.int8)
    tag = np.array(["feed", "home", "search"])[rng.integers(0, 3, n)]
    ev = Evaluator({"auc": AucMetric(table_size=args.table_size), "wuauc": WuaucMetric(),
                    "pn": PnMetric(), "pairwise": PairwiseMetric()}, comm=comm)
    ev["auc"].update(pred, label)
    ev["wuauc"].update(uid, pred, label, tag)
    ev["pn"].update(uid, pred, label)
    ev["pairwise"].update(label, (rng.random(n) < 0.5).astype(np.int8))
    counted.clear()
    calls.clear()
    ev.compute()
    everyone = comm.allgather((dict(counted), dict(calls), n))
    if comm.rank == 0:
        print(f"{comm.size} ranks, {args.rows:,} rows ({args.users:,} users, 3 tags), "
              f"T = {args.table_size:,}: bytes per rank per compute() (mean / largest)")
        for key in ("allreduce", "alltoall", "alltoallv sent", "alltoallv received",
                    "allgather"):
            values = [counts.get(key, 0) for counts, _, _ in everyone]
            print(f"  {key:20s} {np.mean(values):>14,.0f} / {max(values):>14,}   "
                  f"calls {everyone[0][1].get(key.split()[0], 0)}")
        rows = [r for _, _, r in everyone]
        print(f"  rows per rank {np.mean(rows):,.0f}")


if __name__ == "__main__":
    main()
