"""The ``wuauc`` kind on one process: the pair-counting oracle, sklearn per user, the seed's
log line, bad input, a huge user and a million users (row order, batches, sharding:
test_kinds_common.py)."""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import numpy as np
import pytest
import simulation
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_users import group_moments, user_auc
from oracle_users import wuauc as oracle
from sklearn.metrics import roc_auc_score

from mpieval import Evaluator, WuaucMetric, WuaucResult, _core
from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kernels import exact, stats
from mpieval.kernels import keys as kernel_keys
from mpieval.keys import uid_keys_checked
from mpieval.kinds.auc.metric import AucMetric
from mpieval.kinds.wuauc.kernels import CHUNK, MOMENT_FIELDS, USER_SUM_FIELDS
from mpieval.kinds.wuauc.kernels import user_auc_sums as exact_user_auc_sums
from mpieval.kinds.wuauc.result import WuaucBlock
from mpieval.tags import NO_TAG

COUNTS = ("real_user_count", "real_ins_num", "valid_user_count", "valid_ins_num",
          "valid_click_num")


def rows_for(
    rng: np.random.Generator, n: int, users: int, pred_kind: str = "float32", uid_kind: str = "int"
) -> dict[str, np.ndarray]:
    """Rows with many single-row users (uids above ``users``), single-class users
    (uid % 5 == 0 never clicks) and ties (few distinct preds)."""
    uid = np.where(rng.random(n) < 0.25, rng.integers(users, 100 * users, n),
                   rng.integers(0, users, n))
    if pred_kind == "float32":  # float32 values, many ties
        pred = rng.integers(0, 9, n) / 8
    elif pred_kind == "float64":  # not float32 values, many ties
        pred = rng.integers(0, 8, n) / 7
    else:  # distinct float64 values
        pred = rng.random(n)
    label = rng.integers(0, 2, n) * (uid % 5 != 0)
    rows = {"uid": uid, "pred": pred, "label": label,
            "tag": rng.choice(np.array(["b", "a", "c"]), n)}
    if uid_kind == "str":
        rows["uid"] = np.array([f"user-{u}" for u in uid])
    return rows


def assert_matches(got: dict, want: dict, tol: float = 1e-12) -> None:
    assert list(got) == list(want), "tags, 'all' first then sorted"
    for tag, values in want.items():
        for name, value in values.items():
            if name in COUNTS:
                assert got[tag][name] == value, (tag, name)
            elif math.isnan(value):
                assert got[tag][name] is None, (tag, name)
            else:
                assert got[tag][name] == pytest.approx(value, rel=tol, abs=tol), (tag, name)


def assert_same(got: dict, want: dict, tol: float = 1e-12) -> None:
    """Two ``to_dict()["tags"]``: equal counts and nulls, values to ``tol``."""
    assert list(got) == list(want)
    for tag, values in want.items():
        assert got[tag].keys() == values.keys()
        for name, value in values.items():
            if name == "ci95":
                assert got[tag][name].keys() == value.keys(), tag
                for field, pair in value.items():
                    assert (got[tag][name][field] is None) == (pair is None), (tag, field)
                    if pair is not None:
                        assert got[tag][name][field] == pytest.approx(pair, rel=tol, abs=tol)
            elif value is None or name in COUNTS:
                assert got[tag][name] == value, (tag, name)
            else:
                assert got[tag][name] == pytest.approx(value, rel=tol, abs=tol), (tag, name)


def quiet(metric: WuaucMetric) -> WuaucResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def fed(rows: dict[str, np.ndarray], batches: int = 3, **kwargs) -> WuaucMetric:
    metric = WuaucMetric(comm=Comm.local(), **kwargs)
    for part in np.array_split(np.arange(len(rows["uid"])), batches):
        metric.update(rows["uid"][part], rows["pred"][part], rows["label"][part],
                      None if "tag" not in rows else rows["tag"][part])
    return metric


# -- against the oracles ---------------------------------------------------------------


@pytest.mark.parametrize("pred_kind", ["float32", "float64", "distinct"])
@pytest.mark.parametrize("uid_kind", ["int", "str"])
def test_matches_pair_counting(rng: np.random.Generator, pred_kind: str, uid_kind: str) -> None:
    rows = rows_for(rng, 2500, 150, pred_kind, uid_kind)
    got = quiet(fed(rows)).to_dict()
    assert got["kind"] == "wuauc"
    want = oracle(rows["uid"].tolist(), rows["pred"].tolist(), rows["label"].tolist(),
                  rows["tag"].tolist())
    assert_matches(got["tags"], want)
    assert 0 < got["tags"]["all"]["valid_user_count"] < got["tags"]["all"]["real_user_count"]


def test_float64_preds_apart_below_float32_precision_are_not_tied(
    rng: np.random.Generator,
) -> None:
    """Preds that one float32 would merge stay distinct: no pair among them is a tie."""
    rows = rows_for(rng, 2500, 120, "float32")
    rows["pred"] = np.minimum(rows["pred"] * 0.75 + rng.integers(0, 3, 2500) * 2.0**-40, 1.0)
    assert len(np.unique(rows["pred"])) > len(np.unique(rows["pred"].astype(np.float32)))
    got = quiet(fed(rows)).to_dict()["tags"]
    want = oracle(rows["uid"].tolist(), rows["pred"].tolist(), rows["label"].tolist(),
                  rows["tag"].tolist())
    assert_matches(got, want)
    rounded = quiet(fed({**rows, "pred": rows["pred"].astype(np.float32)})).to_dict()["tags"]
    assert rounded["all"]["uauc"] != got["all"]["uauc"]


def test_long_users_with_ties_and_tags(rng: np.random.Generator) -> None:
    """Users of 1 to 400 rows (both per-user paths: pair counting and merge sort), few
    distinct preds, three tags and untagged rows."""
    counts = np.r_[rng.integers(1, 20, 40), rng.integers(17, 400, 12), [1000]]
    uid = np.repeat(rng.permutation(len(counts)) * 1_000_003, counts)
    n = len(uid)
    pred = rng.integers(0, 6, n) / 6 + rng.integers(0, 2, n) * 2.0**-45
    label = (rng.random(n) < np.clip(pred, 0.1, 0.9)).astype(np.int64)
    tag = rng.choice(np.array(["x", "y", "z"]), n)
    untagged = rng.random(n) < 0.2
    order = rng.permutation(n)
    uid, pred, label, tag, untagged = (v[order] for v in (uid, pred, label, tag, untagged))
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid[untagged], pred[untagged], label[untagged])
    metric.update(uid[~untagged], pred[~untagged], label[~untagged], tag[~untagged])
    got = quiet(metric).to_dict()["tags"]
    tags = [None if u else t for u, t in zip(untagged.tolist(), tag.tolist(), strict=True)]
    want = oracle(uid.tolist(), pred.tolist(), label.tolist(), tags)
    assert_matches(got, want)


def test_matches_sklearn_per_user(rng: np.random.Generator) -> None:
    n = 20_000
    uid = rng.integers(0, 300, n)
    pred = np.round(rng.random(n), 2).astype(np.float32)  # ties
    label = (rng.random(n) < pred).astype(np.int64)
    block = quiet(fed({"uid": uid, "pred": pred, "label": label})).all
    aucs, rows = [], []
    for u in np.unique(uid):
        mine = uid == u
        if 0 < label[mine].sum() < mine.sum():
            aucs.append(roc_auc_score(label[mine], pred[mine]))
            rows.append(mine.sum())
    assert block.valid_user_count == len(aucs)
    assert block.uauc == pytest.approx(np.mean(aucs), abs=1e-12)
    assert block.wuauc == pytest.approx(np.average(aucs, weights=rows), abs=1e-12)
    assert block.logloss == pytest.approx(
        -np.mean(np.log(np.where(label == 1, np.clip(pred.astype(np.float64), 1e-15, 1),
                                 np.clip(1 - pred.astype(np.float64), 1e-15, 1)))), rel=1e-12)


def test_click_weighted_gauc_by_user_and_position(rng: np.random.Generator) -> None:
    rows = rows_for(rng, 2000, 60)
    position = rng.integers(0, 3, len(rows["uid"]))
    metric = WuaucMetric(comm=Comm.local(), extra_keys=("position",))
    metric.update(rows["uid"], rows["pred"], rows["label"], rows["tag"],
                  keys={"position": position})
    got = quiet(metric).to_dict()["tags"]
    groups = list(zip(rows["uid"].tolist(), position.tolist(), strict=True))
    want = oracle(groups, rows["pred"].tolist(), rows["label"].tolist(), rows["tag"].tolist())
    assert_matches(got, want)
    assert got["all"]["click_wuauc"] != got["all"]["wuauc"]
    with pytest.raises(InputError, match="key columns"):
        metric.update(rows["uid"], rows["pred"], rows["label"])


def test_rows_without_a_tag_count_in_all_only(rng: np.random.Generator) -> None:
    rows = rows_for(rng, 1200, 80)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(rows["uid"][:500], rows["pred"][:500], rows["label"][:500])
    metric.update(rows["uid"][500:], rows["pred"][500:], rows["label"][500:], rows["tag"][500:])
    tags = [None] * 500 + rows["tag"][500:].tolist()
    want = oracle(rows["uid"].tolist(), rows["pred"].tolist(), rows["label"].tolist(), tags)
    assert_matches(quiet(metric).to_dict()["tags"], want)


def test_without_tags_there_is_one_block(rng: np.random.Generator) -> None:
    rows = rows_for(rng, 800, 50)
    del rows["tag"]
    result = quiet(fed(rows))
    assert result.tags == ("all",)
    assert len(result.to_log_line("x").splitlines()) == 1


def test_integer_tags_sort_as_numbers(rng: np.random.Generator) -> None:
    rows = rows_for(rng, 600, 30)
    rows["tag"] = rng.choice(np.array([10, 2, 33]), 600)
    result = quiet(fed(rows))
    assert result.tags == ("all", "2", "10", "33")
    assert [line.split()[1] for line in result.to_log_line("n").splitlines()] == [
        "Tag=all", "Tag=2", "Tag=10", "Tag=33"]
    assert result[10].real_ins_num == int((rows["tag"] == 10).sum())


# -- the per-user kernel ---------------------------------------------------------------


def user_auc_sums(*args: Any, **kwargs: Any) -> tuple[np.ndarray, bool]:
    """The kernel's sums rounded to floats (it returns exact accumulators)."""
    sums, collision = exact_user_auc_sums(*args, **kwargs)
    return exact.to_floats(sums), collision


def oracle_user_sums(keys, pred, label, tag, n_tags: int) -> np.ndarray:
    """``USER_SUM_FIELDS`` per block by pair counting (:func:`oracle_users.user_auc`),
    then ``MOMENT_FIELDS`` (:func:`oracle_users.group_moments`)."""
    return np.concatenate([_oracle_auc_sums(keys, pred, label, tag, n_tags), np.array(
        group_moments(keys.tolist(), np.abs(pred).tolist(), label.tolist(), tag.tolist(),
                      n_tags))], axis=1)


def _oracle_auc_sums(keys, pred, label, tag, n_tags: int) -> np.ndarray:
    sums = np.zeros((1 + n_tags, len(USER_SUM_FIELDS)))
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (key, code) in enumerate(zip(keys.tolist(), tag.tolist(), strict=True)):
        groups.setdefault((0, key), []).append(i)
        if code < n_tags:
            groups.setdefault((1 + code, key), []).append(i)
    for (block, _), rows in groups.items():
        auc = user_auc(pred[rows].tolist(), label[rows].tolist())
        clicks = int(label[rows].sum())
        sums[block, 0] += 1
        if auc != -1.0:
            n = len(rows)
            sums[block, 1:] += (1, n, clicks, auc, auc * n, auc * clicks, auc * auc, n * n,
                                auc * n * n, auc * auc * n * n, n * n * n)
    return sums


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3), st.integers(0, 1),
                       st.integers(0, 3)), max_size=150),
    st.sampled_from([np.float32, np.float64]),
)
def test_user_auc_sums_match_pair_counting(rows, dtype) -> None:
    """Ties in any order, tag code 3 untagged."""
    array = np.array(rows, dtype=np.int64).reshape(-1, 4)
    keys = array[:, 0].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # spread bits
    pred = (array[:, 1] / 3).astype(dtype)
    label = array[:, 2].astype(np.uint8)
    tag = array[:, 3].astype(np.uint32)
    got, collision = user_auc_sums(keys, None, pred, label, tag, 3)
    assert not collision
    np.testing.assert_allclose(got, oracle_user_sums(keys, pred, label, tag, 3), rtol=1e-12)


def test_user_auc_sums_of_long_users_and_near_ties(rng: np.random.Generator) -> None:
    """Users up to 3000 rows, float64 preds 2**-40 apart, ties; without tags and with."""
    counts = np.r_[rng.integers(1, 30, 200), rng.integers(30, 300, 10), [3000]]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred = rng.integers(0, 20, n) / 20 + rng.integers(0, 3, n) * 2.0**-40
    label = (rng.random(n) < 0.4).astype(np.uint8)
    tag = rng.integers(0, 6, n).astype(np.uint32)  # 5: untagged
    order = rng.permutation(n)
    keys, pred, label, tag = keys[order], pred[order], label[order], tag[order]
    got, _ = user_auc_sums(keys, None, pred, label, tag, 5)
    np.testing.assert_allclose(got, oracle_user_sums(keys, pred, label, tag, 5), rtol=1e-12)
    untagged, _ = user_auc_sums(keys, None, pred, label, None, 0)
    np.testing.assert_allclose(untagged, got[:1], rtol=1e-12)


@pytest.mark.parametrize("avx2", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_tags", [0, 3, 300])
def test_moments_in_the_auc_pass_have_the_bits_of_the_weighted_pass(
        rng: np.random.Generator, dtype: type, n_tags: int, avx2: bool) -> None:
    """Without weights the AUC pass sums the moments from the grouped rows (one key a
    row, sorted within each tag); with weights of one a pass of their own sums the same
    rows as structs (every weight 1, so every product as without): the same bits. Users of
    1 row to more than a chunk, ties, 0.0 and -0.0, preds clipped and near 1, rows without a
    tag, 1,000 parts' worth of rows (the pass in parts on threads). The AVX2 copies of the
    loops (the logloss terms of a long user's rows among them) and the baseline's alike
    (use_avx2; the weighted pass's terms are computed a row at a time)."""
    counts = np.r_[rng.integers(1, 4, 3000), rng.integers(4, 60, 300), [CHUNK + 500, 4000]]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred = np.round(rng.random(n), 3)
    pred[rng.random(n) < 0.05] = 0.0
    pred[rng.random(n) < 0.05] = -0.0
    edges = rng.random(n) < 0.05
    pred[edges] = rng.choice([1e-300, 1e-16, 1e-15, 1 - 1e-15, 1 - 2.0**-30, 1.0, 1e-7],
                             int(edges.sum()))
    pred = pred.astype(dtype)
    label = (rng.random(n) < 0.3).astype(np.uint8)
    tag = rng.integers(0, n_tags + 1, n).astype(np.uint32)  # n_tags: untagged
    order = rng.permutation(n)
    keys, pred, label, tag = keys[order], pred[order], label[order], tag[order]
    fields, moments = len(USER_SUM_FIELDS), len(MOMENT_FIELDS)
    was = _core.logloss.use_avx2(avx2)
    try:
        alone, _ = exact_user_auc_sums(keys, None, pred, label, tag if n_tags else None,
                                       n_tags)
    finally:
        _core.logloss.use_avx2(was)
    weighted, _ = exact_user_auc_sums(keys, None, pred, label, tag if n_tags else None,
                                      n_tags, weight=np.ones(n))
    got, expected = (exact.to_floats(sums[:, fields:fields + moments])
                     for sums in (alone, weighted))
    assert np.all(got[:, 2] > 0)  # every block has groups
    np.testing.assert_array_equal(got, expected)


def expected_groups(keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The grouping's packed rows by a plain loop: ``user << row_bits | row``, users
    numbered in order of their first row, each user's rows in row order."""
    row_bits = max(len(keys) - 1, 1).bit_length()
    users: dict[int, list[int]] = {}
    for row in rows.tolist():
        users.setdefault(int(keys[row]), []).append(row)
    return np.array([number << row_bits | row for number, (_, of_user)
                     in enumerate(users.items()) for row in of_user], dtype=np.uint64)


@pytest.mark.parametrize("users", [1, 300, 5000])
def test_the_rows_group_by_user_in_order_of_first_row(
        rng: np.random.Generator, users: int) -> None:
    """The table of one part's users (grown from its first 4,096 slots when there are many)
    against a plain loop; keys whose table slots coincide (the low 12 bits of their mix)
    probe past each other."""
    keys = rng.integers(0, 2**64 - 1, users, dtype=np.uint64)
    pool = rng.integers(0, 2**64 - 1, 400_000, dtype=np.uint64)
    pool = pool[kernel_keys.mix64(pool) % np.uint64(4096) == 7]
    shared = min(len(pool), users // 2)
    keys[:shared] = pool[:shared]
    row_keys = keys[rng.integers(0, users, 20_000)]
    n = len(row_keys)
    row_bits = (n - 1).bit_length()
    packed = np.empty(n, np.uint64)
    none = np.zeros(0, np.uint8)
    assert not _core.wuauc.group(row_keys, np.zeros(0, np.uint32), none, 0, packed, row_bits)
    np.testing.assert_array_equal(packed, expected_groups(row_keys, np.arange(n)))


def test_grouping_refuses_a_packed_array_not_of_the_part_s_rows(rng: np.random.Generator) -> None:
    keys = rng.integers(0, 2**64 - 1, 1000, dtype=np.uint64)
    parts, sizes = np.empty(1000, np.uint8), np.zeros(8, np.int64)
    _core.wuauc.parts(keys, parts, 3, sizes)
    for size in (sizes[2] - 1, sizes[2] + 1):  # never written past, nor left half unwritten
        with pytest.raises(ValueError, match="rows than packed"):
            _core.wuauc.group(keys, np.zeros(0, np.uint32), parts, 2, np.empty(size, np.uint64), 10)


@pytest.mark.parametrize("n", [7, 8, 10_003])
def test_each_part_groups_its_own_rows(rng: np.random.Generator, n: int) -> None:
    """The rows of a part are found 8 part bytes at a time (any n, not only a multiple of
    8), in batches: each part's grouping holds exactly its rows, by user in row order."""
    keys = rng.integers(0, 2**64 - 1, n, dtype=np.uint64)
    keys[::3] = keys[0]  # a heavy user: all its rows in one part
    parts, sizes = np.empty(n, np.uint8), np.zeros(8, np.int64)
    _core.wuauc.parts(keys, parts, 3, sizes)
    np.testing.assert_array_equal(parts, kernel_keys.mix64(keys) >> np.uint64(61))
    row_bits = max(n - 1, 1).bit_length()
    for part in range(8):
        packed = np.empty(sizes[part], np.uint64)
        _core.wuauc.group(keys, np.zeros(0, np.uint32), parts, part, packed, row_bits)
        np.testing.assert_array_equal(packed,
                                      expected_groups(keys, np.flatnonzero(parts == part)))


def test_user_auc_sums_with_more_tags_than_a_user_has_rows(rng: np.random.Generator) -> None:
    """Long users' rows grouped by tag with a merge sort (fewer rows than tag codes)."""
    counts = rng.integers(17, 120, 30)
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred = (rng.integers(0, 8, n) / 8).astype(np.float32)
    label = (rng.random(n) < 0.5).astype(np.uint8)
    tag = rng.integers(0, 160, n).astype(np.uint32)  # 150 and above: untagged
    got, _ = user_auc_sums(keys, None, pred, label, tag, 150)
    np.testing.assert_allclose(got, oracle_user_sums(keys, pred, label, tag, 150), rtol=1e-12)


def test_users_longer_than_a_chunk_beside_short_ones(rng: np.random.Generator) -> None:
    """Users of more rows than the gathered chunk (``CHUNK``), read where they lie, beside
    short and long ones gathered a chunk at a time; -0.0 and 0.0 preds are one value; a
    key with two checks is reported."""
    counts = np.r_[rng.integers(1, 17, 1500), rng.integers(17, 400, 100), [CHUNK + 1, 2 * CHUNK]]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred = rng.integers(0, 12, n) / 11
    pred[(pred == 0) & (rng.random(n) < 0.5)] = -0.0
    label = (rng.random(n) < 0.4).astype(np.uint8)
    tag = rng.integers(0, 4, n).astype(np.uint32)  # 3: untagged
    order = rng.permutation(n)
    keys, pred, label, tag = keys[order], pred[order], label[order], tag[order]
    assert np.signbit(pred[pred == 0]).any()
    expected = oracle_user_sums(keys, np.abs(pred), label, tag, 3)
    checks = keys * np.uint64(3)
    got, collision = user_auc_sums(keys, checks, pred, label, tag, 3)
    assert not collision
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    checks[rng.integers(0, n)] += np.uint64(1)
    assert user_auc_sums(keys, checks, pred, label, tag, 3)[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_compared_user_longer_than_a_chunk_is_sorted_once_per_model(
        rng: np.random.Generator, dtype) -> None:
    """With ``compare``, the first model's pass leaves the grouped rows as they were for
    the second (only the last pass sorts a long user in place): each model's sums equal
    its own run without the other, for a user of more than ``CHUNK`` rows beside short
    ones."""
    counts = np.r_[CHUNK + 3000, rng.integers(1, 30, 300)]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    order = rng.permutation(len(keys))
    keys = keys[order]
    n = len(keys)
    pred_a = (rng.integers(0, 900, n) / 899).astype(dtype)
    pred_b = (rng.integers(0, 700, n) / 699).astype(dtype)
    label = (rng.random(n) < 0.3).astype(np.uint8)
    tag = rng.integers(0, 3, n).astype(np.uint32)
    both, _ = user_auc_sums(keys, None, pred_a, label, tag, 2, compare=pred_b)
    alone_a, _ = user_auc_sums(keys, None, pred_a, label, tag, 2)
    alone_b, _ = user_auc_sums(keys, None, pred_b, label, tag, 2)
    fields, moments = len(USER_SUM_FIELDS), len(MOMENT_FIELDS)
    np.testing.assert_array_equal(both[:, : fields + moments], alone_a)
    np.testing.assert_array_equal(both[:, fields + moments : 2 * fields + moments],
                                  alone_b[:, :fields])


def test_a_long_user_per_tag_equals_sklearn(rng: np.random.Generator) -> None:
    """One user of 30,000 rows with ties and three tags: one sort by pred counts ``all``
    and every tag."""
    n = 30_000
    pred = rng.integers(0, 500, n) / 499
    label = (rng.random(n) < pred).astype(np.uint8)
    tag = rng.integers(0, 3, n).astype(np.uint32)
    sums, _ = user_auc_sums(np.full(n, 5, np.uint64), None, pred, label, tag, 3)
    auc = USER_SUM_FIELDS.index("auc_sum")
    assert sums[0, auc] == pytest.approx(roc_auc_score(label, pred), abs=1e-13)
    for code in range(3):
        rows = tag == code
        assert sums[1 + code, auc] == pytest.approx(roc_auc_score(label[rows], pred[rows]),
                                                    abs=1e-13)


def test_user_auc_sums_report_a_key_with_two_checks() -> None:
    keys = np.array([7, 3, 7, 3, 9], dtype=np.uint64)
    pred = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    label = np.array([0, 1, 1, 0, 1], dtype=np.uint8)
    same = np.array([70, 30, 70, 30, 90], dtype=np.uint64)
    sums, collision = user_auc_sums(keys, same, pred, label, None, 0)
    assert not collision and sums[0, :2].tolist() == [3, 2]
    other = same.copy()
    other[3] = 31
    assert user_auc_sums(keys, other, pred, label, None, 0)[1]
    empty, collision = user_auc_sums(keys[:0], None, pred[:0], label[:0], None, 2)
    assert not collision and not empty.any()
    assert empty.shape == (3, len(USER_SUM_FIELDS) + len(MOMENT_FIELDS))


# -- small data sets ---------------------------------------------------------------------


@st.composite
def data_sets(draw: st.DrawFn) -> dict[str, np.ndarray]:
    n = draw(st.integers(1, 120))
    ints = st.lists(st.integers(0, 12), min_size=n, max_size=n)
    return {
        "uid": np.array(draw(ints)),
        "pred": np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))) / 4,
        "label": np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))),
        "tag": np.array(draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n))),
    }


@settings(max_examples=40, deadline=None)
@given(data_sets())
def test_small_data_sets_match_pair_counting(rows) -> None:
    want = oracle(rows["uid"].tolist(), rows["pred"].tolist(), rows["label"].tolist(),
                  rows["tag"].tolist())
    assert_matches(quiet(fed(rows, batches=1)).to_dict()["tags"], want)


# -- result and log line ---------------------------------------------------------------


def test_the_seed_numbers_give_the_seed_line() -> None:
    block = WuaucBlock(
        tag="all", wuauc=0.835354, uauc=0.829737, logloss=0.506748, actual_ctr=0.498121,
        predicted_ctr=0.50286, copc=0.990576, real_user_count=1995877, real_ins_num=5454408,
        valid_user_count=411705, valid_ins_num=2844012, click_wuauc=0.8, valid_click_num=1,
    )
    assert WuaucResult((block,)).to_log_line("t7_order_wuauc_join") == (
        "t7_order_wuauc_join: Tag=all WUAUC=0.835354 UAUC=0.829737 LogLoss=0.506748 "
        "ActualCTR=0.498121 PredictedCTR=0.50286 COPC=0.990576 RealUserCount=1995877 "
        "RealInsNum=5454408 ValidUserCount=411705 ValidInsNum=2844012"
    )


def test_log_line_and_json_of_a_computed_result() -> None:
    metric = WuaucMetric(comm=Comm.local())
    metric.update([1, 1, 1, 2, 2, 3], [0.1, 0.4, 0.4, 0.3, 0.2, 0.9], [0, 1, 0, 1, 1, 0],
                  ["p", "q", "p", "p", "q", "q"])
    result = quiet(metric)
    # user 1: positive 0.4 vs negatives 0.1 (win) and 0.4 (tie) -> 0.75; others one class
    assert result.to_log_line("j").splitlines()[0] == (
        "j: Tag=all WUAUC=0.75 UAUC=0.75 LogLoss=%g ActualCTR=0.5 PredictedCTR=0.383333 "
        "COPC=1.30435 RealUserCount=3 RealInsNum=6 ValidUserCount=1 ValidInsNum=3"
        % result.all.logloss
    )
    as_json = json.loads(json.dumps(result.to_dict()))
    assert list(as_json["tags"]) == ["all", "p", "q"]
    assert as_json["tags"]["p"]["wuauc"] is None  # tag p: user 1 has one negative only
    assert set(as_json["tags"]["all"]) >= {
        "wuauc", "uauc", "logloss", "actual_ctr", "predicted_ctr", "copc", "real_user_count",
        "real_ins_num", "valid_user_count", "valid_ins_num"}
    assert "Tag=p WUAUC=nan UAUC=nan" in result.to_log_line("j")


def test_undefined_values_warn_once_and_are_nan() -> None:
    metric = WuaucMetric(comm=Comm.local())
    metric.update([1, 2, 2], [0.5, 0.2, 0.1], [1, 0, 0])
    with pytest.warns(UndefinedMetricWarning, match="no user has both labels") as caught:
        result = metric.compute()
    assert len(caught) == 1
    assert math.isnan(result.all.wuauc) and math.isnan(result.all.uauc)
    assert result.all.real_user_count == 2 and result.all.valid_user_count == 0
    empty = WuaucMetric(comm=Comm.local())
    with pytest.warns(UndefinedMetricWarning, match="no rows"):
        nothing = empty.compute()
    assert math.isnan(nothing.all.logloss) and nothing.all.real_ins_num == 0
    zero = WuaucMetric(comm=Comm.local())
    zero.update([1, 1], [0.0, 0.0], [0, 1])
    with pytest.warns(UndefinedMetricWarning, match="COPC"):
        assert math.isnan(zero.compute().all.copc)


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "values", "field", "count", "first"),
    [
        ("uid", np.array([1.0, np.nan, 3.0, np.nan]), "uid", 2, 1),
        ("uid", np.array(["a", None, "c", "d"], dtype=object), "uid", 1, 1),
        ("uid", np.array(["a", "b", "", "d"]), "uid", 1, 2),
        ("pred", np.array([0.1, 1.5, 0.3, -1.0]), "pred", 2, 1),
        ("pred", np.array([0.1, np.nan, 0.3, 0.2]), "pred", 1, 1),
        ("label", np.array([0, 1, 2, 1]), "label", 1, 2),
        ("label", np.array([0.0, 0.5, 1.0, 1.0]), "label", 1, 1),
        ("tag", np.array(["a", None, "b", "a"], dtype=object), "tag", 1, 1),
        ("tag", np.array(["a", "b", "", "a"]), "tag", 1, 2),
    ],
)
def test_bad_input_names_field_count_and_first_index(column, values, field, count, first) -> None:
    rows = {"uid": np.array([1, 2, 3, 4]), "pred": np.array([0.1, 0.2, 0.3, 0.4]),
            "label": np.array([0, 1, 0, 1]), "tag": np.array(["a", "b", "a", "b"])}
    rows[column] = values
    metric = WuaucMetric(comm=Comm.local())
    with pytest.raises(InputError) as caught:
        metric.update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    assert (caught.value.field, caught.value.count, caught.value.first_index) == (
        field, count, first)
    with pytest.raises(InputError) as again:  # the next compute fails too, on every rank
        metric.compute()
    assert again.value.field == field
    assert metric.rows == 0  # nothing of the bad batch was kept


@pytest.mark.parametrize(
    ("update", "match"),
    [
        (lambda m: m.update([1, 2], [0.1], [0, 1]), "length"),
        (lambda m: m.update([1, 2], [0.1, 0.2], [0, 1], ["a"]), "length"),
        (lambda m: m.update([1, 2], [0.1, 0.2], [0, 1], ["all", "a"]), "'all'"),
        (lambda m: m.update([1, 2], [0.1, 0.2], [0, 1], [0.5, 1.5]), "integers or strings"),
        (lambda m: m.update([[1, 2]], [0.1, 0.2], [0, 1]), "1-D"),
    ],
)
def test_bad_shapes_and_reserved_tag(update, match) -> None:
    with pytest.raises(InputError, match=match):
        update(WuaucMetric(comm=Comm.local()))


def test_uid_and_tag_kinds_must_not_change_between_batches() -> None:
    metric = WuaucMetric(comm=Comm.local())
    metric.update([1, 2], [0.1, 0.2], [0, 1], ["a", "b"])
    with pytest.raises(InputError, match="integer uids in one batch"):
        metric.update(["x", "y"], [0.1, 0.2], [0, 1])
    with pytest.raises(InputError, match="integer tags in one batch"):
        metric.update([1, 2], [0.1, 0.2], [0, 1], [3, 4])


# -- state -----------------------------------------------------------------------------


def test_row_cost_is_seventeen_bytes_for_integer_uids_and_float32_preds() -> None:
    metric = WuaucMetric(comm=Comm.local())
    metric.update(np.arange(10), np.full(10, 0.5, dtype=np.float32), np.zeros(10, np.int8))
    assert metric.state.rows("rows").row_nbytes == 17  # 8 key, 4 pred, 1 label, 4 tag
    metric.update(np.arange(10), np.full(10, 0.1), np.zeros(10, np.int8))  # not a float32
    assert metric.state.rows("rows").row_nbytes == 21
    assert quiet(metric).all.predicted_ctr == pytest.approx((0.5 * 10 + 0.1 * 10) / 20)


def test_with_auc_in_one_evaluator(rng: np.random.Generator) -> None:
    rows = rows_for(rng, 500, 20)
    ev = Evaluator({"ctr": AucMetric(comm=Comm.local()), "t7": WuaucMetric(comm=Comm.local())},
                   comm=Comm.local())
    ev["ctr"].update(rows["pred"], rows["label"])
    ev["t7"].update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        results = ev.compute()
    lines = ev.log_lines(results)
    assert lines[0].startswith("ctr: auc=")
    assert [line.split()[1] for line in lines[1:]] == ["Tag=all", "Tag=a", "Tag=b", "Tag=c"]
    assert_same(results["t7"].to_dict()["tags"], quiet(fed(rows)).to_dict()["tags"])


# -- size ------------------------------------------------------------------------------


def test_a_user_with_200000_rows(rng: np.random.Generator) -> None:
    n = 200_000
    pred = rng.random(n).astype(np.float32)
    label = (rng.random(n) < pred).astype(np.int8)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(np.full(n, 42), pred, label)
    metric.update(np.array([7, 7]), np.array([0.1, 0.2], np.float32), np.array([0, 1]))
    with pytest.warns(UndefinedMetricWarning, match="ci95 of UAUC and WUAUC needs 10 valid"):
        block = metric.compute().all
    expected = roc_auc_score(label, pred)
    assert block.valid_user_count == 2 and block.real_ins_num == n + 2
    assert block.uauc == pytest.approx((expected + 1.0) / 2, abs=1e-12)
    assert block.wuauc == pytest.approx((expected * n + 2) / (n + 2), abs=1e-12)


def test_a_million_users_with_one_row_each(rng: np.random.Generator) -> None:
    n = 1_000_000
    uid = rng.permutation(n).astype(np.int64) * 7919
    pred = rng.random(n).astype(np.float32)
    label = rng.integers(0, 2, n)
    metric = WuaucMetric(comm=Comm.local())
    for part in np.array_split(np.arange(n), 4):
        metric.update(uid[part], pred[part], label[part])
    metric.update(np.array([-5, -5]), np.array([0.3, 0.2], np.float32), np.array([1, 0]))
    with pytest.warns(UndefinedMetricWarning, match="ci95 of UAUC and WUAUC needs 10 valid"):
        block = metric.compute().all
    ci = block.ci()
    assert ci["uauc"] is None and ci["wuauc"] is None
    assert all(ci[name] is not None for name in ("actual_ctr", "predicted_ctr", "copc",
                                                 "logloss"))  # a million users
    assert block.real_user_count == n + 1
    assert block.valid_user_count == 1 and block.valid_ins_num == 2
    assert block.uauc == 1.0 and block.wuauc == 1.0
    assert block.real_ins_num == n + 2


def test_empty_batches_and_a_rejected_batch_change_nothing() -> None:
    metric = WuaucMetric(comm=Comm.local())
    metric.update([], [], [], [])  # an empty float array: no uid kind is fixed by it
    with pytest.raises(InputError, match="'all'"):
        metric.update(["u", "v"], [0.1, 0.2], [0, 1], ["q", "all"])
    assert metric.rows == 0 and metric._tags.values == []  # no "q" from the rejected batch
    metric.reset()  # forget the recorded error
    metric.update(["a", "a", "b"], [0.5, 0.5, 0.5], [1, 0, 1], ["x", "x", "y"])
    result = quiet(metric)
    assert result.tags == ("all", "x", "y")
    assert result.all.uauc == 0.5  # one tie: half a pair


@settings(max_examples=80, deadline=None)
@given(codes=st.lists(st.integers(0, 30), max_size=200), as_text=st.booleans())
def test_distinct_tags_equal_numpy_unique(codes, as_text):
    """The tag grouping (a comparison per value while few, then a sort) against np.unique."""
    from mpieval.tags import _distinct

    values = np.array([f"t{c}" if as_text else c * 7 for c in codes],
                      dtype=str if as_text else np.int64)
    distinct, inverse = _distinct(values)
    assert sorted(distinct) == np.unique(values).tolist()
    assert len(set(distinct)) == len(distinct)
    assert [distinct[i] for i in inverse] == values.tolist()
    assert all(type(v) is (str if as_text else int) for v in distinct)


# -- intervals (users as independent clusters) --------------------------------------------


def test_interval_stderrs_equal_the_cluster_formulas_over_users(rng) -> None:
    """Plain Python over the users' own AUCs: ``uauc``'s standard error is the sample
    standard deviation of the AUCs (V - 1) over sqrt(V), ``wuauc``'s the delta method of a
    ratio over sqrt(k), k = 1 - 2 sum n^3 / (sum n sum n^2) + sum n^2 / (sum n)^2 (V - 1 / V
    for equal rows); the ``uauc`` interval uses Student's t with V - 1 degrees of freedom,
    the ``wuauc`` one (sum n)^2 / sum n^2 - 1."""
    uid, pred, label = simulation.users(rng, 300, 1.0, 0.5, mean_rows=6)
    tag = np.where(uid % 3 == 0, "a", "b")
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid, pred, label, tag)
    result = quiet(metric)
    for name, rows in (("all", np.ones(len(uid), bool)), ("a", tag == "a")):
        aucs, counts = [], []
        for user in np.unique(uid[rows]):
            mine = rows & (uid == user)
            auc = user_auc(pred[mine].tolist(), label[mine].tolist())
            if auc != -1.0:
                aucs.append(auc)
                counts.append(int(mine.sum()))
        a, n = np.array(aucs), np.array(counts, dtype=np.float64)
        uauc, wuauc = a.mean(), (n * a).sum() / n.sum()
        block = result[name]
        v = len(a)
        assert block.stderr["uauc"] == pytest.approx(a.std(ddof=1) / math.sqrt(v), rel=1e-9)
        k = 1 - 2 * (n**3).sum() / (n.sum() * (n**2).sum()) + (n**2).sum() / n.sum() ** 2
        assert block.stderr["wuauc"] == pytest.approx(
            math.sqrt((n * n * (a - wuauc) ** 2).sum() / k) / n.sum(), rel=1e-9)
        low, high = block.ci()["uauc"]
        assert (low + high) / 2 == pytest.approx(uauc)
        assert high - low == pytest.approx(2 * stats.t_value(0.95, v - 1) * block.stderr["uauc"])
        low, high = block.ci()["wuauc"]
        assert high - low == pytest.approx(2 * stats.t_value(
            0.95, n.sum() ** 2 / (n**2).sum() - 1) * block.stderr["wuauc"])
        assert block.to_dict()["ci95"]["wuauc"] == list(block.ci()["wuauc"])


@pytest.mark.slow
@pytest.mark.parametrize(("n_users", "d_mean", "d_sd"), [(500, 1.0, 0.5), (2000, 0.5, 0.3)])
def test_uauc_and_wuauc_intervals_cover_the_truth(n_users, d_mean, d_sd) -> None:
    """1,000 simulated user sets (a share's standard error 0.7 points); the full table is
    in scripts/stats_coverage.py."""
    coverage = simulation.user_coverage(np.random.default_rng(2027), 1000, n_users, d_mean,
                                        d_sd)
    assert all(0.93 <= share <= 0.97 for share in coverage.values()), coverage


# -- two models compared (compare=) ----------------------------------------------------------


def _paired(rng: np.random.Generator, n: int = 3000) -> dict[str, np.ndarray]:
    a = np.round(rng.random(n), 2)
    return {"uid": rng.integers(0, 300, n), "pred": a,
            "label": (rng.random(n) < 0.3).astype(np.int64),
            "tag": np.where(rng.random(n) < 0.5, "x", "y"),
            "compare": np.round(np.clip(a + rng.normal(0, 0.2, n), 0, 1), 2)}


def test_compare_matches_the_paired_per_user_oracle(rng) -> None:
    """``D_u = AUC_B - AUC_A`` per valid user by pair counting (ties one half): the
    differences are their mean and row-weighted mean, the standard errors those of the
    cluster formulas over the ``D_u``, B's values its own UAUC and WUAUC."""
    data = _paired(rng)
    metric = WuaucMetric(comm=Comm.local(), compare="model_b")
    metric.update(data["uid"], data["pred"], data["label"], data["tag"],
                  compare=data["compare"])
    result = quiet(metric)
    alone = WuaucMetric(comm=Comm.local())
    alone.update(data["uid"], data["compare"], data["label"], data["tag"])
    b_alone = quiet(alone)
    for name in ("all", "x", "y"):
        rows = np.ones(len(data["uid"]), bool) if name == "all" else data["tag"] == name
        diffs, counts = [], []
        for user in np.unique(data["uid"][rows]):
            mine = rows & (data["uid"] == user)
            labels = data["label"][mine].tolist()
            auc_a = user_auc(data["pred"][mine].tolist(), labels)
            if auc_a != -1.0:
                diffs.append(user_auc(data["compare"][mine].tolist(), labels) - auc_a)
                counts.append(int(mine.sum()))
        d, n = np.array(diffs), np.array(counts, dtype=np.float64)
        weighted = (n * d).sum() / n.sum()
        c = result[name].compare
        assert c is not None and c.pred == "model_b"
        assert c.uauc_diff == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)
        assert c.wuauc_diff == pytest.approx(weighted, rel=1e-12, abs=1e-15)
        # the cluster formulas with the small-sample factor: V - 1 for V users, and for
        # users weighted by their rows k = 1 - 2 sum n^3 / (sum n sum n^2) + sum n^2 / (sum n)^2
        v = len(d)
        assert c.stderr["uauc_diff"] == pytest.approx(d.std(ddof=1) / math.sqrt(v), rel=1e-9)
        k = 1 - 2 * (n**3).sum() / (n.sum() * (n**2).sum()) + (n**2).sum() / n.sum() ** 2
        assert c.stderr["wuauc_diff"] == pytest.approx(
            math.sqrt((n * n * (d - weighted) ** 2).sum() / k) / n.sum(), rel=1e-9)
        assert (c.uauc, c.wuauc) == (b_alone[name].uauc, b_alone[name].wuauc)
        # B's own intervals are those of a run of B alone
        assert c.own_ci() == {field: b_alone[name].ci()[field] for field in ("uauc", "wuauc")}
    # A's own values do not change with the comparison
    plain = WuaucMetric(comm=Comm.local())
    plain.update(data["uid"], data["pred"], data["label"], data["tag"])
    assert quiet(plain).to_log_line("u") == "\n".join(
        result.to_log_line("u").splitlines()[:3])


def test_compare_json_and_log_lines(rng) -> None:
    data = _paired(rng, 2000)
    metric = WuaucMetric(comm=Comm.local(), compare="pred_b")
    metric.update(data["uid"], data["pred"], data["label"], data["tag"],
                  compare=data["compare"])
    result = quiet(metric)
    block = result.to_dict()["tags"]["x"]["compare"]
    assert list(block) == ["pred", "uauc", "wuauc", "logloss", "copc", "ci95", "uauc_diff",
                           "uauc_diff_ci95", "uauc_diff_p", "wuauc_diff", "wuauc_diff_ci95",
                           "wuauc_diff_p", "logloss_diff", "logloss_diff_ci95",
                           "logloss_diff_p", "copc_diff", "copc_diff_ci95", "copc_diff_p",
                           "uauc_diff_q", "wuauc_diff_q", "logloss_diff_q", "copc_diff_q"]
    assert "uauc_diff_q" not in result.to_dict()["tags"]["all"]["compare"]
    low, high = block["uauc_diff_ci95"]
    assert low < block["uauc_diff"] < high and 0 < block["uauc_diff_p"] <= 1
    lines = result.to_log_line("u").splitlines()
    assert [line.split()[1] for line in lines] == [
        "Tag=all", "Tag=x", "Tag=y", "compare=pred_b", "compare=pred_b", "compare=pred_b"]
    fields = dict(word.split("=") for word in lines[4].split()[1:])
    assert list(fields) == ["compare", "Tag", "UAUC", "WUAUC", "uauc_diff", "uauc_diff_low",
                            "uauc_diff_high", "uauc_diff_p", "wuauc_diff", "wuauc_diff_low",
                            "wuauc_diff_high", "wuauc_diff_p"]
    assert fields["Tag"] == "x" and float(fields["uauc_diff_low"]) == pytest.approx(low, 1e-5)


def test_compare_is_needed_exactly_when_the_metric_compares(rng) -> None:
    data = _paired(rng, 50)
    with pytest.raises(InputError, match="compare: is needed"):
        WuaucMetric(comm=Comm.local(), compare="b").update(
            data["uid"], data["pred"], data["label"])
    with pytest.raises(InputError, match="compare: is given"):
        WuaucMetric(comm=Comm.local()).update(data["uid"], data["pred"], data["label"],
                                              compare=data["compare"])
    with pytest.raises(InputError, match="compare"):
        WuaucMetric(comm=Comm.local(), compare="b").update(
            data["uid"], data["pred"], data["label"], compare=data["compare"] + 1)
    with pytest.raises(InputError, match="compare"):
        WuaucMetric(comm=Comm.local(), compare="")


def test_compare_keeps_float64_preds_of_model_b_whole(rng) -> None:
    """B's preds stay float32 while they are float32 values, then widen (never rounded)."""
    metric = WuaucMetric(comm=Comm.local(), compare="b")
    uid, label = np.array([1, 1, 2, 2]), np.array([0, 1, 0, 1])
    metric.update(uid, np.array([0.5, 0.5, 0.25, 0.75], np.float32), label,
                  compare=np.array([0.5, 0.5, 0.25, 0.75]))
    assert metric.state.rows("rows").dtypes["compare"] == np.float32
    metric.update(uid + 10, np.array([0.1, 0.2]).repeat(2), label,
                  compare=np.array([0.3, 0.3 + 1e-12, 0.1, 0.1]))
    assert metric.state.rows("rows").dtypes["compare"] == np.float64
    assert quiet(metric).all.compare is not None


@pytest.mark.slow
def test_compare_under_the_null_rejects_at_the_level_and_covers_zero() -> None:
    """1,000 user sets scored by two equally good models: p < 0.05 in 3-7% of them, the
    intervals cover 0 in 93-97% (a share's standard error 0.7 points)."""
    rates = simulation.user_ab_rates(np.random.default_rng(2028), 1000, 500, 1.0, 0.5, 0.7)
    for name in ("uauc_diff", "wuauc_diff"):
        assert 0.03 <= rates[f"{name} p<0.05"] <= 0.07, rates
        assert 0.93 <= rates[f"{name} covers"] <= 0.97, rates


def test_coded_tags_equal_the_tag_column(rng: np.random.Generator) -> None:
    """Tags as codes into their values (how the command line passes them): the result of
    the plain column; values no row uses are no tag; 'all', empty and mixed values are
    refused with the first row."""
    from mpieval.validation import Coded

    n = 2000
    uid = rng.integers(0, 50, n)
    pred = rng.random(n)
    label = (rng.random(n) < pred).astype(np.int8)
    values = ("feed", "unused", "search", "video")
    codes = rng.choice([0, 2, 3], n).astype(np.int32)
    plain, coded = WuaucMetric(comm=Comm.local()), WuaucMetric(comm=Comm.local())
    plain.update(uid, pred, label, np.array(values)[codes])
    coded.update(uid[:900], pred[:900], label[:900], Coded(values, codes[:900]))
    coded.update(uid[900:], pred[900:], label[900:], Coded(values, codes[900:]))
    assert coded.compute().to_dict() == plain.compute().to_dict()
    assert coded.compute().tags == ("all", "feed", "search", "video")
    for bad, problem, first in (((("x", "all"), [0, 1, 1]), "reserved", 1),
                                ((("x", ""), [0, 0, 1]), "empty", 2),
                                ((("x", 3), [0, 1, 0]), "strings or all integers", None),
                                ((("x",), [0, 1, 0]), "index", None)):
        with pytest.raises(InputError, match=problem) as raised:
            WuaucMetric(comm=Comm.local()).update([1, 2, 3], [0.1, 0.2, 0.3], [0, 1, 0],
                                                  Coded(bad[0], np.array(bad[1])))
        assert raised.value.first_index == first


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parts_on_threads_give_the_same_bits(rng: np.random.Generator, monkeypatch,
                                            threads: int) -> None:
    """The rows passed in parts, on one or more threads: the same exact sums (and, with
    compare, the same paired groups in the same order) as one pass over every row."""
    from mpieval.kernels import parallel
    from mpieval.kinds.wuauc import kernels

    counts = np.r_[rng.integers(1, 40, 3000), [5000, 2000]]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred, other = rng.integers(0, 50, n) / 49, rng.random(n)
    label = (rng.random(n) < pred).astype(np.uint8)
    tag = rng.integers(0, 4, n).astype(np.uint32)
    whole = exact_user_auc_sums(keys, keys, pred, label, tag, 3, compare=other)
    rows = exact.accumulator(4, 4)
    kernels.row_sums(pred, label, tag, np.arange(2**16, dtype=np.uint32), rows)
    monkeypatch.setattr(kernels, "PART_ROWS", 1000)
    monkeypatch.setattr(kernels, "ROW_SLICE", 1000)
    monkeypatch.setattr(parallel, "_threads", threads)
    parts = exact_user_auc_sums(keys, keys, pred, label, tag, 3, compare=other)
    assert np.array_equal(parts[0], whole[0]) and parts[1] == whole[1]
    # without compare (the moments in the AUC pass) and with weights, each thread's sums
    # added to across its parts
    for weight in (None, rng.integers(1, 4, n).astype(np.float64)):
        monkeypatch.setattr(kernels, "PART_ROWS", 10**9)
        one = exact_user_auc_sums(keys, keys, pred, label, tag, 3, weight=weight)
        monkeypatch.setattr(kernels, "PART_ROWS", 1000)
        split = exact_user_auc_sums(keys, keys, pred, label, tag, 3, weight=weight)
        assert np.array_equal(split[0], one[0])
    assert exact.to_floats(parts[0])[0, 1] > 100  # valid users, paired
    sliced = exact.accumulator(4, 4)
    kernels.row_sums(pred, label, tag, np.arange(2**16, dtype=np.uint32), sliced)
    assert np.array_equal(sliced, rows)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["plain", "weighted", "compared"])
@pytest.mark.parametrize("pairs_from", [1, 10**9])
def test_user_sums_rounded_on_a_rank_alone_are_the_floats_of_every_digit(
        rng: np.random.Generator, monkeypatch, threads: int, case: str,
        pairs_from: int) -> None:
    """Many tags: on a rank alone the per-user sums are made as pairs and rounded at
    once: the same floats as the sums made with every digit, with preds of 1e-200 beside
    preds near 1 and weights far apart (bits a pair cannot hold: spilled), in parts on
    threads; given as ``WINDOW``'s digits (or every digit) otherwise, the same digits. Few
    tags: made in ``WINDOW``'s digits (or every digit), rounded in finish."""
    from mpieval.kernels import parallel
    from mpieval.kinds.wuauc import kernels
    from mpieval.kinds.wuauc.kernels import _moments_split, _user_auc_parts, user_auc_windows

    counts = np.r_[rng.integers(1, 30, 800), [300]]
    keys = np.repeat(rng.integers(0, 2**64 - 1, len(counts), dtype=np.uint64), counts)
    n = len(keys)
    pred = rng.random(n)
    pred[rng.random(n) < 0.05] = 1e-200
    label = (rng.random(n) < 0.4).astype(np.uint8)
    tag = rng.integers(0, 50, n).astype(np.uint32)
    weight = 2.0 ** rng.integers(-40, 40, n) if case == "weighted" else None
    compare = rng.random(n) if case == "compared" else None
    monkeypatch.setattr(kernels, "PART_ROWS", 2000)
    monkeypatch.setattr(parallel, "_threads", threads)
    monkeypatch.setattr(exact, "PAIRS_FROM", pairs_from)
    summed, _, outside = _user_auc_parts(keys, None, pred, label, tag, 50, compare, weight,
                                         (0, exact.DIGITS))
    assert not outside
    full = _moments_split([exact.table(part) for part in summed], compare is not None)
    pairs, _, _ = _user_auc_parts(keys, None, pred, label, tag, 50, compare, weight,
                                  exact.PAIRS)
    assert any(len(part.index) for part in pairs)  # some bits spilled
    rounded, firsts, _ = user_auc_windows(keys, None, pred, label, tag, 50, compare=compare,
                                          weight=weight, alone=True)
    assert firsts == [exact.ROUNDED if pairs_from == 1 else 0] * len(full)  # (1e-200)
    for got, first, whole in zip(rounded, firsts, full, strict=True):
        assert np.array_equal(exact.rounded(got, first),
                              exact.to_floats(np.ascontiguousarray(whole)))
    windows, firsts, _ = user_auc_windows(keys, None, pred, label, tag, 50, compare=compare,
                                          weight=weight)
    for got, first, whole in zip(windows, firsts, full, strict=True):
        assert np.array_equal(exact.widened(got, first), whole)


def test_many_small_tags_warn_in_one_short_line() -> None:
    # 40 tags of 3 users each (too few for an interval) and one tag of 30 valid users:
    # one clause names five of the 40 and counts the rest, instead of 40 clauses
    small = [f"t{i:02d}" for i in range(40)]
    uid, tag, pred, label = [], [], [], []
    for number, name in enumerate([*small, "big"]):
        for user in range(30 if name == "big" else 3):
            uid += [number * 100 + user] * 2
            tag += [name] * 2
            pred += [0.2 + 0.01 * user, 0.6 - 0.01 * user]
            label += [0, 1] if user % 4 else [1, 0]
    metric = WuaucMetric(comm=Comm.local())
    metric.update(np.array(uid), np.array(pred), np.array(label), np.array(tag))
    with pytest.warns(UndefinedMetricWarning) as caught:
        result = metric.compute()
    (text,) = [str(w.message) for w in caught]
    # each user's clicks and pred sum are half its rows: the row values' spread is 0
    assert text == ("wuauc: tags all, big: ci95 of actual_ctr is null: its spread over the "
                    "users is 0; tags all, big: ci95 of predicted_ctr is null: its spread "
                    "over the users is 0; tags all, big: ci95 of copc is null: its spread "
                    "over the users is 0; tags t00, t01, t02, t03, t04 and 35 more: ci95 "
                    f"of UAUC and WUAUC needs {stats.MIN_CLUSTERS} valid users, of the "
                    f"other values {stats.MIN_CLUSTERS} users")
    assert all(set(result[name].ci().values()) == {None} for name in small)
    assert result["big"].ci()["uauc"] is not None


def test_a_string_uid_costs_four_bytes_more_its_check_the_low_half_of_the_hash() -> None:
    """A hashed uid keeps 4 bytes of its second hash, the low 32 bits (1 in 2**32 of the
    key collisions goes unseen), beside the 17 bytes of a row."""
    uid = np.array([f"user-{u}" for u in range(10)])
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid, np.full(10, 0.5, dtype=np.float32), np.zeros(10, np.int8))
    assert metric.nbytes == 10 * (17 + 4)
    _, check = uid_keys_checked("uid", uid)
    assert check is not None
    assert metric.state.rows("checks").columns()["check"].tolist() == [
        int(c) & 0xFFFF_FFFF for c in check]


def test_a_state_saved_with_whole_checks_loads_and_goes_on(rng: np.random.Generator) -> None:
    """A state whose checks are whole 64-bit hashes (saved before they were cut to 32 bits)
    loads with its checks cut to 32 bits; later rows of the same users are no collision
    and give the same result."""
    rows = rows_for(rng, 3000, 200, uid_kind="str")
    half = {name: values[:1500] for name, values in rows.items()}
    rest = {name: values[1500:] for name, values in rows.items()}
    metric = WuaucMetric(comm=Comm.local())
    metric.update(**half)
    state = dict(metric.state_dict())
    _, whole = uid_keys_checked("uid", half["uid"])
    assert whole is not None and (whole >> np.uint64(32)).any()
    state["checks.check"] = whole
    restored = WuaucMetric(comm=Comm.local())
    restored.load_state_dict(state)
    assert restored.state.rows("checks").dtypes["check"] == np.uint32  # 4 bytes a row again
    restored.update(**rest)
    once = WuaucMetric(comm=Comm.local())
    once.update(**rows)
    assert quiet(restored).to_dict() == quiet(once).to_dict()


def test_a_state_saved_with_uint16_tag_codes_loads_and_goes_on(rng: np.random.Generator) -> None:
    """A state whose tag codes are uint16 (saved before they were widened to uint32),
    65,535 standing for a row without a tag, loads with uint32 codes and that code moved
    to the new one; later rows with new tags give the result of one metric fed every
    row."""
    first, second, third = (rows_for(rng, 1500, 100) for _ in range(3))
    first["tag"] = rng.choice(np.array(["z", "m"]), 1500)
    del second["tag"]  # rows without a tag
    third["tag"] = rng.choice(np.array(["b", "m"]), 1500)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(**first)
    metric.update(**second)
    state = dict(metric.state_dict())
    codes = np.asarray(state["rows.tag"])
    assert codes.dtype == np.uint32 and (codes == NO_TAG).sum() == 1500
    state["rows.tag"] = np.where(codes == NO_TAG, 2**16 - 1, codes).astype(np.uint16)
    restored = WuaucMetric(comm=Comm.local())
    restored.load_state_dict(state)
    assert np.array_equal(restored.state.rows("rows").columns()["tag"], codes)
    restored.update(**third)
    once = WuaucMetric(comm=Comm.local())
    for rows in (first, second, third):
        once.update(**rows)
    assert quiet(restored).to_dict() == quiet(once).to_dict()


def test_compute_recodes_the_tags_in_place_and_updates_go_on(rng: np.random.Generator) -> None:
    """compute() hands the stored tag column itself to the exchange (recoded to the sorted
    tags, no copy) when every row has a tag; later batches with new tags, and rows without
    a tag, still give the result of one metric fed every row."""
    first = rows_for(rng, 2000, 100)
    first["tag"] = rng.choice(np.array(["z", "m", "b"]), 2000)
    second = rows_for(rng, 2000, 100)
    second["tag"] = rng.choice(np.array(["m", "a", "q"]), 2000)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(**first)
    layout, local_to_global = metric._agree(Comm.local())
    _, columns, _ = metric._outgoing(layout, local_to_global)
    assert np.shares_memory(columns["tag"], metric.state.rows("rows").columns()["tag"])
    quiet(metric)
    metric.update(**second)
    metric.update(np.arange(5), np.full(5, 0.5), np.array([0, 1, 0, 1, 1]))  # no tag
    quiet(metric)
    every = WuaucMetric(comm=Comm.local())
    for batch in (first, second):
        every.update(**batch)
    every.update(np.arange(5), np.full(5, 0.5), np.array([0, 1, 0, 1, 1]))
    assert quiet(metric).to_dict() == quiet(every).to_dict()


@pytest.mark.parametrize("coded", [False, True])
@pytest.mark.parametrize("expected", [0, 700, 5000])
def test_reserved_rows_computed_in_place_give_the_same_sums(expected: int, coded: bool) -> None:
    """Text uids hashed, labels narrowed and (coded) tags remapped straight into the
    reserved room (too small, fitting, or none at all) give the same exact sums as one
    update of every row."""
    import pyarrow as pa

    from mpieval.validation import Coded

    rng = np.random.default_rng(8)
    n = 3000
    uid = np.char.add("u", rng.integers(0, 300, n).astype(str))
    pred = rng.integers(0, 40, n) / 39
    label = (rng.random(n) < pred).astype(np.float64)
    tag = rng.choice(np.array(["a", "b"]), n)
    whole = WuaucMetric()
    whole.update(pa.array(uid), pred, label, tag)
    metric = WuaucMetric()
    metric.reserve(expected)
    for start in range(0, n, 500):
        rows = slice(start, start + 500)
        names = tag[rows]
        if coded:  # as the file reader passes tags: uint16 codes into the values
            values = ("b", "a") if start % 1000 else ("a", "b")
            names = Coded(values, (names == values[1]).astype(np.uint32))
        metric.update(pa.array(uid[rows]), pred[rows], label[rows], names)
    assert metric.rows == n
    got, want = metric.compute(), whole.compute()
    assert got.all == want.all and got["a"] == want["a"] and got["b"] == want["b"]


def _unequal_users(rng: np.random.Generator, n_users: int = 60) -> dict[str, np.ndarray]:
    """Users of log-uniform sizes (3 to 200 rows), ties, two tags, a compared model."""
    sizes = np.exp(rng.uniform(np.log(3), np.log(200), n_users)).astype(int)
    uid = np.repeat(np.arange(n_users) * 7 + 3, sizes)
    n = len(uid)
    a = np.round(rng.random(n), 2)
    return {"uid": uid, "pred": a, "label": (rng.random(n) < a).astype(np.int64),
            "tag": np.where(rng.random(n) < 0.5, "x", "y"),
            "compare": np.round(np.clip(a * 0.8 + rng.normal(0, 0.1, n), 0, 1), 2)}


def test_row_value_intervals_and_paired_tests_match_the_cluster_oracle(rng) -> None:
    """Each block's ``ci95`` of ``actual_ctr``, ``predicted_ctr``, ``copc``, ``logloss`` and
    the ``logloss_diff``, ``copc_diff`` of its compare block (value, interval, p-value)
    against :func:`oracle_stats.user_cluster_stats` (users as clusters, Kish's
    effective users for the t degrees of freedom, scipy's t), in ``all`` and per tag."""
    from oracle_stats import user_cluster_stats

    data = _unequal_users(rng)
    metric = WuaucMetric(comm=Comm.local(), compare="b")
    metric.update(data["uid"], data["pred"], data["label"], data["tag"],
                  compare=data["compare"])
    result = quiet(metric).to_dict()["tags"]
    for name in ("all", "x", "y"):
        rows = np.ones(len(data["uid"]), bool) if name == "all" else data["tag"] == name
        want = user_cluster_stats(data["uid"][rows].tolist(), data["pred"][rows].tolist(),
                                  data["label"][rows].tolist(),
                                  compare=data["compare"][rows].tolist())
        block = result[name]
        for value in ("actual_ctr", "predicted_ctr", "copc", "logloss"):
            assert block[value] == pytest.approx(want[value][0], rel=1e-12)
            assert block["ci95"][value] == pytest.approx(want[value][1], rel=1e-9), value
        for diff in ("logloss_diff", "copc_diff"):
            value, pair, p = want[diff]
            assert block["compare"][diff] == pytest.approx(value, rel=1e-9, abs=1e-15)
            assert block["compare"][f"{diff}_ci95"] == pytest.approx(pair, rel=1e-9), diff
            assert block["compare"][f"{diff}_p"] == pytest.approx(p, rel=1e-6, abs=1e-300)
    q = stats.bh_q_values([result[t]["compare"]["copc_diff_p"] for t in ("x", "y")])
    assert [result[t]["compare"]["copc_diff_q"] for t in ("x", "y")] == pytest.approx(q)
    assert "copc_diff_q" not in result["all"]["compare"]


def test_kish_effective_users_set_the_degrees_of_freedom(rng) -> None:
    """WUAUC's interval over 12 users of unequal rows uses t with ``(sum n)^2 / sum n^2 -
    1`` degrees of freedom, UAUC's ``V - 1``; the row values' the effective users of every
    user's rows; one user holding nearly every row (fewer than ``MIN_EFFECTIVE``
    effective users) gives null."""
    from scipy import stats as scipy_stats

    sizes = np.array([2, 2, 2, 3, 3, 4, 5, 8, 20, 40, 80, 160])
    uid = np.repeat(np.arange(len(sizes)), sizes)
    label = np.tile([0, 1], len(uid))[: len(uid)]
    label[np.cumsum(sizes) - sizes] = 1
    label[np.cumsum(sizes) - sizes + 1] = 0
    pred = sigmoid_like(rng, label)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid, pred, label)
    block = quiet(metric).all
    effective = sizes.sum() ** 2 / (sizes.astype(float) ** 2).sum()
    for name, df in (("wuauc", effective - 1), ("uauc", len(sizes) - 1)):
        low, _ = block.ci()[name]  # the upper end may be cut at 1
        t = scipy_stats.t.ppf(0.975, df)
        assert getattr(block, name) - low == pytest.approx(t * block.stderr[name],
                                                           rel=1e-9), name
    low, high = block.ci()["logloss"]  # on the log scale
    t = scipy_stats.t.ppf(0.975, effective - 1)
    assert math.log(high / low) / 2 == pytest.approx(t * block.stderr["logloss"]
                                                     / block.logloss, rel=1e-9)
    heavy = np.r_[sizes[:-1], 100_000]
    uid = np.repeat(np.arange(len(heavy)), heavy)
    label = (np.arange(len(uid)) % 2).astype(int)
    metric = WuaucMetric(comm=Comm.local())
    metric.update(uid, sigmoid_like(rng, label), label)
    with pytest.warns(UndefinedMetricWarning, match="one user holds nearly all the weight"):
        ci = metric.compute().all.ci()
    assert ci["wuauc"] is None and ci["logloss"] is None and ci["uauc"] is not None


def sigmoid_like(rng: np.random.Generator, label: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(rng.standard_normal(len(label)) + label)))


# -- weights -----------------------------------------------------------------------------


def _weighted(rng: np.random.Generator, n: int = 3000, low: int = 1) -> dict[str, np.ndarray]:
    data = _unequal_users(rng, 40)
    n = len(data["uid"])
    return {**data, "weight": rng.integers(low, 4, n).astype(np.float64)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_integer_weights_equal_repeated_rows(rng, dtype) -> None:
    """Every row of weight ``w`` as ``w`` rows: the same counts and AUCs, exactly, and the
    same CTRs, LogLoss, intervals and paired values (to rounding: ``3 p`` is rounded once
    as a product, three times as a sum)."""
    data = _weighted(rng)
    data["pred"], data["compare"] = data["pred"].astype(dtype), data["compare"].astype(dtype)
    weighted = WuaucMetric(comm=Comm.local(), compare="b")
    weighted.update(data["uid"], data["pred"], data["label"], data["tag"],
                    compare=data["compare"], weight=data["weight"])
    repeat = data["weight"].astype(int)
    repeated = WuaucMetric(comm=Comm.local(), compare="b")
    repeated.update(*(np.repeat(data[k], repeat) for k in ("uid", "pred", "label", "tag")),
                    compare=np.repeat(data["compare"], repeat))
    got, want = quiet(weighted).to_dict(), quiet(repeated).to_dict()
    for tag, block in want["tags"].items():
        for name in ("wuauc", "uauc", "click_wuauc", "real_user_count", "real_ins_num",
                     "valid_user_count", "valid_ins_num", "valid_click_num"):
            assert got["tags"][tag][name] == block[name], (tag, name)
        for name in ("uauc_diff", "wuauc_diff", "uauc", "wuauc"):
            assert got["tags"][tag]["compare"][name] == block["compare"][name]
    _close(got["tags"], want["tags"])


def _close(got: Any, want: Any, where: str = "") -> None:
    """Equal structure, numbers to 1e-12 (None where None)."""
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), where
    else:
        assert got == want, where


def test_weighted_values_match_the_weighted_oracles(rng) -> None:
    """A user's AUC with the pair ``(i, j)`` weighing ``w_i w_j`` (ties one half), the
    weighted CTRs and LogLoss, and their intervals over users (weights 0 to 3, fractional
    ones too) against plain Python."""
    from oracle_stats import user_cluster_stats
    from oracle_users import weighted_block

    data = _weighted(rng, low=0)
    data["weight"] = data["weight"] * rng.choice([1.0, 0.5, 0.25], len(data["weight"]))
    metric = WuaucMetric(comm=Comm.local(), compare="b", weights="importance")
    metric.update(data["uid"], data["pred"], data["label"], data["tag"],
                  compare=data["compare"], weight=data["weight"])
    result = quiet(metric).to_dict()
    assert result["weights"] == "importance"
    for name in ("all", "x"):
        rows = np.ones(len(data["uid"]), bool) if name == "all" else data["tag"] == name
        columns = [data[k][rows].tolist() for k in ("uid", "pred", "label", "weight")]
        want = weighted_block(*columns)
        block = result["tags"][name]
        for value, expected in want.items():
            assert block[value] == pytest.approx(expected, rel=1e-12, abs=1e-15), value
        intervals = user_cluster_stats(*columns[:3], compare=data["compare"][rows].tolist(),
                                       weights=columns[3])
        for value in ("actual_ctr", "predicted_ctr", "copc", "logloss"):
            assert block["ci95"][value] == pytest.approx(intervals[value][1], rel=1e-9)
        for diff in ("logloss_diff", "copc_diff"):
            assert block["compare"][f"{diff}_ci95"] == pytest.approx(intervals[diff][1],
                                                                     rel=1e-9)


def test_weights_mixed_with_unweighted_batches_and_merges(rng) -> None:
    """A batch without weights beside weighted ones weighs 1 a row, whichever came first,
    and in a merge of a weighted metric with an unweighted one."""
    data = _weighted(rng)
    ones = data["weight"].copy()
    half = len(ones) // 2
    ones[:half] = 1.0
    want = WuaucMetric(comm=Comm.local())
    want.update(data["uid"], data["pred"], data["label"], data["tag"], weight=ones)
    first = WuaucMetric(comm=Comm.local())
    first.update(*(data[k][:half] for k in ("uid", "pred", "label", "tag")))
    first.update(*(data[k][half:] for k in ("uid", "pred", "label", "tag")),
                 weight=data["weight"][half:])
    other = WuaucMetric(comm=Comm.local())
    other.update(*(data[k][half:] for k in ("uid", "pred", "label", "tag")),
                 weight=data["weight"][half:])
    plain = WuaucMetric(comm=Comm.local())
    plain.update(*(data[k][:half] for k in ("uid", "pred", "label", "tag")))
    expected = quiet(want).to_dict()
    assert quiet(first).to_dict() == expected
    assert quiet(plain.merge(other)).to_dict() == expected
    with pytest.raises(InputError, match="weight"):
        first.update([1], [0.5], [1], weight=[-1.0])


# -- users of unequal size, by simulation (issue 32; the table: scripts/stats_coverage.py
# --hetero-only, docs/statistics.md) ---------------------------------------------------


@pytest.mark.slow
def test_wuauc_over_users_of_unequal_size_covers_and_keeps_its_size() -> None:
    """1,000 tags of 10 valid users of 5-200 rows (log-uniform): ``wuauc`` and ``uauc``
    cover the truth at least 93% of the time (a share's standard error 0.7 points; main
    covered 88.7% for ``wuauc``), their paired tests under the null reject at most 6.5%
    (main: 7.1% for ``wuauc_diff``), and the 10 runs' BH discoveries stay rare."""
    rates = simulation.hetero_tag_rates(np.random.default_rng(2032), 1000, 10, 0.2,
                                        valid=True)
    assert rates["wuauc"] >= 0.93 and rates["uauc"] >= 0.93, rates
    assert rates["wuauc_diff"] <= 0.065 and rates["uauc_diff"] <= 0.065, rates
    assert rates["wuauc_diff fdr"] <= 0.1 and rates["uauc_diff fdr"] <= 0.1, rates
    assert rates["before wuauc"] < 0.92  # the simulation sees what main missed


@pytest.mark.slow
@pytest.mark.parametrize(("prevalence", "ties", "keep"), [
    (0.02, False, 1.0), (0.2, False, 1.0), (0.2, True, 1.0), (0.2, False, 0.1)])
def test_row_value_intervals_over_users_of_unequal_size(prevalence, ties, keep) -> None:
    """1,000 tags of 20 users of 5-200 rows: each row value's interval covers the truth
    (the standard error of a share 0.7 points: the bound is 2 below the table's 93%), and
    ``logloss_diff``, ``copc_diff`` of two equally good models reject at most 6.5%; at a
    CTR of 2% and 20%, with ties, with non-clicks kept at 0.1 (importance weights); the
    predicted CTR at 2% too (on the reciprocal scale since the log scale covered 92.6%:
    users' mean preds spread like a lognormal)."""
    rates = simulation.hetero_tag_rates(np.random.default_rng(2033), 1000, 20, prevalence,
                                        ties=ties, keep=keep)
    bounds = {name: 0.915 for name in simulation.ROW_VALUES}
    assert all(rates[name] >= bounds[name] for name in bounds), rates
    assert rates["logloss_diff"] <= 0.065 and rates["copc_diff"] <= 0.065, rates


@pytest.mark.parametrize("heavy", [False, True])
def test_paired_differences_are_summed_in_the_window_too(rng, heavy) -> None:
    """The paired differences of a compared model (signed sums) are summed in the window of
    digits like the other per-tag sums: the digits of the sums made with every digit;
    weights of 1e20 (a group's ``n^2 D`` beyond 2**78) have every part given with every
    digit."""
    from mpieval.kinds.wuauc.kernels import (
        WINDOW,
        _moments_split,
        _user_auc_parts,
        user_auc_windows,
    )

    n = 4 * 60
    keys = np.repeat(np.arange(1, 61, dtype=np.uint64), 4)
    label = np.tile([0, 1, 0, 1], 60).astype(np.uint8)
    pred, pred_b = rng.random(n), rng.random(n)
    tag = rng.integers(0, 3, n).astype(np.uint32)
    weight = np.full(n, 1e20 if heavy else 1.0)
    parts, firsts, _ = user_auc_windows(keys, None, pred, label, tag, 3, compare=pred_b,
                                        weight=weight)
    assert firsts == [0 if heavy else WINDOW[0]] * 5
    summed, _, outside = _user_auc_parts(keys, None, pred, label, tag, 3, pred_b, weight,
                                         (0, exact.DIGITS))
    full = _moments_split([exact.table(part) for part in summed], compared=True)
    assert not outside and (exact.to_floats(full[3]) < 0).any()  # some sums negative
    for part, first, whole in zip(parts, firsts, full, strict=True):
        assert np.array_equal(exact.widened(part, first), whole)


def test_paired_diff_sums_refuses_sums_of_another_shape() -> None:
    """The compiled paired differences add to ``(blocks, 5, digits)`` sums of the thread's
    window: sums of another width or field count, or groups not ``(G, 3)`` alike, are a
    ValueError, not a write past their end."""
    from mpieval import _core

    groups = np.array([[0.0, 3.0, 0.5]])
    for sums, a, b in [(exact.accumulator(1, 5)[..., :11], groups, groups),  # 11 of 68
                       (exact.accumulator(1, 4), groups, groups),
                       (exact.accumulator(1, 5), groups, groups[:, :2].copy()),
                       (exact.accumulator(1, 5), groups, np.vstack([groups, groups]))]:
        with pytest.raises(ValueError):
            _core.wuauc.paired_diff_sums(a, b, np.ascontiguousarray(sums))
    sums = exact.accumulator(1, 5)
    _core.wuauc.paired_diff_sums(groups, np.array([[0.0, 3.0, 0.75]]), sums)
    assert exact.to_floats(sums)[0, 0] == 0.25


def test_window_falls_back_to_every_digit() -> None:
    """The per-tag sums are summed in a window of digits (many tags); a value below it (a
    pred of 1e-80: its cube is below 2**-178) has them summed again with every digit, the
    same sums: the pred cubes' sum is math.fsum's."""
    from mpieval.kinds.wuauc.kernels import WINDOW, user_auc_windows

    keys = np.arange(1, 7, dtype=np.uint64)  # one row a user: each group's pred is a row's
    label = np.array([0, 1, 0, 1, 0, 1], dtype=np.uint8)
    tag = np.array([0, 0, 1, 1, 0, 1], dtype=np.uint16)
    cube = MOMENT_FIELDS.index("user_pred_cube_sum")
    for pred, first in ((np.array([0.5, 0.25, 0.125, 0.75, 0.3, 0.9]), WINDOW[0]),
                        (np.array([0.5, 1e-80, 0.125, 0.75, 0.3, 0.9]), 0)):
        parts, firsts, _ = user_auc_windows(keys, None, pred, label, tag, 2)
        assert firsts == [first, first]
        moments = exact.window_to_floats(parts[1], firsts[1])
        assert moments[0, cube] == math.fsum(float(p) ** 3 for p in pred)
        for t in (0, 1):
            assert moments[1 + t, cube] == math.fsum(float(p) ** 3 for p in pred[tag == t])


def test_a_compared_block_of_tiny_preds_has_no_copc_difference_interval() -> None:
    """A tag whose preds are all 1e-200 (model A): the standard error of the COPC
    difference squares the inverse of a pred sum past float64's range (inf - inf in its
    ``math.fsum``, which raised): no interval and no p-value there, the other values and
    the other tag's as ever."""
    rng = np.random.default_rng(3)
    n = 400
    pred = rng.random(n)
    pred[:200] = 1e-200
    metric = WuaucMetric(compare="b")
    metric.update(rng.integers(0, 40, n), pred, (rng.random(n) < 0.4).astype(np.int64),
                  np.where(np.arange(n) < 200, "tiny", "usual"), compare=rng.random(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        tags = metric.compute().to_dict()["tags"]
    tiny, usual = tags["tiny"]["compare"], tags["usual"]["compare"]
    assert tiny["copc_diff"] < -1e199 and tiny["copc_diff_ci95"] is None
    assert tiny["copc_diff_p"] is None and tiny["logloss_diff_ci95"] is not None
    assert usual["copc_diff_ci95"] is not None and usual["copc_diff_p"] is not None


def test_weights_whose_total_passes_float64s_range_are_refused_at_compute() -> None:
    """Two batches, each with a row of weight 1e308 (each batch's total fits, and is
    taken): their total passes float64's range, so ``compute()`` refuses the weights (as
    ``auc`` does) rather than give values from an infinite total (``actual_ctr`` 0)."""
    metric = WuaucMetric()
    with_heavy_batches(metric, np.random.default_rng(4), 50)
    with pytest.raises(InputError, match="weights of every batch and rank sum past"):
        metric.compute()


def with_heavy_batches(metric: WuaucMetric, rng: np.random.Generator, rows: int) -> None:
    """Two batches of ``rows`` rows given to ``metric``, each with a row of weight 1e308
    (each batch's total fits float64, the two's does not)."""
    for _ in range(2):
        weight = np.ones(rows)
        weight[0] = 1e308
        metric.update(rng.integers(0, 10, rows), rng.random(rows),
                      (rng.random(rows) < 0.4).astype(np.int64), weight=weight)
