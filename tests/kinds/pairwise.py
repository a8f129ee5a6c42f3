"""The ``pairwise`` kind's test fixture (:class:`kinds.KindFixture`)."""

from __future__ import annotations

from kinds import KindFixture

FIXTURE = KindFixture(
    rows=lambda rng, n: {"left_label": rng.integers(0, 2, n),
                         "right_label": rng.integers(0, 2, n)},
    out_of_range={"left_label": 2, "right_label": -1},
    row_counts=frozenset({"ins"}),
    variants=({"window": 500},),
    columns={"left_label": "left", "right_label": "right"},
    configs={"pairs": {}},
)
