"""Kernels of columns of a few distinct values (tags): codes in order of first appearance,
and the remap of small codes, compiled (``mpieval/_core/codes.hpp``).

Pure: arrays in, arrays out, no MPI, no I/O.
"""

from __future__ import annotations

import numpy as np

from mpieval import _core

CODE_SPACE = 1 << 16
"""The uint16 codes: at most this many distinct values."""


def first_appearance(offsets: np.ndarray, data: np.ndarray, limit: int
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's code, the index of its value among the distinct values in order of
    first appearance (``uint16``), and the first row of each distinct value (``int64``);
    value ``i`` being ``data[offsets[i]:offsets[i + 1]]`` (an Arrow string or binary
    array's buffers), compared as bytes. None when there are more than ``limit``
    distinct values (``limit`` at most :data:`CODE_SPACE`).

    As ``np.unique(values, return_index=True, return_inverse=True)`` with the distinct
    values reordered by their first row, in one pass over the bytes."""
    if not 0 <= limit <= CODE_SPACE:
        raise ValueError(f"limit must be in [0, {CODE_SPACE}], got {limit}")
    offsets = np.ascontiguousarray(offsets)
    if offsets.dtype not in (np.int32, np.int64):
        offsets = offsets.astype(np.int64)
    data = np.ascontiguousarray(data).view(np.uint8)
    n = len(offsets) - 1
    codes = np.empty(n, dtype=np.uint16)
    first_rows = np.empty(limit, dtype=np.int64)
    distinct = _core.first_appearance(offsets, data, limit, codes, first_rows)
    if distinct < 0:
        return None
    return codes, first_rows[:distinct].copy()


def remap(codes: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``lookup[codes]`` of uint16 ``codes`` and a uint16 ``lookup`` (a new uint16 array),
    without numpy's intp copy of the indexes; a code past the end of ``lookup`` is an
    IndexError, as numpy's."""
    codes = np.ascontiguousarray(codes, dtype=np.uint16)
    if len(codes) and int(codes.max()) >= len(lookup):
        raise IndexError(f"a code {int(codes.max())} is past the {len(lookup)} entries "
                         "of the lookup")
    table = np.zeros(CODE_SPACE, dtype=np.uint16)
    table[: len(lookup)] = lookup
    out = np.empty(len(codes), dtype=np.uint16)
    _core.remap(codes, table, out)
    return out
