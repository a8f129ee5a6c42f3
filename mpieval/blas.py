"""numpy's BLAS on one thread for a run of the command.

numpy's wheels carry OpenBLAS, which runs a long ``dot`` (the ``auc`` intervals' sums
over the table's million buckets) on every core, and whose threads then spin for a while
waiting for more work. Under ``mpiexec`` every rank has such a pool, so on a machine with
as many ranks as cores they spin on the cores the other ranks compute on; and the last
bits of such a sum depend on how many threads split it. The command gives the pool one
thread (:func:`one_thread`): the ranks do not compete, and the results are the same
bits at any number of ranks and threads. OpenBLAS only (found among the process's loaded
libraries, Linux); elsewhere nothing changes.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

# OpenBLAS's setter, by the names its builds export: numpy's wheels (scipy-openblas,
# 64-bit integers, with and without the suffix), then a system OpenBLAS.
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


def one_thread() -> bool:
    """Have every OpenBLAS loaded in this process (numpy's) run on the calling thread;
    whether one was found. For the command's own process (:func:`mpieval.cli.main`)."""
    found = False
    for library in _openblas_libraries():
        setter = _first(library, _SETTERS)
        if setter is not None:
            setter(1)
            found = True
    return found


def threads() -> list[int]:
    """The thread count of each OpenBLAS loaded in this process (none: an empty list)."""
    counts = []
    for library in _openblas_libraries():
        getter = _first(library, _GETTERS)
        if getter is not None:
            counts.append(int(getter()))
    return counts


def _openblas_libraries() -> list[Any]:
    """The OpenBLAS libraries this process has loaded (``/proc/self/maps``), opened
    again through ``ctypes`` (the same library, not a second copy)."""
    paths: dict[str, None] = {}
    with contextlib.suppress(OSError):
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "openblas" in os.path.basename(path) and os.path.isfile(path):
                    paths[path] = None
    libraries = []
    for path in paths:
        with contextlib.suppress(OSError):
            import ctypes

            libraries.append(ctypes.CDLL(path))
    return libraries


def _first(library: Any, names: tuple[str, ...]) -> Any | None:
    """The first of ``names`` that ``library`` exports, or None."""
    for name in names:
        function = getattr(library, name, None)
        if function is not None:
            return function
    return None
