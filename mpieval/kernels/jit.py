"""The one switch for compiled loops.

Two pieces of mpieval are inherently sequential and cannot be written as whole-array
numpy operations without changing their meaning: the seed's bucket-error sweep (each
bucket range starts where the previous one ended) and the per-user merge count of PN.
They are compiled with numba (``nopython``, cached on disk, numpy's float error model so
that ``0/0`` is NaN exactly as in the C++ original).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numba

F = TypeVar("F", bound=Callable[..., object])


def compiled(fn: F) -> F:
    """Compile ``fn`` with numba: no Python objects, cached, C-like float semantics."""
    return numba.njit(cache=True, nogil=True, error_model="numpy")(fn)  # type: ignore[return-value]
