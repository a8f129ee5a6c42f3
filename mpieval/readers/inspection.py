"""What a file is, before it is read: its format (:func:`file_format`), its size and
columns, where its data starts or its row groups (:func:`inspect`, the planner's
:class:`~mpieval.split.InputFile`), and whether it has the columns a run reads
(:func:`check_columns`); a file of the plan opened again (:func:`opened`)."""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa

from mpieval import locations
from mpieval.errors import DataError, StoreError
from mpieval.locations import Location
from mpieval.split import InputFile

_GZIP_MAGIC = b"\x1f\x8b"
_SUFFIXES = {".tsv": "tsv", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


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
    with opened(location) as handle:
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
def opened(location: Location) -> Iterator[pa.NativeFile]:
    """A random-access file of the location (errors as :func:`locations.failure`)."""
    handle = locations.guarded(location, "read", lambda: locations.open_input_file(location))
    try:
        yield handle
    finally:
        with contextlib.suppress(OSError):
            handle.close()


def location_of(file: InputFile) -> Location:
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
