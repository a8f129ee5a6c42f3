"""The ``pn`` kind: the fast count against brute force over all pairs, tie modes, the
seed's log line, undefined values and bad input."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_pairs import pn_pairs_by_user, pn_totals

from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds.pn import TIES_MODES, kernels
from mpieval.kinds.pn.kernels import (
    LONG_USER,
    MAX_CODES,
    pair_counts,
    pair_counts_per_user,
)
from mpieval.kinds.pn.metric import PnMetric, PnResult

SEED_LINE = (
    "res_one_click_join_pn: Average_PN=5.44591 ins_number=7982670 "
    "positive_pairs=45945386 negative_paris=8436670"
)


def grouped(uid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row order that makes each uid contiguous, the uids in that order, and ``starts``."""
    order = np.argsort(uid, kind="stable")
    users, first = np.unique(uid[order], return_index=True)
    return order, users, np.append(first, len(uid))


def kernel_by_user(uid: np.ndarray, pred: np.ndarray, label: np.ndarray,
                   long_user: int = LONG_USER) -> dict:
    order, users, starts = grouped(uid)
    positive, negative, tie = pair_counts_per_user(starts, pred[order], label[order], long_user)
    return {
        u: (int(p), int(n), int(t))
        for u, p, n, t in zip(users.tolist(), positive, negative, tie, strict=True)
    }


def random_rows(rng: np.random.Generator, n: int, users: int, preds: int) -> dict:
    """Graded labels 0..3 and preds drawn from ``preds`` values (heavy ties when small)."""
    return {
        "uid": rng.integers(0, users, size=n),
        "pred": rng.integers(0, preds, size=n) / preds,
        "label": rng.integers(0, 4, size=n).astype(np.float64),
    }


def as_json(expected: dict) -> dict:
    """The oracle's fields as ``to_dict`` gives them: NaN is None (``null``)."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in expected.items()}


def pn_of(comm: Comm, rows: dict, ties: str = "negative") -> PnResult:
    metric = PnMetric(ties=ties, comm=comm)
    metric.update(rows["uid"], rows["pred"], rows["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


# -- the kernel ------------------------------------------------------------------------


# long_user 2: every user of two rows or more takes the long users' one-sort pass
PASSES = pytest.mark.parametrize("long_user", [LONG_USER, 2], ids=["merge-sorts", "one-sort"])


@PASSES
@pytest.mark.parametrize("preds", [1, 2, 5, 1000])
def test_kernel_per_user_equals_brute_force(rng: np.random.Generator, preds: int,
                                            long_user: int) -> None:
    rows = random_rows(rng, 600, 25, preds)
    assert kernel_by_user(rows["uid"], rows["pred"], rows["label"], long_user) == pn_pairs_by_user(
        rows["uid"].tolist(), rows["pred"].tolist(), rows["label"].tolist()
    )


@PASSES
def test_kernel_real_labels_and_long_users(rng: np.random.Generator, long_user: int) -> None:
    """Users longer than the insertion-sort runs, dwell-time labels with repeats (more
    than ``MAX_CODES`` distinct labels: the merge sorts whatever ``long_user``)."""
    n = 1500
    uid = rng.integers(0, 4, size=n)
    pred = np.round(rng.normal(size=n), 1)
    label = np.round(rng.exponential(30.0, size=n))
    assert kernel_by_user(uid, pred, label, long_user) == pn_pairs_by_user(
        uid.tolist(), pred.tolist(), label.tolist()
    )


pred_values = st.one_of(
    st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.0]),
    st.floats(-1e6, 1e6, allow_nan=False),
)
label_values = st.one_of(st.integers(0, 3).map(float), st.floats(-5, 5, allow_nan=False))
row_lists = st.lists(st.tuples(st.integers(0, 4), pred_values, label_values), max_size=60)


@settings(max_examples=200, deadline=None)
@given(row_lists, st.sampled_from([LONG_USER, 2, 5]))
def test_kernel_equals_brute_force_on_any_rows(rows: list[tuple[int, float, float]],
                                               long_user: int) -> None:
    uid = np.array([r[0] for r in rows], dtype=np.int64)
    pred = np.array([r[1] for r in rows], dtype=np.float64)
    label = np.array([r[2] for r in rows], dtype=np.float64)
    assert kernel_by_user(uid, pred, label, long_user) == pn_pairs_by_user(
        uid.tolist(), pred.tolist(), label.tolist()
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(1, MAX_CODES + 2), st.integers(1, 400), st.integers(0, 2**32 - 1))
def test_long_user_pass_equals_the_merge_sorts(labels: int, preds: int, seed: int) -> None:
    """A heavy user's one-sort pass against the two merge sorts, up to and past
    ``MAX_CODES`` distinct labels (past it: the merge sorts), preds of both signs with
    ties and -0.0 beside 0.0."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(LONG_USER, 3 * LONG_USER))
    pred = (rng.integers(-preds, preds + 1, size=m) / preds).astype(np.float64)
    pred[rng.random(m) < 0.05] = -0.0
    label = rng.integers(0, labels, size=m).astype(np.float64) * 0.5 - 3.0
    starts = np.array([0, m])
    assert (pair_counts(starts, pred, label) == pair_counts(starts, pred, label, m + 1)
            == pair_counts(starts, pred, label, 2))


def test_one_heavy_user_beside_light_users_equals_brute_force(rng: np.random.Generator) -> None:
    """One user with a third of the rows (the one-sort pass) among light users."""
    n = 3000
    uid = rng.integers(0, 400, size=n)
    uid[rng.random(n) < 1 / 3] = 10**12
    pred = rng.integers(0, 50, size=n) / 50
    label = (rng.random(n) < 0.3).astype(np.float64)
    assert kernel_by_user(uid, pred, label) == pn_pairs_by_user(
        uid.tolist(), pred.tolist(), label.tolist()
    )


def test_kernel_ignores_row_order_inside_a_user(rng: np.random.Generator) -> None:
    rows = random_rows(rng, 400, 1, 7)
    starts = np.array([0, 400])
    expected = pair_counts(starts, rows["pred"], rows["label"])
    for _ in range(3):
        shuffle = rng.permutation(400)
        assert pair_counts(starts, rows["pred"][shuffle], rows["label"][shuffle]) == expected


def test_one_user_with_a_million_rows_is_exact() -> None:
    """Counts past 2**32 without enumerating 5e11 pairs: sorted preds, then reversed."""
    m = 1_000_000
    rank = np.arange(m, dtype=np.float64)
    starts = np.array([0, m])
    everything = m * (m - 1) // 2
    assert pair_counts(starts, rank, rank) == (everything, 0, 0)
    assert pair_counts(starts, rank[::-1].copy(), rank) == (0, everything, 0)
    assert pair_counts(starts, np.zeros(m), rank) == (0, 0, everything)
    assert pair_counts(starts, rank, np.zeros(m)) == (0, 0, 0)
    # binary labels: the one-sort pass (the 2**19 lower rows all negatives)
    low = (np.arange(m) >= m // 2).astype(np.float64)
    half = (m // 2) ** 2
    assert pair_counts(starts, rank, low) == (half, 0, 0)
    assert pair_counts(starts, rank[::-1].copy(), low) == (0, half, 0)
    assert pair_counts(starts, np.zeros(m), low) == (0, 0, half)


def test_kernel_edge_shapes() -> None:
    assert pair_counts(np.array([0]), np.zeros(0), np.zeros(0)) == (0, 0, 0)
    assert pair_counts(np.array([0, 0, 1, 1]), np.zeros(1), np.zeros(1)) == (0, 0, 0)
    with pytest.raises(ValueError, match="starts"):
        pair_counts(np.array([0, 3]), np.zeros(2), np.zeros(2))


# -- the metric ------------------------------------------------------------------------


@pytest.mark.parametrize("ties", TIES_MODES)
@pytest.mark.parametrize("preds", [2, 10, 10_000])
def test_metric_equals_brute_force_in_every_tie_mode(
    comm: Comm, rng: np.random.Generator, ties: str, preds: int
) -> None:
    rows = random_rows(rng, 800, 40, preds)
    result = pn_of(comm, rows, ties)
    expected = pn_totals(rows["uid"], rows["pred"], rows["label"], ties)
    got = result.to_dict()
    assert got.pop("ties") == ties
    assert got == as_json(expected)


@settings(max_examples=60, deadline=None)
@given(row_lists, st.sampled_from(TIES_MODES), st.integers(0, 60))
def test_metric_equals_brute_force_in_any_batches(
    comm: Comm, rows: list[tuple[int, float, float]], ties: str, cut: int
) -> None:
    uid = np.array([r[0] for r in rows], dtype=np.int64)
    pred = np.array([r[1] for r in rows], dtype=np.float64)
    label = np.array([r[2] for r in rows], dtype=np.float64)
    metric = PnMetric(ties=ties, comm=comm)
    metric.update(uid[:cut], pred[:cut], label[:cut])
    metric.update(uid[cut:], pred[cut:], label[cut:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = metric.compute().to_dict()
    got.pop("ties")
    assert got == as_json(pn_totals(uid, pred, label, ties))


def test_string_uids_and_integer_inputs(comm: Comm) -> None:
    metric = PnMetric(comm=comm)
    metric.update(["a", "b", "a", "a"], np.array([1, 5, 3, 3], dtype=np.int32), [0, 0, 1, 2])
    metric.update(["b"], [2.0], np.array([1], dtype=np.uint8))
    result = metric.compute()
    # a: (0:p1, 1:p3) pos, (0:p1, 2:p3) pos, (1:p3, 2:p3) tie; b: (0:p5, 1:p2) neg
    assert result.to_dict() == {
        "kind": "pn", "average_pn": 1.0, "ins_number": 5, "positive_pairs": 2,
        "negative_pairs": 2, "tie_pairs": 1, "ties": "negative",
    }


def test_labels_and_preds_are_kept_as_narrow_as_their_values(comm: Comm) -> None:
    """Labels and preds are kept as float32 while every value is a float32 value (graded
    or click labels, a float32 model's preds), and widened to float64 by the first that is
    not (a dwell time, a pred of a float64 model), the rows before it unchanged: the
    counts are those of the values given."""
    rng = np.random.default_rng(7)
    metric = PnMetric(comm=comm)
    stored = metric.state.rows("rows")
    uid = rng.integers(0, 30, 400)
    grades = rng.integers(0, 4, 400)
    pred32 = rng.random(400).astype(np.float32)
    metric.update(uid[:200], pred32[:200], grades[:200])
    assert stored.dtypes["label"] == np.float32 and stored.dtypes["pred"] == np.float32
    dwell = grades[200:] + rng.random(200) / 3  # no float32 value
    pred64 = rng.random(200)
    metric.update(uid[200:], pred64, dwell)
    assert stored.dtypes["label"] == np.float64 and stored.dtypes["pred"] == np.float64
    label = np.concatenate([grades[:200], dwell])
    pred = np.concatenate([pred32[:200].astype(np.float64), pred64])
    got = metric.compute().to_dict()
    got.pop("ties")
    assert got == as_json(pn_totals(uid, pred, label))
    assert len(metric.state.rows("checks")) == 0  # integer uids: their keys are exact


def test_a_label_float32_rounds_is_kept_whole(comm: Comm) -> None:
    """A label that float32 would round to another's value (1 + 2**-30 against 1) widens
    the column: the two still differ, so their pair counts."""
    metric = PnMetric(comm=comm)
    metric.update([1, 1], [0.2, 0.1], [1.0, 1.0 + 2.0**-30])
    assert metric.state.rows("rows").dtypes["label"] == np.float64
    assert metric.compute().to_dict()["negative_pairs"] == 1


def old_state(uid: list, pred: np.ndarray, label: np.ndarray) -> dict:
    """A pn state as format 3 saved it: each row's check beside its key (the key itself
    for an integer uid), preds and labels float64."""
    from mpieval.keys import uid_keys_checked

    keys, checks = uid_keys_checked("uid", np.asarray(uid))
    return {"kind": "pn", "format": np.int64(3), "options.ties": "negative",
            "rows.key": keys, "rows.check": keys if checks is None else checks,
            "rows.pred": np.asarray(pred, np.float64), "rows.label": np.asarray(label, np.float64)}


@pytest.mark.parametrize("text", [False, True], ids=["integer-uids", "string-uids"])
def test_a_state_saved_with_checks_beside_the_keys_loads_as_kept_now(text: bool) -> None:
    """A format-3 state (``rows.check``) loads into the rows as kept now: a string uid's
    check apart (its low 32 bits), none for integer uids, labels and preds float32 when
    their values are; it counts as the rows fed again, and merges with a new state."""
    rng = np.random.default_rng(3)
    uid = rng.integers(0, 40, 300)
    uids = [f"u{u}" for u in uid] if text else uid.tolist()
    pred = rng.integers(0, 20, 300) / 16  # float32 values
    label = rng.integers(0, 3, 300).astype(np.float64)
    saved = old_state(uids[:200], pred[:200], label[:200])
    metric = PnMetric()
    metric.load_state_dict(saved)
    rows = metric.state.rows("rows")
    assert rows.dtypes["pred"] == rows.dtypes["label"] == np.float32
    checks = metric.state.rows("checks").columns()["check"]
    assert checks.dtype == np.uint32 and len(checks) == (200 if text else 0)
    if text:
        np.testing.assert_array_equal(checks, saved["rows.check"].astype(np.uint32))
    fresh = PnMetric()
    fresh.update(uids[200:], pred[200:], label[200:])
    metric.load_state_dicts([saved, fresh.state_dict()])
    fed = PnMetric()
    fed.update(uids, pred, label)
    assert metric.compute().to_dict() == fed.compute().to_dict()
    assert fed.compute().to_dict()["ins_number"] == 300
    got = fed.compute().to_dict()
    got.pop("ties")
    assert got == as_json(pn_totals(uid, pred, label))


def test_a_collision_in_a_state_saved_with_checks_beside_the_keys_is_named() -> None:
    from mpieval.errors import UidCollisionError

    saved = old_state(["a", "b"], np.array([0.1, 0.2]), np.array([0.0, 1.0]))
    saved["rows.key"] = np.array([5, 5], dtype=np.uint64)  # two uids' keys made one
    metric = PnMetric()
    metric.load_state_dict(saved)
    with pytest.raises(UidCollisionError, match="rows share the 64-bit key 0x0000000000000005"):
        metric.compute()


def test_seed_log_line_through_the_result_object() -> None:
    result = PnResult.from_counts(ins_number=7982670, positive=45945386, negative=8436670)
    assert result.to_log_line("res_one_click_join_pn") == SEED_LINE
    assert result.to_dict()["average_pn"] == 45945386 / 8436670


def test_half_ties_print_whole_never_in_exponent_form() -> None:
    result = PnResult.from_counts(ins_number=40, positive=10, negative=2, tie=5, ties="half")
    assert result.to_log_line("p") == (
        "p: Average_PN=2.77778 ins_number=40 positive_pairs=12.5 negative_paris=4.5"
    )
    assert (result.positive_pairs, result.negative_pairs, result.tie_pairs) == (12.5, 4.5, 5)
    big = PnResult.from_counts(ins_number=1, positive=10**15, negative=10**15, tie=3, ties="half")
    assert big.to_log_line("p").endswith(
        "positive_pairs=1000000000000001.5 negative_paris=1000000000000001.5"
    )
    even = PnResult.from_counts(ins_number=1, positive=1, negative=1, tie=4, ties="half")
    assert even.to_dict()["positive_pairs"] == 3 and isinstance(even.positive_pairs, int)


@pytest.mark.parametrize(
    ("ties", "positive", "negative"), [("negative", 2, 7), ("ignore", 2, 4), ("half", 3.5, 5.5)]
)
def test_tie_modes_from_counts(ties: str, positive: float, negative: float) -> None:
    result = PnResult.from_counts(ins_number=9, positive=2, negative=4, tie=3, ties=ties)
    assert (result.positive_pairs, result.negative_pairs, result.tie_pairs) == (
        positive, negative, 3,
    )
    assert result.average_pn == positive / negative


def test_no_negative_pair_is_nan_with_one_warning(comm: Comm) -> None:
    metric = PnMetric(ties="ignore", comm=comm)
    metric.update([1, 1, 2], [0.1, 0.1, 0.5], [0, 1, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = metric.compute()
    assert [w.category for w in caught] == [UndefinedMetricWarning]
    assert "negative pair" in str(caught[0].message)
    assert math.isnan(result.average_pn)
    assert result.to_dict()["average_pn"] is None
    assert json.loads(json.dumps(result.to_dict()))["average_pn"] is None
    assert result.to_log_line("p") == (
        "p: Average_PN=nan ins_number=3 positive_pairs=0 negative_paris=0"
    )


def test_no_rows(comm: Comm) -> None:
    with pytest.warns(UndefinedMetricWarning):
        result = PnMetric(comm=comm).compute()
    assert result.to_log_line("p") == (
        "p: Average_PN=nan ins_number=0 positive_pairs=0 negative_paris=0"
    )


@pytest.mark.parametrize(
    ("column", "values", "count", "first"),
    [
        ("pred", [0.1, np.nan, 0.3, np.inf, 0.5], 2, 1),
        ("label", [0, 1, -np.inf, 1, 0], 1, 2),
        ("pred", np.array([0, 1, 2, 3, 2**60], dtype=np.int64), 1, 4),
    ],
)
def test_bad_values_name_field_count_and_first_index(
    comm: Comm, column: str, values: list, count: int, first: int
) -> None:
    rows = {"uid": [1, 1, 2, 2, 2], "pred": [0.1, 0.2, 0.3, 0.4, 0.5], "label": [0, 1, 0, 1, 2]}
    rows[column] = values
    metric = PnMetric(comm=comm)
    metric.update([3], [0.5], [1])
    with pytest.raises(InputError) as info:
        metric.update(**rows)
    assert (info.value.field, info.value.count, info.value.first_index) == (column, count, first)
    with pytest.raises(InputError):  # remembered: the compute fails too
        metric.compute()


def test_bad_shapes_lengths_and_ties(comm: Comm) -> None:
    with pytest.raises(InputError, match="length mismatch"):
        PnMetric(comm=comm).update([1, 2, 3], [0.1, 0.2], [0, 1, 1])
    with pytest.raises(InputError, match="1-D"):
        PnMetric(comm=comm).update([1], [[0.1]], [0])
    with pytest.raises(InputError) as info:
        PnMetric(ties="positive", comm=comm)
    assert info.value.field == "ties"
    with pytest.raises(InputError) as info:
        PnResult.from_counts(1, 1, 1, ties="zero")
    assert info.value.field == "ties"


def test_bad_uid_is_an_input_error_naming_uid(comm: Comm) -> None:
    with pytest.raises(InputError) as info:
        PnMetric(comm=comm).update([1.5, 2.0], [0.1, 0.2], [0, 1])
    assert info.value.field == "uid"


def test_a_key_collision_is_named() -> None:
    """Two string uids with one 64-bit key (their checks differ) among other users: the
    grouping by a radix sort finds them, and the error is the exchange's."""
    from mpieval.errors import UidCollisionError

    metric = PnMetric()
    key = np.array([5, 9, 5, 7, 5], dtype=np.uint64)
    metric.state.rows("rows").append(key=key, pred=np.linspace(0.1, 0.5, 5, dtype=np.float32),
                                     label=np.array([0, 1, 1, 0, 1], dtype=np.float32))
    metric.state.rows("checks").append(check=np.array([1, 2, 1, 3, 4], dtype=np.uint32))
    with pytest.raises(UidCollisionError, match="rows share the 64-bit key 0x0000000000000005"):
        metric.compute()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=60), st.booleans(), st.integers(0, 2**32 - 1),
       st.sampled_from([np.float32, np.float64]), st.sampled_from([np.float32, np.float64]))
def test_grouped_rows_are_numpys_gathers_and_boundaries(keys: list[int], clash: bool,
                                                        seed: int, pred_dtype: type,
                                                        label_dtype: type) -> None:
    """The compiled grouping against numpy: the keys sorted with their rows' numbers give
    each user's first row, the preds and labels (float32 or float64, as kept) gathered in
    that order as float64, and a collision exactly when two rows of one key have different
    checks."""
    rng = np.random.default_rng(seed)
    raw = np.array(keys, dtype=np.uint64)
    n = len(raw)
    order = np.argsort(raw, kind="stable").astype(np.uint32)
    sorted_keys = raw[order]
    pred = rng.random(n).astype(pred_dtype)
    label = (rng.integers(0, 3, n) + rng.random(n)).astype(label_dtype)
    checks = (raw * np.uint64(7) + np.uint64(1)).astype(np.uint32)
    if clash and n:
        checks[rng.integers(0, n)] += np.uint32(1)
    for given_checks in (None, checks):
        starts, got_pred, got_label, collision = kernels.grouped(
            sorted_keys.copy(), order, pred, label, given_checks)  # the keys are consumed
        new = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if n else []
        assert starts.tolist() == [*np.asarray(new).tolist(), n]
        assert got_pred.dtype == got_label.dtype == np.float64
        np.testing.assert_array_equal(got_pred, pred[order])
        np.testing.assert_array_equal(got_label, label[order])
        sorted_checks = checks[order]
        want = given_checks is not None and bool(np.any(
            (sorted_keys[1:] == sorted_keys[:-1]) & (sorted_checks[1:] != sorted_checks[:-1])))
        assert collision == want


def test_grouped_refuses_a_row_number_past_the_rows() -> None:
    with pytest.raises(IndexError, match="row number"):
        kernels.grouped(np.zeros(2, np.uint64), np.array([0, 2], np.uint32), np.zeros(2),
                        np.zeros(2), None)
