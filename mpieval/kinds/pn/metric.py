"""The ``pn`` kind: positive/negative pair order inside each uid.

Every pair of rows with the same uid and different labels, ordered so that
``label_i < label_j``, is positive when ``pred_i < pred_j``, negative when
``pred_i > pred_j`` and a tie when the preds are equal. With the ``ties`` mode::

    negative (default):  positive_pairs = P,         negative_pairs = N + T
    ignore:              positive_pairs = P,         negative_pairs = N
    half:                positive_pairs = P + T / 2, negative_pairs = N + T / 2

    average_pn = positive_pairs / negative_pairs      (NaN when negative_pairs = 0)

``tie_pairs = T`` is always reported; ``ins_number`` is the number of rows. A user's
rows may sit on any ranks: they are moved to the rank that owns the user first, so the
counts are exact whatever the partitioning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import UidCollisionError
from mpieval.exchange import group_rows
from mpieval.kernels.sort import radix_order
from mpieval.kinds.pn import KIND
from mpieval.kinds.pn.kernels import grouped, pair_counts
from mpieval.metric import FieldsResult, warn_undefined
from mpieval.user_rows import CHECK_DTYPE, UserRowsMetric, as_float32, narrowed
from mpieval.validation import as_vector, check_finite, check_lengths

_WORD = 2**32


def _words(count: int) -> np.ndarray:
    """An int64 pair count as two float64 words (high, low 32 bits), so that the float64
    ``Allreduce`` adds counts exactly for fewer than 2**21 ranks."""
    return np.array([count // _WORD, count % _WORD], dtype=np.float64)


def _count(words: np.ndarray) -> int:
    return int(words[0]) * _WORD + int(words[1])


def _halves(doubled: int) -> int | float:
    """``doubled / 2``: an int when whole, else a float ending in .5."""
    return doubled // 2 if doubled % 2 == 0 else doubled / 2


@dataclass(frozen=True)
class PnResult(FieldsResult):
    """Result of the ``pn`` kind (formulas: module doc). Pair counts are ints, except that
    in ``half`` mode ``positive_pairs``/``negative_pairs`` may end in .5."""

    kind = KIND.name
    average_pn: float
    ins_number: int
    positive_pairs: int | float
    negative_pairs: int | float
    tie_pairs: int
    ties: str = "negative"

    @classmethod
    def from_counts(
        cls,
        ins_number: int,
        positive: int,
        negative: int,
        tie: int = 0,
        ties: str = "negative",
        comm: Comm | None = None,
    ) -> PnResult:
        """The result from the raw counts (P, N, T of the module doc); with ``comm``, warns
        once when ``average_pn`` is undefined."""
        ties = PnMetric.option("ties").check("ties", ties)
        positive_pairs: int | float = positive
        negative_pairs: int | float = negative
        if ties == "negative":
            negative_pairs = negative + tie
        elif ties == "half":
            positive_pairs = _halves(2 * positive + tie)
            negative_pairs = _halves(2 * negative + tie)
        if negative_pairs == 0:
            average = math.nan
            if comm is not None:
                warn_undefined(comm, "pn: average_pn is undefined: there is no negative pair")
        else:
            average = positive_pairs / negative_pairs
        return cls(
            average_pn=average,
            ins_number=int(ins_number),
            positive_pairs=positive_pairs,
            negative_pairs=negative_pairs,
            tie_pairs=int(tie),
            ties=ties,
        )

    def to_log_line(self, name: str) -> str:
        return (
            f"{name}: Average_PN={logline.value(self.average_pn)} "
            f"ins_number={self.ins_number:d} "
            f"positive_pairs={logline.count(self.positive_pairs)} "
            f"negative_paris={logline.count(self.negative_pairs)}"
        )


class PnMetric(UserRowsMetric):
    """Order of preds against labels inside each uid (formulas: module doc).

    ``update(uid, pred, label)``: ``uid`` ints or strings; ``pred`` and ``label`` finite
    numbers (labels may be graded, 0..3, or real such as a dwell time). Rows are kept
    until :meth:`compute`, which moves each user's rows to one rank and counts there in
    O(n log n); no pair is enumerated.

    State: the rows of :class:`~mpieval.user_rows.UserRowsMetric` without tags (key,
    pred and label, each of these float32 while every value is a float32 value, else
    float64) and, for string uids, their checks (the second hash, with which the
    exchange detects key collisions), both merged by concatenation.

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    ties : {"negative", "ignore", "half"}, default "negative"
        How a pair with equal preds counts.

    Raises
    ------
    InputError
        An unknown ``ties`` (``update()``: a bad batch, raised again by ``compute()`` on
        every rank).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import PnMetric
    >>> metric = PnMetric(ties="half")
    >>> metric.update(uid=np.array([7, 7, 7]), pred=np.array([0.1, 0.5, 0.5]),
    ...               label=np.array([0, 1, 2]))
    >>> print(metric.compute().to_log_line("pn"))
    pn: Average_PN=5 ins_number=3 positive_pairs=2.5 negative_paris=0.5
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    label_dtype = np.float32
    tagged = False
    sheds = False  # its pass is cheap a row: handing users over costs its owner more
    ties: str

    def __init__(self, comm: Comm | Any | None = None, *, ties: str = "negative") -> None:
        super().__init__(comm, ties=ties)

    def _extra_state(self) -> dict[str, Any]:
        return {}  # neither key columns nor tags

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        pass

    def _load_one(self, state: Mapping[str, Any]) -> None:
        if "rows.check" in state:  # saved while pn kept a row's check beside its key
            state = _with_checks_apart(state)
        super()._load_one(state)

    def update(self, uid: Any, pred: Any, label: Any) -> None:
        """Add a batch of rows (local: no communication)."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            user, check = self._user_keys(uid, None)
            check_lengths(uid=user, pred=p, label=y)
            check_finite("pred", p)
            check_finite("label", y)
        if len(p) == 0:
            return
        kept = narrowed(self._stored, "label", y)
        self._store(user, check, p, kept, None, label_made=kept is not y)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: move the rows left to their users' owners, count the pairs there."""
        layout, _ = self._gather(comm)
        rows = self._stored.columns()
        checks = self.state.rows("checks").columns()["check"] if layout.hashed else None
        starts, pred, label = comm.agreed(
            lambda: _grouped(rows["key"], checks, rows["pred"], rows["label"]),
            catch=UidCollisionError,
        )
        positive, negative, tie = pair_counts(starts, pred, label)
        return {"rows": np.array([len(rows["key"])], dtype=np.float64),
                "positive": _words(positive), "negative": _words(negative), "tie": _words(tie)}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> PnResult:
        return PnResult.from_counts(
            ins_number=int(sums["rows"][0]),
            positive=_count(sums["positive"]),
            negative=_count(sums["negative"]),
            tie=_count(sums["tie"]),
            ties=self.ties,
            comm=comm,
        )


def _grouped(keys: np.ndarray, checks: np.ndarray | None, pred: np.ndarray,
             label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, pred, label)``: the rows grouped by key for :func:`pair_counts`, each
    user's rows together (the users in key order, a user's rows in some order: the counts
    do not depend on it), by a radix sort of the keys carrying the row numbers
    (:func:`mpieval.kernels.sort.radix_order`; beside the rows, 24 bytes a row while it
    sorts), then one compiled pass for the users' first rows, the rows' preds and labels in
    that order and the checks (:func:`~mpieval.kinds.pn.kernels.grouped`). Two rows of one
    key with different ``checks`` raise the :class:`UidCollisionError` of
    :func:`mpieval.exchange.group_rows`."""
    n = len(keys)
    if n >= 2**32:  # row numbers past uint32: numpy's sort
        users = group_rows(keys, {"pred": pred, "label": label}, checks=checks)
        return users.starts, users.columns["pred"], users.columns["label"]
    sorted_keys = np.array(keys, dtype=np.uint64, order="C")
    order = radix_order(sorted_keys)
    starts, pred, label, collision = grouped(sorted_keys, order, pred, label, checks)
    if collision:
        group_rows(keys, {}, checks=checks)  # raises the collision, named as always
    return starts, pred, label


def _with_checks_apart(state: Mapping[str, Any]) -> dict[str, Any]:
    """A state saved while pn kept ``rows.check`` (a row's check, the key itself for an
    integer uid) as the rows are kept now: the checks apart (their low 32 bits, for
    string uids: some check not its key, as compute told them) and the label and pred
    as narrow as their values allow."""
    state = dict(state)
    keys, checks = np.asarray(state["rows.key"]), np.asarray(state.pop("rows.check"))
    hashed = bool(np.any(checks != keys))
    state["checks.check"] = (checks if hashed else checks[:0]).astype(CHECK_DTYPE)
    for name in ("rows.pred", "rows.label"):
        narrow = as_float32(np.asarray(state[name]))
        if narrow is not None:
            state[name] = narrow
    return state
