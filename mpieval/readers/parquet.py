"""Parquet files, read a row group at a time (``ParquetFile.iter_batches``), each column
checked: no nulls, a type that fits what it is read as."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from mpieval.errors import DataError
from mpieval.readers.batches import (
    TYPE_WORDS,
    Batch,
    as_numpy,
    columns_of,
    not_cancelled,
    threaded,
)
from mpieval.readers.inspection import location_of, opened
from mpieval.split import InputFile, Piece

PARQUET_BATCH_ROWS = 1 << 16


def parquet_batches(file: InputFile, piece: Piece, types: Mapping[str, str]) -> Iterator[Batch]:
    try:
        import pyarrow.parquet as pq

        with opened(location_of(file)) as source:
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
            use_threads=threaded(),
        )
        done = 0
        while True:
            try:
                record_batch = next(batches)
            except StopIteration:
                break
            except pa.ArrowException as error:
                not_cancelled(error)
                raise DataError(file.path, f"cannot read row group {group}: {error}") from None
            columns = {
                name: array.dictionary_decode() if pa.types.is_dictionary(array.type) else array
                for name, array in columns_of(record_batch).items()
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
        raise DataError(file.path, f"has type {array.type}, not {TYPE_WORDS[kind]}", column)
