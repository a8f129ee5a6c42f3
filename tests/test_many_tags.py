"""Many tags (issue 36): the per-tag steps of ``wuauc`` and ``ranking`` run as whole-array
or compiled passes, and give the same bits as the per-tag computations they replace.

Oracles: a tag's block of a run over many tags equals, bit for bit, the ``all`` block of a
run over that tag's rows alone (the per-tag computation, one tag at a time); ``ranking``'s
exact sums equal the old loop over blocks (one ``add_values`` a block and field, kept
here as the reference); ``wuauc``'s row sums of many tags (each tag's digits added
directly) equal those of few tags (a fixed-point ``Wide`` pair a tag) and each tag's
:func:`exact.exact_sum` of its rows' values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import pytest

from mpieval import WuaucMetric
from mpieval.kernels import exact
from mpieval.kinds.auc.kernels import binary_logloss
from mpieval.kinds.ranking import kernels as ranking_kernels
from mpieval.kinds.ranking.metric import RankingMetric, RankingResult
from mpieval.kinds.wuauc import kernels as wuauc_kernels
from mpieval.kinds.wuauc.kernels import row_sums, row_sums_windowed


def _rows(rng: np.random.Generator, n: int, users: int, tags: int) -> dict[str, np.ndarray]:
    pred = rng.beta(2, 8, n)
    pred[rng.random(n) < 0.2] = 0.25  # ties
    return {"uid": rng.integers(0, users, n), "pred": pred,
            "label": (rng.random(n) < pred).astype(np.int64),
            "tag": rng.integers(0, tags, n)}


def _block_json(block: object) -> str:
    d = dict(block.to_dict())  # type: ignore[attr-defined]
    return json.dumps(d, sort_keys=True, default=str)


@pytest.mark.parametrize("kind", ["wuauc", "ranking"])
def test_each_tag_block_of_many_tags_is_the_all_block_of_its_rows_alone(rng, kind) -> None:
    """2,000 tags over 6,000 rows (a few rows a tag, most tags one user): each tag block,
    every value to the last bit, as a run over that tag's rows only gives for ``all``."""
    rows = _rows(rng, 6000, 400, 2000)
    make = WuaucMetric if kind == "wuauc" else RankingMetric

    def run(keep: np.ndarray | None) -> object:
        metric = make()
        part = rows if keep is None else {k: v[keep] for k, v in rows.items()}
        label = part["label"] if kind == "wuauc" else part["label"].astype(np.float64)
        metric.update(uid=part["uid"], pred=part["pred"], label=label, tag=part["tag"])
        with pytest.warns(Warning) if keep is None else _no_check():
            return metric.compute()

    many = run(None)
    for tag in rng.choice(np.unique(rows["tag"]), 25, replace=False).tolist():
        alone = run(rows["tag"] == tag)
        assert _block_json(many[tag]) == _block_json(alone.all).replace(  # type: ignore[attr-defined]
            '"tag": "all"', f'"tag": "{tag}"'), tag


@pytest.mark.parametrize("kind", ["wuauc", "ranking"])
def test_more_tags_than_uint16_codes_each_block_is_its_rows_alone(rng, kind) -> None:
    """70,000 tags (past the 65,535 a uint16 code holds), in two batches with a batch of
    rows without a tag between: the tags first seen last (codes past 65,535) each give,
    to the last bit, the ``all`` block of a run over their rows alone; the untagged rows
    count in ``all`` only."""
    n_tags = 70_000
    tags = np.concatenate([rng.permutation(n_tags), rng.integers(0, n_tags, 20_000)])
    rows = _rows(rng, len(tags), 20_000, 1)
    rows["tag"] = tags.astype(np.int64)
    untagged = _rows(rng, 5000, 20_000, 1)
    make = WuaucMetric if kind == "wuauc" else RankingMetric

    def update(metric: object, part: dict[str, np.ndarray], tagged: bool = True) -> None:
        label = part["label"] if kind == "wuauc" else part["label"].astype(np.float64)
        metric.update(uid=part["uid"], pred=part["pred"], label=label,  # type: ignore[attr-defined]
                      tag=part["tag"] if tagged else None)

    metric = make()
    half = len(tags) // 2
    update(metric, {k: v[:half] for k, v in rows.items()})
    update(metric, untagged, tagged=False)
    update(metric, {k: v[half:] for k, v in rows.items()})
    with _no_check():
        many = metric.compute()
    assert len(many.tags) == 1 + n_tags  # type: ignore[attr-defined]
    late = tags[65_536:n_tags]  # first seen after 65,536 others: local codes past uint16
    for tag in rng.choice(late, 10, replace=False).tolist():
        keep = rows["tag"] == tag
        alone = make()
        update(alone, {k: v[keep] for k, v in rows.items()})
        with _no_check():
            block = alone.compute().all  # type: ignore[attr-defined]
        assert _block_json(many[tag]) == _block_json(block).replace(  # type: ignore[index]
            '"tag": "all"', f'"tag": "{tag}"'), tag
    both = make()
    update(both, rows, tagged=False)
    update(both, untagged, tagged=False)
    with _no_check():
        assert _block_json(many.all) == _block_json(both.compute().all)  # type: ignore[attr-defined]


class _no_check:
    """A context that lets warnings through unchecked."""

    def __enter__(self) -> None:
        import warnings
        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *args: object) -> None:
        self._catch.__exit__(*args)


def _old_add_groups(sums: np.ndarray, keys: np.ndarray, block: np.ndarray, pred: np.ndarray,
                    label: np.ndarray, cutoffs: Sequence[int], gain: str,
                    compare: np.ndarray | None) -> None:
    """The per-block loop ``ranking`` ran before (one ``add_values`` a block and field)."""
    if len(keys) == 0:
        return
    values, valid, group_block, group_rows = ranking_kernels.group_values(
        keys, block, pred, label, cutoffs, gain)
    columns = [values]
    if compare is not None:
        b_values = ranking_kernels.group_values(keys, block, compare, label, cutoffs, gain)[0]
        columns += [b_values, b_values - values]
    order = np.argsort(group_block, kind="stable")
    blocks, starts = np.unique(group_block[order], return_index=True)
    n_values = values.shape[1]
    first_value = len(ranking_kernels.COUNT_FIELDS)
    for b, members in zip(blocks.tolist(), np.split(order, starts[1:]), strict=True):
        counts = (valid[members].sum(), len(members), group_rows[members].sum())
        for field, count in enumerate(counts):
            exact.add_values(sums[b, field], np.array([count], dtype=np.float64))
        kept = members[valid[members]]
        short = sums.shape[1] - len(cutoffs)
        for c, cutoff in enumerate(cutoffs):
            exact.add_values(sums[b, short + c], np.array(
                [np.count_nonzero(group_rows[kept] <= cutoff)], dtype=np.float64))
        for j in range(n_values):
            column = np.ascontiguousarray(values[kept, j])
            exact.add_values(sums[b, first_value + 2 * j], column)
            exact.add_values(sums[b, first_value + 2 * j + 1], column * column)
        if compare is None:
            continue
        first = first_value + 2 * n_values
        for j in range(n_values):
            b_column = np.ascontiguousarray(columns[1][kept, j])
            diff = np.ascontiguousarray(columns[2][kept, j])
            exact.add_values(sums[b, first + 4 * j], b_column)
            exact.add_values(sums[b, first + 4 * j + 1], b_column * b_column)
            exact.add_values(sums[b, first + 4 * j + 2], diff)
            exact.add_values(sums[b, first + 4 * j + 3], diff * diff)


@pytest.mark.parametrize("compare", [False, True])
@pytest.mark.parametrize("gain", ["linear", "exponential", "wide"])
@pytest.mark.parametrize("pairs_from", [1, 10**9])
def test_ranking_sums_of_many_tags_are_the_per_block_loops(rng, monkeypatch, compare, gain,
                                                          pairs_from) -> None:
    """The compiled per-tag sums against the per-block loops, digit for digit, made as
    pairs (many tags) or in ``WINDOW``'s digits (few); on a rank alone the pairs rounded
    at once, the same floats, with labels of 1 to 2**50 too (sums whose bits span more
    than a pair holds: spilled)."""
    monkeypatch.setattr(exact, "PAIRS_FROM", pairs_from)
    n, n_tags, cutoffs = 5000, 700, (1, 3, 10)
    keys = rng.integers(0, 300, n).astype(np.uint64)
    pred = rng.random(n).round(1)  # ties
    label = rng.integers(0, 4, n).astype(np.float64) * (rng.random(n) < 0.4)
    if gain == "wide":
        label, gain = label * 2.0 ** rng.integers(0, 50, n) / 3, "linear"
    tag = rng.integers(0, n_tags + 1, n)  # n_tags: no tag
    b = rng.random(n).round(1) if compare else None
    got = ranking_kernels.user_sums(keys, pred, label, tag, n_tags, cutoffs, gain, b)
    want = exact.accumulator(*got.shape[:2])
    _old_add_groups(want, keys, np.zeros(n, dtype=np.intp), pred, label, cutoffs, gain, b)
    tagged = tag < n_tags
    _old_add_groups(want, keys[tagged], 1 + tag[tagged].astype(np.intp), pred[tagged],
                    label[tagged], cutoffs, gain, None if b is None else b[tagged])
    assert np.array_equal(got, want) and got[1:].any()
    rounded, first = ranking_kernels.user_sums_window(keys, pred, label, tag, n_tags, cutoffs,
                                                      gain, b, alone=True)
    assert first == (exact.ROUNDED if pairs_from == 1 else ranking_kernels.WINDOW[0])
    assert np.array_equal(exact.rounded(rounded, first), exact.to_floats(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wuauc_row_sums_of_many_tags_are_those_of_few_and_each_tags_exact_sums(rng,
                                                                               dtype) -> None:
    """The same rows and tags summed with room for 40 blocks (a ``Wide`` pair a tag: at
    least 4,096 rows a tag) and for 400 (each tag's digits added directly): the same
    digits; and each tag's pred and logloss sums are its rows' exact sums."""
    n, used = 200_000, 40
    pred = rng.random(n).astype(dtype)
    label = (rng.random(n) < 0.3).astype(np.uint8)
    codes = rng.integers(0, used + 1, n).astype(np.uint32)  # code `used`: no tag
    tag_of_code = np.arange(used + 1, dtype=np.uint32)  # code `used` -> n_tags: no tag
    few = exact.accumulator(1 + used, 4)
    row_sums(pred, label, codes, tag_of_code, few)
    many = exact.accumulator(1 + 400, 4)
    tag_of_code[used] = 400
    row_sums(pred, label, codes, tag_of_code, many)
    assert np.array_equal(many[: 1 + used], few) and not many[1 + used :].any()
    for t in (0, 7, used - 1):
        rows = codes == t
        logloss = np.array([binary_logloss(p, y) for p, y in
                            zip(pred[rows].astype(np.float64).tolist(), label[rows].tolist(),
                                strict=True)])
        assert np.array_equal(many[1 + t, 2], exact.exact_sum(pred[rows].astype(np.float64)))
        assert np.array_equal(many[1 + t, 3], exact.exact_sum(logloss))
        assert exact.to_float(many[1 + t, 0]) == rows.sum()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n_tags", [3, 400])  # a Wide pair a tag; each tag's digits
@pytest.mark.parametrize("weighted", [False, True])
def test_wuauc_row_sums_in_a_window_are_the_sums_of_every_digit(rng, monkeypatch, threads,
                                                                n_tags, weighted) -> None:
    """Row sums made in ``WINDOW``'s digits hold the digits of the sums made with every
    digit (the others 0), on one thread or in slices on several; a pred whose bits fall
    below the window has them all given with every digit, the same digits; on a rank
    alone, rounded at once, the same floats."""
    from mpieval.kernels import parallel

    monkeypatch.setattr(parallel, "_threads", threads)
    monkeypatch.setattr(wuauc_kernels, "ROW_SLICE", 3000)
    n = 10_000
    pred = rng.beta(2, 8, n)
    label = (rng.random(n) < pred).astype(np.uint8)
    codes = rng.integers(0, n_tags + 1, n).astype(np.uint32)  # code n_tags: no tag
    tag_of_code = np.arange(n_tags + 1, dtype=np.uint32)
    weight = rng.integers(1, 5, n).astype(np.float64) if weighted else None
    for tiny in (False, True):
        if tiny:
            pred[17] = 1e-300  # its bits below 2**-178: outside the window
            codes[17] = n_tags  # a row without a tag: in block 0's Wide only
        full = exact.accumulator(1 + n_tags, 4)
        assert row_sums(pred, label, codes, tag_of_code, full, weight)
        got, first = row_sums_windowed(pred, label, codes, tag_of_code, 1 + n_tags, 4, weight)
        assert first == (0 if tiny else wuauc_kernels.WINDOW[0])
        assert np.array_equal(exact.widened(got, first), full)
        assert np.array_equal(exact.window_to_floats(got, first), exact.to_floats(full))
        # a rank alone, many tags: the pairs rounded at once (a tiny pred's bits spilled)
        monkeypatch.setattr(exact, "PAIRS_FROM", 1)
        rounded, first = row_sums_windowed(pred, label, codes, tag_of_code, 1 + n_tags, 4,
                                           weight, alone=True)
        monkeypatch.undo()
        monkeypatch.setattr(parallel, "_threads", threads)
        monkeypatch.setattr(wuauc_kernels, "ROW_SLICE", 3000)
        assert first == exact.ROUNDED
        assert np.array_equal(rounded, exact.to_floats(full))
    # a tiny pred of a row with a tag: its tag's pred sum spills (pairs), rounded in
    pred[18], codes[18] = 1e-300, 0
    full = exact.accumulator(1 + n_tags, 4)
    assert row_sums(pred, label, codes, tag_of_code, full, weight)
    monkeypatch.setattr(exact, "PAIRS_FROM", 1)
    rounded, first = row_sums_windowed(pred, label, codes, tag_of_code, 1 + n_tags, 4,
                                       weight, alone=True)
    assert first == exact.ROUNDED
    assert np.array_equal(rounded, exact.to_floats(full))


def test_wuauc_blocks_at_once_are_the_blocks_one_at_a_time(rng) -> None:
    """``blocks_from_sums`` (every block's values as arrays) against ``block_from_sums``
    (one block, plain floats) on sums of many shapes: blocks of 0 to 40 users (none, below
    and above ``MIN_CLUSTERS``), no rows, no valid user, a pred sum of 0, equal users (a
    spread of 0), one heavy user (few effective users), weights: every value and every
    reason the same, to the last bit."""
    from mpieval.kinds.wuauc.result import FIELDS, block_from_sums, blocks_from_sums

    blocks = []
    for i in range(600):
        block = _wuauc_block_sums(rng, i)
        blocks.append([block[name] for name in FIELDS])
    sums = np.array(blocks)
    tags = [f"t{i}" for i in range(len(sums))]
    at_once, held = blocks_from_sums(tags, {name: sums[:, i] for i, name in enumerate(FIELDS)})
    reasons: dict[str, list[str]] = {}
    for tag, block_sums, fast in zip(tags, sums, at_once, strict=True):
        block, why = block_from_sums(tag, block_sums)
        assert repr(fast) == repr(block)  # every float's repr: its bits
        for text in why:
            reasons.setdefault(text.removeprefix(f"tag {tag}: "), []).append(tag)
    assert [(text, [tags[i] for i in where]) for text, where in held] == list(reasons.items())
    assert len(held) >= 6  # the sums above reach most reasons
    from mpieval.kinds.wuauc.result import WuaucResult

    _columns_read_as_their_blocks(at_once, tags, WuaucResult)


def test_wuauc_blocks_of_many_results_are_each_result_alone(rng) -> None:
    """``blocks_of_many`` (many slices' results in one pass, their blocks joined) against
    ``blocks_from_sums`` of each result alone: results of 1 to 6 blocks, every block's
    JSON, log line and reason the same, to the last bit."""
    from mpieval.kinds.wuauc.result import (
        FIELDS,
        WuaucResult,
        blocks_from_sums,
        blocks_of_many,
    )

    sizes = rng.integers(1, 7, 150)
    sums = np.array([[_wuauc_block_sums(rng, i)[name] for name in FIELDS]
                     for i in range(int(sizes.sum()))])
    names = [["all", *(f"t{k}" for k in range(1, size))] for size in sizes.tolist()]
    many = blocks_of_many(names, {name: sums[:, i] for i, name in enumerate(FIELDS)})
    start, said = 0, 0
    for one, (blocks, held) in zip(names, many, strict=True):
        part = sums[start : start + len(one)]
        alone, held_alone = blocks_from_sums(one, {name: part[:, i]
                                                   for i, name in enumerate(FIELDS)})
        assert [(text, where.tolist()) for text, where in held] == [
            (text, where.tolist()) for text, where in held_alone]
        got, want = WuaucResult(blocks), WuaucResult(alone)
        assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())
        assert got.to_log_line("w") == want.to_log_line("w")
        assert [repr(block) for block in blocks] == [repr(block) for block in alone]
        start, said = start + len(one), said + bool(held)
    assert said > 20  # results with reasons (their masks cut to their blocks)
    with pytest.raises(ValueError, match="q-values"):
        blocks_of_many(names[:2], {name: sums[:3, i] for i, name in enumerate(FIELDS)},
                       "pred_b")


def _wuauc_block_sums(rng, i: int) -> dict[str, float]:
    """A block's ``FIELDS`` and ``COMPARE_FIELDS`` summed over 0 to 40 users of model A and
    B: no users, few, many; equal users (a spread of 0), one heavy user, weights, no
    clicks, a pred sum of 0, B's pred sum 0, equal differences."""
    users = int(rng.integers(0, 41))
    n = rng.integers(1, 30, users).astype(np.float64)
    if i % 7 == 0:
        n[:] = 3  # equal users
    if i % 11 == 0 and users:
        n[0] = 1e6  # one heavy user
    if i % 13 == 0:
        n *= rng.random(users) * 2  # weights
    c = np.floor(n * rng.random(users)) if i % 5 else np.zeros(users)
    p = n * rng.beta(2, 8, users) * (0 if i % 17 == 0 else 1)
    pb = p * (0.5 + rng.random(users)) * (0 if i % 19 == 0 else 1)
    lo, lb = n * rng.random(users), n * rng.random(users)
    auc = rng.random(users) if i % 9 else np.full(users, 0.5)
    # equal differences (a spread of 0); B better by 0.05 in a third of the blocks
    aucb = auc + (0.1 if i % 7 == 0 else rng.normal(0.05 if i % 3 == 0 else 0, 0.05, users))
    valid = (c > 0) & (c < n)
    nv, av, bv, d = n[valid], auc[valid], aucb[valid], (aucb - auc)[valid]

    def user_sums(a: np.ndarray) -> dict[str, float]:
        return {"users": users, "valid_users": valid.sum(), "valid_rows": nv.sum(),
                "valid_clicks": c[valid].sum(), "auc_sum": a.sum(), "auc_rows_sum": (a * nv).sum(),
                "auc_clicks_sum": (a * c[valid]).sum(), "auc_sq_sum": (a**2).sum(),
                "rows_sq_sum": (nv**2).sum(), "auc_rows_sq_sum": (a * nv**2).sum(),
                "auc_sq_rows_sq_sum": (a**2 * nv**2).sum(), "rows_cube_sum": (nv**3).sum()}

    s = {"rows": n.sum(), "clicks": c.sum(), "pred_sum": p.sum(), "logloss_sum": lo.sum(),
         **user_sums(av), "user_clicks_sq_sum": (c**2).sum(), "user_clicks_rows_sum": (c * n).sum(),
         "user_rows_sq_sum": (n**2).sum(), "user_pred_sq_sum": (p**2).sum(),
         "user_pred_rows_sum": (p * n).sum(), "user_clicks_pred_sum": (c * p).sum(),
         "user_logloss_sq_sum": (lo**2).sum(), "user_logloss_rows_sum": (lo * n).sum(),
         "user_rows_cube_sum": (n**3).sum(), "user_pred_cube_sum": (p**3).sum()}
    s.update({f"b_{name}": value for name, value in user_sums(bv).items()})
    s.update({"diff_sum": d.sum(), "diff_sq_sum": (d**2).sum(), "diff_rows_sum": (d * nv).sum(),
              "diff_rows_sq_sum": (d * nv**2).sum(), "diff_sq_rows_sq_sum": (d**2 * nv**2).sum(),
              "user_b_pred_sq_sum": (pb**2).sum(), "user_clicks_b_pred_sum": (c * pb).sum(),
              "user_pred_b_pred_sum": (p * pb).sum(),
              "user_logloss_diff_sq_sum": ((lb - lo) ** 2).sum(),
              "user_logloss_diff_rows_sum": ((lb - lo) * n).sum(),
              "b_rows": n.sum(), "b_clicks": c.sum(), "b_pred_sum": pb.sum(),
              "b_logloss_sum": lb.sum()})
    return {name: float(value) for name, value in s.items()}


@pytest.mark.parametrize("n_blocks", [1, 700])
def test_wuauc_compared_blocks_at_once_are_the_blocks_one_at_a_time(rng, n_blocks) -> None:
    """With ``compare``, ``blocks_from_sums`` (every block's values and comparison as
    arrays, the p-values and q-values over the tags at once) against ``block_from_sums``
    (one block, plain floats) then ``with_q_values``: every value, p-value and q-value, the
    JSON, the log lines (comparisons' too) and every reason the same, to the last bit; one
    block (``all`` alone) has no q-values."""
    from mpieval.kinds.wuauc.result import (
        COMPARE_FIELDS,
        DIFFS,
        FIELDS,
        WuaucResult,
        block_from_sums,
        blocks_from_sums,
    )

    names = FIELDS + COMPARE_FIELDS
    sums = np.array([[block[name] for name in names] for block in
                     (_wuauc_block_sums(rng, i) for i in range(n_blocks))])
    tags = ["all", *(f"t{i}" for i in range(1, n_blocks))]
    at_once, held = blocks_from_sums(tags, {name: sums[:, i] for i, name in enumerate(names)},
                                     "pred_b")
    one_by_one, reasons = [], {}
    for tag, block_sums in zip(tags, sums, strict=True):
        block, why = block_from_sums(tag, block_sums, "pred_b")
        one_by_one.append(block)
        for text in why:
            reasons.setdefault(text.removeprefix(f"tag {tag}: "), []).append(tag)
    plain = WuaucResult(tuple(one_by_one)).with_q_values(DIFFS)
    kept = WuaucResult(at_once)
    _kept_as_made_one_by_one(kept, plain, tags, held, reasons)
    if n_blocks > 1:
        compared = [block.compare for block in plain.blocks[1:]]
        assert sum(not np.isnan(c.p("uauc_diff")) for c in compared) > 50  # p-values made
        assert sum(c.q["uauc_diff"] < 0.05 for c in compared) > 10  # and some q-values small
        assert any("uauc_diff is null" in text for text, _ in held)  # equal differences
        _columns_read_as_their_blocks(at_once, tags, WuaucResult)
    else:
        assert plain.blocks[0].compare.q == {} and "_q" not in json.dumps(kept.to_dict())


def _kept_as_made_one_by_one(kept: Any, plain: Any, tags: list[str],
                             held: list[tuple[str, np.ndarray]],
                             reasons: dict[str, list[str]]) -> None:
    """A result whose blocks are kept as columns (``kept``, with the reasons ``held``)
    against the same blocks made one by one (``plain``, their ``reasons`` by text): every
    float (its repr: its bits), the JSON, the log lines and the reasons the same."""
    assert repr(tuple(kept.blocks)) == repr(tuple(plain.blocks))
    assert json.dumps(kept.to_dict()) == json.dumps(plain.to_dict())
    assert kept.to_log_line("m") == plain.to_log_line("m")
    assert [(text, [tags[i] for i in where]) for text, where in held] == list(reasons.items())


def _columns_read_as_their_blocks(columns: object, tags: list[str],
                                  result_of: Any) -> None:
    """A result whose blocks are kept as columns (``ColumnBlocks``) reads as the tuple of
    its blocks: indexes, slices, lookups by tag, ``==``, and the JSON and log lines it
    writes from its columns are those of the blocks made one by one (chunks of 7 blocks:
    chunk edges everywhere). ``result_of``: the kind's result of blocks."""
    from mpieval import jsonwriter
    from mpieval.tags import ColumnBlocks, TagDicts, dicts_as_written

    assert isinstance(columns, ColumnBlocks)
    made = tuple(columns)
    plain, kept = result_of(made), result_of(columns)
    same = repr  # (a NaN is not equal to itself: blocks compared by their floats' reprs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ColumnBlocks, "CHUNK", 7)
        assert same(tuple(columns)) == same(made)
        assert json.dumps(kept.to_dict()) == json.dumps(plain.to_dict())
        assert kept.to_log_line("m") == plain.to_log_line("m")
        with dicts_as_written():  # (an output only written: each chunk made as written)
            written, whole = kept.to_dict(), plain.to_dict()
        assert isinstance(written["tags"], TagDicts) and type(whole["tags"]) is dict
        assert jsonwriter.dumps({"m": written}) == json.dumps({"m": plain.to_dict()},
                                                              indent=2, allow_nan=False)
        tags_written = written["tags"]
        assert len(tags_written) == len(tags) and list(tags_written) == list(tags)
        assert json.dumps(tags_written[tags[9]]) == json.dumps(whole["tags"][tags[9]])
    assert len(columns) == len(tags) and kept.tags == tuple(tags)
    assert same(columns[-1]) == same(made[-1]) and same(columns[3:40:5]) == same(made[3:40:5])
    assert same(columns[10:20]) == same(made[10:20]) and columns[20:10] == ()
    assert same(kept[tags[123]]) == same(made[123]) and same(kept.all) == same(made[0])
    assert columns != made[:-1] and columns != list(made)  # compared as a tuple of blocks
    with pytest.raises(KeyError):
        kept["none such"]
    with pytest.raises(IndexError):
        columns[len(tags)]


def test_ranking_blocks_at_once_are_the_blocks_one_at_a_time(rng) -> None:
    """``ranking``'s ``blocks_from_sums`` against ``block_from_sums`` on sums of blocks of
    0 to 30 valid users (none, below and above ``MIN_CLUSTERS``), no rows, users of equal
    values (a spread of 0): every value and reason the same, to the last bit."""
    from mpieval.kinds.ranking.kernels import sum_fields, value_names
    from mpieval.kinds.ranking.metric import block_from_sums, blocks_from_sums

    k = (5, 10)
    blocks = []
    for i in range(500):
        valid = int(rng.integers(0, 31))
        s = {"rows": 0.0 if i % 19 == 0 else float(valid + rng.integers(0, 5)),
             "users": float(valid + rng.integers(0, 3)), "valid_users": float(valid)}
        for name in value_names(k):
            v = rng.random(valid) if i % 6 else np.full(valid, 0.5)
            if name.startswith("hit_rate"):
                v = np.round(v)
            s[f"{name}_sum"], s[f"{name}_sq_sum"] = v.sum(), (v * v).sum()
        for cutoff in k:
            s[f"users_le_{cutoff}"] = float(rng.integers(0, valid + 1))
        blocks.append([float(s[name]) for name in sum_fields(k)])
    sums = np.array(blocks)
    tags = [f"t{i}" for i in range(len(sums))]
    at_once, held = blocks_from_sums(tags, k, sums)
    reasons: dict[str, list[str]] = {}
    for tag, block_sums, fast in zip(tags, sums, at_once, strict=True):
        block, why = block_from_sums(tag, k, block_sums)
        assert repr(fast) == repr(block)  # every float's repr: its bits
        for text in why:
            reasons.setdefault(text.removeprefix(f"tag {tag}: "), []).append(tag)
    assert [(text, [tags[i] for i in where]) for text, where in held] == list(reasons.items())
    assert len(held) >= 4
    _columns_read_as_their_blocks(at_once, tags, partial(RankingResult, k))


@pytest.mark.parametrize("n_blocks", [1, 600])
def test_ranking_compared_blocks_at_once_are_the_blocks_one_at_a_time(rng, n_blocks) -> None:
    """With ``compare``, ``ranking``'s ``blocks_from_sums`` (the comparisons, their p-values
    and q-values over the tags at once) against ``block_from_sums`` then
    ``with_q_values``: blocks of 0 to 30 valid users, users of equal values and equal
    differences (a spread of 0), B equal to A, better, or unrelated (correlations of 1, of
    0, between): every value, the JSON and every reason the same, to the last bit; one
    block (``all`` alone) has no q-values."""
    from mpieval.kinds.ranking.kernels import sum_fields, value_names
    from mpieval.kinds.ranking.metric import block_from_sums, blocks_from_sums

    k = (5, 10)
    names = value_names(k)
    blocks = []
    for i in range(n_blocks):
        valid = int(rng.integers(0, 31))
        s = {"rows": 0.0 if i % 19 == 0 else float(valid + rng.integers(0, 5)),
             "users": float(valid + rng.integers(0, 3)), "valid_users": float(valid)}
        for name in names:
            a = rng.random(valid) if i % 6 else np.full(valid, 0.5)
            b = {0: a, 1: a + rng.normal(0.05, 0.05, valid), 2: rng.random(valid)}.get(
                i % 4, a * 0.5 + 0.3)
            if name.startswith("hit_rate"):
                a, b = np.round(a), np.round(np.clip(b, 0, 1))
            d = b - a
            s.update({f"{name}_sum": a.sum(), f"{name}_sq_sum": (a * a).sum(),
                      f"b_{name}_sum": b.sum(), f"b_{name}_sq_sum": (b * b).sum(),
                      f"{name}_diff_sum": d.sum(), f"{name}_diff_sq_sum": (d * d).sum()})
        for cutoff in k:
            s[f"users_le_{cutoff}"] = float(rng.integers(0, valid + 1))
        blocks.append([float(s[name]) for name in sum_fields(k, True)])
    sums = np.array(blocks)
    tags = ["all", *(f"t{i}" for i in range(1, n_blocks))]
    at_once, held = blocks_from_sums(tags, k, sums, "pred_b")
    one_by_one, reasons = [], {}
    for tag, block_sums in zip(tags, sums, strict=True):
        block, why = block_from_sums(tag, k, block_sums, "pred_b")
        one_by_one.append(block)
        for text in why:
            reasons.setdefault(text.removeprefix(f"tag {tag}: "), []).append(tag)
    plain = RankingResult(k, tuple(one_by_one)).with_q_values(names)
    kept = RankingResult(k, at_once)
    _kept_as_made_one_by_one(kept, plain, tags, held, reasons)
    if n_blocks > 1:
        compared = [block.compare for block in plain.blocks[1:]]
        assert sum(c.q["ndcg"] < 0.05 for c in compared) > 10  # B better in a quarter
        correlations = {round(c.correlation["ndcg"], 6) for c in compared}
        assert {0.0, 1.0} <= correlations and len(correlations) > 100
        assert any("ndcg_diff is null" in text for text, _ in held)  # equal differences
        _columns_read_as_their_blocks(at_once, tags, partial(RankingResult, k))
    else:
        assert plain.blocks[0].compare.q == {} and "_q" not in json.dumps(kept.to_dict())


def test_correlations_of_arrays_are_the_correlation_of_each_element(rng) -> None:
    """``ranking``'s compiled ``_correlations`` against ``_correlation`` one element at a
    time, bit for bit (``** 2`` as Python's power, libm's ``pow``, which differs from ``x *
    x`` in the last bit now and then): below two users, values that do not vary, equal
    values (a correlation of 1, cut there), opposite ones (-1), NaN sums."""
    from mpieval.kinds.ranking.metric import _correlation, _correlations

    n = 20_000
    units = rng.integers(0, 40, n).astype(np.float64)
    a, b = units * rng.random(n), units * rng.random(n)
    aa, bb = a * a / np.maximum(units, 1) * (1 + rng.random(n)), b * b / np.maximum(units, 1) * (
        1 + rng.random(n))
    dd = (aa + bb) * rng.random(n)
    same = rng.random(n) < 0.1
    b[same], bb[same], dd[same] = a[same], aa[same], 0.0  # B = A: a correlation of 1
    flat = rng.random(n) < 0.05
    aa[flat] = a[flat] ** 2 / np.maximum(units[flat], 1)  # A does not vary
    a[:3], dd[3] = [np.nan, np.inf, -0.0], np.nan
    got = _correlations(a, aa, b, bb, dd, units)
    want = np.array([_correlation(*x) for x in zip(a.tolist(), aa.tolist(), b.tolist(),
                                                     bb.tolist(), dd.tolist(), units.tolist(),
                                                     strict=True)])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert (got == 1.0).sum() > 100 and (got == 0.0).sum() > 500 and (np.abs(got) < 1).sum() > 5000
    with np.errstate(all="ignore"):
        mean = (a / units).tolist()
    assert sum(x**2 != x * x for x in mean) > 3  # pow's last bit met


def test_ratio_stderrs_of_arrays_are_ratio_stderr_of_each_element(rng) -> None:
    """The compiled ``ratio_stderrs`` (many tags) against ``ratio_stderr`` one element at a
    time, bit for bit: a ``b`` of 0, spreads of 0 and within the terms' rounding, terms
    far apart (a pair cannot hold their sum), infinite and NaN terms (the scalar path; NaN
    where ``math.fsum`` has no sum: an infinite term of each sign)."""
    import math

    from mpieval.kernels import stats

    n = 4000
    b = rng.integers(0, 50, n).astype(np.float64)
    a = b * rng.random(n)
    aa = a * a / np.where(b > 0, b, 1.0) * (1 + rng.random(n) * np.where(rng.random(n) < 0.3,
                                                                       0.0, 1.0))
    ab, bb = a.copy(), b.copy()
    scale = 2.0 ** rng.integers(-300, 300, n)
    far = rng.random(n) < 0.1
    aa[far], ab[far] = aa[far] * scale[far], ab[far] / scale[far]
    aa[:3], b[3], ab[4] = [math.inf, math.nan, -math.inf], math.nan, math.inf
    want = [stats.ratio_stderr(*x) for x in zip(a.tolist(), b.tolist(), aa.tolist(),
                                                 ab.tolist(), bb.tolist(), strict=True)]
    got = stats.ratio_stderrs(a, b, aa, ab, bb)
    expected = np.array(want, dtype=np.float64)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    assert (got == 0).sum() > 100 and np.isnan(got).sum() > 50 and (got > 0).sum() > 1000
    # aa and ab inf (a / b > 0): terms inf and -inf, whose math.fsum raises: NaN
    assert math.isnan(stats.ratio_stderr(1.0, 2.0, math.inf, math.inf, 4.0))
    assert np.isnan(stats.ratio_stderrs(*(np.array([x]) for x in (1.0, 2.0, math.inf,
                                                                 math.inf, 4.0))))[0]
    with pytest.raises(ValueError):
        math.fsum([math.inf, -2 * 0.5 * math.inf, 1.0])
    # where: the others NaN, not looked at; weights: each value weighted_cluster_stderr's
    # (the scalar path's elements too), bit for bit
    where = rng.random(n) < 0.7
    total = b * (0.5 + rng.random(n))
    total[:40] = [0.0, -1.0, math.nan] * 13 + [0.0]
    total_sq = total * total * rng.random(n) * 0.9
    total_sq[40:50] = 0.0
    total_cube = total_sq * total * rng.random(n)
    weighted = stats.ratio_stderrs(a, b, aa, ab, bb, where=where,
                                   weights=(total, total_sq, total_cube))
    expected = np.array([stats.weighted_cluster_stderr(want[i], total[i], total_sq[i],
                                                       total_cube[i]) if where[i] else math.nan
                         for i in range(n)])
    assert np.array_equal(weighted.view(np.int64), expected.view(np.int64))
    assert np.isnan(weighted[~where]).all() and (weighted > 0).sum() > 500
    assert np.isnan(weighted[:50]).all()  # a total or its squares' sum not above 0, NaN
    # one element (a slice's own block: the scalar steps) as it is among many, bit for bit
    for i in range(0, n, 7):
        one = stats.ratio_stderrs(a[i : i + 1], b[i : i + 1], aa[i : i + 1], ab[i : i + 1],
                                  bb[i : i + 1], where=where[i : i + 1],
                                  weights=(total[i : i + 1], total_sq[i : i + 1],
                                           total_cube[i : i + 1]))
        assert one.shape == (1,) and one.view(np.int64)[0] == weighted.view(np.int64)[i]
