"""The ``auc`` kind: AUC, bucket error, RMSE, MAE, actual/predicted CTR, COPC, num."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError, OptionHint
from mpieval.kernels import exact, stats
from mpieval.kinds.auc import DEFAULT_TABLE_SIZE, KIND, delong, importance, kernels
from mpieval.metric import Metric, warn_undefined, window_dict
from mpieval.state import Part, Rows, State, Summed
from mpieval.validation import (
    as_vector,
    binary_uint8,
    check_interval,
    check_lengths,
    check_weight,
    is_binary,
)

F = TypeVar("F")

INTERVAL_FIELDS = ("auc", "actual_ctr", "predicted_ctr", "copc")
_RANGES = {"auc": (0.0, 1.0), "actual_ctr": (0.0, 1.0), "predicted_ctr": (0.0, 1.0),
           "copc": (0.0, math.inf)}


_COMPARED = ("auc", "copc", "bucket_error", "rmse", "mae", "predicted_ctr", "logloss", "ne",
             "auprc", "roc_curve", "calibration_curve", "ece", "pr_curve", "score_histogram")


@dataclass(frozen=True)
class AucComparison:
    """Model B (pred column ``pred``) against model A on the same rows: B's values
    (``result``), ``auc_diff = AUC_B - AUC_A`` and its standard error by the paired DeLong
    test; :meth:`ci` gives the interval at any level, ``p`` the two-sided p-value."""

    pred: str
    result: AucResult
    auc_diff: float
    auc_diff_stderr: float

    def ci(self, level: float = 0.95) -> tuple[float, float] | None:
        """``auc_diff -/+ t se`` (Student's t with ``min(P, N) - 1`` degrees of freedom,
        ``P``, ``N`` the class totals, or their effective sizes under importance weights),
        cut to [-1, 1]; None below :data:`mpieval.kernels.stats.MIN_CLASS` in either class
        or with a spread of 0."""
        return stats.cluster_interval(self.auc_diff, self.auc_diff_stderr, self._units,
                                      level, -1.0, 1.0)

    @property
    def p(self) -> float:
        """The two-sided p-value of ``auc_diff`` against the t of :meth:`ci`; NaN where
        the interval is None."""
        return stats.cluster_p(self.auc_diff, self.auc_diff_stderr, self._units)

    @property
    def _units(self) -> float:
        """The smaller class size (:attr:`AucResult.class_sizes`: the t's degrees of
        freedom + 1); 0 (no interval) when it is below
        :data:`mpieval.kernels.stats.MIN_CLASS`."""
        smaller = min(self.result.class_sizes)
        return smaller if smaller >= stats.MIN_CLASS else 0.0

    def to_dict(self) -> dict[str, Any]:
        b = self.result.to_dict()
        pair = self.ci(0.95)
        return {"pred": self.pred, **{name: b[name] for name in _COMPARED},
                "ci95": b["ci95"], "auc_diff": logline.json_number(self.auc_diff),
                "auc_diff_ci95": None if pair is None else list(pair),
                "auc_diff_p": logline.json_number(self.p)}

    def to_log_line(self, name: str) -> str:
        """``NAME: compare=COL auc=%g copc=%g auc_diff=%g auc_diff_low=%g
        auc_diff_high=%g auc_diff_p=%g`` (``nan`` where undefined)."""
        v = logline.value
        low, high = self.ci(0.95) or (math.nan, math.nan)
        return (f"{name}: compare={self.pred} auc={v(self.result.auc)} "
                f"copc={v(self.result.copc)} auc_diff={v(self.auc_diff)} "
                f"auc_diff_low={v(low)} auc_diff_high={v(high)} auc_diff_p={v(self.p)}")


FIGURES = ("roc_curve", "calibration_curve", "ece", "pr_curve", "score_histogram")
LAZY_FIGURES_BUCKETS = 1 << 16  # filled buckets a result may keep for figures not yet drawn


class AucFigures:
    """The figures (:data:`FIGURES`) of a merged table, each drawn once, when first asked
    for, from its filled buckets (``buckets``,
    :class:`~mpieval.kinds.auc.kernels.FilledBuckets`: 24 bytes a bucket), which are let
    go once every figure is drawn. A table of more than :data:`LAZY_FIGURES_BUCKETS`
    filled buckets has its figures drawn at once (a large run's, where they cost little
    beside it), so that a result kept holds at most about 1.5 MB of buckets, or the
    figures alone."""

    def __init__(self, buckets: kernels.FilledBuckets) -> None:
        self.buckets: kernels.FilledBuckets | None = buckets
        self._drawn: dict[str, Any] = {}
        if len(buckets.index) > LAZY_FIGURES_BUCKETS:
            for name in FIGURES:
                self.drawn(name)

    def drawn(self, name: str) -> Any:
        """The figure ``name`` (one of :data:`FIGURES`), drawn now if it was not."""
        if name not in self._drawn:
            if name == "ece":
                figure: Any = kernels.expected_calibration_error(
                    self.drawn("calibration_curve"))
            else:
                assert self.buckets is not None  # kept until every figure is drawn
                figure = getattr(kernels, _DRAWN_BY[name])(self.buckets).tolist()
            self._drawn[name] = figure
            if len(self._drawn) == len(FIGURES):
                self.buckets = None
        return self._drawn[name]


# The kernel that draws each figure from the filled buckets (looked up when called).
_DRAWN_BY = {"roc_curve": "roc", "calibration_curve": "calibration",
             "pr_curve": "precision_recall", "score_histogram": "histogram"}


class _Figure(Generic[F]):
    """A figure of :class:`AucResult`, read like an attribute: drawn by its ``figures``
    when first read, ``empty`` without them."""

    def __init__(self, empty: F, doc: str) -> None:
        self.empty = empty
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, result: AucResult | None, owner: type | None = None) -> F:
        if result is None:  # the class's attribute: for help() and the docs
            return self  # type: ignore[return-value]
        drawn: F = self.empty if result.figures is None else result.figures.drawn(self.name)
        return drawn


@dataclass(frozen=True)
class AucResult:
    """Result of the ``auc`` kind. ``num`` is the sum of weights (the row count unweighted;
    the log line's ``num=%d`` rounds a fractional weight sum, JSON keeps it whole);
    NaN marks an undefined value.

    ``stderr`` holds the standard errors of ``INTERVAL_FIELDS`` (NaN where undefined);
    :meth:`ci` turns them into intervals at any level, ``to_dict`` writes the 95% ones
    as ``ci95``. ``weights``: how the intervals read the weights (``"frequency"`` or
    ``"importance"``); under importance, ``effective`` holds the classes' effective
    sizes and the rows of the CTR's interval (:mod:`mpieval.kinds.auc.importance`; not in
    JSON). ``window``: the same values over the recent window (``window=``), or None. The
    log line is the Abacus one (lifetime) and has none of the statistics.

    The figures (:data:`FIGURES`: ``roc_curve``, ``calibration_curve``, ``ece``,
    ``pr_curve``, ``score_histogram``) come from ``figures`` (:class:`AucFigures`: drawn
    from the merged table when first read; ``to_dict()`` reads them, the log line does
    not); empty (``ece`` NaN) without it."""

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
    weights: str = "frequency"
    logloss: float = math.nan
    ne: float = math.nan
    auprc: float = math.nan
    auc_tie_bound: float = math.nan
    stderr: dict[str, float] = field(default_factory=dict)
    effective: importance.Effective | None = None
    compare: AucComparison | None = None
    window: AucResult | None = None
    figures: AucFigures | None = field(default=None, repr=False, compare=False)

    roc_curve = _Figure[list[list[float]]](
        [], "ROC points ``[fpr, tpr]`` (:func:`mpieval.kinds.auc.kernels.roc_from_table`).")
    calibration_curve = _Figure[list[list[float]]](
        [], "Calibration bins ``[mean_pred, actual_ctr, rows]`` "
        "(:func:`mpieval.kinds.auc.kernels.calibration_from_table`).")
    ece = _Figure[float](
        math.nan, "The expected calibration error of :attr:`calibration_curve` "
        "(:func:`mpieval.kinds.auc.kernels.expected_calibration_error`).")
    pr_curve = _Figure[list[list[float]]](
        [], "Precision-recall points ``[recall, precision]`` "
        "(:func:`mpieval.kinds.auc.kernels.pr_from_table`).")
    score_histogram = _Figure[list[list[float]]](
        [], "Score distributions by class ``[pred_low, pred_high, negatives, positives]`` "
        "(:func:`mpieval.kinds.auc.kernels.histogram_from_table`).")

    @property
    def class_sizes(self) -> tuple[float, float]:
        """``(P, N)``, the class totals, or under importance weights their effective sizes
        ``(P_e, N_e)``: what the AUC's t and :data:`~mpieval.kernels.stats.MIN_CLASS`
        read."""
        if self.effective is None:
            return self.positives, self.num - self.positives
        return self.effective.positives, self.effective.negatives

    @property
    def rate_rows(self) -> float:
        """The rows of the CTR's Wilson interval: ``num``, or under importance weights
        :func:`mpieval.kinds.auc.importance.rate_rows`."""
        return self.num if self.effective is None else self.effective.rate_rows

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Intervals of ``INTERVAL_FIELDS`` at ``level``; None where undefined.

        - ``auc``: DeLong's on the logit scale (:func:`mpieval.kernels.stats.logit_interval`,
          within (0, 1)) with Student's t of ``min(P, N) - 1`` degrees of freedom (``P``,
          ``N`` the class totals: the smaller class bounds how well the spread is known);
          None below :data:`mpieval.kernels.stats.MIN_CLASS` in either class, or with a
          spread of 0.
        - ``actual_ctr``: Wilson's score interval of ``positives / num`` (valid at 0 and at
          all positives).
        - ``predicted_ctr``: Wald ``value -/+ z se`` cut to [0, 1]; None with a spread of
          0 (every pred equal).
        - ``copc``: the ``actual_ctr`` interval over ``predicted_ctr``: not [0, 0] without
          positives (the predicted CTR's own spread is left out: it is small beside the
          labels' one).
        The ctrs' and copc's need a total weight of 2 (two rows).

        Under importance weights (``weights="importance"``) the class totals are their
        effective sizes (:attr:`class_sizes`) and Wilson's rows :attr:`rate_rows`."""
        auc_stderr = self.stderr.get("auc", math.nan)
        smaller = min(self.class_sizes)
        if smaller < stats.MIN_CLASS:
            auc_stderr = math.nan
        rows = self.rate_rows
        enough = rows >= 2 and not math.isnan(self.stderr.get("actual_ctr", math.nan))
        # positives / num over ``rows`` rows: positives themselves when rows is num
        actual = (stats.wilson_interval(self.positives * (rows / self.num), rows, level)
                  if enough else None)
        copc = None
        if actual is not None and self.predicted_ctr > 0:
            copc = (actual[0] / self.predicted_ctr, actual[1] / self.predicted_ctr)
        predicted_stderr = self.stderr.get("predicted_ctr", math.nan)
        predicted = None if predicted_stderr == 0 else stats.interval(
            self.predicted_ctr, predicted_stderr, level, *_RANGES["predicted_ctr"])
        quantile = None if math.isnan(auc_stderr) else stats.t_value(level, smaller - 1)
        return {"auc": stats.logit_interval(self.auc, auc_stderr, level, quantile),
                "actual_ctr": actual, "predicted_ctr": predicted, "copc": copc}

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        for name in _JSON_FIELDS:
            value = getattr(self, name)
            if name in ("num", "positives"):
                fields[name] = logline.json_count(value)
            elif name == "calibration_curve":
                fields[name] = [[p, c, _count(r)] for p, c, r in value]
            elif name == "score_histogram":
                fields[name] = [[low, high, _count(n), _count(p)] for low, high, n, p in value]
            elif name == "compare":
                if value is not None:
                    fields[name] = value.to_dict()
            elif name == "window":
                if value is not None:
                    fields[name] = window_dict(value)
            elif name == "weights":
                fields[name] = value
            else:
                fields[name] = logline.json_number(value)
        fields["ci95"] = {name: None if pair is None else list(pair)
                          for name, pair in self.ci(0.95).items()}
        return {"kind": KIND.name, **fields}

    def to_log_line(self, name: str) -> str:
        v = logline.value
        return (
            f"{name}: auc={v(self.auc)} bucket_error={v(self.bucket_error)} "
            f"rmse={v(self.rmse)} num={logline.rounded_count(self.num)} mae={v(self.mae)} "
            f"actural_ctr={v(self.actual_ctr)} predict_ctr={v(self.predicted_ctr)} "
            f"copc={v(self.copc)}"
        ) + ("" if self.compare is None else "\n" + self.compare.to_log_line(name))


# The JSON block's fields, in order (then ``ci95``).
_JSON_FIELDS = ("auc", "bucket_error", "rmse", "mae", "num", "actual_ctr", "predicted_ctr",
                "copc", "positives", "rows", "table_size", "weights", "logloss", "ne", "auprc",
                "auc_tie_bound", *FIGURES, "compare", "window")


def _count(value: float) -> float:
    """A weight sum, as an integer when it is whole."""
    return int(value) if float(value).is_integer() else value


def values_from_table(table: np.ndarray, sums: np.ndarray, reasons: list[str],
                      squares: np.ndarray | None = None) -> AucResult:
    """Every value of the ``auc`` kind from a (merged) table and its sums; the cause of
    each NaN is added to ``reasons``. ``squares``: the sums of squared weights
    (:data:`mpieval.kinds.auc.importance.FIELDS`, as floats) under importance weights,
    else None (frequency weights).

    ``rmse = sqrt(sqrerr / num)``, ``mae = abserr / num``, ``actual_ctr = positives /
    num``, ``predicted_ctr = sum(pred) / num``, ``copc = actual_ctr / predicted_ctr``,
    ``logloss = sum w ce / num``, ``ne = logloss / H(actual_ctr)`` with ``H(r) = -(r ln r
    + (1 - r) ln(1 - r))`` (TorchRec's NE; undefined when the CTR is 0 or 1).
    """
    positives = float(table[1].sum())
    num = positives + float(table[0].sum())
    _check_weight_range(positives, num - positives)
    filled = kernels.FilledBuckets.of(table[0], table[1])
    nan = math.nan
    stderr: dict[str, float] = {}
    effective = (None if squares is None
                 else importance.effective(positives, num - positives, squares))
    if num == 0:
        reasons.append("no rows")
        auc = bucket_error = rmse = mae = actual = predicted = copc = logloss = ne = nan
        auprc = tie_bound = nan
    else:
        auc = kernels.auc_from_table(table)
        if math.isnan(auc):
            reasons.append("auc is undefined with only one class")
        bucket_error = kernels.bucket_error(filled)
        if math.isnan(bucket_error):
            reasons.append("bucket_error is undefined: no bucket range reached the error bound")
        rmse = math.sqrt(sums[kernels.SUM_SQRERR] / num)
        mae = float(sums[kernels.SUM_ABSERR]) / num
        actual = positives / num
        predicted = float(sums[kernels.SUM_PRED]) / num
        if predicted == 0:
            reasons.append("copc is undefined: predicted ctr is 0")
            copc = math.nan
        else:
            copc = actual / predicted
        logloss = float(sums[kernels.SUM_LOGLOSS]) / num
        entropy = _entropy(actual)
        if entropy == 0:
            reasons.append("ne is undefined: actual ctr is 0 or 1")
            ne = nan
        else:
            ne = logloss / entropy
        units = None if effective is None else (effective.positives, effective.negatives)
        _, variance, auprc, tie_bound = (
            float(x) for x in delong.delong_sweep(filled, units))
        if math.isnan(auprc):
            reasons.append("auprc is undefined without positives")
        stderr = _stderrs(variance, sums, positives, num, reasons, defined=not math.isnan(auc),
                          squares=squares, effective=effective)
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
        weights="frequency" if squares is None else "importance",
        logloss=logloss,
        ne=ne,
        auprc=auprc,
        auc_tie_bound=tie_bound,
        stderr=stderr,
        effective=effective,
        figures=AucFigures(filled),
    )


def _check_weight_range(positives: float, negatives: float) -> None:
    """The weighted class totals and their product (the AUC's denominator, ``P N``) fit
    in float64; else an :class:`InputError` of ``weight`` (raised alike on every rank:
    the totals are the job's). Weights that large (1e300) would give ``auc=nan``."""
    with np.errstate(over="ignore"):
        product = positives * negatives
    if not (math.isfinite(positives + negatives) and math.isfinite(product)):
        raise InputError("weight", f"too large: the weighted positives ({positives:.3g}) "
                         f"times the weighted negatives ({negatives:.3g}) pass float64's "
                         "range (1.8e308), so auc cannot be computed; scale the weights "
                         "down (auc, the ctrs and copc do not change when every weight is "
                         "multiplied by one number)")


def _entropy(ctr: float) -> float:
    """``-(r ln r + (1 - r) ln(1 - r))``; 0 at 0 and 1."""
    if ctr <= 0 or ctr >= 1:
        return 0.0
    return -(ctr * math.log(ctr) + (1 - ctr) * math.log1p(-ctr))


def _stderrs(variance: float, sums: np.ndarray, positives: float, num: float,
             reasons: list[str], *, defined: bool, squares: np.ndarray | None = None,
             effective: importance.Effective | None = None) -> dict[str, float]:
    """Standard errors of ``INTERVAL_FIELDS`` (see :mod:`mpieval.kernels.stats`): DeLong's
    for the AUC from the table, the delta method for the ratios of sums (under importance
    weights, ``squares`` and ``effective``: the same sums with squared weights). A reason
    is added for each interval left undefined whose value is defined."""
    size = "an effective size" if effective is not None else "a weight"
    smaller = min(positives, num - positives) if effective is None else min(
        effective.positives, effective.negatives)
    if defined and math.isnan(variance):
        reasons.append(f"auc ci95 needs {size} above 1 in each class")
    elif defined and smaller < stats.MIN_CLASS:
        reasons.append(f"auc ci95 needs {size} of {stats.MIN_CLASS} in each class")
    elif defined and variance == 0:
        reasons.append("auc ci95 is null: DeLong's spread is 0 (every positive above every "
                       "negative, or the reverse)")
    s, k = sums, kernels
    # actual ctr = sum w y / sum w; predicted = sum w p / sum w; copc = sum w y / sum w p;
    # frequency weights: sum w (a - r b)^2 over rows, so sum w y^2 etc. (no w^2 sums)
    actual = stats.ratio_stderr(positives, num, s[k.SUM_LABEL_SQ], positives, num)
    predicted = stats.ratio_stderr(s[k.SUM_PRED], num, s[k.SUM_PRED_SQ], s[k.SUM_PRED], num)
    copc = stats.ratio_stderr(positives, s[k.SUM_PRED], s[k.SUM_LABEL_SQ],
                              s[k.SUM_LABEL_PRED], s[k.SUM_PRED_SQ])
    if squares is not None and effective is not None:
        # importance: sum w^2 (a - r b)^2 over the rows' class parts (module importance)
        q, i = squares, importance
        all_sq = q[i.POSITIVE_SQ] + q[i.NEGATIVE_SQ]
        actual = stats.ratio_stderr(positives, num, q[i.POSITIVE_SQ], q[i.POSITIVE_SQ], all_sq)
        predicted = stats.ratio_stderr(s[k.SUM_PRED], num, q[i.PRED_SQ], q[i.PRED], all_sq)
        copc = stats.ratio_stderr(positives, s[k.SUM_PRED], q[i.POSITIVE_SQ],
                                  q[i.POSITIVE_PRED], q[i.PRED_SQ])
        if not effective.rate_rows >= 2:
            reasons.append("ci95 of the ctrs and copc needs an effective size of 2")
            actual = predicted = copc = math.nan
    elif num < 2:  # frequency weights: a row of weight 2 is two rows
        reasons.append("ci95 of the ctrs and copc needs a weight of 2 (two rows)")
        actual = predicted = copc = math.nan
    if predicted == 0:
        reasons.append("predicted_ctr ci95 is null: every pred is equal (a spread of 0)")
    return {"auc": math.sqrt(variance), "actual_ctr": actual, "predicted_ctr": predicted,
            "copc": copc}


SOFT_LABELS = OptionHint("soft_labels", True, "for labels in [0, 1]")
"""What a label other than 0 or 1 is refused with: ``soft_labels=True`` would accept it."""


class AucMetric(Metric):
    """Abacus/Paddle ``BasicAucCalculator``: a histogram of ``table_size`` buckets per label.

    ``update(pred, label, weight=None)`` takes 1-D arrays of any numeric dtype: ``pred``
    in [0, 1]; ``label`` 0/1, or any value in [0, 1] with ``soft_labels=True``;
    ``weight`` >= 0. A soft label ``y`` adds ``w (1 - y)`` to the negative bucket and
    ``w y`` to the positive one.

    State: ``table`` (2, T): negatives then positives per bucket, and ``sums``
    (``kernels.SUM_FIELDS``: abserr, sqrerr, pred sum, rows, logloss sum and the three
    second-moment sums of the intervals), each an exact accumulator
    (:mod:`mpieval.kernels.exact`: the same bits on any number of ranks); both merge by
    addition (``16 T + 4352`` bytes, whatever the number of rows). With
    ``weights="importance"`` also ``weight_squares``, the sums of squared weights its
    intervals read (:mod:`mpieval.kinds.auc.importance`: 2720 bytes; comparing, B's too
    in ``weight_squares_b``).

    With ``compare="NAME"`` (model B's pred, named so in the result), ``update`` also
    takes ``compare``, B's preds of the same rows: B has its own ``table_b`` and
    ``sums_b``, and each row's buckets in both models are kept (``pairs``: two int32
    buckets and the row's positive and negative weight, float32 until a weighted or soft
    row widens them to float64; 16 bytes a row) for the paired DeLong test, a second
    sweep at compute over the rows against both merged tables.

    With ``window=N`` (:data:`~mpieval.metric.WINDOW`), the metric also keeps a copy of
    the last ``N`` rows of this rank (pred, label, and weight and compare when given, in
    their dtypes: 5 bytes a row for a float32 pred and an int8 label) and
    ``compute()`` adds ``window``, the values over those rows of every rank; counting
    them into a second table makes ``compute()`` cost about twice as much.

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use
        (:meth:`mpieval.comm.Comm.resolve`).
    table_size : int, default 1,000,000
        Buckets of the histogram, at most 2**27.
    soft_labels : bool, default False
        Accept labels anywhere in [0, 1], not only 0 and 1.
    compare : str, optional
        The name of model B's pred: ``update()`` then takes ``compare=``, and the result
        gains the paired A/B values.
    weights : {"frequency", "importance"}, default "frequency"
        How the intervals read ``weight``: frequency weights (a weight of 2 is two
        identical rows) or importance weights (inverse sampling rates, such as 10 for
        negatives kept at a rate of 0.1: the intervals count the weights' spread through
        the classes' effective sizes, docs/statistics.md). The values are the same.
        States of the two do not merge.
    window : int, optional
        Rows of this rank's recent window (values over them in ``result.window``).

    Raises
    ------
    InputError
        An option out of its range (``update()``: a bad batch, raised again by
        ``compute()`` on every rank).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import AucMetric
    >>> metric = AucMetric(table_size=1000)
    >>> metric.update(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]))
    >>> result = metric.compute()
    >>> result.auc
    0.75
    >>> print(result.to_log_line("ctr"))  # doctest: +NORMALIZE_WHITESPACE
    ctr: auc=0.75 bucket_error=nan rmse=0.397649 num=4 mae=0.3375 actural_ctr=0.5
    predict_ctr=0.4125 copc=1.21212
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    table_size: int
    soft_labels: bool
    compare: str | None
    weights: str
    window: int | None

    def __init__(
        self,
        comm: Comm | Any | None = None,
        *,
        table_size: int = DEFAULT_TABLE_SIZE,
        soft_labels: bool = False,
        compare: str | None = None,
        weights: str = "frequency",
        window: int | None = None,
    ) -> None:
        super().__init__(comm, table_size=table_size, soft_labels=soft_labels, compare=compare,
                         weights=weights, window=window)

    def state_layout(self) -> dict[str, Part]:
        layout: dict[str, Part] = {"table": Summed((2, self.table_size)),
                                   "sums": Summed((kernels.N_SUMS, exact.DIGITS))}
        if self.compare is not None:
            bucket = np.int32 if self.table_size < 2**31 else np.int64
            layout.update(table_b=Summed((2, self.table_size)),
                          sums_b=Summed((kernels.N_SUMS, exact.DIGITS)),
                          pairs=Rows({"bucket_a": bucket, "bucket_b": bucket,
                                      "positive": np.float32, "negative": np.float32}))
        if self.weights == "importance":
            for suffix in ("", "_b") if self.compare is not None else ("",):
                layout["weight_squares" + suffix] = Summed((len(importance.FIELDS),
                                                            exact.DIGITS))
        return layout

    def update(self, pred: Any, label: Any, weight: Any = None, compare: Any = None) -> None:
        """Add a batch of rows (local: no communication).

        Parameters
        ----------
        pred, label : array_like
            1-D, of equal length: preds in [0, 1], labels 0/1 (in [0, 1] with
            ``soft_labels``).
        weight : array_like, optional
            Finite weights >= 0.
        compare : array_like, optional
            Model B's preds of the same rows (required when the metric has ``compare``).

        Raises
        ------
        InputError
            A bad value, naming the input, the count of bad values and the first; the
            batch is not counted.
        """
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            w = None if weight is None else as_vector("weight", weight)
            b = None if compare is None else as_vector("compare", compare)
            if (b is None) != (self.compare is None):
                raise InputError("compare", "is needed: the metric compares two models"
                                 if b is None else "is given but the metric has compare=None")
            check_lengths(pred=p, label=y, weight=w, compare=b)
            check_interval("pred", p, 0.0, 1.0)
            if b is not None:
                check_interval("compare", b, 0.0, 1.0)
            if self.soft_labels:
                check_interval("label", y, 0.0, 1.0)
            else:  # checked and narrowed in one compiled pass (a new array: a window keeps it)
                y = binary_uint8("label", y, hint=SOFT_LABELS)
            if w is not None:
                check_weight("weight", w)
        self._add(pred=p, label=y, weight=w, compare=b)

    def _accumulate(self, state: State, pred: np.ndarray, label: np.ndarray,
                    weight: np.ndarray | None = None, compare: np.ndarray | None = None,
                    ) -> None:
        """Count validated rows into ``state``'s tables and sums (and, comparing, both
        models' tables and the rows' bucket pairs)."""
        binary = not self.soft_labels or is_binary(label)
        kernels.accumulate(state.summed("table"), state.summed("sums"), pred, label, weight,
                           binary=binary)
        if self.weights == "importance":
            importance.accumulate(state.summed("weight_squares"), pred, label, weight)
            if compare is not None:
                importance.accumulate(state.summed("weight_squares_b"), compare, label, weight)
        if compare is not None:
            kernels.accumulate(state.summed("table_b"), state.summed("sums_b"), compare,
                               label, weight, binary=binary)
            self._keep_pairs(state, pred, compare, label, weight, binary)

    def _keep_pairs(self, state: State, pred: np.ndarray, compare: np.ndarray,
                    label: np.ndarray, weight: np.ndarray | None, binary: bool) -> None:
        pairs = state.rows("pairs")
        ones = weight is None and binary  # 0/1 weights: float32 holds them exactly
        y = label.astype(np.float32 if ones else np.float64)
        positive = y if weight is None else weight * y
        negative = 1 - y if weight is None else weight * (1 - y)
        if not ones and pairs.dtypes["positive"] != np.float64:
            pairs.widen("positive", np.float64)
            pairs.widen("negative", np.float64)
        bucket_a, bucket_b = kernels.bucket_pairs(pred, compare, self.table_size,
                                                  pairs.dtypes["bucket_a"])
        pairs.append(bucket_a=bucket_a, bucket_b=bucket_b, positive=positive,
                     negative=negative)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        return {name: self.state.summed(name) for name, part in self.state.layout.items()
                if isinstance(part, Summed)}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> AucResult:
        """The result from the merged parts; with ``compare``, collective: one more sum
        over ranks of the rows' paired placements (two numbers)."""
        reasons: list[str] = []
        result = values_from_table(sums["table"], exact.to_floats(sums["sums"]), reasons,
                                   self._squares(sums))
        if self.compare is not None:
            result = dataclasses.replace(result, compare=self._compare(sums, comm, result.auc,
                                                                         reasons))
        if reasons:
            warn_undefined(comm, "auc: " + "; ".join(reasons))
        return result

    def _compare(self, sums: dict[str, np.ndarray], comm: Comm, auc: float,
                 reasons: list[str]) -> AucComparison:
        assert self.compare is not None
        reasons_b: list[str] = []
        b = values_from_table(sums["table_b"], exact.to_floats(sums["sums_b"]), reasons_b,
                              self._squares(sums, "_b"))
        reasons.extend(f"compare: {reason}" for reason in reasons_b
                       if reason != "no rows")
        table_a, table_b = sums["table"], sums["table_b"]
        v10_a, v01_a, _ = delong.placements(table_a)
        v10_b, v01_b, _ = delong.placements(table_b)
        rows = self.state.rows("pairs").columns()
        spread = exact.to_floats(comm.sum(delong.paired_spread(
            rows["bucket_a"], rows["bucket_b"], rows["positive"], rows["negative"],
            v10_a, v10_b, v01_a, v01_b)))
        units = None if b.effective is None else (b.effective.positives,
                                                  b.effective.negatives)
        variance = delong.paired_variance(float(spread[0]), float(spread[1]),
                                         float(table_a[1].sum()), float(table_a[0].sum()),
                                         units)
        smaller = min(b.class_sizes)
        size = "a weight" if units is None else "an effective size"
        if math.isnan(variance) and not math.isnan(auc):
            reasons.append(f"auc_diff ci95 needs {size} above 1 in each class")
        elif not math.isnan(auc) and smaller < stats.MIN_CLASS:
            reasons.append(f"auc_diff ci95 and p need {size} of {stats.MIN_CLASS} in each "
                           "class")
        elif variance == 0:
            reasons.append("auc_diff ci95 is null: the paired spread is 0")
        return AucComparison(pred=self.compare, result=b, auc_diff=b.auc - auc,
                             auc_diff_stderr=math.sqrt(variance))

    def _squares(self, sums: dict[str, np.ndarray], model: str = "") -> np.ndarray | None:
        """The merged sums of squared weights as floats (importance weights; ``model``
        ``"_b"``: with model B's preds), or None."""
        if self.weights != "importance":
            return None
        return exact.to_floats(sums["weight_squares" + model])

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        """A saved state of the other weights' meaning is refused by name (a state saved
        before the option existed holds frequency weights)."""
        saved = state.get("options.weights", "frequency")
        saved = saved.item() if isinstance(saved, np.ndarray) else saved
        if saved != self.weights:
            raise ValueError(f"a state of {saved} weights does not merge with one of "
                             f"{self.weights} weights (weights={saved!r} against "
                             f"weights={self.weights!r})")
