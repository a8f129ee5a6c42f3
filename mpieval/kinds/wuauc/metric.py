"""The ``wuauc`` kind: per-user AUC per tag (WUAUC, UAUC), LogLoss, CTRs, COPC, counts.

Exact however the rows are split across ranks: :meth:`WuaucMetric.compute` moves every
user's rows not moved yet (:meth:`~mpieval.metric.Metric.move_rows`) to the rank that owns
the user (:func:`mpieval.exchange.move_to_owners`),
each rank computes its users' AUCs (a table of the keys groups the rows by user, then
one compiled pass over the users: :mod:`mpieval.kinds.wuauc.kernels`), and the per-tag sums
join the one ``Allreduce`` of :func:`mpieval.metric.compute_all`.

The values and their statistics: :mod:`mpieval.kinds.wuauc.result`; the rows kept per
user and the tags: :mod:`mpieval.user_rows`.

Every sum is exact (:mod:`mpieval.kernels.exact`) and rounded once, so the values have the
same bits on any number of ranks and in any order of rows.

Memory: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (17 bytes a row, 4 more
for a string uid): after the moves, the rows of this rank's users. ``compute()`` holds
for a moment, beside the rows: the rows not moved yet, in transit, their chunks joined
one column at a time (nothing to join when the rows were reserved:
:meth:`~mpieval.metric.Metric.reserve`), the global tag codes only when some
row has no tag (2 bytes a row), 1 byte a row (its part), and
per thread 8 bytes a row of its largest part (12 for float64 preds without weights and a
compared model; 8 more while a part is grouped, beside its table of users) and 8 bytes a
row of its heaviest user (24 for float64 preds)
(:func:`~mpieval.kinds.wuauc.kernels.user_auc_sums`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import OwnedRows
from mpieval.kernels import exact
from mpieval.kernels.codes import TAG_DTYPE
from mpieval.kinds.wuauc import KIND
from mpieval.kinds.wuauc.kernels import row_sums_windowed, user_auc_windows
from mpieval.kinds.wuauc.result import (
    COMPARE_FIELDS,
    FIELDS,
    N_ROW_SUMS,
    WuaucResult,
    blocks_of_many,
)
from mpieval.metric import Metric, Result, narrowed_sums, warn_undefined
from mpieval.rows import RowBuffer
from mpieval.state import Part, Rows
from mpieval.tags import BlockNames, held_reasons_text
from mpieval.user_rows import UserLayout, UserRowsMetric
from mpieval.validation import (
    as_vector,
    binary_uint8,
    check_interval,
    check_lengths,
    check_weight,
)


class WuaucMetric(UserRowsMetric):
    """Per-user AUC per tag, exact for any split of a user's rows across ranks.

    ``update(uid, pred, label, tag=None, keys=None, compare=None, weight=None)``: ``uid``
    integers or strings/bytes (never missing); ``pred`` in [0, 1]; ``label`` 0/1; ``tag``
    integers or strings (rows without a tag count in ``all`` only); ``weight`` finite
    weights >= 0 (a row's weight counts inside its user's AUC, the pairs of rows ``i``,
    ``j`` weighing ``w_i w_j``: an integer weight is that many repeated rows, exactly;
    the CTRs, COPC and LogLoss are weighted means; a user weighs its rows' weight in
    WUAUC and the counts are sums of weights). With ``extra_keys=("position",)`` a user is the
    pair (uid, position), given as ``keys={"position": ...}`` (GAUC by user and position).

    State: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (key, pred, label, tag
    code, and B's pred with ``compare``) and, once a batch has weights, a float64 weight a
    row (``weights``; 1 for the rows given without one).

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    extra_keys : sequence of str, default ()
        More key columns: a user is the uid with these (``update(keys={...})``).
    compare : str, optional
        The name of model B's pred: ``update()`` then takes ``compare=``, and each tag
        block gains the paired A/B values.
    weights : {"frequency", "importance"}, default "frequency"
        What a weight means, said in the result (``weights``); the per-user intervals are
        the same under both (users are the clusters: a user's weighted sums carry its
        weights' spread, docs/statistics.md).

    Raises
    ------
    InputError
        A bad option (``update()``: a bad batch, raised again by ``compute()`` on every
        rank).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import WuaucMetric
    >>> metric = WuaucMetric()
    >>> metric.update(uid=np.array([1, 1, 1, 2, 2]), pred=np.array([0.2, 0.7, 0.4, 0.9, 0.1]),
    ...               label=np.array([0, 1, 0, 1, 0]), tag=np.array(["a", "a", "b", "a", "b"]))
    >>> result = metric.compute()
    >>> result.all.wuauc, result.all.valid_user_count
    (1.0, 2)
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    arguments = ("extra_keys",)
    fresh_sums = True  # (its local sums: per-tag windows made for the call)
    compare: str | None
    weights: str

    def __init__(self, comm: Comm | Any | None = None, *, extra_keys: Sequence[str] = (),
                 compare: str | None = None, weights: str = "frequency") -> None:
        super().__init__(comm, extra_keys=extra_keys, compare=compare, weights=weights)
        self._first_digit: dict[str, int] = {}  # of each part's window (local_sums)
        self._totals: dict[str, np.ndarray] = {}  # parts summed by their owners (local_sums)

    def state_layout(self) -> dict[str, Part]:
        return {**super().state_layout(), "weights": Rows({"weight": np.float64})}

    @property
    def _weights(self) -> RowBuffer:
        return self.state.rows("weights")

    def _aligned(self, comm: Comm) -> list[RowBuffer]:
        """Collective: the weights travel with their rows when any rank has weights (a
        rank without them gives its rows weight 1 first)."""
        if not any(comm.allgather(len(self._weights) > 0)):
            return []
        missing = len(self._stored) - len(self._weights)
        if missing:
            self._weights.append(weight=np.ones(missing))
        return [self._weights]

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both (the rows of one without weights weigh
        1 when the other has weights)."""
        merged = super().merge(other)
        assert isinstance(merged, WuaucMetric) and isinstance(other, WuaucMetric)
        if len(merged._weights) not in (0, len(merged._stored)):
            weights = [m._weights.columns()["weight"] if len(m._weights) else
                       np.ones(len(m._stored)) for m in (self, other)]
            merged._weights.clear()
            merged._weights.append(weight=np.concatenate(weights))
        return merged

    def _load_one(self, state: Mapping[str, Any]) -> None:
        if "weights.weight" not in state:  # saved before wuauc took weights
            state = {**state, "weights.weight": np.zeros(0)}
        super()._load_one(state)

    # -- update ------------------------------------------------------------------------

    def update(
        self,
        uid: Any,
        pred: Any,
        label: Any,
        tag: Any = None,
        keys: Mapping[str, Any] | None = None,
        compare: Any = None,
        weight: Any = None,
    ) -> None:
        """Add a batch of rows (local: no communication). A bad batch changes nothing.
        With ``compare=`` set on the metric, ``compare`` is model B's pred of the rows;
        ``weight``: each row's weight (finite, >= 0)."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            b = None if compare is None else as_vector("compare", compare)
            w = None if weight is None else as_vector("weight", weight)
            if (b is None) != (self.compare is None):
                raise InputError("compare", "is needed: the metric compares two models"
                                 if b is None else "is given but the metric has compare=None")
            # keys and labels computed where they are kept (unless rows are dropped below)
            into = self._free_rows(len(p)) if w is None else {}
            user, check = self._user_keys(uid, keys, into)
            check_lengths(uid=user, pred=p, label=y, compare=b, weight=w)
            if w is not None:
                check_weight("weight", w)
            check_interval("pred", p, 0.0, 1.0)
            if b is not None:
                check_interval("compare", b, 0.0, 1.0)
            labels = binary_uint8("label", y, out=into.get("label"))
            tags = None if tag is None else self._tags.check(tag, len(p))
        if w is not None and not w.all():  # a row of weight 0 is no row (0 repeated rows)
            keep = w != 0
            user, p, labels, w = user[keep], p[keep], labels[keep], w[keep]
            check = None if check is None else check[keep]
            b = None if b is None else b[keep]
            tags = None if tags is None else _kept_tags(tags, keep)
        if len(p) == 0:
            return
        self._store(user, check, p, labels, tags, b, into)
        if w is not None or len(self._weights):
            before = len(self._stored) - len(p) - len(self._weights)  # rows weighing 1
            if before:
                self._weights.append(weight=np.ones(before))
            self._weights.append(weight=np.ones(len(p)) if w is None
                                 else w.astype(np.float64, copy=False))

    # -- compute -----------------------------------------------------------------------

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: move the rows left to their users' owners, agree on the tags, sum
        per tag."""
        layout, local_to_global = self._gather(comm)
        self._layout = layout
        rows = self._stored.columns()
        # weighted when some rank has weights (the others' rows weigh 1)
        weighted = any(comm.allgather(len(self._weights) > 0))
        weight = None
        if weighted:
            weight = (self._weights.columns()["weight"] if len(self._weights)
                      else np.ones(len(self._stored)))
        keys, columns, checks = self._outgoing(layout, local_to_global)
        blocks_n = 1 + len(layout.tags)
        # the rows' tags as indexes among layout.tags (len(tags): none), each its block's
        tags = columns.get("tag")  # None: no tags
        block_of_tag = np.arange(blocks_n, dtype=TAG_DTYPE)
        kept = comm.sums_owned  # (many tags: pairs summed by the tags' owners)
        by_row, row_first = row_sums_windowed(rows["pred"], rows["label"], tags,
                                              block_of_tag, blocks_n, N_ROW_SUMS, weight,
                                              alone=comm.alone, kept=kept)
        blocks = {"rows": by_row}
        if self.compare is not None:  # B's row sums: its pred and logloss sums
            by_row_b, row_first_b = row_sums_windowed(
                rows["compare"], rows["label"], tags, block_of_tag, blocks_n, N_ROW_SUMS,
                weight, alone=comm.alone, kept=kept)
        del tags, block_of_tag
        if weight is not None:
            columns["weight"] = weight
        owned = OwnedRows(keys=keys, checks=checks, columns=columns)
        del keys, columns, checks
        user_parts, user_firsts = comm.agreed(partial(_user_sums, owned, layout, comm.alone,
                                                      kept), catch=UidCollisionError)
        del owned  # (the rows: compute()'s peak comes later, with the sums)
        names = ("users", "moments") + (() if self.compare is None
                                        else ("users_b", "diffs", "moments_b"))
        blocks.update(zip(names, user_parts, strict=True))
        firsts = dict(zip(names, user_firsts, strict=True))
        firsts["rows"] = row_first
        del by_row, user_parts
        if self.compare is not None:
            blocks["rows_b"], firsts["rows_b"] = by_row_b, row_first_b
            del by_row_b
        # each block's fields are these parts' side by side (block_from_sums), joined as
        # floats in finish(): the exact sums are not copied once more (many tags), and are
        # sent as the window of digits some rank uses, or summed by the tags' owners
        narrowed, self._first_digit, self._totals = narrowed_sums(blocks, comm, firsts)
        return narrowed

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> WuaucResult:
        finished = self.finished_together([self], [sums], comm)
        assert finished is not None  # (one metric: with compare too)
        (result, said), = finished
        assert isinstance(result, WuaucResult)
        if said is not None:
            warn_undefined(comm, said)
        return result

    @classmethod
    def finished_together(cls, metrics: Sequence[Metric], sums: Sequence[dict[str, np.ndarray]],
                          comm: Comm) -> list[tuple[Result, str | None]] | None:
        """Every block of every metric at once (many slices: one pass, not one a slice);
        with ``compare`` one metric at a time (its q-values are over its own blocks)."""
        chosen = [metric for metric in metrics if isinstance(metric, WuaucMetric)]
        if len(chosen) != len(metrics) or (
                len(chosen) > 1 and any(metric.compare is not None for metric in chosen)):
            return None
        names = []
        columns: list[list[np.ndarray]] = []
        for metric, parts in zip(chosen, sums, strict=True):
            assert metric._layout is not None, "finish() follows local_sums()"
            names.append(BlockNames(metric._layout.tags))  # (many tags: no text a tag yet)
            # each part taken out of sums (or the parts summed by their owners) as it is
            # rounded: freed then on a rank alone, whose parts are the sums themselves
            # (many tags)
            totals, metric._totals = metric._totals, {}
            rounded = {name: exact.rounded(totals.pop(name) if name in totals
                                           else parts.pop(name), first)
                       for name, first in metric._first_digit.items()}
            _check_weight_total(float(rounded["rows"][0, 0]))  # block all's rows weighed
            columns.append([column for part in rounded.values() for column in part.T])
        # every block's values at once (many tags), each field's column as the part holds
        # it (one metric, a rank alone: contiguous, no copy); with compare, the
        # comparisons' too
        compare = chosen[0].compare
        fields = FIELDS if compare is None else FIELDS + COMPARE_FIELDS
        joined = dict(zip(fields, columns[0] if len(columns) == 1 else map(
            np.concatenate, zip(*columns, strict=True)), strict=True))
        return [(WuaucResult(blocks, weights=metric.weights),
                 f"{KIND.name}: " + held_reasons_text(held, one) if held else None)
                for metric, one, (blocks, held)
                in zip(chosen, names, blocks_of_many(names, joined, compare), strict=True)]


def _check_weight_total(rows: float) -> None:
    """The weighted rows of every batch and rank (a batch's own are checked as it comes)
    fit in float64; else an :class:`InputError` of ``weight``, raised alike on every rank
    (the total is the job's): an infinite total would give values such as ``actual_ctr``
    0."""
    if not math.isfinite(rows):
        raise InputError("weight", "too large: the weights of every batch and rank sum past "
                         "float64's range (1.8e308), so wuauc cannot be computed; scale the "
                         "weights down (wuauc, the ctrs and copc do not change when every "
                         "weight is multiplied by one number)")


def _kept_tags(tags: tuple[list[Any], np.ndarray], keep: np.ndarray
               ) -> tuple[list[Any], np.ndarray]:
    """Checked tags (:meth:`mpieval.tags.TagCodes.check`: distinct values, each row's
    index among them) of the rows ``keep`` selects: the values of those rows only."""
    distinct, inverse = tags
    kept = inverse[keep]
    used = np.unique(kept)
    return [distinct[int(i)] for i in used], np.searchsorted(used, kept)


# -- per-user sums on the owner ----------------------------------------------------------


def _user_sums(owned: OwnedRows, layout: UserLayout, alone: bool,
               kept: bool) -> tuple[list[exact.Sums], list[int]]:
    """``USER_SUM_FIELDS`` per block (``all``, then tags) over the users this rank owns,
    then with a compared model its ``COMPARE_FIELDS``: the rows grouped by user (a table
    of the keys, no sort), then one compiled pass (per model) sorts each user's rows by
    pred (:mod:`mpieval.kinds.wuauc.kernels`); rounded at once on a rank ``alone``, or
    ``kept`` as pairs (many tags)."""
    sums, firsts, collision = user_auc_windows(
        owned.keys, owned.checks, owned.columns["pred"], owned.columns["label"],
        owned.columns.get("tag"), len(layout.tags), compare=owned.columns.get("compare"),
        weight=owned.columns.get("weight"), alone=alone, kept=kept,
    )
    if collision:
        raise UidCollisionError(
            "uid: two different uids share a 64-bit key (a hash collision); "
            "rename one of them"
        )
    return sums, firsts
