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
import tempfile
import warnings
from typing import IO

import numpy as np
import pytest

paddle = pytest.importorskip("paddle", reason="paddle is not installed (the paddle extra)")

from mpieval.comm import Comm  # noqa: E402
from mpieval.errors import UndefinedMetricWarning  # noqa: E402

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "paddle_worker.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
SECONDS = 240
SCENARIOS = "kinds,exchange,bad_input,mismatch,sliced,many_tags"  # one job a size (slow starts)


def scenarios(size: int) -> str:
    return SCENARIOS + (",subgroup" if size == 3 else "") + (",loop,late" if size == 2 else "")


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


def _result(out: str) -> dict:
    """The worker's marked result line (Paddle may write to the same stdout around it)."""
    text = out[out.rindex("mpieval-result: ") + len("mpieval-result: "):]
    value, _ = json.JSONDecoder().raw_decode(text)
    return value


Job = list[tuple[subprocess.Popen, IO[str], IO[str]]]  # each process, its stdout, stderr
_started: dict[tuple[str, int], Job] = {}


def start(names: str, size: int) -> None:
    """Start ``size`` processes of one Paddle job (once), to be collected by :func:`run`.
    Their output goes to files, not pipes: a process of a job started ahead must never
    wait to write while its peers time out in a collective."""
    if (names, size) not in _started:
        ports = _free_ports(size + 1)
        job = []
        for r in range(size):
            out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            job.append((subprocess.Popen([sys.executable, WORKER, names, str(r), str(size)],
                                         stdout=out, stderr=err, env=paddle_env(r, ports)),
                        out, err))
        _started[names, size] = job


@pytest.fixture(scope="module", autouse=True)
def _no_job_left_running():
    """A job started ahead and never collected (its tests deselected) is ended."""
    yield
    for job in _started.values():
        for proc, out, err in job:
            proc.kill()
            proc.wait()
            out.close()
            err.close()


@functools.lru_cache
def run(names: str, size: int) -> list[dict]:
    """The processes of one Paddle job; every one must end in time and well. The job of 2
    waits 35 s in its ``late`` scenario: the job of 3 is started beside it."""
    start(names, size)
    if size == 2:
        start(scenarios(3), 3)
    job = _started.pop((names, size))
    procs = [proc for proc, _, _ in job]
    try:
        for proc in procs:
            proc.wait(timeout=SECONDS)
        ends = []
        for _, out, err in job:
            out.seek(0)
            err.seek(0)
            ends.append((out.read(), err.read()))
    finally:
        for proc, out, err in job:
            proc.kill()
            out.close()
            err.close()
    failed = [f"rank {r}: {ends[r][1][-2000:]}" for r, proc in enumerate(procs)
              if proc.returncode != 0]
    assert not failed, "\n".join(failed)
    outputs = [_result(out) for out, _ in ends]
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
    output = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not output["paddle_loaded"]
    assert len(output["results"]) == size
    return output["results"]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_every_kind_gives_the_json_of_mpi_byte_for_byte(size):
    results = [r["kinds"] for r in run(scenarios(size), size)]
    reference = over_mpi(size)
    from test_trainer import KINDS, _make, _rows, _values

    for kind in KINDS:
        assert {r[kind] for r in results} == {reference[0][kind]}, kind
        whole = _make(kind, Comm.local())  # the values of every row on one rank
        whole.update(**_rows(kind, np.random.default_rng(7)))
        assert json.loads(results[0][kind]) == _values(whole.compute()), kind


@pytest.mark.parametrize("size", [2, 3])
def test_slices_of_the_per_user_kinds_over_paddle_give_the_one_rank_json(size):
    """Each slice computed whole on one process: its rows' states and the results travel
    over Paddle's collectives; the JSON is one process's, byte for byte."""
    from test_trainer import per_user_kinds, sliced_part

    results = [r["sliced"] for r in run(scenarios(size), size)]
    for kind in per_user_kinds():
        whole = sliced_part(kind, 0, 1, Comm.local())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = json.dumps(whole.compute().to_dict())
        assert {r[kind] for r in results} == {expected}, kind


@pytest.mark.parametrize("size", [2, 3])
def test_many_tags_over_paddle_give_the_one_rank_bits(size):
    """1,500 tags: each tag's pairs summed by its owner process over Paddle's group; the
    JSON of one process, bit for bit."""
    from test_trainer import many_tags_part

    expected = json.loads(json.dumps(many_tags_part(0, 1, Comm.local())))
    for got in (r["many_tags"] for r in run(scenarios(size), size)):
        assert got == expected


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


def test_a_process_late_to_compute_beyond_gloos_timeout_is_waited_for():
    assert [r["late"] for r in run(scenarios(2), 2)] == [{"num": 4.0}] * 2


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
    from_tensors, from_numpy = AucMetric(table_size=1000), AucMetric(table_size=1000)
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
    with pytest.warns(UndefinedMetricWarning, match="needs 10 valid users"):
        assert users.compute().all.uauc == 1.0  # two users: no interval


def test_numpy_use_never_imports_paddle():
    code = ("import sys, numpy as np\n"
            "from mpieval import AucMetric, WuaucMetric\n"
            "m = AucMetric(table_size=10)\n"
            "m.update(np.array([0.2, 0.7]), np.array([0, 1])); m.compute()\n"
            "w = WuaucMetric(); w.update([1, 1], [0.2, 0.7], [0, 1]); w.compute()\n"
            "assert 'paddle' not in sys.modules, 'paddle loaded'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**_without_launchers(), "MPIEVAL_NO_MPI": "1"}, timeout=120)
    assert result.returncode == 0, result.stderr



# -- the example trainer, and mpieval beside Paddle's own metrics --------------------------

EXAMPLE = os.path.join(os.path.dirname(HERE), "scripts", "example_paddle_trainer.py")
ABACUS_LINE = ("pass ", "ctr: ", "user: ")


def _launch(n: int, log_dir: str, *args: str) -> str:
    """The example under ``paddle.distributed.launch`` on ``n`` processes; rank 0's lines."""
    env = {**_without_launchers(), "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.path.dirname(HERE)}
    result = subprocess.run([sys.executable, "-m", "paddle.distributed.launch",
                             "--nproc_per_node", str(n), "--log_dir", log_dir, EXAMPLE, *args],
                            capture_output=True, text=True, env=env, timeout=SECONDS)
    logs = {name: open(os.path.join(log_dir, name)).read() for name in os.listdir(log_dir)
            if name.startswith("workerlog.")}
    assert result.returncode == 0, result.stderr[-2000:] + "".join(logs.values())[-3000:]
    return "".join(line for line in logs["workerlog.0"].splitlines(keepends=True)
                   if line.startswith(ABACUS_LINE))


@pytest.mark.timeout(3 * SECONDS)
def test_the_example_resumes_on_another_number_of_processes_as_if_never_stopped(tmp_path):
    whole = _launch(2, str(tmp_path / "whole"))
    assert whole.count("pass ") == 2 and "ctr: auc=" in whole and "num=2400 " in whole
    assert "user: Tag=all WUAUC=" in whole and "RealInsNum=2400 " in whole
    saved = str(tmp_path / "checkpoint")
    first = _launch(2, str(tmp_path / "first"), "--checkpoint", saved, "--stop-after", "1:4")
    rest = _launch(1, str(tmp_path / "rest"), "--checkpoint", saved)
    assert first.count("pass ") == 1
    assert first + rest == whole


def _clicks(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Users, preds (in [0, 1), ties on a coarse grid and spread ones) and clicks."""
    rng = np.random.default_rng(seed)
    uid = rng.integers(0, 50, n)
    pred = np.where(rng.random(n) < 0.5, rng.integers(0, 40, n) / 40, rng.random(n))
    click = (rng.random(n) < 0.2 + 0.6 * pred).astype(np.int64)
    return uid, pred, click


@pytest.mark.parametrize("table_size", [1000, 4096])
def test_auc_equals_paddle_metric_auc_with_as_many_thresholds_as_buckets(table_size):
    """Paddle's ``Auc(num_thresholds=K)`` puts a pred in bucket ``int(pred * K)`` of
    ``K + 1``; mpieval's table of ``T`` buckets in ``min(int(pred * T), T - 1)``. For
    preds below 1 they are the same buckets at ``K = T`` (the extra one holds only
    pred == 1), so the same AUC; ``K = T - 1`` has ``T`` buckets, of another width.
    (float64 preds: Paddle multiplies in the pred's dtype, mpieval always in float64, so
    a float32 pred near a bucket's edge may fall on the other side.)"""
    from mpieval import AucMetric

    _, pred, click = _clicks(20_000, 3)
    ours = AucMetric(table_size=table_size, comm=Comm.local())
    ours.update(pred, click)
    auc = ours.compute().auc

    def paddle_auc(thresholds: int) -> float:
        theirs = paddle.metric.Auc(num_thresholds=thresholds)
        theirs.update(np.stack([1 - pred, pred], axis=1), click.reshape(-1, 1))
        return theirs.accumulate()

    assert paddle_auc(table_size) == pytest.approx(auc, rel=1e-12)
    assert paddle_auc(table_size - 1) != pytest.approx(auc, rel=1e-9)


def test_per_process_wuauc_differs_from_the_exact_one():
    """Rows of the same users split over two trainers, each computing alone (what a
    per-process calculator gives): users counted twice, other values; mpieval over
    both halves (here their merged states: the job's result) is the value of all rows."""
    from mpieval import WuaucMetric

    uid, pred, click = _clicks(4_000, 5)
    halves = [slice(0, None, 2), slice(1, None, 2)]  # every user's rows on both trainers
    alone = []
    for half in halves:
        metric = WuaucMetric(comm=Comm.local())
        metric.update(uid[half], pred[half], click[half])
        alone.append(metric.compute().all)
    merged = WuaucMetric(comm=Comm.local())
    parts = []
    for half in halves:
        part = WuaucMetric(comm=Comm.local())
        part.update(uid[half], pred[half], click[half])
        parts.append(part.state_dict())
    merged.load_state_dicts(parts)
    exact = WuaucMetric(comm=Comm.local())
    exact.update(uid, pred, click)
    whole, job = exact.compute().all, merged.compute().all
    assert job == whole
    assert sum(a.real_user_count for a in alone) == 2 * whole.real_user_count
    assert all(a.uauc != pytest.approx(whole.uauc, abs=1e-4) for a in alone)
    assert all(a.wuauc != pytest.approx(whole.wuauc, abs=1e-4) for a in alone)
