"""Many tags' sums over ranks (:func:`mpieval.metric.narrowed_sums`): parts every rank
holds as pairs summed by the tags' owners, others as digits, and the owners' sum given up
for digits when it overflows: the floats of the exact sums, on every rank, whatever the
parts' forms on each rank. The assertions hold for any ``comm.size``."""

from __future__ import annotations

import numpy as np
import pytest

from mpieval.comm import Comm
from mpieval.kernels import exact
from mpieval.metric import narrowed_sums

pytestmark = pytest.mark.mpi

WINDOW = (28, 11)


def _pairs(values: np.ndarray) -> exact.Pairs:
    """Pairs of shape ``values.shape[1:]``: each row of ``values`` added in turn."""
    pairs = exact.Pairs.zeros(*values.shape[1:])
    for row in values:
        assert not pairs.add(exact.Pairs(np.stack([row, np.zeros_like(row)], axis=-1)))
    pairs.window = WINDOW
    return pairs


def _summed(comm: Comm, parts: dict[str, exact.Sums], firsts: dict[str, int]
            ) -> dict[str, np.ndarray]:
    """What a metric's ``finish()`` rounds: the parts made ready, the narrowed ones summed
    over the ranks (one sum of each), the owners' sums as they are."""
    narrowed, first_digit, totals = narrowed_sums(parts, comm, firsts)
    assert not parts  # (each taken out as it is made ready)
    floats = {name: exact.rounded(comm.sum(part), first_digit[name])
              for name, part in narrowed.items()}
    floats.update({name: exact.rounded(part, first_digit[name]) for name, part in totals.items()})
    assert list(first_digit) == ["a", "b", "c"]
    return floats


@pytest.mark.parametrize("case", ["pairs", "one-rank-digits", "sum-overflows"])
def test_sums_over_ranks_are_the_exact_sums_whatever_their_form(comm: Comm, case: str) -> None:
    """Three parts of 1,500 blocks (values 2**-300 to 2**300 apart: most sums spill), each
    rank's rows of them: summed by their owners where every rank holds pairs; made digits
    on every rank where one rank holds digits (``one-rank-digits``: rank 0's part ``b``);
    and, where the owners' sum overflows though no rank's does (``sum-overflows``: each
    rank's block 7 near the largest float64), summed as digits: the rounded exact sums,
    inf where they pass float64's range."""
    rng = np.random.default_rng(36)
    blocks, shapes = 1500, {"a": 3, "b": 5, "c": 1}
    values = {name: rng.random((2 * comm.size, blocks, fields))
              * 2.0 ** rng.integers(-300, 301, (2 * comm.size, blocks, fields))
              for name, fields in shapes.items()}
    if case == "sum-overflows":
        values["a"][:, 7, 0] = 1.5e308 / 2  # each rank's two rows: 1.5e308 a rank
    want = {}
    for name, rows in values.items():
        digits = exact.accumulator(blocks, shapes[name])
        for row in rows:
            assert not exact.add_at(digits, np.arange(blocks), row)
        want[name] = exact.to_floats(digits)
    mine = {name: rows[2 * comm.rank: 2 * comm.rank + 2] for name, rows in values.items()}
    parts: dict[str, exact.Sums] = {name: _pairs(rows) for name, rows in mine.items()}
    firsts = dict.fromkeys(parts, WINDOW[0])
    if case == "one-rank-digits" and comm.rank == 0:
        parts["b"], firsts["b"] = exact.accumulator(blocks, shapes["b"]), 0
        for row in mine["b"]:
            exact.add_at(parts["b"], np.arange(blocks), row)
    got = _summed(comm, parts, firsts)
    for name in shapes:
        assert np.array_equal(got[name], want[name]), name
    if case == "sum-overflows" and comm.size > 1:
        assert got["a"][7, 0] == np.inf
    assert all(np.array_equal(other[name], got[name]) for other in comm.allgather(got)
               for name in shapes)
