"""The ``wuauc`` kind's results: one block per tag (``all`` first) with its values, their
intervals (users as independent clusters) and, with ``compare``, model B's values and the
paired differences; built from the block's summed fields.

Per block, over its users ``u`` (a user's AUC counts a tied pair as one half; a user with
one class only is not valid)::

    UAUC  = sum_valid AUC_u / ValidUserCount
    WUAUC = sum_valid AUC_u * rows_u / ValidInsNum
    click_wuauc = sum_valid AUC_u * clicks_u / valid_click_num     (GAUC, click-weighted)
    LogLoss = -sum log(label ? p : 1 - p) / RealInsNum,  p clipped to [1e-15, 1 - 1e-15]
    ActualCTR = clicks / RealInsNum,  PredictedCTR = sum pred / RealInsNum
    COPC = ActualCTR / PredictedCTR

Intervals (users as independent clusters, as the rows of a user are not independent):
``uauc`` and ``wuauc`` over the valid users; ``actual_ctr``, ``predicted_ctr``, ``copc``,
``logloss`` (ratios of sums over rows) over every user of the block, each user's sums
``n_u, c_u, p_u, l_u`` (weight, clicks, pred and logloss sums) one cluster: the delta
method, ``se(A / B) = sqrt(sum_u (a_u - R b_u)^2) / |B|`` over ``sqrt(k)``, ``k = 1 - 2 sum
w^3 / (sum w sum w^2) + sum w^2 / (sum w)^2`` (``(U - 1) / U`` for equal weights).
Student's t takes Kish's effective number of users of the estimator's weights (``(sum
w_u)^2 / sum w_u^2``; ``w_u = n_u``, ``p_u`` for COPC, 1 for UAUC) less one as degrees of
freedom, so a block of a few heavy users among many light ones is not read as many
independent users (docs/statistics.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.kernels import stats
from mpieval.kinds.wuauc import KIND
from mpieval.kinds.wuauc.kernels import (
    COMPARE_MOMENT_FIELDS,
    DIFF_FIELDS,
    MOMENT_FIELDS,
    USER_SUM_FIELDS,
)
from mpieval.tags import (
    ColumnBlocks,
    TagBlocks,
    block_of,
    dicts_of,
    fresh_dicts,
    gc_paused,
    held_reasons,
    whole_ints,
)

# Fields of one block of the summable buffer, each an exact accumulator
# (mpieval.kernels.exact): row sums, then user sums.
ROW_SUM_FIELDS = ("rows", "clicks", "pred_sum", "logloss_sum")
FIELDS = ROW_SUM_FIELDS + USER_SUM_FIELDS + MOMENT_FIELDS
FIELD_INDEX = {name: i for i, name in enumerate(FIELDS)}
N_ROW_SUMS = len(ROW_SUM_FIELDS)
# with compare=, each block goes on with model B's user sums, the paired differences, the
# moments of the two models' user sums and B's row sums
COMPARE_FIELDS = (tuple(f"b_{name}" for name in USER_SUM_FIELDS) + DIFF_FIELDS
                  + COMPARE_MOMENT_FIELDS + tuple(f"b_{name}" for name in ROW_SUM_FIELDS))
COMPARE_INDEX = {name: len(FIELDS) + i for i, name in enumerate(COMPARE_FIELDS)}

PER_USER = ("uauc", "wuauc")
"""Intervals over the valid users."""
PER_ROW = ("actual_ctr", "predicted_ctr", "copc", "logloss")
"""Intervals of the row values, over every user of the block."""
INTERVAL_FIELDS = PER_USER + PER_ROW
BOUNDS = {"uauc": (0.0, 1.0), "wuauc": (0.0, 1.0), "actual_ctr": (0.0, 1.0),
          "predicted_ctr": (0.0, 1.0), "copc": (0.0, math.inf), "logloss": (0.0, math.inf)}
DIFFS = ("uauc_diff", "wuauc_diff", "logloss_diff", "copc_diff")
"""The paired differences B - A of a comparison (``logloss`` and ``copc`` over every user,
``uauc`` and ``wuauc`` over the valid ones)."""


@dataclass(frozen=True)
class WuaucComparison:
    """Model B (pred column ``pred``) against model A in one tag block, paired by user:
    B's ``uauc``, ``wuauc``, ``logloss`` and ``copc``, the differences B - A (``DIFFS``),
    and their standard errors over the users' paired differences (users as independent
    clusters); :meth:`ci` and :meth:`p` give the intervals and two-sided p-values
    (Student's t with ``effective[name] - 1`` degrees of freedom; None/NaN below
    :data:`mpieval.kernels.stats.MIN_CLUSTERS` users (``units[name]``: valid users for
    ``uauc_diff`` and ``wuauc_diff``, every user for ``logloss_diff`` and ``copc_diff``)
    or with a spread of 0). ``q``: the Benjamini-Hochberg q-values of the p-values over
    the result's tags other than ``all`` (:meth:`mpieval.tags.TagBlocks.with_q_values`; empty in
    ``all`` and until set)."""

    pred: str
    uauc: float
    wuauc: float
    uauc_diff: float
    wuauc_diff: float
    stderr: dict[str, float]
    users: int = 0
    q: dict[str, float] = field(default_factory=dict)
    logloss: float = math.nan
    copc: float = math.nan
    logloss_diff: float = math.nan
    copc_diff: float = math.nan
    units: dict[str, float] = field(default_factory=dict)
    effective: dict[str, float] = field(default_factory=dict)
    own_stderr: dict[str, float] = field(default_factory=dict)
    """B's own standard errors of ``uauc`` and ``wuauc`` (as A's, over the valid users)."""

    def own_ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """B's own intervals of ``uauc`` and ``wuauc``, by the rule of A's
        (:meth:`WuaucBlock.ci`)."""
        return {name: stats.cluster_interval(
            getattr(self, name), self.own_stderr.get(name, math.nan), self.users, level,
            *BOUNDS[name], effective=self.effective.get(f"{name}_diff"))
            for name in PER_USER if name in self.own_stderr}

    def ci(self, name: str, level: float = 0.95) -> tuple[float, float] | None:
        """The interval of one of ``DIFFS`` at ``level``."""
        low, high = (-1.0, 1.0) if name in ("uauc_diff", "wuauc_diff") else (-math.inf,
                                                                            math.inf)
        return stats.cluster_interval(getattr(self, name), self.stderr[name],
                                      self.units.get(name, self.users), level, low, high,
                                      effective=self.effective.get(name))

    def p(self, name: str) -> float:
        """The two-sided p-value of one of ``DIFFS`` (no difference)."""
        return stats.cluster_p(getattr(self, name), self.stderr[name],
                               self.units.get(name, self.users),
                               effective=self.effective.get(name))

    def to_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"pred": self.pred, "uauc": logline.json_number(self.uauc),
                                  "wuauc": logline.json_number(self.wuauc),
                                  "logloss": logline.json_number(self.logloss),
                                  "copc": logline.json_number(self.copc)}
        if self.own_stderr:
            fields["ci95"] = {name: None if pair is None else list(pair)
                              for name, pair in self.own_ci(0.95).items()}
        for name in DIFFS:
            pair = self.ci(name)
            fields[name] = logline.json_number(getattr(self, name))
            fields[f"{name}_ci95"] = None if pair is None else list(pair)
            fields[f"{name}_p"] = logline.json_number(self.p(name))
        if self.q:
            for name in DIFFS:
                fields[f"{name}_q"] = logline.json_number(self.q[name])
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
    real_ins_num: int | float  # a sum of weights with weights
    valid_user_count: int
    valid_ins_num: int | float
    click_wuauc: float
    valid_click_num: int | float
    stderr: dict[str, float] = field(default_factory=dict)
    compare: WuaucComparison | None = None
    effective: dict[str, float] = field(default_factory=dict)

    @property
    def _too_few_users(self) -> bool:
        """Below :data:`mpieval.kernels.stats.MIN_CLUSTERS` users (so fewer valid users
        too): no interval of the block is defined."""
        return self.real_user_count < stats.MIN_CLUSTERS

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Intervals of ``INTERVAL_FIELDS`` at ``level``: ``value -/+ t se`` for ``uauc``
        and ``wuauc``, ``value exp(-/+ t se / value)`` (the log scale) for the row values
        but ``predicted_ctr``, ``value / (1 +/- t se / value)`` (the reciprocal scale) for
        it (Student's t with ``effective[name] - 1`` degrees of freedom, Kish's effective
        users), cut to the value's range; None where undefined, below
        :data:`mpieval.kernels.stats.MIN_CLUSTERS` users (valid users for ``uauc`` and
        ``wuauc``, every user of the block for the row values), below
        :data:`~mpieval.kernels.stats.MIN_EFFECTIVE` effective users or with a spread of
        0."""
        if self._too_few_users:
            return dict.fromkeys(INTERVAL_FIELDS)  # (many tags: most are such)
        intervals = {name: stats.cluster_interval(
            getattr(self, name), self.stderr.get(name, math.nan), self.valid_user_count,
            level, *BOUNDS[name], effective=self.effective.get(name)) for name in PER_USER}
        for name in PER_ROW:  # positive ratios of skewed sums: on the log scale
            # (predicted_ctr: the reciprocal one, longer above; docs/statistics.md)
            scale = (stats.reciprocal_cluster_interval if name == "predicted_ctr"
                     else stats.log_cluster_interval)
            intervals[name] = scale(
                getattr(self, name), self.stderr.get(name, math.nan), self.real_user_count,
                level, BOUNDS[name][1], effective=self.effective.get(name))
        return intervals

    def to_dict(self) -> dict[str, Any]:
        return {
            "wuauc": logline.json_number(self.wuauc),
            "uauc": logline.json_number(self.uauc),
            "logloss": logline.json_number(self.logloss),
            "actual_ctr": logline.json_number(self.actual_ctr),
            "predicted_ctr": logline.json_number(self.predicted_ctr),
            "copc": logline.json_number(self.copc),
            "real_user_count": self.real_user_count,
            "real_ins_num": logline.json_count(self.real_ins_num),
            "valid_user_count": self.valid_user_count,
            "valid_ins_num": logline.json_count(self.valid_ins_num),
            "click_wuauc": logline.json_number(self.click_wuauc),
            "valid_click_num": logline.json_count(self.valid_click_num),
            "ci95": {name: None if pair is None else list(pair)
                     for name, pair in self.ci(0.95).items()}
            if not self._too_few_users else dict.fromkeys(INTERVAL_FIELDS),  # (as ci(): most)
            **({} if self.compare is None else {"compare": self.compare.to_dict()}),
        }

    def to_log_line(self, name: str) -> str:
        return _log_lines(name, (self,))[0]


@dataclass(frozen=True)
class WuaucResult(TagBlocks[WuaucBlock]):
    """Result of the ``wuauc`` kind: one block per tag, ``all`` first, then tags sorted."""

    blocks: Sequence[WuaucBlock]  # a tuple, or many tags' ColumnBlocks
    weights: str = "frequency"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND.name, "weights": self.weights,
                "tags": self.tags_dict()}

    @property
    def weight_sum(self) -> int | float:
        """The sum of the weights of every row (``all``'s ``real_ins_num``): the ``run``
        block's weight sum."""
        return logline.json_count(self.blocks[0].real_ins_num)

    def to_log_line(self, name: str) -> str:
        """One Abacus line per tag, ``all`` first, joined with newlines; with ``compare``,
        then one comparison line per tag (:meth:`WuaucComparison.to_log_line`)."""
        lines = _log_lines(name, self.blocks)
        table = getattr(self.blocks, "source", None)
        if isinstance(table, _BlockColumns):  # (blocks kept as columns: theirs, if any)
            lines += [] if table.compare is None else table.compare_lines(name)
        else:
            lines += [block.compare.to_log_line(name, block.tag) for block in self.blocks
                      if block.compare is not None]
        return "\n".join(lines)


def _log_lines(name: str, blocks: Sequence[WuaucBlock]) -> list[str]:
    """The Abacus line of each block, formatted a column at a time (many tags: a line a
    tag), from the blocks' columns when they are kept so (:class:`_BlockColumns`, a chunk
    of blocks at a time: no block made)."""
    table = getattr(blocks, "source", None)
    if isinstance(table, _BlockColumns):
        chunk = ColumnBlocks.CHUNK
        return [line for start in range(0, len(table.tags), chunk)
                for line in _lines_of(name, table.tags[start : start + chunk],
                                      table.line_fields(start, start + chunk))]
    return _lines_of(name, [block.tag for block in blocks], [
        [getattr(block, field) for block in blocks] for field in _LINE_FIELDS])


_LINE_FIELDS = ("wuauc", "uauc", "logloss", "actual_ctr", "predicted_ctr", "copc",
                "real_user_count", "real_ins_num", "valid_user_count", "valid_ins_num")
"""The block's fields on its log line, in order: six values, then four counts."""


def _lines_of(name: str, tags: Sequence[str], fields: list[Any]) -> list[str]:
    """The log lines of the blocks of ``tags`` whose ``_LINE_FIELDS`` are ``fields`` (a
    list of Python numbers, or a float64 array of values, a field)."""
    v, n = logline.values, logline.counts
    return logline.joined(
        (f"{name}: Tag=", " WUAUC=", " UAUC=", " LogLoss=", " ActualCTR=", " PredictedCTR=",
         " COPC=", " RealUserCount=", " RealInsNum=", " ValidUserCount=", " ValidInsNum=", ""),
        [tags, *(v(values) for values in fields[:6]), *(n(counts) for counts in fields[6:])])


def block_from_sums(tag: str, sums: np.ndarray,
                    compare: str | None = None) -> tuple[WuaucBlock, list[str]]:
    """The values of one block from its summed fields (``FIELDS``, then with ``compare``
    ``COMPARE_FIELDS``), and why any is NaN."""
    values = sums.tolist()  # Python floats at once (not one numpy scalar a field)
    s = {name: values[i] for name, i in FIELD_INDEX.items()}
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
        real_ins_num=_count(rows),
        valid_user_count=int(s["valid_users"]),
        valid_ins_num=_count(valid_rows),
        click_wuauc=_ratio(s["auc_clicks_sum"], s["valid_clicks"]),
        valid_click_num=_count(s["valid_clicks"]),
        stderr=_stderrs(s),
        compare=None if compare is None else _comparison(compare, s, sums),
        effective=_effective(s),
    )
    if 0 < s["users"] < stats.MIN_CLUSTERS:  # so fewer valid users too
        reasons.append(f"tag {tag}: ci95 of UAUC and WUAUC needs {stats.MIN_CLUSTERS} "
                       f"valid users, of the other values {stats.MIN_CLUSTERS} users")
    elif 0 < s["valid_users"] < stats.MIN_CLUSTERS:
        reasons.append(f"tag {tag}: ci95 of UAUC and WUAUC needs {stats.MIN_CLUSTERS} "
                       "valid users")
    few = [name for name, value in block.effective.items() if value < stats.MIN_EFFECTIVE
           and (s["valid_users"] if name in PER_USER else s["users"]) >= stats.MIN_CLUSTERS]
    if few:
        reasons.append(f"tag {tag}: ci95 of {', '.join(few)} is null: one user holds nearly "
                       f"all the weight (fewer than {stats.MIN_EFFECTIVE:g} effective users)")
    if s["valid_users"] >= stats.MIN_CLUSTERS or s["users"] >= stats.MIN_CLUSTERS:
        spreads = [*block.stderr.items(),
                   *(() if block.compare is None else block.compare.stderr.items())]
        reasons += [f"tag {tag}: ci95 of {name} is null: its spread over the users is 0"
                    for name, stderr in spreads if stderr == 0
                    and (s["valid_users"] if name.removesuffix("_diff") in PER_USER
                         else s["users"]) >= stats.MIN_CLUSTERS]
    return block, reasons


def blocks_from_sums(tags: Sequence[str], sums: Mapping[str, np.ndarray],
                     compare: str | None = None
                     ) -> tuple[ColumnBlocks[WuaucBlock], list[tuple[str, np.ndarray]]]:
    """:func:`blocks_of_many` of one result's blocks."""
    return blocks_of_many([tags], sums, compare)[0]


def blocks_of_many(names: Sequence[Sequence[str]], sums: Mapping[str, np.ndarray],
                   compare: str | None = None
                   ) -> list[tuple[ColumnBlocks[WuaucBlock], list[tuple[str, np.ndarray]]]]:
    """The blocks of several results (``names``: each one's blocks' names; ``sums``: their
    columns joined, each result's blocks in turn; ``compare`` of one result only), each
    result's as :func:`_block_columns` makes them alone (the same floats: its values are
    computed a block at a time, a slice's own among many slices' in one pass), with their
    reasons."""
    if len(names) > 1 and compare is not None:
        raise ValueError("the comparisons' q-values are over one result's blocks")
    joined = names[0] if len(names) == 1 else [name for one in names for name in one]
    table, reasons = _block_columns(joined, sums, compare)
    if len(names) == 1:
        return [(ColumnBlocks(joined, table.blocks, table.dicts, source=table),
                 held_reasons(reasons))]
    made = []
    start = 0
    for one in names:
        stop = start + len(one)
        part = table.part(start, stop, one)
        made.append((ColumnBlocks(one, part.blocks, part.dicts, source=part),
                     held_reasons([(rank, text, mask[start:stop])
                                   for rank, text, mask in reasons])))
        start = stop
    return made


def _block_columns(tags: Sequence[str], sums: Mapping[str, np.ndarray],
                   compare: str | None = None
                   ) -> tuple[_BlockColumns, list[tuple[int, str, np.ndarray]]]:
    """:func:`block_from_sums` of every block at once (``sums``: each of ``FIELDS``' column,
    an element a block, then with ``compare`` each of ``COMPARE_FIELDS``'), each value
    computed for all blocks as arrays (:func:`mpieval.kernels.stats.ratio_stderrs` and its
    kin), the same floats, with ``compare`` the comparisons' too and their q-values over
    the tags (:meth:`WuaucResult.with_q_values`'); the blocks, kept as those arrays
    (:class:`_BlockColumns`: a block made when read), and each reason a value is NaN with
    the indexes of the blocks it holds for, in order of the first block it holds for (the
    order of :func:`block_from_sums`' reasons tag after tag: :func:`held_reasons`, here
    each with its rank and mask over the blocks)."""
    s = {name: np.ascontiguousarray(sums[name], dtype=np.float64) for name in FIELDS}
    rows, valid_rows, users, valid = s["rows"], s["valid_rows"], s["users"], s["valid_users"]
    actual = _ratios(s["clicks"], rows)
    predicted = _ratios(s["pred_sum"], rows)
    stderr = _stderrs_of(s)
    effective = _effective_of(s)
    compared = None if compare is None else _CompareColumns(
        compare, s, {name: np.ascontiguousarray(sums[name], dtype=np.float64)
                     for name in COMPARE_FIELDS}, effective)
    table = _BlockColumns(
        tags, [_ratios(s["auc_rows_sum"], valid_rows), _ratios(s["auc_sum"], valid),
               _ratios(s["logloss_sum"], rows), actual, predicted, _ratios(actual, predicted)],
        _ratios(s["auc_clicks_sum"], s["valid_clicks"]),
        [users, rows, valid, valid_rows, s["valid_clicks"]], stderr, effective, compared)
    # the reasons, each with its rank among a block's reasons (block_from_sums' order)
    minimum = stats.MIN_CLUSTERS
    reasons: list[tuple[int, str, np.ndarray]] = [
        (0, "no rows", rows == 0),
        (1, "no user has both labels, WUAUC and UAUC are undefined", (valid == 0) & (rows > 0)),
        (2, "predicted ctr is 0, COPC is undefined", predicted == 0),
        (3, f"ci95 of UAUC and WUAUC needs {minimum} valid users, of the other values "
            f"{minimum} users", (users > 0) & (users < minimum)),
        (3, f"ci95 of UAUC and WUAUC needs {minimum} valid users",
         ~((users > 0) & (users < minimum)) & (valid > 0) & (valid < minimum)),
    ]
    units = {name: valid if name in PER_USER else users for name in EFFECTIVE_FIELDS}
    few = np.zeros(len(tags), dtype=np.int64)  # a bit a name of EFFECTIVE_FIELDS
    for bit, (name, value) in enumerate(effective.items()):
        few |= ((value < stats.MIN_EFFECTIVE) & (units[name] >= minimum)).astype(np.int64) << bit
    for code in sorted(set(few[few > 0].tolist())):  # (np.unique would import numpy.ma)
        names = [name for bit, name in enumerate(EFFECTIVE_FIELDS) if code >> bit & 1]
        reasons.append((4, f"ci95 of {', '.join(names)} is null: one user holds nearly all "
                           f"the weight (fewer than {stats.MIN_EFFECTIVE:g} effective users)",
                        few == code))
    for rank, name in enumerate(INTERVAL_FIELDS):
        reasons.append((5 + rank, f"ci95 of {name} is null: its spread over the users is 0",
                        (stderr[name] == 0) & (units[name] >= minimum)))
    if compared is not None:  # then the differences' (block_from_sums' order)
        for rank, name in enumerate(DIFFS, start=5 + len(INTERVAL_FIELDS)):
            reasons.append((rank, f"ci95 of {name} is null: its spread over the users is 0",
                            (compared.stderr[name] == 0) & (compared.units[name] >= minimum)))
    return table, reasons


_BLOCK_FIELDS = tuple(field.name for field in dataclasses.fields(WuaucBlock))


class _BlockColumns:
    """The values of a result's blocks as arrays, one element a block
    (:func:`blocks_from_sums`), with ``compare`` their comparisons' (:class:`_CompareColumns`):
    the blocks ``start .. stop - 1`` made from them (:meth:`blocks`), or their
    ``to_dict()`` written from them (:meth:`dicts`)."""

    def __init__(self, tags: Sequence[str], values: list[np.ndarray], click_wuauc: np.ndarray,
                 counts: list[np.ndarray], stderr: dict[str, np.ndarray],
                 effective: dict[str, np.ndarray],
                 compare: _CompareColumns | None = None) -> None:
        self.tags = tags
        self.values = values  # wuauc, uauc, logloss, actual_ctr, predicted_ctr, copc
        self.click_wuauc = click_wuauc
        self.counts = counts  # users, rows, valid users, valid rows, valid clicks
        self.stderr = stderr
        self.effective = effective
        self.compare = compare

    def part(self, start: int, stop: int, tags: Sequence[str]) -> _BlockColumns:
        """The blocks ``start .. stop - 1`` alone (views), named ``tags`` (without
        comparisons: their q-values are over every block)."""
        assert self.compare is None, "the comparisons' q-values are over every block"
        cut = slice(start, stop)
        return _BlockColumns(tags, [v[cut] for v in self.values], self.click_wuauc[cut],
                             [c[cut] for c in self.counts],
                             {name: v[cut] for name, v in self.stderr.items()},
                             {name: v[cut] for name, v in self.effective.items()})

    def _count_lists(self, start: int, stop: int, clicks: bool = True) -> list[list[Any]]:
        """The counts as the blocks hold them (users as ints, rows and clicks as ints or,
        weighted, floats); the valid clicks last, when asked for."""
        users, rows, valid, valid_rows, valid_clicks = (c[start:stop] for c in self.counts)
        lists: list[list[Any]] = [whole_ints(users), _counts(rows), whole_ints(valid),
                                  _counts(valid_rows)]
        return [*lists, _counts(valid_clicks)] if clicks else lists

    def _columns(self, start: int, stop: int) -> list[list[Any]]:
        """The blocks' fields but their dicts, each as a list (Python numbers)."""
        *counts, valid_clicks = self._count_lists(start, stop)
        return [*(v[start:stop].tolist() for v in self.values), *counts,
                self.click_wuauc[start:stop].tolist(), valid_clicks]

    def line_fields(self, start: int, stop: int) -> list[Any]:
        """The ``_LINE_FIELDS`` of the blocks ``start .. stop - 1``: the values as arrays,
        the counts as lists."""
        return [*(v[start:stop] for v in self.values),
                *self._count_lists(start, stop, clicks=False)]

    def blocks(self, start: int, stop: int) -> list[WuaucBlock]:
        stderr_rows = zip(*(self.stderr[name][start:stop].tolist()
                            for name in INTERVAL_FIELDS), strict=True)
        effective_rows = zip(*(array[start:stop].tolist()
                               for array in self.effective.values()), strict=True)
        with gc_paused():  # many tags: a block's dicts are no cycles to look for
            compared: list[WuaucComparison | None] = (
                [None] * (stop - start) if self.compare is None
                else [*self.compare.comparisons(start, stop)])
            return [
                _block((tag, *fields, dict(zip(INTERVAL_FIELDS, stderr_row, strict=True)),
                        comparison, dict(zip(EFFECTIVE_FIELDS, effective_row, strict=True))))
                for tag, *fields, stderr_row, comparison, effective_row in zip(
                    self.tags[start:stop], *self._columns(start, stop), stderr_rows,
                    compared, effective_rows, strict=True)
            ]

    def compare_lines(self, name: str) -> list[str]:
        """The comparisons' log lines (:meth:`WuaucComparison.to_log_line`), a chunk of
        blocks at a time; a comparison made only for a block of MIN_CLUSTERS valid users
        (its interval)."""
        assert self.compare is not None, "a result with compare="
        lines = []
        for start in range(0, len(self.tags), ColumnBlocks.CHUNK):
            stop = min(start + ColumnBlocks.CHUNK, len(self.tags))
            enough = self.compare.users[start:stop] >= stats.MIN_CLUSTERS
            made: list[WuaucComparison | None] = [None] * (stop - start)
            for k in np.flatnonzero(enough).tolist():
                made[k] = self.compare.comparisons(start + k, start + k + 1)[0]
            lines += self.compare.log_lines(name, self.tags[start:stop], start, stop, made)
        return lines

    def dicts(self, start: int, stop: int) -> list[dict[str, Any]]:
        """:meth:`WuaucBlock.to_dict` of the blocks ``start .. stop - 1``: a block below
        :data:`~mpieval.kernels.stats.MIN_CLUSTERS` users (many tags: most) written from
        the columns, its intervals null (``WuaucBlock._too_few_users``), a column at a
        time (``json_numbers``, ``json_counts``); the others made and asked."""
        enough = self.counts[0][start:stop] >= stats.MIN_CLUSTERS
        if enough.all():  # (a slice's own block, mostly: no columns' dicts made for none)
            return [block.to_dict() for block in self.blocks(start, stop)]
        users, rows, valid, valid_rows, valid_clicks = self._count_lists(start, stop)
        numbers, counts = logline.json_numbers, logline.json_counts
        compared = [] if self.compare is None else [self.compare.dicts(start, stop)]
        out = dicts_of(_DICT_KEYS + ("compare",) * len(compared), [
            *(numbers(v[start:stop]) for v in self.values), users, counts(rows), valid,
            counts(valid_rows), numbers(self.click_wuauc[start:stop]), counts(valid_clicks),
            fresh_dicts(INTERVAL_FIELDS, len(users)), *compared])
        for i in np.flatnonzero(enough).tolist():
            out[i] = self.blocks(start + i, start + i + 1)[0].to_dict()
        return out


class _CompareColumns:
    """The comparisons of a result's blocks as arrays, one element a block
    (:func:`_comparison` of every block at once, the same floats), and their p-values and
    q-values over the tags (:meth:`mpieval.tags.TagBlocks.with_q_values`'): the blocks'
    comparisons made from them (:meth:`comparisons`), their ``to_dict()`` written from them
    (:meth:`dicts`), their log lines (:meth:`log_lines`). ``s``: the blocks' ``FIELDS``,
    ``c``: their ``COMPARE_FIELDS``, ``effective``: :func:`_effective_of` of ``s``."""

    def __init__(self, pred: str, s: dict[str, np.ndarray], c: dict[str, np.ndarray],
                 effective: dict[str, np.ndarray]) -> None:
        self.pred = pred
        valid, valid_rows, users, rows = (s["valid_users"], s["valid_rows"], s["users"],
                                          s["rows"])
        logloss_a, logloss_b = _ratios(s["logloss_sum"], rows), _ratios(c["b_logloss_sum"],
                                                                        rows)
        copc_a, copc_b = _ratios(s["clicks"], s["pred_sum"]), _ratios(s["clicks"],
                                                                      c["b_pred_sum"])
        self.values = {  # WuaucComparison's floats, in its fields' order
            "uauc": _ratios(c["b_auc_sum"], valid), "wuauc": _ratios(c["b_auc_rows_sum"],
                                                                     valid_rows),
            "uauc_diff": _ratios(c["diff_sum"], valid),
            "wuauc_diff": _ratios(c["diff_rows_sum"], valid_rows),
            "logloss": logloss_b, "copc": copc_b, "logloss_diff": logloss_b - logloss_a,
            "copc_diff": copc_b - copc_a}
        some, every = valid >= 2, users >= 2
        self.stderr = {
            "uauc_diff": stats.cluster_stderrs(stats.ratio_stderrs(
                c["diff_sum"], valid, c["diff_sq_sum"], c["diff_sum"], valid, where=some),
                valid),
            "wuauc_diff": stats.ratio_stderrs(
                c["diff_rows_sum"], valid_rows, c["diff_sq_rows_sq_sum"], c["diff_rows_sq_sum"],
                s["rows_sq_sum"], where=some, weights=_weights_of(s, "wuauc")),
            "logloss_diff": stats.ratio_stderrs(
                c["b_logloss_sum"] - s["logloss_sum"], rows, c["user_logloss_diff_sq_sum"],
                c["user_logloss_diff_rows_sum"], s["user_rows_sq_sum"], where=every,
                weights=_weights_of(s, "logloss")),
            "copc_diff": stats.weighted_cluster_stderrs(
                _copc_diff_stderrs(s, c, every), *_weights_of(s, "copc")),
        }
        self.users = valid
        self.units = {"uauc_diff": valid, "wuauc_diff": valid, "logloss_diff": users,
                      "copc_diff": users}
        b_copc = stats.effective_units_of(c["b_pred_sum"], c["user_b_pred_sq_sum"])
        self.effective = {  # (copc_diff: the smaller of the two models' pred weights, as min)
            "uauc_diff": effective["uauc"], "wuauc_diff": effective["wuauc"],
            "logloss_diff": effective["logloss"],
            "copc_diff": np.where(b_copc < effective["copc"], b_copc, effective["copc"])}
        own = _per_user_stderrs({**s, **{name: c[f"b_{name}"] for name in USER_SUM_FIELDS}})
        self.own_stderr = {name: own[name] for name in PER_USER}
        # p-values where some are defined (MIN_CLUSTERS units), one at a time (few blocks)
        self.p = {name: np.full(len(valid), math.nan) for name in DIFFS}
        for name in DIFFS:
            for i in np.flatnonzero(self.units[name] >= stats.MIN_CLUSTERS).tolist():
                self.p[name][i] = stats.cluster_p(
                    float(self.values[name][i]), float(self.stderr[name][i]),
                    float(self.units[name][i]), effective=float(self.effective[name][i]))
        # q-values over the tags (none without a tag: all alone)
        self.q = {name: np.concatenate(([math.nan], stats.bh_q_values_of(p[1:])))
                  for name, p in self.p.items()} if len(valid) > 1 else None

    def comparisons(self, start: int, stop: int) -> list[WuaucComparison]:
        """The comparisons of the blocks ``start .. stop - 1``."""
        lists = {name: array[start:stop].tolist() for name, array in self.values.items()}
        by_diff = [{name: array[name][start:stop].tolist() for name in DIFFS}
                   for array in (self.stderr, self.units, self.effective)]
        own = {name: self.own_stderr[name][start:stop].tolist() for name in PER_USER}
        users = whole_ints(self.users[start:stop])
        q = None if self.q is None else {name: self.q[name][start:stop].tolist()
                                         for name in DIFFS}
        made = []
        for k, i in enumerate(range(start, stop)):
            stderr, units, effective = ({name: d[name][k] for name in DIFFS} for d in by_diff)
            made.append(WuaucComparison(
                pred=self.pred, uauc=lists["uauc"][k], wuauc=lists["wuauc"][k],
                uauc_diff=lists["uauc_diff"][k], wuauc_diff=lists["wuauc_diff"][k],
                stderr=stderr, users=users[k],
                q={} if q is None or i == 0 else {name: q[name][k] for name in DIFFS},
                logloss=lists["logloss"][k], copc=lists["copc"][k],
                logloss_diff=lists["logloss_diff"][k], copc_diff=lists["copc_diff"][k],
                units=units, effective=effective,
                own_stderr={name: own[name][k] for name in PER_USER}))
        return made

    def dicts(self, start: int, stop: int) -> list[dict[str, Any]]:
        """:meth:`WuaucComparison.to_dict` of the blocks ``start .. stop - 1`` as a block
        below :data:`~mpieval.kernels.stats.MIN_CLUSTERS` users writes it (its intervals,
        p-values and q-values null: too few units), a column at a time; the caller asks the
        others' blocks themselves."""
        n = stop - start
        numbers, none = logline.json_numbers, [None] * n
        keys: list[str] = ["pred", "uauc", "wuauc", "logloss", "copc", "ci95"]
        columns: list[list[Any]] = [[self.pred] * n, *(numbers(self.values[name][start:stop])
                                                       for name in keys[1:5]),
                                    fresh_dicts(PER_USER, n)]
        for name in DIFFS:
            keys += [name, f"{name}_ci95", f"{name}_p"]
            columns += [numbers(self.values[name][start:stop]), none, none]
        if self.q is None:
            return dicts_of(tuple(keys), columns)
        # the tags' q-values, null (all's: none)
        made = dicts_of((*keys, *(f"{name}_q" for name in DIFFS)),
                        [*columns, *([none] * len(DIFFS))])
        if start == 0:
            made[0] = dicts_of(tuple(keys), [column[:1] for column in columns])[0]
        return made

    def log_lines(self, name: str, tags: Sequence[str], start: int, stop: int,
                  made: Sequence[WuaucComparison | None]) -> list[str]:
        """:meth:`WuaucComparison.to_log_line` of the blocks ``start .. stop - 1``
        (``made``: each block's comparison where it has MIN_CLUSTERS units, else None: its
        interval and p-value ``nan``), a column at a time."""
        v = logline.values
        columns = [list(tags), v(self.values["uauc"][start:stop]),
                   v(self.values["wuauc"][start:stop])]
        for diff in ("uauc_diff", "wuauc_diff"):
            low, high = np.full(stop - start, math.nan), np.full(stop - start, math.nan)
            for k, comparison in enumerate(made):
                if comparison is not None:
                    low[k], high[k] = comparison.ci(diff) or (math.nan, math.nan)
            columns += [v(self.values[diff][start:stop]), v(low), v(high),
                        v(self.p[diff][start:stop])]
        pieces = [f"{name}: compare={self.pred} Tag=", " UAUC=", " WUAUC="]
        for diff in ("uauc_diff", "wuauc_diff"):
            pieces += [f" {diff}=", f" {diff}_low=", f" {diff}_high=", f" {diff}_p="]
        return logline.joined([*pieces, ""], columns)


def _copc_diff_stderrs(s: dict[str, np.ndarray], c: dict[str, np.ndarray],
                       where: np.ndarray) -> np.ndarray:
    """:func:`_copc_diff_stderr` of every block (arrays), the same floats: the terms made
    a column at a time, each block's sums exact (:func:`mpieval.kernels.exact.row_fsums`);
    NaN where ``where`` is false or a pred sum is 0; a block with a term that is not finite
    through :func:`_copc_diff_stderr` itself."""
    from mpieval.kernels import exact

    pa, pb, clicks = s["pred_sum"], c["b_pred_sum"], s["clicks"]
    chosen = np.flatnonzero(where & (pa != 0) & (pb != 0))
    out = np.full(len(pa), math.nan)
    with np.errstate(all="ignore"):
        a = 1 / pb[chosen] - 1 / pa[chosen]
        b = clicks[chosen] / pb[chosen] / pb[chosen]
        g = clicks[chosen] / pa[chosen] / pa[chosen]
        terms = np.stack([a * a * s["user_clicks_sq_sum"][chosen],
                          b * b * c["user_b_pred_sq_sum"][chosen],
                          g * g * s["user_pred_sq_sum"][chosen],
                          -2 * a * b * c["user_clicks_b_pred_sum"][chosen],
                          2 * a * g * s["user_clicks_pred_sum"][chosen],
                          -2 * b * g * c["user_pred_b_pred_sum"][chosen]], axis=1)
    finite = np.isfinite(terms).all(axis=1)
    spread, size = exact.row_fsums(terms[finite]), exact.row_fsums(np.abs(terms[finite]))
    out[chosen[finite]] = np.sqrt(np.where(spread <= 8 * 2.0**-52 * size, 0.0, spread))
    for i in chosen[~finite].tolist():
        out[i] = _copc_diff_stderr({name: float(x[i]) for name, x in s.items()},
                                   {name: float(x[i]) for name, x in c.items()})
    return out


_DICT_KEYS = ("wuauc", "uauc", "logloss", "actual_ctr", "predicted_ctr", "copc",
              "real_user_count", "real_ins_num", "valid_user_count", "valid_ins_num",
              "click_wuauc", "valid_click_num", "ci95")
"""The keys of :meth:`WuaucBlock.to_dict` without ``compare``, in order."""


def _block(values: tuple[Any, ...]) -> WuaucBlock:
    """``WuaucBlock(*values)`` (:func:`mpieval.tags.block_of`)."""
    return block_of(WuaucBlock, _BLOCK_FIELDS, values)


def _ratios(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`_ratio` of each element."""
    with np.errstate(all="ignore"):
        return np.where((b != 0) & ~np.isnan(b), a / b, math.nan)


EFFECTIVE_FIELDS = ("uauc", "wuauc", "actual_ctr", "predicted_ctr", "logloss", "copc")
"""The keys of a block's ``effective``, in its order (:func:`_effective`)."""


def _effective_of(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`_effective` of every block (arrays by name, ``EFFECTIVE_FIELDS``' order)."""
    rows = stats.effective_units_of(s["rows"], s["user_rows_sq_sum"])
    return {"uauc": s["valid_users"],
            "wuauc": stats.effective_units_of(s["valid_rows"], s["rows_sq_sum"]),
            "actual_ctr": rows, "predicted_ctr": rows, "logloss": rows,
            "copc": stats.effective_units_of(s["pred_sum"], s["user_pred_sq_sum"])}


def _stderrs_of(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`_stderrs` of every block (arrays by name), the same floats: each computed
    for the blocks where :func:`_stderrs` computes it (two valid users, or two users),
    NaN elsewhere (each step of an array at once, the others' elements NaN: no copy of
    the chosen blocks' sums)."""
    stderr = _per_user_stderrs(s)
    every = s["users"] >= 2
    for name, fields in {
        "actual_ctr": ("clicks", "rows", "user_clicks_sq_sum", "user_clicks_rows_sum",
                       "user_rows_sq_sum"),
        "predicted_ctr": ("pred_sum", "rows", "user_pred_sq_sum", "user_pred_rows_sum",
                          "user_rows_sq_sum"),
        "copc": ("clicks", "pred_sum", "user_clicks_sq_sum", "user_clicks_pred_sum",
                 "user_pred_sq_sum"),
        "logloss": ("logloss_sum", "rows", "user_logloss_sq_sum", "user_logloss_rows_sum",
                    "user_rows_sq_sum"),
    }.items():
        a, b, aa, ab, bb = (s[field] for field in fields)
        stderr[name] = stats.ratio_stderrs(a, b, aa, ab, bb, where=every,
                                           weights=_weights_of(s, name))
    return stderr


def _per_user_stderrs(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`_stderrs_of`'s ``uauc`` and ``wuauc`` (over the valid users)."""
    some, valid = s["valid_users"] >= 2, s["valid_users"]
    return {
        "uauc": stats.cluster_stderrs(stats.ratio_stderrs(
            s["auc_sum"], valid, s["auc_sq_sum"], s["auc_sum"], valid, where=some), valid),
        "wuauc": stats.ratio_stderrs(
            s["auc_rows_sum"], s["valid_rows"], s["auc_sq_rows_sq_sum"], s["auc_rows_sq_sum"],
            s["rows_sq_sum"], where=some, weights=_weights_of(s, "wuauc")),
    }


_WEIGHTS = {"wuauc": ("valid_rows", "rows_sq_sum", "rows_cube_sum"),
            "copc": ("pred_sum", "user_pred_sq_sum", "user_pred_cube_sum"),
            "rows": ("rows", "user_rows_sq_sum", "user_rows_cube_sum")}
"""The sums of :func:`_weights` by estimator (``rows``: the others)."""


def _weights_of(s: dict[str, np.ndarray], name: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_weights` of every block (arrays)."""
    total, total_sq, total_cube = _WEIGHTS.get(name, _WEIGHTS["rows"])
    return s[total], s[total_sq], s[total_cube]


def _effective(s: dict[str, float]) -> dict[str, float]:
    """Kish's effective users of each interval (:func:`mpieval.kernels.stats.effective_units`):
    of the valid users' rows for ``wuauc``, every user's rows for the row values (its pred
    sums for ``copc``), the valid users themselves for ``uauc``."""
    rows = stats.effective_units(s["rows"], s["user_rows_sq_sum"])
    return {"uauc": s["valid_users"],
            "wuauc": stats.effective_units(s["valid_rows"], s["rows_sq_sum"]),
            "actual_ctr": rows, "predicted_ctr": rows, "logloss": rows,
            "copc": stats.effective_units(s["pred_sum"], s["user_pred_sq_sum"])}


def _comparison(pred: str, s: dict[str, float], sums: np.ndarray) -> WuaucComparison:
    """B's values and the paired differences B - A of one block: ``uauc_diff = sum D_u /
    V`` and ``wuauc_diff = sum n_u D_u / sum n_u`` over the valid users (``D_u = AUC_B -
    AUC_A``; a user is valid for both, its labels being the same), with the standard
    errors of :func:`_stderrs` over the ``D_u``."""
    values = sums.tolist()
    c = {name: values[i] for name, i in COMPARE_INDEX.items()}
    users, rows = s["valid_users"], s["valid_rows"]
    stderr = {"uauc_diff": math.nan, "wuauc_diff": math.nan}
    if users >= 2:
        stderr = {
            "uauc_diff": stats.cluster_stderr(stats.ratio_stderr(
                c["diff_sum"], users, c["diff_sq_sum"], c["diff_sum"], users), users),
            "wuauc_diff": stats.weighted_cluster_stderr(stats.ratio_stderr(
                c["diff_rows_sum"], rows, c["diff_sq_rows_sq_sum"], c["diff_rows_sq_sum"],
                s["rows_sq_sum"]), rows, s["rows_sq_sum"], s["rows_cube_sum"]),
        }
    all_users, all_rows = s["users"], s["rows"]
    logloss_a, logloss_b = _ratio(s["logloss_sum"], all_rows), _ratio(c["b_logloss_sum"],
                                                                       all_rows)
    copc_a = _ratio(s["clicks"], s["pred_sum"])
    copc_b = _ratio(s["clicks"], c["b_pred_sum"])
    stderr["logloss_diff"] = stderr["copc_diff"] = math.nan
    if all_users >= 2:
        stderr["logloss_diff"] = stats.weighted_cluster_stderr(stats.ratio_stderr(
            c["b_logloss_sum"] - s["logloss_sum"], all_rows, c["user_logloss_diff_sq_sum"],
            c["user_logloss_diff_rows_sum"], s["user_rows_sq_sum"]), *_weights(s, "logloss"))
        stderr["copc_diff"] = stats.weighted_cluster_stderr(_copc_diff_stderr(s, c),
                                                            *_weights(s, "copc"))
    effective = _effective(s)
    b_sums = {**s, **{name: c[f"b_{name}"] for name in USER_SUM_FIELDS}}
    own = _stderrs(b_sums)
    return WuaucComparison(
        pred=pred,
        uauc=_ratio(c["b_auc_sum"], users),
        wuauc=_ratio(c["b_auc_rows_sum"], rows),
        uauc_diff=_ratio(c["diff_sum"], users),
        wuauc_diff=_ratio(c["diff_rows_sum"], rows),
        stderr=stderr,
        users=int(users),
        logloss=logloss_b,
        copc=copc_b,
        logloss_diff=logloss_b - logloss_a,
        copc_diff=copc_b - copc_a,
        units={"uauc_diff": users, "wuauc_diff": users, "logloss_diff": all_users,
               "copc_diff": all_users},
        effective={"uauc_diff": effective["uauc"], "wuauc_diff": effective["wuauc"],
                   "logloss_diff": effective["logloss"],
                   # the smaller of the two models' pred weights
                   "copc_diff": min(effective["copc"], stats.effective_units(
                       c["b_pred_sum"], c["user_b_pred_sq_sum"]))},
        own_stderr={name: own[name] for name in PER_USER},
    )


def _copc_diff_stderr(s: dict[str, float], c: dict[str, float]) -> float:
    """Delta-method standard error of ``copc_B - copc_A = C / P_B - C / P_A`` over users
    as clusters: user ``u`` adds ``e_u = (c_u - copc_B pB_u) / P_B - (c_u - copc_A pA_u) /
    P_A``, i.e. ``a c_u - b pB_u + g pA_u``, and ``sum e_u^2`` expands into the summed
    products; ``sqrt(sum e_u^2)``, NaN when a pred sum is 0 (a spread within the rounding
    of its terms: 0)."""
    pa, pb, clicks = s["pred_sum"], c["b_pred_sum"], s["clicks"]
    if pa == 0 or pb == 0:
        return math.nan
    a = 1 / pb - 1 / pa
    b = clicks / pb / pb
    g = clicks / pa / pa
    terms = (a * a * s["user_clicks_sq_sum"], b * b * c["user_b_pred_sq_sum"],
             g * g * s["user_pred_sq_sum"], -2 * a * b * c["user_clicks_b_pred_sum"],
             2 * a * g * s["user_clicks_pred_sum"], -2 * b * g * c["user_pred_b_pred_sum"])
    spread = stats.fsum(terms)  # (NaN where a pred sum's inverse squared passes float64's range)
    if spread <= 8 * 2.0**-52 * stats.fsum(abs(t) for t in terms):
        spread = 0.0
    return math.sqrt(spread)


def _stderrs(s: dict[str, float]) -> dict[str, float]:
    """Standard errors of ``INTERVAL_FIELDS`` with users as independent clusters
    (:func:`mpieval.kernels.stats.ratio_stderr`, the delta method), with the small-sample
    factor of users of unequal weight (:func:`_weights`,
    :func:`mpieval.kernels.stats.weighted_cluster_stderr`; ``sqrt(V / (V - 1))`` for
    ``uauc``); NaN below two users:
    ``uauc = sum A_u / sum 1`` and ``wuauc = sum n_u A_u / sum n_u`` over the valid users
    (``A_u`` the user's AUC, ``n_u`` its rows); ``actual_ctr = sum c_u / sum n_u``,
    ``predicted_ctr = sum p_u / sum n_u``, ``copc = sum c_u / sum p_u`` and ``logloss =
    sum l_u / sum n_u`` over every user (``MOMENT_FIELDS``)."""
    stderr = dict.fromkeys(INTERVAL_FIELDS, math.nan)
    users = s["valid_users"]
    if users >= 2:
        stderr["uauc"] = stats.cluster_stderr(stats.ratio_stderr(
            s["auc_sum"], users, s["auc_sq_sum"], s["auc_sum"], users), users)
        stderr["wuauc"] = stats.weighted_cluster_stderr(stats.ratio_stderr(
            s["auc_rows_sum"], s["valid_rows"], s["auc_sq_rows_sq_sum"],
            s["auc_rows_sq_sum"], s["rows_sq_sum"]), *_weights(s, "wuauc"))
    every = s["users"]
    if every >= 2:
        rows, rows_sq = s["rows"], s["user_rows_sq_sum"]
        for name, (a, b, aa, ab, bb) in {
            "actual_ctr": (s["clicks"], rows, s["user_clicks_sq_sum"],
                           s["user_clicks_rows_sum"], rows_sq),
            "predicted_ctr": (s["pred_sum"], rows, s["user_pred_sq_sum"],
                              s["user_pred_rows_sum"], rows_sq),
            "copc": (s["clicks"], s["pred_sum"], s["user_clicks_sq_sum"],
                     s["user_clicks_pred_sum"], s["user_pred_sq_sum"]),
            "logloss": (s["logloss_sum"], rows, s["user_logloss_sq_sum"],
                        s["user_logloss_rows_sum"], rows_sq),
        }.items():
            stderr[name] = stats.weighted_cluster_stderr(stats.ratio_stderr(a, b, aa, ab, bb),
                                                         *_weights(s, name))
    return stderr


def _weights(s: dict[str, float], name: str) -> tuple[float, float, float]:
    """``(sum w, sum w^2, sum w^3)`` of the users' weights in the estimator of ``name``
    (:func:`mpieval.kernels.stats.weighted_cluster_stderr`): the valid users' rows for
    ``wuauc``, every user's pred sums for ``copc``, every user's rows otherwise."""
    if name == "wuauc":
        return s["valid_rows"], s["rows_sq_sum"], s["rows_cube_sum"]
    if name == "copc":
        return s["pred_sum"], s["user_pred_sq_sum"], s["user_pred_cube_sum"]
    return s["rows"], s["user_rows_sq_sum"], s["user_rows_cube_sum"]


def _count(x: float) -> int | float:
    """A count: whole (an int), or with weights a sum of weights, kept as it is."""
    return int(x) if x.is_integer() and abs(x) < 2.0**53 else x


def _counts(x: np.ndarray) -> list[int | float]:
    """:func:`_count` of each element: ints at once when every one is whole; one element
    by the scalar (a slice's own block)."""
    if len(x) == 1:
        return [_count(float(x[0]))]
    if len(x) and bool(np.all((x == np.floor(x)) & (np.abs(x) < 2.0**53))):
        whole: list[int | float] = x.astype(np.int64).tolist()
        return whole
    return [_count(v) for v in x.tolist()]


def _ratio(a: float, b: float) -> float:
    return a / b if b != 0 and not math.isnan(b) else math.nan
