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
