"""The ``wuauc`` kind: per-user AUC per tag (WUAUC, UAUC), LogLoss, CTRs, COPC, counts.

Exact however the rows are split across ranks: :meth:`WuaucMetric.compute` moves every
user's rows to the rank that owns the user (:func:`mpieval.exchange.exchange_to_owners`),
each rank computes its users' AUCs (one value sort groups the rows by user, then one
compiled pass over the users: :mod:`mpieval.kernels.wuauc`), and the per-tag sums join
the one ``Allreduce`` of :func:`mpieval.metric.compute_all`.

Per block (tag ``all``, then each tag value), over its users ``u`` (a user's AUC counts a
tied pair as one half; a user with one class only is not valid)::

    UAUC  = sum_valid AUC_u / ValidUserCount
    WUAUC = sum_valid AUC_u * rows_u / ValidInsNum
    click_wuauc = sum_valid AUC_u * clicks_u / valid_click_num     (GAUC, click-weighted)
    LogLoss = -sum log(label ? p : 1 - p) / RealInsNum,  p clipped to [1e-15, 1 - 1e-15]
    ActualCTR = clicks / RealInsNum,  PredictedCTR = sum pred / RealInsNum
    COPC = ActualCTR / PredictedCTR

Every sum is exact (:mod:`mpieval.kernels.exact`) and rounded once, so the values have the
same bits on any number of ranks and in any order of rows.

Memory: a stored row costs 15 bytes (8 key, 4 pred while every pred is a float32 value,
else 8, 1 label, 2 tag), 8 more for a string uid or a several-column key (the hash that
detects collisions), nothing spare (:class:`~mpieval.rows.RowBuffer`).
``compute()`` holds for a moment, beside the rows: their chunks joined one column at a
time, the global tag codes (2 bytes a row), what the exchange receives, 1 byte a row (its
part) and 8 bytes a row of each part being sorted, and 24 bytes a row of the heaviest
user, per thread (:func:`~mpieval.kernels.wuauc.user_auc_sums`); the README's benchmark
table gives the measured peak and time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import OwnedRows, exchange_to_owners
from mpieval.kernels import exact, stats
from mpieval.kernels.wuauc import DIFF_FIELDS, USER_SUM_FIELDS, row_sums, user_auc_sums
from mpieval.kernels.wuauc import warm_up as warm_up_kernels
from mpieval.keys import group_keys_checked, uid_keys_checked
from mpieval.metric import Input, Metric, Option, warn_undefined
from mpieval.rows import RowBuffer
from mpieval.state import Part, Rows
from mpieval.validation import (
    Coded,
    as_vector,
    check_binary,
    check_interval,
    check_lengths,
    check_log_word,
    column_name,
    from_tensor,
    unmasked,
)

ALL = "all"
NO_TAG = np.iinfo(np.uint16).max  # local tag code of a row given without a tag
MAX_TAGS = int(NO_TAG) - 1
# Fields of one block of the summable buffer, each an exact accumulator
# (mpieval.kernels.exact): row sums, then user sums.
ROW_SUM_FIELDS = ("rows", "clicks", "pred_sum", "logloss_sum")
FIELDS = ROW_SUM_FIELDS + USER_SUM_FIELDS
FIELD_INDEX = {name: i for i, name in enumerate(FIELDS)}
N_ROW_SUMS = len(ROW_SUM_FIELDS)
# with compare=, each block goes on with model B's user sums and the paired differences
COMPARE_FIELDS = tuple(f"b_{name}" for name in USER_SUM_FIELDS) + DIFF_FIELDS
COMPARE_INDEX = {name: len(FIELDS) + i for i, name in enumerate(COMPARE_FIELDS)}


INTERVAL_FIELDS = ("uauc", "wuauc")


@dataclass(frozen=True)
class WuaucComparison:
    """Model B (pred column ``pred``) against model A in one tag block, paired by user:
    B's ``uauc`` and ``wuauc``, the differences B - A, and their standard errors over the
    users' paired differences (users as independent clusters); :meth:`ci` and :meth:`p`
    give the intervals and two-sided p-values."""

    pred: str
    uauc: float
    wuauc: float
    uauc_diff: float
    wuauc_diff: float
    stderr: dict[str, float]

    def ci(self, name: str, level: float = 0.95) -> tuple[float, float] | None:
        """The interval of ``uauc_diff`` or ``wuauc_diff`` at ``level``."""
        return stats.interval(getattr(self, name), self.stderr[name], level, -1.0, 1.0)

    def p(self, name: str) -> float:
        """The two-sided p-value of ``uauc_diff`` or ``wuauc_diff`` (no difference)."""
        return stats.two_sided_p(getattr(self, name), self.stderr[name])

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"pred": self.pred, "uauc": logline.json_number(self.uauc),
                                  "wuauc": logline.json_number(self.wuauc)}
        for name in ("uauc_diff", "wuauc_diff"):
            pair = self.ci(name)
            fields[name] = logline.json_number(getattr(self, name))
            fields[f"{name}_ci95"] = None if pair is None else list(pair)
            fields[f"{name}_p"] = logline.json_number(self.p(name))
        return fields

    def to_log_line(self, name: str, tag: str) -> str:
        """``NAME: compare=COL Tag=TAG UAUC=%g WUAUC=%g`` then, for ``uauc_diff`` and
        ``wuauc_diff``, ``X=%g X_low=%g X_high=%g X_p=%g`` (B's values; ``nan`` where
        undefined)."""
        v = logline.value
        parts = [f"{name}: compare={self.pred} Tag={tag} UAUC={v(self.uauc)} "
                 f"WUAUC={v(self.wuauc)}"]
        for diff in ("uauc_diff", "wuauc_diff"):
            low, high = self.ci(diff) or (math.nan, math.nan)
            parts.append(f"{diff}={v(getattr(self, diff))} {diff}_low={v(low)} "
                         f"{diff}_high={v(high)} {diff}_p={v(self.p(diff))}")
        return " ".join(parts)


@dataclass(frozen=True)
class WuaucBlock:
    """The values of one tag (``all`` or a tag value); NaN marks an undefined value.

    ``stderr`` holds the standard errors of ``uauc`` and ``wuauc`` with users as
    independent clusters (NaN where undefined); :meth:`ci` turns them into intervals,
    ``to_dict`` writes the 95% ones as ``ci95``. The log line has none of them."""

    tag: str
    wuauc: float
    uauc: float
    logloss: float
    actual_ctr: float
    predicted_ctr: float
    copc: float
    real_user_count: int
    real_ins_num: int
    valid_user_count: int
    valid_ins_num: int
    click_wuauc: float
    valid_click_num: int
    stderr: dict[str, float] = field(default_factory=dict)
    compare: WuaucComparison | None = None

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Wald intervals ``value -/+ z se`` of ``uauc`` and ``wuauc`` at ``level``, cut
        to [0, 1]; None where undefined."""
        return {name: stats.interval(getattr(self, name), self.stderr.get(name, math.nan),
                                     level, 0.0, 1.0)
                for name in INTERVAL_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        return {
            "wuauc": logline.json_number(self.wuauc),
            "uauc": logline.json_number(self.uauc),
            "logloss": logline.json_number(self.logloss),
            "actual_ctr": logline.json_number(self.actual_ctr),
            "predicted_ctr": logline.json_number(self.predicted_ctr),
            "copc": logline.json_number(self.copc),
            "real_user_count": self.real_user_count,
            "real_ins_num": self.real_ins_num,
            "valid_user_count": self.valid_user_count,
            "valid_ins_num": self.valid_ins_num,
            "click_wuauc": logline.json_number(self.click_wuauc),
            "valid_click_num": self.valid_click_num,
            "ci95": {name: None if pair is None else list(pair)
                     for name, pair in self.ci(0.95).items()},
            **({} if self.compare is None else {"compare": self.compare.to_dict()}),
        }

    def to_log_line(self, name: str) -> str:
        v, n = logline.value, logline.count
        return (
            f"{name}: Tag={self.tag} WUAUC={v(self.wuauc)} UAUC={v(self.uauc)} "
            f"LogLoss={v(self.logloss)} ActualCTR={v(self.actual_ctr)} "
            f"PredictedCTR={v(self.predicted_ctr)} COPC={v(self.copc)} "
            f"RealUserCount={n(self.real_user_count)} RealInsNum={n(self.real_ins_num)} "
            f"ValidUserCount={n(self.valid_user_count)} ValidInsNum={n(self.valid_ins_num)}"
        )


@dataclass(frozen=True)
class WuaucResult:
    """Result of the ``wuauc`` kind: one block per tag, ``all`` first, then tags sorted."""

    blocks: tuple[WuaucBlock, ...]

    @property
    def all(self) -> WuaucBlock:
        return self.blocks[0]

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(block.tag for block in self.blocks)

    def __getitem__(self, tag: object) -> WuaucBlock:
        for block in self.blocks:
            if block.tag == str(tag):
                return block
        raise KeyError(tag)

    def __iter__(self) -> Iterator[WuaucBlock]:
        return iter(self.blocks)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "wuauc", "tags": {block.tag: block.to_dict() for block in self.blocks}}

    def to_log_line(self, name: str) -> str:
        """One Abacus line per tag, ``all`` first, joined with newlines; with ``compare``,
        then one comparison line per tag (:meth:`WuaucComparison.to_log_line`)."""
        lines = [block.to_log_line(name) for block in self.blocks]
        lines += [block.compare.to_log_line(name, block.tag) for block in self.blocks
                  if block.compare is not None]
        return "\n".join(lines)


def block_from_sums(tag: str, sums: np.ndarray,
                    compare: str | None = None) -> tuple[WuaucBlock, list[str]]:
    """The values of one block from its summed fields (``FIELDS``, then with ``compare``
    ``COMPARE_FIELDS``), and why any is NaN."""
    s = {name: float(sums[i]) for name, i in FIELD_INDEX.items()}
    reasons = []
    rows, valid_rows = s["rows"], s["valid_rows"]
    if rows == 0:
        reasons.append(f"tag {tag}: no rows")
    if s["valid_users"] == 0 and rows > 0:
        reasons.append(f"tag {tag}: no user has both labels, WUAUC and UAUC are undefined")
    actual = _ratio(s["clicks"], rows)
    predicted = _ratio(s["pred_sum"], rows)
    if predicted == 0:
        reasons.append(f"tag {tag}: predicted ctr is 0, COPC is undefined")
    block = WuaucBlock(
        tag=tag,
        wuauc=_ratio(s["auc_rows_sum"], valid_rows),
        uauc=_ratio(s["auc_sum"], s["valid_users"]),
        logloss=_ratio(s["logloss_sum"], rows),
        actual_ctr=actual,
        predicted_ctr=predicted,
        copc=_ratio(actual, predicted),
        real_user_count=int(s["users"]),
        real_ins_num=int(rows),
        valid_user_count=int(s["valid_users"]),
        valid_ins_num=int(valid_rows),
        click_wuauc=_ratio(s["auc_clicks_sum"], s["valid_clicks"]),
        valid_click_num=int(s["valid_clicks"]),
        stderr=_stderrs(s),
        compare=None if compare is None else _comparison(compare, s, sums),
    )
    if s["valid_users"] == 1:
        reasons.append(f"tag {tag}: ci95 of UAUC and WUAUC needs two valid users")
    return block, reasons


def _comparison(pred: str, s: dict[str, float], sums: np.ndarray) -> WuaucComparison:
    """B's values and the paired differences B - A of one block: ``uauc_diff = sum D_u /
    V`` and ``wuauc_diff = sum n_u D_u / sum n_u`` over the valid users (``D_u = AUC_B -
    AUC_A``; a user is valid for both, its labels being the same), with the standard
    errors of :func:`_stderrs` over the ``D_u``."""
    c = {name: float(sums[i]) for name, i in COMPARE_INDEX.items()}
    users, rows = s["valid_users"], s["valid_rows"]
    stderr = {"uauc_diff": math.nan, "wuauc_diff": math.nan}
    if users >= 2:
        stderr = {
            "uauc_diff": stats.ratio_stderr(c["diff_sum"], users, c["diff_sq_sum"],
                                            c["diff_sum"], users),
            "wuauc_diff": stats.ratio_stderr(c["diff_rows_sum"], rows,
                                             c["diff_sq_rows_sq_sum"],
                                             c["diff_rows_sq_sum"], s["rows_sq_sum"]),
        }
    return WuaucComparison(
        pred=pred,
        uauc=_ratio(c["b_auc_sum"], users),
        wuauc=_ratio(c["b_auc_rows_sum"], rows),
        uauc_diff=_ratio(c["diff_sum"], users),
        wuauc_diff=_ratio(c["diff_rows_sum"], rows),
        stderr=stderr,
    )


def _stderrs(s: dict[str, float]) -> dict[str, float]:
    """Standard errors of ``uauc`` and ``wuauc`` over the valid users ``u`` taken as
    independent clusters (:func:`mpieval.kernels.stats.ratio_stderr`, the delta method):
    ``uauc = sum A_u / sum 1`` and ``wuauc = sum n_u A_u / sum n_u``, ``A_u`` the user's
    AUC and ``n_u`` its rows; NaN below two valid users."""
    if s["valid_users"] < 2:
        return {"uauc": math.nan, "wuauc": math.nan}
    users = s["valid_users"]
    return {
        "uauc": stats.ratio_stderr(s["auc_sum"], users, s["auc_sq_sum"], s["auc_sum"], users),
        "wuauc": stats.ratio_stderr(s["auc_rows_sum"], s["valid_rows"],
                                    s["auc_sq_rows_sq_sum"], s["auc_rows_sq_sum"],
                                    s["rows_sq_sum"]),
    }


def _ratio(a: float, b: float) -> float:
    return a / b if b != 0 and not math.isnan(b) else math.nan


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

    kind = "wuauc"
    inputs = (Input("uid", role="id"), Input("pred"), Input("label"),
              Input("tag", role="name", optional=True), Input("compare", optional=True))
    options = (Option("compare", None, column_name),)
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
        self._tag_values: list[Any] = []
        self._tag_index: dict[Any, int] = {}
        self._tag_type: type | None = None

    def merge(self, other: Metric) -> Metric:
        """A new metric holding the rows of both; the other's tag codes are mapped to the
        merged tag values."""
        if not isinstance(other, WuaucMetric) or other.extra_keys != self.extra_keys:
            raise ValueError("cannot merge wuauc metrics with different key columns")
        if None not in (self._hashed, other._hashed) and self._hashed != other._hashed:
            raise InputError("uid", "integer uids in one metric and strings in the other")
        if None not in (self._tag_type, other._tag_type) and self._tag_type != other._tag_type:
            raise InputError("tag", "integer tags in one metric and strings in the other")
        merged = super().merge(other)
        assert isinstance(merged, WuaucMetric)
        merged._tag_values, merged._tag_index = list(self._tag_values), dict(self._tag_index)
        merged._tag_type = self._tag_type or other._tag_type
        if other._tag_values:
            lookup = np.arange(int(NO_TAG) + 1, dtype=np.uint16)
            lookup[: len(other._tag_values)] = merged._tag_codes(
                other._tag_values, np.arange(len(other._tag_values)))
            tags = merged._stored.columns()["tag"]
            tags[len(self._stored) :] = lookup[tags[len(self._stored) :]]
        return merged

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "extra_keys": self.extra_keys}

    def _extra_state(self) -> dict[str, Any]:
        """The key columns and the tag values the stored tag codes stand for."""
        tags = self._tag_values
        return {"extra_keys": np.array(self.extra_keys, dtype=str),
                "tag_values": np.array(tags, dtype=np.int64 if self._tag_type is int else str)}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.extra_keys = tuple(np.asarray(state["extra_keys"], dtype=str).tolist())
        self._tag_values = np.asarray(state["tag_values"]).tolist()
        self._tag_index = {value: code for code, value in enumerate(self._tag_values)}
        self._tag_type = type(self._tag_values[0]) if self._tag_values else None

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
            tags = None if tag is None else self._check_tags(tag, len(p))
        if len(p) == 0:
            return
        codes = None if tags is None else self._tag_codes(*tags)
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

    def _check_tags(self, tag: Any, n: int) -> tuple[list[Any], np.ndarray]:
        """The distinct values of a tag column (as Python ints or strs) and each row's
        index among them; checked against the tags seen so far. A :class:`Coded` column
        is checked on its distinct values only."""
        if isinstance(tag, Coded):
            distinct_values, inverse = _distinct_coded(tag)
        else:
            values = _tag_values(tag)
            distinct_values, inverse = _distinct(values)
        if len(inverse) != n:
            raise InputError("tag", f"length mismatch: tag={len(inverse)}, pred={n}")
        if ALL in distinct_values:
            rows = np.flatnonzero(inverse == distinct_values.index(ALL))
            raise InputError("tag", "the tag 'all' is reserved for the block of every row",
                             count=len(rows), first_index=int(rows[0]))
        kind = str if distinct_values and isinstance(distinct_values[0], str) else int
        if kind is str:  # a tag is a word of the space-separated log line
            for value in distinct_values:
                check_log_word("tag", value)
        if distinct_values and self._tag_type is not None and kind is not self._tag_type:
            raise InputError("tag", "integer tags in one batch and strings in another")
        new = sum(value not in self._tag_index for value in distinct_values)
        if len(self._tag_values) + new > MAX_TAGS:
            raise InputError("tag", f"more than {MAX_TAGS} distinct tag values")
        return distinct_values, inverse

    def _tag_codes(self, distinct: list[Any], inverse: np.ndarray) -> np.ndarray:
        """Local uint16 codes of checked tags (new values get the next codes)."""
        lookup = np.empty(len(distinct), dtype=np.uint16)
        for i, value in enumerate(distinct):
            if value not in self._tag_index:
                self._tag_index[value] = len(self._tag_values)
                self._tag_values.append(value)
                self._tag_type = type(value)
            lookup[i] = self._tag_index[value]
        return lookup[inverse]

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
        tag_type = None if self._tag_type is None else self._tag_type.__name__
        views = comm.allgather((self._hashed, tag_type, pred32, self._tag_values))
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
        for code, value in enumerate(self._tag_values):
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


_FEW_TAGS = 8


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


def _distinct(values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct values of ``values`` (as Python ints or strs) and the index of each
    row's value among them, as ``np.unique(values, return_inverse=True)`` but unsorted.

    Tag columns hold a few values: while they are few (``_FEW_TAGS``), each costs one
    whole-array comparison, much cheaper than sorting the strings; the rest are sorted.
    """
    inverse = np.full(len(values), -1, dtype=np.intp)
    distinct: list[Any] = []
    first = 0
    while len(distinct) < _FEW_TAGS:
        unassigned = inverse[first:] < 0
        if not unassigned.any():
            return distinct, inverse
        first += int(np.argmax(unassigned))
        value = values[first]
        inverse[values == value] = len(distinct)
        distinct.append(value.item())
    rest = inverse < 0
    more, more_inverse = np.unique(values[rest], return_inverse=True)
    inverse[rest] = len(distinct) + more_inverse.reshape(-1)
    return distinct + more.tolist(), inverse


def _distinct_coded(tag: Coded) -> tuple[list[Any], np.ndarray]:
    """:func:`_distinct` of a :class:`Coded` column: its values that some row uses, in
    their order, and each row's index among them; every value a non-empty string, or
    every value an integer."""
    codes = np.asarray(tag.codes)
    if codes.ndim != 1 or codes.dtype.kind not in "iu":
        raise InputError("tag", "Coded codes must be a 1-D integer array")
    if len(codes) and (codes.min() < 0 or codes.max() >= len(tag.values)):
        raise InputError("tag", f"Coded codes must index its {len(tag.values)} values")
    used = np.bincount(codes, minlength=len(tag.values)) > 0
    if used.all():  # the usual case: a batch's own dictionary
        distinct, inverse = list(tag.values), codes
    else:
        distinct = [value for value, use in zip(tag.values, used.tolist(), strict=True) if use]
        inverse = (np.cumsum(used) - 1)[codes]
    is_int = [isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
              for value in distinct]
    if not (all(isinstance(value, str) for value in distinct) or all(is_int)):
        raise InputError("tag", "Coded values must all be strings or all integers")
    if "" in distinct:
        rows = np.flatnonzero(inverse == distinct.index(""))
        raise InputError("tag", "is empty (a missing tag)", count=len(rows),
                         first_index=int(rows[0]), value="")
    return [value if isinstance(value, str) else int(value) for value in distinct], inverse


def _tag_values(tag: Any) -> np.ndarray:
    """A tag column as a 1-D int or str array; missing, empty or other values raise."""
    values = np.asarray(unmasked("tag", from_tensor(tag)))
    if values.ndim != 1:
        raise InputError("tag", f"must be 1-D, got an array of shape {values.shape}")
    if values.dtype.kind == "O" and len(values):
        is_str = np.frompyfunc(lambda v: isinstance(v, str), 1, 1)(values).astype(bool)
        is_int = np.frompyfunc(
            lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)),
            1, 1,
        )(values).astype(bool)
        for bad, problem in ((~(is_str | is_int), "must be integers or strings (not missing)"),
                             (is_int if is_str[0] else is_str, "mixes integers and strings")):
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise InputError("tag", problem, count=int(bad.sum()), first_index=first,
                                 value=values[first])
        values = values.astype(str if is_str[0] else np.int64)
    if values.dtype.kind not in "iuU" and len(values):
        raise InputError("tag", f"must be integers or strings, got dtype {values.dtype}")
    if values.dtype.kind == "U" and len(values):
        empty = values == ""
        if empty.any():
            raise InputError("tag", "is empty (a missing tag)", count=int(empty.sum()),
                             first_index=int(np.flatnonzero(empty)[0]), value="")
    return values


# -- per-user sums on the owner ----------------------------------------------------------


def _user_sums(owned: OwnedRows, layout: _Layout) -> np.ndarray:
    """``USER_SUM_FIELDS`` per block (``all``, then tags) over the users this rank owns,
    then with a compared model its ``COMPARE_FIELDS``: one value sort of a uint64 per row
    (key hash prefix, row index) groups the rows by user, then one compiled pass (per
    model) sorts each user's rows by pred (:mod:`mpieval.kernels.wuauc`)."""
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
