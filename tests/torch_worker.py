"""One process of a torch.distributed test job (started by tests/test_torch.py).

``python torch_worker.py SCENARIO,... RANK SIZE PORT``: joins a gloo group on
127.0.0.1:PORT, runs the scenarios in turn on that one group and prints one JSON line of
what each saw.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from datetime import timedelta

import torch
import torch.distributed as dist
from test_trainer import (
    KINDS,
    _make,
    _part,
    _rows,
    many_tags_part,
    per_user_kinds,
    sliced_part,
)

from mpieval import AucMetric, Evaluator, InputError, PairwiseMetric
from mpieval.comm import Comm


def kinds(rank: int, size: int) -> dict:
    """Every kind over uneven shards (rank 1 of 2+ has no rows), given as torch tensors;
    comm=None (torch's default group), group.WORLD and a Comm all agree."""
    out = {}
    for kind in KINDS:
        rows = _part(_rows(kind, np.random.default_rng(7)), rank, size)
        tensors = {k: (torch.from_numpy(v) if v.dtype.kind != "U" else v)
                   for k, v in rows.items()}
        metric = _make(kind, None)
        metric.update(**tensors)
        out[kind] = metric.compute().to_dict()
        again = _make(kind, dist.group.WORLD)
        again.update(**rows)
        assert again.compute().to_dict() == out[kind]
        assert metric.comm.size == size
    return out


def sliced(rank: int, size: int) -> dict:
    """The per-user kinds sliced by a column of 40 values over uneven shards: each slice
    computed whole on one process (the slices' states and results over gloo)."""
    warnings.simplefilter("ignore")
    return {kind: sliced_part(kind, rank, size, None).compute().to_dict()
            for kind in per_user_kinds()}


def many_tags(rank: int, size: int) -> dict:
    """``wuauc`` and ``ranking`` over 1,500 tags, uneven shards: their pairs summed by the
    tags' owners over gloo (``metric.narrowed_sums``)."""
    return many_tags_part(rank, size, None)


def subgroup(rank: int, size: int) -> dict:
    """A subgroup of the even ranks computes over its members only."""
    evens = list(range(0, size, 2))
    group = dist.new_group(evens, backend="gloo")
    if rank not in evens:
        return {}
    metric = AucMetric(table_size=100, comm=group)
    metric.update(np.array([0.1 + 0.1 * rank]), np.array([rank % 4 == 0]))
    return {"num": metric.compute().num, "size": metric.comm.size}


def bad_input(rank: int, size: int) -> dict:
    metric = AucMetric(table_size=100)
    if rank == size - 1:
        try:
            metric.update(torch.tensor([0.5, float("nan")]), torch.tensor([0, 1]))
        except InputError:
            pass
    try:
        metric.compute()
    except InputError as error:
        return {"text": str(error), "field": error.field, "count": error.count,
                "first_index": error.first_index}
    return {"text": None}


def mismatch(rank: int, size: int) -> dict:
    names = ["b", "a"] if rank == size - 1 else ["a", "b"]
    ev = Evaluator({n: AucMetric(table_size=100) if n == "a" else PairwiseMetric() for n in names})
    try:
        ev.compute()
    except RuntimeError as error:
        return {"text": str(error), "type": type(error).__name__}
    return {"text": None}


def exchange(rank: int, size: int) -> dict:
    """Every dtype the exchange moves reaches its rank."""
    comm = Comm.resolve(None)
    n = 0 if rank == 1 else 500 + 31 * rank
    dest = np.random.default_rng(rank).integers(0, size, n)
    ident = (rank * 10**6 + np.arange(n)).astype(np.int64)
    got = comm.exchange(dest, {"ident": ident, "key": ident.astype(np.uint64) * np.uint64(3),
                               "flag": ident % 3 == 0, "pred": ident.astype(np.float32)})
    everything = comm.allgather((ident.tolist(), dest.tolist()))
    expected = [i for ids, ds in everything for i, d in zip(ids, ds, strict=True) if d == rank]
    assert got["ident"].tolist() == expected
    assert got["key"].tolist() == [3 * i for i in expected]
    assert got["flag"].tolist() == [i % 3 == 0 for i in expected]
    assert got["pred"].dtype == np.float32
    started = comm.start_sum(np.full(2, rank + 1.0))  # an async all_reduce, collected later
    assert started.result().tolist() == [size * (size + 1) / 2] * 2
    comm.barrier()
    return {"rows": len(expected), "any": comm.any(rank == size - 1)}


def loop(rank: int, size: int) -> dict:
    """A metric per pass, 10,000 times: nothing grows."""
    warnings.simplefilter("ignore")
    for step in range(10_000):
        metric = AucMetric(table_size=10)
        assert metric.comm.size == size
        if step % 50 == 0:
            metric.update(np.array([0.25, 0.75]), np.array([0, 1]))
            metric.compute()
    from mpieval.transport.torch import TorchTransport

    live = len(TorchTransport._of_group)
    del metric  # the last metric gone, mpieval holds nothing of the group
    gc.collect()
    return {"transports": live, "after": len(TorchTransport._of_group)}


def main() -> None:
    scenarios, rank, size, port = sys.argv[1].split(","), *map(int, sys.argv[2:])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=size, timeout=timedelta(seconds=60))
    try:
        result = {name: globals()[name](rank, size) for name in scenarios}
        print(json.dumps({"rank": rank, "result": result,
                          "mpi_loaded": "mpi4py.MPI" in sys.modules}))
    finally:
        # every process is done before any tears the group down (a peer closing its
        # connections while another still sends ends that one in gloo's terminate())
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
