"""The ``ranking`` kind's test fixture (:class:`kinds.KindFixture`)."""

from __future__ import annotations

from kinds import KindFixture, preds, users

FIXTURE = KindFixture(
    # many rows a user: recall@10 of a tag then has a spread (its interval is defined)
    rows=lambda rng, n: {"uid": users(rng, n, 50), "pred": preds(rng, n),
                         "label": rng.integers(0, 4, n) * (rng.random(n) < 0.4) / 2,  # graded
                         "tag": rng.integers(0, 3, n), "compare": preds(rng, n)},
    option_inputs=frozenset({"compare"}),  # tests/test_ranking*.py
    out_of_range={"label": -0.5},
    options={"k": (1, 3, 10), "gain": "exponential"},
    variants=({"compare": "pred_b"}, {"gain": "exponential"}),
    columns={"uid": "uid", "pred": "pred", "label": "label", "tag": "tag"},
    configs={"ranked": {"label": "grade", "tag": "tag", "k": [1, 3], "gain": "exponential",
                        "compare": "pred_b"}},
)
