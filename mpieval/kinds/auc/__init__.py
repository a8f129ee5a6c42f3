"""The ``auc`` kind: Abacus' ``BasicAucCalculator`` over a histogram table (AUC, bucket
error, RMSE, MAE, actual and predicted CTR, COPC, num) and its statistics.

``metric``: :class:`AucMetric` and :class:`AucResult`; ``kernels``: the table and its
sweeps; ``delong``: DeLong's variance and the paired test from the table;
``importance``: the squared weights and effective sizes of ``weights="importance"``;
``report``: the kind's section of a report page.
"""

from __future__ import annotations

from mpieval.declaration import (
    COMPARE,
    COMPARED,
    LABEL,
    PRED,
    WEIGHT,
    WEIGHTS,
    WINDOW,
    Kind,
    Option,
)
from mpieval.validation import auc_table_size, boolean, integer_text

DEFAULT_TABLE_SIZE = 1_000_000

KIND = Kind(
    name="auc",
    summary="AUC, bucket error, RMSE, MAE, actual/predicted CTR, COPC over a histogram",
    exports=("AucMetric", "AucResult"),
    metric="mpieval.kinds.auc.metric:AucMetric",
    declared_inputs=(PRED, LABEL, WEIGHT, COMPARE),
    declared_options=(
        Option("table_size", DEFAULT_TABLE_SIZE, auc_table_size, parse=integer_text, metavar="N",
               help="histogram buckets"),
        Option("soft_labels", False, boolean, parse=None,
               help="accept labels anywhere in [0, 1]"),
        COMPARED,
        WEIGHTS,
        WINDOW,
    ),
    report="mpieval.kinds.auc.report:SECTION",
    required=("auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr",
              "copc"),
    counts=frozenset({"num", "rows", "positives"}),
    better={"auc": "higher", "auprc": "higher", "copc": "one", "ece": "lower",
            "logloss": "lower", "ne": "lower", "ne_recalibrated": "lower",
            "bucket_error": "lower", "rmse": "lower", "mae": "lower", "lift": "higher"},
    demo="""\
[metrics.item_sim]          # AUC and the rest of the Abacus line over every row
kind = "auc"
pred = "pred"
label = "label"

[metrics.item_sim_search]   # the same model on one tag: an equality filter
kind = "auc"
filters = { tag = "search" }
""",
)
