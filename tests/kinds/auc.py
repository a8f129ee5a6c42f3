"""The ``auc`` kind's test fixture (:class:`kinds.KindFixture`)."""

from __future__ import annotations

import numpy as np

from kinds import KindFixture, preds

FIXTURE = KindFixture(
    rows=lambda rng, n: {"pred": preds(rng, n), "label": rng.integers(0, 2, n),
                         "weight": rng.integers(0, 4, n).astype(np.float64),
                         "compare": preds(rng, n)},
    option_inputs=frozenset({"compare"}),  # tests/test_auc_stats*.py, test_stats_cli.py
    out_of_range={"pred": 1.5, "label": 2, "weight": -1},
    row_counts=frozenset({"rows"}),
    options={"table_size": 1000},
    fast_options={"table_size": 64},
    variants=({"compare": "pred_b"}, {"window": 500}),
    columns={"pred": "pred", "label": "label"},
    configs={
        "ctr": {"compare": "pred_b", "table_size": 1000},
        "ctr_weighted": {"weight": "weight"},
        "empty": {"filters": {"tag": "nowhere"}},  # no row passes: undefined values are null
    },
)
