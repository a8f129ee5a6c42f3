"""A move of per-user rows to their owners: the compiled split (:mod:`mpieval.kernels.moves`)
against numpy's masks, and :func:`mpieval.exchange.move_to_owners` across ranks against
every rank's rows gathered (the ``mpi``-marked tests run under ``mpiexec -n N``)."""

from __future__ import annotations

import numpy as np
import pytest

from mpieval.comm import Comm
from mpieval.exchange import move_to_owners
from mpieval.kernels.keys import mix64, owner_of
from mpieval.kernels.moves import buckets, owners, split_columns
from mpieval.rows import RowBuffer

DTYPES = {"key": np.uint64, "pred": np.float32, "wide": np.float64, "label": np.uint8,
          "tag": np.uint16, "check": np.uint32, "flag": np.bool_,
          "pair": np.complex128}  # 16 bytes: the kernel's path for other widths


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 16, 1000, 1023, 65535, 65536])
def test_owners_are_owner_of_and_their_counts(size: int, rng: np.random.Generator) -> None:
    """The compiled remainder (a mask for a power of two, else a multiplication by a
    reciprocal) is ``%`` for every key, the extremes too, at any number of ranks."""
    keys = rng.integers(0, 2**64, size=100_003, dtype=np.uint64)
    keys[:5] = [0, 1, 2**63, 2**64 - 2, 2**64 - 1]
    dest, counts = owners(keys, size)
    assert dest.dtype == np.uint16
    assert np.array_equal(dest, owner_of(keys, size))
    assert counts.tolist() == np.bincount(dest, minlength=size).tolist()


@pytest.mark.parametrize("bits", [1, 7, 10, 16])
def test_buckets_are_the_top_bits_of_mix64_and_their_counts(
        bits: int, rng: np.random.Generator) -> None:
    """The compiled buckets (a heavy user's owner handing users over) are numpy's
    ``mix64(key) >> (64 - bits)`` for every key, the extremes too; out-of-range bits are
    refused."""
    keys = rng.integers(0, 2**64, size=100_003, dtype=np.uint64)
    keys[:5] = [0, 1, 2**63, 2**64 - 2, 2**64 - 1]
    bucket, counts = buckets(keys, bits)
    assert bucket.dtype == np.uint16
    assert np.array_equal(bucket, mix64(keys) >> np.uint64(64 - bits))
    assert counts.tolist() == np.bincount(bucket, minlength=1 << bits).tolist()
    for wrong in (0, 17):
        with pytest.raises(ValueError):
            buckets(keys, wrong)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_split_columns_keeps_a_ranks_rows_in_place_and_packs_the_rest(
        size: int, rng: np.random.Generator) -> None:
    n = 777
    for rank in range(size):
        dest = rng.integers(0, size, size=n).astype(np.uint16)
        if size > 2:
            dest[dest == 1] = 0  # an owner without rows
        given = {name: rng.integers(0, 200, size=n).astype(dtype)
                 for name, dtype in DTYPES.items()}
        columns = {name: values.copy() for name, values in given.items()}
        counts = np.bincount(dest, minlength=size)
        leaving = counts.copy()
        leaving[rank] = 0
        record = sum(np.dtype(dtype).itemsize for dtype in DTYPES.values())
        firsts = np.cumsum(leaving) - leaving
        out = np.full(int(leaving.sum()) * record, 0xAB, dtype=np.uint8)
        kept = split_columns(dest, rank, list(columns.values()), out, firsts)
        assert kept == counts[rank]
        before = 0
        for name, values in given.items():
            assert np.array_equal(columns[name][:kept], values[dest == rank])
            width = values.dtype.itemsize
            for d in range(size):
                if d == rank:
                    continue
                start = int(firsts[d]) * record + int(counts[d]) * before
                block = out[start : start + int(counts[d]) * width]
                assert np.array_equal(block.view(values.dtype), values[dest == d])
            before += width


def test_split_columns_refuses_an_owner_past_the_ranks() -> None:
    dest = np.array([0, 3], dtype=np.uint16)
    with pytest.raises(ValueError, match="dest"):
        split_columns(dest, 0, [np.zeros(2, np.uint64)], np.zeros(64, np.uint8),
                      np.zeros(2, np.int64))
    with pytest.raises(IndexError, match="too small"):
        split_columns(np.array([1, 1], np.uint16), 0, [np.zeros(2, np.uint64)],
                      np.zeros(8, np.uint8), np.zeros(2, np.int64))


# -- across ranks ----------------------------------------------------------------------

NO_VALUE = 2**32 - 1  # a code past the lookup that stands for no value (a row without a tag)


def tags_of(ids: np.ndarray) -> np.ndarray:
    """The rows' codes: ``id % 6``, 5 standing for no value."""
    tags = (ids % 6).astype(np.uint32)
    tags[tags == 5] = NO_VALUE
    return tags



@pytest.mark.mpi
@pytest.mark.parametrize("reserved", [0, 50, 10_000])
def test_move_to_owners_moves_each_row_to_its_owner_in_order(
        comm: Comm, reserved: int, rng: np.random.Generator) -> None:
    """Rounds of rows moved (the reserved room: none, too small, enough): each rank ends
    with exactly the rows its users own, the ones it had first, then each move's by
    source rank and in each source's order; a rank without rows in a round too."""
    seed = np.random.default_rng(comm.allgather(int(rng.integers(1 << 30)))[0])
    rows = RowBuffer({"key": np.uint64, "pred": np.float64, "tag": np.uint32})
    checks = RowBuffer({"check": np.uint32})
    rows.reserve(reserved)
    checks.reserve(reserved)
    expected: list[int] = []  # this rank's rows after each move, by their ids
    moved = 0
    for round_ in range(4):
        sizes = seed.integers(0, 300, size=comm.size)
        sizes[round_ % comm.size] = 0  # a rank without rows this round
        firsts = np.cumsum(sizes) - sizes
        count = int(sizes[comm.rank])
        ids = round_ * 10_000 + int(firsts[comm.rank]) + np.arange(count)
        keys = (ids % 97).astype(np.uint64)  # users with rows on several ranks
        rows.append(key=keys, pred=ids.astype(np.float64), tag=tags_of(ids))
        checks.append(check=(ids * 3).astype(np.uint32))
        everything = np.concatenate([round_ * 10_000 + int(firsts[r]) + np.arange(int(sizes[r]))
                                     for r in range(comm.size)])
        mine = everything[owner_of((everything % 97).astype(np.uint64), comm.size) == comm.rank]
        expected += mine.tolist()  # by source rank, then in order
        move_to_owners(comm, [rows, checks], moved, recode={"tag": (np.array(
            [4, 3, 2, 1, 0], dtype=np.uint32), NO_VALUE)} if round_ == 2 else None)
        moved = len(rows)
        got = rows.columns()
        assert got["pred"].astype(np.int64).tolist() == expected
        ids_now = got["pred"].astype(np.int64)
        assert np.array_equal(got["key"], (ids_now % 97).astype(np.uint64))
        tags = tags_of(ids_now)
        recoded = (ids_now >= 20_000) & (ids_now < 30_000) & (tags != NO_VALUE)
        tags[recoded] = 4 - tags[recoded]  # the code of no value kept as it is
        assert np.array_equal(got["tag"], tags)
        assert np.array_equal(checks.columns()["check"], (ids_now * 3).astype(np.uint32))


@pytest.mark.mpi
@pytest.mark.parametrize("reserved", [0, 10_000])
def test_move_to_owners_with_ranks_given_sends_each_row_there(
        comm: Comm, reserved: int, rng: np.random.Generator) -> None:
    """``dest`` given (a heavy user's owner handing users over): every row from ``start``
    on goes to its named rank, whatever its key's owner; the rows before ``start`` stay
    where they are; each rank ends with its rows before ``start``, then the received ones
    by source rank, each source's in order (its own where its rank comes); a rank that
    sends nothing passes ``start`` at its end and an empty ``dest``. A ``dest`` of another
    length is refused."""
    seed = np.random.default_rng(comm.allgather(int(rng.integers(1 << 30)))[0])
    sizes = seed.integers(0, 400, size=comm.size)
    sizes[-1] = 0  # a rank without rows
    senders = [r for r in range(comm.size) if r % 2 == 0]  # the others keep theirs
    firsts = np.cumsum(sizes) - sizes
    ids_of = [int(firsts[r]) + np.arange(int(sizes[r])) for r in range(comm.size)]
    kept_of = [ids[: len(ids) // 3] if r in senders else ids for r, ids in enumerate(ids_of)]
    dests = [(ids * 7 % comm.size).astype(np.uint16) for ids in ids_of]
    rows = RowBuffer({"key": np.uint64, "pred": np.float64})
    weights = RowBuffer({"weight": np.float32})
    rows.reserve(reserved)
    ids = ids_of[comm.rank]
    rows.append(key=np.full(len(ids), 5, dtype=np.uint64), pred=ids.astype(np.float64))
    weights.append(weight=(ids * 2).astype(np.float32))
    start = len(kept_of[comm.rank]) if comm.rank in senders else len(ids)
    dest = dests[comm.rank][start:] if comm.rank in senders else np.zeros(0, np.uint16)
    if comm.size > 1:
        wrong = dest[:-1] if len(dest) else np.zeros(1, np.uint16)  # one rank too few or many
        with pytest.raises(ValueError, match="ranks for"):
            move_to_owners(comm, [rows], start, aligned=[weights], dest=wrong)
    move_to_owners(comm, [rows], start, aligned=[weights], dest=dest)
    expected = kept_of[comm.rank].tolist()
    for source in range(comm.size):
        if source in senders:
            leaving = ids_of[source][len(kept_of[source]):]
            to = dests[source][len(kept_of[source]):]
            expected += leaving[to == comm.rank].tolist()
    got = rows.columns()["pred"].astype(np.int64)
    assert got.tolist() == expected
    assert np.array_equal(weights.columns()["weight"], (got * 2).astype(np.float32))
