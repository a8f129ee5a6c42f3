"""The ``auc`` kind: AUC, bucket error, RMSE, MAE, actual/predicted CTR, COPC, num."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.kernels import auc as kernels
from mpieval.metric import Input, Metric, Option, warn_undefined
from mpieval.state import Part, Summed
from mpieval.validation import (
    as_vector,
    auc_table_size,
    boolean,
    check_binary,
    check_interval,
    check_lengths,
    check_weight,
    is_binary,
)

DEFAULT_TABLE_SIZE = 1_000_000


@dataclass(frozen=True)
class AucResult:
    """Result of the ``auc`` kind. ``num`` is the sum of weights (the row count unweighted;
    the log line's ``num=%d`` rounds a fractional weight sum, JSON keeps it whole);
    NaN marks an undefined value."""

    auc: float
    bucket_error: float
    rmse: float
    mae: float
    num: float
    actual_ctr: float
    predicted_ctr: float
    copc: float
    positives: float
    rows: int
    table_size: int

    def to_dict(self) -> dict[str, Any]:
        fields = logline.json_fields(self)
        fields["num"] = int(self.num) if float(self.num).is_integer() else self.num
        fields["positives"] = (
            int(self.positives) if float(self.positives).is_integer() else self.positives
        )
        return {"kind": "auc", **fields}

    def to_log_line(self, name: str) -> str:
        v = logline.value
        return (
            f"{name}: auc={v(self.auc)} bucket_error={v(self.bucket_error)} "
            f"rmse={v(self.rmse)} num={round(self.num):d} mae={v(self.mae)} "
            f"actural_ctr={v(self.actual_ctr)} predict_ctr={v(self.predicted_ctr)} "
            f"copc={v(self.copc)}"
        )


def result_from_table(table: np.ndarray, sums: np.ndarray, comm: Comm | None = None) -> AucResult:
    """Every value of the ``auc`` kind from a (merged) table of shape (2, T) and its sums
    (abserr, sqrerr, pred sum, rows); with ``comm``, warns once per NaN cause.

    ``rmse = sqrt(sqrerr / num)``, ``mae = abserr / num``, ``actual_ctr = positives /
    num``, ``predicted_ctr = sum(pred) / num``, ``copc = actual_ctr / predicted_ctr``.
    """
    positives = float(table[1].sum())
    num = positives + float(table[0].sum())
    reasons = []
    if num == 0:
        reasons.append("no rows")
        auc = bucket_error = rmse = mae = actual = predicted = copc = math.nan
    else:
        auc = kernels.auc_from_table(table)
        if math.isnan(auc):
            reasons.append("auc is undefined with only one class")
        bucket_error = float(kernels.bucket_error_from_table(table[0], table[1]))
        if math.isnan(bucket_error):
            reasons.append("bucket_error is undefined: no bucket range reached the error bound")
        rmse = math.sqrt(sums[kernels.SUM_SQRERR] / num)
        mae = sums[kernels.SUM_ABSERR] / num
        actual = positives / num
        predicted = sums[kernels.SUM_PRED] / num
        if predicted == 0:
            reasons.append("copc is undefined: predicted ctr is 0")
            copc = math.nan
        else:
            copc = actual / predicted
    if reasons and comm is not None:
        warn_undefined(comm, "auc: " + "; ".join(reasons))
    return AucResult(
        auc=auc,
        bucket_error=bucket_error,
        rmse=rmse,
        mae=mae,
        num=num,
        actual_ctr=actual,
        predicted_ctr=predicted,
        copc=copc,
        positives=positives,
        rows=int(sums[kernels.SUM_ROWS]),
        table_size=table.shape[1],
    )


class AucMetric(Metric):
    """Abacus/Paddle ``BasicAucCalculator``: a histogram of ``table_size`` buckets per label.

    ``update(pred, label, weight=None)`` takes 1-D arrays of any numeric dtype: ``pred``
    in [0, 1]; ``label`` 0/1, or any value in [0, 1] with ``soft_labels=True``;
    ``weight`` >= 0. A soft label ``y`` adds ``w (1 - y)`` to the negative bucket and
    ``w y`` to the positive one.

    State: ``table`` (2, T): negatives then positives per bucket, and ``sums``: abserr,
    sqrerr, pred sum and rows; both merge by addition (``16 T + 32`` bytes, whatever the
    number of rows).
    """

    kind = "auc"
    inputs = (Input("pred"), Input("label"), Input("weight", optional=True, weight=True))
    options = (
        Option("table_size", DEFAULT_TABLE_SIZE, auc_table_size),
        Option("soft_labels", False, boolean),
    )
    table_size: int
    soft_labels: bool

    @classmethod
    def warm_up(cls) -> None:
        kernels.warm_up()

    def __init__(
        self,
        table_size: int = DEFAULT_TABLE_SIZE,
        *,
        soft_labels: bool = False,
        comm: Comm | Any | None = None,
    ) -> None:
        super().__init__(comm, table_size=table_size, soft_labels=soft_labels)

    def state_layout(self) -> dict[str, Part]:
        return {"table": Summed((2, self.table_size)), "sums": Summed((kernels.N_SUMS,))}

    def update(self, pred: Any, label: Any, weight: Any = None) -> None:
        """Add a batch of rows (local: no communication)."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            w = None if weight is None else as_vector("weight", weight)
            check_lengths(pred=p, label=y, weight=w)
            check_interval("pred", p, 0.0, 1.0)
            if self.soft_labels:
                check_interval("label", y, 0.0, 1.0)
            else:
                check_binary("label", y)
            if w is not None:
                check_weight("weight", w)
        binary = not self.soft_labels or is_binary(y)
        kernels.accumulate(self.state.summed("table"), self.state.summed("sums"), p, y, w,
                           binary=binary)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        return {"table": self.state.summed("table"), "sums": self.state.summed("sums")}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> AucResult:
        return result_from_table(sums["table"], sums["sums"], comm)
