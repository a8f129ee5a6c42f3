"""Row storage: typed columns that grow as rows arrive (the rows a per-user kind keeps
until compute). Local: no MPI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import DTypeLike


class RowBuffer:
    """Typed columns that grow by appending rows; capacity doubles (amortised O(1) per row).

    >>> rows = RowBuffer({"key": np.uint64, "pred": np.float64})
    >>> rows.append(key=keys, pred=pred)
    >>> rows.columns()["pred"]            # a view of the rows so far

    ``append`` accepts only values that cast to the column dtype safely (no silent
    narrowing); untouched capacity is never written, so it costs address space only.
    """

    MIN_CAPACITY = 1024

    def __init__(self, dtypes: Mapping[str, DTypeLike]) -> None:
        self.dtypes = {name: np.dtype(dtype) for name, dtype in dtypes.items()}
        self._length = 0
        self._arrays = {name: np.empty(0, dtype=dt) for name, dt in self.dtypes.items()}

    def __len__(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        return len(next(iter(self._arrays.values()), ()))

    @property
    def row_nbytes(self) -> int:
        """Bytes one row costs (the sum of the column item sizes)."""
        return sum(dt.itemsize for dt in self.dtypes.values())

    @property
    def nbytes(self) -> int:
        """Bytes allocated: ``capacity * row_nbytes`` (only ``len * row_nbytes`` written)."""
        return self.capacity * self.row_nbytes

    def append(self, **columns: Any) -> None:
        """Append rows: every column of the buffer, 1-D, of one length."""
        if set(columns) != set(self.dtypes):
            raise ValueError(f"append needs exactly the columns {sorted(self.dtypes)}, "
                             f"got {sorted(columns)}")
        arrays = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(a) if a.ndim == 1 else -1 for a in arrays.values()}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError("append needs 1-D columns of one length")
        for name, array in arrays.items():
            if not np.can_cast(array.dtype, self.dtypes[name], "safe"):
                raise TypeError(f"column {name!r}: {array.dtype} does not cast safely to "
                                f"{self.dtypes[name]}")
        count = lengths.pop()
        self._reserve(self._length + count)
        end = self._length + count
        for name, array in arrays.items():
            self._arrays[name][self._length : end] = array
        self._length = end

    def _reserve(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        capacity = max(needed, 2 * self.capacity, self.MIN_CAPACITY)
        for name, old in self._arrays.items():
            new = np.empty(capacity, dtype=old.dtype)
            new[: self._length] = old[: self._length]
            self._arrays[name] = new

    def widen(self, name: str, dtype: DTypeLike) -> None:
        """Store column ``name`` as ``dtype`` from now on (a safe cast, e.g. float32 to
        float64: the rows so far keep their values exactly)."""
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtypes[name], dtype, "safe"):
            raise TypeError(f"column {name!r}: {self.dtypes[name]} does not widen to {dtype}")
        old = self._arrays[name]
        new = np.empty(len(old), dtype=dtype)
        new[: self._length] = old[: self._length]
        self._arrays[name] = new
        self.dtypes[name] = dtype

    def columns(self) -> dict[str, np.ndarray]:
        """Views of the filled rows, by column name (valid until the next append/clear)."""
        return {name: array[: self._length] for name, array in self._arrays.items()}

    def clear(self) -> None:
        """Forget every row and release the memory."""
        self._length = 0
        self._arrays = {name: np.empty(0, dtype=dt) for name, dt in self.dtypes.items()}
