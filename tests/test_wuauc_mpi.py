"""The ``wuauc`` kind across ranks: each user's rows scattered over the ranks (and one rank
with no rows) give exactly the counts and, to 1e-12, the values of one process, whatever
the uid and pred types; ranks that disagree on uid or tag types, or a uid collision, fail
every rank. The assertions hold for any ``comm.size`` (bad input on one rank, no rows
anywhere: test_kinds_common.py)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sharding import my_rows
from test_wuauc import assert_same, rows_for, with_heavy_batches

from mpieval import Evaluator
from mpieval.comm import Comm, RemoteError
from mpieval.errors import InputError, UidCollisionError, UndefinedMetricWarning
from mpieval.kinds.auc.metric import AucMetric
from mpieval.kinds.pn.metric import PnMetric
from mpieval.kinds.wuauc.metric import WuaucMetric

pytestmark = pytest.mark.mpi


def one_process(rows: dict[str, np.ndarray], **kwargs) -> dict:
    metric = WuaucMetric(comm=Comm.local(), **kwargs)
    keys = {"position": rows["position"]} if "position" in rows else None
    metric.update(rows["uid"], rows["pred"], rows["label"], rows.get("tag"), keys=keys)
    return quiet(metric).to_dict()


def on_every_rank(comm: Comm, mine: dict[str, np.ndarray], batches: int = 3, **kwargs) -> dict:
    metric = WuaucMetric(comm=comm, **kwargs)
    for part in np.array_split(np.arange(len(mine["uid"])), batches):
        keys = {"position": mine["position"][part]} if "position" in mine else None
        metric.update(mine["uid"][part], mine["pred"][part], mine["label"][part],
                      mine["tag"][part] if "tag" in mine else None, keys=keys)
    return quiet(metric).to_dict()


def quiet(metric: WuaucMetric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def same_on_every_rank(comm: Comm, result: dict) -> None:
    assert all(other == result for other in comm.allgather(result))


@pytest.mark.parametrize("pred_kind", ["float32", "float64", "distinct"])
@pytest.mark.parametrize("uid_kind", ["int", "str"])
@pytest.mark.parametrize("scatter", [True, False])
def test_scattered_users_give_the_one_process_result(
    comm: Comm, rng: np.random.Generator, pred_kind: str, uid_kind: str, scatter: bool
) -> None:
    rows = rows_for(rng, 6000, 300, pred_kind, uid_kind)
    want = one_process(rows)
    got = on_every_rank(comm, my_rows(rows, comm.rank, comm.size, rng, scatter=scatter))
    assert_same(got["tags"], want["tags"])
    same_on_every_rank(comm, got)


def test_gauc_keys_and_untagged_rows_across_ranks(comm: Comm, rng: np.random.Generator) -> None:
    rows = rows_for(rng, 4000, 100)
    rows["position"] = rng.integers(0, 3, len(rows["uid"]))
    want = one_process(rows, extra_keys=("position",))
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    assert_same(on_every_rank(comm, mine, extra_keys=("position",))["tags"], want["tags"])
    untagged = {k: v for k, v in rows.items() if k not in ("tag", "position")}
    want = one_process(untagged)
    mine = my_rows(untagged, comm.rank, comm.size, rng, scatter=True)
    assert_same(on_every_rank(comm, mine)["tags"], want["tags"])


def test_tags_seen_on_one_rank_only(comm: Comm, rng: np.random.Generator) -> None:
    rows = rows_for(rng, 3000, 100)
    rows["tag"] = np.where(np.arange(3000) < 2900, rows["tag"], "zz-late")
    want = one_process(rows)
    got = on_every_rank(comm, my_rows(rows, comm.rank, comm.size, rng))
    assert list(got["tags"]) == ["all", "a", "b", "c", "zz-late"]
    assert_same(got["tags"], want["tags"])


def test_a_big_user_split_over_every_rank(comm: Comm, rng: np.random.Generator) -> None:
    n = 60_000
    rows = {"uid": np.where(rng.random(n) < 0.8, 7, rng.integers(0, 5000, n)),
            "pred": rng.random(n).astype(np.float32), "label": rng.integers(0, 2, n)}
    want = one_process(rows)
    got = on_every_rank(comm, my_rows(rows, comm.rank, comm.size, rng, scatter=True))
    assert_same(got["tags"], want["tags"])


def test_in_one_evaluator_with_other_kinds(comm: Comm, rng: np.random.Generator) -> None:
    rows = rows_for(rng, 3000, 100)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    ev = Evaluator({"ctr": AucMetric(comm=comm), "t7": WuaucMetric(comm=comm),
                    "pn": PnMetric(comm=comm)}, comm=comm)
    ev["ctr"].update(mine["pred"], mine["label"])
    ev["t7"].update(mine["uid"], mine["pred"], mine["label"], mine["tag"])
    ev["pn"].update(mine["uid"], mine["pred"], mine["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = ev.compute()
    assert_same(results["t7"].to_dict()["tags"], one_process(rows)["tags"])
    assert results["ctr"].num == 3000


def test_uid_kinds_disagreeing_across_ranks_fail_every_rank(comm: Comm) -> None:
    if comm.size == 1:
        pytest.skip("needs two ranks to disagree")
    metric = WuaucMetric(comm=comm)
    uid = ["u1", "u2"] if comm.rank == 0 else [1, 2]
    metric.update(uid, [0.2, 0.8], [0, 1])
    with pytest.raises(InputError, match="integer uids on some ranks"):
        metric.compute()
    tags = WuaucMetric(comm=comm)
    tags.update([1, 2], [0.2, 0.8], [0, 1], ["x", "y"] if comm.rank == 0 else [3, 4])
    with pytest.raises(InputError, match="integer tags on some ranks"):
        tags.compute()


def test_a_uid_collision_fails_every_rank(comm: Comm, monkeypatch: pytest.MonkeyPatch) -> None:
    """Force every string to one key (the check hashes stay apart): detected everywhere."""
    import mpieval.keys as keys_module

    real = keys_module.uid_keys_checked

    def colliding(field, uid, *args):
        keys, checks = real(field, uid, *args)
        return np.zeros_like(keys), checks

    monkeypatch.setattr("mpieval.user_rows.uid_keys_checked", colliding)
    metric = WuaucMetric(comm=comm)
    metric.update([f"a{comm.rank}", f"b{comm.rank}"], [0.2, 0.8], [0, 1])
    with pytest.raises((UidCollisionError, RemoteError), match="collision"):
        metric.compute()


@pytest.mark.parametrize("scatter", [True, False])
def test_compare_gives_the_one_process_bits_on_any_split(
    comm: Comm, rng: np.random.Generator, scatter: bool
) -> None:
    """Two models paired by user: B's values, the differences, their intervals and
    p-values, to the last bit, whichever rank owns a user and however its rows came."""
    from test_wuauc import _paired

    rows = _paired(np.random.default_rng(31), 4000)
    alone = WuaucMetric(comm=Comm.local(), compare="b")
    alone.update(rows["uid"], rows["pred"], rows["label"], rows["tag"], compare=rows["compare"])
    want = quiet(alone).to_dict()
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    metric = WuaucMetric(comm=comm, compare="b")
    for part in np.array_split(np.arange(len(mine["uid"])), 3):
        metric.update(mine["uid"][part], mine["pred"][part], mine["label"][part],
                      mine["tag"][part], compare=mine["compare"][part])
    got = quiet(metric).to_dict()
    assert got == want and got["tags"]["all"]["compare"]["uauc_diff_p"] is not None
    # the row values' intervals and paired tests from each user's sums, in a fixed order
    assert got["tags"]["x"]["compare"]["logloss_diff_ci95"] is not None
    assert got["tags"]["x"]["ci95"]["copc"] is not None
    same_on_every_rank(comm, got)


@pytest.mark.parametrize("scatter", [True, False])
def test_weights_give_the_one_process_bits_on_any_split(
    comm: Comm, rng: np.random.Generator, scatter: bool
) -> None:
    """Fractional weights (and rows of weight 0), two models, tags: every value, interval
    and p-value to the last bit whichever rank holds a row (the weighted sums of a user
    are summed in an order of its rows, not of their arrival)."""
    from test_wuauc import _weighted

    rows = _weighted(np.random.default_rng(7), low=0)
    rows["weight"] = rows["weight"] * np.random.default_rng(8).choice([1.0, 0.3, 0.7],
                                                                      len(rows["weight"]))
    alone = WuaucMetric(comm=Comm.local(), compare="b")
    alone.update(rows["uid"], rows["pred"], rows["label"], rows["tag"],
                 compare=rows["compare"], weight=rows["weight"])
    want = quiet(alone).to_dict()
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=scatter)
    metric = WuaucMetric(comm=comm, compare="b")
    for part in np.array_split(np.arange(len(mine["uid"])), 3):
        metric.update(mine["uid"][part], mine["pred"][part], mine["label"][part],
                      mine["tag"][part], compare=mine["compare"][part],
                      weight=mine["weight"][part])
    got = quiet(metric).to_dict()
    assert got == want and got["tags"]["x"]["ci95"]["logloss"] is not None
    same_on_every_rank(comm, got)


@pytest.mark.parametrize("scatter", [True, False])
def test_a_heavy_user_in_several_tags_matches_pair_counting(
    comm: Comm, rng: np.random.Generator, scatter: bool
) -> None:
    """One user with a third of the rows, in every tag (a long user: sorted by pred on
    its owner), uneven shards and an empty rank: the plain-Python pair counting, and the
    bits of one process."""
    from oracle_users import wuauc as oracle
    from test_wuauc import assert_matches

    n = 2400
    rows = {"uid": np.where(rng.random(n) < 1 / 3, 10**12, rng.integers(0, 150, n)),
            "pred": rng.integers(0, 60, n) / 60, "label": rng.integers(0, 2, n),
            "tag": np.array(["feed", "home", "search"])[rng.integers(0, 3, n)]}
    got = on_every_rank(comm, my_rows(rows, comm.rank, comm.size, rng, scatter=scatter))
    assert_matches(got["tags"], oracle(rows["uid"].tolist(), rows["pred"].tolist(),
                                       rows["label"].tolist(), rows["tag"].tolist()))
    assert got == one_process(rows)


@pytest.mark.parametrize("uid_kind", ["int", "str"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_owner_of_a_heavy_user_hands_light_users_to_the_others(
    comm: Comm, rng: np.random.Generator, uid_kind: str, weighted: bool
) -> None:
    """At compute the rank that owns a user with half the rows holds fewer rows than the
    owners' split gives it (it handed light users to the ranks below the mean), and the
    result keeps one process's bits; a second compute after more rows too. String uids
    (their checks travel with the rows) and weights (a buffer of their own) go alike."""
    from mpieval.kernels.keys import owner_of
    from mpieval.keys import uid_keys

    n = 4000
    uid = np.where(rng.random(n) < 0.5, 10**12, rng.integers(0, 3000, n))
    rows = {"uid": uid if uid_kind == "int" else np.array([f"u{u}" for u in uid]),
            "pred": rng.integers(0, 60, n) / 60, "label": rng.integers(0, 2, n),
            "tag": np.array(["feed", "home", "search"])[rng.integers(0, 3, n)],
            "weight": rng.integers(1, 4, n).astype(np.float64) if weighted else np.ones(n)}
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric = WuaucMetric(comm=comm)
    half = len(mine["uid"]) // 2

    def fed(metric: WuaucMetric, part: dict[str, np.ndarray]) -> WuaucMetric:
        metric.update(part["uid"], part["pred"], part["label"], part["tag"],
                      weight=part["weight"] if weighted else None)
        return metric

    fed(metric, {k: v[:half] for k, v in mine.items()})
    got = quiet(metric).to_dict()
    seen = {k: np.concatenate(comm.allgather(v[:half])) for k, v in mine.items()}
    assert got == quiet(fed(WuaucMetric(comm=Comm.local()), seen)).to_dict()
    held = comm.allgather(metric.rows)
    by_owner = np.bincount(owner_of(uid_keys("uid", seen["uid"]), comm.size),
                           minlength=comm.size)
    assert sum(held) == len(seen["uid"])
    if comm.size > 1:
        assert max(held) < by_owner.max()
    fed(metric, {k: v[half:] for k, v in mine.items()})
    assert quiet(metric).to_dict() == quiet(fed(WuaucMetric(comm=Comm.local()), rows)).to_dict()


def test_more_tags_than_uint16_codes_across_ranks(comm: Comm, rng: np.random.Generator) -> None:
    """70,000 string tags (past the 65,535 a uint16 code holds) and a batch of rows
    without a tag, scattered over the ranks and moved to their users' owners between
    batches (the moves recode the tags new since the last one): the one-process result."""
    n = 80_000
    rows = rows_for(rng, n, 5000)
    names = np.array([f"t{k}" for k in range(70_000)])
    rows["tag"] = names[np.concatenate([rng.permutation(70_000),
                                        rng.integers(0, 70_000, n - 70_000)])]
    untagged = {name: values for name, values in rows_for(rng, 3000, 5000).items()
                if name != "tag"}
    metric = WuaucMetric(comm=Comm.local())
    metric.update(**rows)
    metric.update(**untagged)
    want = quiet(metric).to_dict()
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    mine_untagged = my_rows(untagged, comm.rank, comm.size, rng, scatter=True)
    metric = WuaucMetric(comm=comm)
    for k, part in enumerate(np.array_split(np.arange(len(mine["uid"])), 3)):
        metric.update(**{name: values[part] for name, values in mine.items()})
        if k == 1:
            metric.update(**mine_untagged)
        metric.move_rows(comm)
    got = quiet(metric).to_dict()
    assert len(got["tags"]) == 70_001
    assert_same(got["tags"], want["tags"])
    same_on_every_rank(comm, got)


def test_many_tags_give_the_bits_of_one_process(comm: Comm, rng: np.random.Generator) -> None:
    """1,500 tags (per-tag sums made as pairs: ``exact.PAIRS_FROM``), preds of 1e-200 among
    them (spills): the ranks' pairs, made into digits and summed, give the floats one
    process rounds from its pairs, bit for bit (JSON and log lines)."""
    n = 8000
    rows = {"uid": rng.integers(0, 900, n), "pred": rng.random(n),
            "label": (rng.random(n) < 0.3).astype(np.int64),
            "tag": np.char.add("t", rng.integers(0, 1500, n).astype(str))}
    rows["pred"][rng.random(n) < 0.02] = 1e-200
    want_metric = WuaucMetric(comm=Comm.local())
    want_metric.update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    want = quiet(want_metric)
    assert len(want.blocks) > 1000
    metric = WuaucMetric(comm=comm)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric.update(mine["uid"], mine["pred"], mine["label"], mine["tag"])
    got = quiet(metric)
    assert got.to_dict() == want.to_dict()
    assert got.to_log_line("x") == want.to_log_line("x")


@pytest.mark.parametrize("compare", [None, "b"])
def test_many_tags_of_slices_summed_by_every_rank_give_the_bits_of_one_process(
        comm: Comm, rng: np.random.Generator, compare: str | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A sliced metric with 1,500 tags, its slices summed by every rank in step
    (``ONE_RANK_ROWS`` 0): each slice's pairs summed by the tags' owners and kept for its
    finish (three slices finished together, or with ``compare`` one at a time); the JSON
    of one process, bit for bit."""
    from mpieval import slices

    monkeypatch.setattr(slices, "ONE_RANK_ROWS", 0)
    n = 9000
    rows = {"uid": rng.integers(0, 900, n), "pred": rng.random(n),
            "label": (rng.random(n) < 0.3).astype(np.int64),
            "tag": np.char.add("t", rng.integers(0, 1500, n).astype(str)),
            "site": rng.choice(np.array(["a", "b", "c"]), n)}
    rows["pred"][rng.random(n) < 0.02] = 1e-200
    rows["compare"] = rows["pred"][::-1].copy()

    def computed(on: Comm, mine: dict[str, np.ndarray]) -> dict:
        metric = slices.SlicedMetric(WuaucMetric(comm=on, compare=compare), ["site"],
                                     min_rows=10)
        metric.update(mine["uid"], mine["pred"], mine["label"], mine["tag"],
                      slices={"site": mine["site"]},
                      **({"compare": mine["compare"]} if compare else {}))
        return quiet(metric).to_dict()

    want = computed(Comm.local(), rows)
    assert len(want["slices"]) == 3 and len(want["slices"]["site=a"]["tags"]) > 1000
    got = computed(comm, my_rows(rows, comm.rank, comm.size, rng, scatter=True))
    assert json.dumps(got) == json.dumps(want)


def test_weights_whose_total_passes_float64s_range_fail_every_rank(comm: Comm) -> None:
    """Each rank's two batches hold a row of weight 1e308 (each batch's total fits): the
    job's total passes float64's range, and every rank's compute raises the same
    :class:`InputError` of ``weight`` (the totals are the job's: no rank waits)."""
    metric = WuaucMetric(comm=comm)
    with_heavy_batches(metric, np.random.default_rng(5 + comm.rank), 40)
    with pytest.raises(InputError, match="weights of every batch and rank sum past"):
        metric.compute()
    assert comm.allgather(True) == [True] * comm.size  # every rank got here
