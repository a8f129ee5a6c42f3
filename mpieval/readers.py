"""Reading prediction files in record batches: TSV/CSV (plain or gzip) and Parquet.

All parsing is pyarrow's, in batches, so memory stays bounded whatever the file size:

- text on one thread (and gzip text always: decompression is serial) streams through
  ``pyarrow.csv.open_csv``, 1 MiB blocks at a time (a line may span two blocks; on a
  longer one the piece is read again in larger blocks, so lines of any length read);
- plain text on several threads is read in chunks of whole lines (16 MiB), each parsed by
  ``pyarrow.csv.read_csv``, which parses the chunk's 1 MiB blocks in parallel (the
  streaming reader gains nothing from threads, and on one thread it is the faster of
  the two); a chunk that fails is parsed again on one thread as one block, so lines of
  any length read, and a bad value is named by its line;
- Parquet streams row groups with ``ParquetFile.iter_batches``.

Threads: reads use pyarrow's CPU pool, whose size :func:`use_threads` sets; the command
line gives a rank all the cores when it runs alone and one thread under ``mpiexec -n N``
(N > 1), which is what clusters expect (:func:`mpieval.cli.threads_per_rank`).

Files are opened through :mod:`mpieval.locations` (a store's through ``pyarrow.fs``), so a
file may be a local path or a URI (``s3://``, ``hdfs://``, ``gs://``, ``file://``): text
pieces are ranged reads of one random-access file, gzip a stream, Parquet row groups read
by range. ``InputFile.path`` is the location as shown (a URI's secrets redacted) and
``InputFile.source`` the location itself when that differs.

Nothing is coerced: no value is treated as missing (``null_values=[]``), an empty
line is an error, and every failure becomes a :class:`DataError` whose message names
the file, the line (1-based, the header is line 1; a Parquet file gives the row) and
the column: ``part-3.tsv:1042: column pred: 'abc' is not a number``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

import numpy as np

# pyarrow.compute and pyarrow.parquet are imported where used: start-up time that a run
# of text files without ids or filters does not need.
import pyarrow as pa
import pyarrow.csv as pacsv

from mpieval import locations
from mpieval.errors import DataError, InputError, StoreError
from mpieval.keys import text_buffers
from mpieval.locations import Location
from mpieval.split import InputFile, Piece
from mpieval.validation import Coded, check_log_word

DEFAULT_STREAM_BYTES = 1 << 20  # text on one thread: pyarrow's streaming block (a line
# may span two; larger blocks read no faster and raise the peak memory)
DEFAULT_CHUNK_BYTES = 16 << 20  # text on several threads: whole lines parsed at a time,
PARALLEL_BLOCK_BYTES = 1 << 20  # in blocks of this size, in parallel
PARQUET_BATCH_ROWS = 1 << 16

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
_TYPE_WORDS = {"float": "a number", "int": "an integer", "string": "valid UTF-8 text",
               "name": "valid UTF-8 text"}

_GZIP_MAGIC = b"\x1f\x8b"
_SUFFIXES = {".tsv": "tsv", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def use_threads(count: int) -> None:
    """Size pyarrow's CPU pool, which every read and pyarrow computation uses, to
    ``count`` threads (1: everything on the calling thread)."""
    pa.set_cpu_count(count)


def _threaded() -> bool:
    return pa.cpu_count() > 1


# -- what a file is ------------------------------------------------------------------


def file_format(path: str, forced: str | None = None) -> str:
    """``tsv``, ``csv`` or ``parquet``: ``forced``, or from the name (``.gz`` ignored)."""
    if forced is not None:
        return forced
    name = path[:-3] if path.endswith(".gz") else path
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in _SUFFIXES:
        raise DataError(path, "cannot tell the format from the file name "
                        "(.tsv, .csv, .parquet, optionally .gz); pass --format")
    return _SUFFIXES[suffix]


def inspect(path: str, format: str | None) -> InputFile:
    """The planner's view of a file (a local path or a URI): size, header columns, data
    start or row groups. ``format``: forced, or None to tell it from the name (after
    checking that the path is a regular file: a directory is named as one)."""
    location = locations.locate(path)
    shown = location.shown
    kind, size = locations.guarded(location, "read", lambda: locations.file_type(location))
    if kind == "missing":
        raise locations.failure(location, "read", FileNotFoundError())
    if kind == "directory":
        raise DataError(shown, "is a directory, not a regular file (give its files, or a "
                        "pattern such as DIR/*.tsv)")
    if kind != "file":
        raise DataError(shown, "not a regular file")
    if size == 0 and not location.remote and _has_contents(location.path):
        raise DataError(shown, "not a regular file (its size is 0 but it reads: a /proc "
                        "or /sys file?); copy it to a file first")
    if size == 0:
        raise DataError(f"{shown}:1", "empty file (no header line)")
    format = file_format(location.path, format)
    with _opened(location) as handle:
        gzipped = locations.guarded(location, "read", lambda: handle.read(2)) == _GZIP_MAGIC
        if format == "parquet":
            file = _inspect_parquet(location, handle, size)
        else:
            file = _inspect_text(location, handle, format, size, gzipped)
    return file if shown == path else replace(file, source=path)


def _has_contents(path: str) -> bool:
    """Whether a local file whose size is 0 reads some bytes (a file of /proc or /sys)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(1) != b""
    except OSError:
        return False


@contextlib.contextmanager
def _opened(location: Location) -> Iterator[pa.NativeFile]:
    """A random-access file of the location (errors as :func:`locations.failure`)."""
    handle = locations.guarded(location, "read", lambda: locations.open_input_file(location))
    try:
        yield handle
    finally:
        with contextlib.suppress(OSError):
            handle.close()


def _location(file: InputFile) -> Location:
    return locations.locate(file.source or file.path)


_FIRST_BLOCK = 1 << 16  # bytes of text looked at for the line endings
HEADER_LIMIT = 4 << 20  # bytes read at most looking for the end of the header line


def _inspect_text(location: Location, handle: pa.NativeFile, format: str, size: int,
                  gzipped: bool) -> InputFile:
    path = location.shown
    header = _header_line(location, handle, gzipped)
    if not header:
        raise DataError(f"{path}:1", "empty file (no header line)")
    if not header.strip(b"\r\n"):
        raise DataError(f"{path}:1", "empty header line")
    try:
        text = header.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise DataError(f"{path}:1", "the header is not UTF-8 text") from None
    names = _header_names(path, text, format)
    return InputFile(
        path=path,
        format=format,
        size=size,
        columns=tuple(names),
        gzip=gzipped,
        data_start=0 if gzipped else len(header),
    )


def _header_names(path: str, text: str, format: str) -> list[str]:
    """The column names of a header line (quoted as the data is); a name may be as long
    as the header (up to ``HEADER_LIMIT``), not only the csv module's default limit."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, HEADER_LIMIT))
    try:
        return next(csv.reader([text], delimiter="\t" if format == "tsv" else ","))
    except csv.Error as error:
        raise DataError(f"{path}:1", f"cannot read the header: {error}") from None
    finally:
        csv.field_size_limit(limit)


def _header_line(location: Location, handle: pa.NativeFile, gzipped: bool) -> bytes:
    """The file's first line (with its line end), after checking from its first block
    that lines end with LF or CRLF: CR-only line endings are refused (one line to the
    readers, which would find no row). At most ``HEADER_LIMIT`` bytes are read: a file
    whose first line is longer, or holds a NUL byte (a binary file, or a sparse one
    such as ``truncate -s 4G``), is refused at once, naming line 1."""
    import gzip
    import zlib

    path = location.shown
    handle.seek(0)
    try:
        with (gzip.GzipFile(fileobj=handle, mode="rb") if gzipped
              else contextlib.nullcontext(handle)) as text:
            head = text.read(_FIRST_BLOCK)
            end = head.find(b"\n")
            _check_header_bytes(path, head[: end + 1] if end >= 0 else head)
            if b"\r" in head and b"\n" not in head:
                raise DataError(path, "lines end with a carriage return only (CR, old Mac "
                                "line endings): convert them to LF or CRLF")
            if end >= 0:
                return head[: end + 1]
            return head + _rest_of_line(path, text, len(head))  # a long header
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise DataError(path, f"cannot read: bad gzip data ({error})") from None
    except OSError as error:
        raise locations.failure(location, "read", error) from None


def _rest_of_line(path: str, handle: Any, done: int) -> bytes:
    """The header's bytes after the first ``done``, up to and with the next ``\\n`` (or
    the end), checked as they come (:func:`_check_header_bytes`)."""
    parts = []
    while True:
        block = handle.read(_FIRST_BLOCK)
        end = block.find(b"\n")
        part = block[: end + 1] if end >= 0 else block
        _check_header_bytes(path, part)
        done += len(part)
        if done > HEADER_LIMIT:
            raise DataError(f"{path}:1", f"no end of the header line in its first "
                            f"{HEADER_LIMIT:,} bytes: not a text file with a header row?")
        if end >= 0 or not block:
            parts.append(part)
            return b"".join(parts)
        parts.append(block)


def _check_header_bytes(path: str, part: bytes) -> None:
    """No NUL byte in the header (text files hold none)."""
    if b"\0" in part:
        raise DataError(f"{path}:1", "the header holds a NUL byte: not a text file (a "
                        "binary file, or zeros as a truncated or sparse file holds)?")


def _inspect_parquet(location: Location, handle: pa.NativeFile, size: int) -> InputFile:
    path = location.shown
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(handle).metadata
    except pa.ArrowException as error:
        raise DataError(path, f"not a readable Parquet file ({error})") from None
    except OSError as error:
        if location.remote and isinstance(locations.failure(location, "read", error),
                                          StoreError):
            raise locations.failure(location, "read", error) from None
        raise DataError(path, f"not a readable Parquet file ({error})") from None
    groups = tuple(
        (meta.row_group(i).num_rows, meta.row_group(i).total_byte_size)
        for i in range(meta.num_row_groups)
    )
    return InputFile(
        path=path, format="parquet", size=size, columns=tuple(meta.schema.names), row_groups=groups
    )


def check_columns(file: InputFile, wanted: Mapping[str, str]) -> None:
    """Every wanted column is in the file's header, once. ``wanted``: column -> use."""
    where = file.path if file.format == "parquet" else f"{file.path}:1"
    for column, use in wanted.items():
        found = file.columns.count(column)
        if found == 0:
            shown = [name if len(name) <= 60 else name[:57] + "..." for name in file.columns[:20]]
            listing = ", ".join(shown) + (", ..." if len(file.columns) > 20 else "")
            raise DataError(where, f"not in the header ({use}); the file has: {listing}", column)
        if found > 1:
            raise DataError(where, f"appears {found} times in the header", column)


# -- batches ---------------------------------------------------------------------------


@dataclass
class Batch:
    """Rows of one piece: pyarrow arrays by column name, and where they came from."""

    path: str
    columns: dict[str, pa.Array]
    rows: int
    bytes: int  # bytes of the file consumed with this batch (for progress)
    _locate: Any = field(repr=False)  # row of the batch -> "path:line"
    _numbers: dict[str, Any] = field(default_factory=dict, repr=False)
    # "name" columns coded as they were read (:func:`_first_appearance`; text in chunks:
    # on the read-ahead thread), not in ``columns``: checked by :meth:`names`
    _coded: dict[str, _FirstAppearance] = field(default_factory=dict, repr=False)

    def where(self, row: int) -> str:
        """``path:line`` (or ``path: row N``) of a row of this batch."""
        return self._locate(row)

    def numbers(self, column: str) -> np.ndarray:
        """The column as a numpy array (no copy for numeric columns)."""
        array = self._numbers.get(column)
        if array is None:
            array = as_numpy(self.columns[column])
            self._numbers[column] = array
        return array

    def keys(self, column: str) -> pa.Array:
        """An id column (uid) as its text, a pyarrow string array (hashed from its buffers:
        :func:`mpieval.keys.uid_keys_checked`).

        Always text, whatever the file format: a uid ``7`` in a Parquet int column and
        ``7`` in a TSV file are one user, and ``007`` is another, on every rank.
        """
        return _as_text(self.columns[column])

    def names(self, column: str) -> Coded:
        """A column of a few distinct values (a tag) as its text, coded
        (:class:`~mpieval.validation.Coded`): text in one compiled pass, uint16 codes in
        order of first appearance (:func:`_first_appearance`); a dictionary column, or
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
                    first = _first_appearance(_as_text(array))
            if first is not None:
                codes, first_rows, values = first
            else:
                encoded = (array if pa.types.is_dictionary(array.type)
                           else _as_text(array).dictionary_encode())
                codes = as_numpy(encoded.indices)
                values = encoded.dictionary.to_pylist()
            for index, value in enumerate(values):
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


def read_piece(
    file: InputFile,
    piece: Piece,
    types: Mapping[str, str],
    *,
    block_size: int | None = None,
) -> Iterator[Batch]:
    """The batches of a piece, with the columns ``types`` names (column -> kind of type).

    ``block_size``: bytes of text per batch (default ``DEFAULT_STREAM_BYTES`` streamed,
    ``DEFAULT_CHUNK_BYTES`` in chunks).
    """
    try:
        if file.format == "parquet":
            yield from _parquet_batches(file, piece, types)
        elif file.gzip or not _threaded():
            yield from _streamed_batches(file, piece, types,
                                         block_size or DEFAULT_STREAM_BYTES)
        else:
            yield from _chunk_batches(file, piece, types, block_size or DEFAULT_CHUNK_BYTES)
    except OSError as error:  # pyarrow's inflate error is an OSError too
        reported = locations.failure(_location(file), "read", error)
        if isinstance(reported, StoreError):
            raise reported from None
        damage = gzip_damage(file) if file.gzip else None
        raise damage or reported from None


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


_FirstAppearance = tuple[np.ndarray, np.ndarray, list[Any]]


def _first_appearance(text: pa.Array | pa.ChunkedArray) -> _FirstAppearance | None:
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
        # each value from its first row (Array.take would import pyarrow.compute: start-up)
        values = [chunk[row].as_py() for row in local_first.tolist()]
        lookup = np.empty(len(values), dtype=np.uint16)
        for index, value in enumerate(values):
            code = code_of.setdefault(value, len(code_of))
            if code == len(first_rows):  # new
                if code >= CODE_SPACE:
                    return None
                first_rows.append(start + int(local_first[index]))
            lookup[index] = code
        if len(chunks) == 1:  # its codes are the column's
            codes = local
        elif lookup.tolist() != list(range(len(lookup))):
            remap(local, lookup, out=local)  # local: codes[start:...], in place
        start += len(chunk)
    return codes, np.array(first_rows, dtype=np.int64), list(code_of)


def _as_text(values: pa.Array) -> pa.Array:
    """Ids as text: a Parquet int column reads as its decimal digits."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    return values.cast(pa.string())


# -- text pieces -------------------------------------------------------------------------


def line_start_at(handle: BinaryIO, offset: int, data_start: int, size: int) -> int:
    """The first line start at or after ``offset`` that is not the header.

    A line starts at ``data_start`` or just after a ``\\n``. Two ranks that cut the
    same file at the same offset compute the same line start, so the line ranges they
    read meet exactly.
    """
    if offset <= data_start:
        return data_start
    if offset >= size:
        return size
    handle.seek(offset - 1)
    position = offset - 1
    while True:
        chunk = handle.read(1 << 16)
        if not chunk:
            return size
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)


def count_lines_before(handle: BinaryIO, offset: int) -> int:
    """How many ``\\n`` the file holds before ``offset`` (for line numbers in errors)."""
    handle.seek(0)
    count, remaining = 0, offset
    while remaining > 0:
        chunk = handle.read(min(remaining, 1 << 24))
        if not chunk:
            break
        count += chunk.count(b"\n")
        remaining -= len(chunk)
    return count


class _CountingReader(io.RawIOBase):
    """A byte range of a file, counting the bytes handed out."""

    def __init__(self, handle: io.RawIOBase, length: int | None) -> None:
        self._handle = handle
        self._left = length
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        if self._left is not None:
            view = view[: self._left]
        got = self._handle.readinto(view) or 0
        if self._left is not None:
            self._left -= got
        self.consumed += got
        return got


class _Lines:
    """Line numbers of a text piece, for error messages: the lines before the piece are
    counted on the first error only."""

    def __init__(self, file: InputFile, start: int) -> None:
        self.file = file
        self.start = start
        self._before: int | None = None

    def of(self, row: int) -> int:
        """1-based line of the ``row``-th (1-based) line of the piece."""
        if self.file.gzip:
            return row  # a gzip stream holds the header: its row numbers are lines
        if self._before is None:
            with _opened(_location(self.file)) as again:
                self._before = count_lines_before(again, self.start)
        return self._before + row


_TextOptions = tuple[pacsv.ReadOptions, pacsv.ParseOptions, pacsv.ConvertOptions]


def _text_options(file: InputFile, types: Mapping[str, str], block_size: int, *,
                  threads: bool) -> _TextOptions:
    """How pyarrow reads a text file: the header's names (a gzip stream holds the header
    itself), only the wanted columns, each as its type, nothing read as missing."""
    read = pacsv.ReadOptions(
        use_threads=threads,
        block_size=block_size,
        column_names=None if file.gzip else list(file.columns),
    )
    parse = pacsv.ParseOptions(
        delimiter="\t" if file.format == "tsv" else ",",
        quote_char='"',
        newlines_in_values=False,
        ignore_empty_lines=False,
    )
    convert = pacsv.ConvertOptions(
        column_types={column: COLUMN_TYPES[kind] for column, kind in types.items()},
        include_columns=list(types),
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    return read, parse, convert


def _streamed_batches(
    file: InputFile, piece: Piece, types: Mapping[str, str], block_size: int
) -> Iterator[Batch]:
    """A text piece (a gzip file is one piece) streamed block by block, on one thread.

    pyarrow's streaming reader takes a line that spans at most two blocks; on a longer
    line the piece is read again from its start with blocks four times as large, the
    rows already handed out skipped, until the line fits (a line of megabytes is rare;
    one longer than ``_MAX_STREAM_BLOCK`` is an error)."""
    handed = _Handed()
    while True:
        try:
            yield from _streamed_once(file, piece, types, block_size, handed)
            return
        except _LineTooLong:
            if block_size >= _MAX_STREAM_BLOCK:
                raise DataError(file.path, f"a line is longer than {_MAX_STREAM_BLOCK:,} "
                                "bytes") from None
            block_size = min(block_size * 4, _MAX_STREAM_BLOCK)


_MAX_STREAM_BLOCK = 1 << 30  # pyarrow's block size is a 32-bit int


class _LineTooLong(Exception):
    """A line spans more than two of the streaming reader's blocks."""


@dataclass
class _Handed:
    """Rows and file bytes of the batches a piece has handed out so far."""

    rows: int = 0
    bytes: int = 0


def _streamed_once(file: InputFile, piece: Piece, types: Mapping[str, str], block_size: int,
                   handed: _Handed) -> Iterator[Batch]:
    """The piece's batches after the ``handed.rows`` already handed out, in blocks of
    ``block_size``; :class:`_LineTooLong` when a line is longer than two blocks."""
    with _opened(_location(file)) as handle:
        if file.gzip:
            start = 0
            source = _CountingReader(handle, None)
            stream: Any = pa.CompressedInputStream(pa.PythonFile(source, mode="r"), "gzip")
        else:
            start = line_start_at(handle, piece.start, file.data_start, file.size)
            stop = line_start_at(handle, piece.stop, file.data_start, file.size)
            if stop <= start:
                return
            handle.seek(start)
            source = _CountingReader(handle, stop - start)
            stream = pa.PythonFile(source, mode="r")
        lines = _Lines(file, start)
        read, parse, convert = _text_options(file, types, block_size, threads=False)
        read.skip_rows_after_names = handed.rows
        try:
            reader = pacsv.open_csv(stream, read_options=read, parse_options=parse,
                                    convert_options=convert)
        except pa.ArrowException as error:
            raise _stream_error(file, error, lines) from None
        # pyarrow reads ahead on its own thread while a batch is used, so the bytes read
        # are taken once per batch, just before it is handed out; the last batch also
        # takes what was read after it, so that a piece's batches add up to its bytes.
        piece_bytes = file.size if file.gzip else stop - start
        with contextlib.closing(reader):  # an error ends its read-ahead before the file's
            yield from _stream(file, reader, source, lines, piece_bytes, handed)


def _stream(file: InputFile, reader: Any, source: _CountingReader, lines: _Lines,
            piece_bytes: int, handed: _Handed) -> Iterator[Batch]:
    """The batches of a streaming CSV reader, with the bytes each consumed (counted on
    from ``handed``: a piece read again re-reads bytes already counted)."""
    done_rows, done_bytes = handed.rows, handed.bytes
    pending: Batch | None = None
    while True:
        try:
            record_batch = reader.read_next_batch()
        except StopIteration:
            if pending is not None:
                pending.bytes += piece_bytes - done_bytes
                handed.rows, handed.bytes = handed.rows + pending.rows, piece_bytes
                yield pending
            return
        except pa.ArrowException as error:
            raise _stream_error(file, error, lines) from None
        if pending is not None:
            handed.rows, handed.bytes = handed.rows + pending.rows, done_bytes
            yield pending
        offset = done_rows + (1 if file.gzip else 0)
        done_rows += record_batch.num_rows
        consumed = max(source.consumed, done_bytes)
        pending = Batch(
            path=file.path,
            columns=_columns_of(record_batch),
            rows=record_batch.num_rows,
            bytes=consumed - done_bytes,
            _locate=lambda row, offset=offset: f"{file.path}:{lines.of(offset + row + 1)}",
        )
        done_bytes = consumed


def _stream_error(file: InputFile, error: pa.ArrowException, lines: _Lines
                  ) -> DataError | _LineTooLong:
    """:func:`_text_error`, a damaged gzip file (:func:`gzip_damage`), or a line too long
    for the streaming reader's blocks (:class:`_LineTooLong`: read again)."""
    _not_cancelled(error)
    damage = gzip_damage(file) if file.gzip else None
    if damage is not None:
        return damage
    if "straddl" in str(error):
        return _LineTooLong()
    return _text_error(file, error, lines.of)


def gzip_damage(file: InputFile) -> DataError | None:
    """The error of a gzip file whose compressed data is damaged, naming the line that
    decompression reached; None if the whole file decompresses.

    Called when reading a gzip file fails: decompressed again on its own, the file gives
    the same message wherever the parser happened to stop (damage can first show as a
    garbled line, or as pyarrow's inflate error).
    """
    import zlib

    path = file.path
    lines = 1
    decompressor = zlib.decompressobj(wbits=31)
    try:
        with _opened(_location(file)) as handle:
            for data in iter(lambda: handle.read(1 << 12), b""):  # small: the line is close
                while data:
                    if decompressor.eof:  # the next member of a multi-member file
                        decompressor = zlib.decompressobj(wbits=31)
                    lines += decompressor.decompress(data).count(b"\n")
                    data = decompressor.unused_data
    except zlib.error as error:
        return DataError(f"{path}:{lines}", f"bad gzip data ({error})")
    except (OSError, InputError, StoreError):  # the file cannot be read again: not damage
        return None
    if not decompressor.eof:
        return DataError(f"{path}:{lines}", "bad gzip data: the file ends inside its "
                         "compressed stream (truncated)")
    return None


def _chunk_batches(
    file: InputFile, piece: Piece, types: Mapping[str, str], chunk_bytes: int
) -> Iterator[Batch]:
    """A plain text piece in chunks of whole lines, each parsed on pyarrow's threads.

    The next chunk is read and parsed on a thread of its own while the caller uses this
    one: the metrics' updates (on the caller's thread) then overlap the parse instead of
    leaving the other cores idle. One chunk is read ahead at most; closing the iterator
    waits for it (and the file stays open until then)."""
    with _opened(_location(file)) as handle, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpieval-read") as ahead:
        start = line_start_at(handle, piece.start, file.data_start, file.size)
        stop = line_start_at(handle, piece.stop, file.data_start, file.size)
        lines = _Lines(file, start)
        options = _text_options(file, types, PARALLEL_BLOCK_BYTES, threads=True)
        chunks = _line_chunks(handle, start, stop, chunk_bytes)

        def read_next(offset: int) -> tuple[int, pa.Table, dict[str, _FirstAppearance]
                                            ] | None:
            """The next chunk's size, its table (rows numbered from ``offset``) and its
            "name" columns coded, which the table then no longer holds (their text is
            never joined); None at the end of the piece."""
            chunk = next(chunks, None)
            if chunk is None:
                return None
            table = _parse_chunk(file, chunk, options, lambda row: lines.of(offset + row))
            coded = {}
            for name in table.column_names:
                found = _first_appearance(table.column(name)) if types[name] == "name" else None
                if found is not None:
                    coded[name] = found
            return chunk.size, table.drop_columns(list(coded)), coded

        done_rows = 0
        coming = ahead.submit(read_next, done_rows)
        while (got := coming.result()) is not None:
            size, table, coded = got
            offset = done_rows
            done_rows += table.num_rows
            coming = ahead.submit(read_next, done_rows)
            batch = Batch(
                path=file.path,
                columns={name: table.column(name).combine_chunks()
                         for name in table.column_names},
                rows=table.num_rows,
                bytes=size,
                _locate=lambda row, offset=offset: f"{file.path}:{lines.of(offset + row + 1)}",
                _coded=coded,
            )
            del got, table  # the columns are copies: the parsed blocks are not kept
            yield batch


def _line_chunks(handle: pa.NativeFile, start: int, stop: int, chunk_bytes: int
                 ) -> Iterator[pa.Buffer]:
    """Bytes ``start:stop`` of the file (both line starts) in chunks that end at a line
    end: about ``chunk_bytes`` each, longer when one line is.

    Every chunk is read into one buffer, reused (fresh memory for each chunk costs the
    kernel a page fault every 4 KiB): a chunk is valid until the next is read, time enough
    to parse it (the parse copies what it keeps). The buffer is pyarrow's own, not a
    Python object's: the parse's threads may drop their last reference to it after the
    read returned, even while the interpreter exits, and a Python buffer would need the
    GIL then."""
    buffer: pa.Buffer | None = None
    position = start
    want = chunk_bytes
    while position < stop:
        size = min(want, stop - position)
        if buffer is None or buffer.size < size:
            buffer = pa.allocate_buffer(size)
        with memoryview(buffer) as view:
            handle.seek(position)
            got = handle.readinto(view[:size])
        if not got:
            raise OSError(f"the file ended at byte {position} (it was {stop} bytes or more)")
        end = got if position + got >= stop else _last_line_end(buffer, got)
        if end == 0:  # a line longer than the chunk: read more of it
            want *= 2
            continue
        yield buffer.slice(0, end)
        position += end
        want = chunk_bytes


def _last_line_end(buffer: pa.Buffer, size: int) -> int:
    """Just past the last ``\n`` of the buffer's first ``size`` bytes (0: none), looked
    for from the end in growing windows (a line is short, the buffer long)."""
    window = 1 << 16
    while True:
        low = max(size - window, 0)
        with memoryview(buffer) as view:
            found = view[low:size].tobytes().rfind(b"\n")
        if found >= 0:
            return low + found + 1
        if low == 0:
            return 0
        window *= 4


def _parse_chunk(file: InputFile, chunk: pa.Buffer, options: _TextOptions, line_of: Any
                 ) -> pa.Table:
    """A chunk of whole lines parsed in parallel blocks. When it fails it is parsed again
    on one thread, as one block: a line longer than a block then reads, and a bad value
    is named by its row (the parallel parse does not say which); that error is raised
    as a :class:`DataError`."""
    read, parse, convert = options
    try:
        return pacsv.read_csv(pa.BufferReader(chunk), read_options=read,
                              parse_options=parse, convert_options=convert)
    except pa.ArrowException as error:
        _not_cancelled(error)
    whole = pacsv.ReadOptions(use_threads=False, block_size=max(chunk.size, 1),
                              column_names=read.column_names)
    try:
        return pacsv.read_csv(pa.BufferReader(chunk), read_options=whole,
                              parse_options=parse, convert_options=convert)
    except pa.ArrowException as error:
        raise _text_error(file, error, line_of) from None


def _columns_of(record_batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {name: record_batch.column(name) for name in record_batch.schema.names}


_ROW = re.compile(r"Row #(\d+): ")
_CONVERSION = re.compile(r"In CSV column #(\d+): (?:Row #(\d+): )?CSV conversion error to (\w+): "
                         r"invalid value '(.*)'$", re.S)
_COLUMN_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")


_COLUMN_NUMBER = re.compile(r"In CSV column #(\d+)")


def _not_cancelled(error: pa.ArrowException) -> None:
    """pyarrow cancels a read on SIGINT (``ArrowCancelled``): that is an interrupt, not
    bad data."""
    if isinstance(error, pa.ArrowCancelled):
        raise KeyboardInterrupt from None


def _text_error(file: InputFile, error: pa.ArrowException, line_of: Any) -> DataError:
    """A pyarrow parse or conversion error as ``path:line: column C: problem``."""
    _not_cancelled(error)
    message = str(error)
    row = _ROW.search(message)
    where = file.path if row is None else f"{file.path}:{line_of(int(row.group(1)))}"
    conversion = _CONVERSION.search(message)
    if conversion is not None:
        column = file.columns[int(conversion.group(1))]
        value = conversion.group(4)
        target = {"double": "float", "int64": "int"}.get(conversion.group(3), "string")
        if value == "":
            if row is not None and _is_empty_line(file, line_of(int(row.group(1)))):
                return DataError(where, "empty line: every line after the header holds a "
                                 "row (remove it)")
            return DataError(where, f"empty value where {_TYPE_WORDS[target]} is expected",
                             column)
        return DataError(where, f"{value!r} is not {_TYPE_WORDS[target]}", column)
    counts = _COLUMN_COUNT.search(message)
    if counts is not None:
        expected, got = int(counts.group(1)), int(counts.group(2))
        if got < expected:
            return DataError(where, f"missing: the line has {got} of the {expected} columns "
                             "of the header (ragged row)", file.columns[got])
        return DataError(where, f"the line has {got} columns, the header {expected} "
                         "(ragged row)")
    if "UTF8" in message or "UTF-8" in message:
        number = _COLUMN_NUMBER.search(message)
        return DataError(where, "invalid UTF-8 text",
                         None if number is None else file.columns[int(number.group(1))])
    return DataError(where, message.removeprefix("CSV parse error: "))


def _is_empty_line(file: InputFile, line: int) -> bool:
    """Whether line ``line`` (1-based) of a text file is empty (pyarrow reads an empty
    line as a row of empty values). Read again from the start, in blocks: only when an
    empty value was found."""
    import gzip

    try:
        with _opened(_location(file)) as handle:
            source: Any = gzip.GzipFile(fileobj=handle, mode="rb") if file.gzip else handle
            seen = 1  # the line that starts the block (1 + the \n before it)
            while True:
                block = source.read(1 << 20)
                if not block:
                    return False
                if seen + block.count(b"\n") < line:
                    seen += block.count(b"\n")
                    continue
                start = 0  # the line starts after the (line - seen)-th \n of the block
                for _ in range(line - seen):
                    start = block.index(b"\n", start) + 1
                end = block.find(b"\n", start)
                if end < 0:  # it goes on in the next block
                    rest = block[start:] + source.read(2)
                    return rest in (b"", b"\r") or rest.startswith((b"\n", b"\r\n"))
                return block[start:end] in (b"", b"\r")
    except (OSError, EOFError, InputError, StoreError):
        return False


def _parquet_batches(file: InputFile, piece: Piece, types: Mapping[str, str]) -> Iterator[Batch]:
    try:
        import pyarrow.parquet as pq

        with _opened(_location(file)) as source:
            yield from _row_groups(file, pq.ParquetFile(source), piece, types)
    except pa.ArrowException as error:
        raise DataError(file.path, f"not a readable Parquet file ({error})") from None


def _row_groups(file: InputFile, parquet: Any, piece: Piece, types: Mapping[str, str]
                ) -> Iterator[Batch]:
    first_row = sum(rows for rows, _ in file.row_groups[: piece.start])
    for group in range(piece.start, piece.stop):
        rows_in_group, bytes_in_group = file.row_groups[group]
        batches = parquet.iter_batches(
            batch_size=PARQUET_BATCH_ROWS, row_groups=[group], columns=list(types),
            use_threads=_threaded(),
        )
        done = 0
        while True:
            try:
                record_batch = next(batches)
            except StopIteration:
                break
            except pa.ArrowException as error:
                _not_cancelled(error)
                raise DataError(file.path, f"cannot read row group {group}: {error}") from None
            columns = {
                name: array.dictionary_decode() if pa.types.is_dictionary(array.type) else array
                for name, array in _columns_of(record_batch).items()
            }  # categoricals (pandas, dictionary-encoded writers) read as their values
            offset = first_row + done
            for column, kind in types.items():
                _check_parquet_column(file, column, kind, columns[column], offset)
            before, done = done, done + record_batch.num_rows
            share = max(rows_in_group, 1)  # the group's bytes, pro rata, adding up exactly
            yield Batch(
                path=file.path,
                columns=columns,
                rows=record_batch.num_rows,
                bytes=bytes_in_group * done // share - bytes_in_group * before // share,
                _locate=lambda row, offset=offset: f"{file.path}: row {offset + row + 1}",
            )
        first_row += rows_in_group


def _check_parquet_column(file: InputFile, column: str, kind: str, array: pa.Array,
                          offset: int) -> None:
    """No nulls, and a type that fits what the column is read as."""
    if array.null_count:
        first = int(np.flatnonzero(as_numpy(array.is_null()))[0])
        raise DataError(f"{file.path}: row {offset + first + 1}", "null value", column)
    kind_ok = {
        "float": pa.types.is_integer(array.type) or pa.types.is_floating(array.type)
        or pa.types.is_boolean(array.type),
        "int": pa.types.is_integer(array.type),
        "string": pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
        or pa.types.is_integer(array.type),
    }["string" if kind == "name" else kind]
    if not kind_ok:
        raise DataError(file.path, f"has type {array.type}, not {_TYPE_WORDS[kind]}", column)
