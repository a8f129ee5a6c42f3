"""The ``ranking`` kind on one rank: against the plain-Python oracle (every order of each
tie enumerated, tags, graded labels, both gains, a compared model), against
scikit-learn's ``ndcg_score`` and torchmetrics' retrieval metrics, the paired test
against scipy's ``ttest_rel`` and ``false_discovery_control``, bad input, the ``k`` and
``gain`` options, the log line byte for byte and the JSON names."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import oracle_ranking
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score
from test_cli import run, write

from mpieval import RankingMetric, _core
from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds.ranking.kernels import descending_index, group_values, ranked, value_names


def computed(rows: dict[str, np.ndarray], k=(1, 2, 5), batches: int = 1,
             gain: str = "linear") -> dict:
    compare = "pred_b" if "compare" in rows else None
    metric = RankingMetric(comm=Comm.local(), k=k, gain=gain, compare=compare)
    for part in np.array_split(np.arange(len(rows["uid"])), batches):
        metric.update(rows["uid"][part], rows["pred"][part], rows["label"][part],
                      None if "tag" not in rows else rows["tag"][part],
                      compare=None if compare is None else rows["compare"][part])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()


def _close(mine, value, where, absolute: float = 1e-15) -> None:
    if value is None:
        assert mine is None, where
    elif isinstance(value, int):
        assert mine == value, where
    else:
        assert mine == pytest.approx(value, rel=1e-12, abs=absolute), where


def assert_matches_oracle(got: dict, rows: dict[str, np.ndarray], k,
                          gain: str = "linear") -> None:
    want = oracle_ranking.ranking(rows["uid"].tolist(), rows["pred"].tolist(),
                                  rows["label"].tolist(),
                                  rows["tag"].tolist() if "tag" in rows else None,
                                  sorted(set(k)), gain,
                                  rows["compare"].tolist() if "compare" in rows else None)
    assert got["kind"] == "ranking" and got["k"] == sorted(set(k))
    assert list(got["tags"]) == list(want)
    for tag, block in want.items():
        mine = got["tags"][tag]
        for name, value in block.items():
            if name == "compare":
                assert mine["compare"]["pred"] == "pred_b"
                for field, b_value in value.items():
                    # a difference of two values in [0, 1] (the oracle's sums round too)
                    _close(mine["compare"][field], b_value, (tag, "compare", field),
                           1e-12 if field.endswith("_diff") else 1e-15)
            else:
                _close(mine[name], value, (tag, name))
        assert ("compare" in mine) == ("compare" in rows)


@st.composite
def users(draw) -> dict[str, np.ndarray]:
    """A few users of 1 to 9 rows: preds from a few values (ties), graded labels (many
    zeros, some users with none relevant), tags on some rows, a model B's preds."""
    n_users = draw(st.integers(1, 6))
    uid, pred, label, tag, compare = [], [], [], [], []
    for user in range(n_users):
        n = draw(st.integers(1, 9))
        uid += [user * 7 + 3] * n
        pred += draw(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.8, 0.9]), min_size=n,
                              max_size=n))
        label += draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.5, 3.0]), min_size=n,
                               max_size=n))
        tag += draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
        compare += draw(st.lists(st.sampled_from([0.1, 0.5, 0.7, 0.9]), min_size=n,
                                 max_size=n))
    order = draw(st.permutations(range(len(uid))))
    return {"uid": np.array(uid)[order], "pred": np.array(pred)[order],
            "label": np.array(label)[order], "tag": np.array(tag)[order],
            "compare": np.array(compare)[order]}


@settings(max_examples=150, deadline=None)
@given(users(), st.lists(st.integers(1, 12), min_size=1, max_size=4),
       st.booleans(), st.integers(1, 3), st.booleans(), st.sampled_from(["linear",
                                                                       "exponential"]),
       st.booleans())
def test_equals_the_oracle(rows, k, with_tags, batches, float32, gain, with_compare) -> None:
    """float32 preds (kept so) are ranked by their bits, others by their index among the
    distinct preds (kernels.descending_index), each in one radix sort."""
    if not with_tags:
        del rows["tag"]
    if not with_compare:
        del rows["compare"]
    if float32:
        rows["pred"] = rows["pred"].astype(np.float32)
    assert_matches_oracle(computed(rows, k, batches, gain), rows, k, gain)


_PREDS = st.floats(-1e30, 1e30) | st.sampled_from(
    [0.0, -0.0, 0.5, 1.0, 5e-324, -5e-324, 0.1])


@settings(max_examples=150, deadline=None)
@given(st.lists(_PREDS, max_size=200))
def test_descending_index_is_the_index_among_distinct_preds_largest_first(preds) -> None:
    pred = np.array(preds, dtype=np.float64)
    expected = np.unique(-pred, return_inverse=True)[1].reshape(-1)
    assert np.array_equal(descending_index(pred), expected)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2), _PREDS, st.integers(0, 2)),
                max_size=200), st.booleans())
def test_ranked_orders_rows_as_lexsort_does(rows, float32) -> None:
    """The rows by (key, block, -pred, label) as np.lexsort of the four: the same values
    in each place (rows equal in all four are interchangeable)."""
    rows.sort(key=lambda row: row[0])  # the exchange hands rows over sorted by key
    keys = np.array([row[0] for row in rows], dtype=np.uint64)
    block = np.array([row[1] for row in rows], dtype=np.intp)
    pred = np.array([row[2] for row in rows], dtype=np.float32 if float32 else np.float64)
    label = np.array([row[3] for row in rows], dtype=np.float64)
    order = ranked(keys, block, pred, label)
    expected = np.lexsort((label, -pred + 0.0, block, keys))
    for column in (keys, block, pred + 0, label):
        assert np.array_equal(column[order], column[expected])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=100))
def test_group_starts_are_where_the_key_or_the_block_changes(rows) -> None:
    rows.sort()
    keys = np.array([row[0] for row in rows], dtype=np.uint64)
    block = np.array([row[1] for row in rows], dtype=np.int64)
    starts = np.full(len(rows) + 1, -1, dtype=np.int64)
    groups = _core.ranking.group_starts(keys, block, starts)
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (keys[1:] != keys[:-1]) | (block[1:] != block[:-1])
    assert groups == new.sum()
    assert np.array_equal(starts[: groups + 1], np.append(np.flatnonzero(new), len(rows)))


def _group_values_inputs(starts: list[int], discounts: int, groups: int) -> dict:
    """Arguments of the compiled ``group_values`` for rows in groups at ``starts``, its
    outputs sized for ``groups`` groups and two cutoffs."""
    n = starts[-1]
    label = np.arange(n, dtype=np.float64) % 2
    return {"starts": np.array(starts, dtype=np.int64), "pred": -np.arange(n, dtype=np.float64),
            "gain": label.copy(), "label": label,
            "discount": 1.0 / np.log2(np.arange(discounts) + 2.0),
            "cutoffs": np.array([1, 5], dtype=np.int64),
            **{name: np.empty(groups) for name in ("ndcg", "relevant_rows", "first_relevant")},
            **{name: np.empty((2, groups)) for name in ("ndcg_at", "recall_at", "ap_at")},
            **{name: np.empty(groups, dtype=np.int64)
               for name in ("first_group", "first_at", "first_rows")}}


@pytest.mark.parametrize(("starts", "discounts", "groups", "problem"), [
    ([0, 3, 5], 3, 2, None),
    ([0, 3, 5], 2, 2, "a group's rows or discounts"),  # a group past the discounts
    ([0, 3, 3, 5], 3, 3, "a group's rows or discounts"),  # a group of no rows
    ([0, 4, 3, 5], 4, 3, "a group's rows or discounts"),  # starts going back
    ([1, 3, 5], 3, 2, "the groups of n rows"),  # rows before the first group
    ([0, 3, 5], 3, 1, "one a group"),
])
def test_group_values_refuses_groups_it_cannot_read(starts, discounts, groups,
                                                     problem) -> None:
    """The compiled per-group pass checks its groups before it reads a row: each group
    of rows, inside the discounts, together covering every row, and its outputs one a
    group; ``problem`` None: the same arguments made right are taken."""
    inputs = _group_values_inputs(starts, discounts, groups)
    if problem is None:
        assert _core.ranking.group_values(**inputs) == 2  # each group has a relevant row
        assert np.array_equal(inputs["relevant_rows"], [1.0, 1.0])
        return
    with pytest.raises(ValueError, match=re.escape(problem)):
        _core.ranking.group_values(**inputs)


@pytest.mark.parametrize("with_compare", [False, True])
def test_groups_taken_a_few_at_a_time_give_the_same_sums(rng, monkeypatch,
                                                         with_compare) -> None:
    """The groups' values and fields found and added ``GROUPS_AT_ONCE`` groups at a time
    (here 1, 7 and 64: runs that end inside a user's tags, a run of one group): the same
    exact sums as every group at once, for the block ``all`` and each tag, A and B."""
    from mpieval.kinds.ranking import kernels
    n = 600
    keys = rng.integers(0, 40, n).astype(np.uint64)
    pred = rng.integers(0, 6, n) / 5.0  # ties
    label = np.where(rng.random(n) < 0.7, 0.0, rng.integers(1, 4, n).astype(np.float64))
    tag = rng.integers(0, 4, n)  # 3: no tag
    compare = rng.random(n) if with_compare else None

    def sums() -> np.ndarray:
        return kernels.user_sums(keys, pred, label, tag, 3, (1, 3, 10), "exponential",
                                 compare)

    whole = sums()
    for at_once in (1, 7, 64):
        monkeypatch.setattr(kernels, "GROUPS_AT_ONCE", at_once)
        assert np.array_equal(sums(), whole)


def test_no_rows_are_no_groups() -> None:
    empty = np.zeros(0)
    values, valid, block, rows = group_values(empty.astype(np.uint64), empty.astype(np.intp),
                                              empty, empty, (1, 5))
    assert values.shape == (0, len(value_names((1, 5))))
    assert len(valid) == len(block) == len(rows) == 0


def test_a_large_user_with_long_ties_equals_the_oracle(rng) -> None:
    """Users past the oracle's enumeration (its direct expectation), ties across every
    cutoff, real-valued gains."""
    n = 400
    rows = {"uid": rng.integers(0, 4, n), "pred": rng.integers(0, 12, n) / 11,
            "label": np.where(rng.random(n) < 0.6, 0.0, rng.random(n) * 4)}
    k = (1, 3, 10, 50, 1000)
    assert_matches_oracle(computed(rows, k, batches=4), rows, k)
    rows["compare"] = rng.integers(0, 3, n) / 2.0  # longer ties still
    assert_matches_oracle(computed(rows, k, batches=3), rows, k)


def test_long_ties_at_the_top_equal_the_oracle(rng) -> None:
    """The first relevant row inside a tie of 30 to 300 rows (the chances that the tie's
    first j rows hold none, a product step by step up to 64 rows and one cumprod past),
    after 0 to 2 rows above it."""
    uid, pred, label = [], [], []
    for user, (above, tied, relevant) in enumerate(
            [(0, 300, 1), (1, 200, 3), (2, 65, 64), (0, 64, 2), (1, 30, 30), (0, 100, 99)]):
        uid += [user] * (above + tied + 5)
        pred += [0.9] * above + [0.5] * tied + [0.1] * 5
        label += [0.0] * above + [1.0] * relevant + [0.0] * (tied - relevant) + [2.0] * 5
    rows = {"uid": np.array(uid), "pred": np.array(pred), "label": np.array(label)}
    order = rng.permutation(len(uid))
    rows = {name: column[order] for name, column in rows.items()}
    k = (1, 2, 10, 64, 65, 200, 400)
    assert_matches_oracle(computed(rows, k, batches=2), rows, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_user_equals_sklearn_ndcg_score(rng, dtype) -> None:
    """Per user of two or more rows with a relevant one: ndcg and ndcg@K are
    ``ndcg_score`` of that user (ties averaged, its default)."""
    n = 3000
    keys = rng.integers(0, 300, n).astype(np.uint64)
    pred = np.round(rng.random(n), 1).astype(dtype)  # many ties
    label = np.where(rng.random(n) < 0.5, 0.0, rng.integers(1, 4, n).astype(np.float64))
    cutoffs = (1, 3, 5, 10)
    values, valid, _, rows_per_user = group_values(keys, np.zeros(n, dtype=np.intp), pred,
                                                   label, cutoffs)
    names = value_names(cutoffs)
    checked = 0
    for i, user in enumerate(np.unique(keys)):
        mine = keys == user
        if rows_per_user[i] < 2 or not valid[i]:
            continue
        y_true, y_score = label[mine][None, :], pred[mine][None, :]
        assert values[i, names.index("ndcg")] == pytest.approx(
            ndcg_score(y_true, y_score), rel=1e-12)
        for cutoff in cutoffs:
            assert values[i, names.index(f"ndcg@{cutoff}")] == pytest.approx(
                ndcg_score(y_true, y_score, k=cutoff), rel=1e-12), (user, cutoff)
        checked += 1
    assert checked > 200


def test_invalid_users_count_as_real_users_only() -> None:
    rows = {"uid": np.array([1, 1, 2, 2, 2]), "pred": np.array([0.9, 0.1, 0.3, 0.2, 0.1]),
            "label": np.array([0.0, 1.0, 0.0, 0.0, 0.0])}
    block = computed(rows, k=(1,))["tags"]["all"]
    assert (block["valid_user_count"], block["real_user_count"], block["real_ins_num"]) == (
        1, 2, 5)
    assert block["ndcg"] == pytest.approx(1 / math.log2(3))  # user 1 alone
    assert block["recall@1"] == 0.0


def test_recall_of_a_tie_across_the_cutoff() -> None:
    """Three tied rows, one relevant, cutoff 2: it is in the first two with chance 2/3."""
    rows = {"uid": np.array([5, 5, 5]), "pred": np.array([0.4, 0.4, 0.4]),
            "label": np.array([0.0, 2.0, 0.0])}
    block = computed(rows, k=(1, 2, 3))["tags"]["all"]
    assert block["recall@1"] == pytest.approx(1 / 3)
    assert block["recall@2"] == pytest.approx(2 / 3)
    assert block["recall@3"] == 1.0


def test_mrr_map_and_hit_rate_of_a_tie_by_hand() -> None:
    """Three tied rows, one relevant: it is first, second or third with chance 1/3 each,
    so MRR = (1 + 1/2 + 1/3) / 3, hit_rate@K = K / 3 and AP@K = (1 + ... + 1/K) / 3."""
    rows = {"uid": np.array([5, 5, 5]), "pred": np.array([0.4, 0.4, 0.4]),
            "label": np.array([0.0, 2.0, 0.0])}
    block = computed(rows, k=(1, 2, 3))["tags"]["all"]
    assert block["mrr"] == pytest.approx(11 / 18)
    assert [block[f"hit_rate@{k}"] for k in (1, 2, 3)] == pytest.approx([1 / 3, 2 / 3, 1])
    assert [block[f"map@{k}"] for k in (1, 2, 3)] == pytest.approx([1 / 3, 1 / 2, 11 / 18])


def test_mrr_map_and_hit_rate_without_ties_by_hand() -> None:
    """Ranked: not relevant, relevant, not relevant, relevant: MRR 1/2; AP@4 = (1/2 +
    2/4) / 2; AP@2 = (1/2) / min(2, 2); AP@3 = (1/2) / 2; hit_rate@1 = 0, @2 = 1."""
    rows = {"uid": np.array([1, 1, 1, 1]), "pred": np.array([0.9, 0.7, 0.5, 0.3]),
            "label": np.array([0.0, 1.0, 0.0, 3.0])}
    block = computed(rows, k=(1, 2, 3, 4))["tags"]["all"]
    assert block["mrr"] == 0.5
    assert [block[f"map@{k}"] for k in (1, 2, 3, 4)] == pytest.approx([0, 1 / 4, 1 / 4, 1 / 2])
    assert [block[f"hit_rate@{k}"] for k in (1, 2, 3, 4)] == [0, 1, 1, 1]


def test_exponential_gain_is_sklearn_ndcg_score_of_2_to_the_label(rng) -> None:
    """NDCG with ``gain="exponential"`` is ``ndcg_score`` of the gains ``2^label - 1``
    (ties averaged); the other values depend on relevance alone, as with linear gain."""
    n = 40
    rows = {"uid": np.zeros(n, dtype=np.int64), "pred": np.round(rng.random(n), 1),
            "label": rng.integers(0, 4, n).astype(np.float64)}
    linear = computed(rows, k=(3, 10))["tags"]["all"]
    exponential = computed(rows, k=(3, 10), gain="exponential")["tags"]["all"]
    y_true, y_score = (2.0 ** rows["label"] - 1)[None, :], rows["pred"][None, :]
    assert exponential["ndcg"] == pytest.approx(ndcg_score(y_true, y_score), rel=1e-12)
    for cutoff in (3, 10):
        assert exponential[f"ndcg@{cutoff}"] == pytest.approx(
            ndcg_score(y_true, y_score, k=cutoff), rel=1e-12)
        assert exponential[f"ndcg@{cutoff}"] != linear[f"ndcg@{cutoff}"]
    for name in ("recall@3", "mrr", "map@10", "hit_rate@3"):
        assert exponential[name] == linear[name]


def _torchmetrics():
    """torchmetrics (the ``peers`` extra), or a skip; with ``CI=true`` it must be
    there."""
    import os

    if os.environ.get("CI") == "true":
        import torchmetrics
        return torchmetrics
    return pytest.importorskip("torchmetrics")


def test_each_user_equals_torchmetrics_retrieval(rng) -> None:
    """Per user, without ties and preds above 0 (torchmetrics counts a relevant row whose
    pred is <= 0 as not retrieved, and its ties take the sort's order): ``mrr`` is
    ``retrieval_reciprocal_rank``, ``hit_rate@K`` ``retrieval_hit_rate``, ``ndcg@K``
    ``retrieval_normalized_dcg`` (graded labels), and ``map@K`` is
    ``retrieval_average_precision(top_k=K)`` times the relevant rows in the first K over
    ``min(K, relevant rows)`` (torchmetrics divides by the former): the same for every
    K past the user's last relevant row, and for K past every row."""
    torch = pytest.importorskip("torch")
    functional = _torchmetrics().functional.retrieval
    n = 2000
    keys = rng.integers(0, 150, n).astype(np.uint64)
    pred = 0.01 + rng.permutation(n) / n  # no ties, all above 0
    label = np.where(rng.random(n) < 0.7, 0.0, rng.integers(1, 4, n).astype(np.float64))
    cutoffs = (1, 3, 10, 10_000)
    values, valid, _, _ = group_values(keys, np.zeros(n, dtype=np.intp), pred, label, cutoffs)
    names = value_names(cutoffs)
    checked = 0
    for i, user in enumerate(np.unique(keys)):
        if not valid[i]:
            continue
        mine = keys == user
        p, y = torch.tensor(pred[mine]), torch.tensor(label[mine])
        relevant = torch.tensor(label[mine] > 0)
        got = dict(zip(names, values[i].tolist(), strict=True))
        assert got["mrr"] == pytest.approx(
            float(functional.retrieval_reciprocal_rank(p, relevant)), rel=1e-6)
        ranked_relevant = (label[mine] > 0)[np.argsort(-pred[mine])]
        for cutoff in cutoffs:
            assert got[f"hit_rate@{cutoff}"] == float(
                functional.retrieval_hit_rate(p, relevant, top_k=cutoff))
            assert got[f"ndcg@{cutoff}"] == pytest.approx(
                float(functional.retrieval_normalized_dcg(p, y, top_k=cutoff)), rel=1e-6)
            theirs = float(functional.retrieval_average_precision(p, relevant, top_k=cutoff))
            found, total = ranked_relevant[:cutoff].sum(), ranked_relevant.sum()
            assert got[f"map@{cutoff}"] == pytest.approx(
                theirs * found / min(cutoff, total), rel=1e-6, abs=1e-12)
        assert got["map@10000"] == pytest.approx(
            float(functional.retrieval_average_precision(p, relevant)), rel=1e-6)
        checked += 1
    assert checked > 100


def test_block_means_equal_torchmetrics_retrieval_with_skip(rng) -> None:
    """A block's ``mrr``, ``hit_rate@K`` and ``ndcg@K`` are torchmetrics' retrieval
    metrics over the users (``indexes``) with ``empty_target_action="skip"`` (users
    without a relevant row left out, as here; torchmetrics' default counts them as 0)."""
    torch = pytest.importorskip("torch")
    torchmetrics = _torchmetrics()
    n = 3000
    rows = {"uid": rng.integers(0, 200, n), "pred": 0.01 + rng.permutation(n) / n,
            "label": np.where(rng.random(n) < 0.8, 0.0, rng.integers(1, 3, n) * 1.0)}
    block = computed(rows, k=(5,))["tags"]["all"]
    indexes = torch.tensor(rows["uid"])
    p, relevant = torch.tensor(rows["pred"]), torch.tensor(rows["label"] > 0)
    retrieval = torchmetrics.retrieval
    for name, metric, target in [
        ("mrr", retrieval.RetrievalMRR(empty_target_action="skip"), relevant),
        ("hit_rate@5", retrieval.RetrievalHitRate(top_k=5, empty_target_action="skip"),
         relevant),
        ("ndcg@5", retrieval.RetrievalNormalizedDCG(top_k=5, empty_target_action="skip"),
         torch.tensor(rows["label"])),
    ]:
        assert block[name] == pytest.approx(float(metric(p, target, indexes=indexes)),
                                            rel=1e-5), name


@pytest.mark.parametrize("steps", [4, 3])  # preds that are float32 values, and not
def test_values_do_not_depend_on_row_order(rng, steps) -> None:
    """The same bits: ties with gains whose sums round, in any order of rows and batches."""
    n = 2000
    rows = {"uid": rng.integers(0, 20, n).astype(str), "pred": rng.integers(0, 5, n) / steps,
            "label": rng.choice([0.0, 0.0, 0.1, 0.3, 0.7], n), "tag": rng.integers(0, 3, n)}
    want = computed(rows, batches=1)
    for _ in range(3):
        order = rng.permutation(n)
        assert computed({k: v[order] for k, v in rows.items()}, batches=5) == want


@pytest.mark.parametrize("label, problem", [
    (-1.0, "label: must be >= 0"),
    (math.nan, "label: must be finite"),
    (math.inf, "label: must be finite"),
])
def test_a_bad_label_names_the_field(label, problem) -> None:
    metric = RankingMetric(comm=Comm.local())
    with pytest.raises(InputError, match=problem) as caught:
        metric.update([1, 1, 2], [0.1, 0.2, 0.3], [1.0, label, 0.0])
    assert caught.value.field == "label"
    assert metric.rows == 0  # the bad batch changed nothing


def test_a_bad_pred_names_the_field() -> None:
    with pytest.raises(InputError, match="pred: must be finite"):
        RankingMetric(comm=Comm.local()).update([1, 2], [0.1, math.nan], [1.0, 0.0])


@pytest.mark.parametrize("k", [[], [0], [5, -1], ["5"], [1.5], [True], 5, "5,10", None])
def test_a_bad_k_names_the_option(k) -> None:
    with pytest.raises(InputError) as caught:
        RankingMetric(comm=Comm.local(), k=k)
    assert caught.value.field == "k"


def test_k_is_sorted_without_repeats() -> None:
    assert RankingMetric(comm=Comm.local(), k=[10, 5, 10]).k == (5, 10)
    assert RankingMetric(comm=Comm.local()).k == (5, 10, 20)


def test_the_log_line_byte_for_byte() -> None:
    """User 1 ranks its relevant row second of two, user 2 first, user 3 has none; the
    tag ``b`` holds no relevant row (nan)."""
    rows = {"uid": np.array([1, 1, 2, 2, 3]), "pred": np.array([0.9, 0.5, 0.7, 0.2, 0.4]),
            "label": np.array([0.0, 1.0, 1.0, 0.0, 0.0]),
            "tag": np.array(["a", "a", "a", "b", "b"])}
    metric = RankingMetric(comm=Comm.local(), k=[2, 1])
    metric.update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    with pytest.warns(UndefinedMetricWarning, match="tag b: no user has a relevant row"):
        result = metric.compute()
    mean = (1 + 1 / math.log2(3)) / 2  # the gain of rank 2 is 1 / log2(3), of rank 1 is 1
    assert result.to_log_line("rk").split("\n") == [
        f"rk: Tag=all NDCG={mean:g} NDCG@1=0.5 NDCG@2={mean:g} Recall@1=0.5 Recall@2=1 "
        "ValidUserCount=2 RealUserCount=3 RealInsNum=5",
        f"rk: Tag=a NDCG={mean:g} NDCG@1=0.5 NDCG@2={mean:g} Recall@1=0.5 Recall@2=1 "
        "ValidUserCount=2 RealUserCount=2 RealInsNum=3",
        "rk: Tag=b NDCG=nan NDCG@1=nan NDCG@2=nan Recall@1=nan Recall@2=nan "
        "ValidUserCount=0 RealUserCount=2 RealInsNum=2",
    ]
    assert f"{mean:g}" == "0.815465"


def test_json_names_and_intervals(rng) -> None:
    n = 600
    rows = {"uid": rng.integers(0, 60, n), "pred": rng.random(n),
            "label": rng.integers(0, 2, n).astype(np.float64),
            "tag": rng.choice(np.array(["x", "y"]), n)}
    got = computed(rows, k=(3, 1))
    assert list(got) == ["kind", "k", "tags"] and got["k"] == [1, 3]
    assert list(got["tags"]) == ["all", "x", "y"]
    names = ["ndcg", "ndcg@1", "ndcg@3", "recall@1", "recall@3", "mrr", "map@1", "map@3",
             "hit_rate@1", "hit_rate@3"]
    for block in got["tags"].values():
        assert list(block) == [*names, "valid_user_count", "real_user_count",
                               "real_ins_num", "users_le_k", "ci95"]
        assert list(block["ci95"]) == names
        for name in names:
            low, high = block["ci95"][name]
            assert 0 <= low <= block[name] <= high <= 1


def test_interval_is_the_cluster_standard_error() -> None:
    """Twelve users, half with ndcg 1 and half 1/log2(3): mean m, se = sd / sqrt(12) (sd
    over 11 degrees of freedom), the interval m -/+ t(0.975, 11) se (2.200985, from the
    tables)."""
    users = 12
    rows = {"uid": np.repeat(np.arange(users), 2),
            "pred": np.tile([0.9, 0.5, 0.7, 0.2], users // 2),
            "label": np.tile([0.0, 1.0, 1.0, 0.0], users // 2)}
    block = computed(rows, k=(2,))["tags"]["all"]
    values = [1 / math.log2(3), 1.0] * (users // 2)
    mean = sum(values) / users
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (users - 1)) / math.sqrt(users)
    low, high = block["ci95"]["ndcg"]
    assert low == pytest.approx(mean - 2.200985 * se, rel=1e-6)
    assert high == pytest.approx(min(1.0, mean + 2.200985 * se), rel=1e-6)


def test_few_valid_users_have_no_interval_and_warn() -> None:
    metric = RankingMetric(comm=Comm.local(), k=[1])
    metric.update(np.repeat(np.arange(9), 2), np.tile([0.2, 0.1], 9), np.tile([1.0, 0.0], 9))
    with pytest.warns(UndefinedMetricWarning, match="needs 10 valid users"):
        block = metric.compute().to_dict()["tags"]["all"]
    assert block["ndcg"] == 1.0 and block["ci95"]["ndcg"] is None


# -- --compare: the paired differences ---------------------------------------------------


def paired_rows(rng, users: int, tags=("feed", "search", "video")) -> dict[str, np.ndarray]:
    """Users of 3 to 30 rows, graded labels, model B a noisier copy of A's score."""
    sizes = rng.integers(3, 31, users)
    n = int(sizes.sum())
    score = rng.standard_normal(n)
    label = np.where(score + rng.standard_normal(n) > 1.0, rng.integers(1, 3, n), 0)
    return {"uid": np.repeat(np.arange(users) * 13 + 1, sizes),
            "pred": np.round(score + 0.5 * rng.standard_normal(n), 1),
            "compare": np.round(score + rng.standard_normal(n), 1),
            "label": label.astype(np.float64), "tag": rng.choice(np.array(tags), n)}


def wilson(successes: float, n: int, z: float = 1.959963984540054) -> list[float]:
    """Wilson's score interval (Wilson 1927), from its formula."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def newcombe(a: np.ndarray, b: np.ndarray) -> list[float]:
    """Newcombe's (1998) method 10 interval of ``mean(b) - mean(a)`` over paired values,
    from its formula: Wilson's intervals of each mean and their Pearson correlation."""
    n = len(a)
    pa, pb = a.mean(), b.mean()
    la, ua = wilson(a.sum(), n)
    lb, ub = wilson(b.sum(), n)
    phi = 0.0 if np.ptp(a) == 0 or np.ptp(b) == 0 else float(np.corrcoef(a, b)[0, 1])
    low = (pb - pa) - math.sqrt(max(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa)
                                    + (ua - pa) ** 2))
    high = (pb - pa) + math.sqrt(max(0.0, (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la)
                                     + (pa - la) ** 2))
    return [max(-1.0, low), min(1.0, high)]


def test_the_paired_test_is_scipys_ttest_rel_over_users(rng) -> None:
    """Per tag, each value's ``X_diff`` is the mean over valid users of B - A (per-user
    values from the oracle), ``X_diff_p`` and ``X_diff_ci95`` are scipy's paired t-test
    of those users (``ttest_rel``) and its interval (``hit_rate@K``: Newcombe's interval
    of paired rates); each value's own ``ci95`` is the t interval of its users' mean
    (``hit_rate@K``: Wilson's interval of the share of users with a hit); ``X_diff_q`` is
    scipy's Benjamini-Hochberg (``false_discovery_control``) over the tags other than
    ``all``."""
    from scipy import stats as scipy_stats

    rows = paired_rows(rng, 60)
    k = (1, 5)
    got = computed(rows, k=k)
    names = oracle_ranking.names(k)
    p_values: dict[str, list[float]] = {name: [] for name in names}
    for tag, block in got["tags"].items():
        in_tag = np.ones(len(rows["uid"]), bool) if tag == "all" else rows["tag"] == tag
        a_users, b_users = [], []
        for user in np.unique(rows["uid"][in_tag]):
            mine = in_tag & (rows["uid"] == user)
            labels = rows["label"][mine].tolist()
            a = oracle_ranking.user_values(list(zip(rows["pred"][mine], labels, strict=True)), k)
            b = oracle_ranking.user_values(list(zip(rows["compare"][mine], labels, strict=True)),
                                           k)
            if a is not None:
                a_users.append(a)
                b_users.append(b)
        assert block["valid_user_count"] == len(a_users) >= 20
        compare = block["compare"]
        for name in names:
            a = np.array([v[name] for v in a_users])
            b = np.array([v[name] for v in b_users])
            assert compare[name] == pytest.approx(b.mean(), rel=1e-12)
            assert compare[f"{name}_diff"] == pytest.approx((b - a).mean(), rel=1e-9, abs=1e-15)
            if name.startswith("hit_rate@"):  # a rate over users: Wilson's interval
                hits, misses = a.sum(), len(a) - a.sum()
                if not any(float(x).is_integer() and 1 <= x <= 3 for x in (hits, misses)):
                    assert block["ci95"][name] == pytest.approx(wilson(hits, len(a)),
                                                                rel=1e-9), (tag, name)
            elif np.ptp(a) == 0:  # every user the same value: no interval (scipy: NaN)
                assert block["ci95"][name] is None
            else:
                low, high = scipy_stats.t.interval(0.95, len(a) - 1, loc=a.mean(),
                                                   scale=scipy_stats.sem(a))
                assert block["ci95"][name] == pytest.approx(
                    [max(0.0, low), min(1.0, high)], rel=1e-6, abs=1e-12), (tag, name)
            if name.startswith("hit_rate@"):  # Newcombe's interval of two paired rates
                hits = [a.sum(), len(a) - a.sum(), b.sum(), len(b) - b.sum()]
                if not any(float(x).is_integer() and 1 <= x <= 3 for x in hits):
                    assert compare[f"{name}_diff_ci95"] == pytest.approx(
                        newcombe(a, b), rel=1e-9, abs=1e-12), (tag, name)
            if np.ptp(b - a) == 0:  # every user the same difference, here 0: p = 1
                assert (b - a)[0] == 0 and compare[f"{name}_diff_p"] == 1.0
                if not name.startswith("hit_rate@"):
                    assert compare[f"{name}_diff_ci95"] is None
                if tag != "all":
                    p_values[name].append(1.0)
                continue
            test = scipy_stats.ttest_rel(b, a)
            assert compare[f"{name}_diff_p"] == pytest.approx(test.pvalue, rel=1e-6), (tag, name)
            low, high = test.confidence_interval(0.95)
            if not name.startswith("hit_rate@"):
                assert compare[f"{name}_diff_ci95"] == pytest.approx(
                    [max(-1.0, low), min(1.0, high)], rel=1e-6, abs=1e-12), (tag, name)
            if tag != "all":
                p_values[name].append(test.pvalue)
        assert ("ndcg_diff_q" in compare) == (tag != "all")
    for name in names:
        q = scipy_stats.false_discovery_control(p_values[name])
        mine = [got["tags"][tag]["compare"][f"{name}_diff_q"] for tag in ("feed", "search",
                                                                           "video")]
        assert mine == pytest.approx(list(q), rel=1e-6), name
    assert got["tags"]["all"]["compare"]["ndcg_diff"] < 0  # B is the noisier model


def test_b_s_own_intervals_are_those_of_a_run_of_b_alone(rng) -> None:
    """Each compare block's ``ci95`` (model B's own intervals) is the ``ci95`` of a run
    whose pred is B's, tag by tag (A's intervals are checked against scipy above)."""
    rows = paired_rows(rng, 60)
    got = computed(rows, k=(1, 5))
    alone = computed({**{key: value for key, value in rows.items() if key != "compare"},
                      "pred": rows["compare"]}, k=(1, 5))
    for tag, block in got["tags"].items():
        assert block["compare"]["ci95"] == alone["tags"][tag]["ci95"], tag


def test_users_le_k_counts_the_valid_users_of_at_most_k_rows() -> None:
    """By hand: users of 1, 2 and 6 rows, all valid but the one of 2 rows, and cutoffs 1,
    2 and 5: at most 1 row, 1 user; at most 2, still 1 (the other is not valid); at most
    5, 1."""
    rows = {"uid": np.array([1, 2, 2, 3, 3, 3, 3, 3, 3]),
            "pred": np.linspace(0.9, 0.1, 9),
            "label": np.array([1, 0, 0, 1, 0, 0, 0, 0, 0])}
    block = computed(rows, k=(1, 2, 5))["tags"]["all"]
    assert block["users_le_k"] == {"1": 1, "2": 1, "5": 1}
    assert block["recall@5"] == 1.0  # user 3's relevant row is its first


def test_comparing_a_model_with_itself_is_no_difference_never_p_0(rng) -> None:
    """B = A: every difference 0, p-value 1, no interval (a spread of 0), a warning."""
    rows = paired_rows(rng, 30, tags=("x",))
    rows["compare"] = rows["pred"].copy()
    metric = RankingMetric(comm=Comm.local(), k=[3], compare="pred_b")
    metric.update(rows["uid"], rows["pred"], rows["label"], compare=rows["compare"])
    with pytest.warns(UndefinedMetricWarning, match="ci95 of mrr_diff is null"):
        compare = metric.compute().to_dict()["tags"]["all"]["compare"]
    for name in oracle_ranking.names((3,)):
        assert compare[f"{name}_diff"] == 0.0
        assert compare[f"{name}_diff_p"] == 1.0
        if name.startswith("hit_rate@"):  # Newcombe's: around 0, never zero-width
            low, high = compare[f"{name}_diff_ci95"]
            assert low < 0 < high
        else:
            assert compare[f"{name}_diff_ci95"] is None


def test_below_the_minimum_of_users_there_is_no_p_value(rng) -> None:
    rows = paired_rows(rng, 60, tags=("x",))
    users = np.unique(rows["uid"])[:9]
    keep = np.isin(rows["uid"], users)
    rows = {name: column[keep] for name, column in rows.items()}
    rows["label"][:] = 0
    rows["label"][np.unique(rows["uid"], return_index=True)[1]] = 1  # each user valid
    metric = RankingMetric(comm=Comm.local(), k=[3], compare="pred_b")
    metric.update(rows["uid"], rows["pred"], rows["label"], compare=rows["compare"])
    with pytest.warns(UndefinedMetricWarning, match="ci95 of the values and their "
                                                    "differences needs 10 valid users"):
        block = metric.compute().to_dict()["tags"]["all"]
    assert block["valid_user_count"] == 9
    assert block["compare"]["ndcg_diff"] is not None
    assert block["compare"]["ndcg_diff_p"] is None and block["compare"]["ndcg_diff_ci95"] is None


def test_compare_is_given_exactly_when_the_metric_compares() -> None:
    with pytest.raises(InputError, match="compare: is needed"):
        RankingMetric(comm=Comm.local(), compare="b").update([1], [0.1], [1.0])
    with pytest.raises(InputError, match="compare: is given"):
        RankingMetric(comm=Comm.local()).update([1], [0.1], [1.0], compare=[0.2])
    metric = RankingMetric(comm=Comm.local(), compare="b")
    with pytest.raises(InputError, match="compare: must be finite"):
        metric.update([1, 1], [0.1, 0.2], [1.0, 0.0], compare=[0.2, math.inf])
    with pytest.raises(InputError, match="compare"):
        metric.update([1, 1], [0.1, 0.2], [1.0, 0.0], compare=[0.2])
    assert metric.rows == 0


def test_the_log_line_is_the_same_with_the_new_values_and_compare(rng) -> None:
    """MRR, MAP@K, hit rate@K and the comparison are in the JSON only: the log line keeps
    its fields (NDCG, NDCG@K, Recall@K, counts), one line per tag."""
    rows = paired_rows(rng, 30)
    plain = RankingMetric(comm=Comm.local(), k=[2, 4])
    paired = RankingMetric(comm=Comm.local(), k=[2, 4], compare="pred_b")
    plain.update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    paired.update(rows["uid"], rows["pred"], rows["label"], rows["tag"], compare=rows["compare"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        line = plain.compute().to_log_line("rk")
        assert paired.compute().to_log_line("rk") == line
    first = line.split("\n")[0]
    assert [field.split("=")[0] for field in first.split(" ")] == [
        "rk:", "Tag", "NDCG", "NDCG@2", "NDCG@4", "Recall@2", "Recall@4", "ValidUserCount",
        "RealUserCount", "RealInsNum"]


@pytest.mark.parametrize("gain", ["", "Linear", "exp", None, 2])
def test_a_bad_gain_names_the_option(gain) -> None:
    with pytest.raises(InputError, match="gain: must be one of linear, exponential") as caught:
        RankingMetric(comm=Comm.local(), gain=gain)
    assert caught.value.field == "gain"


def test_exponential_gain_refuses_labels_past_its_bound() -> None:
    metric = RankingMetric(comm=Comm.local(), gain="exponential")
    metric.update([1, 1], [0.1, 0.2], [512.0, 0.0])
    with pytest.raises(InputError, match="label: must be at most 512 with gain exponential"):
        metric.update([1, 1], [0.1, 0.2], [513.0, 0.0])
    assert metric.rows == 2
    RankingMetric(comm=Comm.local()).update([1], [0.1], [1e300])  # linear: any finite


# -- the command line ------------------------------------------------------------------


def test_the_command_line_equals_the_oracle_and_the_api(tmp_path, capsys, rng) -> None:
    n = 1500
    rows = {"uid": rng.integers(0, 120, n) * 7919 + 10**12, "pred": np.round(rng.random(n), 2),
            "label": rng.integers(0, 4, n) * (rng.random(n) < 0.4),
            "tag": rng.choice(np.array(["feed", "search"]), n)}
    path = write(str(tmp_path / "rank.tsv"), rows)
    out = tmp_path / "out.json"
    status, stdout, err = run(capsys, "eval", "--metrics", "ranking", "--k", "10, 3",
                              "--tag", "tag", path, "--json", out)
    assert status == 0, err
    got = json.loads(out.read_text())["ranking"]
    assert_matches_oracle(got, {**rows, "tag": rows["tag"]}, (3, 10))
    metric = RankingMetric(comm=Comm.local(), k=[3, 10])
    metric.update(rows["uid"].astype(str), rows["pred"], rows["label"], rows["tag"])
    assert stdout.splitlines() == metric.compute().to_log_line("ranking").splitlines()


def test_compare_and_gain_flags_equal_the_api_and_the_oracle(tmp_path, capsys, rng) -> None:
    """``--compare pred_b --gain exponential``: the JSON of the API with those options,
    B's values and differences those of the oracle; the log lines are the plain ones."""
    n = 1200
    rows = {"uid": rng.integers(0, 90, n), "pred": np.round(rng.random(n), 2),
            "pred_b": np.round(rng.random(n), 1),
            "label": rng.integers(0, 4, n) * (rng.random(n) < 0.4),
            "tag": rng.choice(np.array(["feed", "search"]), n)}
    path = write(str(tmp_path / "rank.tsv"), rows)
    out = tmp_path / "out.json"
    status, stdout, err = run(capsys, "eval", "--metrics", "ranking", "--k", "3", "--tag", "tag",
                              "--compare", "pred_b", "--gain", "exponential", path,
                              "--json", out)
    assert status == 0, err
    got = json.loads(out.read_text())["ranking"]
    assert_matches_oracle(got, {**rows, "compare": rows["pred_b"]}, (3,), "exponential")
    metric = RankingMetric(comm=Comm.local(), k=[3], gain="exponential", compare="pred_b")
    metric.update(rows["uid"].astype(str), rows["pred"], rows["label"], rows["tag"],
                  compare=rows["pred_b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = metric.compute()
    assert got == json.loads(json.dumps(want.to_dict()))
    assert stdout.splitlines() == want.to_log_line("ranking").splitlines()
    assert set(got["tags"]["feed"]["compare"]) >= {"pred", "mrr", "map@3_diff_q",
                                                   "hit_rate@3_diff_ci95", "ndcg_diff_p"}


def test_the_config_keys_gain_and_compare(tmp_path, capsys) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tb\tlabel\na\t0.9\t0.1\t0\na\t0.5\t0.7\t2\n"
                    "b\t0.3\t0.2\t1\nb\t0.1\t0.4\t0\n")
    config = tmp_path / "m.toml"
    config.write_text('[metrics.top]\nkind = "ranking"\nk = [1]\ngain = "exponential"\n'
                      'compare = "b"\n')
    out = tmp_path / "out.json"
    status, _, err = run(capsys, "eval", "--config", config, data, "--json", out)
    assert status == 0, err
    block = json.loads(out.read_text())["top"]["tags"]["all"]
    # user a: relevant row second by pred, first by b; user b: first by pred, second by b
    assert block["mrr"] == 0.75 and block["compare"]["mrr"] == 0.75
    assert block["compare"]["mrr_diff"] == 0.0 and block["compare"]["hit_rate@1_diff"] == 0.0
    assert block["ndcg@1"] == 0.5  # exponential: user a scores 0 of 3, user b 1 of 1
    config.write_text('[metrics.top]\nkind = "ranking"\ngain = "square"\n')
    status, _, err = run(capsys, "eval", "--config", config, data)
    assert status == 2 and "gain: must be one of linear, exponential" in err


def test_the_config_key_k(tmp_path, capsys) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t2\nb\t0.3\t1\nb\t0.1\t0\n")
    config = tmp_path / "m.toml"
    config.write_text('[metrics.top]\nkind = "ranking"\nk = [2, 1]\n')
    status, stdout, err = run(capsys, "eval", "--config", config, data)
    assert status == 0, err
    assert stdout.startswith("top: Tag=all NDCG=") and " NDCG@1=0.5 NDCG@2=" in stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["--metrics", "ranking", "--k", "0"], "k: must be a list of positive integers"),
    (["--metrics", "ranking", "--k", "5,x"], "k: must be a list of positive integers"),
    (["--metrics", "ranking", "--k", ""], "k: must be a list of positive integers"),
    (["--metrics", "auc", "--k", "5"], "--k: no metric of --metrics auc uses it"),
])
def test_bad_cutoff_flags_exit_2(tmp_path, capsys, argv, message) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t2\n")
    status, stdout, err = run(capsys, "eval", *argv, data)
    assert status == 2 and stdout == ""
    assert message in err


def test_a_negative_label_in_a_file_names_its_line_and_column(tmp_path, capsys) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t-2\n")
    status, stdout, err = run(capsys, "eval", "--metrics", "ranking", data)
    assert status == 2 and stdout == ""
    assert f"{data}:3: column label:" in err and "must be >= 0" in err


# -- the report ------------------------------------------------------------------------


def test_the_report_shows_each_tag_with_its_values_and_intervals(tmp_path, capsys, rng) -> None:
    from test_report import parse

    from mpieval import report

    n = 800
    rows = {"uid": rng.integers(0, 80, n), "pred": np.round(rng.random(n), 2),
            "label": rng.integers(0, 3, n) * (rng.random(n) < 0.4),
            "tag": rng.choice(np.array(["feed", "search"]), n)}
    path = write(str(tmp_path / "rank.tsv"), rows)
    out, page_path = tmp_path / "run.json", tmp_path / "page.html"
    status, _, err = run(capsys, "eval", "--metrics", "ranking", "--k", "3,1", "--tag", "tag",
                         path, "--json", out, "--report", page_path)
    assert status == 0, err
    result = json.loads(out.read_text())["ranking"]
    text = " ".join(parse(page_path.read_text()).text)
    for heading in ("NDCG", "NDCG@1", "NDCG@3", "Recall@1", "Recall@3"):
        assert heading in text
    for tag in ("all", "feed", "search"):
        block = result["tags"][tag]
        for name in ("ndcg", "ndcg@3", "recall@1"):
            low, high = block["ci95"][name]
            # the tags' tables are compact: 4 significant digits, the interval as [low, high]
            assert f"{block[name]:.4g}" in text and f"[{low:.4g}, {high:.4g}]" in text
        assert f"{block['valid_user_count']:,} / {block['real_user_count']:,}" in text
    # two runs side by side: a row per run under each tag
    other = tmp_path / "other.json"
    other.write_text(out.read_text())
    both = " ".join(parse(report.render(report.load_runs([str(out), str(other)]))).text)
    assert both.count(f"{result['tags']['search']['ndcg']:.4g}") == 2 * text.count(
        f"{result['tags']['search']['ndcg']:.4g}")


def test_the_report_shows_b_against_a_per_tag(tmp_path, capsys, rng) -> None:
    """With ``--compare``: the summary's verdict on NDCG and a table of B - A per tag, each
    difference with its interval and p-value (q-value in the tags)."""
    from test_report import parse

    rows = paired_rows(rng, 80, tags=("feed", "search"))
    path = write(str(tmp_path / "rank.tsv"), {**rows, "pred_b": rows.pop("compare")})
    out, page_path = tmp_path / "run.json", tmp_path / "page.html"
    status, _, err = run(capsys, "eval", "--metrics", "ranking", "--k", "3", "--tag", "tag",
                         "--compare", "pred_b", path, "--json", out, "--report", page_path)
    assert status == 0, err
    tags = json.loads(out.read_text())["ranking"]["tags"]
    text = " ".join(parse(page_path.read_text()).text)
    assert "B against A" in text and "MAP@3" in text and "Hit rate@3" in text
    for tag in ("all", "feed", "search"):
        compare = tags[tag]["compare"]
        for name in ("ndcg", "mrr", "hit_rate@3"):
            assert f"{compare[f'{name}_diff']:+.4g}" in text, (tag, name)
        if tag != "all":
            assert f"q = {compare['ndcg_diff_q']:.2f}" in text
    assert f"NDCG {tags['all']['compare']['ndcg_diff']:+.4f}" in text  # the summary
