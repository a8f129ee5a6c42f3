"""The ``wuauc`` kind: per-user AUC per tag (WUAUC, UAUC), LogLoss, CTRs, COPC, counts.

Exact however the rows are split across ranks: :meth:`WuaucMetric.compute` moves every
user's rows to the rank that owns the user (:func:`mpieval.exchange.exchange_to_owners`),
each rank computes its users' AUCs (one value sort groups the rows by user, then one
compiled pass over the users: :mod:`mpieval.kinds.wuauc.kernels`), and the per-tag sums join
the one ``Allreduce`` of :func:`mpieval.metric.compute_all`.

The values and their statistics: :mod:`mpieval.kinds.wuauc.result`; tag values and codes:
:mod:`mpieval.kinds.wuauc.tags`.

Every sum is exact (:mod:`mpieval.kernels.exact`) and rounded once, so the values have the
same bits on any number of ranks and in any order of rows.

Memory: a stored row costs 15 bytes (8 key, 4 pred while every pred is a float32 value,
else 8, 1 label, 2 tag), 8 more for a string uid or a several-column key (the hash that
detects collisions), nothing spare (:class:`~mpieval.rows.RowBuffer`).
``compute()`` holds for a moment, beside the rows: their chunks joined one column at a
time, the global tag codes (2 bytes a row), what the exchange receives, 1 byte a row (its
part) and 8 bytes a row of each part being sorted, and 24 bytes a row of the heaviest
user, per thread (:func:`~mpieval.kinds.wuauc.kernels.user_auc_sums`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import OwnedRows, exchange_to_owners
from mpieval.kernels import exact
from mpieval.keys import group_keys_checked, uid_keys_checked
from mpieval.kinds.wuauc import KIND
from mpieval.kinds.wuauc.kernels import row_sums, user_auc_sums
from mpieval.kinds.wuauc.kernels import warm_up as warm_up_kernels
from mpieval.kinds.wuauc.result import N_ROW_SUMS, WuaucResult, block_from_sums
from mpieval.kinds.wuauc.tags import ALL, MAX_TAGS, NO_TAG, TagCodes
from mpieval.metric import Metric, warn_undefined
from mpieval.rows import RowBuffer
from mpieval.state import Part, Rows
from mpieval.validation import as_vector, check_binary, check_interval, check_lengths


@dataclass(frozen=True)
class _Layout:
    """What every rank agreed on before the exchange."""

    tags: tuple[Any, ...]  # tag values, sorted
    hashed: bool  # keys are hashes: a check column travels with them
    pred_dtype: np.dtype  # float32 when every rank's preds are float32 values


class WuaucMetric(Metric):
    """Per-user AUC per tag, exact for any split of a user's rows across ranks.

    ``update(uid, pred, label, tag=None, keys=None)``: ``uid`` integers or strings/bytes
    (never missing); ``pred`` in [0, 1]; ``label`` 0/1; ``tag`` integers or strings (rows
    without a tag count in ``all`` only). With ``extra_keys=("position",)`` a user is the
    pair (uid, position), given as ``keys={"position": ...}`` (GAUC by user and position).

    State: ``rows`` (key, pred, label, tag code) and, for hashed uids, ``checks`` (the
    second hash of each row's uid), both merged by concatenation; the tag values the codes
    stand for, in order of arrival (merging two metrics maps the other's codes).
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    compare: str | None

    @classmethod
    def warm_up(cls) -> None:
        warm_up_kernels()

    def __init__(self, comm: Comm | Any | None = None, *, extra_keys: Sequence[str] = (),
                 compare: str | None = None) -> None:
        self.extra_keys = tuple(extra_keys)
        if "uid" in self.extra_keys:
            raise InputError("extra_keys", "must not repeat 'uid', the key is always in it")
        self._layout: _Layout | None = None
        super().__init__(comm, compare=compare)

    def state_layout(self) -> dict[str, Part]:
        columns = {"key": np.uint64, "pred": np.float32, "label": np.uint8, "tag": np.uint16}
        if self.compare is not None:
            columns["compare"] = np.float32
        return {"rows": Rows(columns), "checks": Rows({"check": np.uint64})}

    def reset(self) -> None:
        super().reset()
        self._tags = TagCodes()

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both; the other's tag codes are mapped to the
        merged tag values."""
        if not isinstance(other, WuaucMetric) or other.extra_keys != self.extra_keys:
            raise ValueError("cannot merge wuauc metrics with different key columns")
        if None not in (self._hashed, other._hashed) and self._hashed != other._hashed:
            raise InputError("uid", "integer uids in one metric and strings in the other")
        if None not in (self._tags.type, other._tags.type) and self._tags.type != other._tags.type:
            raise InputError("tag", "integer tags in one metric and strings in the other")
        merged = super().merge(other)
        assert isinstance(merged, WuaucMetric)
        merged._tags = self._tags.copy()
        if other._tags.values:
            lookup = np.arange(int(NO_TAG) + 1, dtype=np.uint16)
            lookup[: len(other._tags.values)] = merged._tags.codes(
                other._tags.values, np.arange(len(other._tags.values)))
            tags = merged._stored.columns()["tag"]
            tags[len(self._stored) :] = lookup[tags[len(self._stored) :]]
        return merged

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "extra_keys": self.extra_keys}

    def _extra_state(self) -> dict[str, Any]:
        """The key columns and the tag values the stored tag codes stand for."""
        tags = self._tags.values
        return {"extra_keys": np.array(self.extra_keys, dtype=str),
                "tag_values": np.array(tags, dtype=np.int64 if self._tags.type is int else str)}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.extra_keys = tuple(np.asarray(state["extra_keys"], dtype=str).tolist())
        self._tags = TagCodes(np.asarray(state["tag_values"]).tolist())

    @property
    def _stored(self) -> RowBuffer:
        return self.state.rows("rows")

    @property
    def _hashed(self) -> bool | None:
        """Whether the uids are hashed (strings or several key columns); None before the
        first row."""
        if len(self._stored) == 0:
            return None
        return len(self.state.rows("checks")) > 0

    @property
    def rows(self) -> int:
        """Rows held on this rank."""
        return len(self._stored)

    @property
    def nbytes(self) -> int:
        """Bytes allocated for the rows held on this rank."""
        return self._stored.nbytes + self.state.rows("checks").nbytes

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
            user, check = self._user_keys(uid, keys)
            check_lengths(uid=user, pred=p, label=y, compare=b)
            check_interval("pred", p, 0.0, 1.0)
            if b is not None:
                check_interval("compare", b, 0.0, 1.0)
            check_binary("label", y, hint="")
            tags = None if tag is None else self._tags.check(tag, len(p))
        if len(p) == 0:
            return
        codes = None if tags is None else self._tags.codes(*tags)
        self._store(user, check, p, y.astype(np.uint8), codes, b)

    def _user_keys(self, uid: Any, keys: Mapping[str, Any] | None) -> tuple[np.ndarray, Any]:
        given = tuple(keys or ())
        if set(given) != set(self.extra_keys):
            raise InputError("keys", f"expected the key columns {list(self.extra_keys)}, "
                                     f"got {list(given)}")
        if self.extra_keys:
            assert keys is not None
            user, check = group_keys_checked({"uid": uid, **{k: keys[k] for k in self.extra_keys}})
        else:
            user, check = uid_keys_checked("uid", uid)
        if len(user) and self._hashed is not None and (check is not None) != self._hashed:
            raise InputError("uid", "integer uids in one batch and strings in another")
        return user, check

    def _store(
        self,
        user: np.ndarray,
        check: np.ndarray | None,
        pred: np.ndarray,
        label: np.ndarray,
        tag: np.ndarray | None,
        compare: np.ndarray | None,
    ) -> None:
        rows = self._stored
        if tag is None:
            tag = np.full(len(user), NO_TAG, dtype=np.uint16)
        columns = {"key": user, "pred": _narrow(rows, "pred", pred), "label": label, "tag": tag}
        if compare is not None:
            columns["compare"] = _narrow(rows, "compare", compare)
        # made here for this batch: the label and tag codes always, hashed keys and checks
        made = {"label", "tag"} | ({"key"} if check is not None else set())
        rows.append(handed_over=made, **columns)
        if check is not None:
            self.state.rows("checks").append(handed_over={"check"}, check=check)

    # -- compute -----------------------------------------------------------------------

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: agree on the tags, move rows to their users' owners, sum per tag."""
        layout, local_to_global = self._agree(comm)
        self._layout = layout
        rows = self._stored.columns()
        by_row = exact.accumulator(1 + len(layout.tags), N_ROW_SUMS)
        row_sums(rows["pred"], rows["label"], rows["tag"], local_to_global, by_row)
        keys, columns, checks = self._outgoing(layout, local_to_global)
        owned = exchange_to_owners(comm, keys, columns, checks=checks)
        del keys, columns, checks
        user = comm.agreed(lambda: _user_sums(owned, layout), catch=UidCollisionError)
        return {"blocks": np.concatenate([by_row, user], axis=1)}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> WuaucResult:
        assert self._layout is not None, "finish() follows local_sums()"
        names = (ALL, *(str(tag) for tag in self._layout.tags))
        blocks, reasons = [], []
        for name, block_sums in zip(names, exact.to_floats(sums["blocks"]), strict=True):
            block, why = block_from_sums(name, block_sums, self.compare)
            blocks.append(block)
            reasons += why
        if reasons:
            warn_undefined(comm, "wuauc: " + "; ".join(reasons))
        return WuaucResult(tuple(blocks))

    def _agree(self, comm: Comm) -> tuple[_Layout, np.ndarray]:
        """Collective: the sorted tag values of every rank, the key kind and pred dtype.

        ``local_to_global`` maps a local tag code to its tag's index among the sorted
        values, and the code of a row without a tag to ``len(tags)``."""
        dtypes = self._stored.dtypes
        pred32 = dtypes["pred"] == np.float32 and dtypes.get("compare", np.float32) == np.float32
        tag_type = None if self._tags.type is None else self._tags.type.__name__
        views = comm.allgather((self._hashed, tag_type, pred32, self._tags.values))
        hashed = {v[0] for v in views if v[0] is not None}
        if len(hashed) > 1:
            raise InputError("uid", "integer uids on some ranks and strings on others")
        tag_types = {v[1] for v in views if v[1] is not None}
        if len(tag_types) > 1:
            raise InputError("tag", "integer tags on some ranks and strings on others")
        tags = tuple(sorted({value for view in views for value in view[3]}))
        if len(tags) > MAX_TAGS:
            raise InputError("tag", f"more than {MAX_TAGS} distinct tag values")
        layout = _Layout(
            tags=tags,
            hashed=any(v[0] for v in views) or bool(self.extra_keys),
            pred_dtype=np.dtype(np.float32 if all(v[2] for v in views) else np.float64),
        )
        position = {value: i for i, value in enumerate(tags)}
        local_to_global = np.full(int(NO_TAG) + 1, len(tags), dtype=np.uint16)
        for code, value in enumerate(self._tags.values):
            local_to_global[code] = position[value]
        return layout, local_to_global

    def _outgoing(
        self, layout: _Layout, local_to_global: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray | None]:
        """This rank's rows as the agreed columns: (keys, columns, checks)."""
        rows = self._stored.columns()
        columns = {
            "pred": rows["pred"].astype(layout.pred_dtype, copy=False),
            "label": rows["label"],
        }
        if self.compare is not None:
            columns["compare"] = rows["compare"].astype(layout.pred_dtype, copy=False)
        if layout.tags:
            columns["tag"] = local_to_global[rows["tag"]]
        checks = self.state.rows("checks").columns()["check"] if layout.hashed else None
        return rows["key"], columns, checks


def _narrow(rows: RowBuffer, name: str, values: np.ndarray) -> np.ndarray:
    """``values`` as the column ``name`` keeps them: float32 while every value is a
    float32 value, else the column is widened to float64 and they stay whole."""
    if rows.dtypes[name] != np.float32 or np.can_cast(values, np.float32, "safe"):
        return values
    narrow = values.astype(np.float32)
    if np.array_equal(narrow, values):
        return narrow
    rows.widen(name, np.float64)
    return values


# -- per-user sums on the owner ----------------------------------------------------------


def _user_sums(owned: OwnedRows, layout: _Layout) -> np.ndarray:
    """``USER_SUM_FIELDS`` per block (``all``, then tags) over the users this rank owns,
    then with a compared model its ``COMPARE_FIELDS``: one value sort of a uint64 per row
    (key hash prefix, row index) groups the rows by user, then one compiled pass (per
    model) sorts each user's rows by pred (:mod:`mpieval.kinds.wuauc.kernels`)."""
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
