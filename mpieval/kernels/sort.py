"""The merge sort of the compiled kernels (``pn``, ``wuauc``): stable, O(m log m) whatever
the input's order, in scratch the caller owns.

Rows ``0 .. m - 1`` of ``first`` are sorted in place; given ``second`` (as long), the rows
of both are sorted together by ``(first, second)``. Runs of ``RUN`` rows are sorted by
insertion, then neighbouring runs are merged bottom-up through ``tmp_first`` (and
``tmp_second``); a merge whose two runs are already in order is skipped (one comparison,
nothing copied). Equal rows keep their order.

Two entry points share the one source (``mpieval/_core/sort.hpp``, a template whose
``CountInversions`` is fixed when each is compiled):

- :func:`merge_sort` ``(first, tmp_first, m, second=None, tmp_second=None)``;
- :func:`merge_sort_counting_inversions` ``(first, tmp_first, m)`` also returns the
  number of pairs ``i < j`` that were out of order (``first[i] > first[j]``).

Why a template argument rather than a flag: the count adds to one side of the merge's
comparison, which keeps that comparison a branch, taken or not at random on unordered
input; without it, the merge step of one array compiles to branch-free selects.
"""

from __future__ import annotations

import numpy as np

from mpieval import _core

RUN = 16
"""Runs this short are sorted by insertion before merging."""


def merge_sort(first: np.ndarray, tmp_first: np.ndarray, m: int,
               second: np.ndarray | None = None, tmp_second: np.ndarray | None = None) -> int:
    """Sort rows ``0 .. m - 1`` of ``first`` in place (with ``second``, by ``(first,
    second)``); returns 0."""
    return int(_core.merge_sort(first, tmp_first, m, second, tmp_second, False))


def merge_sort_counting_inversions(first: np.ndarray, tmp_first: np.ndarray, m: int) -> int:
    """:func:`merge_sort` of ``first`` alone; returns the pairs ``i < j`` that were out of
    order (``first[i] > first[j]``)."""
    return int(_core.merge_sort(first, tmp_first, m, None, None, True))


DIGIT_BITS = 8
"""Bits of the key sorted per pass of :func:`radix_sort`."""


def radix_sort(keys: np.ndarray, payload: np.ndarray, tmp_keys: np.ndarray,
               tmp_payload: np.ndarray, m: int) -> bool:
    """Sort rows ``0 .. m - 1`` of the uint64 ``keys`` and their uint32 ``payload`` by key
    (LSD radix sort, stable, O(m) a pass); ``True`` when the sorted rows ended up in
    ``tmp_keys`` and ``tmp_payload`` rather than in place.

    One pass over the keys counts every digit; a digit that all ``m`` keys share is not
    sorted on (the high bits of many floats, the low bits of float32 values as float64)."""
    return bool(_core.radix_sort(keys, payload, tmp_keys, tmp_payload, m))
