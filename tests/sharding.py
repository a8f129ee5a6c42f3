"""Splitting one data set across the ranks of a test, unevenly, with an empty rank."""

from __future__ import annotations

import numpy as np


def uneven_bounds(n: int, size: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Row ranges for ``size`` ranks: random, uneven cuts; with 2+ ranks, rank 1 is empty."""
    if size == 1:
        return [(0, n)]
    cuts = np.sort(rng.integers(0, n + 1, size=size - 1))
    edges = [0, *cuts.tolist(), n]
    bounds = [(edges[i], edges[i + 1]) for i in range(size)]
    # Give rank 1's rows to rank 0 so that rank 1 has none.
    (a0, _), (_, b1) = bounds[0], bounds[1]
    bounds[0], bounds[1] = (a0, b1), (b1, b1)
    return bounds


def my_rows(arrays: dict[str, np.ndarray], rank: int, size: int, rng: np.random.Generator,
            scatter: bool = False) -> dict[str, np.ndarray]:
    """This rank's share of ``arrays``: contiguous uneven ranges, or, with ``scatter``,
    each row sent to a random rank (so one user's rows land on several ranks); rank 1
    gets nothing when there are 2+ ranks. ``rng`` must be seeded alike on every rank."""
    n = len(next(iter(arrays.values())))
    if scatter:
        owner = rng.integers(0, size, size=n)
        if size > 1:
            owner[owner == 1] = 0
        pick = owner == rank
        return {k: v[pick] for k, v in arrays.items()}
    lo, hi = uneven_bounds(n, size, rng)[rank]
    return {k: v[lo:hi] for k, v in arrays.items()}
