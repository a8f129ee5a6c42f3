"""The ``auc`` kind: AUC, bucket error, RMSE, MAE, actual/predicted CTR, COPC, num."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError, OptionHint
from mpieval.kernels import exact, stats
from mpieval.kinds.auc import (
    DEFAULT_TABLE_SIZE,
    KIND,
    buckets,
    delong,
    importance,
    influence,
    kernels,
    moments,
)
from mpieval.metric import Metric, warn_undefined, window_dict
from mpieval.state import Part, Rows, Stacked, State, Summed
from mpieval.validation import (
    as_vector,
    binary_uint8,
    check_interval,
    check_lengths,
    check_weight,
    is_binary,
)

F = TypeVar("F")

INTERVAL_FIELDS = ("auc", "actual_ctr", "predicted_ctr", "copc", "logloss", "ne", "auprc",
                   "ece", "rmse", "mae")
"""The values with an interval: all but ``bucket_error``, whose bucket ranges are chosen
from the data (no valid interval of it is known: docs/statistics.md; not in ``ci95``
rather than a ``null`` and a warning on every run)."""
_RANGES = {"auc": (0.0, 1.0), "actual_ctr": (0.0, 1.0), "predicted_ctr": (0.0, 1.0),
           "copc": (0.0, math.inf)}

DIFFS = ("logloss", "ne", "copc", "ece", "auprc")
"""The values of :class:`AucComparison` with a paired difference beside ``auc_diff``."""

SCORE_CLASS = 300
"""Below this many rows (effective rows under importance weights) in the smaller class,
the ``auc`` interval also holds the score-type interval
(:func:`mpieval.kernels.stats.auc_score_interval`): DeLong's sample spread from a few
positives is too small when they happen to rank high (docs/statistics.md)."""


_COMPARED = ("auc", "copc", "bucket_error", "rmse", "mae", "predicted_ctr", "logloss", "ne",
             "auprc", "roc_curve", "calibration_curve", "ece", "pr_curve", "score_histogram",
             "ne_recalibrated", "lift")


@dataclass(frozen=True)
class AucComparison:
    """Model B (pred column ``pred``) against model A on the same rows: B's values
    (``result``), ``auc_diff = AUC_B - AUC_A`` and its standard error by the paired DeLong
    test; :meth:`ci` gives the interval at any level, ``p`` the two-sided p-value.

    ``diffs``: for each of :data:`DIFFS` (``logloss``, ``ne``, ``copc``, ``ece``,
    ``auprc``) the pair ``(B - A, standard error)``, the standard error of the paired
    difference over the rows (docs/statistics.md); :meth:`diff_ci` and :meth:`p_value`
    read them with the ``auc_diff`` rules (Student's t of ``min(P, N) - 1`` degrees of
    freedom, None below :data:`mpieval.kernels.stats.MIN_CLASS` in either class)."""

    pred: str
    result: AucResult
    auc_diff: float
    auc_diff_stderr: float
    ne_recalibrated: buckets.PairedDifference | None = None  # B - A (mpieval/kinds/auc/buckets.py)
    diffs: dict[str, tuple[float, float]] = field(default_factory=dict)
    diff_terms: dict[str, float] = field(default_factory=dict)
    """``auprc``: the effective number of rows behind its paired spread (Satterthwaite's,
    :func:`mpieval.kinds.auc.influence.paired_spread`): its t has ``min(terms, P, N) - 1``
    degrees of freedom (at least 1)."""

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

    def diff_ci(self, name: str, level: float = 0.95) -> tuple[float, float] | None:
        """The interval of ``name``'s difference (``"auc"`` or one of :data:`DIFFS`):
        ``diff -/+ t se`` as :meth:`ci` (``auprc``: fewer degrees of freedom where
        :attr:`diff_terms` says so), not cut (logloss and COPC have no upper end)."""
        if name == "auc":
            return self.ci(level)
        diff, stderr = self.diffs.get(name, (math.nan, math.nan))
        return stats.cluster_interval(diff, stderr, self._units, level,
                                      effective=self._effective(name))

    def p_value(self, name: str) -> float:
        """The two-sided paired p-value of ``name``'s difference (``"auc"`` or one of
        :data:`DIFFS`); NaN where its interval is None, 1 for a difference and spread of
        exactly 0, never 0 from a spread of 0."""
        if name == "auc":
            return self.p
        diff, stderr = self.diffs.get(name, (math.nan, math.nan))
        return stats.cluster_p(diff, stderr, self._units, effective=self._effective(name))

    def _effective(self, name: str) -> float | None:
        """The t's degrees of freedom + 1 of ``name``'s difference where it has
        :attr:`diff_terms` (at least 2: one degree of freedom), else None (the class
        sizes')."""
        terms = self.diff_terms.get(name, math.nan)
        return None if math.isnan(terms) else max(terms, stats.MIN_EFFECTIVE)

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
        fields: dict[str, Any] = {
            "pred": self.pred, **{name: b[name] for name in _COMPARED},
            "ci95": b["ci95"], "auc_diff": logline.json_number(self.auc_diff),
            "auc_diff_ci95": None if pair is None else list(pair),
            "auc_diff_p": logline.json_number(self.p)}
        for name in DIFFS:
            diff = self.diffs.get(name, (math.nan, math.nan))[0]
            pair = self.diff_ci(name, 0.95)
            fields[f"{name}_diff"] = logline.json_number(diff)
            fields[f"{name}_diff_ci95"] = None if pair is None else list(pair)
            fields[f"{name}_diff_p"] = logline.json_number(self.p_value(name))
        if self.ne_recalibrated is not None:
            fields.update(self.ne_recalibrated.to_dict())
        return fields

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
        self._bins: np.ndarray | None = None  # the calibration curve's, until ece is drawn
        if len(buckets.index) > LAZY_FIGURES_BUCKETS:
            for name in FIGURES:
                self.drawn(name)

    def drawn(self, name: str) -> Any:
        """The figure ``name`` (one of :data:`FIGURES`), drawn now if it was not."""
        if name not in self._drawn:
            if name == "ece":  # from the calibration bins as an array (not its list)
                bins = self._bins
                if bins is None:
                    assert self.buckets is not None
                    bins = kernels.calibration(self.buckets)
                figure: Any = kernels.calibration_error(bins)
                self._bins = None
            elif name == "calibration_curve":
                assert self.buckets is not None
                bins = kernels.calibration(self.buckets)
                if "ece" not in self._drawn:
                    self._bins = bins
                figure = bins.tolist()
            else:
                assert self.buckets is not None  # kept until every figure is drawn
                figure = getattr(kernels, _DRAWN_BY[name])(self.buckets).tolist()
            self._drawn[name] = figure
            if len(self._drawn) == len(FIGURES):
                self.buckets = None
        return self._drawn[name]


class BucketValues:
    """``ne_recalibrated`` (with its standard error and shift, ``recalibration``) and
    ``lift`` of a merged table (:mod:`mpieval.kinds.auc.buckets`), each computed once, when
    first read (in JSON: a run that writes only log lines, a slice's, skips them), from its
    filled buckets and the rows' exact ``sum w ce`` (``logloss_sum``); a table of more than
    :data:`LAZY_FIGURES_BUCKETS` filled buckets has them computed at once."""

    def __init__(self, filled: kernels.FilledBuckets, logloss_sum: float, *,
                 frequency: bool) -> None:
        self._filled: kernels.FilledBuckets | None = filled
        self._logloss_sum = logloss_sum
        self._frequency = frequency
        self._recalibration: buckets.Recalibrated | None = None
        self._lift: tuple[buckets.LiftPoint, ...] | None = None
        if len(filled.index) > LAZY_FIGURES_BUCKETS:
            self.recalibration()
            self.lift()

    def recalibration(self) -> buckets.Recalibrated:
        if self._recalibration is None:
            assert self._filled is not None  # kept until both are computed
            self._recalibration = buckets.recalibrated_ne(
                self._filled, self._logloss_sum, frequency=self._frequency)
            self._let_go()
        return self._recalibration

    def lift(self) -> tuple[buckets.LiftPoint, ...]:
        if self._lift is None:
            assert self._filled is not None
            self._lift = buckets.lift(self._filled)
            self._let_go()
        return self._lift

    def _let_go(self) -> None:
        if self._recalibration is not None and self._lift is not None:
            self._filled = None


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

    ``stderr`` holds the standard errors of ``INTERVAL_FIELDS`` (NaN where undefined; a
    :class:`Stderrs` in a computed result, whose ``auprc`` is computed when first read);
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
    stderr: Mapping[str, float] = field(default_factory=dict)
    ece_spread: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    effective: importance.Effective | None = None
    compare: AucComparison | None = None
    window: AucResult | None = None
    figures: AucFigures | None = field(default=None, repr=False, compare=False)
    # from the buckets (:mod:`mpieval.kinds.auc.buckets`), when first read: NE after the
    # logit shift that makes COPC = 1 (``ne_recalibrated``; its standard error and shift in
    # ``recalibration``) and the lift at the top fractions of rows; None: no rows
    bucket_values: BucketValues | None = field(default=None, repr=False, compare=False)
    # what the AUPRC's interval reads beside its standard error (when first read): None
    # without rows
    auprc_terms: AuprcTerms | None = field(default=None, repr=False, compare=False)

    @property
    def ne_recalibrated(self) -> float:
        """NE after the logit shift that makes COPC = 1 (NaN: undefined)."""
        return (math.nan if self.bucket_values is None
                else self.bucket_values.recalibration().ne)

    @property
    def recalibration(self) -> buckets.Recalibrated | None:
        """``ne_recalibrated`` with its standard error and shift; None without rows."""
        return None if self.bucket_values is None else self.bucket_values.recalibration()

    @property
    def lift(self) -> tuple[buckets.LiftPoint, ...]:
        """The lift at the top fractions of rows (:func:`mpieval.kinds.auc.buckets.lift`)."""
        return () if self.bucket_values is None else self.bucket_values.lift()

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

    def ci(self, level: float = 0.95, *, with_ece: bool = True,
           ) -> dict[str, tuple[float, float] | None]:
        """Intervals of ``INTERVAL_FIELDS`` at ``level``; None where undefined (and for
        ``ece`` with ``with_ece=False``: it would draw the calibration figure)
        (docs/statistics.md has each method and its coverage by simulation).

        - ``auc``: DeLong's on the logit scale (:func:`mpieval.kernels.stats.logit_interval`,
          within (0, 1)) with Student's t of ``min(P, N) - 1`` degrees of freedom (``P``,
          ``N`` the class totals: the smaller class bounds how well the spread is known);
          below :data:`SCORE_CLASS` in the smaller class, the hull of that and the
          score-type interval (:func:`mpieval.kernels.stats.auc_score_interval`, the normal
          quantile), which also gives one at an AUC of 0 or 1. None below
          :data:`mpieval.kernels.stats.MIN_CLASS` in either class.
        - ``actual_ctr``: Wilson's score interval of ``positives / num`` (valid at 0 and at
          all positives).
        - ``predicted_ctr``: Hall's interval of a skewed mean
          (:func:`mpieval.kernels.stats.skewed_mean_interval`, the delta method's spread
          and the preds' skewness: skewed preds on small sets; Wald's under importance
          weights), cut to [0, 1]; None with a spread of 0 (every pred equal).
        - ``copc``: Wilson's interval of the actual CTR over the rows that give COPC's own
          delta-method spread (the preds' spread and their correlation with the labels
          in it; without clicks, the actual CTR's rows), over ``predicted_ctr``.
        - ``logloss``, ``ne``, ``mae``: ``value -/+ z se`` (the delta method over rows;
          ``ne``'s with the CTR's spread in its entropy), cut at 0; ``rmse``: the square
          root of that interval of the mean squared error.
        - ``auprc``: on the logit scale, the delta method over the buckets' influences
          (:mod:`mpieval.kinds.auc.influence`), with the ``auc``'s minimum and Student's t
          of the effective rows behind the spread (:meth:`_auprc_interval`), widened
          down to the AP without each positive in its own precision.
        - ``ece``: ``ece -/+ c`` cut at 0, ``c`` a bound on the error of a sum of absolute
          gaps (:func:`mpieval.kernels.stats.absolute_sum_interval`: valid at a gap of 0).
        - ``bucket_error`` has none (:data:`INTERVAL_FIELDS`).

        The ctrs', copc's and the others' need a total weight of 2 (two rows).

        Under importance weights (``weights="importance"``) the class totals are their
        effective sizes (:attr:`class_sizes`) and the delta method squares the weights."""
        auc_stderr = self.stderr.get("auc", math.nan)
        smaller = min(self.class_sizes)
        enough_classes = smaller >= stats.MIN_CLASS
        if not enough_classes:
            auc_stderr = math.nan
        rows = self.rate_rows
        enough = rows >= 2 and not math.isnan(self.stderr.get("actual_ctr", math.nan))
        # positives / num over ``rows`` rows: positives themselves when rows is num
        actual = (stats.wilson_interval(self.positives * (rows / self.num), rows, level)
                  if enough else None)
        copc = None
        copc_stderr = self.stderr.get("copc", math.nan)
        if actual is not None and self.predicted_ctr > 0:
            copc_rows = rows
            if self.positives > 0 and copc_stderr > 0:
                r = self.actual_ctr
                copc_rows = r * (1 - r) / (copc_stderr * self.predicted_ctr) ** 2
            pair = stats.wilson_interval(self.actual_ctr * copc_rows, copc_rows, level)
            if pair is not None:
                copc = (pair[0] / self.predicted_ctr, pair[1] / self.predicted_ctr)
        predicted = stats.skewed_mean_interval(
            self.predicted_ctr, self.stderr.get("predicted_ctr", math.nan),
            self.stderr.get("predicted_ctr_skewness", 0.0), level, 0.0, 1.0)
        quantile = None if math.isnan(auc_stderr) else stats.t_value(level, smaller - 1)
        auc = stats.logit_interval(self.auc, auc_stderr, level, quantile)
        if enough_classes and smaller < SCORE_CLASS:
            auc = stats.hull(auc, stats.auc_score_interval(self.auc, *self.class_sizes,
                                                           stats.z_value(level)))
        auprc = self._auprc_interval(level) if enough_classes else None
        mse = stats.interval(self.rmse**2, self.stderr.get("mse", math.nan), level, 0.0)
        rmse = None if mse is None or mse[1] == mse[0] else (math.sqrt(mse[0]),
                                                             math.sqrt(mse[1]))
        return {"auc": auc, "actual_ctr": actual, "predicted_ctr": predicted, "copc": copc,
                "logloss": self._wald("logloss", level), "ne": self._wald("ne", level),
                "auprc": auprc, "ece": self._ece_interval(level) if with_ece else None,
                "rmse": rmse, "mae": self._wald("mae", level)}

    def _auprc_interval(self, level: float) -> tuple[float, float] | None:
        """On the logit scale, ``t`` of ``min(terms, P, N) - 1`` degrees of freedom (at
        least 1; ``terms`` the effective rows behind the spread), the hull of the
        interval around the AP and the one around the AP without each positive's own
        weight in its precision (its bias at few positives); None where the first is."""
        stderr = self.stderr.get("auprc", math.nan)
        if math.isnan(stderr):
            return None
        terms, without_self = ((math.nan, math.nan) if self.auprc_terms is None
                               else self.auprc_terms.values())
        units = min(self.class_sizes)
        if not math.isnan(terms):
            units = min(units, terms)
        quantile = stats.t_value(level, max(units - 1, 1.0))
        plain = stats.logit_interval(self.auprc, stderr, level, quantile)
        if plain is None:
            return None
        if math.isnan(without_self):
            return plain
        half = quantile * stderr
        return stats.hull(plain, stats.logit_interval(without_self, stderr, level, quantile),
                          (max(0.0, without_self - half), min(1.0, without_self + half)))

    def _ece_interval(self, level: float) -> tuple[float, float] | None:
        """The ECE's (reading ``ece`` draws the calibration figure)."""
        sure, unsure = self.ece_spread
        return stats.absolute_sum_interval(self.ece, list(sure), list(unsure), level)

    def _wald(self, name: str, level: float) -> tuple[float, float] | None:
        """``value -/+ z se`` of ``name``, cut at 0; None with a spread of 0 or NaN."""
        stderr = self.stderr.get(name, math.nan)
        if not stderr > 0:
            return None
        return stats.interval(getattr(self, name), stderr, level, 0.0)

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
            elif name == "lift":
                fields[name] = [point.to_dict() for point in value]
            else:
                fields[name] = logline.json_number(value)
        fields["ci95"] = {name: None if pair is None else list(pair)
                                for name, pair in self.ci(0.95).items()}
        recalibrated = None if self.recalibration is None else buckets.interval(
            self.recalibration)
        fields["ci95"]["ne_recalibrated"] = None if recalibrated is None else list(recalibrated)
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
                "auc_tie_bound", "ne_recalibrated", "lift", *FIGURES, "compare", "window")


def _count(value: float) -> float:
    """A weight sum, as an integer when it is whole."""
    return int(value) if float(value).is_integer() else value


def values_from_table(table: np.ndarray, sums: np.ndarray, reasons: list[str],
                      squares: np.ndarray | None = None,
                      moment_sums: np.ndarray | None = None) -> AucResult:
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
        bucket_values = None
        auprc_terms = None
        ece_spread: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
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
        bucket_values = BucketValues(filled, float(sums[kernels.SUM_LOGLOSS]),
                                     frequency=squares is None)
        factors = (1.0, 1.0)
        if squares is not None:
            factors = (float(squares[importance.POSITIVE_SQ]) / positives if positives else 1.0,
                       float(squares[importance.NEGATIVE_SQ]) / (num - positives)
                       if num > positives else 1.0)
        if squares is None and moment_sums is not None and moment_sums[moments.V] > 0:
            moment_sums = moments.from_sums(moment_sums, sums, positives, num)
        stderr.update(_moment_stderrs(moment_sums, num, logloss, ne, actual, mae,
                                      rmse * rmse, reasons))
        # Hall's correction under frequency weights only: with importance weights the
        # studentized ratio's skew is not the preds' (Wald covered 94-95% there)
        stderr["predicted_ctr_skewness"] = (_skewness(moment_sums, predicted)
                                            if squares is None else 0.0)
        auprc_terms = AuprcTerms(filled, auprc, factors)
        if squares is not None:  # computed now: _null_interval_reasons reads it
            auprc_terms.stderr()
        ece_spread = _ece_spread(filled, factors)
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
        stderr=Stderrs(stderr, auprc_terms),
        ece_spread=ece_spread,
        effective=effective,
        figures=AucFigures(filled),
        bucket_values=bucket_values,
        auprc_terms=auprc_terms,
    )


def _moment_stderrs(m: np.ndarray | None, num: float, logloss: float, ne: float,
                    actual: float, mae: float, mse: float, reasons: list[str],
                    ) -> dict[str, float]:
    """The delta-method standard errors of ``logloss``, ``ne``, ``mae`` and ``mse`` (the
    mean squared error, RMSE squared) from the merged moments
    (:mod:`mpieval.kinds.auc.moments`); NaN below a weight (or effective size) of 2."""
    nan = math.nan
    if m is None or not m[moments.V] > 0:
        reasons.append("ci95 of logloss, ne, rmse and mae needs the sums of a state saved "
                       "by this version")
        return {"logloss": nan, "ne": nan, "mae": nan, "mse": nan}
    f = moments
    rows = num * (num / m[f.V])  # the rows, or their effective number
    if not rows >= 2:
        reasons.append("ci95 of logloss, ne, rmse and mae needs two rows")
        return {"logloss": nan, "ne": nan, "mae": nan, "mse": nan}
    # ``sum v e^2`` without weights and with 0/1 labels is ``sum p^2 - 2 S1 + N1`` (the
    # table's sqrerr, mpieval.kinds.auc.kernels): each p^2 rounded, not each e^2, so it is
    # off by up to 2^-53 sum p^2, which is not small beside e^2 where preds are near their
    # labels; where the rows' e^2 are all equal that would be a spread (an interval of
    # rows repeated, none of one row of a weight): both count a spread within it as 0
    sq_error = 2.0**-52 * m[f.PP]
    out = {"logloss": stats.ratio_stderr(logloss * num, num, m[f.CECE], m[f.CE], m[f.V]),
           "mae": stats.ratio_stderr(mae * num, num, m[f.SQ], m[f.ABS], m[f.V],
                                     error=sq_error),
           "mse": stats.ratio_stderr(mse * num, num, m[f.FOURTH], m[f.SQ], m[f.V],
                                     error=2 * mse * sq_error),
           "ne": nan}
    if not math.isnan(ne):
        entropy = _entropy(actual)
        c = ne * math.log((1 - actual) / actual)
        d = logloss - c * actual
        out["ne"] = _spread(m[f.CECE], -2 * c * m[f.CEY], c * c * m[f.YY], -2 * d * m[f.CE],
                            2 * d * c * m[f.Y], d * d * m[f.V]) / (num * entropy)
    return out


def _skewness(m: np.ndarray | None, mean: float) -> float:
    """The skewness of the predicted CTR's estimate, ``sum u (p - m)^3 / (sum v (p -
    m)^2)^(3/2)`` (frequency: the preds' skewness over ``sqrt n``); 0 without the moments
    or a spread."""
    if m is None or not m[moments.V] > 0:
        return 0.0
    f = moments
    third = math.fsum((m[f.UPPP], -3 * mean * m[f.UPP], 3 * mean * mean * m[f.UP],
                       -mean**3 * m[f.U]))
    second = math.fsum((m[f.PP], -2 * mean * m[f.P], mean * mean * m[f.V]))
    return third / second**1.5 if second > 0 else 0.0


def _spread(*terms: float) -> float:
    """``sqrt(sum terms)``, 0 when the sum is within the rounding of its terms (as
    :func:`mpieval.kernels.stats.ratio_stderr`)."""
    total = math.fsum(terms)
    if total <= 8 * 2.0**-52 * math.fsum(abs(t) for t in terms):
        return 0.0
    return math.sqrt(total)


class AuprcTerms:
    """The AUPRC's standard error and what its interval reads beside it, computed once, when
    first read (by :meth:`AucResult.ci`: a run that writes only log lines, a slice's, skips
    them), from the filled buckets:

    - ``stderr``: the delta-method standard error
      (:func:`mpieval.kinds.auc.influence.auprc`), at least the binomial one,
      ``sqrt(AP (1 - AP) / P)`` (``P`` the positives, or under importance weights their
      effective number);
    - ``terms``: the effective number of rows behind the spread
      (:meth:`mpieval.kinds.auc.influence.Influence.terms`: the t's degrees of freedom);
    - ``without_self``: the AP with each positive's own weight left out of its precision
      (:func:`mpieval.kinds.auc.influence.auprc_without_self`: the estimate's upward bias
      at few positives).

    NaN without positives. A table of more than :data:`LAZY_FIGURES_BUCKETS` filled
    buckets has them computed at once."""

    def __init__(self, filled: kernels.FilledBuckets, auprc: float,
                 factors: tuple[float, float]) -> None:
        self._filled: kernels.FilledBuckets | None = filled
        self._auprc = auprc
        self._factors = factors
        self._computed: tuple[float, float, float] | None = None
        if len(filled.index) > LAZY_FIGURES_BUCKETS:
            self.stderr()

    def stderr(self) -> float:
        return self._read()[0]

    def values(self) -> tuple[float, float]:
        """``(terms, without_self)``."""
        return self._read()[1:]

    def _read(self) -> tuple[float, float, float]:
        if self._computed is None:
            filled, factors, auprc = self._filled, self._factors, self._auprc
            assert filled is not None  # kept until computed
            spread = None if math.isnan(auprc) else influence.auprc(filled, auprc)
            if spread is None:
                self._computed = (math.nan, math.nan, math.nan)
            else:
                positives = float(filled.positives.sum())
                floor = auprc * (1 - auprc) / (positives * (positives
                                                            / (factors[0] * positives)))
                variance, terms = spread.variance_and_terms(filled, factors)
                self._computed = (math.sqrt(max(variance, floor)), terms,
                                  influence.auprc_without_self(filled, factors[0]))
            self._filled = None
        return self._computed


class Stderrs(Mapping[str, float]):
    """:attr:`AucResult.stderr`: the standard errors from the sums (``known``) and the
    AUPRC's (``auprc``), read from ``terms`` (:class:`AuprcTerms`) when first asked for."""

    def __init__(self, known: dict[str, float], terms: AuprcTerms | None) -> None:
        self._known = known
        self._terms = terms

    def __getitem__(self, name: str) -> float:
        if name == "auprc":
            return math.nan if self._terms is None else self._terms.stderr()
        return self._known[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._known
        yield "auprc"

    def __len__(self) -> int:
        return len(self._known) + 1

    def __repr__(self) -> str:
        return repr(dict(self))


def _ece_spread(filled: kernels.FilledBuckets, factors: tuple[float, float],
                ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The standard errors of the ECE's group gaps, split into those whose sign is known
    (:data:`mpieval.kernels.stats.SURE_GAP`) and the others."""
    gaps = influence.calibration_spread(filled, factors)
    if gaps is None:
        return (), ()
    sure = np.abs(gaps.gaps) >= stats.SURE_GAP * gaps.stderrs
    return (tuple(float(s) for s in gaps.stderrs[sure]),
            tuple(float(s) for s in gaps.stderrs[~sure]))


_NEW_INTERVALS = ("logloss", "ne", "auprc", "ece", "rmse", "mae")


def _null_interval_reasons(result: AucResult, reasons: list[str]) -> None:
    """A reason for each null interval (and paired difference) of issue 32 whose value is
    defined, unless one already names it: every null has its warning."""
    said = " ".join(reasons)

    def why(name: str, units: tuple[float, float], stderr: float) -> str:
        if min(units) < stats.MIN_CLASS and name in ("auprc", "diff"):
            return f"needs a weight (or effective size) of {stats.MIN_CLASS} in each class"
        if math.isnan(stderr):
            return "needs two rows (and the moments of a state saved by this version)"
        return "the spread is 0 or the value at the edge of its range"

    # the rules of ci() and diff_ci() without their quantiles: no interval is computed
    # here (a run without JSON computes none, nor imports the statistics module)
    enough = min(result.class_sizes) >= stats.MIN_CLASS
    null = {name: not result.stderr.get(name, math.nan) > 0 for name in ("logloss", "ne",
                                                                         "mae")}
    null["rmse"] = not result.stderr.get("mse", math.nan) > 0
    # under frequency weights the AUPRC's standard error is at least sqrt(AP (1 - AP) / P)
    # (AuprcTerms), more than 0 inside (0, 1): not computed here (nor in a run without JSON)
    null["auprc"] = (not enough or not 0 < result.auprc < 1
                     or (result.weights != "frequency"
                         and not result.stderr.get("auprc", math.nan) > 0))
    null["ece"] = not any(s > 0 for part in result.ece_spread for s in part)
    for name in _NEW_INTERVALS:
        defined = result.num > 0 if name == "ece" else not math.isnan(getattr(result, name))
        if null[name] and defined and f"{name} ci95" not in said:
            stderr = result.stderr.get("mse" if name == "rmse" else name, math.nan)
            reasons.append(f"{name} ci95 is null: {why(name, result.class_sizes, stderr)}")
    if result.compare is not None:
        compare = result.compare
        enough = min(compare.result.class_sizes) >= stats.MIN_CLASS
        for name in DIFFS:
            diff, stderr = compare.diffs.get(name, (math.nan, math.nan))
            if (not enough or not stderr > 0) and not math.isnan(diff) \
                    and f"{name}_diff" not in said:
                reasons.append(f"{name}_diff ci95 is null (p too, unless the difference is 0): "
                               f"{why('diff', compare.result.class_sizes, stderr)}")


def _table_influences(table_a: np.ndarray, a: AucResult, table_b: np.ndarray, b: AucResult,
                      ) -> dict[str, tuple[influence.Influence, influence.Influence] | None]:
    """The influences of A's and B's ``ece`` and ``auprc`` on their merged tables (for the
    paired sweep over the rows), None where a value is undefined."""
    filled_a = kernels.FilledBuckets.of(table_a[0], table_a[1])
    filled_b = kernels.FilledBuckets.of(table_b[0], table_b[1])
    out: dict[str, tuple[influence.Influence, influence.Influence] | None] = {}
    gaps_a = influence.calibration_gaps(filled_a, (1.0, 1.0))
    gaps_b = influence.calibration_gaps(filled_b, (1.0, 1.0))
    out["ece"] = None if gaps_a is None or gaps_b is None else (gaps_a.influence,
                                                                gaps_b.influence)
    auprc_a = None if math.isnan(a.auprc) else influence.auprc(filled_a, a.auprc)
    auprc_b = None if math.isnan(b.auprc) else influence.auprc(filled_b, b.auprc)
    out["auprc"] = None if auprc_a is None or auprc_b is None else (auprc_a, auprc_b)
    return out


def _paired_diffs(a: AucResult, b: AucResult, ma: np.ndarray, mb: np.ndarray,
                  cross: np.ndarray) -> dict[str, tuple[float, float]]:
    """``(B - A, standard error)`` of ``logloss``, ``ne`` and ``copc`` from both models'
    moments and their cross products (:mod:`mpieval.kinds.auc.moments`): the delta method
    over the rows' paired values (docs/statistics.md)."""
    f = moments
    nan = math.nan
    out = {name: (getattr(b, name) - getattr(a, name), nan) for name in ("logloss", "ne", "copc")}
    num = a.num
    if not (ma[f.V] > 0 and num * (num / ma[f.V]) >= 2):
        return out
    d = b.logloss - a.logloss
    s_d, s_dy = mb[f.CE] - ma[f.CE], mb[f.CEY] - ma[f.CEY]
    s_dd = (ma[f.CECE], mb[f.CECE], -2 * cross[f.CROSS_CECE])
    out["logloss"] = (d, _spread(*s_dd, -2 * d * s_d, d * d * ma[f.V]) / num)
    r = a.actual_ctr
    if not math.isnan(out["ne"][0]):
        diff = out["ne"][0]
        c = diff * math.log((1 - r) / r)
        shift = d - c * r
        spread = _spread(*s_dd, -2 * c * s_dy, c * c * ma[f.YY], -2 * shift * s_d,
                         2 * shift * c * ma[f.Y], shift * shift * ma[f.V])
        out["ne"] = (diff, spread / (num * _entropy(r)))
    pred_a, pred_b = a.predicted_ctr * num, b.predicted_ctr * num
    if pred_a > 0 and pred_b > 0 and not math.isnan(out["copc"][0]):
        alpha, beta, gamma = 1 / pred_b - 1 / pred_a, b.copc / pred_b, a.copc / pred_a
        out["copc"] = (out["copc"][0], _spread(
            alpha * alpha * ma[f.YY], beta * beta * mb[f.PP], gamma * gamma * ma[f.PP],
            -2 * alpha * beta * mb[f.PY], 2 * alpha * gamma * ma[f.PY],
            -2 * beta * gamma * cross[f.CROSS_PP]))
    return out


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
    elif defined and variance == 0 and smaller >= SCORE_CLASS:  # below: the score interval
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
    (:mod:`mpieval.kernels.exact`: the same bits on any number of ranks), and ``moments``
    (:mod:`mpieval.kinds.auc.moments`: the sums of the other intervals and the paired
    differences, exact too); all merge by addition (``16 T + 13056`` bytes, whatever the
    number of rows; comparing, B's ``moments_b`` and the models' ``cross`` products). With
    ``weights="importance"`` also ``weight_squares``, the sums of squared weights its
    intervals read (:mod:`mpieval.kinds.auc.importance`: 2720 bytes; comparing, B's too
    in ``weight_squares_b``).

    With ``compare="NAME"`` (model B's pred, named so in the result), ``update`` also
    takes ``compare``, B's preds of the same rows: B has its own ``table_b`` and
    ``sums_b``, and each row's buckets in both models are kept (``pairs``: two int32
    buckets and the row's positive and negative weight, float32 until a weighted or soft
    row widens them to float64; 16 bytes a row) for the paired DeLong test, a second
    sweep at compute over the rows against both merged tables.

    With ``window=N`` (:data:`~mpieval.declaration.WINDOW`), the metric also keeps a copy of
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
                                   "sums": Summed((kernels.N_SUMS, exact.DIGITS)),
                                   "moments": Summed((len(moments.FIELDS), exact.DIGITS))}
        if self.compare is not None:
            bucket = np.int32 if self.table_size < 2**31 else np.int64
            layout.update(table_b=Summed((2, self.table_size)),
                          sums_b=Summed((kernels.N_SUMS, exact.DIGITS)),
                          moments_b=Summed((len(moments.FIELDS), exact.DIGITS)),
                          cross=Summed((len(moments.CROSS), exact.DIGITS)),
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
        heavy = self.weights == "importance"
        v = (None if weight is None and not heavy
             else moments.row_weights(len(pred), weight, heavy))
        for part, model in (("moments", pred), ("moments_b", compare)):
            if model is not None:
                moments.accumulate(state.summed(part), model, label, v, binary=binary,
                                   importance=heavy)
        if compare is not None:
            moments.accumulate_cross(state.summed("cross"), pred, compare, label,
                                     v or moments.row_weights(len(pred), None, heavy))
        if self.weights == "importance":
            importance.accumulate(state.summed("weight_squares"), pred, label, weight)
            if compare is not None:
                importance.accumulate(state.summed("weight_squares_b"), compare, label, weight)
        if compare is not None:
            kernels.accumulate(state.summed("table_b"), state.summed("sums_b"), compare,
                               label, weight, binary=binary)
            self._keep_pairs(state, pred, compare, label, weight, binary)

    def stacks_slices(self) -> bool:
        """Slices of ``auc`` keep their tables and sums stacked, but with ``compare`` (a
        slice keeps its rows' bucket pairs)."""
        return self.compare is None

    def _accumulate_slices(self, stacked: Stacked, codes: np.ndarray, pred: np.ndarray,
                           label: np.ndarray, weight: np.ndarray | None = None,
                           compare: np.ndarray | None = None, *, whole: State | None = None,
                           ) -> bool:
        """Unweighted rows with 0/1 labels (frequency weights): every slice's table, sums
        and moments in one compiled pass (:func:`mpieval.kinds.auc.kernels.accumulate_slices`,
        the same bits as :meth:`_accumulate` of each slice's rows; the tables counted in
        uint32, :meth:`mpieval.state.Stacked.counts`), and ``whole``'s table, sums and
        moments in the same pass; False for other rows or another ``whole``."""
        if (weight is not None or compare is not None or self.soft_labels
                or self.weights != "frequency"):
            return False
        if whole is not None and set(whole.layout) != {"table", "sums", "moments"}:
            return False
        kernels.accumulate_slices(
            stacked.counts("table", len(pred)), stacked.array("sums"),
            stacked.array("moments"),
            (moments.V, moments.CECE, moments.CEY, moments.FOURTH, moments.UPPP),
            pred, label, codes,
            whole=None if whole is None else (whole.summed("table"), whole.summed("sums"),
                                              whole.summed("moments")))
        return True

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
        over ranks of the rows' paired placements and influences (four numbers)."""
        reasons: list[str] = []
        result = values_from_table(sums["table"], exact.to_floats(sums["sums"]), reasons,
                                   self._squares(sums), exact.to_floats(sums["moments"]))
        if self.compare is not None:
            result = dataclasses.replace(result, compare=self._compare(sums, comm, result,
                                                                         reasons))
            result = self._recalibrated_diff(sums, comm, result)
        _null_interval_reasons(result, reasons)
        if reasons:
            warn_undefined(comm, "auc: " + "; ".join(reasons))
        return result

    def _compare(self, sums: dict[str, np.ndarray], comm: Comm, a: AucResult,
                 reasons: list[str]) -> AucComparison:
        assert self.compare is not None
        auc = a.auc
        reasons_b: list[str] = []
        b = values_from_table(sums["table_b"], exact.to_floats(sums["sums_b"]), reasons_b,
                              self._squares(sums, "_b"), exact.to_floats(sums["moments_b"]))
        reasons.extend(f"compare: {reason}" for reason in reasons_b
                       if reason != "no rows")
        table_a, table_b = sums["table"], sums["table_b"]
        v10_a, v01_a, _ = delong.placements(table_a)
        v10_b, v01_b, _ = delong.placements(table_b)
        rows = self.state.rows("pairs").columns()
        local = [delong.paired_spread(rows["bucket_a"], rows["bucket_b"], rows["positive"],
                                      rows["negative"], v10_a, v10_b, v01_a, v01_b)]
        table_influences = _table_influences(table_a, a, table_b, b)
        for pair in table_influences.values():
            local.append(exact.accumulator(2) if pair is None else influence.paired_spread(
                rows["bucket_a"], rows["bucket_b"], rows["positive"], rows["negative"],
                *pair, importance=self.weights == "importance"))
        spread = exact.to_floats(comm.sum(np.concatenate(local)))
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
        diffs = _paired_diffs(a, b, self._moments(sums), self._moments(sums, "_b"),
                              exact.to_floats(sums["cross"]))
        terms: dict[str, float] = {}
        for index, name in enumerate(table_influences):
            total, fourth = float(spread[2 + 2 * index]), float(spread[3 + 2 * index])
            diffs[name] = (getattr(b, name) - getattr(a, name),
                           math.sqrt(total) / a.num if a.num else math.nan)
            terms[name] = total * (total / fourth) if fourth > 0 else math.nan
        return AucComparison(pred=self.compare, result=b, auc_diff=b.auc - auc,
                             auc_diff_stderr=math.sqrt(variance), diffs=diffs,
                             diff_terms={"auprc": terms["auprc"]})

    def _moments(self, sums: dict[str, np.ndarray], model: str = "") -> np.ndarray:
        """The merged moments as floats (``model`` ``"_b"``: model B's), under frequency
        weights with the fields the table's sums hold filled in
        (:func:`mpieval.kinds.auc.moments.from_sums`)."""
        merged = exact.to_floats(sums["moments" + model])
        if self.weights == "importance" or not merged[moments.V] > 0:
            return merged
        table = sums["table" + model]
        return moments.from_sums(merged, exact.to_floats(sums["sums" + model]),
                                 float(table[1].sum()), float(table.sum()))

    def _recalibrated_diff(self, sums: dict[str, np.ndarray], comm: Comm,
                           result: AucResult) -> AucResult:
        """``result`` with its comparison's ``ne_recalibrated`` difference; collective when
        both models' NE have an interval (the same on every rank: from the merged sums):
        one more sum over ranks of the rows' paired influences (two numbers)."""
        compare = result.compare
        assert compare is not None
        frequency = self.weights == "frequency"
        a = buckets.influence_tables(sums["table"], float(exact.to_floats(
            sums["sums"])[kernels.SUM_LOGLOSS]), frequency=frequency)
        b = buckets.influence_tables(sums["table_b"], float(exact.to_floats(
            sums["sums_b"])[kernels.SUM_LOGLOSS]), frequency=frequency)
        stderr = math.nan
        if a is not None and b is not None:
            rows = self.state.rows("pairs").columns()
            spread = exact.to_floats(comm.sum(delong.paired_spread(
                rows["bucket_a"], rows["bucket_b"], rows["positive"], rows["negative"],
                a[0], b[0], a[1], b[1])))
            stderr = buckets.paired_stderr(float(spread[0] + spread[1]), result.num)
        diff = buckets.PairedDifference(
            compare.result.ne_recalibrated - result.ne_recalibrated, stderr)
        return dataclasses.replace(result, compare=dataclasses.replace(
            compare, ne_recalibrated=diff))

    def _squares(self, sums: dict[str, np.ndarray], model: str = "") -> np.ndarray | None:
        """The merged sums of squared weights as floats (importance weights; ``model``
        ``"_b"``: with model B's preds), or None."""
        if self.weights != "importance":
            return None
        return exact.to_floats(sums["weight_squares" + model])

    def _parts_added_later(self) -> frozenset[str]:
        """The moments (issue 32): a state saved before them merges, without the intervals
        and paired differences they give."""
        return frozenset({"moments", "moments_b", "cross"})

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        """A saved state of the other weights' meaning is refused by name (a state saved
        before the option existed holds frequency weights)."""
        saved = state.get("options.weights", "frequency")
        saved = saved.item() if isinstance(saved, np.ndarray) else saved
        if saved != self.weights:
            raise ValueError(f"a state of {saved} weights does not merge with one of "
                             f"{self.weights} weights (weights={saved!r} against "
                             f"weights={self.weights!r})")
