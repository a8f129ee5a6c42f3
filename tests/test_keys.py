"""uid keys (:mod:`mpieval.keys`) and their hash (:mod:`mpieval.kernels.keys`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval.errors import InputError
from mpieval.kernels import keys as kernels
from mpieval.keys import (
    HashedIds,
    group_keys,
    group_keys_checked,
    hashed_ids,
    text_buffers,
    uid_keys,
    uid_keys_checked,
)

# -- uid keys --------------------------------------------------------------------------


def test_integer_uids_are_their_own_keys() -> None:
    keys = uid_keys("uid", np.array([0, 7, -1, 2**62], dtype=np.int64))
    assert keys.dtype == np.uint64
    assert keys.tolist() == [0, 7, 2**64 - 1, 2**62]
    for dtype in (np.int8, np.int32, np.uint16, np.uint64):
        assert uid_keys("uid", np.array([0, 7], dtype=dtype)).tolist() == [0, 7]
    assert uid_keys_checked("uid", np.array([3]))[1] is None  # exact keys: nothing to check


def test_whole_float_uids_equal_the_integers() -> None:
    assert uid_keys("uid", np.array([3.0, -2.0])).tolist() == uid_keys(
        "uid", np.array([3, -2])
    ).tolist()


def test_string_keys_are_stable_across_runs_and_widths() -> None:
    # Pinned values: a key must never change between runs, ranks or releases.
    assert uid_keys("uid", np.array(["abc"])).tolist() == [18032504443866887167]
    assert uid_keys("uid", np.array([b"abc"])).tolist() == [13474905721447404198]
    narrow = uid_keys("uid", np.array(["u1", "user-2"]))
    wide = uid_keys("uid", np.array(["u1", "user-2", "x" * 40]))[:2]
    objects = uid_keys("uid", np.array(["u1", "user-2"], dtype=object))
    assert narrow.tolist() == wide.tolist() == objects.tolist()
    as_list = uid_keys("uid", ["u1", "user-2"])
    assert as_list.tolist() == narrow.tolist()


def test_string_keys_tell_values_apart() -> None:
    values = ["a", "b", "ab", "ba", "a\x00b", "A", "é", "\U0001f600", "a" * 9, "a" * 10]
    keys, checks = uid_keys_checked("uid", np.array(values))
    assert checks is not None
    assert len(set(keys.tolist())) == len(values)
    assert len(set(checks.tolist())) == len(values)
    assert not np.any(keys == checks)
    # str and bytes are different ids, even when the text is the same
    assert uid_keys("uid", ["a"])[0] != uid_keys("uid", [b"a"])[0]


def test_many_strings_have_distinct_keys() -> None:
    values = np.array([f"user-{i}" for i in range(200_000)])
    keys, checks = uid_keys_checked("uid", values)
    assert len(np.unique(keys)) == len(values)
    assert len(np.unique(checks)) == len(values)


@pytest.mark.parametrize(
    ("uid", "problem", "count", "first"),
    [
        (np.array([1.0, np.nan, 2.0, np.nan]), "missing", 2, 1),
        (np.array(["a", None, "b"], dtype=object), "missing", 1, 1),
        (np.array(["a", float("nan")], dtype=object), "missing", 1, 1),
        (np.array(["a", "", "b", ""]), "empty", 2, 1),
        (np.array([b"a", b""]), "empty", 1, 1),
        (np.array([1.0, 2.5]), "whole number", 1, 1),
        (np.array([1.0, 2.0**60]), "whole number", 1, 1),
        (np.array(["a", 3], dtype=object), "mixes", 1, 1),
        (np.array(["a", 1.5], dtype=object), "integers or strings", 1, 1),
    ],
)
def test_bad_uids_name_field_count_and_first_index(uid, problem, count, first) -> None:
    with pytest.raises(InputError) as caught:
        uid_keys("user_id", uid)
    error = caught.value
    assert error.field == "user_id"
    assert problem in error.problem
    assert (error.count, error.first_index) == (count, first)


@pytest.mark.parametrize("uid", [np.array([True, False]), np.zeros((2, 2), dtype=np.int64)])
def test_uids_of_the_wrong_kind_or_shape(uid) -> None:
    with pytest.raises(InputError, match="uid"):
        uid_keys("uid", uid)


def test_object_ints_are_integer_keys() -> None:
    assert uid_keys("uid", np.array([5, 2**63 + 1], dtype=object)).tolist() == [5, 2**63 + 1]


def test_group_keys_combine_columns() -> None:
    user = np.array([1, 1, 2, 2, 1])
    position = np.array([1, 2, 1, 2, 1])
    keys, checks = group_keys_checked({"uid": user, "position": position})
    assert checks is not None
    assert keys[0] == keys[4]
    assert len(set(keys.tolist())) == 4
    swapped = group_keys({"uid": position, "position": user})
    assert swapped[1] != keys[1]  # (1, 2) is not (2, 1)
    assert group_keys({"uid": user}).tolist() == uid_keys("uid", user).tolist()
    with pytest.raises(InputError, match="length"):
        group_keys({"uid": user, "position": position[:3]})


# -- kernels ---------------------------------------------------------------------------


def _splitmix64_finalizer(z: int) -> int:
    """The reference, in Python integers."""
    mask = 2**64 - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_mix64_is_the_splitmix64_finalizer_and_a_bijection_compiled_or_not() -> None:
    x = np.arange(100_000, dtype=np.uint64)
    assert len(np.unique(kernels.mix64(x))) == len(x)
    for value in (0, 1, 12345, 2**63, 2**64 - 1):
        got = int(kernels.mix64(np.array([value], dtype=np.uint64))[0])
        assert got == _splitmix64_finalizer(value)
        assert int(kernels.mix64_scalar(np.uint64(value))) == got  # the compiled form


def test_owner_ranks_are_pinned() -> None:
    # Pinned values: a uid's owner rank must never change between runs or releases.
    keys = np.array([0, 1, 7, 2**40, 2**64 - 1], dtype=np.uint64)
    assert kernels.owner_of(keys, 3).tolist() == [0, 1, 1, 0, 0]
    assert kernels.owner_of(keys, 7).tolist() == [0, 6, 2, 1, 0]
    assert kernels.owner_of(uid_keys("uid", ["u1", "user-2", "abc"]), 5).tolist() == [3, 3, 2]


def test_pyarrow_text_keys_are_those_of_the_same_bytes() -> None:
    """Arrow text is hashed from its buffers: the keys and checks of the same bytes as a
    numpy ``S`` array, for string, large string and binary arrays, sliced ones (offsets
    not from zero), values of any length (a word boundary at 8 bytes) and non-ASCII."""
    import pyarrow as pa

    values = ["abc", "x", "hello world", "é漢字", "12345678", "123456789", "a" * 40, "7"]
    expected = uid_keys_checked("uid", np.array([v.encode() for v in values]))
    for arrow_type in (pa.string(), pa.large_string(), pa.binary()):
        array = pa.array([v.encode() if arrow_type == pa.binary() else v for v in values],
                         arrow_type)
        keys, checks = uid_keys_checked("uid", array)
        assert keys.tolist() == expected[0].tolist() and checks is not None
        assert checks.tolist() == expected[1].tolist()
        keys, _ = uid_keys_checked("uid", array.slice(3, 4))
        assert keys.tolist() == expected[0][3:7].tolist()
    many = pa.array([f"user{k}" for k in range(5000)])
    alone = uid_keys_checked("uid", many)
    from mpieval.kernels import parallel

    threads, slice_rows = parallel._threads, kernels.SLICE_ROWS
    try:  # slices of rows on threads: the same keys
        parallel.use_threads(2)
        kernels.SLICE_ROWS = 700
        sliced = uid_keys_checked("uid", many)
    finally:
        parallel.use_threads(threads)
        kernels.SLICE_ROWS = slice_rows
    assert alone[1] is not None and sliced[1] is not None
    assert np.array_equal(sliced[0], alone[0]) and np.array_equal(sliced[1], alone[1])
    chunked = pa.chunked_array([values[:3], values[3:]])
    assert uid_keys("uid", chunked).tolist() == expected[0].tolist()
    integers = pa.array([7, -1, 2**40], pa.int64())
    assert uid_keys_checked("uid", integers)[1] is None
    assert uid_keys("uid", integers).tolist() == uid_keys("uid", np.array([7, -1, 2**40])).tolist()


@pytest.mark.parametrize(("array", "problem", "first"), [
    (["a", None, "b", None], "is missing", 1),
    (["a", "b", ""], "is empty", 2),
    ([3, None], "is missing", 1),
])
def test_bad_pyarrow_uids_name_the_first_row(array, problem, first) -> None:
    import pyarrow as pa

    with pytest.raises(InputError, match=problem) as raised:
        uid_keys("uid", pa.array(array))
    assert raised.value.first_index == first and raised.value.field == "uid"
    with pytest.raises(InputError, match="arrow type"):
        uid_keys("uid", pa.array([0.5]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=60), st.sampled_from([np.int32, np.int64]))
def test_text_lengths_give_the_longest_and_the_first_empty_text(texts, dtype) -> None:
    offsets = np.r_[0, np.cumsum([len(text) for text in texts])].astype(dtype)
    longest, first_empty = kernels.text_lengths(offsets)
    assert longest == max((len(text) for text in texts), default=0)
    assert first_empty == next((i for i, text in enumerate(texts) if not text), -1)


def test_an_empty_arrow_uid_is_reported_at_its_row() -> None:
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(InputError, match="empty") as caught:
        uid_keys_checked("uid", pa.array(["a", "bb", "", "c", ""]))
    assert caught.value.first_index == 2 and caught.value.count == 2


def test_short_checks_are_the_low_bits_of_the_checks() -> None:
    """``check_dtype=np.uint32`` (how the per-user kinds keep them) gives the low 32 bits of
    the same checks, from Arrow text and from numpy strings."""
    pa = pytest.importorskip("pyarrow")
    for uid in (pa.array(["a", "user-123456789012", "b"]), np.array(["a", "user-1", "b"])):
        keys, checks = uid_keys_checked("uid", uid)
        short_keys, short = uid_keys_checked("uid", uid, np.uint32)
        assert short.dtype == np.uint32
        np.testing.assert_array_equal(short_keys, keys)
        np.testing.assert_array_equal(short, (checks & np.uint64(0xFFFFFFFF)).astype(np.uint32))


def test_hashed_ids_give_the_keys_and_checks_of_their_ids_whole_or_taken() -> None:
    """Ids made keys once (a sliced metric's batch) give what the ids give, whole, with
    short checks and taken by rows; integer ids have no checks; made keys are not made
    again; bad ids fail where they are made keys, named."""
    pa = pytest.importorskip("pyarrow")
    rows = np.array([3, 0, 2])
    for uid in (pa.array(["a", "user-123456789012", "b", "c"]), np.array(["a", "u-1", "b", "c"]),
                np.array([7, -1, 2**40, 0])):
        hashed = hashed_ids("uid", uid)
        assert isinstance(hashed, HashedIds) and len(hashed) == 4
        assert hashed_ids("uid", hashed) is hashed
        for dtype in (np.uint64, np.uint32):
            keys, checks = uid_keys_checked("uid", uid, dtype)
            got_keys, got_checks = uid_keys_checked("uid", hashed, dtype)
            np.testing.assert_array_equal(got_keys, keys)
            if checks is None:
                assert got_checks is None
            else:
                assert got_checks is not None and got_checks.dtype == dtype
                np.testing.assert_array_equal(got_checks, checks)
            taken_keys, taken_checks = uid_keys_checked("uid", hashed[rows], dtype)
            np.testing.assert_array_equal(taken_keys, keys[rows])
            assert (taken_checks is None) == (checks is None)
            if checks is not None:
                np.testing.assert_array_equal(taken_checks, checks[rows])
    with pytest.raises(InputError, match="user"):
        hashed_ids("user", pa.array(["a", None]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=40),
       st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.uint64]),
       st.sampled_from([np.uint64, np.uint32]))
def test_decimal_keys_are_those_of_the_integers_text(values: list[int], dtype: type,
                                                     check_dtype: type) -> None:
    """hash_decimals of integers of any width gives hash_texts of their ``str()``: the
    uid 7 of a Parquet int column is the uid "7" of a text file (its extremes too)."""
    import pyarrow as pa

    info = np.iinfo(dtype)
    ints = np.array([v for v in values if info.min <= v <= info.max]
                    + [int(info.min), int(info.max), 0], dtype=dtype)
    keys, checks = kernels.hash_decimals(ints, check_dtype)
    text = pa.array([str(v) for v in ints.tolist()])
    want_keys, want_checks = kernels.hash_texts(*text_buffers(text), check_dtype=check_dtype)
    assert checks.dtype == np.dtype(check_dtype)
    np.testing.assert_array_equal(keys, want_keys)
    np.testing.assert_array_equal(checks, want_checks)


def test_decimal_keys_take_integers_only() -> None:
    with pytest.raises(TypeError, match="integers"):
        kernels.hash_decimals(np.array([1.0]))
