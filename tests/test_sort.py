"""The sorts of the compiled kernels (:mod:`mpieval.kernels.sort`), against numpy's sorts
and a brute-force inversion count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval.kernels.sort import RUN, merge_sort, merge_sort_counting_inversions, radix_sort

LENGTHS = [0, 1, 2, RUN - 1, RUN, RUN + 1, 2 * RUN + 1, 5 * RUN + 3, 1000]


def _orders(rng: np.random.Generator, m: int) -> dict[str, np.ndarray]:
    """Inputs of ``m`` values: random, sorted, reversed, few distinct values (ties)."""
    values = rng.random(m)
    return {
        "random": values,
        "sorted": np.sort(values),
        "reversed": np.sort(values)[::-1].copy(),
        "ties": rng.integers(0, 4, m).astype(np.float64),
    }


def _inversions(values: np.ndarray) -> int:
    return sum(int(np.sum(values[i + 1 :] < values[i])) for i in range(len(values)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint64, np.int64])
@pytest.mark.parametrize("m", LENGTHS)
def test_merge_sort_sorts_the_first_m_rows(
    rng: np.random.Generator, dtype: type, m: int
) -> None:
    for name, values in _orders(rng, m).items():
        values = (values * 1000).astype(dtype)
        padded = np.concatenate([values, np.array([7, 3], dtype)])  # rows past m stay
        merge_sort(padded, np.empty_like(padded), m)
        assert np.array_equal(padded[:m], np.sort(values)), name
        assert padded[m:].tolist() == [7, 3]


@pytest.mark.parametrize("m", LENGTHS)
def test_merge_sort_of_pairs_is_lexicographic_and_stable(rng: np.random.Generator, m: int) -> None:
    for name, values in _orders(rng, m).items():
        first = np.round(values * 3)  # many ties
        second = rng.integers(0, 3, m).astype(np.float64)
        expected = np.lexsort((second, first))  # by first, then second
        got_first, got_second = first.copy(), second.copy()
        merge_sort(got_first, np.empty(m), m, got_second, np.empty(m))
        assert np.array_equal(got_first, first[expected]), name
        assert np.array_equal(got_second, second[expected]), name
        # keys with the row index as the second: a stable sort by key, carrying the rows
        keys = first.astype(np.uint64)
        rows = np.arange(m)
        merge_sort(keys, np.empty_like(keys), m, rows, np.empty_like(rows))
        assert np.array_equal(rows, np.argsort(first, kind="stable")), name
        assert np.array_equal(keys, np.sort(first).astype(np.uint64)), name


@pytest.mark.parametrize("m", [*LENGTHS[:-1], 300])
def test_inversions_are_the_out_of_order_pairs(rng: np.random.Generator, m: int) -> None:
    for name, values in _orders(rng, m).items():
        got = values.copy()
        count = merge_sort_counting_inversions(got, np.empty(m), m)
        assert count == _inversions(values), name
        assert np.array_equal(got, np.sort(values)), name
    assert merge_sort(rng.random(m), np.empty(m), m) == 0  # the plain sort counts nothing


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=80))
def test_any_list_sorts_and_counts(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    got = array.copy()
    count = merge_sort_counting_inversions(got, np.empty_like(got), len(got))
    assert got.tolist() == sorted(values)
    assert count == _inversions(array)


@pytest.mark.parametrize("m", [0, 1, 2, 47, 48, 49, 255, 256, 257, 5000, 300_000])
def test_radix_sort_sorts_by_key_carrying_each_rows_payload(rng: np.random.Generator,
                                                            m: int) -> None:
    """Float bits of [0, 1] (high digits shared), whole uint64s (0 and the largest among
    them), few distinct values, one value repeated, a narrow cluster beside far outliers
    (levels that each narrow the range a little); the keys end in order, each with its
    own row's payload; rows past ``m`` are not touched."""
    whole = rng.integers(0, 2**64 - 1, m, dtype=np.uint64, endpoint=True)
    whole[: min(m, 2)] = [0, 2**64 - 1][: min(m, 2)]
    cluster = np.uint64(1 << 40) + rng.integers(0, 1000, m).astype(np.uint64)
    cluster[: m // 100] = rng.integers(0, 2**64 - 1, m // 100, dtype=np.uint64)
    inputs = {
        "floats": (rng.random(m) + 0.0).view(np.uint64),
        "uint64": whole,
        "ties": rng.integers(0, 5, m).astype(np.uint64) << np.uint64(40),
        "one value": np.full(m, 12345, np.uint64),
        "cluster and outliers": rng.permutation(cluster),
    }
    for name, keys in inputs.items():
        padded = np.r_[keys, np.array([1, 0], np.uint64)]
        payload = rng.permutation(m + 2).astype(np.uint32)
        given = payload.copy()
        tmp_keys, tmp_payload = np.empty_like(padded), np.empty_like(payload)
        radix_sort(padded, payload, tmp_keys, tmp_payload, m)
        assert np.array_equal(padded[:m], np.sort(keys)), name
        # each row's payload came with its key: the (key, payload) pairs are the same
        before = sorted(zip(keys.tolist(), given[:m].tolist(), strict=True))
        after = sorted(zip(padded[:m].tolist(), payload[:m].tolist(), strict=True))
        assert before == after, name
        assert padded[m:].tolist() == [1, 0], name
        assert payload[m:].tolist() == given[m:].tolist(), name
