"""The memory of a run of the command tuned: glibc's allocator maps large blocks on their
own and gives its heap back before compute (glibc only, found in the process through
``ctypes``; elsewhere those functions do nothing), and numpy asks for no transparent huge
pages (:func:`no_huge_pages`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping

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


def no_huge_pages(environ: Mapping[str, str] | None = None) -> bool:
    """Have numpy no longer ask the kernel for transparent huge pages for its large arrays
    (``madvise(MADV_HUGEPAGE)``, which numpy does for every array of 4 MiB or more where
    the kernel leaves huge pages to the asking: ``madvise`` in
    ``/sys/kernel/mm/transparent_hugepage/enabled``), unless ``NUMPY_MADVISE_HUGEPAGE``,
    numpy's own setting, is set. Each huge page is zeroed whole at its first touch; a
    per-user run touches fresh memory throughout (its kept rows, the moves' buffers, the
    compute's arrays), and on the benchmark machine, a virtual one, that zeroing cost a
    per-user run a fifth of its time (the benchmarks page has the figures). For the
    command's own process (:func:`mpieval.cli.main`): a trainer's numpy is its own.
    Returns whether numpy's setting was changed."""
    names = os.environ if environ is None else environ
    if "NUMPY_MADVISE_HUGEPAGE" in names:
        return False
    setter = _numpy_hugepage_setter()
    if setter is None:
        return False
    setter(False)
    return True


def _numpy_hugepage_setter() -> Callable[[bool], bool] | None:
    """numpy's ``_set_madvise_hugepage`` (``numpy._core.multiarray`` from numpy 2,
    ``numpy.core.multiarray`` before), which returns the previous setting; None where
    numpy has none."""
    import numpy as np

    for module in ("_core", "core"):
        found = getattr(getattr(np, module, None), "multiarray", None)
        setter = getattr(found, "_set_madvise_hugepage", None)
        if setter is not None:
            return setter  # type: ignore[no-any-return]
    return None


def trim_heap() -> None:
    """Give back to the system what glibc's heap holds free (``malloc_trim``)."""
    _glibc("malloc_trim", 0)


def _glibc(function: str, *args: int) -> None:
    """Call glibc's ``function`` if this process has it (nothing elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        getattr(ctypes.CDLL(None), function)(*args)
