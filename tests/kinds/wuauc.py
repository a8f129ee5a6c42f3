"""The ``wuauc`` kind's test fixture (:class:`kinds.KindFixture`)."""

from __future__ import annotations

import numpy as np

from kinds import KindFixture, preds, users

FIXTURE = KindFixture(
    rows=lambda rng, n: {"uid": users(rng, n), "pred": preds(rng, n),
                         "label": rng.integers(0, 2, n), "tag": rng.integers(0, 3, n),
                         "weight": rng.integers(0, 4, n).astype(np.float64),
                         "compare": preds(rng, n)},
    option_inputs=frozenset({"compare"}),  # tests/test_wuauc*.py, test_stats_cli.py
    out_of_range={"pred": -0.5, "label": 2, "weight": -1},
    variants=({"compare": "pred_b"},),
    columns={"uid": "uid", "pred": "pred", "label": "label", "tag": "tag"},
    configs={"users": {"tag": "tag", "compare": "pred_b"},
             "users_weighted": {"tag": "tag", "weight": "weight"}},
)
