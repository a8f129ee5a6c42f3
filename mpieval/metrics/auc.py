"""The ``auc`` kind: AUC, bucket error, RMSE, MAE, actual/predicted CTR, COPC, num."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.kernels import auc as kernels
from mpieval.kernels import stats
from mpieval.metric import Input, Metric, Option, warn_undefined
from mpieval.state import Part, Summed
from mpieval.validation import (
    as_vector,
    boolean,
    check_binary,
    check_interval,
    check_lengths,
    check_weight,
    is_binary,
    positive_int,
)

DEFAULT_TABLE_SIZE = 1_000_000


INTERVAL_FIELDS = ("auc", "actual_ctr", "predicted_ctr", "copc")
_RANGES = {"auc": (0.0, 1.0), "actual_ctr": (0.0, 1.0), "predicted_ctr": (0.0, 1.0),
           "copc": (0.0, math.inf)}


@dataclass(frozen=True)
class AucResult:
    """Result of the ``auc`` kind. ``num`` is the sum of weights (the row count unweighted;
    the log line's ``num=%d`` rounds a fractional weight sum, JSON keeps it whole);
    NaN marks an undefined value.

    ``stderr`` holds the standard errors of ``INTERVAL_FIELDS`` (NaN where undefined);
    :meth:`ci` turns them into intervals at any level, ``to_dict`` writes the 95% ones
    as ``ci95``. The log line is the Abacus one and has none of the statistics."""

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
    logloss: float = math.nan
    ne: float = math.nan
    auprc: float = math.nan
    auc_tie_bound: float = math.nan
    roc_curve: list[list[float]] = field(default_factory=list)
    calibration_curve: list[list[float]] = field(default_factory=list)
    stderr: dict[str, float] = field(default_factory=dict)

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Wald intervals ``value -/+ z se`` of ``INTERVAL_FIELDS`` at ``level``, cut to
        each value's range; None where undefined."""
        return {name: stats.interval(getattr(self, name), self.stderr.get(name, math.nan),
                                     level, *_RANGES[name])
                for name in INTERVAL_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name in (f.name for f in dataclasses.fields(self)):
            value = getattr(self, name)
            if name in ("num", "positives"):
                fields[name] = int(value) if float(value).is_integer() else value
            elif name == "calibration_curve":
                fields[name] = [[p, c, int(r) if float(r).is_integer() else r]
                                for p, c, r in value]
            elif name != "stderr":
                fields[name] = logline.json_number(value)
        fields["ci95"] = {name: None if pair is None else list(pair)
                          for name, pair in self.ci(0.95).items()}
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
    (``kernels.SUM_FIELDS``); with ``comm``, warns once for all NaN causes.

    ``rmse = sqrt(sqrerr / num)``, ``mae = abserr / num``, ``actual_ctr = positives /
    num``, ``predicted_ctr = sum(pred) / num``, ``copc = actual_ctr / predicted_ctr``,
    ``logloss = sum w ce / num``, ``ne = logloss / H(actual_ctr)`` with ``H(r) = -(r ln r
    + (1 - r) ln(1 - r))`` (TorchRec's NE; undefined when the CTR is 0 or 1).
    """
    positives = float(table[1].sum())
    num = positives + float(table[0].sum())
    reasons = []
    nan = math.nan
    stderr: dict[str, float] = {}
    if num == 0:
        reasons.append("no rows")
        auc = bucket_error = rmse = mae = actual = predicted = copc = logloss = ne = nan
        auprc = tie_bound = nan
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
        logloss = sums[kernels.SUM_LOGLOSS] / num
        entropy = _entropy(actual)
        if entropy == 0:
            reasons.append("ne is undefined: actual ctr is 0 or 1")
            ne = nan
        else:
            ne = logloss / entropy
        auprc, tie_bound = (float(x) for x in kernels.ranking_from_table(table[0], table[1]))
        if math.isnan(auprc):
            reasons.append("auprc is undefined without positives")
        stderr = _stderrs(table, sums, positives, num, reasons, defined=not math.isnan(auc))
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
        logloss=logloss,
        ne=ne,
        auprc=auprc,
        auc_tie_bound=tie_bound,
        roc_curve=kernels.roc_from_table(table),
        calibration_curve=kernels.calibration_from_table(table),
        stderr=stderr,
    )


def _entropy(ctr: float) -> float:
    """``-(r ln r + (1 - r) ln(1 - r))``; 0 at 0 and 1."""
    if ctr <= 0 or ctr >= 1:
        return 0.0
    return -(ctr * math.log(ctr) + (1 - ctr) * math.log1p(-ctr))


def _stderrs(table: np.ndarray, sums: np.ndarray, positives: float, num: float,
             reasons: list[str], *, defined: bool) -> dict[str, float]:
    """Standard errors of ``INTERVAL_FIELDS`` (see :mod:`mpieval.kernels.stats`): DeLong's
    for the AUC from the table, the delta method for the ratios of sums. A reason is added
    for each interval left undefined whose value is defined."""
    _, variance = stats.delong_from_table(table[0], table[1])
    if defined and math.isnan(variance):
        reasons.append("auc ci95 needs a weight above 1 in each class")
    s, k = sums, kernels
    # actual ctr = sum w y / sum w; predicted = sum w p / sum w; copc = sum w y / sum w p;
    # frequency weights: sum w (a - r b)^2 over rows, so sum w y^2 etc. (no w^2 sums)
    actual = stats.ratio_stderr(positives, num, s[k.SUM_LABEL_SQ], positives, num)
    predicted = stats.ratio_stderr(s[k.SUM_PRED], num, s[k.SUM_PRED_SQ], s[k.SUM_PRED], num)
    copc = stats.ratio_stderr(positives, s[k.SUM_PRED], s[k.SUM_LABEL_SQ],
                              s[k.SUM_LABEL_PRED], s[k.SUM_PRED_SQ])
    if s[k.SUM_ROWS] < 2:
        reasons.append("ci95 of the ctrs and copc needs two rows")
        actual = predicted = copc = math.nan
    return {"auc": math.sqrt(variance), "actual_ctr": actual, "predicted_ctr": predicted,
            "copc": copc}


class AucMetric(Metric):
    """Abacus/Paddle ``BasicAucCalculator``: a histogram of ``table_size`` buckets per label.

    ``update(pred, label, weight=None)`` takes 1-D arrays of any numeric dtype: ``pred``
    in [0, 1]; ``label`` 0/1, or any value in [0, 1] with ``soft_labels=True``;
    ``weight`` >= 0. A soft label ``y`` adds ``w (1 - y)`` to the negative bucket and
    ``w y`` to the positive one.

    State: ``table`` (2, T): negatives then positives per bucket, and ``sums``
    (``kernels.SUM_FIELDS``: abserr, sqrerr, pred sum, rows, logloss sum and the three
    second-moment sums of the intervals); both merge by addition (``16 T + 64`` bytes,
    whatever the number of rows).
    """

    kind = "auc"
    inputs = (Input("pred"), Input("label"), Input("weight", optional=True, weight=True))
    options = (
        Option("table_size", DEFAULT_TABLE_SIZE, positive_int),
        Option("soft_labels", False, boolean),
    )
    table_size: int
    soft_labels: bool

    @classmethod
    def warm_up(cls) -> None:
        kernels.warm_up()
        stats.delong_from_table(np.ones(2), np.ones(2))

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
