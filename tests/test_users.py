"""Per-user building blocks: uid keys, the row buffer, grouping, the exchange.

The ``mpi``-marked tests run under ``mpiexec -n N``; their assertions hold for any N."""

from __future__ import annotations

import numpy as np
import pytest
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import InputError, RemoteError, UidCollisionError
from mpieval.kernels import users as kernels
from mpieval.users import (
    RowBuffer,
    gather_by_user,
    group_keys,
    group_keys_checked,
    group_rows,
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


# -- row buffer ------------------------------------------------------------------------


def test_row_buffer_grows_by_doubling_and_keeps_rows() -> None:
    rows = RowBuffer({"key": np.uint64, "pred": np.float32})
    capacities = set()
    expected = []
    for i in range(300):
        batch = np.arange(i, i + 37, dtype=np.uint64)
        rows.append(key=batch, pred=np.full(37, 0.5, dtype=np.float32))
        expected.append(batch)
        capacities.add(rows.capacity)
    assert len(rows) == 300 * 37
    assert len(capacities) <= 1 + int(np.log2(300 * 37 / RowBuffer.MIN_CAPACITY)) + 1
    assert np.array_equal(rows.columns()["key"], np.concatenate(expected))
    assert rows.row_nbytes == 12
    assert rows.nbytes == rows.capacity * 12
    rows.clear()
    assert len(rows) == 0 and rows.nbytes == 0


def test_row_buffer_refuses_unsafe_casts_and_widens() -> None:
    rows = RowBuffer({"pred": np.float32})
    with pytest.raises(TypeError, match="pred"):
        rows.append(pred=np.array([0.1], dtype=np.float64))
    with pytest.raises(ValueError, match="columns"):
        rows.append(pred=np.zeros(1, np.float32), label=np.zeros(1))
    rows.append(pred=np.array([0.25, 0.5], dtype=np.float32))
    rows.widen("pred", np.float64)
    rows.append(pred=np.array([0.1]))
    assert rows.columns()["pred"].tolist() == [0.25, 0.5, 0.1]
    with pytest.raises(TypeError):
        rows.widen("pred", np.float32)


# -- grouping --------------------------------------------------------------------------


def test_group_rows_makes_users_contiguous_in_arrival_order() -> None:
    keys = np.array([5, 3, 5, 3, 9, 5], dtype=np.uint64)
    rows = group_rows(keys, {"row": np.arange(6)})
    assert rows.keys.tolist() == [3, 3, 5, 5, 5, 9]
    assert rows.starts.tolist() == [0, 2, 5, 6]
    assert rows.columns["row"].tolist() == [1, 3, 0, 2, 5, 4]
    assert rows.user_keys.tolist() == [3, 5, 9]
    assert rows.counts.tolist() == [2, 3, 1]
    empty = group_rows(np.zeros(0, np.uint64), {"row": np.zeros(0)})
    assert empty.starts.tolist() == [0] and empty.n_users == 0


def test_group_rows_detects_a_key_collision() -> None:
    keys = np.array([1, 2, 1], dtype=np.uint64)
    with pytest.raises(UidCollisionError, match="collision"):
        group_rows(keys, {}, checks=np.array([10, 20, 11], dtype=np.uint64))
    group_rows(keys, {}, checks=np.array([10, 20, 10], dtype=np.uint64))


# -- kernels ---------------------------------------------------------------------------


def _splitmix64_finalizer(z: int) -> int:
    """The reference, in Python integers."""
    mask = 2**64 - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_mix64_is_the_splitmix64_finalizer_and_a_bijection() -> None:
    x = np.arange(100_000, dtype=np.uint64)
    assert len(np.unique(kernels.mix64(x))) == len(x)
    for value in (0, 1, 12345, 2**63, 2**64 - 1):
        got = int(kernels.mix64(np.array([value], dtype=np.uint64))[0])
        assert got == _splitmix64_finalizer(value)


# -- across ranks ----------------------------------------------------------------------


@pytest.mark.mpi
def test_gather_by_user_puts_each_user_on_one_rank(comm: Comm, rng: np.random.Generator) -> None:
    n = 5000
    rows = {"uid": rng.integers(0, 700, size=n).astype(np.int64),
            "pred": rng.random(n), "row": np.arange(n)}
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    owned = gather_by_user(comm, uid_keys("uid", mine["uid"]),
                           {"pred": mine["pred"], "row": mine["row"]})
    everything = comm.allgather((owned.user_keys.tolist(), owned.columns["row"].tolist()))
    users = [u for user_keys, _ in everything for u in user_keys]
    assert len(users) == len(set(users)) == len(np.unique(rows["uid"]))  # one owner each
    assert sorted(r for _, got in everything for r in got) == list(range(n))  # every row once
    owner = kernels.owner_of(owned.user_keys, comm.size)
    assert np.all(owner == comm.rank)
    for u in range(owned.n_users):
        part = slice(owned.starts[u], owned.starts[u + 1])
        assert np.all(rows["uid"][owned.columns["row"][part]] == owned.keys[part].astype(np.int64))


@pytest.mark.mpi
def test_a_collision_on_one_rank_fails_every_rank(comm: Comm) -> None:
    keys = np.array([1, 1], dtype=np.uint64) if comm.rank == 0 else np.zeros(0, np.uint64)
    checks = np.array([5, 6], dtype=np.uint64) if comm.rank == 0 else np.zeros(0, np.uint64)
    with pytest.raises((UidCollisionError, RemoteError), match="collision"):
        gather_by_user(comm, keys, {}, checks=checks)
    # the communicator still works afterwards
    assert comm.allgather(comm.rank) == list(range(comm.size))


@pytest.mark.mpi
def test_mismatched_columns_fail_every_rank(comm: Comm) -> None:
    if comm.size == 1:
        pytest.skip("needs two ranks to disagree")
    dtype = np.float64 if comm.rank == 0 else np.float32
    with pytest.raises(ValueError, match="different columns"):
        gather_by_user(comm, np.zeros(3, np.uint64), {"pred": np.zeros(3, dtype)})
    with pytest.raises(ValueError, match=r"rank 0: .*one length"):
        gather_by_user(comm, np.zeros(3 if comm.rank else 2, np.uint64), {"x": np.zeros(3)})
