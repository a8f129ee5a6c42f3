"""The row buffer (:mod:`mpieval.rows`)."""

from __future__ import annotations

import numpy as np
import pytest

from mpieval.rows import RowBuffer


def test_row_buffer_keeps_rows_in_order_without_spare_capacity() -> None:
    rows = RowBuffer({"key": np.uint64, "pred": np.float32})
    expected = []
    batch = np.zeros(37, dtype=np.uint64)
    for i in range(300):
        batch[:] = np.arange(i, i + 37, dtype=np.uint64)  # one array, reused by the caller
        rows.append(key=batch, pred=np.full(37, 0.5, dtype=np.float32))
        expected.append(batch.copy())
        if i == 150:  # reading the columns between appends joins what is held so far
            assert np.array_equal(rows.columns()["key"], np.concatenate(expected))
    rows.append(key=np.zeros(0, np.uint64), pred=np.zeros(0, np.float32))
    assert len(rows) == 300 * 37
    assert np.array_equal(rows.columns()["key"], np.concatenate(expected))
    assert rows.columns()["key"] is rows.columns()["key"]  # joined once
    assert rows.row_nbytes == 12
    assert rows.nbytes == len(rows) * 12
    rows.clear()
    assert len(rows) == 0 and rows.nbytes == 0
    assert rows.columns()["pred"].dtype == np.float32 and len(rows.columns()["pred"]) == 0


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


def test_handed_over_arrays_are_kept_and_anything_else_copied() -> None:
    rows = RowBuffer({"key": np.uint64, "pred": np.float64})
    made, given = np.arange(4, dtype=np.uint64), np.full(4, 0.5)
    rows.append(handed_over={"key"}, key=made, pred=given)
    given[:] = 0.25  # the caller's own array: the buffer kept a copy
    assert rows.columns()["pred"].tolist() == [0.5] * 4
    assert np.shares_memory(rows.columns()["key"], made)
    view, widened = np.arange(8, dtype=np.uint64)[::2], np.arange(4, dtype=np.uint32)
    rows.append(handed_over={"key"}, key=view, pred=given)  # a view: copied
    rows.append(handed_over={"key"}, key=widened, pred=given)  # another dtype: cast
    assert rows.columns()["key"].tolist() == [0, 1, 2, 3, 0, 2, 4, 6, 0, 1, 2, 3]
    assert not np.shares_memory(rows.columns()["key"], view)


@pytest.mark.parametrize("expected", [10, 25, 1000])
def test_reserved_rows_fill_one_array_a_column(expected: int) -> None:
    """After ``reserve``, the appends fill arrays sized once: ``columns()`` is a view of
    them (nothing joined) while the rows fit, and the same rows when they do not (the rest
    in chunks, joined); callers' arrays are copied in; a widened column keeps its rows."""
    rng = np.random.default_rng(expected)
    rows = RowBuffer({"key": np.uint64, "pred": np.float32})
    rows.reserve(expected)
    keys, preds = [], []
    for size in (4, 0, 6, 5):
        key = rng.integers(0, 1 << 40, size, dtype=np.uint64)
        pred = rng.random(size).astype(np.float32)
        rows.append(key=key, pred=pred, handed_over={"key"})
        keys.append(key.copy())
        preds.append(pred.copy())
        pred[:] = -1  # the caller's array: its rows were copied
    rows.widen("pred", np.float64)
    key = rng.integers(0, 1 << 40, 7, dtype=np.uint64)
    pred = rng.random(7)
    rows.append(key=key, pred=pred)
    keys.append(key)
    preds.append(pred)
    got = rows.columns()
    np.testing.assert_array_equal(got["key"], np.concatenate(keys))
    np.testing.assert_array_equal(got["pred"], np.concatenate(preds).astype(np.float64))
    assert got["pred"].dtype == np.float64 and len(rows) == 22
    assert rows.nbytes == 22 * 16
    fits = expected >= 22
    assert (got["key"].base is not None) == fits  # a view of the reserved array, not joined
    again = rows.columns()
    assert again["key"] is got["key"]  # kept for the next call
    rows.append(key=key, pred=pred)  # after compute: chunks, joined with the first rows
    np.testing.assert_array_equal(rows.columns()["key"], np.concatenate([*keys, key]))


def test_reserve_is_a_hint_for_an_empty_buffer_only() -> None:
    rows = RowBuffer({"key": np.uint64})
    rows.append(key=np.arange(3, dtype=np.uint64))
    rows.reserve(100)  # rows already held: ignored
    rows.append(key=np.arange(3, 5, dtype=np.uint64))
    np.testing.assert_array_equal(rows.columns()["key"], np.arange(5))
    rows.clear()
    rows.reserve(2)  # fewer than the first batch: the first batch sizes the arrays
    rows.append(key=np.arange(4, dtype=np.uint64))
    np.testing.assert_array_equal(rows.columns()["key"], np.arange(4))


def test_rows_computed_in_their_free_room_are_not_copied_again() -> None:
    """``free_rows`` gives where the next rows go in the reserved room; rows computed
    there are kept as they are, the other columns copied in; no room: None."""
    rows = RowBuffer({"key": np.uint64, "label": np.uint8})
    assert rows.free_rows(3) is None  # nothing reserved
    rows.reserve(10)
    rows.append(key=np.arange(2, dtype=np.uint64), label=np.ones(2, np.uint8))
    free = rows.free_rows(3)
    assert free is not None and {len(view) for view in free.values()} == {3}
    free["key"][:] = [7, 8, 9]  # computed in place
    rows.append(key=free["key"], label=np.zeros(3, np.uint8))
    assert rows.free_rows(6) is None  # 5 + 6 rows do not fit 10
    got = rows.columns()
    assert got["key"].tolist() == [0, 1, 7, 8, 9]
    assert got["label"].tolist() == [1, 1, 0, 0, 0]


@pytest.mark.parametrize("reserved", [0, 4, 10, 100])
def test_split_off_takes_the_rows_from_a_start_on_and_keeps_the_rest(reserved: int) -> None:
    """Rows in reserved room, in chunks past it, or both: the tail comes back in order,
    the head stays, and appends go on after the head (into the room again)."""
    rows = RowBuffer({"key": np.uint64, "pred": np.float32})
    rows.reserve(reserved)
    keys = np.arange(10, dtype=np.uint64)
    for a, b in ((0, 3), (3, 7), (7, 10)):
        rows.append(key=keys[a:b], pred=keys[a:b].astype(np.float32))
    for start in (10, 8, 5, 3, 0):
        tail = rows.split_off(start)
        assert len(rows) == start
        np.testing.assert_array_equal(tail["key"], keys[start:])
        np.testing.assert_array_equal(tail["pred"], keys[start:].astype(np.float32))
        rows.append(key=keys[start:].copy(), pred=keys[start:].astype(np.float32))
        assert len(rows) == 10
    rows.split_off(4)
    rows.append(key=keys[7:] + 100, pred=keys[7:].astype(np.float32))
    got = rows.columns()
    np.testing.assert_array_equal(got["key"], np.concatenate([keys[:4], keys[7:] + 100]))
    assert got["pred"].dtype == np.float32
