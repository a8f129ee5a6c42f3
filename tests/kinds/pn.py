"""The ``pn`` kind's test fixture (:class:`kinds.KindFixture`)."""

from __future__ import annotations

import numpy as np

from kinds import KindFixture, preds, users

FIXTURE = KindFixture(
    rows=lambda rng, n: {"uid": users(rng, n), "pred": preds(rng, n),
                         "label": rng.integers(0, 4, n).astype(np.float64)},  # graded
    options={"ties": "half"},
    columns={"uid": "uid", "pred": "pred", "label": "grade"},
    configs={"grades": {"label": "grade", "ties": "half"}},
)
