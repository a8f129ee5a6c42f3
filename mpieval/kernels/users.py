"""Kernels of the per-user metrics: stable 64-bit uid hashing and per-user AUC.

Pure numpy: no MPI, no state, no Python loop over rows or users.

Hashing. ``mix64`` is the splitmix64/murmur3 finalizer, a bijection of uint64 with
full avalanche. A string of code units ``c_0 .. c_{m-1}`` (packed eight bytes to a
little-endian word ``w_j``) hashes to ``mix64(sum_j (mix64(w_j + K_j) - mix64(K_j)))``
with fixed per-position constants ``K_j``: an all-zero word adds nothing, so the
numpy padding of a fixed-width array never changes the hash, and the result is the
same on every rank, host and run.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64
# splitmix64 constants
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)

# Seeds of the two independent string hashes (the key and its collision check), per
# kind of string, so that a str and a bytes value never share a key by construction.
SEED_STR = (0x5851F42D4C957F2D, 0x14057B7EF767814F)
SEED_BYTES = (0x2545F4914F6CDD1D, 0xD6E8FEB86659FD93)
# Seeds of the combination of several key columns (group keys).
SEED_GROUP = (0x9FB21C651E98DF25, 0xC2B2AE3D27D4EB4F)


def mix64(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The splitmix64 finalizer of uint64 ``x``:
    ``x ^= x >> 30; x *= M1; x ^= x >> 27; x *= M2; x ^= x >> 31`` (mod 2**64)."""
    y = np.array(x, dtype=_U64, copy=True) if out is None else out
    if out is not None and out is not x:
        y[...] = x
    y ^= y >> _U64(30)
    y *= _M1
    y ^= y >> _U64(27)
    y *= _M2
    y ^= y >> _U64(31)
    return y


def _position_constants(count: int, seed: int) -> np.ndarray:
    """``K_j = mix64(seed + (j + 1) * golden)`` for ``j < count``."""
    j = np.arange(1, count + 1, dtype=_U64)
    return mix64(_U64(seed) + j * _U64(_GOLDEN))


def hash_words(words: np.ndarray, seed: int) -> np.ndarray:
    """The hash of each row of a 2-D uint64 ``words`` array (see the module docstring).

    Zero words contribute nothing, so trailing padding does not change the hash.
    """
    n, width = words.shape
    keys = _position_constants(width, seed)
    zero_terms = mix64(keys)
    total = np.zeros(n, dtype=_U64)
    term = np.empty(n, dtype=_U64)
    for j in range(width):  # a loop over word positions, each step over every row
        np.add(words[:, j], keys[j], out=term)
        mix64(term, out=term)
        term -= zero_terms[j]
        total += term
    return mix64(total, out=total)


def string_words(values: np.ndarray) -> np.ndarray:
    """A fixed-width ``U`` or ``S`` array as little-endian uint64 words, one row a value.

    ``U`` holds UTF-32 code points (two to a word), ``S`` bytes (eight to a word);
    the padding numpy adds after a shorter value is zero.
    """
    n = len(values)
    if values.dtype.kind == "U":
        values = values.astype(f"<U{max(values.dtype.itemsize // 4, 1)}", copy=False)
    width = values.dtype.itemsize
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    padded_width = -(-width // 8) * 8
    if padded_width != width:
        padded = np.zeros((n, padded_width), dtype=np.uint8)
        padded[:, :width] = raw
        raw = padded
    return raw.view("<u8").reshape(n, padded_width // 8).astype(_U64, copy=False)


def hash_strings(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes (key, check) of a ``U`` or ``S`` array."""
    seeds = SEED_STR if values.dtype.kind == "U" else SEED_BYTES
    words = string_words(values)
    return hash_words(words, seeds[0]), hash_words(words, seeds[1])


def combine_keys(columns: list[np.ndarray], seed: int) -> np.ndarray:
    """One 64-bit hash of several uint64 key columns (row-wise)."""
    return hash_words(np.stack(columns, axis=1), seed)


def owner_of(keys: np.ndarray, size: int) -> np.ndarray:
    """The rank that owns each key: ``mix64(key) mod size`` (uint16 below 65536 ranks, so
    that the exchange's stable sort by rank is a radix sort)."""
    dtype = np.uint16 if size <= 1 << 16 else np.int64
    if size == 1:
        return np.zeros(len(keys), dtype=dtype)
    owner = mix64(keys)
    owner %= _U64(size)
    return owner.astype(dtype)


# -- dense codes for one value sort ------------------------------------------------------

# float32 bit patterns of [0, 1] lie below 2**30 (1.0 is 0x3F800000) and order as the
# floats do; a float64 prediction that a float32 holds exactly has this 30-bit code.
PRED_CODE_BITS = 30
_PRED_CODE_MASK = np.uint32(0x7FFFFFFF)  # drops the sign bit: -0.0 codes as 0.0
_PREFILTER_BITS = 20  # bitmap over the top bits of a hash, to find a few hashes fast


def pred_codes(pred: np.ndarray) -> np.ndarray:
    """uint32 codes of float32 predictions in [0, 1]: equal iff the preds are equal, and
    ordered as the preds."""
    return pred.astype(np.float32, copy=False).view(np.uint32) & _PRED_CODE_MASK


def pred_ranks(pred: np.ndarray) -> np.ndarray:
    """The dense rank of each pred among the distinct preds (one argsort): equal iff the
    preds are equal and ordered as they are; uint32 below 2**32 rows, else uint64."""
    dtype = np.uint32 if len(pred) < 2**32 else np.uint64
    order = np.argsort(pred)
    ranks_in_order = np.cumsum(changes(pred[order]), dtype=dtype)
    ranks_in_order -= dtype(1)
    ranks = np.empty(len(pred), dtype=dtype)
    ranks[order] = ranks_in_order
    return ranks


def user_codes(keys: np.ndarray, bits: int) -> tuple[np.ndarray, int] | None:
    """``(codes, users)``: a uint64 code below ``2**bits`` per row, equal for equal keys
    and distinct for distinct keys, and the number of distinct keys; ``None`` if there are
    more than ``2**(bits - 1)`` distinct keys.

    The code is the top ``bits`` bits of ``mix64(key)``; a key whose prefix clashes with
    a smaller hash's takes the smallest code no key has. One value sort of the hashes.
    """
    ordered = mix64(keys)
    ordered.sort()
    unique = ordered[changes(ordered)]
    del ordered
    if len(unique) > 2 ** (bits - 1):
        return None
    hashes = mix64(keys)  # again rather than a sorted copy: 8 bytes a row less at the peak
    shift = _U64(64 - bits)
    prefix = unique >> shift
    clashing = np.flatnonzero(prefix[1:] == prefix[:-1]) + 1
    if len(clashing) == 0:
        hashes >>= shift
        return hashes, len(unique)
    moved = unique[clashing]  # sorted: the hashes that need a free code
    used = prefix[np.r_[True, prefix[1:] != prefix[:-1]]]
    free = _free_codes(used, len(moved))
    top = _U64(64 - _PREFILTER_BITS)
    suspect = np.zeros(1 << _PREFILTER_BITS, dtype=bool)
    suspect[moved >> top] = True
    rows = np.flatnonzero(suspect[hashes >> top])
    slot = np.minimum(np.searchsorted(moved, hashes[rows]), len(moved) - 1)
    hit = moved[slot] == hashes[rows]
    hashes >>= shift
    hashes[rows[hit]] = free[slot[hit]]
    return hashes, len(unique)


def _free_codes(used: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` smallest non-negative integers not in the sorted array ``used``."""
    candidates = np.arange(count + len(used), dtype=_U64)
    slot = np.minimum(np.searchsorted(used, candidates), len(used) - 1)
    return candidates[used[slot] != candidates][:count]


def count_distinct(values: np.ndarray) -> int:
    """The number of distinct values (one value sort)."""
    if len(values) == 0:
        return 0
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1


def pair_hashes(keys: np.ndarray, checks: np.ndarray) -> np.ndarray:
    """One 64-bit hash of each (key, check) pair."""
    mixed = mix64(checks)
    mixed ^= keys
    return mix64(mixed, out=mixed)


# -- per-group AUC ---------------------------------------------------------------------


def group_auc(
    group_start: np.ndarray, run_start: np.ndarray, label: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, positives, twice_u)`` of each group of rows, the Mann-Whitney count with
    ties as one half: ``AUC_g = twice_u_g / (2 P_g N_g)``.

    The rows come group by group, each group's rows in pred order; ``group_start`` marks
    the first row of each group and ``run_start`` the first row of each run of equal
    preds (every group start included). Each positive ``i`` first counts twice the
    negatives before it in its group (``2 b_i``); a run of tied preds with ``p``
    positives and ``q`` negatives then adds ``p q - 2 X``, where ``X`` sums, over its
    positives, the negatives of the run before them: so each positive scores 2 per
    negative below it and 1 per negative tied with it, whatever the order inside the run.
    """
    m = len(label)
    label = label.astype(np.int64, copy=False)
    positives_before = np.cumsum(label)
    positives_before -= label
    negatives_before = np.arange(m, dtype=np.int64)
    negatives_before -= positives_before  # b_i, counted from the first row
    del positives_before
    groups = np.flatnonzero(group_start)
    if m == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    rows = np.diff(groups, append=m)
    positives = np.add.reduceat(label, groups)
    twice_u = np.add.reduceat(label * negatives_before, groups)
    twice_u -= positives * negatives_before[groups]
    twice_u *= 2
    tied = ~run_start
    if tied.any():  # rows of runs of two or more
        member = tied.copy()
        member[:-1] |= tied[1:]
        where = np.flatnonzero(member)
        first = np.flatnonzero(run_start[where])  # each run's first row, in ``where``
        run_label = label[where]
        run_before = negatives_before[where]
        run_positives = np.add.reduceat(run_label, first)
        run_negatives = np.diff(first, append=len(where)) - run_positives
        run_x = np.add.reduceat(run_label * run_before, first)
        run_x -= run_positives * run_before[first]
        correction = run_positives * run_negatives - 2 * run_x
        group_of_run = np.searchsorted(groups, where[first], side="right") - 1
        np.add.at(twice_u, group_of_run, correction)
    return rows, positives, twice_u


# Per-block user sums, in this order (see :func:`auc_block_sums`).
USER_SUM_FIELDS = (
    "users", "valid_users", "valid_rows", "valid_clicks", "auc_sum", "auc_rows_sum",
    "auc_clicks_sum",
)


def auc_block_sums(
    rows: np.ndarray,
    positives: np.ndarray,
    twice_u: np.ndarray,
    block: np.ndarray | None = None,
    n_blocks: int = 1,
) -> np.ndarray:
    """Sums over groups, per block (``USER_SUM_FIELDS``; shape ``(n_blocks, 7)``).

    A group is valid when it has both classes; then ``AUC = twice_u / (2 P N)`` and it
    adds 1 to ``valid_users``, its rows and clicks to ``valid_rows``/``valid_clicks``, and
    ``AUC``, ``AUC * rows``, ``AUC * clicks`` to the three AUC sums. Every group adds 1 to
    ``users``.
    """
    negatives = rows - positives
    valid = (positives > 0) & (negatives > 0)
    auc = np.zeros(len(rows), dtype=np.float64)
    np.divide(twice_u, 2.0 * positives * negatives, out=auc, where=valid)
    weights = (
        None, valid, np.where(valid, rows, 0), np.where(valid, positives, 0), auc,
        auc * rows, auc * positives,
    )
    if block is None:
        return np.array([[len(rows) if w is None else float(np.sum(w)) for w in weights]])
    return np.stack(
        [np.bincount(block, weights=w, minlength=n_blocks) for w in weights], axis=1
    )


def changes(values: np.ndarray) -> np.ndarray:
    """``True`` where a value differs from the one before (and at index 0)."""
    flags = np.ones(len(values), dtype=bool)
    np.not_equal(values[1:], values[:-1], out=flags[1:])
    return flags


# Rows packed per step (bounds the temporaries of :func:`pack_rows`).
PACK_ROWS = 1 << 20


def pack_rows(
    user_code: np.ndarray,
    pred_code: np.ndarray,
    label: np.ndarray,
    tag: np.ndarray | None,
    tag_bits: int,
    pred_bits: int,
) -> np.ndarray:
    """One uint64 per row whose order is (user, pred, label, tag), written over
    ``user_code``: ``user << (p + 1 + t) | pred << (1 + t) | label << t | tag`` with
    ``t = tag_bits`` and ``p = pred_bits`` (the codes of :func:`pred_codes` or
    :func:`pred_ranks`)."""
    packed = user_code
    packed <<= _U64(pred_bits + 1 + tag_bits)
    for start in range(0, len(packed), PACK_ROWS):
        part = slice(start, start + PACK_ROWS)
        field = pred_code[part].astype(_U64)
        field <<= _U64(1 + tag_bits)
        packed[part] |= field
        field = label[part].astype(_U64)
        field <<= _U64(tag_bits)
        packed[part] |= field
        if tag is not None:
            packed[part] |= tag[part].astype(_U64)
    return packed
