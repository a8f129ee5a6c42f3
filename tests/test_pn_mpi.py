"""The ``pn`` kind across ranks: users scattered over every rank (and an empty rank)
give the counts of one process; bad input on one rank fails every rank. The assertions
hold for any ``comm.size``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle_pairs import pn_totals
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kernels.pn import pair_counts
from mpieval.metrics.pn import TIES_MODES, PnMetric

pytestmark = pytest.mark.mpi


def rows_for(rng: np.random.Generator, n: int, users: int, preds: int) -> dict[str, np.ndarray]:
    return {
        "uid": rng.integers(0, users, size=n),
        "pred": rng.integers(0, preds, size=n) / preds,
        "label": rng.integers(0, 4, size=n).astype(np.float64),
    }


def computed(metric: PnMetric) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()


@pytest.mark.parametrize("ties", TIES_MODES)
@pytest.mark.parametrize("scatter", [True, False])
def test_scattered_users_give_the_brute_force_counts(
    comm: Comm, rng: np.random.Generator, ties: str, scatter: bool
) -> None:
    rows = rows_for(rng, 1500, 60, 6)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    metric = PnMetric(ties=ties, comm=comm)
    half = len(mine["uid"]) // 2
    metric.update(mine["uid"][:half], mine["pred"][:half], mine["label"][:half])
    metric.update(mine["uid"][half:], mine["pred"][half:], mine["label"][half:])
    got = computed(metric)
    assert got.pop("ties") == ties
    assert got == pn_totals(rows["uid"], rows["pred"], rows["label"], ties)
    assert got["ins_number"] == 1500


def test_same_counts_as_one_process_on_a_larger_set(comm: Comm, rng: np.random.Generator) -> None:
    """A bigger set than brute force can take: the one-process kernel on all rows."""
    rows = rows_for(rng, 60_000, 3000, 50)
    rows["uid"] = np.array([f"user-{u}" for u in rows["uid"]])
    order = np.argsort(rows["uid"], kind="stable")
    _, first = np.unique(rows["uid"][order], return_index=True)
    positive, negative, tie = pair_counts(
        np.append(first, len(order)), rows["pred"][order], rows["label"][order]
    )
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric = PnMetric(comm=comm)
    metric.update(mine["uid"], mine["pred"], mine["label"])
    got = computed(metric)
    assert (got["positive_pairs"], got["negative_pairs"], got["tie_pairs"]) == (
        positive, negative + tie, tie,
    )
    assert got["ins_number"] == 60_000


def test_every_rank_gets_the_same_result(comm: Comm, rng: np.random.Generator) -> None:
    rows = rows_for(rng, 2000, 100, 20)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric = PnMetric(ties="half", comm=comm)
    metric.update(mine["uid"], mine["pred"], mine["label"])
    result = metric.compute()
    assert comm.allgather(result) == [result] * comm.size
    lines = comm.allgather(result.to_log_line("pn"))
    assert lines == [lines[0]] * comm.size


def test_bad_input_on_one_rank_fails_every_rank(comm: Comm) -> None:
    metric = PnMetric(comm=comm)
    metric.update([comm.rank, comm.rank], [0.1, 0.2], [0, 1])
    if comm.rank == comm.size - 1:
        with pytest.raises(InputError):
            metric.update([1, 2, 3], [0.5, np.nan, np.nan], [0, 1, 1])
    with pytest.raises(InputError) as info:
        metric.compute()
    assert (info.value.field, info.value.count, info.value.first_index) == ("pred", 2, 1)
    metric.reset()  # a reset clears the error on every rank; the next compute works
    metric.update([0], [0.5], [1])
    assert computed(metric)["ins_number"] == comm.size


def test_pair_kinds_in_one_evaluator(comm: Comm, rng: np.random.Generator) -> None:
    """pn's exchange runs inside the Evaluator's single compute, beside a summable kind."""
    from mpieval import Evaluator, PairwiseMetric

    rows = rows_for(rng, 3000, 150, 8)
    rows["left"] = rng.integers(0, 2, size=3000)
    rows["right"] = rng.integers(0, 2, size=3000)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    evaluator = Evaluator(
        {"res_pn": PnMetric(ties="half", comm=comm), "click_ins_ratio": PairwiseMetric(comm=comm)},
        comm=comm,
    )
    evaluator["res_pn"].update(mine["uid"], mine["pred"], mine["label"])
    evaluator["click_ins_ratio"].update(mine["left"], mine["right"])
    results = evaluator.compute()
    got = results["res_pn"].to_dict()
    got.pop("ties")
    assert got == pn_totals(rows["uid"], rows["pred"], rows["label"], "half")
    assert results["click_ins_ratio"].ins == 3000
    lines = Evaluator.log_lines(results)
    assert lines[0].startswith("res_pn: Average_PN=") and " negative_paris=" in lines[0]
    assert lines[1].startswith("click_ins_ratio: Ins=3000 Same_label_click=")
