"""The ``ranking`` kind: per-user top-K ranking quality per tag (NDCG, NDCG@K, Recall@K,
MRR, MAP@K, hit rate@K), and with ``compare`` the paired differences of a model B.

``metric``: :class:`RankingMetric` and :class:`RankingResult` (rows kept per user,
:mod:`mpieval.user_rows`, moved to their owner rank at compute); ``kernels``: the values
of whole users; ``report``: the kind's section.
"""

from __future__ import annotations

from mpieval.declaration import COMPARE, COMPARED, PRED, TAG, UID, Input, Kind, Option
from mpieval.errors import InputError
from mpieval.validation import one_of, positive_int

DEFAULT_K = (5, 10, 20)
GAINS = ("linear", "exponential")


def cutoffs(name: str, value: object) -> tuple[int, ...]:
    """The ``k`` option: a non-empty list of positive integers, as a sorted tuple without
    repeats."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InputError(name, f"must be a list of positive integers, got {value!r}")
    items = list(value)
    if not items:
        raise InputError(name, "must list at least one cutoff")
    for item in items:
        try:
            positive_int(name, item)
        except InputError:
            raise InputError(name, f"must be a list of positive integers, got {value!r} "
                             f"({item!r} is not)") from None
    return tuple(sorted({int(item) for item in items}))


def cutoff_text(text: str) -> list[int | str]:
    """``--k 5,10``: the items of the comma list, as integers where they read as one (the
    option's check names any other)."""
    items = [item.strip() for item in text.split(",")]
    return [int(item) if item.lstrip("-").isdigit() else item for item in items]


KIND = Kind(
    name="ranking",
    summary="per-user NDCG, NDCG@K, Recall@K, MRR, MAP@K and hit rate@K per tag (graded "
            "relevance labels)",
    exports=("RankingMetric", "RankingResult"),
    metric="mpieval.kinds.ranking.metric:RankingMetric",
    declared_inputs=(UID, PRED, Input("label", help="label column"), TAG, COMPARE),
    declared_options=(
        Option("k", DEFAULT_K, cutoffs, parse=cutoff_text, metavar="LIST",
               help="ranking cutoffs, e.g. 5,10,20"),
        Option("gain", "linear", one_of(*GAINS), choices=GAINS,
               help="NDCG's gain of a row: linear (the label) or exponential "
                    "(2^label - 1)"),
        COMPARED,
    ),
    report="mpieval.kinds.ranking.report:SECTION",
    tag_required=("ndcg", "valid_user_count", "real_user_count", "real_ins_num"),
    required=("k",),
    counts=frozenset({"valid_user_count", "real_user_count", "real_ins_num"}),
    better={"ndcg": "higher", "ndcg@": "higher", "recall@": "higher", "mrr": "higher",
            "map@": "higher", "hit_rate@": "higher"},
    demo="""\
[metrics.grade_ranking]     # NDCG and recall of each user's rows on graded labels
kind = "ranking"
label = "grade"
tag = "tag"
k = [5, 10]
""",
)
