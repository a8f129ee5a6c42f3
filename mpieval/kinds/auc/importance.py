"""Importance weights of the ``auc`` kind (``weights="importance"``): the sums of squared
weights its intervals need, and the effective sizes read from them.

A frequency weight of 2 is two identical rows; an importance weight is an inverse sampling
rate (negatives kept at a rate of 0.1 get weight 10): the row stands for ``w`` rows of the
population, but it is one observation. The values (AUC, CTRs, COPC) are the same either
way; the intervals are not: under importance weights a weighted sum's variance is ``sum
w^2 x^2``, not ``sum w x^2``. As the table does, a row of label ``y`` and weight ``w``
counts as a positive of weight ``w1 = w y`` and a negative of weight ``w0 = w (1 - y)``
(soft labels split a row between the classes), and the state keeps, beside the table,
these exact sums (:mod:`mpieval.kernels.exact`: the same bits on any split of the rows):

- ``positive_sq = sum w1^2``, ``negative_sq = sum w0^2``;
- ``pred = sum (w1^2 + w0^2) p`` and ``pred_sq = sum (w1^2 + w0^2) p^2`` (``p`` the pred),
  ``positive_pred = sum w1^2 p``.

The classes' effective sizes (Kish) are ``P_e = P^2 / positive_sq`` and ``N_e = N^2 /
negative_sq`` (``P``, ``N`` the classes' weight totals): the number of unweighted rows
that would tell as much. With every weight 1 and 0/1 labels they are ``P`` and ``N``, and
the intervals are the frequency ones to the bit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mpieval.errors import InputError
from mpieval.kernels import exact

FIELDS = ("positive_sq", "negative_sq", "pred", "pred_sq", "positive_pred")
POSITIVE_SQ, NEGATIVE_SQ, PRED, PRED_SQ, POSITIVE_PRED = range(len(FIELDS))


def accumulate(squares: np.ndarray, pred: np.ndarray, label: np.ndarray,
               weight: np.ndarray | None) -> None:
    """Add validated rows to ``squares`` (``len(FIELDS)``, ``exact.DIGITS``), in place.
    Each row's terms are float64 operations on that row alone."""
    y = np.asarray(label, dtype=np.float64)
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    p = np.asarray(pred, dtype=np.float64)
    w1, w0 = w * y, w * (1 - y)
    with np.errstate(over="ignore"):  # a square beyond float64: an error at compute
        q1, q0 = w1 * w1, w0 * w0
        q = q1 + q0
        terms = ((POSITIVE_SQ, q1), (NEGATIVE_SQ, q0), (PRED, q * p), (PRED_SQ, q * p * p),
                 (POSITIVE_PRED, q1 * p))
    for field, values in terms:
        exact.add_values(squares[field], values)


class Effective(NamedTuple):
    """What the intervals read in place of the class totals under importance weights."""

    positives: float  # P_e
    negatives: float  # N_e
    rate_rows: float  # the rows of the actual CTR's Wilson interval (:func:`rate_rows`)


def effective(positives: float, negatives: float, squares: np.ndarray) -> Effective:
    """The classes' effective sizes and the CTR's rows from the class totals and the merged
    ``squares`` (as floats); squares beyond float64's range are an :class:`InputError` of
    ``weight`` (raised alike on every rank: the sums are the job's)."""
    if not np.isfinite(squares).all():
        raise InputError("weight", "too large for importance weights: the sum of their "
                         "squares passes float64's range (1.8e308); scale the weights down "
                         "(the values and intervals do not change when every weight is "
                         "multiplied by one number)")
    return Effective(*class_sizes(positives, negatives, squares),
                     rate_rows(positives, negatives, squares))


def class_sizes(positives: float, negatives: float,
                squares: np.ndarray) -> tuple[float, float]:
    """``(P_e, N_e)``: ``P^2 / sum w1^2`` and ``N^2 / sum w0^2`` (0 for an empty class),
    written ``P (P / sum w1^2)`` so that equal sums give ``P`` itself."""
    return (_kish(positives, float(squares[POSITIVE_SQ])),
            _kish(negatives, float(squares[NEGATIVE_SQ])))


def _kish(total: float, total_sq: float) -> float:
    return total * (total / total_sq) if total_sq > 0 else 0.0


def rate_rows(positives: float, negatives: float, squares: np.ndarray) -> float:
    """The rows ``n`` of the Wilson interval of ``actual_ctr = P / W`` (``W = P + N``):
    the ``n`` with ``r (1 - r) / n`` the rate's variance under importance weights,
    ``(positive_sq (1 - r)^2 + negative_sq r^2) / W^2`` (the delta method, rows
    independent). That is ``1 / (r (1 - r) (1 / P_e + 1 / N_e))``: the frequency one, ``1
    / (r (1 - r) (1 / P + 1 / N)) = W``, with the classes' effective sizes in place of
    their totals; computed as ``W (W / (N a + P b))``, ``a = positive_sq / P`` and ``b =
    negative_sq / N`` the classes' weight-weighted mean weights (so ``W`` itself when both
    are 1). Without positives their weights are unknown and taken as the negatives' (``n
    = N_e``), and the reverse: a wider interval than the positives' own weights might
    give (0 clicks among negatives kept at 0.1: the ``n`` is the rows kept). NaN without
    rows."""
    if positives == 0 and negatives == 0:
        return math.nan
    a = float(squares[POSITIVE_SQ]) / positives if positives > 0 else math.nan
    b = float(squares[NEGATIVE_SQ]) / negatives if negatives > 0 else math.nan
    a = b if math.isnan(a) else a
    b = a if math.isnan(b) else b
    total, spread = positives + negatives, negatives * a + positives * b
    return total * (total / spread) if spread > 0 else math.nan
