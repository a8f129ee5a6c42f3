"""The one switch for compiled loops.

Some pieces of mpieval are inherently sequential and cannot be written as whole-array
numpy operations without changing their meaning: the seed's bucket-error sweep (each
bucket range starts where the previous one ended), the per-user passes of PN and WUAUC.
They are compiled with numba (``nopython``, cached on disk, numpy's float error model so
that ``0/0`` is NaN exactly as in the C++ original).

numba itself is imported only when a compiled function is first needed (its first call,
or :func:`load`), not when a kernel module is imported: the metric modules, which declare
what each kind reads, are then cheap to import (the command line plans a run before the
kernels are in, and loads them on a background thread meanwhile).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np

F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")
R = TypeVar("R")

_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True, "error_model": "numpy"}
_LOCK = threading.RLock()
_PENDING: list[Kernel] = []
_njit: Callable[..., Any] | None = None  # numba.njit once loaded


class Kernel:
    """A function compiled with numba on first use (see the module docstring).

    Until :func:`load` runs it is a stand-in: calling it loads numba and every pending
    kernel, then calls the compiled function. :func:`load` also points every module-level
    name that refers to a stand-in at its compiled function, so that compiled callers see
    compiled callees.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.py_func = fn  # as a numba dispatcher names the plain function
        self.dispatcher: Any = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            if _interpreted:
                with np.errstate(all="ignore"):  # numba's numpy error model: inf, NaN
                    return self.fn(*args)
            load()
        return self.dispatcher(*args)


def compiled(fn: F) -> F:
    """Compile ``fn`` with numba (no Python objects, cached, C-like float semantics), at
    its first use; once numba is loaded, at once."""
    with _LOCK:
        if _njit is not None:
            return cast(F, _njit(**_OPTIONS)(fn))
        kernel = Kernel(fn)
        _PENDING.append(kernel)
        return cast(F, kernel)


_threads = 1
_interpreted = False


def interpret() -> None:
    """Run the kernels as the plain Python they are written in, and never load numba:
    for a job so small that numba's start-up (its import and the first load of a cached
    kernel: most of a second) outweighs the loops (the command line decides, from the
    input's size). Every kernel runs unchanged, so the results are the same bits.
    Without effect once numba is loaded."""
    global _interpreted
    _interpreted = True


def interpreting() -> bool:
    """Whether :func:`interpret` was called (and numba is not loaded)."""
    return _interpreted and _njit is None


def use_threads(count: int) -> None:
    """How many threads a compiled pass that splits its work (the per-user pass) may run
    on: 1 by default (a trainer's process has its own threads); the command line gives
    each rank its share of the cores."""
    global _threads
    _threads = max(1, int(count))


def threads() -> int:
    """The threads set by :func:`use_threads`."""
    return _threads


def on_threads(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``function`` of each item, in the items' order, on :func:`threads` threads (on
    this one, in turn, with one thread or one item). For compiled passes that split
    their rows: numba's kernels release the GIL."""
    if _threads == 1 or len(items) < 2:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_threads, len(items))) as pool:
        return list(pool.map(function, items))


def load() -> None:
    """Import numba and compile (lazily, per signature, from numba's disk cache) every
    pending kernel; idempotent and thread-safe."""
    global _njit
    with _LOCK:
        if _njit is None:
            import numba
            from numba.extending import typeof_impl

            @typeof_impl.register(Kernel)
            def _typeof_kernel(kernel: Kernel, context: Any) -> Any:
                return numba.types.Dispatcher(kernel.dispatcher)

            _njit = numba.njit
        if not _PENDING:
            return
        for kernel in _PENDING:
            kernel.dispatcher = _njit(**_OPTIONS)(kernel.fn)
        done = {id(kernel): kernel for kernel in _PENDING}
        _PENDING.clear()
        for module in list(sys.modules.values()):
            if not getattr(module, "__name__", "").startswith("mpieval"):
                continue
            names = vars(module)
            for name, value in list(names.items()):
                if isinstance(value, Kernel) and id(value) in done:
                    names[name] = value.dispatcher
