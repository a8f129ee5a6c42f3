"""The merge sort of the compiled kernels (``pn``, ``wuauc``): stable, O(m log m) whatever
the input's order, in scratch the caller owns.

Rows ``0 .. m - 1`` of ``first`` are sorted in place; given ``second`` (as long), the rows
of both are sorted together by ``(first, second)``. Runs of ``RUN`` rows are sorted by
insertion, then neighbouring runs are merged bottom-up through ``tmp_first`` (and
``tmp_second``); a merge whose two runs are already in order is skipped (one comparison,
nothing copied). Equal rows keep their order.

Two entry points are built from the one source below (:func:`_build`), whether to count
inversions fixed when each is compiled, as a constant of the closure:

- :func:`merge_sort` ``(first, tmp_first, m, second=None, tmp_second=None)``;
- :func:`merge_sort_counting_inversions` ``(first, tmp_first, m)`` also returns the
  number of pairs ``i < j`` that were out of order (``first[i] > first[j]``).

Why not one function with a flag argument: the count adds to one side of the merge's
comparison, which keeps that comparison a branch, taken or not at random on unordered
input; without it, LLVM compiles the merge step of one array to branch-free selects.
A flag argument is a constant only where LLVM propagates it into the caller's copy of
the sort, which depends on the call sites; the closure makes the sort that does not count
free of the counter whoever calls it. Likewise, without ``second`` numba compiles a
specialisation with its branches pruned (``second is None`` is known from the types).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mpieval.kernels.jit import compiled

RUN = 16
"""Runs this short are sorted by insertion before merging."""


def _build(count_inversions: bool) -> Callable[..., int]:
    """The merge sort, compiled; it counts inversions if ``count_inversions`` (else returns 0)."""

    def sort(
        first: np.ndarray,
        tmp_first: np.ndarray,
        m: int,
        second: np.ndarray | None = None,
        tmp_second: np.ndarray | None = None,
    ) -> int:
        inversions = 0
        for start in range(0, m, RUN):  # insertion sort of each run
            stop = min(start + RUN, m)
            for j in range(start + 1, stop):
                a = first[j]
                if second is not None:
                    b = second[j]
                i = j - 1
                while i >= start and (
                    first[i] > a or (second is not None and first[i] == a and second[i] > b)
                ):
                    first[i + 1] = first[i]
                    if second is not None:
                        second[i + 1] = second[i]
                    i -= 1
                    if count_inversions:
                        inversions += 1
                first[i + 1] = a
                if second is not None:
                    second[i + 1] = b
        width = RUN
        while width < m:
            for start in range(0, m, 2 * width):
                mid = min(start + width, m)
                stop = min(start + 2 * width, m)
                if mid >= stop or first[mid - 1] < first[mid] or (
                    first[mid - 1] == first[mid]
                    and (second is None or second[mid - 1] <= second[mid])
                ):
                    continue  # already in order
                i, j, k = start, mid, start
                while i < mid and j < stop:
                    if first[j] < first[i] or (
                        second is not None and first[j] == first[i] and second[j] < second[i]
                    ):
                        tmp_first[k] = first[j]
                        if second is not None:
                            tmp_second[k] = second[j]  # type: ignore[index]
                        if count_inversions:
                            inversions += mid - i  # row j is below every left row waiting
                        j += 1
                    else:
                        tmp_first[k] = first[i]
                        if second is not None:
                            tmp_second[k] = second[i]  # type: ignore[index]
                        i += 1
                    k += 1
                while i < mid:
                    tmp_first[k] = first[i]
                    if second is not None:
                        tmp_second[k] = second[i]  # type: ignore[index]
                    i += 1
                    k += 1
                # the rest of the right run is already in place
                for t in range(start, k):
                    first[t] = tmp_first[t]
                    if second is not None:
                        second[t] = tmp_second[t]  # type: ignore[index]
            width *= 2
        return inversions

    return compiled(sort)


merge_sort = _build(count_inversions=False)
merge_sort_counting_inversions = _build(count_inversions=True)


DIGIT_BITS = 8
"""Bits of the key sorted per pass of :func:`radix_sort`."""


@compiled
def radix_sort(keys: np.ndarray, payload: np.ndarray, tmp_keys: np.ndarray,
               tmp_payload: np.ndarray, m: int) -> bool:
    """Sort rows ``0 .. m - 1`` of the uint64 ``keys`` and their ``payload`` by key (LSD
    radix sort, stable, O(m) a pass); ``True`` when the sorted rows ended up in ``tmp_keys``
    and ``tmp_payload`` rather than in place.

    One pass over the keys counts every digit; a digit that all ``m`` keys share is not
    sorted on (the high bits of many floats, the low bits of float32 values as float64)."""
    digits = 64 // DIGIT_BITS
    buckets = 1 << DIGIT_BITS
    mask = np.uint64(buckets - 1)
    counts = np.zeros((digits, buckets), np.int64)
    for i in range(m):
        key = keys[i]
        for d in range(digits):
            counts[d, (key >> np.uint64(d * DIGIT_BITS)) & mask] += 1
    source_keys, source_payload = keys, payload
    target_keys, target_payload = tmp_keys, tmp_payload
    swapped = False
    for d in range(digits):
        shift = np.uint64(d * DIGIT_BITS)
        if m == 0 or counts[d, (keys[0] >> shift) & mask] == m:
            continue  # every key has this digit
        start = 0
        for b in range(buckets):  # the first position of each bucket
            count = counts[d, b]
            counts[d, b] = start
            start += count
        for i in range(m):
            key = source_keys[i]
            b = (key >> shift) & mask
            position = counts[d, b]
            target_keys[position] = key
            target_payload[position] = source_payload[i]
            counts[d, b] = position + 1
        source_keys, target_keys = target_keys, source_keys
        source_payload, target_payload = target_payload, source_payload
        swapped = not swapped
    return swapped
