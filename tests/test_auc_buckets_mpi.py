"""The ``auc`` kind's lift and recalibrated NE over the ranks of ``mpiexec -n N``: the same
bits as one process (uneven shards, rank 1 empty). Holds for any N."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sharding import my_rows
from test_auc_buckets import computed, rows

from mpieval import AucMetric, Comm
from mpieval.errors import UndefinedMetricWarning

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scatter", [False, True])
def test_lift_and_ne_recalibrated_on_any_ranks(comm, rng, weighted, scatter):
    pred, label = rows(rng, 20_000)
    weight = rng.integers(0, 4, len(pred)).astype(np.float64) if weighted else None
    arrays = {"pred": pred, "label": label, **({} if weight is None else {"weight": weight})}
    mine = my_rows(arrays, comm.rank, comm.size, rng, scatter=scatter)
    metric = AucMetric(comm=comm, table_size=100_000)
    metric.update(mine["pred"], mine["label"], mine.get("weight"))
    with warnings.catch_warnings():  # bucket_error: undefined on few rows a bucket
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = metric.compute().to_dict()
    want = computed(pred, label, weight, 100_000).to_dict()
    assert got["lift"] == want["lift"]
    assert got["ne_recalibrated"] == want["ne_recalibrated"]
    assert got["ci95"]["ne_recalibrated"] == want["ci95"]["ne_recalibrated"]


def test_ne_recalibrated_diff_on_any_ranks(comm, rng):
    pred, label = rows(rng, 20_000)
    pred_b = np.clip(pred + rng.normal(scale=0.05, size=len(pred)), 0, 1)
    mine = my_rows({"pred": pred, "label": label, "b": pred_b}, comm.rank, comm.size, rng,
                   scatter=True)
    metric = AucMetric(comm=comm, table_size=100_000, compare="b")
    metric.update(mine["pred"], mine["label"], compare=mine["b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = metric.compute().to_dict()["compare"]
    one = AucMetric(comm=Comm.local(), table_size=100_000, compare="b")
    one.update(pred, label, compare=pred_b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = one.compute().to_dict()["compare"]
    for name in ("ne_recalibrated", "lift", "ne_recalibrated_diff", "ne_recalibrated_diff_ci95",
                 "ne_recalibrated_diff_p"):
        assert got[name] == want[name], name
    assert got["ne_recalibrated_diff_ci95"] is not None
