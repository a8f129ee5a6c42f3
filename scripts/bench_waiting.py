#!/usr/bin/env python3
"""How a move's collective should wait for a rank still reading (issue 36's moves): three
ways of running one ``Alltoallv`` of a move's size while one rank arrives late, at 2 ranks.

    .venv/bin/mpiexec -n 2 .venv/bin/python scripts/bench_waiting.py [--rows N] [--late S]

Each step, the last rank first works ``--late`` seconds (a numpy loop: a round still being
read), then every rank sends ``--rows`` uint64 values to each rank:

- ``blocking``: ``Alltoallv`` at once (MPI's own wait, which polls without sleeping);
- ``arrive``: what :class:`mpieval.transport.mpi.MpiTransport` does, a non-blocking
  barrier polled with sleeps (``_arrive``), then the blocking ``Alltoallv``;
- ``nonblocking``: ``Ialltoallv`` polled with the same sleeps (``wait_until``).

Printed per rank: wall per step, the CPU time the waiting costs (the early rank's), and
the late rank's work time (which a spinning early rank slows on a busy machine).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

from mpieval.transport.mpi import _arrive
from mpieval.transport.waiting import wait_until


def work(seconds: float) -> float:
    """Busy numpy work for about ``seconds``; returns the wall time it took."""
    start = time.perf_counter()
    values = np.arange(1 << 16, dtype=np.float64)
    while time.perf_counter() - start < seconds:
        values = np.sqrt(values + 1.0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000,
                        help="uint64 values sent to each rank a step (a move of 8 MiB rounds)")
    parser.add_argument("--late", type=float, default=0.05, help="seconds the last rank works")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD.Dup()
    rank, size = comm.Get_rank(), comm.Get_size()
    late = rank == size - 1
    counts = np.full(size, args.rows, dtype=np.int64)
    displ = np.arange(size, dtype=np.int64) * args.rows
    outgoing = np.arange(size * args.rows, dtype=np.uint64)
    incoming = np.empty_like(outgoing)
    send, receive = [outgoing, (counts, displ)], [incoming, (counts, displ)]

    def blocking() -> None:
        comm.Alltoallv(send, receive)

    def arrive() -> None:
        _arrive(comm)
        comm.Alltoallv(send, receive)

    def nonblocking() -> None:
        wait_until(comm.Ialltoallv(send, receive).Test)

    for name, step in (("blocking", blocking), ("arrive", arrive), ("nonblocking", nonblocking)):
        walls, cpus, works = [], [], []
        for _ in range(args.steps):
            comm.Barrier()
            wall, cpu = time.perf_counter(), time.process_time()
            if late:
                works.append(work(args.late))
            step()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            assert np.array_equal(incoming[:args.rows],  # rank 0's block for this rank
                                  outgoing[rank * args.rows:(rank + 1) * args.rows])
        waited = "" if late else f", CPU {statistics.median(cpus) * 1e3:.1f} ms"
        worked = f", its work {statistics.median(works) * 1e3:.1f} ms" if late else ""
        print(f"rank {rank} ({'late' if late else 'early'}) {name}: "
              f"{statistics.median(walls) * 1e3:.1f} ms a step{waited}{worked} "
              f"(medians of {args.steps})", flush=True)
    comm.Free()


if __name__ == "__main__":
    main()
