"""Kernels of the uid keys: stable 64-bit hashing of string uids and the owner of a key.

Pure numpy (no MPI, no state, no Python loop over rows), except the compiled hashing of
variable-length strings and ``mix64`` of compiled loops (``mpieval/_core/keys.hpp``).

Hashing. ``mix64`` is the splitmix64/murmur3 finalizer, a bijection of uint64 with
full avalanche. A string of code units ``c_0 .. c_{m-1}`` (packed eight bytes to a
little-endian word ``w_j``) hashes to ``mix64(sum_j (mix64(w_j + K_j) - mix64(K_j)))``
with fixed per-position constants ``K_j``: an all-zero word adds nothing, so the
numpy padding of a fixed-width array never changes the hash, and the result is the
same on every rank, host and run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from mpieval import _core
from mpieval.kernels.parallel import on_threads

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


def _mix64_steps(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer of uint64 ``x``:
    ``x ^= x >> 30; x *= M1; x ^= x >> 27; x *= M2; x ^= x >> 31`` (mod 2**64).

    On a uint64 array it runs in place (numpy); compiled (``mpieval/_core/keys.hpp``) it is
    :func:`mix64_scalar`, the same steps on one uint64."""
    x ^= x >> _U64(30)
    x *= _M1
    x ^= x >> _U64(27)
    x *= _M2
    x ^= x >> _U64(31)
    return x


def mix64_scalar(x: np.uint64 | int) -> int:
    """``mix64`` of one uint64, as the compiled loops compute it."""
    return int(_core.keys.mix64(int(x)))


def mix64(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``mix64`` of every value of uint64 ``x``, into ``out`` if given (may be ``x``),
    else into a new array."""
    y = np.array(x, dtype=_U64, copy=True) if out is None else out
    if out is not None and out is not x:
        y[...] = x
    return _mix64_steps(y)


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


SLICE_ROWS = 1 << 18
"""Rows a thread hashes at a time (:func:`hash_texts`, :func:`hash_decimals`)."""
DECIMAL_WORDS = 3
"""The words of the longest decimal text of an int64 or uint64 (20 digits and a sign;
``keys.hpp``'s ``DECIMAL_WORDS``)."""


def _in_slices(n: int, hash_slice: Callable[[int, int], None]) -> None:
    """``hash_slice(lo, hi)`` for the rows of ``n`` in slices of :data:`SLICE_ROWS`, on
    :func:`~mpieval.kernels.parallel.threads` threads."""
    slices = [(start, min(start + SLICE_ROWS, n)) for start in range(0, n, SLICE_ROWS)]
    on_threads(lambda rows: hash_slice(*rows), slices)


def text_lengths(offsets: np.ndarray) -> tuple[int, int]:
    """``(longest, first_empty)`` of the byte strings of ``offsets`` (int32 or int64, as
    :func:`hash_texts` takes them): the longest one's length and the first empty one's
    index (-1: none), in one compiled pass."""
    return _core.keys.text_lengths(np.ascontiguousarray(offsets))


def hash_texts(offsets: np.ndarray, data: np.ndarray, longest: int | None = None,
               check_dtype: type = np.uint64,
               out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes (key, check) of variable-length byte strings, value
    ``i`` being ``data[offsets[i]:offsets[i + 1]]`` (an Arrow string or binary array's
    buffers): in one compiled pass (slices of rows on :func:`~mpieval.kernels.parallel.threads`
    threads), the same hashes as :func:`hash_strings` of the same bytes as an ``S``
    array. ``longest``: the longest string's length, if known (:func:`text_lengths`);
    ``check_dtype`` uint32: the checks' low 32 bits only. ``out``: the (keys, checks)
    arrays to write (uint64 and ``check_dtype``, one a value), returned."""
    offsets = np.ascontiguousarray(offsets)
    if offsets.dtype not in (np.int32, np.int64):
        offsets = offsets.astype(np.int64)
    data = np.ascontiguousarray(data).view(np.uint8)
    n = len(offsets) - 1
    if longest is None:
        longest = text_lengths(offsets)[0]
    width = -(-max(longest, 1) // 8)
    constants, zero_terms = _text_constants(width)
    if out is not None:
        keys, checks = out
        if len(keys) != n or len(checks) != n or keys.dtype != _U64 or \
                checks.dtype != np.dtype(check_dtype):
            raise ValueError("hash_texts: out must be uint64 keys and checks of the texts' length")
    else:
        keys, checks = np.empty(n, dtype=_U64), np.empty(n, dtype=check_dtype)
    _in_slices(n, lambda lo, hi: _core.keys.hash_texts(
        offsets[lo : hi + 1], data, constants, zero_terms, keys[lo:hi], checks[lo:hi]))
    return keys, checks


def hash_decimals(values: np.ndarray, check_dtype: type = np.uint64
                  ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hash_texts` of each integer's decimal text (``str(v)``: a ``-`` and its
    digits), computed from the integers in one compiled pass without making the text (a
    Parquet integer uid column read as text: ``mpieval.readers.batches.Batch.keys``).
    ``values``: any integer dtype (int64 or uint64 as they are)."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"hash_decimals takes integers, got {values.dtype}")
    if values.dtype not in (np.int64, np.uint64):
        values = values.astype(np.int64)
    values = np.ascontiguousarray(values)
    n = len(values)
    constants, zero_terms = _text_constants(DECIMAL_WORDS)
    keys = np.empty(n, dtype=_U64)
    checks: np.ndarray = np.empty(n, dtype=check_dtype)
    _in_slices(n, lambda lo, hi: _core.keys.hash_decimals(
        values[lo:hi], constants, zero_terms, keys[lo:hi], checks[lo:hi]))
    return keys, checks


@functools.lru_cache(maxsize=64)
def _text_constants(width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(constants, zero_terms)`` of :func:`hash_texts` for strings of up to ``width``
    words: both seeds' ``K_j`` and their ``mix64``, made once a width (a batch of a few
    rows, such as a slice's, would otherwise pay more for them than for its hashing);
    read-only."""
    constants = np.stack([_position_constants(width, seed) for seed in SEED_BYTES])
    zero_terms = mix64(constants)
    constants.flags.writeable = zero_terms.flags.writeable = False
    return constants, zero_terms


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
