"""The threads of the compiled passes that split their rows.

The kernels are compiled ahead of time into the extension module ``mpieval._core`` (C++
sources in ``mpieval/_core/``, built by ``pip install``); they release the GIL, so a pass
that splits its rows runs its slices on Python threads (:func:`on_threads`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_threads = 1


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
    their rows: the kernels release the GIL."""
    if _threads == 1 or len(items) < 2:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_threads, len(items))) as pool:
        return list(pool.map(function, items))
