"""One process of a Paddle test job (started by tests/test_paddle.py).

``python paddle_worker.py SCENARIO,... RANK SIZE``, with the environment that
``paddle.distributed.launch`` gives its processes (set by the test): joins the job's
Paddle group (``init_parallel_env``, gloo on CPU), runs the scenarios and prints one JSON
line of what each saw. ``python paddle_worker.py mpi`` under ``mpiexec -n N``: the
``kinds`` scenario over the MPI world (paddle not loaded), the reference.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

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


def kinds(rank: int, size: int, comm: object = None) -> dict:
    """Every kind's JSON over uneven shards (rank 1 of 2+ has no rows); over Paddle, given
    as Paddle tensors with comm=None, and as numpy arrays with the default group and a
    Comm on it, which must agree byte for byte (one process: Paddle makes no group)."""
    out = {}
    for kind in KINDS:
        rows = _part(_rows(kind, np.random.default_rng(7)), rank, size)
        metric = _make(kind, comm)
        if comm is None:
            import paddle
            import paddle.distributed as dist

            tensors = {k: (paddle.to_tensor(v) if v.dtype.kind != "U" else v)
                       for k, v in rows.items()}
            metric.update(**tensors)
            out[kind] = json.dumps(metric.compute().to_dict())
            assert metric.comm.size == size
            groups = [dist.get_group()] if dist.is_initialized() else []  # one process: none
            for again in [_make(kind, g) for g in groups] + \
                         [_make(kind, Comm.resolve(g)) for g in groups]:
                again.update(**rows)
                assert json.dumps(again.compute().to_dict()) == out[kind], kind
        else:
            metric.update(**rows)
            out[kind] = json.dumps(metric.compute().to_dict())
    return out


def sliced(rank: int, size: int) -> dict:
    """The per-user kinds sliced by a column of 40 values over uneven shards, as JSON:
    each slice computed whole on one process (its states and result over Paddle)."""
    warnings.simplefilter("ignore")
    return {kind: json.dumps(sliced_part(kind, rank, size, None).compute().to_dict())
            for kind in per_user_kinds()}


def many_tags(rank: int, size: int) -> dict:
    """``wuauc`` and ``ranking`` over 1,500 tags, uneven shards: their pairs summed by the
    tags' owners over Paddle's group (``metric.narrowed_sums``)."""
    return many_tags_part(rank, size, None)


def subgroup(rank: int, size: int) -> dict:
    """A subgroup of the even ranks computes over its members only."""
    import paddle.distributed as dist

    evens = list(range(0, size, 2))
    group = dist.new_group(evens)
    if rank not in evens:
        return {}
    metric = AucMetric(table_size=100, comm=group)
    metric.update(np.array([0.1 + 0.1 * rank]), np.array([rank % 4 == 0]))
    return {"num": metric.compute().num, "size": metric.comm.size}


def bad_input(rank: int, size: int) -> dict:
    import paddle

    metric = AucMetric(table_size=100)
    if rank == size - 1:
        try:
            metric.update(paddle.to_tensor([0.5, float("nan")]), paddle.to_tensor([0, 1]))
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
    """Every dtype the exchange moves reaches its rank (rank 1 sends nothing); an async
    sum; exact float64 sums of whole numbers up to 2**53."""
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
    assert got["pred"].tolist() == [float(np.float32(i)) for i in expected]
    started = comm.start_sum(np.full(2, rank + 1.0))  # an async all_reduce, collected later
    assert started.result().tolist() == [size * (size + 1) / 2] * 2
    big = float(2**53 - size)  # sums of whole numbers stay exact up to 2**53
    total = comm.sum(np.array([big if rank == 0 else 1.0, rank * 2.0**40]))
    assert total.tolist() == [big + size - 1, sum(r * 2.0**40 for r in range(size))]
    assert comm.sum(np.zeros(0)).size == 0
    comm.barrier()
    return {"rows": len(expected), "any": comm.any(rank == size - 1),
            "none": comm.any(False)}


def late(rank: int, size: int) -> dict:
    """The last rank reaches compute() 35 s after the others (Paddle's gloo operations
    alone give up after 30 s): every rank still gets the job's values."""
    import time

    metric = AucMetric(table_size=100)
    metric.update(np.array([0.25, 0.75]), np.array([0, 1]))
    if rank == size - 1:
        time.sleep(35)
    return {"num": metric.compute().num}


def loop(rank: int, size: int) -> dict:
    """A metric per pass, 2,000 times: one transport while they live, none after."""
    warnings.simplefilter("ignore")
    for step in range(2_000):
        metric = AucMetric(table_size=10)
        assert metric.comm.size == size
        if step % 100 == 0:
            metric.update(np.array([0.25, 0.75]), np.array([0, 1]))
            metric.compute()
    from mpieval.transport.paddle import PaddleTransport

    live = len(PaddleTransport._of_group)
    del metric
    gc.collect()
    return {"transports": live, "after": len(PaddleTransport._of_group)}


RESULT = "mpieval-result: "


def main() -> None:
    if sys.argv[1] == "mpi":
        comm = Comm()
        everything = comm.allgather((kinds(comm.rank, comm.size, comm),
                                     "paddle" in sys.modules))
        if comm.rank == 0:  # one line: the ranks' long lines would interleave
            print(json.dumps({"results": [r for r, _ in everything],
                              "paddle_loaded": any(p for _, p in everything)}))
        return
    scenarios, rank, size = sys.argv[1].split(","), *map(int, sys.argv[2:])
    import paddle.distributed as dist

    assert "paddle" in sys.modules
    dist.init_parallel_env()  # with one process, no group: comm=None is that process
    assert dist.get_rank() == rank and dist.get_world_size() == size
    assert dist.is_initialized() == (size > 1)
    try:
        result = {name: globals()[name](rank, size) for name in scenarios}
        # marked and flushed at once: Paddle's own C++ code writes to the same stdout
        print(RESULT + json.dumps({"rank": rank, "result": result,
                                   "mpi_loaded": "mpi4py.MPI" in sys.modules}), flush=True)
    finally:
        if size > 1:
            dist.barrier()  # every process done before any tears the group down


if __name__ == "__main__":
    main()
