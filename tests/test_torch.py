"""torch.distributed as mpieval's transport: real gloo process groups of 1, 2 and 3
processes started here (each with a timeout), compared with the MPI path at one rank."""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_trainer import KINDS, _make, _rows  # noqa: E402

from mpieval.comm import Comm  # noqa: E402
from mpieval.errors import UndefinedMetricWarning  # noqa: E402

WORKER = os.path.join(os.path.dirname(__file__), "torch_worker.py")
SECONDS = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scenarios(size: int) -> str:
    """One job per size, every scenario of that size in turn on its group (each start of a
    torch process takes seconds)."""
    if size == 1:
        return "kinds"
    return ("kinds,exchange,bad_input,mismatch,sliced,many_tags"
            + (",subgroup" if size == 3 else ",loop"))


class _PortTaken(Exception):
    """The group's port was taken by another process between its choice and its use."""


@functools.lru_cache
def run(scenarios: str, size: int) -> list[dict]:
    """Start ``size`` processes of one gloo group; every one must end in time and well.
    A port taken meanwhile by another process (``EADDRINUSE``: the free port is found
    before rank 0 listens on it) is no failure of the group: it starts again on another."""
    for _ in range(3):
        try:
            outputs = _run_once(scenarios, size, _free_port())
            break
        except _PortTaken:
            continue
    else:
        pytest.fail("three ports in a row were taken before the group could use them")
    assert [o["rank"] for o in outputs] == list(range(size))
    assert not any(o["mpi_loaded"] for o in outputs)
    return [o["result"] for o in outputs]


def _run_once(scenarios: str, size: int, port: int) -> list[dict]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDI_", "MPI_LOCAL", "OMPI_"))}
    env["OMP_NUM_THREADS"] = "1"
    # each process writes to files, not pipes: a process whose output fills a pipe that
    # is not being read would block, and its peers wait for it in a collective
    files = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(size)]
    procs = [subprocess.Popen([sys.executable, WORKER, scenarios, str(r), str(size), str(port)],
                              stdout=out, stderr=err, text=True, env=env)
             for r, (out, err) in enumerate(files)]
    outputs = []
    try:
        for proc, (out, err) in zip(procs, files, strict=True):
            proc.wait(timeout=SECONDS)
            out.seek(0)
            err.seek(0)
            errors = err.read()
            if proc.returncode != 0 and "EADDRINUSE" in errors:
                raise _PortTaken
            assert proc.returncode == 0, errors[-3000:]
            outputs.append(json.loads(out.read().strip().splitlines()[-1]))
    finally:
        for proc, (out, err) in zip(procs, files, strict=True):
            proc.kill()
            proc.wait()
            out.close()
            err.close()
    return outputs


@pytest.mark.parametrize("size", [1, 2, 3])
def test_every_kind_over_gloo_gives_the_one_rank_numbers(size):
    results = [r["kinds"] for r in run(scenarios(size), size)]
    for kind in KINDS:
        reference = _make(kind, Comm.local())
        reference.update(**_rows(kind, np.random.default_rng(7)))
        expected = reference.compute().to_dict()
        for got in results:
            assert _close(got[kind], json.loads(json.dumps(expected))), kind


def _close(got: object, expected: object) -> bool:
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys()
        return all(_close(got[k], expected[k]) for k in expected)
    if isinstance(expected, list):  # curves and intervals
        return (isinstance(got, list) and len(got) == len(expected)
                and all(_close(g, e) for g, e in zip(got, expected, strict=True)))
    if isinstance(expected, float) and got is not None:
        return got == pytest.approx(expected, rel=1e-12, nan_ok=True)
    return got == expected


@pytest.mark.parametrize("size", [2, 3])
def test_slices_of_the_per_user_kinds_over_gloo_give_the_one_rank_numbers(size):
    """Each slice computed whole on one process: its rows' states and the results travel
    over gloo (``SlicedMetric._computed_whole``)."""
    from test_trainer import per_user_kinds, sliced_part

    results = [r["sliced"] for r in run(scenarios(size), size)]
    for kind in per_user_kinds():
        reference = sliced_part(kind, 0, 1, Comm.local())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = json.loads(json.dumps(reference.compute().to_dict()))
        assert sum("too_small" not in block for block in expected["slices"].values()) > 10
        for got in results:
            assert _close(got[kind], expected), kind


@pytest.mark.parametrize("size", [2, 3])
def test_many_tags_over_gloo_give_the_one_rank_bits(size):
    """1,500 tags: each tag's pairs summed by its owner process over gloo, then every
    owner's floats to every process; the JSON of one process, bit for bit."""
    from test_trainer import many_tags_part

    expected = json.loads(json.dumps(many_tags_part(0, 1, Comm.local())))
    assert len(expected["wuauc"]["tags"]) > 1000
    for got in (r["many_tags"] for r in run(scenarios(size), size)):
        assert got == expected


@pytest.mark.parametrize("size", [2, 3])
def test_exchange_and_any_over_gloo(size):
    results = [r["exchange"] for r in run(scenarios(size), size)]
    assert all(r["any"] for r in results)
    assert results[1]["rows"] >= 0


def test_a_subgroup_computes_over_its_members():
    results = [r["subgroup"] for r in run(scenarios(3), 3)]
    assert results[0] == results[2] == {"num": 2.0, "size": 2}
    assert results[1] == {}


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


@pytest.mark.timeout(600)
def test_ten_thousand_metrics_on_the_default_group():
    assert [r["loop"] for r in run(scenarios(2), 2)] == [{"transports": 1, "after": 0}] * 2


def test_update_takes_tensors_detached_and_without_a_copy():
    from mpieval import AucMetric, WuaucMetric
    from mpieval.validation import as_vector

    pred = torch.rand(1000, dtype=torch.float64, requires_grad=True)
    label = (torch.rand(1000) < 0.5).to(torch.int64)
    assert np.shares_memory(as_vector("label", label), label.numpy())
    from_tensors, from_numpy = AucMetric(table_size=1000), AucMetric(table_size=1000)
    from_tensors.update(pred * 1, label)  # a result of autograd: detached
    from_numpy.update(pred.detach().numpy(), label.numpy())
    assert from_tensors.compute() == from_numpy.compute()
    half = torch.tensor([0.25, 0.5], dtype=torch.bfloat16)
    assert as_vector("pred", half).tolist() == [0.25, 0.5]
    users = WuaucMetric()
    users.update(torch.tensor([1, 1, 2, 2]), torch.tensor([0.1, 0.9, 0.3, 0.2]),
                 torch.tensor([0, 1, 1, 0]))
    with pytest.warns(UndefinedMetricWarning, match="needs 10 valid users"):
        assert users.compute().all.uauc == 1.0  # two users: no interval
