"""A Paddle process group as mpieval's transport: real jobs of 1, 2 and 3 processes started
here with the environment ``paddle.distributed.launch`` gives (gloo on CPU; each job with a
timeout), compared byte for byte with the same job over MPI."""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="paddle is not installed (the paddle extra)")

from mpieval.comm import Comm  # noqa: E402

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "paddle_worker.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
SECONDS = 240
SCENARIOS = "kinds,exchange,bad_input,mismatch"  # one job per size (paddle starts slowly)


def scenarios(size: int) -> str:
    return SCENARIOS + (",subgroup" if size == 3 else "") + (",loop" if size == 2 else "")


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _without_launchers() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PMI_", "PMIX_", "HYDI_", "MPI_LOCAL", "OMPI_", "PADDLE_",
                                 "MPIEVAL_NO_MPI"))
            and k != "WORLD_SIZE"}


def paddle_env(rank: int, ports: list[int]) -> dict[str, str]:
    """What ``paddle.distributed.launch --nproc_per_node N`` sets for process ``rank``
    (the master's port first, then one endpoint per process)."""
    size = len(ports) - 1
    endpoints = [f"127.0.0.1:{p}" for p in ports[1:]]
    return {**_without_launchers(), "OMP_NUM_THREADS": "1",
            "PADDLE_MASTER": f"127.0.0.1:{ports[0]}", "PADDLE_DISTRI_BACKEND": "gloo",
            "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(size),
            "PADDLE_GLOBAL_RANK": str(rank), "PADDLE_GLOBAL_SIZE": str(size),
            "PADDLE_LOCAL_RANK": str(rank), "PADDLE_LOCAL_SIZE": str(size),
            "PADDLE_RANK_IN_NODE": str(rank), "PADDLE_NNODES": "1",
            "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
            "PADDLE_CURRENT_ENDPOINT": endpoints[rank]}


@functools.lru_cache
def run(scenarios: str, size: int) -> list[dict]:
    """Start ``size`` processes of one Paddle job; every one must end in time and well."""
    ports = _free_ports(size + 1)
    procs = [subprocess.Popen([sys.executable, WORKER, scenarios, str(r), str(size)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=paddle_env(r, ports))
             for r in range(size)]
    try:
        ends = [proc.communicate(timeout=SECONDS) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    failed = [f"rank {r}: {ends[r][1][-2000:]}" for r, proc in enumerate(procs)
              if proc.returncode != 0]
    assert not failed, "\n".join(failed)
    outputs = [json.loads(out.strip().splitlines()[-1]) for out, _ in ends]
    assert [o["rank"] for o in outputs] == list(range(size))
    assert not any(o["mpi_loaded"] for o in outputs)
    return [o["result"] for o in outputs]


@functools.lru_cache
def over_mpi(size: int) -> list[dict]:
    """The ``kinds`` scenario over an MPI world of ``size`` ranks (paddle not loaded)."""
    if not os.path.exists(MPIEXEC):
        pytest.skip("no mpiexec beside this python")
    proc = subprocess.run([MPIEXEC, "-n", str(size), sys.executable, WORKER, "mpi"],
                          capture_output=True, text=True, timeout=SECONDS,
                          env={k: v for k, v in _without_launchers().items()})
    assert proc.returncode == 0, proc.stderr[-3000:]
    outputs = sorted((json.loads(line) for line in proc.stdout.splitlines()),
                     key=lambda o: o["rank"])
    assert [o["rank"] for o in outputs] == list(range(size))
    assert not any(o["paddle_loaded"] for o in outputs)
    return [o["result"]["kinds"] for o in outputs]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_every_kind_gives_the_json_of_mpi_byte_for_byte(size):
    results = [r["kinds"] for r in run(scenarios(size), size)]
    reference = over_mpi(size)
    from test_trainer import FACTORIES, KINDS, _rows, _values

    for kind in KINDS:
        assert {r[kind] for r in results} == {reference[0][kind]}, kind
        whole = FACTORIES[kind](Comm.local())  # the values of every row on one rank
        whole.update(**_rows(kind, np.random.default_rng(7)))
        assert json.loads(results[0][kind]) == _values(whole.compute()), kind


@pytest.mark.parametrize("size", [2, 3])
def test_exchange_sums_and_any_over_paddle(size):
    results = [r["exchange"] for r in run(scenarios(size), size)]
    assert all(r["any"] and not r["none"] for r in results)
    assert sum(r["rows"] for r in results) == sum(500 + 31 * r for r in range(size) if r != 1)


@pytest.mark.parametrize("size", [2, 3])
def test_bad_input_on_one_process_is_the_same_error_everywhere(size):
    results = [r["bad_input"] for r in run(scenarios(size), size)]
    last = size - 1
    assert {(r["field"], r["count"], r["first_index"]) for r in results} == {("pred", 1, 1)}
    assert results[last]["text"].startswith("pred: must be finite")
    assert all(r["text"] == f"rank {last}: " + results[last]["text"] for r in results[:last])


@pytest.mark.parametrize("size", [2, 3])
def test_metrics_in_another_order_are_one_clear_error_everywhere(size):
    results = [r["mismatch"] for r in run(scenarios(size), size)]
    assert all(r["type"] == "LayoutMismatchError" for r in results)
    assert all(f"rank {size - 1} has b:" in r["text"] for r in results)


def test_metrics_made_per_pass_share_one_transport_and_leave_none():
    assert [r["loop"] for r in run(scenarios(2), 2)] == [{"transports": 1, "after": 0}] * 2


def test_a_subgroup_computes_over_its_members():
    results = [r["subgroup"] for r in run(scenarios(3), 3)]
    assert results[0] == results[2] == {"num": 2.0, "size": 2}
    assert results[1] == {}


def test_update_takes_paddle_tensors_detached_and_without_a_copy():
    from mpieval import AucMetric, WuaucMetric
    from mpieval.validation import as_vector

    pred = paddle.rand([1000], dtype="float64")
    pred.stop_gradient = False
    label = (paddle.rand([1000]) < 0.5).astype("int64")
    read = as_vector("label", label)
    assert read.__array_interface__["data"][0] == label.data_ptr()  # its memory: no copy
    from_tensors, from_numpy = AucMetric(1000), AucMetric(1000)
    from_tensors.update(pred * 1, label)  # a result of autograd: detached
    from_numpy.update(pred.numpy(), label.numpy())
    assert from_tensors.compute() == from_numpy.compute()
    values = [0.25, 0.5, 1 / 3, 3.0e38, 1e-40]
    half = paddle.to_tensor(values, dtype="bfloat16")  # bfloat16: widened, exactly
    widened = as_vector("pred", half)
    assert widened.dtype == np.float32
    bits = half.numpy()  # numpy has no bfloat16: Paddle gives its bits as uint16
    assert bits.dtype == np.uint16
    assert widened.tolist() == (bits.astype(np.uint32) << 16).view(np.float32).tolist()
    assert widened[:2].tolist() == [0.25, 0.5]
    assert as_vector("flag", paddle.to_tensor([True, False])).dtype == np.bool_
    users = WuaucMetric()
    users.update(paddle.to_tensor([1, 1, 2, 2]), paddle.to_tensor([0.1, 0.9, 0.3, 0.2]),
                 paddle.to_tensor([0, 1, 1, 0]))
    assert users.compute().all.uauc == 1.0


def test_numpy_use_never_imports_paddle():
    code = ("import sys, numpy as np\n"
            "from mpieval import AucMetric, WuaucMetric\n"
            "m = AucMetric(10); m.update(np.array([0.2, 0.7]), np.array([0, 1])); m.compute()\n"
            "w = WuaucMetric(); w.update([1, 1], [0.2, 0.7], [0, 1]); w.compute()\n"
            "assert 'paddle' not in sys.modules, 'paddle loaded'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**_without_launchers(), "MPIEVAL_NO_MPI": "1"}, timeout=120)
    assert result.returncode == 0, result.stderr

