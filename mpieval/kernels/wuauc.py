"""Per-user AUC sums of the ``wuauc`` kind: one value sort, then one compiled pass over users.

Grouping. Each row becomes one uint64, ``prefix << row_bits | row``: ``prefix`` the top
``64 - row_bits`` bits of ``mix64(key)`` (a bijection, so equal keys share a prefix), ``row``
the row index. One value sort of these puts every user's rows together. Distinct keys may
share a prefix (rarely at 40 bits; often when the bits are few): inside a run of one prefix
the pass compares the keys themselves and, when they differ, sorts the run's rows by key, so
the grouping is exact whatever the prefix width.

Per user. The pass gathers rows by row index a chunk at a time (a tight loop, so the
random reads overlap), then counts, for each positive, twice the negatives below it plus
the negatives tied with it (``twice_u``, so ``AUC = twice_u / (2 P N)``, a tie one half):

- a user of at most ``SHORT`` rows compares every (positive, negative) pair, and adds each
  pair's score to its tag's count too when both rows have the same tag;
- a longer user sorts its positives' and its negatives' preds apart (a merge sort, so
  O(m log m) whatever the order) and counts with two pointers; then the same for each of
  its tags.

Each group (a user in ``all``, a (user, tag)) adds to its block as ``USER_SUM_FIELDS``:
1 user; if it has both classes, 1 valid user, its rows, its clicks, ``AUC``,
``AUC * rows``, ``AUC * clicks``, and for the intervals ``AUC^2``, ``rows^2``, ``AUC *
rows^2`` and ``AUC^2 * rows^2``, each to an exact accumulator (the same bits whatever
the order of the users or the rank that owns them). Preds are compared as given (float32
or float64).
Scratch beside the 8 bytes a row of the sort: buffers as long as the longest user.
"""

from __future__ import annotations

import numpy as np

from mpieval.kernels import exact
from mpieval.kernels.auc import binary_logloss
from mpieval.kernels.jit import compiled
from mpieval.kernels.keys import mix64_scalar
from mpieval.kernels.sort import merge_sort

# Per-block user sums, in this order (see :func:`_add_counts`).
USER_SUM_FIELDS = (
    "users", "valid_users", "valid_rows", "valid_clicks", "auc_sum", "auc_rows_sum",
    "auc_clicks_sum", "auc_sq_sum", "rows_sq_sum", "auc_rows_sq_sum", "auc_sq_rows_sq_sum",
)
SHORT = 16
"""Users of at most this many rows compare every (positive, negative) pair instead."""
CHUNK = 1 << 14
"""Rows gathered per step of the pass over users."""
_TAG_SHIFT = np.uint64(40)  # a long user's rows grouped by tag as ``tag << 40 | row``
_ROW_MASK = np.uint64((1 << 40) - 1)


@compiled
def _pack(keys: np.ndarray, packed: np.ndarray, prefix_shift: int, row_shift: int) -> None:
    """``packed[i] = mix64(keys[i]) >> prefix_shift << row_shift | i``."""
    drop = np.uint64(prefix_shift)
    lift = np.uint64(row_shift)
    for i in range(len(keys)):
        packed[i] = ((mix64_scalar(keys[i]) >> drop) << lift) | np.uint64(i)


@compiled
def _add_counts(sums: np.ndarray, block: int, rows: int, positives: int, twice_u: int,
                record: np.ndarray, cursor: np.ndarray) -> None:
    """Add one group (``rows``, ``positives``, ``twice_u``) to the exact ``sums[block]``;
    with a ``record`` (not empty), also note a valid group's ``(block, rows, AUC)`` in
    ``record[cursor[0]]`` and advance the cursor."""
    negatives = rows - positives
    exact.add(sums[block, 0], 1.0)
    if positives > 0 and negatives > 0:
        auc = twice_u / (2.0 * positives * negatives)
        if len(record):
            record[cursor[0], 0] = block
            record[cursor[0], 1] = rows
            record[cursor[0], 2] = auc
            cursor[0] += 1
        exact.add(sums[block, 1], 1.0)
        exact.add(sums[block, 2], np.float64(rows))
        exact.add(sums[block, 3], np.float64(positives))
        exact.add(sums[block, 4], auc)
        exact.add(sums[block, 5], auc * rows)
        exact.add(sums[block, 6], auc * positives)
        # the second moments of the intervals (users as independent clusters)
        rows_sq = np.float64(rows) * rows
        exact.add(sums[block, 7], auc * auc)
        exact.add(sums[block, 8], rows_sq)
        exact.add(sums[block, 9], auc * rows_sq)
        exact.add(sums[block, 10], auc * auc * rows_sq)


@compiled
def _add_split_group(
    split: np.ndarray, p: int, m: int, tmp: np.ndarray, sums: np.ndarray, block: int,
    record: np.ndarray, cursor: np.ndarray,
) -> None:
    """Add the group whose positives' preds are ``split[:p]`` and negatives' ``split[p:m]``
    to ``sums[block]``; sorts both parts, then counts with two pointers."""
    merge_sort(split, tmp, p)
    merge_sort(split[p:m], tmp, m - p)
    below = p  # first negative not below the current positive
    not_above = p  # first negative above it
    twice_u = 0
    for i in range(p):
        value = split[i]
        while below < m and split[below] < value:
            below += 1
        while not_above < m and split[not_above] <= value:
            not_above += 1
        twice_u += (below - p) + (not_above - p)  # 2 per lower negative, 1 per tied one
    _add_counts(sums, block, m, p, twice_u, record, cursor)


@compiled
def _add_short_user(
    pred: np.ndarray, label: np.ndarray, tag: np.ndarray, lo: int, hi: int, n_tags: int,
    work_pred: np.ndarray, work_local: np.ndarray, tag_counts: np.ndarray, sums: np.ndarray,
    record: np.ndarray, cursor: np.ndarray,
) -> None:
    """:func:`_add_long_user` for the short user of rows ``lo:hi``: every (positive,
    negative) pair is compared, 2 when the positive is higher, 1 when tied.

    Scratch: ``work_pred``/``work_local`` (2, SHORT) hold the positives' then the negatives'
    preds and local tag numbers; ``tag_counts`` (4, SHORT) each local tag's code,
    positives, negatives and twice its Mann-Whitney count."""
    has_tags = len(tag) > 0
    n_local = 0
    p = 0
    q = 0
    for k in range(lo, hi):  # partition by label without a branch: write both, advance one
        y = 1 if label[k] else 0
        local = 0
        if has_tags:
            code = tag[k]
            local = n_local
            for d in range(n_local):
                if tag_counts[0, d] == code:
                    local = d
                    break
            if local == n_local:
                tag_counts[0, local] = code
                tag_counts[1, local] = 0
                tag_counts[2, local] = 0
                tag_counts[3, local] = 0
                n_local += 1
            tag_counts[1, local] += y
            tag_counts[2, local] += 1 - y
        work_pred[0, p] = pred[k]
        work_pred[1, q] = pred[k]
        work_local[0, p] = local
        work_local[1, q] = local
        p += y
        q += 1 - y
    twice_u = 0
    for i in range(p):
        a = work_pred[0, i]
        local = work_local[0, i]
        mine = 0
        for j in range(q):
            b = work_pred[1, j]
            score = (a > b) + (a >= b)
            twice_u += score
            mine += score * (work_local[1, j] == local)
        if has_tags:
            tag_counts[3, local] += mine
    _add_counts(sums, 0, hi - lo, p, twice_u, record, cursor)
    for d in range(n_local):
        code = tag_counts[0, d]
        if code < n_tags:  # untagged rows count in "all" only
            _add_counts(sums, 1 + code, tag_counts[1, d] + tag_counts[2, d], tag_counts[1, d],
                        tag_counts[3, d], record, cursor)


@compiled
def _split_by_label(
    pred: np.ndarray, label: np.ndarray, lo: int, m: int, split: np.ndarray,
    by_tag: np.ndarray | None = None,
) -> int:
    """Put the preds of ``m`` rows into ``split[:m]``, the positives' from the front and the
    negatives' from the back; return the number of positives. The rows are ``lo + r`` for
    ``r < m``, or, given ``by_tag``, ``lo`` plus the row index in each ``by_tag`` value."""
    p = 0
    q = m
    for r in range(m):
        k = lo + r if by_tag is None else lo + np.int64(by_tag[r] & _ROW_MASK)
        if label[k]:
            split[p] = pred[k]
            p += 1
        else:
            q -= 1
            split[q] = pred[k]
    return p


@compiled
def _add_long_user(
    pred: np.ndarray, label: np.ndarray, tag: np.ndarray, lo: int, hi: int, n_tags: int,
    split: np.ndarray, split_tmp: np.ndarray, by_tag: np.ndarray, by_tag_tmp: np.ndarray,
    sums: np.ndarray, record: np.ndarray, cursor: np.ndarray,
) -> None:
    """Add the user of rows ``lo:hi`` to ``sums`` (``all``, then its tags): positives' and
    negatives' preds sorted apart (:func:`_add_split_group`), once for the user and once
    for each of its tags (rows grouped as ``tag << 40 | row`` values, by a counting sort
    when there are fewer tags than rows, else a merge sort)."""
    m = hi - lo
    p = _split_by_label(pred, label, lo, m, split)
    _add_split_group(split, p, m, split_tmp, sums, 0, record, cursor)
    if len(tag) == 0:
        return
    if n_tags < m:  # a counting sort by tag code (codes above n_tags - 1 mean no tag)
        ends = np.zeros(n_tags + 2, np.int64)
        for k in range(lo, hi):
            ends[min(int(tag[k]), n_tags) + 1] += 1
        for code in range(n_tags + 1):
            ends[code + 1] += ends[code]
        for k in range(m):
            code = min(int(tag[lo + k]), n_tags)
            by_tag[ends[code]] = (np.uint64(code) << _TAG_SHIFT) | np.uint64(k)
            ends[code] += 1
    else:
        for k in range(m):
            by_tag[k] = (np.uint64(tag[lo + k]) << _TAG_SHIFT) | np.uint64(k)
        merge_sort(by_tag, by_tag_tmp, m)
    first = 0
    while first < m:
        code = by_tag[first] >> _TAG_SHIFT
        last = first + 1
        while last < m and by_tag[last] >> _TAG_SHIFT == code:
            last += 1
        if code < n_tags:  # untagged rows count in "all" only
            p = _split_by_label(pred, label, lo, last - first, split, by_tag[first:last])
            block = 1 + int(np.int64(code))  # an int64 (1 + a uint64 would be a float)
            _add_split_group(split, p, last - first, split_tmp, sums, block, record, cursor)
        first = last


@compiled
def _permute(values: np.ndarray, order: np.ndarray) -> None:
    """``values[:] = values[order]`` (no-op on an empty array)."""
    if len(values):
        values[:] = values[order]


@compiled
def _user_sums(
    packed: np.ndarray, row_bits: int, keys: np.ndarray, checks: np.ndarray,
    pred: np.ndarray, label: np.ndarray, tag: np.ndarray, n_tags: int, sums: np.ndarray,
    record: np.ndarray, cursor: np.ndarray,
) -> bool:
    """Add every user of the sorted ``packed`` rows to ``sums``; ``True`` if two rows of
    one key have different ``checks`` (a collision; ``checks`` empty: no check).

    Rows are gathered by row index ``CHUNK`` at a time (whole prefixes) into buffers, in
    one tight loop, so that the random reads overlap; users are then read from there."""
    n = len(packed)
    row_shift = np.uint64(row_bits)
    row_mask = np.uint64((1 << row_bits) - 1)
    longest = 0
    start = 0
    while start < n:  # the longest run of one prefix
        end = start + 1
        while end < n and packed[end] >> row_shift == packed[start] >> row_shift:
            end += 1
        longest = max(longest, end - start)
        start = end
    size = min(n, CHUNK + longest)
    got_pred = np.empty(size, pred.dtype)
    got_label = np.empty(size, label.dtype)
    got_tag = np.empty(size if len(tag) else 0, tag.dtype)
    got_key = np.empty(size, keys.dtype)
    got_check = np.empty(size if len(checks) else 0, checks.dtype)
    order = np.empty(longest, np.int64)  # rows of one prefix by key
    order_tmp = np.empty(longest, np.int64)
    key_tmp = np.empty(longest, keys.dtype)
    split = np.empty(longest, pred.dtype)
    split_tmp = np.empty(longest, pred.dtype)
    by_tag = np.empty(longest if len(tag) else 0, np.uint64)
    by_tag_tmp = np.empty(len(by_tag), np.uint64)
    work_pred = np.empty((2, SHORT), pred.dtype)
    work_local = np.empty((2, SHORT), np.int64)
    tag_counts = np.empty((4, SHORT), np.int64)
    collision = False
    users = 0
    start = 0
    while start < n:
        stop = min(start + CHUNK, n)
        while stop < n and packed[stop] >> row_shift == packed[stop - 1] >> row_shift:
            stop += 1  # whole prefixes only
        for k in range(stop - start):
            row = packed[start + k] & row_mask
            got_pred[k] = pred[row]
            got_label[k] = label[row]
            got_key[k] = keys[row]
            if len(tag):
                got_tag[k] = tag[row]
            if len(checks):
                got_check[k] = checks[row]
        lo = 0
        while lo < stop - start:
            hi = lo + 1
            prefix = packed[start + lo] >> row_shift
            while hi < stop - start and packed[start + hi] >> row_shift == prefix:
                hi += 1
            one_key = True
            for k in range(lo + 1, hi):
                if got_key[k] != got_key[lo]:
                    one_key = False
                    break
            if not one_key:  # keys sharing a prefix: sort the prefix's rows by key
                by_key = order[: hi - lo]
                for k in range(hi - lo):
                    by_key[k] = k
                # by (key, row): by key, rows of one key in their order
                merge_sort(got_key[lo:hi], key_tmp, hi - lo, by_key, order_tmp)
                _permute(got_pred[lo:hi], by_key)
                _permute(got_label[lo:hi], by_key)
                _permute(got_tag[lo:hi] if len(tag) else got_tag, by_key)
                _permute(got_check[lo:hi] if len(checks) else got_check, by_key)
            first = lo
            while first < hi:  # each key of the prefix
                last = first + 1
                while last < hi and got_key[last] == got_key[first]:
                    last += 1
                if len(checks):
                    for k in range(first + 1, last):
                        if got_check[k] != got_check[first]:
                            collision = True
                if last - first <= SHORT:
                    _add_short_user(got_pred, got_label, got_tag, first, last, n_tags,
                                    work_pred, work_local, tag_counts, sums, record, cursor)
                else:
                    _add_long_user(got_pred, got_label, got_tag, first, last, n_tags, split,
                                   split_tmp, by_tag, by_tag_tmp, sums, record, cursor)
                users += 1  # at most one addition to each accumulator
                if users % exact.SAFE_ADDS == 0:
                    exact.normalize(sums)
                first = last
            lo = hi
        start = stop
    exact.normalize(sums)
    return collision


@compiled
def row_sums(pred, label, codes, tag_of_code, sums):
    """Add the rows' ``rows``, ``clicks``, ``pred`` sum and ``logloss`` sum to the exact
    ``sums`` (shape ``(1 + n_tags, 4, DIGITS)``): block 0 over every row, block ``1 + t``
    over the rows of tag ``t = tag_of_code[code]`` (``n_tags``: a row without a tag).
    ``logloss``: :func:`mpieval.kernels.auc.binary_logloss` (the pred clipped to ``[1e-15,
    1 - 1e-15]``).

    Each row adds to its own tag's accumulators only; ``all`` is their sum, digit by
    digit, at the end (exact, so equal to adding every row to it)."""
    n_tags = sums.shape[0] - 1
    part = np.zeros((n_tags + 1, 2, exact.DIGITS))  # pred, logloss; the last: no tag
    rows = np.zeros(n_tags + 1, np.int64)
    clicks = np.zeros(n_tags + 1, np.int64)
    for i in range(pred.shape[0]):
        t = np.int64(tag_of_code[codes[i]])
        y = np.int64(label[i])
        p = np.float64(pred[i])
        rows[t] += 1
        clicks[t] += y
        exact.add(part[t, 0], p)
        exact.add(part[t, 1], binary_logloss(p, y))
        if (i + 1) % exact.SAFE_ADDS == 0:
            exact.normalize(part)
    exact.normalize(part)
    for t in range(n_tags + 1):
        for block in (0, 1 + t):
            if block > n_tags:
                continue
            exact.add(sums[block, 0], np.float64(rows[t]))
            exact.add(sums[block, 1], np.float64(clicks[t]))
            sums[block, 2] += part[t, 0]
            sums[block, 3] += part[t, 1]
    exact.normalize(sums)


def user_auc_sums(
    keys: np.ndarray,
    checks: np.ndarray | None,
    pred: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    n_tags: int,
    prefix_bits: int | None = None,
    *,
    compare: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """``(sums, collision)``: ``USER_SUM_FIELDS`` per block (``all``, then tag codes
    ``0 .. n_tags - 1``; a tag code ``>= n_tags`` counts in ``all`` only) over the users
    (distinct ``keys``), as exact accumulators (shape ``(1 + n_tags, 11, DIGITS)``, see
    :mod:`mpieval.kernels.exact`), and whether two rows of one key have different
    ``checks``.

    With ``compare`` (model B's preds of the same rows), each block goes on with B's
    ``USER_SUM_FIELDS`` and the ``DIFF_FIELDS`` of the users paired between the models
    (shape ``(1 + n_tags, 27, DIGITS)``): the rows are grouped once, and the pass over the
    users runs once per model, each listing its valid groups' ``(block, rows, AUC)`` in the
    same order (it depends on the keys, labels and tags only; 24 bytes more a row, at
    most).

    ``pred`` is float32 or float64 (compared as given), ``label`` 0/1 uint8, ``tag``
    uint16 codes. ``prefix_bits`` (default: all that fit beside the row index) only sets
    how often keys share a prefix; the sums do not depend on it. Holds 8 bytes a row (the
    packed sort keys) plus scratch as long as the longest user.
    """
    n = len(keys)
    models = [pred] if compare is None else [pred, compare]
    sums = [exact.accumulator(1 + n_tags, len(USER_SUM_FIELDS)) for _ in models]
    # a valid group has two rows or more, and a row is in at most two groups
    groups = [np.empty((n + 1 if compare is not None else 0, 3)) for _ in models]
    cursors = [np.zeros(1, np.int64) for _ in models]
    collision = False
    if n:
        row_bits = max(n - 1, 1).bit_length()
        if prefix_bits is None:
            prefix_bits = 64 - row_bits
        if not 0 < prefix_bits <= 64 - row_bits:
            raise ValueError(f"prefix_bits must be in 1..{64 - row_bits}, got {prefix_bits}")
        packed = np.empty(n, np.uint64)
        _pack(keys, packed, 64 - prefix_bits, row_bits)
        packed.sort()
        for k, model in enumerate(models):
            collision |= bool(_user_sums(
                packed, row_bits, keys,
                np.zeros(0, np.uint64) if checks is None or k else checks,
                model, label,
                np.zeros(0, np.uint16) if tag is None else tag,
                n_tags, sums[k], groups[k], cursors[k],
            ))
    if compare is None:
        return sums[0], collision
    diff = exact.accumulator(1 + n_tags, len(DIFF_FIELDS))
    paired_diff_sums(groups[0][: cursors[0][0]], groups[1][: cursors[1][0]], diff)
    return np.concatenate([sums[0], sums[1], diff], axis=1), collision


DIFF_FIELDS = ("diff_sum", "diff_sq_sum", "diff_rows_sum", "diff_rows_sq_sum",
               "diff_sq_rows_sq_sum")
"""Per block, over the valid groups of two models (:func:`user_auc_sums`), ``D = AUC_B -
AUC_A`` and ``n`` the group's rows: ``sum D``, ``sum D^2``, ``sum n D``, ``sum n^2 D``,
``sum n^2 D^2`` (the paired differences and their intervals)."""


@compiled
def paired_diff_sums(groups_a: np.ndarray, groups_b: np.ndarray, sums: np.ndarray) -> None:
    """Add ``DIFF_FIELDS`` of the paired groups to the exact ``sums`` (shape ``(blocks,
    5, DIGITS)``)."""
    for g in range(groups_a.shape[0]):
        block = np.int64(groups_a[g, 0])
        n = groups_a[g, 1]
        d = groups_b[g, 2] - groups_a[g, 2]
        exact.add(sums[block, 0], d)
        exact.add(sums[block, 1], d * d)
        exact.add(sums[block, 2], n * d)
        exact.add(sums[block, 3], n * n * d)
        exact.add(sums[block, 4], n * n * d * d)
        if (g + 1) % exact.SAFE_ADDS == 0:
            exact.normalize(sums)
    exact.normalize(sums)


def warm_up() -> None:
    """Load the compiled pass for float32 and float64 preds, with and without uid checks
    and tags (see :func:`mpieval.kernels.auc.warm_up`)."""
    keys = np.array([7, 7], np.uint64)
    label = np.array([0, 1], np.uint8)
    tag = np.zeros(2, np.uint16)
    for pred_dtype in (np.float32, np.float64):
        pred = np.array([0.25, 0.75], pred_dtype)
        user_auc_sums(keys, keys, pred, label, tag, 1)
        row_sums(pred, label, tag, np.zeros(2**16, np.uint16), exact.accumulator(2, 4))
