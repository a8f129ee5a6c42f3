"""Windowed values over the ranks of ``mpiexec -n N``: each rank's window is its own last
``window`` rows (a rank with no rows has an empty one), and the job's window values are
those of one process fed every rank's window. Every assertion holds for any N."""

from __future__ import annotations

import math
import pickle

import pytest
from sharding import uneven_bounds
from test_window import CASES, batches, computed, feed, last, window_rows

from mpieval import checkpoint
from mpieval.comm import Comm

pytestmark = pytest.mark.mpi

WINDOW = 150


def close(a: object, b: object) -> bool:
    """The same JSON values; floats to 1e-12 (ranks sum in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def shifted(bounds: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    return [(a + start, b + start) for a, b in bounds]


@pytest.mark.parametrize("case", CASES)
def test_each_rank_windows_its_own_last_rows(comm, rng, case):
    make, data = CASES[case]
    n = 2000
    rows = data(rng, n)
    ranges = uneven_bounds(n, comm.size, rng)  # uneven; rank 1 has no rows
    lo, hi = ranges[comm.rank]
    metric = make(comm, WINDOW)
    feed(metric, rows, shifted(batches(hi - lo, 64), lo))
    result = computed(metric)

    every_window = make(Comm.local(), None)
    lifetime = make(Comm.local(), None)
    for a, b in ranges:
        feed(every_window, rows, shifted(last(batches(b - a, 64), WINDOW), a))
        feed(lifetime, rows, shifted(batches(b - a, 64), a))
    got = result.to_dict()
    window = got.pop("window")
    assert close(got, computed(lifetime).to_dict())
    assert close(window, {k: v for k, v in computed(every_window).to_dict().items()
                          if k != "kind"})
    kept = sum(min(WINDOW, b - a) for a, b in ranges)
    assert result.window is not None
    assert window_rows(case, result) == kept


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("saved_ranks", [1, 2, 3])
def test_a_checkpoint_of_n_ranks_keeps_the_window_on_this_many(comm, rng, case, saved_ranks):
    """Saved by ``saved_ranks`` processes, loaded here shared out: the job's window is
    the saved job's (every saved rank's last rows); then ``WINDOW`` new rows on each rank
    make each rank's window its new rows alone."""
    make, data = CASES[case]
    n = 1200
    rows = data(rng, n)
    ranges = uneven_bounds(n, saved_ranks, rng)
    saved = []
    for a, b in ranges:  # the earlier job, one process at a time
        writer = feed(make(Comm.local(), WINDOW), rows, shifted(batches(b - a, 100), a))
        saved.append(pickle.loads(pickle.dumps(writer.state_dict())))
    metric = make(comm, WINDOW)
    metric.load_state_dicts([saved[i] for i in checkpoint.shares(saved_ranks, comm.rank,
                                                                  comm.size)])
    every_window = make(Comm.local(), None)
    for a, b in ranges:
        feed(every_window, rows, shifted(last(batches(b - a, 100), WINDOW), a))
    lifetime = feed(make(Comm.local(), None), rows, [(0, n)])
    result = computed(metric)
    assert result.window is not None
    assert close(result.window.to_dict(), computed(every_window).to_dict())
    got = result.to_dict()
    got.pop("window")
    assert close(got, computed(lifetime).to_dict())

    new = data(rng, WINDOW * comm.size)
    mine = slice(comm.rank * WINDOW, (comm.rank + 1) * WINDOW)
    metric.update(**{name: column[mine] for name, column in new.items()})
    result = computed(metric)
    expected = make(Comm.local(), None)
    for rank in range(comm.size):
        feed(expected, new, [(rank * WINDOW, (rank + 1) * WINDOW)])
    assert result.window is not None
    assert close(result.window.to_dict(), computed(expected).to_dict())
