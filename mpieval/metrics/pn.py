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
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError
from mpieval.exchange import gather_by_user
from mpieval.kernels.pn import pair_counts
from mpieval.kernels.pn import warm_up as warm_up_kernels
from mpieval.keys import uid_keys_checked
from mpieval.metric import Metric, warn_undefined
from mpieval.rows import RowBuffer
from mpieval.validation import as_vector, check_finite, check_lengths

TIES_MODES = ("negative", "ignore", "half")

# Rows kept until compute. ``check`` is the second, independent hash of a string uid
# (``gather_by_user`` detects key collisions with it); for an integer uid, whose key is
# exact, it is the key itself.
_COLUMNS = {"key": np.uint64, "check": np.uint64, "pred": np.float64, "label": np.float64}

_WORD = 2**32
# Layout of the summable part: rows, then each int64 pair count as two float64 words
# (high, low 32 bits), so that the float64 Allreduce adds them exactly for < 2**21 ranks.
_ROWS, _POSITIVE, _NEGATIVE, _TIE = 0, 1, 3, 5
N_SUMS = 7


def _words(count: int) -> tuple[float, float]:
    return float(count // _WORD), float(count % _WORD)


def _count(total: np.ndarray, at: int) -> int:
    return int(total[at]) * _WORD + int(total[at + 1])


def _halves(doubled: int) -> int | float:
    """``doubled / 2``: an int when whole, else a float ending in .5."""
    return doubled // 2 if doubled % 2 == 0 else doubled / 2


@dataclass(frozen=True)
class PnResult:
    """Result of the ``pn`` kind (formulas: module doc). Pair counts are ints, except that
    in ``half`` mode ``positive_pairs``/``negative_pairs`` may end in .5."""

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
        if ties == "negative":
            positive_pairs, negative_pairs = positive, negative + tie
        elif ties == "ignore":
            positive_pairs, negative_pairs = positive, negative
        elif ties == "half":
            positive_pairs = _halves(2 * positive + tie)
            negative_pairs = _halves(2 * negative + tie)
        else:
            raise InputError("ties", f"must be one of {', '.join(TIES_MODES)}, got {ties!r}")
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "pn",
            "average_pn": logline.json_number(self.average_pn),
            "ins_number": self.ins_number,
            "positive_pairs": self.positive_pairs,
            "negative_pairs": self.negative_pairs,
            "tie_pairs": self.tie_pairs,
            "ties": self.ties,
        }

    def to_log_line(self, name: str) -> str:
        return (
            f"{name}: Average_PN={logline.value(self.average_pn)} "
            f"ins_number={self.ins_number:d} "
            f"positive_pairs={logline.count(self.positive_pairs)} "
            f"negative_paris={logline.count(self.negative_pairs)}"
        )


class PnMetric(Metric):
    """Order of preds against labels inside each uid (formulas: module doc).

    ``update(uid, pred, label)``: ``uid`` ints or strings; ``pred`` and ``label`` finite
    numbers (labels may be graded, 0..3, or real such as a dwell time). Rows are kept
    until :meth:`compute`, which moves each user's rows to one rank and counts there in
    O(n log n); no pair is enumerated.
    """

    kind = "pn"

    @classmethod
    def warm_up(cls) -> None:
        warm_up_kernels()

    def __init__(self, ties: str = "negative", comm: Comm | Any | None = None) -> None:
        super().__init__(comm)
        if ties not in TIES_MODES:
            raise InputError("ties", f"must be one of {', '.join(TIES_MODES)}, got {ties!r}")
        self.ties = ties
        self.rows = RowBuffer(_COLUMNS)
        self._hashed = False  # whether any uid so far was a string (hashed, not exact)

    def update(self, uid: Any, pred: Any, label: Any) -> None:
        """Add a batch of rows (local: no communication)."""
        try:
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            keys, checks = uid_keys_checked("uid", uid)
            check_lengths(uid=keys, pred=p, label=y)
            check_finite("pred", p)
            check_finite("label", y)
        except InputError as error:
            raise self._record(error) from None
        if checks is None:
            checks = keys
        else:
            self._hashed = True
        self.rows.append(
            key=keys,
            check=checks,
            pred=p.astype(np.float64, copy=False),
            label=y.astype(np.float64, copy=False),
        )

    def reset(self) -> None:
        self.rows.clear()
        self._hashed = False
        self._error = None

    def local_part(self, comm: Comm) -> np.ndarray:
        rows = self.rows.columns()
        hashed = comm.any(self._hashed)  # every rank passes checks, or none does
        users = gather_by_user(
            comm,
            rows["key"],
            {"pred": rows["pred"], "label": rows["label"]},
            checks=rows["check"] if hashed else None,
        )
        positive, negative, tie = pair_counts(
            users.starts, users.columns["pred"], users.columns["label"]
        )
        part = np.zeros(N_SUMS, dtype=np.float64)
        part[_ROWS] = len(rows["key"])
        part[_POSITIVE : _POSITIVE + 2] = _words(positive)
        part[_NEGATIVE : _NEGATIVE + 2] = _words(negative)
        part[_TIE : _TIE + 2] = _words(tie)
        return part

    def finish(self, total: np.ndarray, comm: Comm) -> PnResult:
        return PnResult.from_counts(
            ins_number=int(total[_ROWS]),
            positive=_count(total, _POSITIVE),
            negative=_count(total, _NEGATIVE),
            tie=_count(total, _TIE),
            ties=self.ties,
            comm=comm,
        )
