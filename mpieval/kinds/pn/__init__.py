"""The ``pn`` kind: positive/negative pair order inside each uid (``metric``:
:class:`PnMetric`, :class:`PnResult`; ``kernels``: the per-user count; ``report``: its
section)."""

from __future__ import annotations

from mpieval.declaration import LABEL, PRED, UID, Kind, Option
from mpieval.validation import one_of

TIES_MODES = ("negative", "ignore", "half")

FIELDS = {
    "average_pn": "Average PN: positive pairs / negative pairs",
    "positive_pairs": "Positive pairs: same user, higher label has the higher pred",
    "negative_pairs": "Negative pairs: the higher label has the lower pred",
    "tie_pairs": "Tied pairs: equal preds",
    "ins_number": "Rows",
    "ties": "How ties count",
}

KIND = Kind(
    name="pn",
    summary="positive/negative pair order of preds inside each user (graded labels)",
    exports=("PnMetric", "PnResult"),
    metric="mpieval.kinds.pn.metric:PnMetric",
    declared_inputs=(UID, PRED, LABEL),
    declared_options=(Option("ties", "negative", one_of(*TIES_MODES), choices=TIES_MODES,
                             flag_name="--pn-ties", help="how tied pairs count"),),
    report="mpieval.kinds.pn.report:SECTION",
    required=("average_pn", "ins_number", "positive_pairs", "negative_pairs"),
    counts=frozenset({"ins_number", "positive_pairs", "negative_pairs", "tie_pairs"}),
    better={"average_pn": "higher"},
    demo="""\
[metrics.grade_pn]          # pair order inside each user on graded labels
kind = "pn"
label = "grade"
""",
)
