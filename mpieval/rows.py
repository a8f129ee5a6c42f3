"""Row storage: typed columns that grow as rows arrive (the rows a per-user kind keeps
until compute). Local: no MPI."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import DTypeLike


class RowBuffer:
    """Typed columns that grow by appending rows.

    >>> rows = RowBuffer({"key": np.uint64, "pred": np.float64})
    >>> rows.append(key=keys, pred=pred)
    >>> rows.columns()["pred"]            # the rows so far, one array a column

    Each append is kept as a chunk of its own (a copy: the caller may reuse its arrays),
    so rows already held never move and no spare capacity is held: a row costs
    :attr:`row_nbytes`, and the peak while appending is the rows plus one batch.
    :meth:`columns` joins the chunks, one column at a time (the peak then is the rows
    plus their largest column), and keeps the joined arrays for the next call.
    ``append`` accepts only values that cast to the column dtype safely (no silent
    narrowing).
    """

    def __init__(self, dtypes: Mapping[str, DTypeLike]) -> None:
        self.dtypes = {name: np.dtype(dtype) for name, dtype in dtypes.items()}
        self._length = 0
        self._chunks: dict[str, list[np.ndarray]] = {name: [] for name in self.dtypes}

    def __len__(self) -> int:
        return self._length

    @property
    def row_nbytes(self) -> int:
        """Bytes one row costs (the sum of the column item sizes)."""
        return sum(dt.itemsize for dt in self.dtypes.values())

    @property
    def nbytes(self) -> int:
        """Bytes held: ``len * row_nbytes``."""
        return sum(chunk.nbytes for chunks in self._chunks.values() for chunk in chunks)

    def append(self, *, handed_over: Collection[str] = (), **columns: Any) -> None:
        """Append rows: every column of the buffer, 1-D, of one length. The arrays of
        the columns named in ``handed_over`` are the caller's to give (made for this
        call, never touched again): kept as they are when already of the column's dtype
        (an array of its own, not a view), not copied."""
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
        if count == 0:
            return
        for name, array in arrays.items():
            keep = (name in handed_over and array.dtype == self.dtypes[name]
                    and array.base is None and array.flags.c_contiguous)
            self._chunks[name].append(array if keep else np.array(array, dtype=self.dtypes[name]))
        self._length += count

    def widen(self, name: str, dtype: DTypeLike) -> None:
        """Store column ``name`` as ``dtype`` from now on (a safe cast, e.g. float32 to
        float64: the rows so far keep their values exactly)."""
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtypes[name], dtype, "safe"):
            raise TypeError(f"column {name!r}: {self.dtypes[name]} does not widen to {dtype}")
        self._chunks[name] = [chunk.astype(dtype) for chunk in self._chunks[name]]
        self.dtypes[name] = dtype

    def columns(self) -> dict[str, np.ndarray]:
        """The rows so far, one array a column (valid until the next append/clear)."""
        joined = {}
        for name, chunks in self._chunks.items():
            if len(chunks) != 1:
                whole = (np.concatenate(chunks) if chunks
                         else np.empty(0, dtype=self.dtypes[name]))
                chunks.clear()  # the chunks go before the next column is joined
                chunks.append(whole)
            joined[name] = chunks[0]
        return joined

    def clear(self) -> None:
        """Forget every row and release the memory."""
        self._length = 0
        self._chunks = {name: [] for name in self.dtypes}
