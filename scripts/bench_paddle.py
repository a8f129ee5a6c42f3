#!/usr/bin/env python3
"""``compute()`` over a Paddle group against the same over a torch gloo group (issue 25).
Repeat with:

    nice -n 10 .venv/bin/python scripts/bench_paddle.py

Starts a 2-process Paddle job (the environment ``paddle.distributed.launch`` gives) and a
2-process torch gloo job, in turn, ``--rounds`` times. In each, every process feeds
``--rows`` rows to an ``AucMetric`` of ``--table-size`` buckets and times ``--computes`` of its
``compute()`` (after a barrier; the median kept); then a ``WuaucMetric`` with uids over
every process computes once, with the per-user exchange's primitives wrapped to count the
bytes this process sends: over Paddle the counts' ``all_gather`` and the slots of its
``scatter`` s, against what an all-to-all would send (the rows bound for other ranks).
Prints the median over rounds of each job's median compute, their ratio, and the bytes.
Both jobs run with ``OMP_NUM_THREADS=1`` unless it is set (docs/benchmarks.md says why).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np


def worker(transport: str, rank: int, size: int, args: argparse.Namespace) -> dict:
    if transport == "paddle":
        import paddle.distributed as dist

        dist.init_parallel_env()
        group: Any = dist.get_group()
        barrier = dist.barrier
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo", rank=rank, world_size=size)
        group, barrier = dist.group.WORLD, dist.barrier
    from mpieval import AucMetric, Comm, WuaucMetric

    comm = Comm.resolve(group)
    rng = np.random.default_rng([11, rank])
    pred = rng.random(args.rows).astype(np.float32)
    label = (rng.random(args.rows) < pred).astype(np.int8)
    metric = AucMetric(table_size=args.table_size, comm=comm)
    metric.update(pred, label)
    seconds = []
    for _ in range(args.computes):
        barrier()
        start = time.perf_counter()
        metric.compute()
        seconds.append(time.perf_counter() - start)
    sent = _count_exchange(comm)
    users = WuaucMetric(comm=comm)
    users.update(rng.integers(0, args.users, args.rows), pred, label)
    users.compute()
    barrier()
    return {"compute": statistics.median(seconds), **sent}


def _count_exchange(comm: Any) -> dict[str, int]:
    """Wrap the exchange's primitives of ``comm``'s transport to count what this rank sends
    (filled in as the exchange runs)."""
    transport, sent = comm._transport, {"counts": 0, "rows": 0, "all_to_all": 0}
    alltoall, alltoallv = transport.alltoall, transport.alltoallv

    def counted_alltoall(counts: np.ndarray) -> np.ndarray:
        sent["counts"] += counts.nbytes  # the all_gather / all-to-all of the counts
        return alltoall(counts)

    def counted_alltoallv(outgoing: np.ndarray, send_counts: np.ndarray,
                          recv_counts: np.ndarray) -> np.ndarray:
        width, here = outgoing.dtype.itemsize, transport.rank
        others = int(send_counts.sum() - send_counts[here])
        sent["all_to_all"] += others * width
        if hasattr(transport, "counts"):  # Paddle: a slot per other rank, of the most rows
            slot = max((int(c) for r, c in enumerate(send_counts) if r != here), default=0)
            sent["rows"] += slot * width * (transport.size - 1)
        else:
            sent["rows"] += others * width
        return alltoallv(outgoing, send_counts, recv_counts)

    transport.alltoall, transport.alltoallv = counted_alltoall, counted_alltoallv
    return sent


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def job(transport: str, size: int, argv: list[str]) -> list[dict]:
    """One job of ``size`` processes; each one's figures."""
    ports = _free_ports(size + 1)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PMI_", "PMIX_", "HYDI_", "MPI_LOCAL", "OMPI_", "PADDLE_"))}
    base.setdefault("OMP_NUM_THREADS", "1")  # more processes than cores: no idle pools
    procs = []
    for rank in range(size):
        if transport == "paddle":
            endpoints = [f"127.0.0.1:{p}" for p in ports[1:]]
            env = {**base, "PADDLE_MASTER": f"127.0.0.1:{ports[0]}",
                   "PADDLE_DISTRI_BACKEND": "gloo", "PADDLE_LOCAL_RANK": str(rank),
                   "PADDLE_RANK_IN_NODE": str(rank), "PADDLE_NNODES": "1",
                   "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(size),
                   "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
                   "PADDLE_CURRENT_ENDPOINT": endpoints[rank]}
        else:
            env = {**base, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(ports[0])}
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", transport, str(rank), str(size), *argv],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{transport} job failed:\n{err[-3000:]}")
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--table-size", type=int, default=1_000_000)
    parser.add_argument("--computes", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=2)
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args()
    if args.worker:
        transport, rank, size = args.worker[0], int(args.worker[1]), int(args.worker[2])
        print(json.dumps(worker(transport, rank, size, args)))
        return
    argv = ["--rows", str(args.rows), "--users", str(args.users),
            "--table-size", str(args.table_size), "--computes", str(args.computes)]
    medians: dict[str, list[float]] = {"paddle": [], "torch": []}
    sent: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for transport in medians:
            outputs = job(transport, args.size, argv)
            medians[transport].append(statistics.median(o["compute"] for o in outputs))
            sent[transport] = outputs
    paddle, torch = (statistics.median(medians[t]) for t in ("paddle", "torch"))
    print(f"auc compute, T = {args.table_size:,}, {args.size} processes, medians of "
          f"{args.computes} computes, median of {args.rounds} rounds (alternating):")
    print(f"  paddle {paddle * 1e3:8.1f} ms   torch {torch * 1e3:8.1f} ms   "
          f"paddle/torch {paddle / torch:.2f}   (rounds: paddle "
          f"{[round(m * 1e3, 1) for m in medians['paddle']]}, torch "
          f"{[round(m * 1e3, 1) for m in medians['torch']]})")
    print(f"per-user exchange, {args.rows:,} rows a process, {args.users:,} users; bytes "
          "sent per process (counts; rows; what an all-to-all of the rows sends):")
    for transport, outputs in sent.items():
        for rank, o in enumerate(outputs):
            print(f"  {transport:6s} rank {rank}: {o['counts']:,}; {o['rows']:,}; "
                  f"{o['all_to_all']:,}")


if __name__ == "__main__":
    main()
