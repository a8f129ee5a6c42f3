"""The log lines' number formats: the column formatters (many tags) give what the one-value
ones give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpieval import logline

_NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(-(2**62), 2**62), st.sampled_from([0.5, 12.5, -0.0, 1e16,
                                                                   1e16 + 2, 2.0**53, 1e300]))


@given(st.lists(_NUMBERS, max_size=30))
def test_values_is_value_of_each(xs) -> None:
    assert logline.values(xs) == [logline.value(x) for x in xs]
    as_numpy = list(np.array([float(x) for x in xs], dtype=np.float64))
    assert logline.values(as_numpy) == [logline.value(x) for x in as_numpy]


@given(st.lists(_NUMBERS.filter(lambda x: not (isinstance(x, float) and math.isinf(x))),
                max_size=30))
def test_counts_is_count_of_each(xs) -> None:
    xs = [x for x in xs if x == x]  # (a count is never NaN)
    assert logline.counts(xs) == [logline.count(x) for x in xs]


def test_json_count_and_number_give_plain_values() -> None:
    """Counts: an int when whole and below 2**53 (ints, floats and numpy scalars alike),
    else a float; numbers: NaN (Python's or numpy's) as None, numpy scalars as Python's."""
    big = 2**53
    for x, want in [(3, 3), (-3, -3), (big - 1, big - 1), (big, float(big)), (-big, -float(big)),
                    (2**70, float(2**70)), (3.0, 3), (2.5, 2.5), (np.int64(7), 7),
                    (np.float64(7.0), 7), (np.float32(0.5), 0.5), (True, 1)]:
        got = logline.json_count(x)
        assert got == want and type(got) is type(want), (x, got)
    for x, want in [(0.25, 0.25), (math.nan, None), (np.float64(math.nan), None),
                    (np.float32(0.5), 0.5), (np.int64(4), 4), (7, 7), (None, None)]:
        got = logline.json_number(x)
        assert got == want and type(got) is type(want), (x, got)


@given(st.lists(st.integers(-2**60, 2**60) | st.floats(allow_nan=True, allow_infinity=False)
                | st.sampled_from([2**53, -2**53, 2**53 - 1, 12.5, 3.0]), max_size=30))
def test_json_counts_and_numbers_are_each_ones(xs) -> None:
    """A column at a time, as one value at a time: the same values and types."""
    counts = logline.json_counts(list(xs))
    assert [(type(x), x) for x in counts] == [(type(y), y) for y in map(logline.json_count, xs)]
    floats = [float(x) for x in xs]
    assert [repr(x) for x in logline.json_numbers(floats)] == [
        repr(logline.json_number(x)) for x in floats]
    as_array = logline.json_numbers(np.array(floats, dtype=np.float64))  # (C-level)
    assert [(type(x), repr(x)) for x in as_array] == [
        (type(y), repr(y)) for y in map(logline.json_number, floats)]


@given(st.lists(_NUMBERS, max_size=60))
def test_values_of_a_float64_array_are_value_of_each(xs) -> None:
    """The compiled pass over an array (``_core.text.g_values``): C's ``%g`` in the C
    locale, NaN as ``nan``, the text Python's ``%g`` gives."""
    array = np.array([float(x) for x in xs], dtype=np.float64)
    assert logline.values(array) == [logline.value(x) for x in array.tolist()]
    assert logline.values(array[::2]) == [logline.value(x) for x in array[::2].tolist()]


def test_values_of_random_bits_are_python_s_g() -> None:
    """Floats of random bit patterns (every exponent, subnormals, NaNs of any sign)."""
    bits = np.random.default_rng(7).integers(0, 2**64, 200_000, dtype=np.uint64)
    array = bits.view(np.float64)
    assert logline.values(array) == [logline.value(x) for x in array.tolist()]


@given(st.lists(st.text(max_size=4), min_size=2, max_size=6),
       st.lists(st.lists(st.text(max_size=3), min_size=5, max_size=5), min_size=1,
                max_size=5))
def test_joined_is_each_row_between_the_pieces(pieces, columns) -> None:
    """Rows of texts between fixed pieces (many tags' log lines, no Python step a row): the
    concatenation written out; columns of unequal length or a wrong count of pieces are
    errors, not lines cut short."""
    pieces = (pieces * 6)[: len(columns) + 1]
    want = ["".join(p + c for p, c in zip(pieces, row, strict=False)) + pieces[-1]
            for row in zip(*columns, strict=True)]
    assert logline.joined(pieces, columns) == want
    short = [*columns[:-1], columns[-1][:-1]]  # the last column a row short
    for bad_pieces, bad_columns in [(pieces[:-1], columns), (pieces[:1], []),
                                    (pieces, short if len(columns) > 1 else [[], []])]:
        with pytest.raises(ValueError):
            logline.joined(bad_pieces, bad_columns)
