"""The ``auc`` kind on one process: oracle, sklearn, state, bad input, golden line (the
properties every kind has -- row order, sharding, weights -- are in test_kinds_common.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import oracle_auc
import pytest
from sklearn.metrics import roc_auc_score

from mpieval import AucMetric, AucResult, Comm, InputError, UndefinedMetricWarning
from mpieval.kinds.auc import kernels

FIELDS = ("auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr", "copc")


def compute(pred, label, table_size, weight=None, soft=False) -> AucResult:
    metric = AucMetric(table_size=table_size, soft_labels=soft, comm=Comm.local())
    metric.update(pred, label, weight)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def assert_matches(result: AucResult, expected: dict, rel: float = 1e-12) -> None:
    for field in FIELDS:
        got, want = getattr(result, field), expected[field]
        if math.isnan(want):
            assert math.isnan(got), field
        else:
            assert got == pytest.approx(want, rel=rel, abs=1e-300), field


def ctr_data(rng, n, ctr=0.18):
    pred = np.clip(rng.beta(2, 9, n), 0, 1).astype(np.float32)
    label = (rng.random(n) < np.clip(pred * ctr / 0.18, 0, 1)).astype(np.int8)
    return pred, label


# -- oracle -----------------------------------------------------------------------------


@pytest.mark.parametrize("table_size", [1, 7, 1000, 1_000_000])
def test_random_data_matches_oracle(rng, table_size):
    pred, label = ctr_data(rng, 3000)
    assert_matches(compute(pred, label, table_size), oracle_auc.metrics(pred, label, table_size))


def test_large_table_default_matches_oracle(rng):
    pred, label = ctr_data(rng, 200_000)
    assert_matches(compute(pred, label, 1_000_000),
                   oracle_auc.metrics(pred.tolist(), label.tolist(), 1_000_000))


@pytest.mark.parametrize(
    "case",
    ["heavy_ties", "zeros_and_ones", "bucket_edges", "one_class_pos", "one_class_neg",
     "one_row", "empty", "all_in_last_bucket"],
)
def test_adversarial_data_matches_oracle(rng, case):
    t = 100
    if case == "heavy_ties":
        pred = rng.choice([0.1, 0.25, 0.5, 0.9], 5000)
        label = rng.integers(0, 2, 5000)
    elif case == "zeros_and_ones":
        pred = rng.choice([0.0, 1.0], 500)
        label = rng.integers(0, 2, 500)
    elif case == "bucket_edges":
        pred = rng.integers(0, t + 1, 2000) / t  # exactly on i / T, 1.0 included
        label = rng.integers(0, 2, 2000)
    elif case == "one_class_pos":
        pred, label = rng.random(50), np.ones(50, dtype=np.int64)
    elif case == "one_class_neg":
        pred, label = rng.random(50), np.zeros(50, dtype=bool)
    elif case == "one_row":
        pred, label = np.array([0.3]), np.array([1])
    elif case == "empty":
        pred, label = np.zeros(0), np.zeros(0, dtype=np.int8)
    else:
        pred = 1 - rng.random(300) * 1e-9
        label = rng.integers(0, 2, 300)
    assert_matches(compute(pred, label, t), oracle_auc.metrics(pred, label, t))


def test_weights_and_soft_labels_match_oracle(rng):
    pred = rng.random(2000)
    label = rng.random(2000)
    weight = rng.exponential(2.0, 2000)
    got = compute(pred, label, 500, weight, soft=True)
    assert_matches(got, oracle_auc.metrics(pred, label, 500, weight))


@pytest.mark.parametrize("table_size", [10, 1000, 100_000])
def test_bucket_error_kernel_equals_literal_loop_on_adversarial_tables(rng, table_size):
    tables = [
        rng.integers(0, 3, (2, table_size)),  # sparse
        rng.integers(0, 5000, (2, table_size)),  # dense: every bucket its own range
        np.where(rng.random((2, table_size)) < 0.01, rng.integers(0, 10**6, (2, table_size)), 0),
        np.zeros((2, table_size)),
    ]
    heavy_zero = rng.integers(0, 50, (2, table_size))
    heavy_zero[:, 0] = 10**7  # ctr 0 bucket: adjust_ctr 0, division by zero in the sweep
    tables.append(heavy_zero)
    high = np.zeros((2, table_size))
    high[:, -max(1, table_size // 50) :] = rng.integers(0, 3, (2, max(1, table_size // 50)))
    tables.append(high)
    for span in (1, 3, 30, 300):  # filled buckets far apart: restarts in the gaps
        gaps = np.zeros((2, table_size))
        gaps[:, ::span] = rng.integers(0, 400, (2, len(range(0, table_size, span))))
        tables.append(gaps)
    for table in tables:
        table = table.astype(np.float64)
        want = oracle_auc.bucket_error(table.tolist())
        got = kernels.bucket_error_from_table(table[0], table[1])
        assert (math.isnan(got) and math.isnan(want)) or got == want  # the same bits


# -- sklearn ------------------------------------------------------------------------------


@pytest.mark.parametrize("table_size", [10, 1000, 1_000_000])
def test_histogram_auc_is_sklearn_auc_of_bucket_index(rng, table_size):
    pred, label = ctr_data(rng, 20_000)
    result = compute(pred, label, table_size)
    bucket = kernels.buckets(pred, table_size)
    assert result.auc == pytest.approx(roc_auc_score(label, bucket), rel=1e-12)
    # Pairs inside one bucket count 1/2; the exact AUC counts them 0, 1/2 or 1.
    neg = np.bincount(bucket[label == 0], minlength=table_size).astype(float)
    pos = np.bincount(bucket[label == 1], minlength=table_size).astype(float)
    bound = float(neg @ pos) / (2 * neg.sum() * pos.sum())
    assert abs(result.auc - roc_auc_score(label, pred)) <= bound + 1e-12


def test_rmse_mae_match_sklearn(rng):
    from sklearn.metrics import mean_absolute_error, mean_squared_error

    pred, label = ctr_data(rng, 10_000)
    result = compute(pred, label, 1000)
    p64 = pred.astype(np.float64)
    assert result.mae == pytest.approx(mean_absolute_error(label, p64), rel=1e-12)
    assert result.rmse == pytest.approx(math.sqrt(mean_squared_error(label, p64)), rel=1e-12)


# -- state and dtypes ----------------------------------------------------------------------


def _state(pred, label, table_size=64, weight=None):
    m = AucMetric(table_size=table_size, comm=Comm.local())
    m.update(np.asarray(pred, dtype=np.float64), np.asarray(label, dtype=np.int64), weight)
    return m


def test_merge_does_not_mutate_inputs(rng):
    a, b = _state(rng.random(10), rng.integers(0, 2, 10)), _state(rng.random(5), np.ones(5))
    before_a, before_b = a.state.buffer.copy(), b.state.buffer.copy()
    merged = a.merge(b)
    assert np.array_equal(a.state.buffer, before_a) and np.array_equal(b.state.buffer, before_b)
    assert not np.shares_memory(merged.state.buffer, a.state.buffer)
    assert not np.shares_memory(merged.state.buffer, b.state.buffer)
    np.testing.assert_array_equal(merged.state.buffer, before_a + before_b)


def test_dtypes_all_give_the_same_result(rng):
    pred = (rng.integers(0, 2**10, 1000) / 2**10).astype(np.float64)  # exact in float16/32
    label = rng.integers(0, 2, 1000)
    want = compute(pred, label, 1000)
    for p in (pred.astype(np.float16), pred.astype(np.float32)):
        for y in (label.astype(np.int8), label.astype(np.uint64), label.astype(bool),
                  label.astype(np.float32), label.tolist()):
            got = compute(p, y, 1000)
            for field in FIELDS:
                assert getattr(got, field) == pytest.approx(getattr(want, field), rel=1e-12)


def test_state_size_is_fixed(rng):
    m = AucMetric(comm=Comm.local())
    size = m.state.buffer.nbytes
    assert size <= 20 * 2**20
    for _ in range(3):
        m.update(rng.random(100_000), rng.integers(0, 2, 100_000))
    assert m.state.buffer.nbytes == size
    assert m.state.buffer.dtype == np.float64


# -- undefined values --------------------------------------------------------------------------


def test_one_class_gives_nan_auc_with_one_warning(rng):
    m = AucMetric(table_size=100, comm=Comm.local())
    m.update(rng.random(10), np.ones(10))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = m.compute()
    assert math.isnan(result.auc)
    undefined = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(undefined) == 1 and "one class" in str(undefined[0].message)
    assert result.to_dict()["auc"] is None
    assert " auc=nan " in result.to_log_line("x")


def test_no_rows_gives_all_nan_never_zero():
    m = AucMetric(table_size=100, comm=Comm.local())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = m.compute()
    assert [str(w.message) for w in caught] == ["auc: no rows"]
    d = result.to_dict()
    for field in ("auc", "bucket_error", "rmse", "mae", "actual_ctr", "predicted_ctr", "copc"):
        assert d[field] is None
    assert d["num"] == 0
    assert result.to_log_line("e") == (
        "e: auc=nan bucket_error=nan rmse=nan num=0 mae=nan actural_ctr=nan predict_ctr=nan "
        "copc=nan"
    )


def test_zero_predicted_ctr_gives_nan_copc():
    m = AucMetric(table_size=100, comm=Comm.local())
    m.update(np.zeros(4), np.array([0, 1, 0, 1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = m.compute()
    assert math.isnan(result.copc) and result.actual_ctr == 0.5
    assert "copc is undefined" in str(caught[0].message)


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "label", "weight", "field", "count", "first"),
    [
        ([0.1, np.nan, 0.3, np.nan], [0, 1, 0, 1], None, "pred", 2, 1),
        ([0.1, 0.2, np.inf], [0, 1, 0], None, "pred", 1, 2),
        ([0.1, 1.5, -0.1, 0.2], [0, 1, 0, 1], None, "pred", 2, 1),
        ([0.1, 0.2, 0.3], [0, 2, 0], None, "label", 1, 1),
        ([0.1, 0.2, 0.3], [0, 1, 0.5], None, "label", 1, 2),
        ([0.1, 0.2, 0.3], [-1, 1, 0], None, "label", 1, 0),
        ([0.1, 0.2, 0.3], [0, 1, 1], [1.0, -2.0, -1.0], "weight", 2, 1),
        ([0.1, 0.2, 0.3], [0, 1, 1], [1.0, np.nan, 1.0], "weight", 1, 1),
    ],
)
def test_bad_values_name_field_count_and_first_index(pred, label, weight, field, count, first):
    m = AucMetric(table_size=100, comm=Comm.local())
    with pytest.raises(InputError) as info:
        m.update(np.asarray(pred), np.asarray(label),
                 None if weight is None else np.asarray(weight))
    err = info.value
    assert (err.field, err.count, err.first_index) == (field, count, first)
    assert field in str(err) and f"first at index {first}" in str(err)
    assert not m.state.buffer.any(), "nothing from a bad batch is kept"
    with pytest.raises(InputError):
        m.compute()  # the bad batch is remembered until reset


def test_soft_label_out_of_range():
    m = AucMetric(table_size=10, soft_labels=True, comm=Comm.local())
    with pytest.raises(InputError, match=r"label: must be in \[0, 1\]"):
        m.update([0.1, 0.2], [0.5, 1.5])


@pytest.mark.parametrize(
    ("pred", "label", "match"),
    [
        (np.zeros((2, 2)), np.zeros(4), "pred: must be 1-D"),
        (np.array(["a", "b"]), np.zeros(2), "pred: must be numeric"),
        (np.zeros(3), np.zeros(2), "length mismatch: pred=3, label=2"),
        (np.zeros(2), np.array([None, 1], dtype=object), "label: must be numeric"),
        (np.zeros(2, dtype=complex), np.zeros(2), "pred: must be numeric"),
        ("abc", [1, 0], "pred: must be numeric, got the text 'abc'"),
        ([0.1, 0.2], "ab", "label: must be numeric, got the text 'ab'"),
        (object(), [1], "pred: must be numeric, got dtype object"),
        (0.5, 1, "pred: must be 1-D, got an array of shape ()"),
    ],
)
def test_bad_shapes_and_types(pred, label, match):
    with pytest.raises(InputError, match=match):
        AucMetric(table_size=10, comm=Comm.local()).update(pred, label)


@pytest.mark.parametrize("size", [0, -5, 2.5, "10"])
def test_bad_table_size(size):
    with pytest.raises(InputError, match="table_size"):
        AucMetric(table_size=size)


# -- the Abacus line ---------------------------------------------------------------------


def test_golden_log_line_from_the_seed():
    result = AucResult(
        auc=0.973279, bucket_error=1.10328, rmse=0.418493, mae=0.340888, num=17283180,
        actual_ctr=0.180089, predicted_ctr=0.482359, copc=0.180089 / 0.482359,
        positives=0.180089 * 17283180, rows=17283180, table_size=1_000_000,
    )
    assert result.to_log_line("item_sim") == (
        "item_sim: auc=0.973279 bucket_error=1.10328 rmse=0.418493 num=17283180 mae=0.340888 "
        "actural_ctr=0.180089 predict_ctr=0.482359 copc=0.373351"
    )


def test_json_names(rng):
    d = compute(*ctr_data(rng, 1000), 1000).to_dict()
    assert d["kind"] == "auc"
    assert {"auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr",
            "copc"} <= d.keys()
    assert isinstance(d["num"], int) and d["num"] == 1000


def test_weighted_num_is_a_whole_number_in_the_log_line_and_exact_in_json():
    m = AucMetric(table_size=10, comm=Comm.local())
    m.update([0.2, 0.7], [0, 1], [0.5, 1.25])
    with pytest.warns(UndefinedMetricWarning, match="bucket_error is undefined"):
        result = m.compute()
    assert " num=2 " in result.to_log_line("w")
    assert result.to_dict()["num"] == 1.75


def test_undefined_warnings_name_the_metric_and_repeat_every_pass():
    from mpieval import Evaluator

    ev = Evaluator({"ctr": AucMetric(table_size=10), "cvr": AucMetric(table_size=10)},
                   comm=Comm.local())
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            ev.compute()
        assert [str(w.message) for w in caught] == ["ctr: no rows", "cvr: no rows"]
