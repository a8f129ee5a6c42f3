"""TSV and CSV files (plain or gzip), read in batches by pyarrow's CSV reader.

- text on one thread (and gzip text always: decompression is serial) streams through
  ``pyarrow.csv.open_csv``, 1 MiB blocks at a time (a line may span two blocks; on a
  longer one the piece is read again in larger blocks, so lines of any length read):
  :func:`streamed_batches`;
- plain text on several threads is read in chunks of whole lines (16 MiB), each parsed by
  ``pyarrow.csv.read_csv``, which parses the chunk's 1 MiB blocks in parallel (the
  streaming reader gains nothing from threads, and on one thread it is the faster of
  the two); a chunk that fails is parsed again on one thread as one block, so lines of
  any length read, and a bad value is named by its line; the next chunk is read ahead
  on a thread of its own: :func:`chunk_batches`.

A piece of a file starts and ends at line starts (:func:`line_start_at`), so pieces cut
at the same offsets meet exactly; a pyarrow error becomes a :class:`DataError` naming the
file, the line and the column (:func:`gzip_damage` for a damaged gzip file).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv

from mpieval.errors import DataError, InputError, StoreError
from mpieval.readers.batches import (
    COLUMN_TYPES,
    TYPE_WORDS,
    Batch,
    FirstAppearance,
    columns_of,
    names_coded,
    not_cancelled,
)
from mpieval.readers.inspection import location_of, opened
from mpieval.split import InputFile, Piece

DEFAULT_STREAM_BYTES = 1 << 20  # text on one thread: pyarrow's streaming block (a line
# may span two; larger blocks read no faster and raise the peak memory)
DEFAULT_CHUNK_BYTES = 16 << 20  # text on several threads: whole lines parsed at a time,
PARALLEL_BLOCK_BYTES = 1 << 20  # in blocks of this size, in parallel


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
            with opened(location_of(self.file)) as again:
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


def streamed_batches(
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
    with opened(location_of(file)) as handle:
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
            columns=columns_of(record_batch),
            rows=record_batch.num_rows,
            bytes=consumed - done_bytes,
            _locate=lambda row, offset=offset: f"{file.path}:{lines.of(offset + row + 1)}",
        )
        done_bytes = consumed


def _stream_error(file: InputFile, error: pa.ArrowException, lines: _Lines
                  ) -> DataError | _LineTooLong:
    """:func:`_text_error`, a damaged gzip file (:func:`gzip_damage`), or a line too long
    for the streaming reader's blocks (:class:`_LineTooLong`: read again)."""
    not_cancelled(error)
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
        with opened(location_of(file)) as handle:
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


def chunk_batches(
    file: InputFile, piece: Piece, types: Mapping[str, str], chunk_bytes: int
) -> Iterator[Batch]:
    """A plain text piece in chunks of whole lines, each parsed on pyarrow's threads.

    The next chunk is read and parsed on a thread of its own while the caller uses this
    one: the metrics' updates (on the caller's thread) then overlap the parse instead of
    leaving the other cores idle. One chunk is read ahead at most; closing the iterator
    waits for it (and the file stays open until then)."""
    with opened(location_of(file)) as handle, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpieval-read") as ahead:
        start = line_start_at(handle, piece.start, file.data_start, file.size)
        stop = line_start_at(handle, piece.stop, file.data_start, file.size)
        lines = _Lines(file, start)
        options = _text_options(file, types, PARALLEL_BLOCK_BYTES, threads=True)
        chunks = _line_chunks(handle, start, stop, chunk_bytes)

        def read_next(offset: int) -> tuple[int, pa.Table, dict[str, FirstAppearance]
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
                found = names_coded(table.column(name)) if types[name] == "name" else None
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
        not_cancelled(error)
    whole = pacsv.ReadOptions(use_threads=False, block_size=max(chunk.size, 1),
                              column_names=read.column_names)
    try:
        return pacsv.read_csv(pa.BufferReader(chunk), read_options=whole,
                              parse_options=parse, convert_options=convert)
    except pa.ArrowException as error:
        raise _text_error(file, error, line_of) from None


_ROW = re.compile(r"Row #(\d+): ")
_CONVERSION = re.compile(r"In CSV column #(\d+): (?:Row #(\d+): )?CSV conversion error to (\w+): "
                         r"invalid value '(.*)'$", re.S)
_COLUMN_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")
_COLUMN_NUMBER = re.compile(r"In CSV column #(\d+)")


def _text_error(file: InputFile, error: pa.ArrowException, line_of: Any) -> DataError:
    """A pyarrow parse or conversion error as ``path:line: column C: problem``."""
    not_cancelled(error)
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
            return DataError(where, f"empty value where {TYPE_WORDS[target]} is expected",
                             column)
        return DataError(where, f"{value!r} is not {TYPE_WORDS[target]}", column)
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
        with opened(location_of(file)) as handle:
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
