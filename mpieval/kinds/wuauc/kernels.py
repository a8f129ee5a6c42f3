"""Per-user AUC sums of the ``wuauc`` kind: one value sort, then one compiled pass over users.

Grouping. Each row becomes one uint64, ``prefix << row_bits | row``: ``prefix`` the top
``64 - row_bits`` bits of ``mix64(key)`` (a bijection, so equal keys share a prefix), ``row``
the row index. One value sort of these puts every user's rows together. Distinct keys may
share a prefix (rarely at 40 bits; often when the bits are few): inside a run of one prefix
the pass compares the keys themselves and, when they differ, sorts the run's rows by key, so
the grouping is exact whatever the prefix width.

Per user. The pass gathers rows by row index a chunk at a time (a tight loop, so the
random reads overlap; a run of one prefix longer than a chunk, a heavy user, is read where
it lies), then counts, for each positive, twice the negatives below it plus the negatives
tied with it (``twice_u``, so ``AUC = twice_u / (2 P N)``, a tie one half):

- a user of at most ``SHORT`` rows compares every (positive, negative) pair, and adds each
  pair's score to its tag's count too when both rows have the same tag;
- a longer user sorts its rows by pred once (a radix sort of the pred's bits, carrying
  tag and label), then one pass over the runs of tied preds counts ``all`` and each of
  its tags together.

Each group (a user in ``all``, a (user, tag)) adds to its block as ``USER_SUM_FIELDS``:
1 user; if it has both classes, 1 valid user, its rows, its clicks, ``AUC``,
``AUC * rows``, ``AUC * clicks``, and for the intervals ``AUC^2``, ``rows^2``, ``AUC *
rows^2`` and ``AUC^2 * rows^2``, each to an exact accumulator (the same bits whatever
the order of the users or the rank that owns them). Preds are compared as given (float32
or float64).
Scratch: 1 byte a row (its part), 8 bytes a row of each part being sorted, and 24 bytes
a row of the longest user, per thread (:func:`user_auc_sums`).
"""

from __future__ import annotations

import numpy as np

from mpieval.kernels import exact
from mpieval.kernels.jit import compiled, on_threads, threads
from mpieval.kernels.keys import mix64_scalar
from mpieval.kernels.sort import merge_sort, radix_sort
from mpieval.kinds.auc.kernels import binary_logloss

# Per-block user sums, in this order (see :func:`_add_counts`).
USER_SUM_FIELDS = (
    "users", "valid_users", "valid_rows", "valid_clicks", "auc_sum", "auc_rows_sum",
    "auc_clicks_sum", "auc_sq_sum", "rows_sq_sum", "auc_rows_sq_sum", "auc_sq_rows_sq_sum",
)
SHORT = 16
"""Users of at most this many rows compare every (positive, negative) pair instead."""
CHUNK = 1 << 14
"""Rows gathered per step of the pass over users."""
_SAME = np.uint64(0)  # the shift of _run_end that compares whole values
PART_BITS = 3
PART_ROWS = 1 << 21
"""From this many rows on, the rows are grouped and passed in ``2**PART_BITS`` parts by the
top bits of their prefix: each part's sort array is an eighth as long, and the parts run on
:func:`mpieval.kernels.jit.threads` threads (each with its own sums, added exactly)."""


@compiled
def _parts(keys: np.ndarray, parts: np.ndarray, part_bits: int) -> np.ndarray:
    """``parts[i]``: the top ``part_bits`` bits of ``mix64(keys[i])`` (nothing written
    without bits); returns the rows of each part."""
    sizes = np.zeros(1 << part_bits, np.int64)
    if part_bits == 0:
        sizes[0] = len(keys)
        return sizes
    drop = np.uint64(64 - part_bits)
    for i in range(len(keys)):
        part = np.uint8(mix64_scalar(keys[i]) >> drop)
        parts[i] = part
        sizes[part] += 1
    return sizes


@compiled
def _pack(keys: np.ndarray, parts: np.ndarray, part: int, packed: np.ndarray,
          prefix_shift: int, row_shift: int) -> None:
    """``mix64(keys[i]) >> prefix_shift << row_shift | i`` of the rows ``i`` of part
    ``part`` (every row when ``parts`` is empty), in row order, into ``packed``."""
    drop = np.uint64(prefix_shift)
    lift = np.uint64(row_shift)
    k = 0
    for i in range(len(keys)):
        if len(parts) == 0 or parts[i] == part:
            packed[k] = ((mix64_scalar(keys[i]) >> drop) << lift) | np.uint64(i)
            k += 1


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
def _sort_keys_of(pred: np.ndarray, label: np.ndarray, tag: np.ndarray, rows: np.ndarray,
                  row_mask: np.uint64, lo: int, m: int, bits: np.ndarray,
                  payload: np.ndarray) -> None:
    """The sort keys of ``m`` rows: ``bits[k]`` the float64 bits of the pred (``+ 0.0``
    makes -0.0 0.0; preds are in [0, 1], where these bits order as the values do),
    ``payload[k]`` is ``tag << 1 | label``. The rows are ``lo + k``, or, given ``rows``
    (not empty), the row index in the low bits of ``rows[lo + k]``."""
    has_tags = len(tag) > 0
    for k in range(m):
        row = lo + k if len(rows) == 0 else np.int64(rows[lo + k] & row_mask)
        bits[k] = np.float64(pred[row] + 0.0).view(np.uint64)
        code = np.uint32(tag[row]) if has_tags else np.uint32(0)
        payload[k] = (code << np.uint32(1)) | np.uint32(1 if label[row] else 0)


@compiled
def _add_sorted_user(bits: np.ndarray, payload: np.ndarray, m: int, n_tags: int,
                     scratch: np.ndarray, seen: np.ndarray, seen_tmp: np.ndarray,
                     sums: np.ndarray, record: np.ndarray, cursor: np.ndarray) -> None:
    """Add the user of ``m`` rows sorted by pred (:func:`_sort_keys_of`) to ``sums``: its
    block ``all``, then each of its tags in code order, from one pass over the runs of
    tied preds.

    ``scratch[b]`` (zero on entry and on return) of block ``b`` (0 ``all``, ``1 + code`` a
    tag; codes ``>= n_tags`` count in ``all`` only) holds the positives, the negatives
    below the current run, twice the Mann-Whitney count, and the run's negatives: a
    positive adds twice the negatives below it plus those tied with it. ``seen`` collects
    the user's tag codes."""
    n_seen = 0
    i = 0
    while i < m:
        j = _run_end(bits, i, m, _SAME)
        for k in range(i, j):  # the run's negatives, per block; the user's tags
            code = np.int64(payload[k] >> np.uint32(1))
            negative = 1 - np.int64(payload[k] & np.uint32(1))
            scratch[0, 3] += negative
            if code < n_tags:
                if scratch[1 + code, 0] + scratch[1 + code, 1] + scratch[1 + code, 3] == 0:
                    seen[n_seen] = code  # every row adds to one of these: a new tag
                    n_seen += 1
                scratch[1 + code, 3] += negative
                scratch[1 + code, 0] += 1 - negative  # counted for "seen" at once
        for k in range(i, j):  # each positive: 2 per negative below, 1 per tied one
            if payload[k] & np.uint32(1):
                code = np.int64(payload[k] >> np.uint32(1))
                scratch[0, 0] += 1
                scratch[0, 2] += 2 * scratch[0, 1] + scratch[0, 3]
                if code < n_tags:
                    scratch[1 + code, 2] += 2 * scratch[1 + code, 1] + scratch[1 + code, 3]
        for k in range(i, j):  # the run's negatives are below the next run
            if payload[k] & np.uint32(1) == 0:
                code = np.int64(payload[k] >> np.uint32(1))
                scratch[0, 1] += 1
                scratch[0, 3] = 0
                if code < n_tags:
                    scratch[1 + code, 1] += 1
                    scratch[1 + code, 3] = 0
        i = j
    _add_counts(sums, 0, m, scratch[0, 0], scratch[0, 2], record, cursor)
    scratch[0, :] = 0
    merge_sort(seen, seen_tmp, n_seen)
    for s in range(n_seen):
        block = 1 + seen[s]
        positives, negatives = scratch[block, 0], scratch[block, 1]
        _add_counts(sums, block, positives + negatives, positives, scratch[block, 2], record,
                    cursor)
        scratch[block, :] = 0


@compiled
def _add_long_user(pred: np.ndarray, label: np.ndarray, tag: np.ndarray, rows: np.ndarray,
                   row_mask: np.uint64, lo: int, m: int, n_tags: int, sort: np.ndarray,
                   sort_payload: np.ndarray, scratch: np.ndarray, seen: np.ndarray,
                   sums: np.ndarray, record: np.ndarray, cursor: np.ndarray) -> None:
    """Add the user of ``m`` rows (as :func:`_sort_keys_of` names them) to ``sums``: its
    rows sorted by pred once (:func:`~mpieval.kernels.sort.radix_sort`), then counted for
    ``all`` and each of its tags at once (:func:`_add_sorted_user`).

    ``sort`` (2, longest) uint64 and ``sort_payload`` (2, longest) uint32 hold the keys
    and their sorting space; ``seen`` (2, tags) the user's tag codes."""
    bits, payload = sort[0], sort_payload[0]
    _sort_keys_of(pred, label, tag, rows, row_mask, lo, m, bits, payload)
    if radix_sort(bits, payload, sort[1], sort_payload[1], m):
        bits, payload = sort[1], sort_payload[1]
    _add_sorted_user(bits, payload, m, n_tags, scratch, seen[0], seen[1], sums, record, cursor)


@compiled
def _permute(values: np.ndarray, order: np.ndarray) -> None:
    """``values[:] = values[order]`` (no-op on an empty array)."""
    if len(values):
        values[:] = values[order]


@compiled
def _run_end(values: np.ndarray, start: int, stop: int, shift: np.uint64) -> int:
    """The end (at most ``stop``) of the run of rows from ``start`` whose ``values >>
    shift`` equal that of ``start``: a run of one prefix in the packed rows, or, with
    ``shift`` 0, of one value (a key, a pred's bits)."""
    first = values[start] >> shift
    end = start + 1
    while end < stop and values[end] >> shift == first:
        end += 1
    return end


@compiled
def _user_sums(
    packed: np.ndarray, row_bits: int, keys: np.ndarray, checks: np.ndarray,
    pred: np.ndarray, label: np.ndarray, tag: np.ndarray, n_tags: int, sums: np.ndarray,
    record: np.ndarray, cursor: np.ndarray,
) -> bool:
    """Add every user of the sorted ``packed`` rows to ``sums``; ``True`` if two rows of
    one key have different ``checks`` (a collision; ``checks`` empty: no check).

    Runs of one prefix are taken ``CHUNK`` rows at a time (whole runs): their rows are
    gathered by row index into buffers in one tight loop, so that the random reads overlap,
    and users are read from there. A run longer than ``CHUNK`` (one heavy user, almost
    always) is read where it lies (:func:`_add_big_run`)."""
    n = len(packed)
    row_shift = np.uint64(row_bits)
    row_mask = np.uint64((1 << row_bits) - 1)
    longest = 0
    start = 0
    while start < n:  # the longest run of one prefix
        end = _run_end(packed, start, n, row_shift)
        longest = max(longest, end - start)
        start = end
    size = min(n, CHUNK)
    got_pred = np.empty(size, pred.dtype)
    got_label = np.empty(size, label.dtype)
    got_tag = np.empty(size if len(tag) else 0, tag.dtype)
    got_key = np.empty(size, keys.dtype)
    got_check = np.empty(size if len(checks) else 0, checks.dtype)
    order = np.empty(size, np.int64)  # rows of one prefix by key
    order_tmp = np.empty(size, np.int64)
    key_tmp = np.empty(size, keys.dtype)
    long = longest if longest > SHORT else 0
    sort = np.empty((2, long), np.uint64)
    sort_payload = np.empty((2, long), np.uint32)
    scratch = np.zeros((1 + n_tags, 4), np.int64)
    seen = np.empty((2, min(n_tags, long)), np.int64)
    work_pred = np.empty((2, SHORT), pred.dtype)
    work_local = np.empty((2, SHORT), np.int64)
    tag_counts = np.empty((4, SHORT), np.int64)
    no_rows = np.empty(0, np.uint64)
    collision = False
    users = 0
    start = 0
    while start < n:
        stop = _run_end(packed, start, n, row_shift)
        if stop - start > CHUNK:
            exact.normalize(sums)  # the run's additions start from a normalized sum
            collision |= _add_big_run(
                packed, start, stop, row_mask, keys, checks, pred, label, tag, n_tags,
                got_pred, got_label, got_tag, sort, sort_payload, scratch, seen, work_pred,
                work_local, tag_counts, sums, record, cursor)
            users += 1  # a run holds one user almost always; normalize below anyway
            exact.normalize(sums)
            start = stop
            continue
        while stop < n:  # more whole runs while they fit
            end = _run_end(packed, stop, n, row_shift)
            if end - start > CHUNK:
                break
            stop = end
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
            hi = _run_end(packed, start + lo, stop, row_shift) - start
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
                last = _run_end(got_key, first, hi, _SAME)
                if len(checks):
                    for k in range(first + 1, last):
                        if got_check[k] != got_check[first]:
                            collision = True
                if last - first <= SHORT:
                    _add_short_user(got_pred, got_label, got_tag, first, last, n_tags,
                                    work_pred, work_local, tag_counts, sums, record, cursor)
                else:
                    _add_long_user(got_pred, got_label, got_tag, no_rows, row_mask, first,
                                   last - first, n_tags, sort, sort_payload, scratch, seen,
                                   sums, record, cursor)
                users += 1  # at most one addition to each accumulator
                if users % exact.SAFE_ADDS == 0:
                    exact.normalize(sums)
                first = last
            lo = hi
        start = stop
    exact.normalize(sums)
    return collision


@compiled
def _add_big_run(
    packed: np.ndarray, start: int, stop: int, row_mask: np.uint64, keys: np.ndarray,
    checks: np.ndarray, pred: np.ndarray, label: np.ndarray, tag: np.ndarray, n_tags: int,
    got_pred: np.ndarray, got_label: np.ndarray, got_tag: np.ndarray, sort: np.ndarray,
    sort_payload: np.ndarray, scratch: np.ndarray, seen: np.ndarray, work_pred: np.ndarray,
    work_local: np.ndarray, tag_counts: np.ndarray, sums: np.ndarray, record: np.ndarray,
    cursor: np.ndarray,
) -> bool:
    """Add the users of the run ``packed[start:stop]`` of one prefix, read in place (the
    rows' indexes in ``packed``); ``True`` on a collision. One key (the usual case): one
    long user. Several (few prefix bits): the run is sorted by (key, row) first, and each
    key is a user, short ones gathered into the ``got_`` buffers."""
    first_row = packed[start] & row_mask
    key = keys[first_row]
    one_key = True
    collision = False
    for k in range(start + 1, stop):
        row = packed[k] & row_mask
        if keys[row] != key:
            one_key = False
            break
        if len(checks) and checks[row] != checks[first_row]:
            collision = True
    if one_key:
        _add_long_user(pred, label, tag, packed, row_mask, start, stop - start, n_tags, sort,
                       sort_payload, scratch, seen, sums, record, cursor)
        return collision
    m = stop - start
    run = packed[start:stop].copy()
    run_keys = np.empty(m, keys.dtype)
    for k in range(m):
        run_keys[k] = keys[run[k] & row_mask]
    merge_sort(run_keys, np.empty(m, keys.dtype), m, run, np.empty(m, np.uint64))
    users = 0
    first = 0
    while first < m:
        last = _run_end(run_keys, first, m, _SAME)
        first_row = run[first] & row_mask
        for k in range(first + 1, last):
            if len(checks) and checks[run[k] & row_mask] != checks[first_row]:
                collision = True
        if last - first <= SHORT:
            for k in range(last - first):
                row = run[first + k] & row_mask
                got_pred[k] = pred[row]
                got_label[k] = label[row]
                if len(tag):
                    got_tag[k] = tag[row]
            _add_short_user(got_pred, got_label, got_tag, 0, last - first, n_tags,
                            work_pred, work_local, tag_counts, sums, record, cursor)
        else:
            _add_long_user(pred, label, tag, run, row_mask, first, last - first, n_tags,
                           sort, sort_payload, scratch, seen, sums, record, cursor)
        users += 1
        if users % exact.SAFE_ADDS == 0:
            exact.normalize(sums)
        first = last
    return collision


ROW_SLICE = 1 << 20
"""Rows a thread sums at a time (:func:`row_sums`)."""


def row_sums(pred: np.ndarray, label: np.ndarray, codes: np.ndarray, tag_of_code: np.ndarray,
             sums: np.ndarray) -> None:
    """Add the rows' ``rows``, ``clicks``, ``pred`` sum and ``logloss`` sum to the exact
    ``sums`` (shape ``(1 + n_tags, 4, DIGITS)``): block 0 over every row, block ``1 + t``
    over the rows of tag ``t = tag_of_code[code]`` (``n_tags``: a row without a tag).
    ``logloss``: :func:`mpieval.kinds.auc.kernels.binary_logloss` (the pred clipped to ``[1e-15,
    1 - 1e-15]``). Slices of ``ROW_SLICE`` rows run on
    :func:`~mpieval.kernels.jit.threads` threads, each into its own accumulators, added
    digit by digit (exact: the same bits)."""
    n = len(pred)
    slices = [(start, min(start + ROW_SLICE, n)) for start in range(0, n, ROW_SLICE)]
    if threads() == 1 or len(slices) < 2:
        _row_sums(pred, label, codes, tag_of_code, sums)
        return

    def one_slice(rows: tuple[int, int]) -> np.ndarray:
        lo, hi = rows
        part = np.zeros_like(sums)
        _row_sums(pred[lo:hi], label[lo:hi], codes[lo:hi], tag_of_code, part)
        return part

    for part in on_threads(one_slice, slices):
        sums += part
    exact.normalize(sums)


@compiled
def _row_sums(pred, label, codes, tag_of_code, sums):
    """:func:`row_sums` of every row, on this thread. Each row adds to its own tag's
    accumulators only; ``all`` is their sum, digit by digit, at the end (exact, so equal
    to adding every row to it)."""
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
    how often keys share a prefix; the sums do not depend on it. Holds 1 byte a row (the
    part), 8 bytes a row of one part (the packed sort keys), and 24 bytes a row of the
    longest user.
    """
    n = len(keys)
    models = [pred] if compare is None else [pred, compare]
    sums = [exact.accumulator(1 + n_tags, len(USER_SUM_FIELDS)) for _ in models]
    groups = [np.empty((0, 3)) for _ in models]
    collision = False
    if n:
        row_bits = max(n - 1, 1).bit_length()
        if prefix_bits is None:
            prefix_bits = 64 - row_bits
        if not 0 < prefix_bits <= 64 - row_bits:
            raise ValueError(f"prefix_bits must be in 1..{64 - row_bits}, got {prefix_bits}")
        part_bits = min(PART_BITS if n >= PART_ROWS else 0, prefix_bits)
        parts = np.empty(n if part_bits else 0, np.uint8)
        sizes = _parts(keys, parts, part_bits)

        def one_part(part: int) -> tuple[list[np.ndarray], list[np.ndarray], bool]:
            """The part's sums and (with ``compare``) valid groups, per model."""
            packed = np.empty(sizes[part], np.uint64)
            _pack(keys, parts, part, packed, 64 - prefix_bits, row_bits)
            packed.sort()
            part_sums, part_groups, found = [], [], False
            for k, model in enumerate(models):
                part_sums.append(exact.accumulator(1 + n_tags, len(USER_SUM_FIELDS)))
                # a valid group has two rows or more, and a row is in at most two groups
                part_groups.append(np.empty((len(packed) + 1 if compare is not None else 0,
                                             3)))
                cursor = np.zeros(1, np.int64)
                found |= bool(_user_sums(
                    packed, row_bits, keys,
                    np.zeros(0, np.uint64) if checks is None or k else checks,
                    model, label, np.zeros(0, np.uint16) if tag is None else tag,
                    n_tags, part_sums[k], part_groups[k], cursor,
                ))
                part_groups[k] = part_groups[k][: cursor[0]]
            return part_sums, part_groups, found

        # in prefix order, as one sort would be
        done = on_threads(one_part, [part for part in range(len(sizes)) if sizes[part]])
        for k in range(len(models)):
            for part_sums, _, _ in done:
                sums[k] += part_sums[k]  # digit by digit: exact
            exact.normalize(sums[k])
            groups[k] = np.concatenate([part_groups[k] for _, part_groups, _ in done])
        collision = any(found for _, _, found in done)
    if compare is None:
        return sums[0], collision
    diff = exact.accumulator(1 + n_tags, len(DIFF_FIELDS))
    paired_diff_sums(groups[0], groups[1], diff)
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
    and tags (see :func:`mpieval.kinds.auc.kernels.warm_up`)."""
    keys = np.array([7, 7], np.uint64)
    label = np.array([0, 1], np.uint8)
    tag = np.zeros(2, np.uint16)
    for pred_dtype in (np.float32, np.float64):
        pred = np.array([0.25, 0.75], pred_dtype)
        user_auc_sums(keys, keys, pred, label, tag, 1)
        row_sums(pred, label, tag, np.zeros(2**16, np.uint16), exact.accumulator(2, 4))
