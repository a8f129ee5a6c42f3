"""Kernels of a move of per-user rows to the ranks that own their users
(:func:`mpieval.exchange.move_to_owners`), compiled (``mpieval/_core/moves.hpp``): each
row's owner and the rows per owner in one pass, then each column split in one pass into
the rows that stay on this rank (compacted in place, in order) and the rows that leave it
(packed by owner, in order), with no index array and no copy of the staying rows.

Pure: arrays in, arrays out, no MPI, no I/O.
"""

from __future__ import annotations

import numpy as np

from mpieval import _core

MAX_RANKS = 1 << 16
"""The owners are uint16: at most this many ranks."""


def owners(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(dest, counts)``: the rank that owns each uint64 key, ``mix64(key) mod size`` as
    :func:`mpieval.kernels.keys.owner_of` (uint16), and the keys of each rank (int64)."""
    if not 1 <= size <= MAX_RANKS:
        raise ValueError(f"owners: size must be in [1, {MAX_RANKS}], got {size}")
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    dest = np.empty(len(keys), dtype=np.uint16)
    counts = np.empty(size, dtype=np.int64)
    _core.moves.owners(keys, size, dest, counts)
    return dest, counts


def buckets(keys: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(bucket, counts)``: the top ``bits`` bits (1 to 16) of each uint64 key's
    ``mix64`` (:func:`mpieval.kernels.keys.mix64`), uint16, so that the rows of a key
    share a bucket; and the keys of each of the ``2**bits`` buckets (int64)."""
    if not 1 <= bits <= 16:
        raise ValueError(f"buckets: bits must be in [1, 16], got {bits}")
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    bucket = np.empty(len(keys), dtype=np.uint16)
    counts = np.empty(1 << bits, dtype=np.int64)
    _core.moves.buckets(keys, bits, bucket, counts)
    return bucket, counts


def split_columns(dest: np.ndarray, rank: int, columns: list[np.ndarray], out: np.ndarray,
                  firsts: np.ndarray) -> int:
    """Split every column (contiguous, writable, one row a value of uint16 ``dest``, the
    rows' owners): the rows of ``rank`` are compacted to the front of their column in
    place, in order, and their count returned; the rows of another rank ``d`` go to
    ``out`` (uint8) as records of the columns' bytes one after the other, from record
    ``firsts[d]`` on (int64, one a rank), each rank's rows column after column (rows of one
    owner in order). Compiled: one pass counts the owners' rows, one finds each row's place
    among its owner's rows (with two owners none: each column's pass counts them as it
    goes), then one a column copies the rows there (branch-free: the owners come at
    random)."""
    pieces = []
    for column in columns:
        if not column.flags.c_contiguous or not column.flags.writeable:
            raise ValueError("split_columns: the columns must be contiguous and writable")
        pieces.append(column.view(np.uint8).reshape(len(column), column.dtype.itemsize))
    counts = np.empty(len(firsts), dtype=np.int64)
    _core.moves.split_columns(np.ascontiguousarray(dest, dtype=np.uint16), rank, pieces,
                              out, np.ascontiguousarray(firsts, dtype=np.int64), counts)
    return int(counts[rank])
