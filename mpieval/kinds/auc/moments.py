"""The sums behind the ``auc`` kind's intervals of logloss, NE, RMSE, MAE, the CTRs and
COPC, and behind the paired differences of ``--compare`` (issue 32).

Every row adds ``v f(row)`` to an exact accumulator (:mod:`mpieval.kernels.exact`: the same
bits on any number of ranks) for each field of :data:`FIELDS`, with ``v`` the row's weight
``w`` (frequency weights: ``w`` repeated rows) or its square ``w^2`` (importance weights: a
row is one observation standing for ``w``), 1 without weights. Then a mean ``m = sum w a /
sum w`` over independent rows has the delta-method variance ``sum v (a - m)^2 / (sum
w)^2`` under either meaning, written with these sums (:func:`mpieval.kernels.stats.ratio_stderr`).

Per model (``p`` the pred, ``y`` the label, ``ce`` the row's logloss with the pred clipped
to ``[1e-15, 1 - 1e-15]``, ``e = p - y``): ``v``, ``v y``, ``v y^2``, ``v p``, ``v p^2``,
``v p y``, ``v ce``, ``v ce^2``, ``v ce y``, ``v |e|``, ``v e^2``, ``v e^4``; and ``u``,
``u p``, ``u p^2``, ``u p^3`` with ``u`` the weight or its cube (importance), for the
third moment of the predicted CTR (its skewness:
:func:`mpieval.kernels.stats.skewed_mean_interval`). Comparing
(:data:`CROSS`): ``v p_A p_B`` and ``v ce_A ce_B``, the products of the two models' per-row
values that pair them.
"""

from __future__ import annotations

import numpy as np

from mpieval import _core
from mpieval.kernels import exact

FIELDS = ("v", "y", "yy", "p", "pp", "py", "ce", "cece", "cey", "abs", "sq", "fourth", "u",
          "up", "upp", "uppp")
(V, Y, YY, P, PP, PY, CE, CECE, CEY, ABS, SQ, FOURTH, U, UP, UPP, UPPP) = range(len(FIELDS))
CROSS = ("pp", "cece")
CROSS_PP, CROSS_CECE = range(len(CROSS))

PRED_CLIP = 1e-15


def row_weights(n: int, weight: np.ndarray | None, importance: bool
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``(v, u)``: 1 and 1, ``w`` and ``w``, or ``w^2`` and ``w^3`` (importance
    weights)."""
    if weight is None:
        return np.ones(n), np.ones(n)
    w = np.asarray(weight, dtype=np.float64)
    if not importance:
        return w, w
    with np.errstate(over="ignore"):  # beyond float64: an error at compute
        squared: np.ndarray = w * w
        cubed: np.ndarray = squared * w
    return squared, cubed


def cross_entropy(pred: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Each row's ``-(y ln q + (1 - y) ln(1 - q))``, ``q`` the pred clipped."""
    q = np.clip(np.asarray(pred, dtype=np.float64), PRED_CLIP, 1 - PRED_CLIP)
    y = np.asarray(label, dtype=np.float64)
    ce: np.ndarray = -(y * np.log(q) + (1 - y) * np.log1p(-q))
    return ce


NEW_UNDER_FREQUENCY = (V, CECE, CEY, FOURTH, UPPP)
"""The fields kept under frequency weights: the others are sums the table's own
(:data:`mpieval.kinds.auc.kernels.SUM_FIELDS`) already holds, filled in by
:func:`from_sums` (``v`` itself is kept as the mark of a state that has the moments)."""


def accumulate(sums: np.ndarray, pred: np.ndarray, label: np.ndarray,
               weights: tuple[np.ndarray, np.ndarray] | None, *, binary: bool = False,
               importance: bool = False) -> None:
    """Add validated rows to ``sums`` (``len(FIELDS)``, ``exact.DIGITS``), in place;
    ``weights`` the ``(v, u)`` of :func:`row_weights`, None without weights. Under
    frequency weights only :data:`NEW_UNDER_FREQUENCY`. Each row's terms are float64
    operations on that row alone; ``binary``: 0/1 labels (one log a row)."""
    if binary and weights is None and _compiled(pred, label):
        # the kernel's own log (the same bits on every machine), compiled (issue 37)
        _core.auc.moments_binary(pred, label, sums, CECE, CEY, FOURTH, UPPP)
        exact.add_values(sums[V], np.array([float(len(pred))]))
        return
    p = np.asarray(pred, dtype=np.float64)
    y = np.asarray(label, dtype=np.float64)
    if binary:  # one log a row, the kernels' own (as the compiled moments': the same bits)
        q = np.clip(p, PRED_CLIP, 1 - PRED_CLIP)
        ce = np.empty_like(q)
        _core.logloss.log(np.ascontiguousarray(np.where(y == 1, q, 1 - q)), ce)
        np.negative(ce, out=ce)
    else:
        ce = cross_entropy(p, y)
    e = p - y
    e2 = e * e
    with np.errstate(over="ignore", invalid="ignore"):  # huge weights: an error at compute
        if weights is None:
            exact.add_values(sums[V], np.array([float(len(p))]))
            terms = {CECE: ce * ce, CEY: ce * y, FOURTH: e2 * e2, UPPP: p * p * p}
        elif not importance:
            v = weights[0]
            terms = {V: v, CECE: v * ce * ce, CEY: v * ce * y, FOURTH: v * e2 * e2,
                     UPPP: v * p * p * p}
        else:
            v, u = weights
            terms = {V: v, Y: v * y, YY: v * y * y, P: v * p, PP: v * p * p, PY: v * p * y,
                     CE: v * ce, CECE: v * ce * ce, CEY: v * ce * y, ABS: v * np.abs(e),
                     SQ: v * e2, FOURTH: v * e2 * e2, U: u, UP: u * p, UPP: u * p * p,
                     UPPP: u * p * p * p}
    for field, values in terms.items():
        exact.add_values(sums[field], values)


def _compiled(pred: np.ndarray, label: np.ndarray) -> bool:
    """Whether the compiled moments take these arrays as they are (the update's own
    dtypes, contiguous)."""
    from mpieval.kinds.auc.kernels import LABEL_DTYPES, PRED_DTYPES

    return (isinstance(pred, np.ndarray) and isinstance(label, np.ndarray)
            and pred.dtype in PRED_DTYPES and label.dtype in LABEL_DTYPES
            and pred.flags.c_contiguous and label.flags.c_contiguous)


def from_sums(moments: np.ndarray, sums: np.ndarray, positives: float, num: float,
              ) -> np.ndarray:
    """The frequency moments (floats) with the fields the table's sums hold filled in:
    ``y`` the positives, ``p``, ``p^2``, ``p y``, ``ce``, ``|e|``, ``e^2`` from
    :data:`mpieval.kinds.auc.kernels.SUM_FIELDS`, ``u`` the same as ``v``."""
    from mpieval.kinds.auc import kernels

    out = np.array(moments, dtype=np.float64)
    out[Y], out[YY] = positives, sums[kernels.SUM_LABEL_SQ]
    out[P], out[PP] = sums[kernels.SUM_PRED], sums[kernels.SUM_PRED_SQ]
    out[PY], out[CE] = sums[kernels.SUM_LABEL_PRED], sums[kernels.SUM_LOGLOSS]
    out[ABS], out[SQ] = sums[kernels.SUM_ABSERR], sums[kernels.SUM_SQRERR]
    out[U], out[UP], out[UPP] = out[V], out[P], out[PP]
    return out


def accumulate_cross(sums: np.ndarray, pred_a: np.ndarray, pred_b: np.ndarray,
                     label: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> None:
    """Add the rows' :data:`CROSS` products of models A and B to ``sums`` (``len(CROSS)``,
    ``exact.DIGITS``), in place."""
    v = weights[0]
    a = np.asarray(pred_a, dtype=np.float64)
    b = np.asarray(pred_b, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # huge weights: an error at compute
        pp = v * a * b
        cece = v * cross_entropy(a, label) * cross_entropy(b, label)
    exact.add_values(sums[CROSS_PP], pp)
    exact.add_values(sums[CROSS_CECE], cece)
