"""The ``ranking`` kind: per-user top-K ranking quality per tag (NDCG, NDCG@K, Recall@K,
MRR, MAP@K, hit rate@K).

Per user (block ``all``) and per user's rows of one tag (the block of that tag), rows
ranked by pred, highest first, gain = label (``gain="exponential"``: ``2^label - 1``),
discount ``1 / log2(rank + 1)``, relevant = label > 0; tied preds take every order of the
tie with equal chance, each value its expectation over those orders
(:mod:`mpieval.kinds.ranking.kernels` gives the formulas)::

    NDCG@K   = DCG@K / IDCG@K        (IDCG@K: the gains sorted descending)
    NDCG     = DCG / IDCG            (no cutoff)
    Recall@K = expected relevant rows among the first K / relevant rows
    MRR      = E[1 / rank of the first relevant row]
    MAP@K    = E[sum_{rank i <= K, relevant} precision@i] / min(K, relevant rows)
    hit_rate@K = chance of a relevant row among the first K

A user without a relevant row is not valid. Each value of a block is the unweighted mean
over its valid users; its ``ci95`` treats the users as independent clusters (as UAUC's).
With ``compare`` (model B's pred), each block also holds B's values and the differences
B - A, the mean over the valid users of each user's difference, with their intervals and
paired p-values over those users (Student's t, as ``uauc_diff``) and, in the tag blocks,
Benjamini-Hochberg q-values over the tags other than ``all``.

Exact however the rows are split across ranks: :meth:`RankingMetric.local_sums` moves
every user's rows not moved yet to the rank that owns the user
(:func:`mpieval.exchange.move_to_owners`), groups them (:func:`mpieval.exchange.group_rows`)
and each rank adds its users' values to exact accumulators, summed in the one
``Allreduce`` of :func:`mpieval.metric.compute_all`: the same bits on any number of
ranks, in any order of rows.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from mpieval import _core, logline
from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import group_rows
from mpieval.kernels import exact, stats
from mpieval.kinds.ranking import DEFAULT_K, KIND
from mpieval.kinds.ranking.kernels import (
    LOG_VALUES,
    MAX_EXPONENTIAL_LABEL,
    sum_fields,
    user_sums_window,
    value_names,
)
from mpieval.metric import narrowed_sums, warn_undefined
from mpieval.tags import (
    BlockNames,
    ColumnBlocks,
    TagBlocks,
    block_of,
    dicts_of,
    fresh_dicts,
    gc_paused,
    held_reasons,
    held_reasons_text,
    whole_ints,
)
from mpieval.user_rows import UserRowsMetric
from mpieval.validation import as_vector, check_finite, check_lengths


@dataclass(frozen=True)
class RankingComparison:
    """Model B (pred column ``pred``) against model A in one tag block, paired by user:
    B's ``values`` (the names of A's), each value's difference B - A (``diffs``, the mean
    over the valid users of the user's difference; a user is valid for both, the labels
    being the same) and its standard error with users as independent clusters
    (``stderr``). :meth:`ci` and :meth:`p` give the intervals and two-sided p-values
    (Student's t with ``users - 1`` degrees of freedom; None/NaN below
    :data:`mpieval.kernels.stats.MIN_CLUSTERS` valid users or with a spread of 0; the
    interval of a ``hit_rate@K`` difference is Newcombe's, from A's and B's rates and
    their correlation over the users, ``correlation``). ``q``: the Benjamini-Hochberg
    q-values of the p-values over the result's tags other than ``all``
    (:meth:`mpieval.tags.TagBlocks.with_q_values`; empty in ``all`` and until set)."""

    pred: str
    values: dict[str, float]
    diffs: dict[str, float]
    stderr: dict[str, float]
    users: int = 0
    q: dict[str, float] = field(default_factory=dict)
    a_values: dict[str, float] = field(default_factory=dict)
    correlation: dict[str, float] = field(default_factory=dict)
    own_stderr: dict[str, float] = field(default_factory=dict)  # of B's values

    def ci(self, name: str, level: float = 0.95) -> tuple[float, float] | None:
        """The interval of value ``name``'s difference at ``level``, within [-1, 1]."""
        if _is_rate(name):
            return _paired_rate_interval(self.a_values[name], self.values[name],
                                         self.diffs[name], self.correlation[name],
                                         self.users, level)
        return stats.cluster_interval(self.diffs[name], self.stderr[name], self.users,
                                      level, -1.0, 1.0)

    def p(self, name: str) -> float:
        """The two-sided p-value of value ``name``'s difference (no difference)."""
        return stats.cluster_p(self.diffs[name], self.stderr[name], self.users)

    def own_ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """B's own intervals, by the rules of A's (:meth:`RankingBlock.ci`)."""
        return _intervals(self.values, self.own_stderr, self.users, level)

    def to_dict(self) -> dict[str, Any]:
        """``pred``, B's values and their ``ci95`` (when known), then for each value
        ``X``: ``X_diff``, ``X_diff_ci95``, ``X_diff_p`` and (tag blocks) ``X_diff_q``."""
        fields: dict[str, Any] = {"pred": self.pred}
        fields.update({name: logline.json_number(value) for name, value in self.values.items()})
        if self.own_stderr:
            fields["ci95"] = {name: None if pair is None else list(pair)
                              for name, pair in self.own_ci(0.95).items()}
        for name, diff in self.diffs.items():
            pair = self.ci(name)
            fields[f"{name}_diff"] = logline.json_number(diff)
            fields[f"{name}_diff_ci95"] = None if pair is None else list(pair)
            fields[f"{name}_diff_p"] = logline.json_number(self.p(name))
            if self.q:
                fields[f"{name}_diff_q"] = logline.json_number(self.q[name])
        return fields


@dataclass(frozen=True)
class RankingBlock:
    """The values of one tag (``all`` or a tag value); NaN marks an undefined value.

    ``values`` maps each name of :func:`mpieval.kinds.ranking.kernels.value_names` (``ndcg``,
    ``ndcg@K``..., ``recall@K``..., ``mrr``, ``map@K``..., ``hit_rate@K``...) to its mean
    over the valid users; ``stderr`` holds their standard errors with users as independent
    clusters (NaN below two valid users; :meth:`ci` gives none below
    :data:`mpieval.kernels.stats.MIN_CLUSTERS`). ``compare``: model B against A.
    """

    tag: str
    k: tuple[int, ...]
    values: dict[str, float]
    valid_user_count: int
    real_user_count: int
    real_ins_num: int
    stderr: dict[str, float] = field(default_factory=dict)
    compare: RankingComparison | None = None
    users_le_k: dict[int, int] = field(default_factory=dict)
    """The valid users of at most K rows, per cutoff K. Their Recall@K and hit rate@K are
    1 whatever the order, so a high Recall@K over such users says little."""

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    @property
    def ndcg(self) -> float:
        return self.values["ndcg"]

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Intervals of every value at ``level``; None where undefined or below
        :data:`mpieval.kernels.stats.MIN_CLUSTERS` valid users. ``hit_rate@K`` is a rate
        over the users: Wilson's score interval of ``hit_rate * V`` hits among ``V`` users
        (:func:`mpieval.kernels.stats.wilson_interval`; a user's value in [0, 1] varies at
        most as a hit or a miss, so it is valid at 0 and at 1, where most users are). The
        others: ``value -/+ t se`` (Student's t with ``V - 1`` degrees of freedom), cut to
        [0, 1], None with a spread of 0."""
        if self.valid_user_count < stats.MIN_CLUSTERS:  # (many tags: most are such)
            return dict.fromkeys(self.values)
        return _intervals(self.values, self.stderr, self.valid_user_count, level)

    def to_dict(self) -> dict[str, Any]:
        return {
            **{name: logline.json_number(value) for name, value in self.values.items()},
            "valid_user_count": self.valid_user_count,
            "real_user_count": self.real_user_count,
            "real_ins_num": self.real_ins_num,
            **({"users_le_k": {str(k): n for k, n in self.users_le_k.items()}}
               if self.users_le_k else {}),
            "ci95": {name: None if pair is None else list(pair)
                     for name, pair in self.ci(0.95).items()},
            **({} if self.compare is None else {"compare": self.compare.to_dict()}),
        }

    def to_log_line(self, name: str) -> str:
        """``NAME: Tag=TAG NDCG=%g NDCG@K=%g... Recall@K=%g... ValidUserCount=%d
        RealUserCount=%d RealInsNum=%d``, cutoffs ascending (the other values are in the
        JSON only)."""
        v, n = logline.value, logline.count
        values = " ".join(f"{label}={v(self.values[key])}"
                          for key, label in _logged(tuple(self.values)))
        return (f"{name}: Tag={self.tag} {values} ValidUserCount={n(self.valid_user_count)} "
                f"RealUserCount={n(self.real_user_count)} RealInsNum={n(self.real_ins_num)}")


def _intervals(values: dict[str, float], stderr: dict[str, float], users: int,
               level: float) -> dict[str, tuple[float, float] | None]:
    """The intervals of :meth:`RankingBlock.ci` of ``values`` over ``users`` valid users."""
    return {name: (_rate_interval(value, users, level) if _is_rate(name) else
                   stats.cluster_interval(value, stderr.get(name, math.nan), users,
                                          level, 0.0, 1.0))
            for name, value in values.items()}


def _is_rate(name: str) -> bool:
    return name.startswith("hit_rate@")


def _rate_interval(value: float, users: int, level: float) -> tuple[float, float] | None:
    """Wilson's interval of a share of ``users`` (None below the minimum of users)."""
    if users < stats.MIN_CLUSTERS or math.isnan(value):
        return None
    return stats.wilson_interval(value * users, users, level)


def _paired_rate_interval(a: float, b: float, diff: float, correlation: float, users: int,
                          level: float) -> tuple[float, float] | None:
    """Newcombe's (1998, method 10) interval of the difference ``b - a`` of two rates over
    the same ``users``: Wilson's intervals ``[la, ua]``, ``[lb, ub]`` of each and the
    correlation ``phi`` of the users' values give ``diff - sqrt((b - lb)^2 - 2 phi (b -
    lb)(ua - a) + (ua - a)^2)`` to ``diff + sqrt((ub - b)^2 - 2 phi (ub - b)(a - la) +
    (a - la)^2)``, cut to [-1, 1]; not zero-width when every user's difference is 0
    (None below the minimum of users)."""
    if users < stats.MIN_CLUSTERS or math.isnan(a) or math.isnan(b):
        return None
    rate_a = stats.wilson_interval(a * users, users, level)
    rate_b = stats.wilson_interval(b * users, users, level)
    assert rate_a is not None and rate_b is not None
    (la, ua), (lb, ub) = rate_a, rate_b
    below = math.sqrt(max(0.0, (b - lb) ** 2 - 2 * correlation * (b - lb) * (ua - a)
                          + (ua - a) ** 2))
    above = math.sqrt(max(0.0, (ub - b) ** 2 - 2 * correlation * (ub - b) * (a - la)
                          + (a - la) ** 2))
    return (max(-1.0, diff - below), min(1.0, diff + above))


@functools.lru_cache(maxsize=64)
def _logged(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The values of a block's log line, in order, each with its name there (made once per
    cutoffs: each tag block asks)."""
    return tuple((name, _log_name(name)) for name in names
                 if name.partition("@")[0] in LOG_VALUES)


def _log_name(name: str) -> str:
    """``ndcg`` -> ``NDCG``, ``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``."""
    value, at, cutoff = name.partition("@")
    return {"ndcg": "NDCG", "recall": "Recall"}[value] + at + cutoff


@dataclass(frozen=True)
class RankingResult(TagBlocks[RankingBlock]):
    """Result of the ``ranking`` kind: one block per tag, ``all`` first, then tags sorted."""

    k: tuple[int, ...]
    blocks: Sequence[RankingBlock]  # a tuple, or many tags' ColumnBlocks

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND.name, "k": list(self.k),
                "tags": self.tags_dict()}

    def to_log_line(self, name: str) -> str:
        """One line per tag, ``all`` first, joined with newlines (from the blocks' columns
        when they are kept so: no block made)."""
        table = getattr(self.blocks, "source", None)
        if isinstance(table, _BlockColumns):
            return "\n".join(table.lines(name))
        return "\n".join(block.to_log_line(name) for block in self.blocks)


def block_from_sums(tag: str, k: tuple[int, ...], sums: np.ndarray,
                    compare: str | None = None) -> tuple[RankingBlock, list[str]]:
    """The values of one block from its summed fields (:func:`sum_fields`), and why any
    is NaN."""
    s = dict(zip(sum_fields(k, compare is not None), sums.tolist(), strict=True))
    valid = s["valid_users"]
    values, stderr = {}, {}
    for name in value_names(k):
        values[name], stderr[name] = _mean_and_stderr(s[f"{name}_sum"], s[f"{name}_sq_sum"],
                                                      valid)
    comparison = None
    if compare is not None:
        b_values, b_stderr, diffs, diff_stderr, correlation = {}, {}, {}, {}, {}
        for name in value_names(k):
            b_values[name], b_stderr[name] = _mean_and_stderr(
                s[f"b_{name}_sum"], s[f"b_{name}_sq_sum"], valid)
            diffs[name], diff_stderr[name] = _mean_and_stderr(
                s[f"{name}_diff_sum"], s[f"{name}_diff_sq_sum"], valid)
            correlation[name] = _correlation(s[f"{name}_sum"], s[f"{name}_sq_sum"],
                                             s[f"b_{name}_sum"], s[f"b_{name}_sq_sum"],
                                             s[f"{name}_diff_sq_sum"], valid)
        comparison = RankingComparison(compare, b_values, diffs, diff_stderr, int(valid),
                                       a_values=values, correlation=correlation,
                                       own_stderr=b_stderr)
    reasons = []
    if s["rows"] == 0:
        reasons.append(f"tag {tag}: no rows")
    elif valid == 0:
        reasons.append(f"tag {tag}: no user has a relevant row (label > 0), the values "
                       "are undefined")
    elif valid < stats.MIN_CLUSTERS:
        what = "the values" if compare is None else "the values and their differences"
        reasons.append(f"tag {tag}: ci95 of {what} needs {stats.MIN_CLUSTERS} valid users")
    else:
        reasons += [f"tag {tag}: ci95 of {name} is null: its spread over the users is 0"
                    for name, se in stderr.items() if se == 0 and not _is_rate(name)]
        if comparison is not None:
            reasons += [f"tag {tag}: ci95 of {name}_diff is null: its spread over the "
                        "users is 0" for name, se in comparison.stderr.items()
                        if se == 0 and not _is_rate(name)]
    block = RankingBlock(tag=tag, k=k, values=values, valid_user_count=int(valid),
                         real_user_count=int(s["users"]), real_ins_num=int(s["rows"]),
                         stderr=stderr, compare=comparison,
                         users_le_k={cutoff: int(s[f"users_le_{cutoff}"]) for cutoff in k})
    return block, reasons


def blocks_from_sums(tags: Sequence[str], k: tuple[int, ...], sums: np.ndarray,
                     compare: str | None = None
                     ) -> tuple[ColumnBlocks[RankingBlock], list[tuple[str, np.ndarray]]]:
    """:func:`block_from_sums` of every block at once (``sums``: one row of
    :func:`sum_fields` a block), each value computed for all blocks as arrays
    (:func:`mpieval.kernels.stats.ratio_stderrs`), the same floats, with ``compare`` the
    comparisons' too and their q-values over the tags (:meth:`RankingResult.with_q_values`');
    the blocks, kept as those arrays (:class:`_BlockColumns`: a block made when read), and
    each reason a value is NaN with the indexes of the blocks it holds for, in order of the
    first block it holds for (the order of :func:`block_from_sums`' reasons tag after
    tag)."""
    s = {name: np.ascontiguousarray(sums[:, i])
         for i, name in enumerate(sum_fields(k, compare is not None))}
    valid, rows = s["valid_users"], s["rows"]
    names = value_names(k)
    means, stderr = _means_and_stderrs(s, names, valid, "{}")
    compared = None if compare is None else _CompareColumns(compare, s, names, means)
    table = _BlockColumns(tags, k, means, stderr, [valid, s["users"], rows],
                          [s[f"users_le_{cutoff}"] for cutoff in k], compared)
    blocks = ColumnBlocks(tags, table.blocks, table.dicts, source=table)
    some = (rows != 0) & (valid != 0)
    what = "the values" if compare is None else "the values and their differences"
    reasons: list[tuple[int, str, np.ndarray]] = [
        (0, "no rows", rows == 0),
        (1, "no user has a relevant row (label > 0), the values are undefined",
         (rows != 0) & (valid == 0)),
        (2, f"ci95 of {what} needs {stats.MIN_CLUSTERS} valid users",
         some & (valid < stats.MIN_CLUSTERS)),
    ]
    spreads = [(name, stderr[name]) for name in names if not _is_rate(name)]
    if compared is not None:  # then the differences' (block_from_sums' order)
        spreads += [(f"{name}_diff", compared.diff_stderr[name]) for name in names
                    if not _is_rate(name)]
    reasons += [(3 + rank, f"ci95 of {name} is null: its spread over the users is 0",
                 some & (valid >= stats.MIN_CLUSTERS) & (se == 0))
                for rank, (name, se) in enumerate(spreads)]
    return blocks, held_reasons(reasons)


def _means_and_stderrs(s: dict[str, np.ndarray], names: Sequence[str], valid: np.ndarray,
                       field: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:func:`_mean_and_stderr` of every block (arrays), the same floats, of each value
    ``name`` whose sums are ``field.format(name) + "_sum"`` and ``"_sq_sum"``."""
    means, stderr = {}, {}
    with np.errstate(all="ignore"):
        for name in names:
            total, squares = s[f"{field.format(name)}_sum"], s[f"{field.format(name)}_sq_sum"]
            means[name] = np.where(valid != 0, total / valid, math.nan)
            stderr[name] = stats.cluster_stderrs(stats.ratio_stderrs(
                total, valid, squares, total, valid), valid)
    return means, stderr


def _correlations(a: np.ndarray, aa: np.ndarray, b: np.ndarray, bb: np.ndarray,
                  dd: np.ndarray, units: np.ndarray) -> np.ndarray:
    """:func:`_correlation` of every block (float64 arrays), in one compiled pass
    (``kernels.hpp``'s ``correlation``: its steps, ``** 2`` as libm's ``pow``), the same
    floats."""
    a, aa, b, bb, dd, units = (np.ascontiguousarray(x, dtype=np.float64)
                               for x in (a, aa, b, bb, dd, units))
    out = np.empty(len(a))
    _core.ranking.correlations(a, aa, b, bb, dd, units, out)
    return out


class _CompareColumns:
    """The comparisons of a result's blocks as arrays, one element a block (as
    :func:`block_from_sums` makes each, the same floats), and their p-values and q-values
    over the tags (:meth:`mpieval.tags.TagBlocks.with_q_values`'): the blocks' comparisons
    made from them (:meth:`comparisons`) or their ``to_dict()`` written from them
    (:meth:`dicts`). ``s``: the blocks' sums (:func:`sum_fields` with ``compare``),
    ``means``: A's values."""

    def __init__(self, pred: str, s: dict[str, np.ndarray], names: Sequence[str],
                 means: dict[str, np.ndarray]) -> None:
        self.pred, self.names, self.a_means = pred, tuple(names), means
        valid = self.valid = s["valid_users"]
        self.b_means, self.b_stderr = _means_and_stderrs(s, names, valid, "b_{}")
        self.diffs, self.diff_stderr = _means_and_stderrs(s, names, valid, "{}_diff")
        self.correlation = {name: _correlations(
            s[f"{name}_sum"], s[f"{name}_sq_sum"], s[f"b_{name}_sum"], s[f"b_{name}_sq_sum"],
            s[f"{name}_diff_sq_sum"], valid) for name in names}
        # p-values where defined (MIN_CLUSTERS valid users), one at a time (few blocks)
        self.p = {name: np.full(len(valid), math.nan) for name in names}
        for i in np.flatnonzero(valid >= stats.MIN_CLUSTERS).tolist():
            for name in names:
                self.p[name][i] = stats.cluster_p(float(self.diffs[name][i]),
                                                  float(self.diff_stderr[name][i]),
                                                  int(valid[i]))
        # q-values over the tags (none without a tag: all alone)
        self.q = {name: np.concatenate(([math.nan], stats.bh_q_values_of(p[1:])))
                  for name, p in self.p.items()} if len(valid) > 1 else None

    def comparisons(self, start: int, stop: int) -> list[RankingComparison]:
        """The comparisons of the blocks ``start .. stop - 1``."""
        names = self.names

        def rows(columns: dict[str, np.ndarray]) -> list[dict[str, float]]:
            lists = [columns[name][start:stop].tolist() for name in names]
            return [dict(zip(names, row, strict=True)) for row in zip(*lists, strict=True)]

        q = [{}] * (stop - start) if self.q is None else rows(self.q)
        if start == 0 and self.q is not None:
            q[0] = {}  # (all's: none)
        return [RankingComparison(self.pred, values, diffs, stderr, users, q=block_q,
                                  a_values=a_values, correlation=correlation,
                                  own_stderr=own)
                for values, diffs, stderr, users, block_q, a_values, correlation, own in zip(
                    rows(self.b_means), rows(self.diffs), rows(self.diff_stderr),
                    whole_ints(self.valid[start:stop]), q, rows(self.a_means),
                    rows(self.correlation), rows(self.b_stderr), strict=True)]

    def dicts(self, start: int, stop: int) -> list[dict[str, Any]]:
        """:meth:`RankingComparison.to_dict` of the blocks ``start .. stop - 1`` as a block
        below :data:`~mpieval.kernels.stats.MIN_CLUSTERS` valid users writes it (its
        intervals, p-values and q-values null), a column at a time; the caller asks the
        others' blocks themselves."""
        n, names = stop - start, self.names
        numbers, none = logline.json_numbers, [None] * n
        keys = ["pred", *names, "ci95"]
        columns: list[list[Any]] = [[self.pred] * n, *(numbers(self.b_means[name][start:stop])
                                                       for name in names),
                                    fresh_dicts(names, n)]
        tagged_keys, tagged = list(keys), list(columns)
        for name in names:
            keys += [f"{name}_diff", f"{name}_diff_ci95", f"{name}_diff_p"]
            columns += [numbers(self.diffs[name][start:stop]), none, none]
            tagged_keys += [f"{name}_diff", f"{name}_diff_ci95", f"{name}_diff_p",
                            f"{name}_diff_q"]
            tagged += [numbers(self.diffs[name][start:stop]), none, none, none]
        if self.q is None:
            return dicts_of(tuple(keys), columns)
        made = dicts_of(tuple(tagged_keys), tagged)
        if start == 0:  # all's: no q-values
            made[0] = dicts_of(tuple(keys), [column[:1] for column in columns])[0]
        return made


_BLOCK_FIELDS = tuple(field.name for field in dataclasses.fields(RankingBlock))


class _BlockColumns:
    """The values of a result's blocks as arrays, one element a block
    (:func:`blocks_from_sums`), with ``compare`` their comparisons' (:class:`_CompareColumns`):
    the blocks ``start .. stop - 1`` made from them (:meth:`blocks`), their ``to_dict()``
    (:meth:`dicts`) or log lines (:meth:`lines`) written from them."""

    def __init__(self, tags: Sequence[str], k: tuple[int, ...], means: dict[str, np.ndarray],
                 stderr: dict[str, np.ndarray], counts: list[np.ndarray],
                 users_le_k: list[np.ndarray], compare: _CompareColumns | None = None) -> None:
        self.tags, self.k = tags, k
        self.means, self.stderr = means, stderr
        self.counts = counts  # valid users, users, rows
        self.users_le_k = users_le_k  # one array a cutoff
        self.compare = compare

    def _counts(self, start: int, stop: int) -> list[list[int]]:
        return [whole_ints(c[start:stop]) for c in self.counts]

    def blocks(self, start: int, stop: int) -> list[RankingBlock]:
        names, k = tuple(self.means), self.k
        mean_rows = zip(*(m[start:stop].tolist() for m in self.means.values()), strict=True)
        stderr_rows = zip(*(self.stderr[name][start:stop].tolist() for name in names),
                          strict=True)
        le_rows = zip(*(whole_ints(le[start:stop]) for le in self.users_le_k), strict=True)
        with gc_paused():  # many tags: a block's dicts are no cycles to look for
            compared: list[RankingComparison | None] = (
                [None] * (stop - start) if self.compare is None
                else [*self.compare.comparisons(start, stop)])
            return [
                _block((tag, k, dict(zip(names, mean_row, strict=True)), n_valid, n_users,
                        n_rows, dict(zip(names, stderr_row, strict=True)), comparison,
                        dict(zip(k, le_row, strict=True))))
                for tag, mean_row, n_valid, n_users, n_rows, stderr_row, comparison, le_row
                in zip(self.tags[start:stop], mean_rows, *self._counts(start, stop),
                       stderr_rows, compared, le_rows, strict=True)
            ]

    def dicts(self, start: int, stop: int) -> list[dict[str, Any]]:
        """:meth:`RankingBlock.to_dict` of the blocks ``start .. stop - 1``: a block below
        :data:`~mpieval.kernels.stats.MIN_CLUSTERS` valid users (many tags: most) written
        from the columns, its intervals null (as :meth:`RankingBlock.ci`), a column at a
        time; the others made and asked."""
        names = tuple(self.means)
        means = [logline.json_numbers(m[start:stop]) for m in self.means.values()]
        valid, users, rows = self._counts(start, stop)
        cutoffs = [str(cutoff) for cutoff in self.k]
        les = [whole_ints(le[start:stop]) for le in self.users_le_k]
        compared = [] if self.compare is None else [self.compare.dicts(start, stop)]
        keys = (*names, "valid_user_count", "real_user_count", "real_ins_num",
                *(("users_le_k",) if cutoffs else ()), "ci95", *(("compare",) * len(compared)))
        out = dicts_of(keys, [*means, valid, users, rows,
                              *([dicts_of(tuple(cutoffs), les)] if cutoffs else []),
                              fresh_dicts(names, len(valid)), *compared])
        enough = self.counts[0][start:stop] >= stats.MIN_CLUSTERS
        for i in np.flatnonzero(enough).tolist():
            out[i] = self.blocks(start + i, start + i + 1)[0].to_dict()
        return out

    def lines(self, name: str) -> list[str]:
        """:meth:`RankingBlock.to_log_line` of every block, a column at a time."""
        logged = _logged(tuple(self.means))
        # as to_log_line: "Tag=TAG " then the values joined by spaces, " ValidUserCount=..."
        pieces = [f"{name}: Tag=", *(f" {label}=" for _, label in logged),
                  ("" if logged else " ") + " ValidUserCount=", " RealUserCount=",
                  " RealInsNum=", ""]
        lines: list[str] = []
        for start in range(0, len(self.tags), ColumnBlocks.CHUNK):
            stop = start + ColumnBlocks.CHUNK
            values = [logline.values(self.means[key][start:stop]) for key, _ in logged]
            counts = [logline.counts(c) for c in self._counts(start, stop)]
            lines += logline.joined(pieces, [self.tags[start:stop], *values, *counts])
        return lines


def _block(values: tuple[Any, ...]) -> RankingBlock:
    """``RankingBlock(*values)`` (:func:`mpieval.tags.block_of`)."""
    return block_of(RankingBlock, _BLOCK_FIELDS, values)


def _correlation(a: float, aa: float, b: float, bb: float, dd: float, units: float) -> float:
    """The correlation over ``units`` users of A's and B's values from their sums ``a``,
    ``b``, sums of squares ``aa``, ``bb`` and the sum of the squared differences ``dd``
    (``sum a b = (aa + bb - dd) / 2``); 0 when either does not vary."""
    if units < 2:
        return 0.0
    var_a = max(0.0, aa / units - (a / units) ** 2)
    var_b = max(0.0, bb / units - (b / units) ** 2)
    if var_a <= 1e-15 or var_b <= 1e-15:
        return 0.0
    cov = (aa + bb - dd) / 2 / units - (a / units) * (b / units)
    return max(-1.0, min(1.0, cov / math.sqrt(var_a * var_b)))


def _mean_and_stderr(total: float, squares: float, units: float) -> tuple[float, float]:
    """The mean of per-user values from their sum and sum of squares over ``units``
    users, and its standard error with users as independent clusters: the delta method
    of ``sum v_u / sum 1`` (as UAUC's) with the small-sample factor ``sqrt(V / (V - 1))``
    (:func:`mpieval.kernels.stats.cluster_stderr`; NaN below two users)."""
    mean = total / units if units else math.nan
    return mean, stats.cluster_stderr(stats.ratio_stderr(total, units, squares, total, units),
                                      units)


class RankingMetric(UserRowsMetric):
    """Per-user NDCG, NDCG@K, Recall@K, MRR, MAP@K and hit rate@K per tag (formulas:
    module doc), exact for any split of a user's rows across ranks.

    ``update(uid, pred, label, tag=None, compare=None)``: ``uid`` integers or
    strings/bytes (never missing); ``pred`` finite numbers (a score: higher ranks first);
    ``label`` the graded relevance, finite and >= 0 (at most
    :data:`~mpieval.kinds.ranking.kernels.MAX_EXPONENTIAL_LABEL` with
    ``gain="exponential"``); ``tag`` integers or strings (rows without a tag count in
    ``all`` only); ``compare`` model B's preds of the rows (finite), given exactly when
    the metric has ``compare=``.

    State: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (key, pred, label as a
    float64, tag code, and B's pred with ``compare``).

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    k : sequence of int, default (5, 10, 20)
        The cutoffs K of NDCG@K, Recall@K, MAP@K and hit rate@K.
    gain : {"linear", "exponential"}, default "linear"
        NDCG's gain of a row: its label, or ``2^label - 1``.
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
    >>> from mpieval import RankingMetric
    >>> metric = RankingMetric(k=[1, 2])
    >>> metric.update(uid=np.array([1, 1, 1]), pred=np.array([0.9, 0.5, 0.1]),
    ...               label=np.array([0, 1, 0]))
    >>> result = metric.compute()
    >>> result.all["recall@1"], result.all["recall@2"], result.all["mrr"]
    (0.0, 1.0, 0.5)
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    label_dtype = np.float64
    fresh_sums = True  # (its local sums: per-tag windows made for the call)
    k: tuple[int, ...]
    gain: str
    compare: str | None

    def __init__(self, comm: Comm | Any | None = None, *, k: Any = DEFAULT_K,
                 gain: str = "linear", compare: str | None = None) -> None:
        super().__init__(comm, k=k, gain=gain, compare=compare)
        self._first_digit: dict[str, int] = {}  # of each part's window (local_sums)
        self._totals: dict[str, np.ndarray] = {}  # parts summed by their owners (local_sums)

    def state_dict(self) -> dict[str, Any]:
        """:meth:`Metric.state_dict`, the cutoffs as an int64 array (a plain value)."""
        return {**super().state_dict(), "options.k": np.array(self.k, dtype=np.int64)}

    def update(self, uid: Any, pred: Any, label: Any, tag: Any = None,
               compare: Any = None) -> None:
        """Add a batch of rows (local: no communication). A bad batch changes nothing.
        With ``compare=`` set on the metric, ``compare`` is model B's pred of the rows."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            b = None if compare is None else as_vector("compare", compare)
            if (b is None) != (self.compare is None):
                raise InputError("compare", "is needed: the metric compares two models"
                                 if b is None else "is given but the metric has compare=None")
            user, check = self._user_keys(uid, None)
            check_lengths(uid=user, pred=p, label=y, compare=b)
            check_finite("pred", p)
            if b is not None:
                check_finite("compare", b)
            check_relevance("label", y, MAX_EXPONENTIAL_LABEL
                            if self.gain == "exponential" else math.inf)
            tags = None if tag is None else self._tags.check(tag, len(p))
        if len(p) == 0:
            return
        self._store(user, check, p, y.astype(np.float64), tags, b)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: agree on the tags, move rows to their users' owners, sum per tag."""
        layout, local_to_global = self._gather(comm)
        self._layout = layout
        keys, columns, checks = self._outgoing(layout, local_to_global)
        # a user's rows in any order: the kind's pass orders them (kernels.ranked)
        users = comm.agreed(partial(group_rows, keys, columns, checks=checks, stable=False),
                            catch=UidCollisionError)
        del keys, columns, checks
        sums, first = user_sums_window(
            users.keys, users.columns["pred"], users.columns["label"],
            users.columns.get("tag"), len(layout.tags), self.k, self.gain,
            users.columns.get("compare"), alone=comm.alone, kept=comm.sums_owned)
        del users
        # summed as pairs, sent as the window of digits some rank uses or summed by the
        # tags' owners (many tags); on a rank alone, rounded already
        parts = {"blocks": sums}
        del sums  # (narrowed_sums takes the parts out of their dict as it cuts them)
        narrowed, self._first_digit, self._totals = narrowed_sums(parts, comm,
                                                                  {"blocks": first})
        return narrowed

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> RankingResult:
        assert self._layout is not None, "finish() follows local_sums()"
        names = BlockNames(self._layout.tags)  # (many tags: no text a tag until read)
        # taken out of sums: freed once rounded on a rank alone (its sums themselves)
        totals, self._totals = self._totals, {}
        values = exact.rounded(totals.pop("blocks") if totals else sums.pop("blocks"),
                               self._first_digit["blocks"])
        # every block's values at once (many tags), with compare the comparisons' too
        blocks, held = blocks_from_sums(names, self.k, values, self.compare)
        if held:
            warn_undefined(comm, "ranking: " + held_reasons_text(held, names))
        return RankingResult(self.k, blocks)


def check_relevance(field: str, values: np.ndarray, largest: float = math.inf) -> None:
    """Every value a graded relevance: finite (exact as float64), >= 0 and at most
    ``largest``."""
    check_finite(field, values)
    if len(values) == 0 or values.dtype.kind == "b":
        return
    if values.dtype.kind != "u":
        bad = values < 0
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise InputError(field, "must be >= 0 (a graded relevance; 0 is not relevant)",
                             count=int(bad.sum()), first_index=first,
                             value=values[first].item())
    if largest < math.inf:
        bad = values > largest
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise InputError(field, f"must be at most {largest:g} with gain exponential "
                             "(2^label - 1 must stay finite)", count=int(bad.sum()),
                             first_index=first, value=values[first].item())
