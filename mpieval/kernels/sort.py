"""The sorts of the compiled kernels (``pn``, ``wuauc``), in scratch the caller owns: a
merge sort (stable, O(m log m) whatever the input's order) and a radix sort of uint64 keys
(:func:`radix_sort`; :func:`radix_order` for the order it puts them in).

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
    return int(_core.sort.merge_sort(first, tmp_first, m, second, tmp_second, False))


def merge_sort_counting_inversions(first: np.ndarray, tmp_first: np.ndarray, m: int) -> int:
    """:func:`merge_sort` of ``first`` alone; returns the pairs ``i < j`` that were out of
    order (``first[i] > first[j]``)."""
    return int(_core.sort.merge_sort(first, tmp_first, m, None, None, True))


def radix_sort(keys: np.ndarray, payload: np.ndarray, tmp_keys: np.ndarray,
               tmp_payload: np.ndarray, m: int) -> None:
    """Sort rows ``0 .. m - 1`` of the uint64 ``keys`` and their uint32 ``payload`` by key,
    in place, through ``tmp_keys`` and ``tmp_payload`` (the compiled per-user pass sorts a
    long user's rows by pred so).

    A most significant digit radix sort on the keys' own range: a level cuts the range
    from the smallest key to the largest into buckets by its top bits (256 to 2048 of
    them, about 16 rows each), moves the rows into bucket order and sorts each bucket the
    same way on its own range; buckets of 48 rows or fewer are sorted by insertion. High
    bits that every key shares (a float's sign and exponent) so cost no pass, and a level
    narrows the range by 8 bits or more (8 levels at most). Not stable: rows of one key
    end in some order, the same for the same input."""
    _core.sort.radix_sort(keys, payload, tmp_keys, tmp_payload, m)


def radix_order(keys: np.ndarray) -> np.ndarray:
    """Sort the uint64 ``keys`` in place (fewer than 2**32 of them) by :func:`radix_sort`
    and return each sorted key's first place (uint32): keys that are equal in some order,
    the same for the same input."""
    order = np.arange(len(keys), dtype=np.uint32)
    radix_sort(keys, order, np.empty_like(keys), np.empty_like(order), len(keys))
    return order
