"""The ``wuauc`` kind: per-user AUC per tag (WUAUC, UAUC), LogLoss, CTRs, COPC, counts,
exact however a user's rows are split over ranks.

``metric``: :class:`WuaucMetric` (rows kept per user, :mod:`mpieval.user_rows`, moved to
their owner rank at compute); ``result``: the per-tag blocks and their statistics;
``kernels``: the pass over users; ``report``: the kind's section.
"""

from __future__ import annotations

from mpieval.declaration import COMPARE, COMPARED, LABEL, PRED, TAG, UID, WEIGHT, WEIGHTS, Kind

TAG_REQUIRED = ("wuauc", "uauc", "logloss", "actual_ctr", "predicted_ctr", "copc",
                "real_user_count", "real_ins_num", "valid_user_count", "valid_ins_num")

KIND = Kind(
    name="wuauc",
    summary="per-user AUC per tag: WUAUC, UAUC, LogLoss, CTRs, COPC, user and row counts",
    exports=("WuaucMetric", "WuaucResult"),
    metric="mpieval.kinds.wuauc.metric:WuaucMetric",
    declared_inputs=(UID, PRED, LABEL, TAG, WEIGHT, COMPARE),
    declared_options=(COMPARED, WEIGHTS),
    report="mpieval.kinds.wuauc.report:SECTION",
    tag_required=TAG_REQUIRED,
    counts=frozenset({"real_user_count", "real_ins_num", "valid_user_count",
                      "valid_ins_num", "valid_click_num"}),
    better={"wuauc": "higher", "uauc": "higher", "click_wuauc": "higher", "copc": "one",
            "logloss": "lower"},
    demo="""\
[metrics.user_ctr]          # per-user AUC, one block per tag after "all"
kind = "wuauc"
uid = "uid"
tag = "tag"
""",
)
