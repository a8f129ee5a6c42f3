"""What the command line's own process sets before numpy loads (imported first by the
package, so it runs before any module that imports numpy; no numpy here).

numpy's OpenBLAS starts a thread per core when it loads, and each spins for a while
before it sleeps: about 0.12 s of CPU a process on a 2-core machine, and under ``mpiexec``
every rank of a node starts one per core of the node. No value of a run calls the BLAS
(``tests/test_blas_threads.py``), so the command's process gives it one thread.

glibc's malloc gives freed memory at the top of its heap back to the system once more than
128 KB of it is free (or twice its moving mmap threshold), and takes it again, zeroed page
by page, at the next allocations: a rank whose per-user rows move in rounds frees and takes
its round's memory over and over (``docs/benchmarks.md``: weak scaling of ``pn``). The
command's process keeps up to :data:`KEPT_FREE` bytes (``mallopt(M_TRIM_THRESHOLD)``,
unless ``MALLOC_TRIM_THRESHOLD_`` is set: a user's choice stays): it keeps what it freed
for its own next allocations, and its peak barely moves.

Only the command's process: a trainer that imports mpieval keeps its BLAS and its malloc
as they are.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, MutableMapping, Sequence

BLAS_THREADS = ("OPENBLAS_NUM_THREADS",)
"""The variables set (when unset): OpenBLAS's, the BLAS of numpy's wheels."""


def is_the_command(argv: Sequence[str], orig_argv: Sequence[str]) -> bool:
    """Whether this process is the ``mpieval`` command: its console script, or
    ``python -m mpieval`` (``orig_argv``: the interpreter's own arguments)."""
    script = os.path.basename(argv[0]) if argv else ""
    return script == "mpieval" or list(orig_argv[1:3]) == ["-m", "mpieval"]


def one_blas_thread(environ: MutableMapping[str, str] | None = None,
                    argv: Sequence[str] | None = None,
                    orig_argv: Sequence[str] | None = None) -> bool:
    """Give numpy's BLAS one thread in the command's process, before numpy loads, unless
    the variable is set (a user's choice stays). Returns whether it set one."""
    names = os.environ if environ is None else environ
    if "numpy" in sys.modules and environ is None:
        return False
    if not is_the_command(sys.argv if argv is None else argv,
                          getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv):
        return False
    changed = False
    for name in BLAS_THREADS:
        if name not in names:
            names[name] = "1"
            changed = True
    return changed


KEPT_FREE = 1 << 30
"""Bytes of freed memory glibc's malloc keeps for the command's process (its trim
threshold)."""
M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>


def _glibc_mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None (another C library, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallopt: Callable[[int, int], int] = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return None
    return mallopt


def keep_freed_memory(environ: MutableMapping[str, str] | None = None,
                      argv: Sequence[str] | None = None,
                      orig_argv: Sequence[str] | None = None,
                      mallopt: Callable[[int, int], int] | None = None) -> bool:
    """In the command's process, have glibc's malloc keep up to :data:`KEPT_FREE` bytes of
    freed memory (module doc), unless ``MALLOC_TRIM_THRESHOLD_`` is set. Returns whether
    it did."""
    names = os.environ if environ is None else environ
    if "MALLOC_TRIM_THRESHOLD_" in names or not is_the_command(
            sys.argv if argv is None else argv,
            getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv):
        return False
    mallopt = mallopt or _glibc_mallopt()
    return mallopt is not None and mallopt(M_TRIM_THRESHOLD, KEPT_FREE) == 1


one_blas_thread()
FREED_MEMORY_KEPT = keep_freed_memory()
"""Whether this process keeps its freed memory (:func:`keep_freed_memory`)."""
