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

A module a concern: :mod:`~mpieval.readers.inspection` (what a file is: its format,
columns, data start or row groups), :mod:`~mpieval.readers.batches` (what a read hands
out), :mod:`~mpieval.readers.text` (TSV/CSV pieces, the read-ahead thread),
:mod:`~mpieval.readers.parquet`; :func:`read_piece` picks the reader of a piece.

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

from collections.abc import Iterator, Mapping

from mpieval import locations
from mpieval.errors import StoreError
from mpieval.readers.batches import COLUMN_TYPES, Batch, as_numpy, threaded, use_threads
from mpieval.readers.inspection import (
    HEADER_LIMIT,
    check_columns,
    file_format,
    inspect,
    location_of,
)
from mpieval.readers.parquet import PARQUET_BATCH_ROWS, parquet_batches
from mpieval.readers.text import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_STREAM_BYTES,
    chunk_batches,
    count_lines_before,
    gzip_damage,
    line_start_at,
    streamed_batches,
)
from mpieval.split import InputFile, Piece

__all__ = [
    "COLUMN_TYPES", "DEFAULT_CHUNK_BYTES", "DEFAULT_STREAM_BYTES", "HEADER_LIMIT",
    "PARQUET_BATCH_ROWS", "Batch", "as_numpy", "check_columns", "count_lines_before",
    "file_format", "gzip_damage", "inspect", "line_start_at", "read_piece", "use_threads",
]


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
            yield from parquet_batches(file, piece, types)
        elif file.gzip or not threaded():
            yield from streamed_batches(file, piece, types,
                                        block_size or DEFAULT_STREAM_BYTES)
        else:
            yield from chunk_batches(file, piece, types, block_size or DEFAULT_CHUNK_BYTES)
    except OSError as error:  # pyarrow's inflate error is an OSError too
        reported = locations.failure(location_of(file), "read", error)
        if isinstance(reported, StoreError):
            raise reported from None
        damage = gzip_damage(file) if file.gzip else None
        raise damage or reported from None
