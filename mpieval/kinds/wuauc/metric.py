"""The ``wuauc`` kind: per-user AUC per tag (WUAUC, UAUC), LogLoss, CTRs, COPC, counts.

Exact however the rows are split across ranks: :meth:`WuaucMetric.compute` moves every
user's rows to the rank that owns the user (:func:`mpieval.exchange.exchange_to_owners`),
each rank computes its users' AUCs (a table of the keys groups the rows by user, then
one compiled pass over the users: :mod:`mpieval.kinds.wuauc.kernels`), and the per-tag sums
join the one ``Allreduce`` of :func:`mpieval.metric.compute_all`.

The values and their statistics: :mod:`mpieval.kinds.wuauc.result`; the rows kept per
user and the tags: :mod:`mpieval.user_rows`.

Every sum is exact (:mod:`mpieval.kernels.exact`) and rounded once, so the values have the
same bits on any number of ranks and in any order of rows.

Memory: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (15 bytes a row, 4 more
for a string uid). ``compute()`` holds for a moment, beside the rows: their chunks joined
one column at a time (nothing to join when the rows were reserved:
:meth:`~mpieval.metric.Metric.reserve`), the global tag codes only when some
row has no tag (2 bytes a row), what the exchange receives, 1 byte a row (its part), and
per thread 8 bytes a row of its largest part (4 more while a part is grouped, beside its
table of users) and 8 bytes a row of its heaviest user (24 for float64 preds)
(:func:`~mpieval.kinds.wuauc.kernels.user_auc_sums`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import OwnedRows, exchange_to_owners
from mpieval.kernels import exact
from mpieval.kinds.wuauc import KIND
from mpieval.kinds.wuauc.kernels import row_sums, user_auc_sums
from mpieval.kinds.wuauc.result import N_ROW_SUMS, WuaucResult, block_from_sums
from mpieval.metric import warn_undefined
from mpieval.tags import ALL, reasons_text
from mpieval.user_rows import UserLayout, UserRowsMetric
from mpieval.validation import as_vector, binary_uint8, check_interval, check_lengths


class WuaucMetric(UserRowsMetric):
    """Per-user AUC per tag, exact for any split of a user's rows across ranks.

    ``update(uid, pred, label, tag=None, keys=None)``: ``uid`` integers or strings/bytes
    (never missing); ``pred`` in [0, 1]; ``label`` 0/1; ``tag`` integers or strings (rows
    without a tag count in ``all`` only). With ``extra_keys=("position",)`` a user is the
    pair (uid, position), given as ``keys={"position": ...}`` (GAUC by user and position).

    State: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (key, pred, label, tag
    code, and B's pred with ``compare``).

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    extra_keys : sequence of str, default ()
        More key columns: a user is the uid with these (``update(keys={...})``).
    compare : str, optional
        The name of model B's pred: ``update()`` then takes ``compare=``, and each tag
        block gains the paired A/B values.

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
    compare: str | None

    def __init__(self, comm: Comm | Any | None = None, *, extra_keys: Sequence[str] = (),
                 compare: str | None = None) -> None:
        super().__init__(comm, extra_keys=extra_keys, compare=compare)

    # -- update ------------------------------------------------------------------------

    def update(
        self,
        uid: Any,
        pred: Any,
        label: Any,
        tag: Any = None,
        keys: Mapping[str, Any] | None = None,
        compare: Any = None,
    ) -> None:
        """Add a batch of rows (local: no communication). A bad batch changes nothing.
        With ``compare=`` set on the metric, ``compare`` is model B's pred of the rows."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            b = None if compare is None else as_vector("compare", compare)
            if (b is None) != (self.compare is None):
                raise InputError("compare", "is needed: the metric compares two models"
                                 if b is None else "is given but the metric has compare=None")
            into = self._free_rows(len(p))  # keys and labels computed where they are kept
            user, check = self._user_keys(uid, keys, into)
            check_lengths(uid=user, pred=p, label=y, compare=b)
            check_interval("pred", p, 0.0, 1.0)
            if b is not None:
                check_interval("compare", b, 0.0, 1.0)
            labels = binary_uint8("label", y, out=into.get("label"))
            tags = None if tag is None else self._tags.check(tag, len(p))
        if len(p) == 0:
            return
        self._store(user, check, p, labels, tags, b, into)

    # -- compute -----------------------------------------------------------------------

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: agree on the tags, move rows to their users' owners, sum per tag."""
        layout, local_to_global = self._agree(comm)
        self._layout = layout
        rows = self._stored.columns()
        by_row = exact.accumulator(1 + len(layout.tags), N_ROW_SUMS)
        row_sums(rows["pred"], rows["label"], rows["tag"], local_to_global, by_row)
        blocks = [by_row]
        if self.compare is not None:  # B's row sums: its pred and logloss sums
            by_row_b = exact.accumulator(1 + len(layout.tags), N_ROW_SUMS)
            row_sums(rows["compare"], rows["label"], rows["tag"], local_to_global, by_row_b)
        keys, columns, checks = self._outgoing(layout, local_to_global)
        owned = exchange_to_owners(comm, keys, columns, checks=checks)
        del keys, columns, checks
        blocks.append(comm.agreed(lambda: _user_sums(owned, layout), catch=UidCollisionError))
        if self.compare is not None:
            blocks.append(by_row_b)
        return {"blocks": np.concatenate(blocks, axis=1)}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> WuaucResult:
        assert self._layout is not None, "finish() follows local_sums()"
        names = (ALL, *(str(tag) for tag in self._layout.tags))
        blocks, reasons = [], []  # reasons: (tag, why)
        for name, block_sums in zip(names, exact.to_floats(sums["blocks"]), strict=True):
            block, why = block_from_sums(name, block_sums, self.compare)
            blocks.append(block)
            reasons += [(name, text.removeprefix(f"tag {name}: ")) for text in why]
        if reasons:
            warn_undefined(comm, "wuauc: " + reasons_text(reasons))
        return WuaucResult(tuple(blocks)).with_q_values()

# -- per-user sums on the owner ----------------------------------------------------------


def _user_sums(owned: OwnedRows, layout: UserLayout) -> np.ndarray:
    """``USER_SUM_FIELDS`` per block (``all``, then tags) over the users this rank owns,
    then with a compared model its ``COMPARE_FIELDS``: the rows grouped by user (a table
    of the keys, no sort), then one compiled pass (per model) sorts each user's rows by
    pred (:mod:`mpieval.kinds.wuauc.kernels`)."""
    sums, collision = user_auc_sums(
        owned.keys, owned.checks, owned.columns["pred"], owned.columns["label"],
        owned.columns.get("tag"), len(layout.tags), compare=owned.columns.get("compare"),
    )
    if collision:
        raise UidCollisionError(
            "uid: two different uids share a 64-bit key (a hash collision); "
            "rename one of them"
        )
    return sums
