"""The ``ranking`` kind: per-user top-K ranking quality per tag (NDCG, NDCG@K, Recall@K).

Per user (block ``all``) and per user's rows of one tag (the block of that tag), rows
ranked by pred, highest first, gain = label (graded relevance, finite and >= 0; 0 is not
relevant), discount ``1 / log2(rank + 1)``; tied preds take every order of the tie with
equal chance (:mod:`mpieval.kinds.ranking.kernels` gives the formulas)::

    NDCG@K   = DCG@K / IDCG@K        (IDCG@K: the labels sorted descending)
    NDCG     = DCG / IDCG            (no cutoff)
    Recall@K = expected relevant rows among the first K / relevant rows

A user without a relevant row is not valid. Each value of a block is the unweighted mean
over its valid users; its ``ci95`` treats the users as independent clusters (as UAUC's).

Exact however the rows are split across ranks: :meth:`RankingMetric.local_sums` moves
every user's rows not moved yet to the rank that owns the user
(:func:`mpieval.exchange.move_to_owners`), groups them (:func:`mpieval.exchange.group_rows`)
and each rank adds its users' values to exact accumulators, summed in the one
``Allreduce`` of :func:`mpieval.metric.compute_all`: the same bits on any number of
ranks, in any order of rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from mpieval import logline
from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.exchange import group_rows
from mpieval.kernels import exact, stats
from mpieval.kinds.ranking import DEFAULT_K, KIND
from mpieval.kinds.ranking.kernels import sum_fields, user_sums, value_names
from mpieval.metric import warn_undefined
from mpieval.tags import ALL, TagBlocks, reasons_text
from mpieval.user_rows import UserRowsMetric
from mpieval.validation import as_vector, check_finite, check_lengths


@dataclass(frozen=True)
class RankingBlock:
    """The values of one tag (``all`` or a tag value); NaN marks an undefined value.

    ``values`` maps each name of :func:`mpieval.kinds.ranking.kernels.value_names` (``ndcg``,
    ``ndcg@K``..., ``recall@K``...) to its mean over the valid users; ``stderr`` holds
    their standard errors with users as independent clusters (NaN below two valid users;
    :meth:`ci` gives none below :data:`mpieval.kernels.stats.MIN_CLUSTERS`).
    """

    tag: str
    k: tuple[int, ...]
    values: dict[str, float]
    valid_user_count: int
    real_user_count: int
    real_ins_num: int
    stderr: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    @property
    def ndcg(self) -> float:
        return self.values["ndcg"]

    def ci(self, level: float = 0.95) -> dict[str, tuple[float, float] | None]:
        """Intervals ``value -/+ t se`` of every value at ``level`` (Student's t with
        ``valid_user_count - 1`` degrees of freedom), cut to [0, 1]; None where undefined,
        below :data:`mpieval.kernels.stats.MIN_CLUSTERS` valid users or with a spread of
        0."""
        return {name: stats.cluster_interval(value, self.stderr.get(name, math.nan),
                                             self.valid_user_count, level, 0.0, 1.0)
                for name, value in self.values.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            **{name: logline.json_number(value) for name, value in self.values.items()},
            "valid_user_count": self.valid_user_count,
            "real_user_count": self.real_user_count,
            "real_ins_num": self.real_ins_num,
            "ci95": {name: None if pair is None else list(pair)
                     for name, pair in self.ci(0.95).items()},
        }

    def to_log_line(self, name: str) -> str:
        """``NAME: Tag=TAG NDCG=%g NDCG@K=%g... Recall@K=%g... ValidUserCount=%d
        RealUserCount=%d RealInsNum=%d``, cutoffs ascending."""
        v, n = logline.value, logline.count
        values = " ".join(f"{_log_name(key)}={v(value)}" for key, value in self.values.items())
        return (f"{name}: Tag={self.tag} {values} ValidUserCount={n(self.valid_user_count)} "
                f"RealUserCount={n(self.real_user_count)} RealInsNum={n(self.real_ins_num)}")


def _log_name(name: str) -> str:
    """``ndcg`` -> ``NDCG``, ``ndcg@5`` -> ``NDCG@5``, ``recall@5`` -> ``Recall@5``."""
    value, at, cutoff = name.partition("@")
    return {"ndcg": "NDCG", "recall": "Recall"}[value] + at + cutoff


@dataclass(frozen=True)
class RankingResult(TagBlocks[RankingBlock]):
    """Result of the ``ranking`` kind: one block per tag, ``all`` first, then tags sorted."""

    k: tuple[int, ...]
    blocks: tuple[RankingBlock, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND.name, "k": list(self.k),
                "tags": {block.tag: block.to_dict() for block in self.blocks}}

    def to_log_line(self, name: str) -> str:
        """One line per tag, ``all`` first, joined with newlines."""
        return "\n".join(block.to_log_line(name) for block in self.blocks)


def block_from_sums(tag: str, k: tuple[int, ...],
                    sums: np.ndarray) -> tuple[RankingBlock, list[str]]:
    """The values of one block from its summed fields (:func:`sum_fields`), and why any
    is NaN."""
    s = dict(zip(sum_fields(k), (float(x) for x in sums), strict=True))
    valid = s["valid_users"]
    values, stderr = {}, {}
    for name in value_names(k):
        total, squares = s[f"{name}_sum"], s[f"{name}_sq_sum"]
        values[name] = total / valid if valid else math.nan
        # users as independent clusters: the delta method of sum v_u / sum 1 (as UAUC),
        # with the small-sample factor sqrt(V / (V - 1))
        stderr[name] = stats.cluster_stderr(
            stats.ratio_stderr(total, valid, squares, total, valid), valid)
    reasons = []
    if s["rows"] == 0:
        reasons.append(f"tag {tag}: no rows")
    elif valid == 0:
        reasons.append(f"tag {tag}: no user has a relevant row (label > 0), NDCG and Recall "
                       "are undefined")
    elif valid < stats.MIN_CLUSTERS:
        reasons.append(f"tag {tag}: ci95 of NDCG and Recall needs {stats.MIN_CLUSTERS} "
                       "valid users")
    else:
        reasons += [f"tag {tag}: ci95 of {name} is null: its spread over the users is 0"
                    for name, se in stderr.items() if se == 0]
    block = RankingBlock(tag=tag, k=k, values=values, valid_user_count=int(valid),
                         real_user_count=int(s["users"]), real_ins_num=int(s["rows"]),
                         stderr=stderr)
    return block, reasons


class RankingMetric(UserRowsMetric):
    """Per-user NDCG, NDCG@K and Recall@K per tag (formulas: module doc), exact for any
    split of a user's rows across ranks.

    ``update(uid, pred, label, tag=None)``: ``uid`` integers or strings/bytes (never
    missing); ``pred`` finite numbers (a score: higher ranks first); ``label`` the graded
    relevance, finite and >= 0; ``tag`` integers or strings (rows without a tag count in
    ``all`` only). Option ``k``: the cutoffs, positive integers (default 5, 10, 20).

    State: the rows of :class:`~mpieval.user_rows.UserRowsMetric` (key, pred, label as a
    float64, tag code).

    Parameters
    ----------
    comm : Comm, mpi4py communicator, torch or Paddle process group, optional
        Where ``compute()`` communicates; None: resolved on first use.
    k : sequence of int, default (5, 10, 20)
        The cutoffs K of NDCG@K and Recall@K.

    Raises
    ------
    InputError
        A bad ``k`` (``update()``: a bad batch, raised again by ``compute()`` on every
        rank).

    Examples
    --------
    >>> import numpy as np
    >>> from mpieval import RankingMetric
    >>> metric = RankingMetric(k=[1, 2])
    >>> metric.update(uid=np.array([1, 1, 1]), pred=np.array([0.9, 0.5, 0.1]),
    ...               label=np.array([0, 1, 0]))
    >>> result = metric.compute()
    >>> result.all["recall@1"], result.all["recall@2"]
    (0.0, 1.0)
    """

    kind = KIND.name
    inputs = KIND.declared_inputs
    options = KIND.declared_options
    label_dtype = np.float64
    k: tuple[int, ...]

    def __init__(self, comm: Comm | Any | None = None, *, k: Any = DEFAULT_K) -> None:
        super().__init__(comm, k=k)

    def state_dict(self) -> dict[str, Any]:
        """:meth:`Metric.state_dict`, the cutoffs as an int64 array (a plain value)."""
        return {**super().state_dict(), "options.k": np.array(self.k, dtype=np.int64)}

    def update(self, uid: Any, pred: Any, label: Any, tag: Any = None) -> None:
        """Add a batch of rows (local: no communication). A bad batch changes nothing."""
        with self._validating():
            p = as_vector("pred", pred)
            y = as_vector("label", label)
            user, check = self._user_keys(uid, None)
            check_lengths(uid=user, pred=p, label=y)
            check_finite("pred", p)
            check_relevance("label", y)
            tags = None if tag is None else self._tags.check(tag, len(p))
        if len(p) == 0:
            return
        self._store(user, check, p, y.astype(np.float64), tags)

    def local_sums(self, comm: Comm) -> dict[str, np.ndarray]:
        """Collective: agree on the tags, move rows to their users' owners, sum per tag."""
        layout, local_to_global = self._gather(comm)
        self._layout = layout
        keys, columns, checks = self._outgoing(layout, local_to_global)
        users = comm.agreed(partial(group_rows, keys, columns, checks=checks),
                            catch=UidCollisionError)
        del keys, columns, checks
        sums = user_sums(users.keys, users.columns["pred"], users.columns["label"],
                         users.columns.get("tag"), len(layout.tags), self.k)
        return {"blocks": sums}

    def finish(self, sums: dict[str, np.ndarray], comm: Comm) -> RankingResult:
        assert self._layout is not None, "finish() follows local_sums()"
        names = (ALL, *(str(tag) for tag in self._layout.tags))
        blocks, reasons = [], []  # reasons: (tag, why)
        for name, block_sums in zip(names, exact.to_floats(sums["blocks"]), strict=True):
            block, why = block_from_sums(name, self.k, block_sums)
            blocks.append(block)
            reasons += [(name, text.removeprefix(f"tag {name}: ")) for text in why]
        if reasons:
            warn_undefined(comm, "ranking: " + reasons_text(reasons))
        return RankingResult(self.k, tuple(blocks))


def check_relevance(field: str, values: np.ndarray) -> None:
    """Every value a graded relevance: finite (exact as float64) and >= 0."""
    check_finite(field, values)
    if len(values) == 0 or values.dtype.kind in "bu":
        return
    bad = values < 0
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(field, "must be >= 0 (a graded relevance; 0 is not relevant)",
                         count=int(bad.sum()), first_index=first, value=values[first].item())

