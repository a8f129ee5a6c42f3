"""The ``ranking`` kind across ranks: each user's rows split over the ranks (uneven shards,
rank 1 with no rows) give the result of one process bit for bit, on every rank (every
value, both gains, a compared model's differences, p- and q-values); states saved on N
ranks load on any number of ranks with the same bits. The assertions hold for any
``comm.size``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sharding import my_rows

from mpieval import RankingMetric
from mpieval.comm import Comm
from mpieval.errors import UndefinedMetricWarning

pytestmark = pytest.mark.mpi


def dataset(rng: np.random.Generator, n: int, uid_kind: str,
            pred_kind: str = "float64") -> dict[str, np.ndarray]:
    """Users of about 40 rows, long ties of preds, real-valued labels (some users with none
    relevant), three tags."""
    uid = rng.integers(0, max(1, n // 40), n)
    pred = np.where(rng.random(n) < 0.5, rng.integers(0, 3, n) / 2, rng.random(n))
    return {
        "uid": np.char.add("user-", uid.astype(str)) if uid_kind == "str" else uid * 7919,
        "pred": pred.astype(np.float32) if pred_kind == "float32" else pred,
        # gains whose sums round: a tie's mean gain depends on the order it is summed in
        "label": np.where(rng.random(n) < 0.4, 0.0, rng.choice([0.1, 0.3, 0.7, 2.2], n)),
        "tag": rng.choice(np.array(["feed", "search", "video"]), n),
        "compare": np.where(rng.random(n) < 0.5, rng.integers(0, 4, n) / 3,
                            rng.random(n)).astype(np.float32 if pred_kind == "float32"
                                                  else np.float64),
    }


def fed(comm: Comm, rows: dict[str, np.ndarray], batches: int = 3, k=(1, 5, 20),
        gain: str = "linear", compare: bool = False) -> RankingMetric:
    metric = RankingMetric(comm=comm, k=k, gain=gain, compare="b" if compare else None)
    for part in np.array_split(np.arange(len(rows["uid"])), batches):
        metric.update(rows["uid"][part], rows["pred"][part], rows["label"][part],
                      rows["tag"][part], compare=rows["compare"][part] if compare else None)
    return metric


def result(metric: RankingMetric) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()


@pytest.mark.parametrize("pred_kind", ["float32", "float64"])
@pytest.mark.parametrize("uid_kind", ["int", "str"])
@pytest.mark.parametrize("scatter", [True, False])
@pytest.mark.parametrize("gain, compare", [("linear", False), ("exponential", True)])
def test_split_users_give_the_bits_of_one_process(comm: Comm, rng: np.random.Generator,
                                                  uid_kind: str, scatter: bool,
                                                  pred_kind: str, gain: str,
                                                  compare: bool) -> None:
    rows = dataset(rng, 5000, uid_kind, pred_kind)
    want = result(fed(Comm.local(), rows, batches=1, gain=gain, compare=compare))
    assert ("compare" in want["tags"]["feed"]) == compare
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    if comm.size > 1 and comm.rank == 1:
        assert len(mine["uid"]) == 0
    got = result(fed(comm, mine, gain=gain, compare=compare))
    assert got == want  # the same bits: floats compared exactly
    assert all(other == got for other in comm.allgather(got))
    assert got["tags"]["all"]["real_ins_num"] == len(rows["uid"])


def test_states_saved_on_n_ranks_load_on_any_number(comm: Comm,
                                                    rng: np.random.Generator) -> None:
    """N = 1 .. 4 saved states (each a process's shard) load on this job's comm.size
    ranks, each rank taking every size-th state: the bits of one process."""
    rows = dataset(rng, 3000, "str")
    want = result(fed(Comm.local(), rows, batches=1))
    for saved_ranks in (1, 2, 3, 4):
        seed = int(rng.integers(2**32))  # one draw of each row's owner for every part
        states = [fed(Comm.local(), my_rows(rows, r, saved_ranks, np.random.default_rng(seed),
                                            scatter=True)).state_dict()
                  for r in range(saved_ranks)]
        metric = RankingMetric(comm=comm, k=(1, 5, 20))
        metric.load_state_dicts(states[comm.rank :: comm.size])
        assert result(metric) == want, saved_ranks


def test_no_rows_on_any_rank_is_undefined_everywhere(comm: Comm) -> None:
    metric = RankingMetric(comm=comm)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        got = metric.compute().to_dict()
    assert got["tags"]["all"]["ndcg"] is None
    assert got["tags"]["all"]["real_ins_num"] == 0
    warned = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(warned) == (1 if comm.rank == 0 else 0)


def test_many_tags_give_the_bits_of_one_process(comm: Comm, rng: np.random.Generator) -> None:
    """1,500 tags (per-tag sums made as pairs: ``exact.PAIRS_FROM``), with a compared model:
    the ranks' pairs, made into digits and summed, give the floats one process rounds from
    its pairs, bit for bit."""
    rows = dataset(rng, 8000, "int")
    rows["tag"] = np.char.add("t", rng.integers(0, 1500, 8000).astype(str))
    want = result(fed(Comm.local(), rows, batches=1, compare=True))
    assert len(want["tags"]) > 1000
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    got = result(fed(comm, mine, compare=True))
    assert got == want
    assert all(other == got for other in comm.allgather(got))
