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

    :meth:`reserve` says how many rows are coming (a reader that knows its bytes): the
    appends then fill one array a column, sized once for them all, and :meth:`columns`
    has nothing to join. Its memory is taken as rows fill it, not at once. Rows past it
    go to chunks again (joined as before).
    """

    def __init__(self, dtypes: Mapping[str, DTypeLike]) -> None:
        self.dtypes = {name: np.dtype(dtype) for name, dtype in dtypes.items()}
        self._length = 0
        self._chunks: dict[str, list[np.ndarray]] = {name: [] for name in self.dtypes}
        self._expected = 0  # rows reserve() announced, until the first append
        self._room: dict[str, np.ndarray] | None = None  # the arrays sized by reserve()
        self._in_room = 0  # the rows they hold (the first ones)

    def __len__(self) -> int:
        return self._length

    @property
    def row_nbytes(self) -> int:
        """Bytes one row costs (the sum of the column item sizes)."""
        return sum(dt.itemsize for dt in self.dtypes.values())

    @property
    def nbytes(self) -> int:
        """Bytes held: ``len * row_nbytes``."""
        return self._length * self.row_nbytes

    def reserve(self, rows: int) -> None:
        """About ``rows`` rows will be appended from now on, into an empty buffer: the
        appends fill one array a column sized for them (a hint: nothing is allocated
        until the first append, and a buffer that already holds rows ignores it)."""
        if self._length == 0:
            self._expected = max(int(rows), 0)

    def free_rows(self, count: int) -> dict[str, np.ndarray] | None:
        """Where the next ``count`` rows go when they fit the reserved room: a view a
        column, for a caller to compute them in place; :meth:`append` then finds them
        there and copies nothing. None when they would not go there (no room yet, or no
        more room)."""
        room = self._room
        if room is None or self._in_room != self._length or count == 0 or \
                self._length + count > len(next(iter(room.values()))):
            return None
        return {name: array[self._length : self._length + count] for name, array in room.items()}

    def append(self, *, handed_over: Collection[str] = (), **columns: Any) -> None:
        """Append rows: every column of the buffer, 1-D, of one length. The arrays of
        the columns named in ``handed_over`` are the caller's to give (made for this
        call, never touched again): kept as they are when already of the column's dtype
        (an array of its own, not a view), not copied (unless the rows fill reserved
        room)."""
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
        if self._expected and self._length == 0:
            self._room = {name: np.empty(max(self._expected, count), dtype)
                          for name, dtype in self.dtypes.items()}
        self._expected = 0
        room = self._room
        if room is not None and self._in_room == self._length and \
                self._length + count <= len(next(iter(room.values()))):
            for name, array in arrays.items():
                into = room[name][self._length : self._length + count]
                if not _same_memory(array, into):  # else computed there (free_rows)
                    into[...] = array
            self._in_room += count
        else:
            for name, array in arrays.items():
                keep = (name in handed_over and array.dtype == self.dtypes[name]
                        and array.base is None and array.flags.c_contiguous)
                self._chunks[name].append(
                    array if keep else np.array(array, dtype=self.dtypes[name]))
        self._length += count

    def widen(self, name: str, dtype: DTypeLike) -> None:
        """Store column ``name`` as ``dtype`` from now on (a safe cast, e.g. float32 to
        float64: the rows so far keep their values exactly)."""
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtypes[name], dtype, "safe"):
            raise TypeError(f"column {name!r}: {self.dtypes[name]} does not widen to {dtype}")
        self._chunks[name] = [chunk.astype(dtype) for chunk in self._chunks[name]]
        if self._room is not None:
            wider = np.empty(len(self._room[name]), dtype)
            wider[: self._in_room] = self._room[name][: self._in_room]
            self._room[name] = wider
        self.dtypes[name] = dtype

    def columns(self) -> dict[str, np.ndarray]:
        """The rows so far, one array a column (valid until the next append/clear)."""
        if self._room is not None:  # the reserved rows first, as a chunk of their own
            for name, chunks in self._chunks.items():
                chunks.insert(0, self._room[name][: self._in_room])
            self._room = None  # appends from now on go to chunks
        joined = {}
        for name, chunks in self._chunks.items():
            if len(chunks) != 1:
                whole = (np.concatenate(chunks) if chunks
                         else np.empty(0, dtype=self.dtypes[name]))
                chunks.clear()  # the chunks go before the next column is joined
                chunks.append(whole)
            joined[name] = chunks[0]
        return joined

    def split_off(self, start: int) -> dict[str, np.ndarray]:
        """Remove the rows from ``start`` on and return them, one array a column (views of
        the reserved room where they were there: valid until the next append, which
        reuses that room). The rows before ``start`` stay as they are."""
        if start >= self._length:
            return {name: np.empty(0, dtype) for name, dtype in self.dtypes.items()}
        in_room = self._in_room if self._room is not None else 0
        tail = {}
        for name, chunks in self._chunks.items():
            pieces = []
            if self._room is not None and start < in_room:
                pieces.append(self._room[name][start:in_room])
            kept, offset = [], in_room
            for chunk in chunks:
                end = offset + len(chunk)
                if end <= start:
                    kept.append(chunk)
                elif offset >= start:
                    pieces.append(chunk)
                else:  # the chunk that holds row ``start``
                    kept.append(chunk[: start - offset].copy())
                    pieces.append(chunk[start - offset :])
                offset = end
            self._chunks[name] = kept
            tail[name] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if self._room is not None:
            self._in_room = min(self._in_room, start)
        self._length = start
        return tail

    def clear(self) -> None:
        """Forget every row and release the memory."""
        self._length = 0
        self._chunks = {name: [] for name in self.dtypes}
        self._expected, self._room, self._in_room = 0, None, 0


def _same_memory(array: np.ndarray, into: np.ndarray) -> bool:
    """Whether ``array`` is ``into`` itself (contiguous ``into``: the same first byte,
    dtype and length, contiguous)."""
    return (array.dtype == into.dtype and array.shape == into.shape
            and array.flags.c_contiguous
            and array.__array_interface__["data"][0] == into.__array_interface__["data"][0])
