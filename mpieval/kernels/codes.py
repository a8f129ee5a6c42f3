"""Kernels of columns of a few distinct values (tags, slices): codes in order of first
appearance, a run's text values and their codes (:class:`TextCodes`), the remap of small
codes, and codes looked up and counted, compiled (``mpieval/_core/codes.hpp``).

Pure: arrays in, arrays out, no MPI, no I/O.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpieval import _core

CODE_SPACE = 1 << 16
"""The uint16 codes: at most this many distinct values."""

TAG_DTYPE = np.dtype(np.uint32)
"""A kept row's tag code (the compiled per-user passes read it so)."""


def first_appearance(offsets: np.ndarray, data: np.ndarray, limit: int,
                     out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's code, the index of its value among the distinct values in order of
    first appearance (``uint16``, into ``out`` if given), and the first row of each
    distinct value (``int64``); value ``i`` being ``data[offsets[i]:offsets[i + 1]]`` (an
    Arrow string or binary array's buffers), compared as bytes. None when there are more
    than ``limit`` distinct values (``limit`` at most :data:`CODE_SPACE`).

    As ``np.unique(values, return_index=True, return_inverse=True)`` with the distinct
    values reordered by their first row, in one pass over the bytes."""
    if not 0 <= limit <= CODE_SPACE:
        raise ValueError(f"limit must be in [0, {CODE_SPACE}], got {limit}")
    offsets = np.ascontiguousarray(offsets)
    if offsets.dtype not in (np.int32, np.int64):
        offsets = offsets.astype(np.int64)
    data = np.ascontiguousarray(data).view(np.uint8)
    codes = np.empty(len(offsets) - 1, dtype=np.uint16) if out is None else out
    first_rows = _core.codes.first_appearance(offsets, data, limit, codes)
    if first_rows is None:
        return None
    return codes, first_rows


class TextCodes:
    """Text values kept with their codes across calls (a run's tag or slice values:
    :class:`mpieval.tags.TagCodes`), in a compiled table (``_core.codes.Texts``): a batch's
    values looked up there at about 30 ns each, not hashed as new str objects into a dict
    (about 130 ns each). Not pickled: made again from the values (:meth:`of_values`)."""

    def __init__(self) -> None:
        self._table = _core.codes.Texts()

    def __len__(self) -> int:
        return len(self._table)

    def codes(self, values: list[object]) -> np.ndarray | None:
        """Each value's code (``int64``; -1: not here); None when a value is not a
        ``str`` (or cannot be UTF-8: a lone surrogate), for the caller to look up."""
        out = np.empty(len(values), dtype=np.int64)
        return out if self._table.codes(values, out) < 0 else None

    def add(self, values: list[Any], codes: np.ndarray) -> None:
        """Each value (a ``str`` not here, with UTF-8: no lone surrogate) with its code."""
        present = self._table.add(values, np.ascontiguousarray(codes, dtype=np.int64))
        if present >= 0:
            raise ValueError(f"text value {values[present]!r} is already coded")

    def add_texts(self, values: list[Any], first: int = 0) -> None:
        """The text values among ``values`` (:func:`texted`), value ``i`` coded ``first +
        i``, none of them here yet; the others are left to the caller."""
        at = [i for i, value in enumerate(values) if texted(value)]
        if at:
            self.add(values if len(at) == len(values) else [values[i] for i in at],
                     first + np.array(at, dtype=np.int64))

    @classmethod
    def of_values(cls, values: list[object]) -> TextCodes:
        """A table of the text values of ``values`` (``str``, with UTF-8), each coded by
        its index."""
        made = cls()
        made.add_texts(values)
        return made


def texted(value: object) -> bool:
    """Whether ``value`` goes in a :class:`TextCodes`: a ``str`` with UTF-8 (the others are
    looked up by their caller: a value of another type, or a lone surrogate)."""
    if type(value) is not str:
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


_CODES = (np.dtype(np.uint16), np.dtype(np.uint32))


def remap(codes: np.ndarray, lookup: np.ndarray, out: np.ndarray | None = None,
          none: tuple[int, int] | None = None) -> np.ndarray:
    """``lookup[codes]`` of uint16 or uint32 ``codes`` and a uint16 or uint32 ``lookup``,
    into ``out`` (of ``lookup``'s dtype) if given (may be ``codes``: in place), else a new
    array of ``lookup``'s dtype; without numpy's intp copy of the indexes. ``none``:
    ``(code, written)``, a code past the end of ``lookup`` that stands for no value (a row
    without a tag) and what is written for it. Another code past the end of ``lookup`` is
    an IndexError, as numpy's."""
    codes, lookup = np.ascontiguousarray(codes), np.ascontiguousarray(lookup)
    if codes.dtype not in _CODES or lookup.dtype not in _CODES:
        raise TypeError(f"remap takes uint16 or uint32 codes and lookup, got {codes.dtype} "
                        f"and {lookup.dtype}")
    out = np.empty(len(codes), dtype=lookup.dtype) if out is None else out
    code, written = (None, 0) if none is None else none
    bad = _core.codes.remap(codes, lookup, out, code, written)
    if bad >= 0:
        raise IndexError(f"code {int(codes[bad])} (row {bad}) is past the {len(lookup)} "
                         "entries of the lookup")
    return out


def lookup_counted(codes: np.ndarray, lookup: np.ndarray, out: np.ndarray,
                   counts: np.ndarray) -> None:
    """``out[:] = lookup[codes]`` (int32) and ``counts`` (int64, as long as ``lookup``)
    increased by ``np.bincount(codes)``, in one pass over integer ``codes`` of any
    dtype (numpy's would first copy them as intp, then pass over them twice). A code
    outside ``lookup`` is an IndexError, as numpy's."""
    codes = np.ascontiguousarray(codes)
    lookup = np.ascontiguousarray(lookup, dtype=np.int32)
    bad = _core.codes.lookup_counted(codes, lookup, out, counts)
    if bad >= 0:
        raise IndexError(f"code {int(codes[bad])} (row {bad}) is outside the {len(lookup)} "
                         "entries of the lookup")
