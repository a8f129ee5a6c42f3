"""The ``pn`` kind across ranks: users scattered over every rank (and an empty rank) give
the brute-force counts in every tie mode, and the counts of one process on a larger set.
The assertions hold for any ``comm.size`` (bad input on one rank: test_kinds_common.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle_pairs import pn_totals
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import UndefinedMetricWarning
from mpieval.kinds.pn import TIES_MODES
from mpieval.kinds.pn.kernels import pair_counts
from mpieval.kinds.pn.metric import PnMetric

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


@pytest.mark.parametrize("scatter", [True, False])
def test_a_heavy_user_gives_the_brute_force_counts(
    comm: Comm, rng: np.random.Generator, scatter: bool
) -> None:
    """One user with a third of the rows (the kernel's one-sort pass for long users) on
    every rank, uneven shards, an empty rank, binary and graded labels."""
    rows = rows_for(rng, 1800, 80, 40)
    rows["uid"][rng.random(1800) < 1 / 3] = 10**12
    rows["label"][rows["uid"] == 10**12] %= 2
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    metric = PnMetric(ties="half", comm=comm)
    metric.update(mine["uid"], mine["pred"], mine["label"])
    got = computed(metric)
    got.pop("ties")
    assert got == pn_totals(rows["uid"], rows["pred"], rows["label"], "half")


@pytest.mark.parametrize("scatter", [True, False])
def test_ranks_keeping_labels_and_preds_of_other_widths_agree(
    comm: Comm, rng: np.random.Generator, scatter: bool
) -> None:
    """Graded labels and float32 preds (kept as float32) on some ranks, dwell times and
    float64 preds (float64) on others, and string uids: each move and compute widen the
    columns alike, the counts are brute force's, and moves after a compute too."""
    rows = rows_for(rng, 1500, 60, 6)
    real = rng.random(1500) < 0.5
    rows["label"][real] += rng.random(int(real.sum())) / 3
    rows["pred"] = rows["pred"].astype(np.float32).astype(np.float64)
    rows["pred"][real] += 2.0**-40  # no float32 value
    rows["uid"] = np.array([f"user-{u}" for u in rows["uid"]])
    rows["real"] = real
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    narrow = comm.rank != comm.size - 1  # this rank's rows: graded labels, float32 preds
    keep = ~mine["real"] if narrow else np.ones(len(mine["uid"]), bool)
    metric = PnMetric(comm=comm)
    metric.update(mine["uid"][keep], mine["pred"][keep].astype(np.float32) if narrow
                  else mine["pred"][keep], mine["label"][keep])
    wide = np.float64 if any(comm.allgather(bool(mine["real"][keep].any()))) else np.float32
    metric.move_rows(comm)
    assert metric.state.rows("rows").dtypes["label"] == wide  # every rank's, once moved
    taken = comm.allgather((mine["uid"][keep].tolist(), mine["pred"][keep].tolist(),
                            mine["label"][keep].tolist()))
    uid = [u for part in taken for u in part[0]]
    pred = [p for part in taken for p in part[1]]
    label = [y for part in taken for y in part[2]]
    got = computed(metric)
    got.pop("ties")
    assert got == pn_totals(uid, pred, label)


def test_a_heavy_users_owner_keeps_its_light_users(comm: Comm, rng: np.random.Generator) -> None:
    """The owner of a user with most rows hands no user over at compute for ``pn`` (its
    pass is cheap a row: handing users over made a heavy user's job slower), as it does
    for ``wuauc`` (``user_rows._shed``): ``pn``'s rows stay with their users' owners, and
    count as brute force does."""
    from mpieval import WuaucMetric
    from mpieval.kernels.keys import owner_of

    rows = rows_for(rng, 3000, 200, 20)
    rows["uid"][rng.random(3000) < 0.6] = 10**12
    rows["label"] %= 2
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    pairs = PnMetric(comm=comm)
    pairs.update(mine["uid"], mine["pred"], mine["label"])
    got = computed(pairs)
    got.pop("ties")
    assert got == pn_totals(rows["uid"], rows["pred"], rows["label"])
    kept = pairs.state.rows("rows").columns()["key"]
    assert (owner_of(kept, comm.size) == comm.rank).all()
    users = WuaucMetric(comm=comm)
    users.update(mine["uid"], mine["pred"], mine["label"])
    users.compute()
    held = users.state.rows("rows").columns()["key"]
    away = comm.allgather(int((owner_of(held, comm.size) != comm.rank).sum()))
    assert (sum(away) > 0) == (comm.size > 1)
