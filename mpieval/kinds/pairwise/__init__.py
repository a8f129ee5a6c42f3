"""The ``pairwise`` kind: label-combination counts of pair instances (``metric``:
:class:`PairwiseMetric`, :class:`PairwiseResult`; ``report``: its section)."""

from __future__ import annotations

from mpieval.declaration import WINDOW, Input, Kind

FIELDS = {
    "ins": "Pair instances (rows)",
    "same_label_click": "Both items clicked",
    "left_label_click": "Left item clicked only",
    "right_label_click": "Right item clicked only",
    "same_label_unclick": "Neither clicked",
}

KIND = Kind(
    name="pairwise",
    summary="label-combination counts of pair instances (left and right 0/1 labels)",
    exports=("PairwiseMetric", "PairwiseResult"),
    metric="mpieval.kinds.pairwise.metric:PairwiseMetric",
    declared_inputs=(Input("left_label", help="left item's 0/1 label column"),
                     Input("right_label", help="right item's 0/1 label column")),
    declared_options=(WINDOW,),
    report="mpieval.kinds.pairwise.report:SECTION",
    required=tuple(FIELDS),
    counts=frozenset(FIELDS),
    demo="""\
[metrics.pair_click]        # label combinations of pair instances
kind = "pairwise"
left_label = "left_label"
right_label = "right_label"
""",
)
