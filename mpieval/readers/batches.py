"""What a reader hands out: a :class:`Batch`, the rows of a piece by column, and what every
reader shares: the size of pyarrow's CPU pool (:func:`use_threads`), numpy views of
columns (:func:`as_numpy`), a tag column coded in order of first appearance
(:func:`names_coded`), an interrupted read (:func:`not_cancelled`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from mpieval.errors import DataError, InputError
from mpieval.kernels.keys import hash_decimals
from mpieval.keys import HashedIds, text_buffers
from mpieval.validation import Coded, all_log_words, check_log_word

# What a column is read as. "float": float64, the metrics' numeric inputs; "int": int64
# (a filter on whole numbers); "string": UTF-8 text (ids, text filters); "name": UTF-8
# text of a few values (tags), coded in one compiled pass over the text
# (:meth:`Batch.names`), cheaper than the parser's dictionary encoding of each block.
COLUMN_TYPES: dict[str, pa.DataType] = {
    "float": pa.float64(),
    "int": pa.int64(),
    "string": pa.string(),
    "name": pa.string(),
}
TYPE_WORDS = {"float": "a number", "int": "an integer", "string": "valid UTF-8 text",
              "name": "valid UTF-8 text"}


def use_threads(count: int) -> None:
    """Size pyarrow's CPU pool, which every read and pyarrow computation uses, to
    ``count`` threads (1: everything on the calling thread)."""
    pa.set_cpu_count(count)


def threaded() -> bool:
    """Whether reads may use more than the calling thread (:func:`use_threads`)."""
    return bool(pa.cpu_count() > 1)


@dataclass
class Batch:
    """Rows of one piece: pyarrow arrays by column name, and where they came from."""

    path: str
    columns: dict[str, pa.Array]
    rows: int
    bytes: int  # bytes of the file consumed with this batch (for progress)
    _locate: Callable[..., str] = field(repr=False)  # row of the batch -> "path:line"
    _numbers: dict[str, Any] = field(default_factory=dict, repr=False)
    # "name" columns coded as they were read (:func:`names_coded`; text in chunks:
    # on the read-ahead thread), not in ``columns``: checked by :meth:`names`
    _coded: dict[str, FirstAppearance] = field(default_factory=dict, repr=False)

    def where(self, row: int) -> str:
        """``path:line`` (or ``path: row N``) of a row of this batch."""
        return str(self._locate(row))

    def numbers(self, column: str) -> np.ndarray:
        """The column as a numpy array (no copy for numeric columns)."""
        array = self._numbers.get(column)
        if array is None:
            array = as_numpy(self.columns[column])
            self._numbers[column] = array
        return array

    def keys(self, column: str) -> pa.Array | HashedIds:
        """An id column (uid) as its text, a pyarrow string array (hashed from its buffers:
        :func:`mpieval.keys.uid_keys_checked`); an integer column without nulls as the
        keys and checks of its decimal text, hashed from the integers
        (:func:`mpieval.kernels.keys.hash_decimals`: no text made), new arrays a call
        (a metric may keep them as its own).

        Always text, whatever the file format: a uid ``7`` in a Parquet int column and
        ``7`` in a TSV file are one user, and ``007`` is another, on every rank.
        """
        array = self.columns[column]
        if not pa.types.is_integer(array.type) or array.null_count:
            return as_text(array)  # (nulls: the uid's check names the first)
        return HashedIds(*hash_decimals(as_numpy(array)))

    def names(self, column: str) -> Coded:
        """A column of a few distinct values (a tag) as its text, coded
        (:class:`~mpieval.validation.Coded`): text in one compiled pass, uint16 codes in
        order of first appearance (:func:`names_coded`); a dictionary column, or
        text of more distinct values than the codes hold, by its dictionary. A value
        that would break the log line (:func:`~mpieval.validation.check_log_word`) is an
        error."""
        key = f"names:{column}"
        coded = self._numbers.get(key)
        if coded is None:
            first = self._coded.get(column)  # coded as read, else from the column
            if first is None:
                array = self.columns[column]
                if not pa.types.is_dictionary(array.type):
                    first = names_coded(as_text(array))
            if first is not None:
                codes, first_rows, values = first
            else:
                encoded = (array if pa.types.is_dictionary(array.type)
                           else as_text(array).dictionary_encode())
                codes = as_numpy(encoded.indices)
                values = encoded.dictionary.to_pylist()
            for index, value in enumerate(
                    () if all_log_words(values, empty=True) else values):
                try:
                    check_log_word(column, value, empty=True)
                except InputError as error:
                    row = (int(first_rows[index]) if first is not None
                           else int(np.flatnonzero(codes == index)[0]))
                    raise DataError(self.where(row), error.problem, column) from None
            coded = Coded(tuple(values), codes, _dense=first is not None)
            self._numbers[key] = coded
        return coded

    def equals(self, column: str, value: int | float | str) -> np.ndarray:
        """Which rows hold ``value`` in ``column`` (a TypeError if they cannot be compared)."""
        import pyarrow.compute as pc

        array = self.columns[column]
        try:
            return as_numpy(pc.equal(array, pa.scalar(value)))
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
            raise TypeError(
                f"cannot compare its {array.type} values with the filter value {value!r}"
            ) from None


_NUMPY_TYPES = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32,
    pa.uint64(): np.uint64, pa.float16(): np.float16, pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def as_numpy(array: pa.Array) -> np.ndarray:
    """A null-free numeric or boolean pyarrow array as numpy, without copying numbers.

    Read from the array's data buffer rather than with ``Array.to_numpy``, which imports
    pandas (time and memory on every rank).
    """
    if array.null_count:
        raise ValueError("as_numpy takes arrays without nulls")
    if pa.types.is_boolean(array.type):
        return as_numpy(array.cast(pa.uint8())).view(np.bool_)
    dtype = np.dtype(_NUMPY_TYPES[array.type])
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * dtype.itemsize)


FirstAppearance = tuple[np.ndarray, np.ndarray, list[Any]]


def names_coded(text: pa.Array | pa.ChunkedArray) -> FirstAppearance | None:
    """A string column coded: each row's code (uint16) in order of first appearance, the
    first row of each distinct value and the values; each chunk from its buffers in one
    compiled pass (:func:`~mpieval.kernels.codes.first_appearance`), the chunks' codes
    remapped to the column's. None when it is not of a string type, or holds nulls or more
    distinct values than the codes (:data:`~mpieval.kernels.codes.CODE_SPACE`)."""
    from mpieval.kernels.codes import CODE_SPACE, first_appearance, remap

    if not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
        return None
    chunks = text.chunks if isinstance(text, pa.ChunkedArray) else [text]
    codes = np.empty(len(text) if len(chunks) > 1 else 0, dtype=np.uint16)
    code_of: dict[Any, int] = {}  # value -> its code, in order of first appearance
    first_rows: list[int] = []
    start = 0
    for chunk in chunks:
        if chunk.null_count:
            return None
        offsets, data = text_buffers(chunk)
        part = None if len(chunks) == 1 else codes[start : start + len(chunk)]
        found = first_appearance(offsets, data, CODE_SPACE, out=part)
        if found is None:
            return None
        local, local_first = found
        values = _texts_at(offsets, data, local_first)
        if len(chunks) == 1:  # its codes and values are the column's
            return local, local_first.astype(np.int64, copy=False), values
        if not code_of:  # the first chunk: its values are new, in their order
            code_of = dict(zip(values, range(len(values)), strict=True))
            first_rows = (start + local_first).tolist()
            lookup = np.arange(len(values), dtype=np.uint16)
        else:
            lookup = np.empty(len(values), dtype=np.uint16)
            for index, value in enumerate(values):
                code = code_of.setdefault(value, len(code_of))
                if code == len(first_rows):  # new
                    if code >= CODE_SPACE:
                        return None
                    first_rows.append(start + int(local_first[index]))
                lookup[index] = code
        if lookup.tolist() != list(range(len(lookup))):
            remap(local, lookup, out=local)  # local: codes[start:...], in place
        start += len(chunk)
    return codes, np.array(first_rows, dtype=np.int64), list(code_of)


def _texts_at(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray) -> list[str]:
    """The values at ``rows`` of a string array without nulls whose buffers are
    ``offsets`` and ``data`` (valid UTF-8: Arrow checked it), as Python strs decoded from
    the bytes in one compiled pass (``_core.text.texts``: not a pyarrow scalar a value;
    ``Array.take`` would import pyarrow.compute: start-up)."""
    from mpieval import _core

    rows = np.asarray(rows, dtype=np.int64)
    starts = np.ascontiguousarray(offsets[rows], dtype=np.int64)
    stops = np.ascontiguousarray(offsets[rows + 1], dtype=np.int64)
    texts: list[str] = _core.text.texts(np.ascontiguousarray(data, np.uint8), starts, stops)
    return texts


def as_text(values: pa.Array) -> pa.Array:
    """Ids as text: a Parquet int column reads as its decimal digits."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    return values.cast(pa.string())


def columns_of(record_batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: record_batch.column(name) for name in record_batch.schema.names}


def not_cancelled(error: pa.ArrowException) -> None:
    """pyarrow cancels a read on SIGINT (``ArrowCancelled``): that is an interrupt, not
    bad data."""
    if isinstance(error, pa.ArrowCancelled):
        raise KeyboardInterrupt from None
