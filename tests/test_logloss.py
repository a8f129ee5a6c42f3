"""A row's logloss: mpieval's own ``log`` (``mpieval/_core/logloss.hpp``, fdlibm's algorithm
in plain float64 operations) against its Python twin, bit for bit, and against the C
library's ``math.log`` within 1 ulp; the pred clipped to ``[1e-15, 1 - 1e-15]``; and the
update kernel, which computes the logloss of a block of rows at a time, against the rows'
own terms summed exactly."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from mpieval import _core
from mpieval.kernels import exact
from mpieval.kinds.auc import kernels as auc

TINY = 2.0**-1022  # the smallest normal float64


def compiled_log(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    _core.logloss.log(np.ascontiguousarray(x, np.float64), out)
    return out


def ulps(a: float, b: float) -> int:
    """How many float64 steps lie between a and b (of one sign, or zero)."""
    (i,) = struct.unpack("<q", struct.pack("<d", a))
    (j,) = struct.unpack("<q", struct.pack("<d", b))
    assert (i < 0) == (j < 0) or 0.0 in (a, b)
    return abs(i - j)


def sample(rng: np.random.Generator) -> np.ndarray:
    """Values over every binade of the normal float64s, the logloss's range densely, and the
    edges: 1e-15, 1 - 1e-15, 0.5, 1, the neighbours of 1, sqrt(1/2) and sqrt(2) (where the
    reduction changes k), the smallest normal and the largest float."""
    whole_range = np.ldexp(1.0 + rng.random(40_000), rng.integers(-1022, 1024, 40_000))
    unit = rng.random(40_000)
    unit = unit[unit >= 1e-15]
    small = np.exp(rng.uniform(math.log(1e-15), 0.0, 20_000))
    near_one = 1.0 - np.ldexp(rng.random(5_000), rng.integers(-53, -1, 5_000))
    edges = [1e-15, 1.0 - 1e-15, 0.5, 1.0, math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0),
             math.sqrt(0.5), math.nextafter(math.sqrt(0.5), 0.0), math.sqrt(2.0),
             math.nextafter(math.sqrt(2.0), 0.0), 2.0, 0.25, TINY, math.nextafter(TINY, 1.0),
             1.7976931348623157e308, math.e, 10.0]
    return np.concatenate([whole_range, unit, small, near_one, edges])


def test_the_compiled_log_is_its_python_twin_bit_for_bit(rng):
    x = sample(rng)
    got = compiled_log(x)
    want = np.array([auc.log(float(v)) for v in x])
    assert got.tobytes() == want.tobytes()


def test_the_log_is_within_one_ulp_of_the_c_library(rng):
    x = sample(rng)
    got = compiled_log(x)
    worst = max(ulps(float(g), math.log(float(v))) for g, v in zip(got, x, strict=True))
    assert worst <= 1


@pytest.mark.parametrize("x, want", [(1.0, 0.0), (2.0, math.log(2.0)), (0.5, -math.log(2.0)),
                                     (2.0**-1022, -1022 * math.log(2.0)),
                                     (2.0**1023, 1023 * math.log(2.0))])
def test_the_log_of_powers_of_two(x, want):
    assert auc.log(x) == want
    assert compiled_log(np.array([x]))[0] == want


def test_preds_are_clipped_to_1e15_before_the_log():
    """Preds at and beyond the clip give the logloss of the clip (subnormal preds too: the
    log never sees a value below 1e-15), those inside it their own."""
    low, high = 1e-15, 1.0 - 1e-15
    for p in (0.0, 5e-324, 2.0**-1022, 1e-300, 1e-16, low):
        assert auc.binary_logloss(p, 1) == -auc.log(low)
        assert auc.binary_logloss(p, 0) == -auc.log(1.0 - low)
    for p in (1.0, math.nextafter(1.0, 0.0), 1.0 - 1e-16, high):
        assert auc.binary_logloss(p, 1) == -auc.log(high)
        assert auc.binary_logloss(p, 0) == -auc.log(1.0 - high)
    for p in (2e-15, 0.3, 1.0 - 2e-15):
        assert auc.binary_logloss(p, 1) == -auc.log(p)
        assert auc.binary_logloss(p, 0) == -auc.log(1.0 - p)


@pytest.mark.parametrize("pred_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label_dtype", [np.int8, np.uint8, np.int32, np.int64, np.float32,
                                         np.float64, np.bool_])
@pytest.mark.parametrize("n", [5, 1024, 3 * 1024 + 77])
def test_the_update_sums_the_rows_logloss_exactly(rng, pred_dtype, label_dtype, n):
    """The binary update's logloss sum, over whole blocks of rows and a short last one, for
    every label dtype, is the exact sum of each row's own term (its Python twin)."""
    pred = rng.random(n).astype(pred_dtype)
    pred[:4] = [0.0, 1.0, 1e-20, 0.5]
    label = (rng.random(n) < 0.4).astype(label_dtype)
    table, sums = np.zeros((2, 16)), exact.accumulator(auc.N_SUMS)
    auc.accumulate(table, sums, pred, label)
    terms = [auc.binary_logloss(float(p), int(y)) for p, y in zip(pred, label, strict=True)]
    want = sum((Fraction(t) for t in terms), Fraction(0))
    got = exact.to_int(sums[auc.SUM_FIELDS.index("logloss")])
    assert Fraction(got, 2**1074) == want
