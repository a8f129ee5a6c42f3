"""Exact sums (:mod:`mpieval.kernels.exact`) against Python's rational arithmetic: the
correctly rounded sum of the values, whatever their order and however they are split."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval import _core
from mpieval.kernels import exact

finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True,
                   min_value=-1e300, max_value=1e300)


def rounded_sum(values: list[float]) -> float:
    """The oracle: the exact rational sum, rounded once."""
    return float(sum((Fraction(v) for v in values), Fraction(0)))


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, max_size=60), st.randoms(use_true_random=False))
def test_any_values_in_any_order_and_split_sum_to_the_rounded_exact_sum(values, random):
    want = rounded_sum(values)
    assert exact.to_float(exact.exact_sum(np.array(values, dtype=np.float64))) == want
    shuffled = values[:]
    random.shuffle(shuffled)
    cut = random.randint(0, len(shuffled))
    parts = exact.exact_sum(np.array(shuffled[:cut])) + exact.exact_sum(np.array(shuffled[cut:]))
    assert exact.to_float(parts) == want  # digits of two accumulators add exactly


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=40), st.integers(1024, 3000),
       st.integers(0, 2**32 - 1))
def test_many_values_sum_by_exponent_to_the_rounded_exact_sum(pool, n, seed):
    """1,024 values or more are added by exponent (a Wide, folded once), fewer digit by
    digit: the same digits, and the oracle's float."""
    rng = np.random.default_rng(seed)
    values = np.array(pool)[rng.integers(0, len(pool), n)] * rng.choice([1.0, -1.0], n)
    by_exponent = exact.exact_sum(values)
    by_digits = exact.accumulator()
    for first in range(0, n, 1000):
        exact.add_values(by_digits, values[first : first + 1000])
    assert exact.to_float(by_exponent) == rounded_sum(values.tolist())
    assert np.array_equal(by_digits, by_exponent)  # both normalized: the same digits


def test_subnormals_and_extremes() -> None:
    tiny = 5e-324
    values = [tiny, tiny, -tiny, 2.2250738585072014e-308, 1e308, 1e308, -1e308, 0.1]
    assert exact.to_float(exact.exact_sum(np.array(values))) == rounded_sum(values)
    assert exact.to_float(exact.exact_sum(np.array([tiny] * 3))) == 3 * tiny


def test_cancellation_that_a_float_sum_gets_wrong() -> None:
    values = np.array([1e16, 1.0, -1e16, 1.0])
    assert sum(values.tolist()) != 2.0 and exact.to_float(exact.exact_sum(values)) == 2.0


def test_many_additions_carry_before_a_digit_loses_exactness() -> None:
    """2.5M additions of a value with every mantissa bit set: a digit would pass 2**53
    without the carries every SAFE_ADDS additions."""
    value = 2.0 - 2.0**-52
    n = 2 * exact.SAFE_ADDS + 12345
    acc = exact.exact_sum(np.full(n, value))
    assert exact.to_int(acc) == n * int(Fraction(value) * 2**1074)
    assert np.all(acc[:-1] < 2.0**exact.BITS) and np.all(acc >= 0)


def test_infinities_and_nan_propagate_and_overflow_is_infinite() -> None:
    assert exact.to_float(exact.exact_sum(np.array([1.0, math.inf]))) == math.inf
    assert exact.to_float(exact.exact_sum(np.array([-math.inf, 1.0]))) == -math.inf
    assert math.isnan(exact.to_float(exact.exact_sum(np.array([math.inf, -math.inf]))))
    assert math.isnan(exact.to_float(exact.exact_sum(np.array([1.0, math.nan]))))
    assert exact.to_float(exact.exact_sum(np.array([1.7e308, 1.7e308]))) == math.inf


@pytest.mark.parametrize("shape", [(), (3,), (2, 4)])
def test_to_floats_keeps_the_leading_shape(shape) -> None:
    acc = exact.accumulator(*shape)
    assert exact.to_floats(acc).shape == shape and not exact.to_floats(acc).any()


def test_the_binary_update_sums_are_exact_over_every_exponent(rng):
    """The binary update gathers its sums in fixed point by exponent (``exact::Wide``):
    preds from subnormals to 1 (every exponent of [0, 1]), with their squares and logs,
    give the exact sums of the rows' own float64 terms (Fractions)."""
    from mpieval.kinds.auc import kernels as auc

    exponents = rng.integers(-1074, 1, 600)
    pred = np.ldexp(rng.random(600), exponents)
    pred[:4] = [0.0, 1.0, 5e-324, 2.0**-1022]
    label = (rng.random(600) < 0.3).astype(np.int8)
    table, sums = np.zeros((2, 8)), exact.accumulator(auc.N_SUMS)
    auc.accumulate(table, sums, pred, label)
    terms = {"pred": pred, "pred_sq": pred * pred,
             "logloss": [auc.binary_logloss(float(p), int(y))
                         for p, y in zip(pred, label, strict=True)],
             "label_pred": pred * label}
    for name, values in terms.items():
        want = sum((Fraction(float(v)) for v in values), Fraction(0))
        got = exact.to_int(sums[auc.SUM_FIELDS.index(name)])
        assert Fraction(got, 2**1074) == want, name


def test_the_weighted_update_sums_are_exact(rng):
    """The weighted update (soft labels, fractional weights) gathers its seven sums in
    fixed point too: each equals the exact sum of the rows' own float64 terms."""
    from mpieval.kinds.auc import kernels as auc

    n = 400
    pred = np.ldexp(rng.random(n), rng.integers(-1074, 1, n))
    label = np.round(rng.random(n), 2)
    label[:3] = [0.0, 1.0, 0.5]
    weight = np.ldexp(rng.random(n), rng.integers(-30, 30, n))
    table, sums = np.zeros((2, 8)), exact.accumulator(auc.N_SUMS)
    auc.accumulate(table, sums, pred, label, weight, binary=False)
    terms: dict[str, list[float]] = {name: [] for name in auc.SUM_FIELDS if name != "rows"}
    for p, y, w in zip(pred.tolist(), label.tolist(), weight.tolist(), strict=True):
        q = min(max(p, auc.PRED_CLIP), 1.0 - auc.PRED_CLIP)
        ce = 0.0
        if y != 0.0:
            ce -= y * auc.log(q)
        if y != 1.0:
            ce -= (1.0 - y) * auc.log(1.0 - q)
        d = p - y
        for name, value in (("abserr", w * abs(d)), ("sqrerr", w * d * d), ("pred", w * p),
                            ("logloss", w * ce), ("label_sq", w * y * y),
                            ("pred_sq", w * p * p), ("label_pred", w * y * p)):
            terms[name].append(value)
    for name, values in terms.items():
        want = sum((Fraction(v) for v in values), Fraction(0))
        got = exact.to_int(sums[auc.SUM_FIELDS.index(name)])
        assert Fraction(got, 2**1074) == want, name
    assert exact.to_float(sums[auc.SUM_ROWS]) == n


def _rows_at_edges(rng, edges, pred_dtype) -> tuple[np.ndarray, np.ndarray]:
    """5 blocks of 1,024 rows and a short one: beta preds, the third block only ``edges``,
    the last rows' preds of every binary exponent down to subnormals; random 0/1 labels."""
    n = 5 * 1024 + 301
    pred = rng.beta(2, 8, n)
    pred[2048:3072] = rng.choice(edges, 1024)  # the third block: edges only
    pred[4096:] = np.ldexp(rng.random(n - 4096), rng.integers(-1074, 1, n - 4096))
    label = (rng.random(n) < 0.5).astype(np.int8)
    return pred.astype(pred_dtype), label


@pytest.mark.parametrize("avx2", [True, False])
@pytest.mark.parametrize("pred_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1000, 1 << 18])  # a table cached or fetched ahead
def test_the_binary_update_sums_are_exact_at_the_edges_of_its_float_sums(rng, avx2,
                                                                          pred_dtype, size):
    """The binary update sums a block's preds, squares and logloss terms in float64 where
    they split exactly (preds and squares in [2**-34, 1], logloss in [2**-73, 64)) and adds
    the others one by one: rows on both sides of every edge (zeros, tiny preds, preds whose
    square is tiny, preds clipped to 1e-15 from their label, subnormals), in blocks of which
    some have none, give the exact sums of the rows' own float64 terms, with the AVX2 copy of
    the loops and with the baseline's; and the table counts every row in its cell."""
    from mpieval import _core
    from mpieval.kinds.auc import kernels as auc

    edges = [0.0, 1.0, 2.0**-78, 2.0**-78 * (1 - 2.0**-52), 2.0**-39, 2.0**-39 * (1 - 2.0**-52),
             2.0**-34, 2.0**-17 * (1 - 2.0**-52),
             1e-15, 2e-15, 1 - 2.0**-29, 1 - 2.0**-30, 1 - 1e-9, 1e-9, 5e-324, 2.0**-1022,
             0.5, 0.2, 1e-6]
    pred, label = _rows_at_edges(rng, edges, pred_dtype)
    label[pred >= 1 - 2.0**-20] = 1  # near 1 and labelled 1: logloss terms below 2**-29
    was = _core.logloss.use_avx2(avx2)
    try:
        table, sums = np.zeros((2, size)), exact.accumulator(auc.N_SUMS)
        auc.accumulate(table, sums, pred[:3000], label[:3000])
        auc.accumulate(table, sums, pred[3000:], label[3000:])
    finally:
        _core.logloss.use_avx2(was)
    p = pred.astype(np.float64)
    terms = {"pred": p, "pred_sq": p * p, "label_pred": p * label,
             "logloss": [auc.binary_logloss(float(v), int(y)) for v, y in zip(p, label,
                                                                             strict=True)]}
    for name, values in terms.items():
        want = sum((Fraction(float(v)) for v in values), Fraction(0))
        got = exact.to_int(sums[auc.SUM_FIELDS.index(name)])
        assert Fraction(got, 2**1074) == want, name
    want_table = np.zeros((2, size))
    np.add.at(want_table, (label, np.minimum((p * size).astype(np.int64), size - 1)), 1)
    assert np.array_equal(table, want_table)


@pytest.mark.parametrize("avx2", [True, False])
@pytest.mark.parametrize("pred_dtype", [np.float32, np.float64])
def test_the_binary_moments_are_exact_at_the_edges_of_their_float_sums(rng, avx2, pred_dtype):
    """The compiled moments of unweighted 0/1 rows sum a block's ce^2, ce y, (p - y)^4 and
    p^3 in float64 where they split exactly (ce^2 in [2**-68, 2**11), ce y in [2**-73, 64),
    the powers in [2**-78, 2)) and add the others one by one: rows on both sides of every
    edge, in blocks of which some have none and a short last block, give the exact sums of
    the rows' own float64 terms (ce the kernels' binary_logloss), with the AVX2 copy of the
    loop and with the baseline's."""
    from mpieval import _core
    from mpieval.kinds.auc import kernels as auc
    from mpieval.kinds.auc import moments

    edges = [0.0, 1.0, 2.0**-26, 2.0**-26 * (1 - 2.0**-52), 2.0**-19.5, 1 - 2.0**-19.5,
             1 - 2.0**-20, 1 - 2.0**-18, 1e-15, 2e-15, 1e-9, 1 - 1e-9, 5e-324, 2.0**-1022,
             0.5, 0.2, 1e-6, 2.0**-34]
    pred, label = _rows_at_edges(rng, edges, pred_dtype)
    n = len(pred)
    label[2048:2560] = (pred[2048:2560] > 0.5).astype(np.int8)  # preds near their label
    was = _core.logloss.use_avx2(avx2)
    try:
        sums = exact.accumulator(len(moments.FIELDS))
        moments.accumulate(sums, pred[:3000], label[:3000], None, binary=True)
        moments.accumulate(sums, pred[3000:], label[3000:], None, binary=True)
    finally:
        _core.logloss.use_avx2(was)
    p = pred.astype(np.float64)
    y = label.astype(np.float64)
    ce = np.array([auc.binary_logloss(float(v), int(t)) for v, t in zip(p, label,
                                                                         strict=True)])
    e = p - y
    terms = {moments.CECE: ce * ce, moments.CEY: ce * y, moments.FOURTH: (e * e) * (e * e),
             moments.UPPP: p * p * p}
    for field, values in terms.items():
        want = sum((Fraction(float(v)) for v in values), Fraction(0))
        assert Fraction(exact.to_int(sums[field]), 2**1074) == want, moments.FIELDS[field]
    assert exact.to_float(sums[moments.V]) == n


@pytest.mark.parametrize("avx2", [True, False])
@pytest.mark.parametrize("pred_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [100, 1 << 16])  # tables cached or fetched ahead
@pytest.mark.parametrize("table_dtype", [np.float64, np.uint32])
@pytest.mark.parametrize("whole", [False, True])
def test_the_slices_pass_gives_each_slice_its_own_passes_bits(rng, avx2, pred_dtype, size,
                                                              table_dtype, whole):
    """The compiled pass over every slice at once (accumulate_slices: each row's split
    values made once, in the lanes of a vector and written row by row, then added to the
    partial sums of its slice in each column) gives each slice the table, sums and moments
    that the plain passes (accumulate, moments) give over its rows alone, bit for bit:
    rows at every edge of the splits, two slice columns (one of 3 slices, one of 40), with
    the AVX2 copy of the loops and with the baseline's; tables of float64 counts or of
    uint32 ones. With ``whole``, the same pass also gives the metric's own table (of
    another size) and sums what the plain passes give over every row."""
    from mpieval import _core
    from mpieval.kinds.auc import kernels as auc
    from mpieval.kinds.auc import moments

    edges = [0.0, 1.0, 2.0**-78, 2.0**-39, 2.0**-34, 2.0**-17 * (1 - 2.0**-52), 2.0**-26,
             1e-15, 2e-15, 1 - 2.0**-29, 1 - 2.0**-20, 1e-9, 1 - 1e-9, 5e-324, 0.5, 0.2]
    pred, label = _rows_at_edges(rng, edges, pred_dtype)
    n = len(pred)
    codes = np.stack([rng.integers(0, 3, n), 3 + rng.zipf(1.5, n) % 40]).astype(np.int32)
    slices = 43
    fields = (moments.V, moments.CECE, moments.CEY, moments.FOURTH, moments.UPPP)
    was = _core.logloss.use_avx2(avx2)
    try:
        tables = np.zeros((slices, 2, size), dtype=table_dtype)
        sums = np.zeros((slices, auc.N_SUMS, exact.DIGITS))
        moment_sums = np.zeros((slices, len(moments.FIELDS), exact.DIGITS))
        all_rows = (np.zeros((2, 3 * size)), exact.accumulator(auc.N_SUMS),
                    exact.accumulator(len(moments.FIELDS)))
        for part in (slice(0, 3000), slice(3000, n)):
            auc.accumulate_slices(tables, sums, moment_sums, fields, pred[part], label[part],
                                  np.ascontiguousarray(codes[:, part]),
                                  whole=all_rows if whole else None)
    finally:
        _core.logloss.use_avx2(was)
    if whole:
        table, own = np.zeros((2, 3 * size)), exact.accumulator(auc.N_SUMS)
        own_moments = exact.accumulator(len(moments.FIELDS))
        auc.accumulate(table, own, pred, label)
        moments.accumulate(own_moments, pred, label, None, binary=True)
        assert np.array_equal(all_rows[0], table)
        assert np.array_equal(all_rows[1], own)  # normalized: one value, one form
        assert np.array_equal(all_rows[2], own_moments)
    else:
        assert not all_rows[0].any() and not all_rows[1].any()
    for s in range(slices):
        rows = np.flatnonzero((codes == s).any(axis=0))
        table, own = np.zeros((2, size)), exact.accumulator(auc.N_SUMS)
        own_moments = exact.accumulator(len(moments.FIELDS))
        auc.accumulate(table, own, pred[rows], label[rows])
        moments.accumulate(own_moments, pred[rows], label[rows], None, binary=True)
        assert np.array_equal(tables[s], table), s
        for field in range(auc.N_SUMS):
            assert exact.to_int(sums[s, field]) == exact.to_int(own[field]), (s, field)
        for field in fields:
            assert (exact.to_int(moment_sums[s, field])
                    == exact.to_int(own_moments[field])), (s, moments.FIELDS[field])


def test_the_slices_pass_takes_the_whole_s_three_parts_or_none() -> None:
    from mpieval import _core
    from mpieval.kinds.auc import kernels as auc
    from mpieval.kinds.auc import moments

    fields = (moments.V, moments.CECE, moments.CEY, moments.FOURTH, moments.UPPP)
    tables = np.zeros((2, 2, 10), dtype=np.uint32)
    sums = np.zeros((2, auc.N_SUMS, exact.DIGITS))
    moment_sums = np.zeros((2, len(moments.FIELDS), exact.DIGITS))
    args = (tables, np.array([0.5]), np.array([1], dtype=np.int8),
            np.zeros((1, 1), dtype=np.int32), sums, moment_sums, *fields)
    whole = (np.zeros((2, 7)), exact.accumulator(auc.N_SUMS),
             exact.accumulator(len(moments.FIELDS)))
    with pytest.raises(ValueError, match="the whole's table, sums and moments"):
        _core.auc.accumulate_slices(*args, whole_table=whole[0], whole_sums=whole[1])
    with pytest.raises(ValueError, match="as a slice's"):
        _core.auc.accumulate_slices(*args, whole[0], whole[1], whole[2][:3])
    _core.auc.accumulate_slices(*args, *whole)
    assert whole[0][1, 3] == 1 and exact.to_float(whole[1][auc.SUM_ROWS]) == 1


# -- to_floats (compiled) against to_float and the rational oracle, many sums at once ----

def _bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1).view(np.uint64)


def _one_by_one(acc: np.ndarray) -> np.ndarray:
    """The reference: :func:`exact.to_float` (Python's correctly rounded ``int / int``) of
    each accumulator."""
    return np.array([exact.to_float(row) for row in acc.reshape(-1, exact.DIGITS)])


MAX = 1.7976931348623157e308
ADVERSARIAL = [
    [],  # zero
    [2.0**53, 1.0],  # a tie: to even (down)
    [2.0**53, 3.0],  # a tie: to even (up)
    [2.0**53, 1.0, 5e-324],  # just above the tie: up (the sticky bit far below)
    [2.0**53, 1.0, -5e-324],  # just below the tie: down
    [-(2.0**53), -1.0, -5e-324],  # the same, negative
    [1e16, 1.0, -1e16, 1.0],  # cancellation
    [1e300, 1.0, -1e300],  # cancellation over 1,000 binades
    [1e308, -1e308, 5e-324],  # cancellation to the smallest subnormal
    [2.2250738585072014e-308, -5e-324],  # normal to subnormal
    [5e-324] * 7,
    [MAX, MAX, -MAX],
    [MAX, 2.0**970],  # exactly half an ulp above the largest: to infinity (even)
    [MAX, 2.0**970, -5e-324],  # just below that half: the largest float
    [MAX, MAX],  # overflow
    [-MAX, -MAX],
    [0.1] * 10,
    [1.0, -(2.0**-60)],  # 1 - tiny: rounds to 1
    [1.0, -(2.0**-53)],  # a tie below 1 (the finer grid): stays exact
    [2.0**-1022, 2.0**-1074, -(2.0**-1073)],
    [math.inf, 1.0],
    [-math.inf],
    [math.inf, -math.inf],
    [math.nan, 2.0],
]


def test_to_floats_rounds_adversarial_sums_as_to_float_and_the_oracle() -> None:
    acc = np.stack([exact.exact_sum(np.array(values, dtype=np.float64)) for values in ADVERSARIAL])
    got = exact.to_floats(acc)
    assert np.array_equal(_bits(got), _bits(_one_by_one(acc)))
    for values, value in zip(ADVERSARIAL, got.tolist(), strict=True):
        if not any(math.isinf(v) or math.isnan(v) for v in values):
            try:
                want = rounded_sum(values)
            except OverflowError:
                want = math.inf if sum(Fraction(v) for v in values) > 0 else -math.inf
            assert value == want, values


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(finite, max_size=12), min_size=1, max_size=20))
def test_to_floats_of_many_sums_is_the_rounded_exact_sum_of_each(sums) -> None:
    acc = np.stack([exact.exact_sum(np.array(values, dtype=np.float64)) for values in sums])
    got = exact.to_floats(acc)
    assert got.tolist() == [rounded_sum(values) for values in sums]
    assert np.array_equal(_bits(got), _bits(_one_by_one(acc)))


def test_to_floats_of_digits_not_normalized_is_to_float(rng) -> None:
    """Summed accumulators (an ``Allreduce``'s), and any whole digits below ``2**53`` of
    either sign: the compiled pass carries them as :func:`exact.to_int` reads them."""
    acc = rng.integers(-(2**52), 2**52, (400, exact.DIGITS)).astype(np.float64)
    acc[:100, 40:] = 0  # finite sums around 2**200
    acc[100:200, 34:] = 0  # and around 1 (digit 33 holds 2**-18 .. 2**14)
    acc[200:300, 3:] = 0  # subnormal, or cancelling to one
    acc[300:, -1] = 0  # up to 2**1070: infinite
    acc[::7] = np.abs(acc[::7])
    sums = np.stack([exact.exact_sum(rng.normal(0, 10.0**rng.integers(-300, 300), 9))
                     for _ in range(50)])
    merged = sums + sums[::-1] + sums[5:6]  # three ranks' digits, not carried
    for digits in (acc, merged):
        assert np.array_equal(_bits(exact.to_floats(digits)), _bits(_one_by_one(digits)))


def test_to_floats_of_few_digits_at_every_place_is_to_float() -> None:
    """Sums held in one or two digits, at every digit, of either sign (the compiled pass
    skips the zero digits below them: a value with all its bits kept far above the
    lowest digits, or rounded there)."""
    rows = []
    for k in range(exact.DIGITS - 2):
        for digits in ([1.0], [3.0], [2.0**32 - 1], [2.0**31 + 1], [5.0, 2.0**32 - 1],
                       [2.0**32 - 1, 1.0], [0.0, 7.0], [-1.0], [-(2.0**32 - 1), 3.0]):
            acc = np.zeros(exact.DIGITS)
            acc[k : k + len(digits)] = digits
            rows.append(acc)
    acc = np.array(rows)
    assert np.array_equal(_bits(exact.to_floats(acc)), _bits(_one_by_one(acc)))


def test_add_at_adds_each_row_to_its_block_as_add_values(rng) -> None:
    blocks, fields, n = 50, 6, 3000
    index = rng.integers(0, blocks, n)
    values = rng.normal(0, 1, (n, 3)) * 10.0**rng.integers(-20, 20, (n, 3))
    acc = exact.accumulator(blocks, fields)
    exact.add_at(acc, index, values, first=2)
    want = exact.accumulator(blocks, fields)
    for block in range(blocks):
        for j in range(3):
            exact.add_values(want[block, 2 + j], values[index == block, j])
    assert np.array_equal(acc, want)  # normalized digits of the same sums: the same bits
    with pytest.raises(ValueError):
        exact.add_at(acc, np.array([blocks]), np.zeros((1, 3)), first=2)


@pytest.mark.parametrize("signed", [False, True])
def test_a_window_of_digits_gives_the_floats_of_the_whole_accumulators(rng, signed) -> None:
    """Many tags: accumulators sent as the window of the digits some of them use
    (``used_digits``, ``joined_digits`` over ranks, ``window_to_floats``) round to the same
    floats as the whole accumulators: sums of few positive values (a narrow window), or
    negative sums and an infinite one (the top digit holds the sign), in several chunks,
    the digits unnormalized (two ranks' accumulators added); and row_fsums is math.fsum."""
    ranks = [exact.accumulator(300, 3) for _ in range(2)]
    for acc in ranks:
        for block in range(300):
            for field in range(3):
                values = rng.normal(0, 10.0 ** rng.integers(-8, 8), rng.integers(0, 5))
                exact.add_values(acc[block, field], values if signed else np.abs(values))
    if signed:
        ranks[1][7, 1] = exact.exact_sum(np.array([np.inf]))
    first, stop = exact.joined_digits([exact.used_digits(acc) for acc in ranks])
    assert (stop - first < 10) is not signed
    assert exact.joined_digits([(0, 0), (0, 0)]) == (0, 1)
    assert exact.used_digits(exact.accumulator(4, 2)) == (0, 0)
    total = ranks[0] + ranks[1]
    window = ranks[0][..., first:stop] + ranks[1][..., first:stop]
    assert not total[..., :first].any() and not total[..., stop:].any()
    assert exact.to_floats(total).tobytes() == exact.window_to_floats(window, first).tobytes()


@pytest.mark.parametrize("width", [0, 1, 3, 40])
def test_row_fsums_is_math_fsum_of_each_row(rng, width) -> None:
    """Rows of terms over 40 orders of magnitude, rows that cancel to 0 or to a last bit,
    subnormals and the largest floats, rows of zeros, each summed as math.fsum does (each
    row's digits read and cleared alone); a thread's window of
    digits (set by the many tags' pass) does not narrow them."""
    terms = rng.normal(0, 1, (500, width)) * 10.0 ** rng.integers(-20, 20, (500, width))
    if width >= 3:
        terms[1, :3] = [1e300, -1e300, 5e-324]
        terms[2, :3] = [1.7976931348623157e308, 1.0, -1.7976931348623157e308]
        terms[3, :3] = [0.1, 0.2, -0.30000000000000004]
        terms[4, :3] = [2.0**-1074, 2.0**-1074, 2.0**-1022]
        terms[5] = 0.0  # no term adds to a digit
        terms[6, ::2] = 0.0
        terms[7, :2] = [-1e300, 1e-300]  # digits far apart, cleared for the next rows
    expected = [math.fsum(row) for row in terms.tolist()]
    assert exact.row_fsums(terms).tolist() == expected
    assert exact.row_fsums(terms[:0]).tolist() == []
    _core.exact.set_window(30, 8)
    try:
        assert exact.row_fsums(terms).tolist() == expected
    finally:
        _core.exact.set_window(0, exact.DIGITS)


def test_add_at_in_a_window_is_the_same_sum_or_says_a_value_is_outside() -> None:
    """``add_at`` into accumulators of a window of digits (many tags): the same floats as
    with every digit, or True when a value falls outside the window (left out)."""
    index = np.array([0, 1, 1, 0, 1])
    values = np.array([0.1, 3.0, -2.5, 1e9, 1.0 / 3.0])
    full = exact.accumulator(2, 1)
    assert not exact.add_at(full, index, values)
    window = np.zeros((2, 1, 11))
    assert not exact.add_at(window, index, values, 0, 28)
    assert np.array_equal(exact.window_to_floats(window, 28), exact.to_floats(full))
    assert exact.to_floats(full)[1, 0] == math.fsum([3.0, -2.5, 1.0 / 3.0])
    for outside in (1e-60, 1e40, math.inf):  # lowest bits 2**-251, 2**80
        assert exact.add_at(np.zeros((2, 1, 11)), index, np.append(values[:4], outside), 0,
                            28)


# -- pairs: 16 bytes an exact sum (many tags on a rank alone) ------------------------------


def _pairs_of(values: list[float]) -> exact.Pairs:
    """One sum of ``values`` as pairs, each value added to it in turn."""
    total = exact.Pairs.zeros(1)
    for value in values:
        assert not total.add(exact.Pairs(np.array([[value, 0.0]])))
    return total


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, max_size=40), st.randoms(use_true_random=False))
def test_pairs_round_to_the_rounded_exact_sum_and_give_its_digits(values, random):
    """A sum of pairs (hi, lo and the spills of the bits they cannot hold) rounds to the
    oracle's float, whatever the order and the split of the values, and gives the same
    digits as the digit accumulators (so it joins their sum over ranks)."""
    want = rounded_sum(values)
    shuffled = values[:]
    random.shuffle(shuffled)
    cut = random.randint(0, len(shuffled))
    total = _pairs_of(shuffled[:cut])
    assert not total.add(_pairs_of(shuffled[cut:]))
    assert total.to_floats()[0] == want
    digits = total.to_digits()
    assert digits is not None
    assert np.array_equal(digits[0], exact.exact_sum(np.array(values, dtype=np.float64)))


def test_pairs_spill_the_bits_they_cannot_hold_and_round_them_in() -> None:
    """Values whose bits span more than two float64s spill, and their sum still rounds
    to the exact sum's float (a float sum, or hi + lo alone, would not); each spill is
    its accumulator's."""
    # 1 + 2**-53 is a tie (to even: 1); the spilled 2**-200 breaks it upwards
    values = [1.0, 2.0**-53, 2.0**-200]
    total = exact.Pairs.zeros(3)
    for value in values:
        assert not total.add(exact.Pairs(np.array([[0.0, 0.0], [value, 0.0], [1.0, 0.0]])))
    assert total.index.tolist() == [1]  # only the wide sum spills
    assert total.to_floats().tolist() == [0.0, 1.0 + 2.0**-52, 3.0]
    assert rounded_sum(values) == 1.0 + 2.0**-52 and total.table[1].sum() == 1.0
    assert total.to_digits(28, 11) is None  # 2**-200 lies below the window's digits
    narrow = _pairs_of([0.1, 0.2, 0.3])
    assert narrow.to_digits(28, 11) is not None and not len(narrow.index)
    assert exact.window_to_floats(narrow.to_digits(28, 11), 28)[0] == rounded_sum([0.1, 0.2,
                                                                                     0.3])


def test_pairs_round_a_column_after_the_other() -> None:
    """``to_floats(columns=True)`` of a table of pairs (a field's column whole, Fortran
    order, as many tags' values are read): the same floats as row by row, the spilled sums
    among them rounded in at their own place; a table of other than two axes as it is."""
    rows, fields = 37, 5
    total = exact.Pairs.zeros(rows, fields)
    rng = np.random.default_rng(7)
    for _ in range(4):
        values = rng.random((rows, fields)) * 2.0 ** rng.integers(-60, 60, (rows, fields))
        values[3, 4] = 2.0**-200 if _ % 2 else 1.0
        assert not total.add(exact.Pairs(np.stack([values, np.zeros_like(values)], axis=-1)))
    assert len(set(total.index.tolist())) > 20  # (values 2**120 apart: many sums spill)
    by_rows, by_columns = total.to_floats(), total.to_floats(columns=True)
    assert by_columns.flags.f_contiguous and by_rows.flags.c_contiguous
    assert np.array_equal(by_rows.view(np.int64), by_columns.view(np.int64))
    assert by_rows[3, 4] == rounded_sum([1.0, 1.0, 2.0**-200, 2.0**-200])
    flat = _pairs_of([0.1, 0.2, 2.0**-200])  # one axis: as it is
    assert flat.to_floats(columns=True).tolist() == flat.to_floats().tolist()
    with pytest.raises(ValueError, match="columns"):
        _core.exact.pairs_to_floats(total.table, total.index, total.value,
                                    np.empty(rows * fields), 3)


def test_pairs_refuse_an_overflow_and_bad_spills() -> None:
    """A pair's sum that overflows says so (the caller sums with every digit); spills
    outside the table, or adds outside a thread's pairs mode, are ValueErrors."""
    big = exact.Pairs(np.array([[1.7e308, 0.0]]))
    assert big.add(exact.Pairs(np.array([[1.7e308, 0.0]])))
    table = np.zeros((2, 2))
    with pytest.raises(ValueError, match="spill index"):
        _core.exact.pairs_to_floats(table, np.array([2]), np.array([1.0]), np.empty(2))
    with pytest.raises(ValueError, match="pairs mode"):
        _core.exact.add_pairs(table, table.copy())
    with pytest.raises(ValueError, match="holds pairs"):
        _core.exact.pairs_to_floats(np.zeros((2, 3)), np.zeros(0, np.int64), np.zeros(0),
                                    np.empty(2))


def test_a_thread_leaves_pairs_mode_with_no_spill_left() -> None:
    """Spills not taken within :func:`exact.thread_pairs` (a pass that failed) are dropped
    at its end: the next pairs start with none, and the thread adds digits again."""
    table = np.zeros((1, 2))
    with exact.thread_pairs():
        _core.exact.add_pairs(table, np.array([[1.0, 0.0]]))
        _core.exact.add_pairs(table, np.array([[2.0**-80, 2.0**-170]]))
        assert _core.exact.spill_count(table) == 1
    with exact.thread_pairs():
        assert _core.exact.spill_count(table) == 0
    acc = exact.accumulator()
    exact.add_values(acc, np.array([0.5, 0.25]))
    assert exact.to_float(acc) == 0.75


def test_a_thread_compacts_its_spills_to_about_one_a_sum() -> None:
    """Sums that spill at most additions (values 2**-500 to 2**500 apart): the thread's
    spills compacted once they pass SPILLS_KEPT (each sum's spills given again as the
    float64s their exact sum rounds to), and again as they are taken (a few a sum: as
    many as the float64s their exact sum spans); the sums round to the exact sums."""
    rng = np.random.default_rng(7)
    n = (1 << 20) + 300_000
    values = rng.random(n) * 2.0 ** rng.integers(-500, 501, n)
    index = rng.integers(0, 3, n)
    pairs = exact.Pairs.zeros(3, 1)
    with exact.thread_pairs() as outside:
        _core.exact.add_at(pairs.table, index, values, 0, -1)
        held = _core.exact.spill_count(pairs.table)  # compacted once in the pass
        pairs.take_spills()  # compacted again as they are taken
    assert not outside[0] and 1000 < held < 1 << 20
    assert 0 < len(pairs.index) <= 3 * 40  # (2**-553 .. 2**500: about 18 float64s a sum)
    want = [rounded_sum(values[index == k].tolist()) for k in range(3)]
    assert pairs.to_floats()[:, 0].tolist() == want


def _spilled_pairs(rng: np.random.Generator, rows: int, fields: int) -> exact.Pairs:
    """Pairs of shape ``(rows, fields)`` over values 2**-300 to 2**300 apart: most sums
    spill."""
    pairs = exact.Pairs.zeros(rows, fields)
    values = rng.random((4 * rows, fields)) * 2.0 ** rng.integers(-300, 301, (4 * rows, fields))
    with exact.thread_pairs() as outside:
        _core.exact.add_at(pairs.table, rng.integers(0, rows, 4 * rows), values, 0, -1)
        pairs.take_spills()
    assert not outside[0] and len(pairs.index)
    return pairs


def test_pairs_columns_are_the_sums_of_those_fields() -> None:
    """``Pairs.columns``: some fields' sums as pairs of their own, their spills with them
    (renumbered), the same floats and digits as the whole table's; the window kept."""
    rng = np.random.default_rng(11)
    whole = _spilled_pairs(rng, 30, 7)
    whole.window = (28, 11)
    floats, digits = whole.to_floats(), whole.to_digits()
    assert digits is not None
    for start, stop in ((0, 7), (0, 3), (3, 7), (6, 7), (2, 2)):
        part = whole.columns(start, stop)
        assert part.shape == (30, stop - start) and part.window == (28, 11)
        assert np.array_equal(part.to_floats(), floats[:, start:stop])
        assert np.array_equal(part.to_digits(), digits[:, start:stop])
        assert len(part.index) == np.sum((whole.index % 7 >= start) & (whole.index % 7 < stop))


@pytest.mark.parametrize("ranks", [1, 2, 3, 5])
def test_pairs_sent_to_their_owners_sum_to_every_ranks_sum(ranks: int) -> None:
    """Each rank's pairs split by rows for their owners (``Pairs.sent``), routed as an
    ``Alltoallv`` would, and added on each owner (``Pairs.received``): every owner's rows
    of the exact sum of every rank's pairs, the same floats as the digits summed; more
    owners than rows leave some with none."""
    rng = np.random.default_rng(ranks)
    rows, fields = 4, 3  # (5 ranks: an owner of no row)
    parts = [_spilled_pairs(rng, rows, fields) for _ in range(ranks)]
    digits = [part.to_digits() for part in parts]
    want_digits = sum(d for d in digits if d is not None)
    exact.normalize(want_digits)
    want = exact.to_floats(want_digits)
    bounds = np.array([rows * r // ranks for r in range(ranks + 1)], dtype=np.int64)
    sent = [part.sent(bounds) for part in parts]
    for owner in range(ranks):
        tables, spills, counts = [], [], []
        for table, table_counts, spill, spill_counts in sent:
            starts = np.concatenate([[0], np.cumsum(table_counts)])
            tables.append(table[starts[owner]: starts[owner + 1]])
            spill_starts = np.concatenate([[0], np.cumsum(spill_counts)])
            spills.append(spill[spill_starts[owner]: spill_starts[owner + 1]])
            counts.append(spill_counts[owner])
        total, overflow = exact.Pairs.received(np.concatenate(tables), np.concatenate(spills),
                                               np.array(counts), fields)
        assert not overflow
        lo, hi = bounds[owner], bounds[owner + 1]
        assert total.shape == (hi - lo, fields)
        assert np.array_equal(total.to_floats(), want[lo:hi])
        assert np.array_equal(total.to_digits(), want_digits[lo:hi])  # (spills too)
    big = exact.Pairs(np.array([[[1.7e308, 0.0]]]))
    _, overflow = exact.Pairs.received(np.concatenate([big.table.reshape(-1)] * 2),
                                       np.zeros(0, exact.SPILL), np.zeros(2, np.int64), 1)
    assert overflow


def test_pairs_made_digits_in_their_window_or_every_digit() -> None:
    """``Pairs.digits``: the window's digits when they hold every sum, else every digit."""
    narrow = _pairs_of([0.1, 0.2, 0.3])
    narrow.window = (28, 11)
    digits, first = narrow.digits()
    assert first == 28 and digits.shape == (1, 11)
    assert exact.window_to_floats(digits, 28)[0] == rounded_sum([0.1, 0.2, 0.3])
    wide = _pairs_of([1.0, 2.0**-200])
    wide.window = (28, 11)
    digits, first = wide.digits()
    assert first == 0 and digits.shape == (1, exact.DIGITS)
    assert exact.to_floats(digits)[0] == rounded_sum([1.0, 2.0**-200])
