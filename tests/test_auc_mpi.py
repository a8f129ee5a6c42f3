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
from undefined import warns_undefined

from mpieval import AucMetric, Comm, Evaluator, RemoteError
from mpieval.errors import UndefinedMetricWarning

pytestmark = pytest.mark.mpi

FIELDS = ("auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr", "copc")


def data(rng, n=50_000):
    pred = rng.beta(2, 9, n).astype(np.float32)
    label = (rng.random(n) < pred).astype(np.int8)
    weight = rng.integers(0, 4, n).astype(np.float64)
    return {"pred": pred, "label": label, "weight": weight}


def one_process(rows, table_size, weighted=False):
    """The result of one process over every row (the reference: its warnings are not the
    point)."""
    m = AucMetric(table_size=table_size, comm=Comm.local())
    m.update(rows["pred"], rows["label"], rows["weight"] if weighted else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return m.compute()


def assert_same(got, want):
    for field in FIELDS:
        a, b = getattr(got, field), getattr(want, field)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12), field
    assert got.num == want.num and got.positives == want.positives and got.rows == want.rows


def test_evaluator_several_metrics_one_pass(comm, rng):
    rows = data(rng, 20_000)
    mine = my_rows(rows, comm.rank, comm.size, rng)
    ev = Evaluator({"a": AucMetric(table_size=100), "b": AucMetric(table_size=10_000)}, comm=comm)
    ev["a"].update(mine["pred"], mine["label"])
    ev["b"].update(mine["pred"], mine["label"], mine["weight"])
    with warns_undefined(comm, match="bucket_error is undefined"):  # few rows a bucket
        results = ev.compute()
    assert_same(results["a"], one_process(rows, 100))
    assert_same(results["b"], one_process(rows, 10_000, weighted=True))
    lines = Evaluator.log_lines(results)
    assert [line.split(":")[0] for line in lines] == ["a", "b"]
    ev.reset()
    with warns_undefined(comm, match="no rows"):
        assert ev.compute()["a"].num == 0


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
        metric = AucMetric(table_size=1000, comm=sub)
        metric.update(mine["pred"], mine["label"])
        with warns_undefined(metric.comm, match="bucket_error is undefined"):
            result = metric.compute()
        assert_same(result, one_process(rows, 1000))
        metric.comm.close()
    finally:
        sub.Free()
