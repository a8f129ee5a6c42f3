"""glibc's allocator tuned for a run of the command: large blocks mapped on their own, the
heap given back before compute. glibc only (found in the process through ``ctypes``);
elsewhere every function here does nothing."""

from __future__ import annotations

import contextlib

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
# The blocks glibc maps on their own (map_large_blocks): a per-user run's batch-sized
# arrays and larger; smaller ones (a batch's columns and pieces) reused from the heap, not
# mapped and zeroed anew each time (the benchmarks page has the figures).
MMAP_THRESHOLD = 32 << 20
# The free memory glibc's heap keeps for the next blocks (map_large_blocks) until
# trim_heap: the moves' rounds of a per-user run free and take their blocks over and over.
KEPT_FREE = 1 << 30


def map_large_blocks() -> None:
    """Have glibc map every block of :data:`MMAP_THRESHOLD` or more on its own
    (``M_MMAP_THRESHOLD``), so that such an array, freed, leaves the process at once, and
    serve smaller ones from its heap. By default glibc starts with a threshold of 128 KiB,
    raised after the first large frees, and serves large arrays from heaps that stay
    resident (one per thread), which a per-user run, whose rows are kept as batch-sized
    chunks then joined, pays in peak memory. Not for a run that keeps no rows: mapping
    each batch's arrays anew costs it time (the benchmarks page has both figures). For
    the command's own process (:func:`mpieval.cli.main`).

    The heap also keeps up to :data:`KEPT_FREE` bytes of what is freed
    (``M_TRIM_THRESHOLD``; glibc's default gives back its top once 128 KiB of it is free)
    for the next blocks, until :func:`trim_heap` before compute: a rank whose users' rows
    move in rounds frees and takes a round's blocks over and over, which the system would
    otherwise map and zero anew each time (the benchmarks page has the figures)."""
    _glibc("mallopt", _M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    _glibc("mallopt", _M_TRIM_THRESHOLD, KEPT_FREE)


def trim_heap() -> None:
    """Give back to the system what glibc's heap holds free (``malloc_trim``)."""
    _glibc("malloc_trim", 0)


def _glibc(function: str, *args: int) -> None:
    """Call glibc's ``function`` if this process has it (nothing elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        getattr(ctypes.CDLL(None), function)(*args)
