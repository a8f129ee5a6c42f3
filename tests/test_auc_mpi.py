"""The ``auc`` kind over the ranks of ``mpiexec -n N``: the same result as one process.

Every assertion holds for any N (1, 2, 3, ...): run as
``mpiexec -n N python -m pytest --with-mpi -m mpi``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sharding import my_rows

from mpieval import AucMetric, Comm, Evaluator, InputError, RemoteError
from mpieval.errors import UndefinedMetricWarning

pytestmark = pytest.mark.mpi

FIELDS = ("auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr", "copc")


def data(rng, n=50_000):
    pred = rng.beta(2, 9, n).astype(np.float32)
    label = (rng.random(n) < pred).astype(np.int8)
    weight = rng.integers(0, 4, n).astype(np.float64)
    return {"pred": pred, "label": label, "weight": weight}


def one_process(rows, table_size, weighted=False):
    m = AucMetric(table_size, comm=Comm.local())
    m.update(rows["pred"], rows["label"], rows["weight"] if weighted else None)
    return m


def assert_same(got, want):
    for field in FIELDS:
        a, b = getattr(got, field), getattr(want, field)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12), field
    assert got.num == want.num and got.positives == want.positives and got.rows == want.rows


@pytest.mark.parametrize("table_size", [1000, 1_000_000])
@pytest.mark.parametrize("weighted", [False, True])
def test_uneven_shards_with_an_empty_rank_equal_one_process(comm, rng, table_size, weighted):
    rows = data(rng)
    mine = my_rows(rows, comm.rank, comm.size, rng)
    if comm.size > 1 and comm.rank == 1:
        assert len(mine["pred"]) == 0
    metric = AucMetric(table_size, comm=comm)
    metric.update(mine["pred"], mine["label"], mine["weight"] if weighted else None)
    got = metric.compute()
    want = one_process(rows, table_size, weighted).compute()
    assert_same(got, want)
    # the merged table is the one-process table, count for count
    assert np.array_equal(
        comm.sum(metric.state.buffer)[: 2 * table_size],
        one_process(rows, table_size, weighted).state.buffer[: 2 * table_size],
    )


def test_results_are_identical_on_every_rank(comm, rng):
    mine = my_rows(data(rng), comm.rank, comm.size, rng)
    metric = AucMetric(comm=comm)
    metric.update(mine["pred"], mine["label"])
    line = metric.compute().to_log_line("item_sim")
    assert comm.allgather(line) == [line] * comm.size


def test_evaluator_several_metrics_one_pass(comm, rng):
    rows = data(rng, 20_000)
    mine = my_rows(rows, comm.rank, comm.size, rng)
    ev = Evaluator({"a": AucMetric(100), "b": AucMetric(10_000)}, comm=comm)
    ev["a"].update(mine["pred"], mine["label"])
    ev["b"].update(mine["pred"], mine["label"], mine["weight"])
    results = ev.compute()
    assert_same(results["a"], one_process(rows, 100).compute())
    assert_same(results["b"], one_process(rows, 10_000, weighted=True).compute())
    lines = Evaluator.log_lines(results)
    assert [line.split(":")[0] for line in lines] == ["a", "b"]
    ev.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        assert ev.compute()["a"].num == 0


def test_only_rank_zero_warns(comm):
    metric = AucMetric(100, comm=comm)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metric.compute()
    assert len(caught) == (1 if comm.rank == 0 else 0)


def test_bad_input_on_one_rank_raises_on_every_rank(comm, rng):
    metric = AucMetric(100, comm=comm)
    bad_rank = comm.size - 1
    pred = rng.random(10)
    if comm.rank == bad_rank:
        pred[7] = np.nan
        with pytest.raises(InputError):
            metric.update(pred, np.zeros(10))
    else:
        metric.update(pred, np.zeros(10))
    with pytest.raises(InputError) as info:
        metric.compute()  # must not hang: every rank agrees on the error first
    assert (info.value.field, info.value.first_index) == ("pred", 7)
    metric.reset()
    metric.update(rng.random(10), rng.integers(0, 2, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        assert metric.compute().rows == 10 * comm.size  # usable again after reset


def test_other_errors_are_agreed_too(comm):
    error = ZeroDivisionError("boom") if comm.rank == 0 else None
    with pytest.raises((ZeroDivisionError, RemoteError), match="boom"):
        comm.agree(error)


def test_trainer_sub_communicator(comm, rng):
    mpi = pytest.importorskip("mpi4py.MPI")
    world = mpi.COMM_WORLD
    color = world.Get_rank() % 2
    sub = world.Split(color, world.Get_rank())
    try:
        rows = data(rng, 5000)
        members = [r for r in range(world.Get_size()) if r % 2 == color]
        mine = my_rows(rows, members.index(world.Get_rank()), len(members), rng)
        metric = AucMetric(1000, comm=sub)
        metric.update(mine["pred"], mine["label"])
        assert_same(metric.compute(), one_process(rows, 1000).compute())
        metric.comm.close()
    finally:
        sub.Free()
