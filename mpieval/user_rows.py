"""Rows kept per user until compute: the machinery of the per-user kinds (``wuauc`` and
``ranking``, with tags; ``pn``, without: :attr:`UserRowsMetric.tagged`).

:class:`UserRowsMetric` keeps each row's user key (a uid, hashed when it is text, or the
key of several columns: ``extra_keys``), pred, label and tag code in a
:class:`~mpieval.rows.RowBuffer` (the second hash of a text uid beside it, for the
exchange to detect key collisions), merges and saves them with the tag values the codes
stand for, and at compute agrees with the other ranks on the tags, the key kind and the
pred dtype (:meth:`UserRowsMetric._agree`) and hands the rows to the kind's pass
(:meth:`UserRowsMetric._outgoing`). Before, the rows move to the ranks that own their
users (:meth:`UserRowsMetric.move_rows`, after each reading round of the command, and the
rest at compute: :meth:`UserRowsMetric._gather`); a move agrees on the tag values first
seen since the last one, so that every rank codes the tags alike. At compute a rank far
above the mean rows (the owner of a heavy user) then hands whole light users to the ranks
below it (:meth:`UserRowsMetric._shed`). A kind says what its
update checks and what its compute counts on the rows of whole users.

Memory: a stored row costs 17 bytes (8 key, 4 pred while every pred is a float32 value,
else 8, 1 label, 4 tag; ``ranking``'s float labels 8, ``pn``'s 4 while every label is
a float32 value, else 8, and no tag), 4 more for a string
uid or a several-column key (the low 32 bits of the second hash, which detects
collisions: two uids whose 64-bit keys collide have the same 32 check bits once in 2**32),
nothing spare. At compute the stored tag codes are recoded in place to the agreed tag
order (:meth:`UserRowsMetric._outgoing`), so the kind's pass gets them without a copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import DTypeLike

from mpieval.comm import Comm
from mpieval.errors import InputError
from mpieval.exchange import move_to_owners
from mpieval.kernels.codes import TAG_DTYPE
from mpieval.kernels.moves import MAX_RANKS, buckets
from mpieval.keys import group_keys_checked, uid_keys_checked
from mpieval.metric import Metric
from mpieval.rows import RowBuffer
from mpieval.state import Part, Rows
from mpieval.tags import MAX_TAGS, NO_TAG, TagCodes, recoded


@dataclass(frozen=True)
class UserLayout:
    """What every rank agreed on before the exchange."""

    tags: tuple[Any, ...]  # tag values, sorted
    hashed: bool  # keys are hashes: a check column travels with them
    pred_dtype: np.dtype  # float32 when every rank's preds are float32 values


class UserRowsMetric(Metric):
    """Base of the per-user kinds with tags: rows kept until compute (module docstring).

    State: ``rows`` (key, pred, label, tag code, and ``compare`` with a compared model)
    and, for hashed uids, ``checks``, both merged by concatenation; the tag values the
    codes stand for, in order of arrival (merging two metrics maps the other's codes).
    """

    label_dtype: ClassVar[type] = np.uint8  # how the kind keeps its labels
    tagged: ClassVar[bool] = True  # the kind's rows have tags (a column of tag codes)
    sheds: ClassVar[bool] = True  # a rank far above the mean hands users over (_shed)
    compare: str | None = None

    def __init__(self, comm: Comm | Any | None = None, *, extra_keys: Sequence[str] = (),
                 **options: Any) -> None:
        self.extra_keys = tuple(extra_keys)
        if "uid" in self.extra_keys:
            raise InputError("extra_keys", "must not repeat 'uid', the key is always in it")
        self._layout: UserLayout | None = None
        super().__init__(comm, **options)

    def state_layout(self) -> dict[str, Part]:
        columns: dict[str, DTypeLike] = {"key": np.uint64, "pred": np.float32,
                                         "label": self.label_dtype}
        if self.tagged:
            columns["tag"] = TAG_DTYPE
        if self.compare is not None:
            columns["compare"] = np.float32
        return {"rows": Rows(columns), "checks": Rows({"check": CHECK_DTYPE})}

    def reset(self) -> None:
        super().reset()
        self._tags = TagCodes()
        # compute's agreed tag values (_agree), which become the metric's (_global_tag_codes)
        self._agreed_tags: TagCodes | None = None

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both; the other's tag codes are mapped to the
        merged tag values."""
        if not isinstance(other, type(self)) or other.extra_keys != self.extra_keys:
            raise ValueError(f"cannot merge {self.kind} metrics with different key columns")
        if None not in (self._hashed, other._hashed) and self._hashed != other._hashed:
            raise InputError("uid", "integer uids in one metric and strings in the other")
        if None not in (self._tags.type, other._tags.type) and self._tags.type != other._tags.type:
            raise InputError("tag", "integer tags in one metric and strings in the other")
        merged = super().merge(other)
        assert isinstance(merged, UserRowsMetric)
        merged._tags = self._tags.copy()
        if other._tags.values:
            lookup = merged._tags.add(other._tags)
            recoded(merged._stored.columns()["tag"][len(self._stored) :], lookup)
        return merged

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "extra_keys": self.extra_keys}

    def _extra_state(self) -> dict[str, Any]:
        """The key columns and the tag values the stored tag codes stand for."""
        return {"extra_keys": np.array(self.extra_keys, dtype=str),
                "tag_values": self._tags.as_array()}

    def _load_one(self, state: Mapping[str, Any]) -> None:
        saved = state.get("checks.check")
        if saved is not None and np.asarray(saved).dtype == np.uint64:
            # saved while checks were kept whole: their low 32 bits, as kept now
            state = {**state, "checks.check": _low_bits(np.asarray(saved))}
        saved = state.get("rows.tag")
        if saved is not None and np.asarray(saved).dtype == np.uint16:
            # saved while tag codes were uint16, whose largest stood for no tag
            codes = np.asarray(saved)
            state = {**state, "rows.tag": np.where(codes == np.iinfo(np.uint16).max,
                                                   TAG_DTYPE.type(NO_TAG), codes.astype(TAG_DTYPE))}
        super()._load_one(state)

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

    def _free_rows(self, count: int) -> dict[str, np.ndarray]:
        """Where the next ``count`` rows go when they fit the rows' reserved room
        (:meth:`mpieval.rows.RowBuffer.free_rows`), a view a column, the check's too, for
        the update to compute them in place; empty when they would not go there."""
        free = self._stored.free_rows(count)
        if free is None:
            return {}
        checks = self.state.rows("checks").free_rows(count)
        if checks is not None:
            free["check"] = checks["check"]
        return free

    def _user_keys(self, uid: Any, keys: Mapping[str, Any] | None,
                   into: Mapping[str, np.ndarray] | None = None) -> tuple[np.ndarray, Any]:
        """Each row's user key and, for hashed uids, its check (the second hash); a text
        uid's hashed into ``into``'s key and check (:meth:`_free_rows`) when given."""
        given = tuple(keys or ())
        if set(given) != set(self.extra_keys):
            raise InputError("keys", f"expected the key columns {list(self.extra_keys)}, "
                                     f"got {list(given)}")
        if self.extra_keys:
            assert keys is not None
            user, check = group_keys_checked({"uid": uid, **{k: keys[k] for k in self.extra_keys}})
        else:
            out = (into["key"], into["check"]) if into and "check" in into else None
            user, check = uid_keys_checked("uid", uid, CHECK_DTYPE.type, out)
        if len(user) and self._hashed is not None and (check is not None) != self._hashed:
            raise InputError("uid", "integer uids in one batch and strings in another")
        return user, check

    def _store(
        self,
        user: np.ndarray,
        check: np.ndarray | None,
        pred: np.ndarray,
        label: np.ndarray,
        tags: tuple[list[Any], np.ndarray] | None,
        compare: np.ndarray | None = None,
        into: Mapping[str, np.ndarray] | None = None,
        label_made: bool = True,
    ) -> None:
        """Keep a checked batch: ``label`` in the kind's ``label_dtype`` (``label_made``:
        an array made for this batch, kept as it is; else the caller's, copied), ``tags``
        as :meth:`TagCodes.check` returned them (None: rows without a tag; a kind without
        tags: always); the tag codes computed in ``into``'s (:meth:`_free_rows`) when
        given."""
        rows = self._stored
        columns = {"key": user, "pred": narrowed(rows, "pred", pred), "label": label}
        if self.tagged:
            columns["tag"] = (np.full(len(user), NO_TAG, dtype=TAG_DTYPE) if tags is None
                              else self._tags.codes(*tags, out=(into or {}).get("tag")))
        if compare is not None:
            columns["compare"] = narrowed(rows, "compare", compare)
        # made here for this batch: the tag codes, the label as a rule, hashed keys and checks
        made = ({"tag"} | ({"label"} if label_made else set())
                | ({"key"} if check is not None else set()))
        rows.append(handed_over=made, **columns)
        if check is not None:
            self.state.rows("checks").append(handed_over={"check"}, check=_low_bits(check))

    # -- moving rows to their users' owners --------------------------------------------

    def move_rows(self, comm: Comm) -> None:
        """:meth:`Metric.move_rows`: the ranks first agree on the tag values new since the
        last move (every rank then codes the tags alike), on the key kind and on the
        columns' dtypes (the widest of each); where they disagree (an error that
        ``compute()`` raises on every rank) the rows stay where they are."""
        if comm.size > 1:
            self._move(comm, final=False)

    def _aligned(self, comm: Comm) -> list[RowBuffer]:
        """Collective: more buffers row-aligned with the kept rows that move with them (a
        kind's own: ``wuauc``'s weights); none here."""
        return []

    def _gather(self, comm: Comm) -> tuple[UserLayout, np.ndarray]:
        """Collective, at compute: the rows not moved yet moved to their users' owners
        (:meth:`_move`), so that this rank holds exactly the rows of the users it owns;
        then :meth:`_agree`."""
        if comm.size > 1:
            self._move(comm, final=True)
            if self.sheds:
                self._shed(comm)
        return self._agree(comm)

    def _move(self, comm: Comm, final: bool) -> None:
        """Collective: one move of the rows kept since the last one (:meth:`move_rows`);
        ``final``: at compute, where a disagreement raises its :class:`InputError`."""
        rows, checks = self._stored, self.state.rows("checks")
        moved = self._moved_rows(comm, rows)
        if moved.stopped and not final:
            return
        tag_type = None if self._tags.type is None else self._tags.type.__name__
        dtypes = {name: dtype.str for name, dtype in rows.dtypes.items()}
        views = comm.allgather((self._hashed, tag_type, dtypes, self._tags.sent(moved.tags)))
        agreed = TagCodes(self._tags.values[: moved.tags])  # every rank's first tags, alike
        for view in views:  # then each rank's new values, in order
            agreed.take(view[3])
        tags = agreed.values
        problem = _disagreement(views, len(tags))
        if problem is not None:
            if final:
                raise problem
            moved.stopped = True
            return
        for name in rows.dtypes:
            widest = np.result_type(*(np.dtype(view[2][name]) for view in views))
            if widest != rows.dtypes[name]:
                rows.widen(name, widest)
        # the first moved.tags values are agreed's first, alike: only the new looked up
        recode = np.concatenate((np.arange(moved.tags, dtype=TAG_DTYPE),
                                 agreed.of(self._tags.values[moved.tags:])))
        hashed = any(view[0] for view in views) or bool(self.extra_keys)
        move_to_owners(comm, [rows, checks] if hashed else [rows], moved.count,
                       recode={"tag": (recode, NO_TAG)} if len(tags) > moved.tags else None,
                       aligned=self._aligned(comm))
        self._tags = agreed
        moved.count, moved.tags = len(rows), len(tags)

    # -- a heavy user: its owner hands light users to the other ranks -------------------

    def _shed(self, comm: Comm) -> None:
        """Collective, at compute after the last move: a rank holding more than
        :data:`SHED_ABOVE` times the mean rows a rank (the owner of a heavy user) hands
        whole users to the ranks below the mean (:func:`shed_plan`), so that no rank's
        per-user pass waits for the rest. The users go by buckets of the top
        :data:`SHED_BUCKET_BITS` bits of ``mix64(key)`` (a user's rows all in one bucket),
        whole buckets that fit what a receiver lacks, in bucket order; a heavy user's
        bucket never fits and stays. A user's sums do not depend on the rank that owns
        it, so the results keep their bits. The received rows count as not moved (the
        next move, after more updates, takes them back to their owners, where the rest
        of those users' rows go). How: a move (:func:`~mpieval.exchange.move_to_owners`
        with each row's rank given): one compiled pass a column splits the shedding
        rank's rows into the staying ones, compacted in place, and the leaving ones,
        packed by receiver for one ``Alltoallv``. Memory: the shedding rank's rows, the
        leaving ones packed, and its staying rows copied into new columns (its rows are
        in no reserved room by then)."""
        rows = self._stored
        views = comm.allgather((len(rows), len(self.state.rows("checks")) > 0))
        counts = np.array([view[0] for view in views], dtype=np.int64)
        plan = shed_plan(counts)
        if plan is None:
            return
        buffers = [rows, self.state.rows("checks")] if (
            any(view[1] for view in views) or self.extra_keys) else [rows]
        ranks = np.uint16 if comm.size <= MAX_RANKS else np.int64  # (as the moves take them)
        start, dest = len(rows), np.zeros(0, dtype=ranks)  # a receiver keeps its rows
        shedding = bool(plan[comm.rank].any())
        if shedding:  # every row split by its rank: staying, or packed for its receiver
            to, bucket = _shed_destinations(rows.columns()["key"], plan[comm.rank], comm.rank)
            start, dest = 0, to.astype(ranks)[bucket]
            del to, bucket
        move_to_owners(comm, buffers[:1], start, aligned=[*buffers[1:], *self._aligned(comm)],
                       dest=dest)
        del dest
        if shedding:
            self._moved_rows(comm, rows).count = len(rows)  # its users' rows all here

    # -- compute -----------------------------------------------------------------------

    def _agree(self, comm: Comm) -> tuple[UserLayout, np.ndarray]:
        """Collective: the sorted tag values of every rank, the key kind and pred dtype.

        ``local_to_global`` maps a local tag code to its tag's index among the sorted
        values, and the code of a row without a tag to ``len(tags)``."""
        dtypes = self._stored.dtypes
        pred32 = dtypes["pred"] == np.float32 and dtypes.get("compare", np.float32) == np.float32
        tag_type = None if self._tags.type is None else self._tags.type.__name__
        views = comm.allgather((self._hashed, tag_type, pred32, self._tags.sent()))
        hashed = {v[0] for v in views if v[0] is not None}
        if len(hashed) > 1:
            raise InputError("uid", "integer uids on some ranks and strings on others")
        tag_types = {v[1] for v in views if v[1] is not None}
        if len(tag_types) > 1:
            raise InputError("tag", "integer tags on some ranks and strings on others")
        tags, local_to_global = _sorted_int_tags(
            [v[3] for v in views], self._tags.values) if tag_types == {"int"} else (None, None)
        if tags is None and len(views) == 1:
            tags, local_to_global = _sorted_alone(self._tags.values)
        elif tags is None:  # (the ranks' values overlap)
            tags = tuple(sorted({value for view in views for value in _listed(view[3])}))
        if len(tags) > MAX_TAGS:
            raise InputError("tag", f"more than {MAX_TAGS} distinct tag values")
        layout = UserLayout(
            tags=tags,
            hashed=any(v[0] for v in views) or bool(self.extra_keys),
            pred_dtype=np.dtype(np.float32 if all(v[2] for v in views) else np.float64),
        )
        # the agreed values' codes, kept for _global_tag_codes (many tags: made once)
        self._agreed_tags = TagCodes(tags)
        if local_to_global is None:
            local_to_global = self._agreed_tags.of(self._tags.values)
        return layout, local_to_global

    def _outgoing(
        self, layout: UserLayout, local_to_global: np.ndarray
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
            columns["tag"] = self._global_tag_codes(rows["tag"], layout, local_to_global)
        checks = self.state.rows("checks").columns()["check"] if layout.hashed else None
        return rows["key"], columns, checks

    def _global_tag_codes(self, codes: np.ndarray, layout: UserLayout,
                          local_to_global: np.ndarray) -> np.ndarray:
        """The rows' tag codes as indexes among ``layout.tags`` (``len(tags)``: no tag).

        The stored codes (``codes``, the stored column) are recoded in place, in one
        compiled pass (:func:`~mpieval.tags.recoded`), and the metric's tag values become
        ``layout.tags``, so the codes are those indexes from now on: the column itself is
        returned, not a copy (4 bytes a row), unless some row has no tag (:data:`NO_TAG`
        stays the code of those)."""
        recoded(codes, local_to_global)
        agreed, self._agreed_tags = self._agreed_tags, None  # _agree's, of layout.tags
        self._tags = agreed if agreed is not None else TagCodes(layout.tags)
        if len(codes) == 0 or codes.max() != NO_TAG:  # NO_TAG: the largest code
            return codes
        return np.where(codes == NO_TAG, TAG_DTYPE.type(len(layout.tags)), codes)


def _listed(values: Sequence[Any] | np.ndarray) -> Sequence[Any]:
    """A rank's tag values as sent (:meth:`~mpieval.tags.TagCodes.sent`) as Python values."""
    listed: Sequence[Any] = values.tolist() if isinstance(values, np.ndarray) else values
    return listed


def _sorted_alone(values: Sequence[Any]) -> tuple[tuple[Any, ...], np.ndarray]:
    """A rank alone's tags (``values``: distinct, by code) sorted, and each code's index
    among them: one sort of their positions (many tags: no set, and no table of the sorted
    values to look them up in). Several ranks, whose values overlap, take a set of them
    and a sort of the distinct ones (4 ranks' million tags: one sort of every rank's
    values took a rank 1.8 s more CPU)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    codes = np.empty(len(values), dtype=TAG_DTYPE)
    codes[order] = np.arange(len(values), dtype=TAG_DTYPE)
    return tuple(values[i] for i in order), codes


def _sorted_int_tags(every: Sequence[Sequence[int]], mine: Sequence[int]
                     ) -> tuple[tuple[int, ...], np.ndarray] | tuple[None, None]:
    """The distinct integer tags of every rank (``every``: each rank's values) sorted,
    and the index among them of each of ``mine``, by numpy (many tags: no set or dict of
    them); ``(None, None)`` for a value beyond int64."""
    try:
        arrays = [np.asarray(values, dtype=np.int64) for values in every]
        mine_array = next((array for values, array in zip(every, arrays, strict=True)
                           if values is mine), None)  # (one rank: its own values)
        if mine_array is None:
            mine_array = np.asarray(mine, dtype=np.int64)
    except OverflowError:
        return None, None
    joined = np.sort(np.concatenate(arrays))  # (np.unique would hash them first)
    distinct = joined[np.concatenate(([True], joined[1:] != joined[:-1]))[: len(joined)]]
    return tuple(distinct.tolist()), np.searchsorted(distinct, mine_array).astype(TAG_DTYPE)


def _disagreement(views: Sequence[tuple[Any, ...]], tags: int) -> InputError | None:
    """What the ranks' views of a move (:meth:`UserRowsMetric._move`: the key kind, the
    tag type, ...) and the ``tags`` distinct tag values of every rank do not allow, as
    :meth:`UserRowsMetric._agree` says it at compute; None: nothing."""
    if len({view[0] for view in views if view[0] is not None}) > 1:
        return InputError("uid", "integer uids on some ranks and strings on others")
    if len({view[1] for view in views if view[1] is not None}) > 1:
        return InputError("tag", "integer tags on some ranks and strings on others")
    if tags > MAX_TAGS:
        return InputError("tag", f"more than {MAX_TAGS} distinct tag values")
    return None


SHED_ABOVE = 1.15
"""A rank holding more rows than this times the mean a rank at compute hands users to
the ranks below the mean (:meth:`UserRowsMetric._shed`)."""
SHED_BUCKET_BITS = 10
"""The users of a rank that sheds go in ``2**SHED_BUCKET_BITS`` buckets by ``mix64(key)``."""


def shed_plan(counts: np.ndarray) -> np.ndarray | None:
    """``plan[r, d]``: about how many rows rank ``r`` hands to rank ``d``, from every
    rank's row count (the same plan on every rank); None when no rank holds more than
    :data:`SHED_ABOVE` times the mean. Each such rank sheds what it holds above the mean
    to the ranks below the mean, in rank order, each up to what it lacks."""
    size = len(counts)
    mean = counts.sum() / size
    if size < 2 or counts.max() <= SHED_ABOVE * mean:
        return None
    excess = [int(c - mean) if c > SHED_ABOVE * mean else 0 for c in counts]
    lack = [max(int(mean - c), 0) for c in counts]
    plan = np.zeros((size, size), dtype=np.int64)
    to = 0
    for rank in range(size):
        while excess[rank] > 0 and to < size:
            give = min(excess[rank], lack[to])
            plan[rank, to] += give
            excess[rank] -= give
            lack[to] -= give
            if lack[to] == 0:
                to += 1
    return plan


def _shed_destinations(keys: np.ndarray, wanted: np.ndarray, rank: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(to, bucket)``: each bucket's rank after :meth:`UserRowsMetric._shed` and each
    row's bucket (the top bits of ``mix64(key)``, so a user's rows share one). Whole
    buckets go to the ranks that ``wanted`` (rows per rank) names, each to the first
    receiver it fits in; the rest stay at ``rank``."""
    bucket, sizes = buckets(keys, SHED_BUCKET_BITS)
    to = np.full(len(sizes), rank, dtype=np.int64)
    need = {int(d): int(n) for d, n in enumerate(wanted) if n > 0}
    for b in np.flatnonzero(sizes).tolist():
        for d, n in need.items():
            if sizes[b] <= n:
                to[b] = d
                need[d] = n - int(sizes[b])
                break
    return to, bucket


CHECK_DTYPE = np.dtype(np.uint32)
"""How a hashed uid's check is kept: the low 32 bits of its second 64-bit hash."""


def _low_bits(check: np.ndarray) -> np.ndarray:
    """The low 32 bits of uint64 checks (:data:`CHECK_DTYPE`; already so: as they are)."""
    return check.astype(CHECK_DTYPE, copy=False)


def narrowed(rows: RowBuffer, name: str, values: np.ndarray) -> np.ndarray:
    """``values`` as the column ``name`` keeps them: float32 while every value is a
    float32 value, else the column is widened to float64 and they stay whole."""
    if rows.dtypes[name] != np.float32 or np.can_cast(values, np.float32, "safe"):
        return values
    narrow = as_float32(values)
    if narrow is not None:
        return narrow
    rows.widen(name, np.float64)
    return values


def as_float32(values: np.ndarray) -> np.ndarray | None:
    """``values`` as float32 when every one is a float32 value, else None."""
    narrow = values.astype(np.float32)
    return narrow if np.array_equal(narrow, values) else None
