"""Per-user AUC sums of the ``wuauc`` kind: the rows grouped by user, then one compiled pass.

Grouping. The rows are split into ``2**PART_BITS`` parts by the top bits of ``mix64(key)``
(a user's rows all in one part). In each part a table of the part's keys numbers the
users in order of their first row and counts their rows; a second pass over the part's
rows puts each row at its user's place. No sort: the users' rows lie together, each
user's in row order. The table compares each row's check with the check of its key's
first row: a difference is a key collision. Without weights and a compared model, the
second pass puts the rows themselves there (``group_rows``: each row's sort key, the
pred's bits with its tag and label), which the pass over users then reads in order;
else it puts each row's index, as one uint64 ``user << row_bits | row`` (``group``), and
the passes gather the rows by index a chunk at a time (a tight loop, so the random reads
overlap; a user of more rows than a chunk is read where it lies).

Per user. The pass counts, for each positive, twice the negatives below it plus the
negatives tied with it (``twice_u``, so ``AUC = twice_u / (2 P N)``, a tie one half):

- a user of at most ``SHORT`` rows compares every (positive, negative) pair, and adds each
  pair's score to its tag's count too when both rows have the same tag;
- a longer user sorts its rows by pred once (float32 preds: the pred's bits above tag
  and label in one uint64, sorted in place; float64 preds: a radix sort of the pred's
  bits, carrying tag and label), then one pass over the runs of tied preds counts
  ``all`` and each of its tags together.

Each group (a user in ``all``, a (user, tag)) adds to its block as ``USER_SUM_FIELDS``:
1 user; if it has both classes, 1 valid user, its rows, its clicks, ``AUC``,
``AUC * rows``, ``AUC * clicks``, and for the intervals ``AUC^2``, ``rows^2``, ``AUC *
rows^2``, ``AUC^2 * rows^2`` and ``rows^3``, each to an exact accumulator (the same bits whatever
the order of the users or the rank that owns them). Preds are compared as given (float32
or float64).

Weights. With a weight a row, each user's rows are sorted by (pred, label, tag, weight)
and passed once: a group's rows, clicks and ``twice_u`` are weighted sums (``AUC = sum
over (positive i, negative j) of w_i w_j (1 if pred_i > pred_j, 1/2 if tied) / (W+ W-)``,
so an integer weight is that many repeated rows, exactly), summed in that order: the same
bits whatever the order of the rows and the ranks they came from.
Scratch: 1 byte a row (its part), and per thread 8 bytes a row of its largest part (12
for float64 preds without weights and a compared model; 8 more while a part is grouped)
and 8 bytes a row of its longest user (24 for float64 preds) (:func:`user_auc_sums`).
"""

from __future__ import annotations

import threading

import numpy as np

from mpieval import _core
from mpieval.kernels import exact
from mpieval.kernels.codes import TAG_DTYPE
from mpieval.kernels.parallel import on_threads, threads

# Per-block user sums, in this order (see :func:`_add_counts`).
USER_SUM_FIELDS = (
    "users", "valid_users", "valid_rows", "valid_clicks", "auc_sum", "auc_rows_sum",
    "auc_clicks_sum", "auc_sq_sum", "rows_sq_sum", "auc_rows_sq_sum", "auc_sq_rows_sq_sum",
    "rows_cube_sum",
)
MOMENT_FIELDS = (
    "user_clicks_sq_sum", "user_clicks_rows_sum", "user_rows_sq_sum", "user_pred_sq_sum",
    "user_pred_rows_sum", "user_clicks_pred_sum", "user_logloss_sq_sum",
    "user_logloss_rows_sum", "user_rows_cube_sum", "user_pred_cube_sum",
)
"""Per-block sums over every group (a user in ``all``, a (user, tag)) of the products of
its weighted rows ``n``, clicks ``c``, pred sum ``p`` and logloss sum ``l``: ``c^2``, ``c
n``, ``n^2``, ``p^2``, ``p n``, ``c p``, ``l^2``, ``l n``, ``n^3``, ``p^3`` (the intervals
of the row values with users as clusters; :func:`user_auc_sums`)."""
COMPARE_MOMENT_FIELDS = ("user_b_pred_sq_sum", "user_clicks_b_pred_sum",
                         "user_pred_b_pred_sum", "user_logloss_diff_sq_sum",
                         "user_logloss_diff_rows_sum")
"""With a compared model, then ``pB^2``, ``c pB``, ``p pB``, ``(lB - l)^2``, ``(lB - l) n``
(``pB``, ``lB``: B's pred and logloss sums)."""
SHORT = 16
"""Users of at most this many rows compare every (positive, negative) pair instead."""
CHUNK = 1 << 14
"""Rows gathered per step of the pass over users."""
PART_BITS = 3
PART_ROWS = 1 << 21
"""From this many rows on, the rows are grouped and passed in ``2**PART_BITS`` parts by the
top bits of ``mix64(key)``: each part's grouped rows and table of users are an eighth as
large, and the parts run on :func:`mpieval.kernels.parallel.threads` threads (each with
its own sums, added exactly)."""


_NO_MOMENTS = np.empty((0, 0, 0))
"""The moments argument of a pass over users that sums no moments."""

ROW_SLICE = 1 << 20
"""Rows a thread sums at a time (:func:`row_sums`)."""


def row_sums(pred: np.ndarray, label: np.ndarray, codes: np.ndarray | None,
             tag_of_code: np.ndarray,
             sums: exact.Sums, weight: np.ndarray | None = None,
             window: tuple[int, int] = (0, exact.DIGITS)) -> bool:
    """Add the rows' ``rows``, ``clicks``, ``pred`` sum and ``logloss`` sum to the exact
    ``sums`` (shape ``(1 + n_tags, 4, digits)``): block 0 over every row, block ``1 + t``
    over the rows of tag ``t = tag_of_code[code]`` (``n_tags``: a row without a tag;
    ``codes`` None: no row has a tag). ``logloss``:
    :func:`mpieval.kinds.auc.kernels.binary_logloss` (the pred clipped to ``[1e-15,
    1 - 1e-15]``). With ``weight`` (float64), each a weighted sum (``sum w``, ``sum w y``,
    ``sum w pred``, ``sum w logloss``). Slices of ``ROW_SLICE`` rows run on
    :func:`~mpieval.kernels.parallel.threads` threads, each into its own accumulators, added
    exactly (the same bits).

    ``window``: ``(first, digits)``, the accumulators' digits (``sums``' last axis holds
    ``digits`` of them, from digit ``first`` on), or :data:`~mpieval.kernels.exact.PAIRS`
    (``sums`` a :class:`~mpieval.kernels.exact.Pairs`); returns False when some value falls
    outside them (``sums`` then incomplete: sum again with every digit), else True."""
    if exact.table(sums).shape[-1] != window[1]:
        raise ValueError(f"row_sums: sums of {window[1]} digits, got "
                         f"{exact.table(sums).shape[-1]}")
    n = len(pred)
    slices = [(start, min(start + ROW_SLICE, n)) for start in range(0, n, ROW_SLICE)]
    pred = pred if pred.dtype in (np.float32, np.float64) else pred.astype(np.float64)
    codes = np.zeros(0, TAG_DTYPE) if codes is None else codes  # empty: none has a tag
    pred, label, codes, tag_of_code = (np.ascontiguousarray(a, dtype) for a, dtype in (
        (pred, None), (_labels(label), None), (codes, TAG_DTYPE), (tag_of_code, TAG_DTYPE)))
    weights = np.zeros(0) if weight is None else np.ascontiguousarray(weight, np.float64)

    def windowed(lo: int, hi: int, into: exact.Sums) -> bool:
        """Rows ``lo:hi`` into ``into`` in this thread's window; True when none fell
        outside it."""
        with exact.summing(window, into) as outside:
            _core.wuauc.row_sums(pred[lo:hi], label[lo:hi], codes[lo:hi], tag_of_code,
                                 exact.table(into),
                                 weights if weight is None else weights[lo:hi])
        return not outside[0]

    if threads() == 1 or len(slices) < 2:
        return windowed(0, n, sums)

    def one_slice(rows: tuple[int, int]) -> tuple[exact.Sums, bool]:
        part = exact.zeroed(window, *exact.table(sums).shape[:-1])
        return part, windowed(*rows, part)

    sliced = list(on_threads(one_slice, slices))
    _, overflow = exact.added([sums, *(part for part, _ in sliced)])
    return all(ok for _, ok in sliced) and not overflow


def row_sums_windowed(pred: np.ndarray, label: np.ndarray, codes: np.ndarray | None,
                      tag_of_code: np.ndarray, blocks: int, fields: int,
                      weight: np.ndarray | None = None, *,
                      alone: bool = False, kept: bool = False) -> tuple[exact.Sums, int]:
    """:func:`row_sums` into new accumulators (``(blocks, fields)``) and their first digit:
    many tags (:func:`~mpieval.kernels.exact.summed_in`) summed as pairs (16 bytes a sum,
    :class:`~mpieval.kernels.exact.Pairs`), then rounded at once on a rank ``alone``
    (first digit :data:`~mpieval.kernels.exact.ROUNDED`), else given as accumulators of
    ``WINDOW``'s digits (every digit when a sum falls outside them), or ``kept`` as the
    pairs (:func:`~mpieval.kernels.exact.settled`); few tags summed in ``WINDOW``'s
    digits; again with every digit when a value falls outside them, or is infinite or NaN
    (the same exact sums, and floats, every way)."""
    window = exact.summed_in(blocks, WINDOW)
    summed = exact.zeroed(window, blocks, fields)
    if row_sums(pred, label, codes, tag_of_code, summed, weight, window):
        (sums,), (first,) = exact.settled([summed], alone, WINDOW, kept=kept)
        return sums, first
    sums = exact.accumulator(blocks, fields)
    inside = row_sums(pred, label, codes, tag_of_code, sums, weight)
    assert inside, "row_sums with every digit takes every value"
    return sums, 0


def _labels(label: np.ndarray) -> np.ndarray:
    """0/1 labels as the uint8 the compiled passes read (a bool array as it is)."""
    if label.dtype == np.uint8:
        return label
    if label.dtype == np.bool_:
        return label.view(np.uint8)
    narrowed: np.ndarray = (label != 0).view(np.uint8)
    return narrowed


def user_auc_sums(
    keys: np.ndarray,
    checks: np.ndarray | None,
    pred: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    n_tags: int,
    *,
    compare: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """:func:`user_auc_parts`' parts side by side: one array of shape ``(1 + n_tags, 22,
    DIGITS)`` (more with ``compare``), and whether two rows of one key collide."""
    parts, collision = user_auc_parts(keys, checks, pred, label, tag, n_tags,
                                      compare=compare, weight=weight)
    return np.concatenate(parts, axis=1), collision


def user_auc_parts(
    keys: np.ndarray,
    checks: np.ndarray | None,
    pred: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    n_tags: int,
    *,
    compare: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> tuple[list[np.ndarray], bool]:
    """:func:`user_auc_windows`' parts with every digit (``DIGITS``)."""
    parts, firsts, collision = user_auc_windows(keys, checks, pred, label, tag, n_tags,
                                                compare=compare, weight=weight)
    full = []
    for part, first in zip(parts, firsts, strict=True):
        assert isinstance(part, np.ndarray), "digits: pairs are kept only when asked"
        full.append(exact.widened(part, first))
    return full, collision


WINDOW = (28, 11)
"""``(first, digits)``: the digits of the per-tag sums of :func:`user_auc_windows` (values
whose lowest bit is at least ``2**-178`` and below ``2**78``: counts, AUCs, the preds'
and loglosses' moments of usual preds); a value outside it has them summed again with
every digit."""


def user_auc_windows(
    keys: np.ndarray,
    checks: np.ndarray | None,
    pred: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    n_tags: int,
    *,
    compare: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    alone: bool = False,
    kept: bool = False,
) -> tuple[list[exact.Sums], list[int], bool]:
    """:func:`user_auc_parts`' parts cut to a window of digits (many tags: ``WINDOW``'s
    11 digits a sum rather than 68), each part's first digit
    (:func:`mpieval.kernels.exact.window_to_floats`), and whether two rows of one key
    collide. Many tags (:func:`~mpieval.kernels.exact.summed_in`) summed as pairs
    (:class:`~mpieval.kernels.exact.Pairs`: 16 bytes a sum, so the pass over users adds
    to a sixth of the bytes of ``WINDOW``'s digits), then on a rank ``alone`` rounded at
    once (first digit :data:`~mpieval.kernels.exact.ROUNDED`), else given as ``WINDOW``'s
    digits (every digit when a sum falls outside them), or ``kept`` as the pairs
    (:func:`~mpieval.kernels.exact.settled`); few tags summed in ``WINDOW``'s
    digits; again with every digit when a value falls outside them, or is infinite or NaN.
    The same exact sums, and floats, every way."""
    parts, collision, outside = _user_auc_parts(keys, checks, pred, label, tag, n_tags,
                                                compare, weight,
                                                exact.summed_in(1 + n_tags, WINDOW))
    if not outside:
        settled, firsts = exact.settled(parts, alone, WINDOW, kept=kept)
    else:
        parts, collision, _ = _user_auc_parts(keys, checks, pred, label, tag, n_tags,
                                              compare, weight, (0, exact.DIGITS))
        settled, firsts = [exact.table(part) for part in parts], [0] * len(parts)
    split = _moments_split(settled, compare is not None)
    return split, firsts[:1] * len(split), collision


def _moments_split(parts: list[exact.Sums], compared: bool) -> list[exact.Sums]:
    """:func:`_user_auc_parts`' parts (the moments of both models in one) in the order of
    :func:`user_auc_parts`: A's moments apart from B's (pairs: each its own copy)."""
    moments, split = parts[1], len(MOMENT_FIELDS)
    mine: exact.Sums
    theirs: exact.Sums | None
    if isinstance(moments, exact.Pairs):
        whole = moments.shape[1] == split
        mine = moments if whole else moments.columns(0, split)
        theirs = None if whole else moments.columns(split, moments.shape[1])
    else:
        mine, theirs = moments[:, :split], moments[:, split:]
    if not compared:
        return [parts[0], mine]
    assert theirs is not None
    return [parts[0], mine, parts[2], parts[3], theirs]


def _user_auc_parts(
    keys: np.ndarray,
    checks: np.ndarray | None,
    pred: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    n_tags: int,
    compare: np.ndarray | None,
    weight: np.ndarray | None,
    window: tuple[int, int],
) -> tuple[list[exact.Sums], bool, bool]:
    """``(parts, collision, outside)``: ``USER_SUM_FIELDS`` per block (``all``, then tag codes
    ``0 .. n_tags - 1``; a tag code ``>= n_tags`` counts in ``all`` only) over the users
    (distinct ``keys``), then ``MOMENT_FIELDS``, as exact accumulators of ``window``'s
    digits or pairs (:data:`~mpieval.kernels.exact.PAIRS`; two parts of shape ``(1 +
    n_tags, fields)``, see :mod:`mpieval.kernels.exact`; not joined: many tags), whether
    two rows of one key have different ``checks`` (compared by their low 32 bits: a uint64
    check is cut to them), and whether some value fell outside the window.

    With ``compare`` (model B's preds of the same rows), the moments part holds B's
    ``COMPARE_MOMENT_FIELDS`` after A's, and two parts more: B's ``USER_SUM_FIELDS`` and
    the ``DIFF_FIELDS`` of the users paired between the models: the rows are grouped
    once, and the pass over the users runs once per model, each listing its valid groups'
    ``(block, rows, AUC)`` in the same order (it depends on the keys, labels and tags
    only; 24 bytes more a row, at most).

    The moments: each user's rows sorted by (tag, pred, label, B's pred, weight) and its
    groups summed in that order, so each group's sums have the same bits whatever the
    order of its rows and the ranks they came from. Without ``compare`` and ``weight`` the
    AUC pass sums them from the grouped rows (one uint64 a row, pred bits above the label,
    sorted within each tag: 28 bytes a row of the longest user; a user of at most
    ``SHORT`` rows staged with the next users', their logloss terms a batch at a time; a
    longer user from the rows its AUC sort left in pred order, put in tag order, no sort
    of their own); else a pass of their own before it (32 bytes a row of the longest
    user). ``weight``: float64 row weights (None: 1 a row).

    ``pred`` is float32 or float64 (compared as given), ``label`` 0/1 uint8, ``tag``
    uint32 codes. Holds 1 byte a row (its part), and per thread, kept from one part to the
    next: 8 bytes a row of its largest part (the grouped rows, in which the pass sorts a
    long user; 12 for float64 preds without ``compare`` and ``weight``) and 8 bytes a row
    of its longest user (16 for float64 preds; 8 more with ``compare``); 8 bytes a row of
    the part more (each row's user and index) and 24 to 72 bytes a user of it (its table
    of users), while a part is grouped (without ``compare`` and ``weight``: kept too).
    """
    n = len(keys)
    models = [pred] if compare is None else [pred, compare]

    def accumulator(*shape: int) -> exact.Sums:
        return exact.zeroed(window, *shape)

    sums = [accumulator(1 + n_tags, len(USER_SUM_FIELDS)) for _ in models]
    n_moments = len(MOMENT_FIELDS) + (0 if compare is None else len(COMPARE_MOMENT_FIELDS))
    moments = accumulator(1 + n_tags, n_moments)
    groups = [np.empty((0, 3)) for _ in models]
    collision = False
    outside = False
    if n:
        row_bits = max(n - 1, 1).bit_length()
        part_bits = PART_BITS if n >= PART_ROWS else 0
        sizes = np.zeros(1 << part_bits, np.int64)
        keys = np.ascontiguousarray(keys, np.uint64)
        label = np.ascontiguousarray(_labels(label))
        tags = (np.zeros(0, TAG_DTYPE) if tag is None
                else np.ascontiguousarray(tag, TAG_DTYPE))
        # compared by their low 32 bits
        checks = (np.zeros(0, np.uint32) if checks is None
                  else np.ascontiguousarray(checks, np.uint32))
        models = [np.ascontiguousarray(model if model.dtype in (np.float32, np.float64)
                                       else model.astype(np.float64)) for model in models]
        weights = (np.zeros(0) if weight is None
                   else np.ascontiguousarray(weight, np.float64))
        parts = np.empty(n if part_bits else 0, np.uint8)
        _core.wuauc.parts(keys, parts, part_bits, sizes)

        kept = threading.local()  # each thread's memory, kept from one part to the next
        # each thread's exact sums, which its parts add to (exact: the same bits whatever
        # the parts a thread took; memory: a set of per-tag sums a thread, not a part)
        sums_of_threads: list[tuple[list[exact.Sums], exact.Sums]] = []
        lock = threading.Lock()
        outside_parts: list[int] = []  # parts with a value outside the window

        def one_part(part: int) -> tuple[list[np.ndarray], bool]:
            """The part's valid groups (with ``compare``), per model, and whether it has a
            key collision; its sums added to its thread's."""
            if not hasattr(kept, "work"):
                kept.work, kept.packed = _core.wuauc.Workspace(), np.empty(0, np.uint64)
                kept.sums = [accumulator(1 + n_tags, len(USER_SUM_FIELDS)) for _ in models]
                kept.moments = accumulator(1 + n_tags, n_moments)
                with lock:
                    sums_of_threads.append((kept.sums, kept.moments))
            with exact.summing(window, *kept.sums, kept.moments) as outside:
                found = _one_part(part)
            if outside[0]:
                with lock:
                    outside_parts.append(part)
            return found

        def _one_part(part: int) -> tuple[list[np.ndarray], bool]:
            if compare is None and weight is None:  # the rows themselves grouped, once
                found = _core.wuauc.group_rows(keys, checks, parts, part, sizes[part],
                                               models[0], label, tags, n_tags, kept.work)
                _core.wuauc.grouped_user_sums(kept.work, exact.table(kept.sums[0]),
                                              exact.table(kept.moments))
                return [np.empty((0, 3))], bool(found)
            if len(kept.packed) < sizes[part]:  # a thread's first part is its largest
                kept.packed = np.empty(sizes[part], np.uint64)
            packed = kept.packed[: sizes[part]]
            found = _core.wuauc.group(keys, checks, parts, part, packed, row_bits)
            # the moments in a pass of their own
            _core.wuauc.moment_sums(packed, row_bits, models[0], label, tags, n_tags,
                                    models[1] if len(models) > 1 else models[0][:0],
                                    weights, exact.table(kept.moments))
            part_groups = []
            for k, model in enumerate(models):
                # a valid group has two rows or more, and a row is in at most two groups
                part_groups.append(np.empty((len(packed) + 1 if compare is not None else 0,
                                             3)))
                # the last pass may sort long users in their own packed rows
                cursor = _core.wuauc.user_sums(packed, k == len(models) - 1, row_bits, model,
                                               label, tags, n_tags,
                                               exact.table(kept.sums[k]),
                                               part_groups[k], kept.work, weights,
                                               _NO_MOMENTS)
                part_groups[k] = part_groups[k][:cursor]
            return part_groups, bool(found)

        # started largest first (a part holding a heavy user must not start last: the
        # threads would wait for it), then put in part order
        filled = sorted((part for part in range(len(sizes)) if sizes[part]),
                        key=lambda part: -sizes[part])
        by_part = dict(zip(filled, on_threads(one_part, filled), strict=True))
        done = [by_part[part] for part in sorted(by_part)]
        overflow = False
        # each thread's sums added in the first thread's (many tags: no copy of them)
        for k in range(len(models)):
            sums[k], over = exact.added([thread_sums[k] for thread_sums, _ in sums_of_threads])
            overflow |= over
            groups[k] = np.concatenate([part_groups[k] for part_groups, _ in done])
        moments, over = exact.added([thread_moments for _, thread_moments in sums_of_threads])
        collision = any(found for _, found in done)
        outside = bool(outside_parts) or overflow or over
    if compare is None:
        return [sums[0], moments], collision, outside
    # the paired differences in the window too (many tags: 11 digits a sum, not 68, or a
    # pair; a negative sum's sign held by the window's top digit)
    diff = accumulator(1 + n_tags, len(DIFF_FIELDS))
    with exact.summing(window, diff) as diff_outside:
        paired_diff_sums(groups[0], groups[1], exact.table(diff))
    return [sums[0], moments, sums[1], diff], collision, outside or diff_outside[0]


DIFF_FIELDS = ("diff_sum", "diff_sq_sum", "diff_rows_sum", "diff_rows_sq_sum",
               "diff_sq_rows_sq_sum")
"""Per block, over the valid groups of two models (:func:`user_auc_sums`), ``D = AUC_B -
AUC_A`` and ``n`` the group's rows: ``sum D``, ``sum D^2``, ``sum n D``, ``sum n^2 D``,
``sum n^2 D^2`` (the paired differences and their intervals)."""


def paired_diff_sums(groups_a: np.ndarray, groups_b: np.ndarray, sums: np.ndarray) -> None:
    """Add ``DIFF_FIELDS`` of the paired groups to the exact ``sums`` (shape ``(blocks,
    5, digits)``: the thread's window of digits, :func:`mpieval.kernels.exact.thread_window`,
    every digit by default)."""
    _core.wuauc.paired_diff_sums(np.ascontiguousarray(groups_a, np.float64),
                           np.ascontiguousarray(groups_b, np.float64), sums)
