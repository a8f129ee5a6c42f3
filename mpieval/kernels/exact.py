"""Exact sums of float64 values: the same bits whatever the order of the values, the
batches they came in and the ranks that added them.

A float sum rounds after every addition, so its last bits depend on the order of the
values; over ranks that order is the data's split. An *accumulator* here holds the exact
sum instead, as ``DIGITS`` float64 digits of ``BITS`` bits each::

    value = sum(digits[k] * 2**(BITS * k - 1074))

(``2**-1074`` is the smallest float64 step, so every finite float64 is a whole number of
such steps.) A value adds to at most three neighbouring digits, each a whole number below
``2**32``; a digit stays exact while it is below ``2**53``, so :func:`normalize` carries
the excess to the next digit at least every ``SAFE_ADDS`` additions. Accumulators merge by
plain addition (an ``Allreduce`` of float64 sums whole numbers exactly while they stay
below ``2**53``: normalized digits leave room for two million ranks), and the sum is
rounded to a float64 once, at the end (:func:`to_float`). The digits are float64 so that
an accumulator packs into the same buffer as the other summed parts.

The compiled kernels (``mpieval/_core/exact.hpp``: ``add``, ``normalize``) take
accumulators of shape ``(..., DIGITS)`` and add each value where the loops that feed them
compute it, so those loops stay one pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from mpieval import _core

BITS = 32
DIGITS = 68
"""Enough for every finite float64 (bits 0 .. 2098 above ``2**-1074``) and carries."""
SAFE_ADDS = 1 << 20
"""Additions to one accumulator between two :func:`normalize` (``< 2**21``: room for a
normalized digit plus that many values of at most ``2**32`` each, below ``2**53``)."""


def normalize(acc: np.ndarray) -> None:
    """Carry every digit's excess over ``2**32`` to the next digit, in place: digits
    ``0 .. DIGITS - 2`` end in ``[0, 2**32)``, the last one holds the sign. ``acc`` (C
    contiguous float64) may have any leading shape; the value is unchanged (each step is
    exact)."""
    _core.exact.normalize(acc)


def add_values(acc: np.ndarray, values: np.ndarray) -> None:
    """Add every value of the float64 array ``values`` to ``acc`` (shape ``(DIGITS,)``)
    and normalize it (the add itself: ``add`` in ``mpieval/_core/exact.hpp``)."""
    _core.exact.add_values(acc, np.ascontiguousarray(values, dtype=np.float64))


def accumulator(*shape: int) -> np.ndarray:
    """Zeroed accumulators of leading shape ``shape`` (each ``DIGITS`` digits)."""
    return np.zeros((*shape, DIGITS), dtype=np.float64)


def widened(window: np.ndarray, first: int) -> np.ndarray:
    """Accumulators with every digit from ``window``, the digits ``first ..`` of each
    (sums made in a window of digits: many tags), normalized: a window's top digit holds
    its sign, which normalizing carries to the same digits as a sum made with all of
    them."""
    whole = accumulator(*window.shape[:-1])
    whole[..., first: first + window.shape[-1]] = window
    normalize(whole)
    return whole


def exact_sum(values: np.ndarray) -> np.ndarray:
    """A new accumulator holding the exact sum of ``values`` (any float dtype)."""
    acc = accumulator()
    add_values(acc, np.ascontiguousarray(values, dtype=np.float64).ravel())
    return acc


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum a_i b_i``: each product rounded to float64, their sum exact and rounded once,
    so the same bits on every machine. (``np.dot`` and ``@`` hand a long float sum to the
    BLAS, which splits it over its threads: its last bits follow ``OPENBLAS_NUM_THREADS``
    and the CPU's kernel.)"""
    with np.errstate(over="ignore", invalid="ignore"):  # inf / nan: the sum says so
        products = np.multiply(a, b, dtype=np.float64)
    return float(to_floats(exact_sum(products)))  # to_float's float, compiled


def to_int(acc: np.ndarray) -> int:
    """The exact value of one accumulator (any digits, normalized or not) in units of
    ``2**-1074``."""
    digits = np.asarray(acc, dtype=np.float64)
    total = 0
    for k in np.flatnonzero(digits):
        total += int(digits[k]) << (BITS * int(k))
    return total


def to_float(acc: np.ndarray) -> float:
    """The sum held by one accumulator, rounded once to the nearest float64 (ties to
    even; Python's ``int / int`` is correctly rounded); ``inf``/``nan`` when an infinite
    or NaN value was added, or the sum is beyond the float64 range."""
    top = float(acc[DIGITS - 1])
    if not math.isfinite(top):
        return top
    total = to_int(acc)
    try:
        return total / (1 << 1074)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def to_floats(acc: np.ndarray) -> np.ndarray:
    """:func:`to_float` of every accumulator of ``acc`` (shape ``(..., DIGITS)``), in one
    compiled pass (``to_double`` in ``mpieval/_core/exact.hpp``: the top 96 bits of each sum
    rounded to nearest, ties to even, the lower digits as a sticky bit): the same floats."""
    digits = np.ascontiguousarray(acc, dtype=np.float64)
    out = np.empty(digits.shape[:-1], dtype=np.float64)
    _core.exact.to_floats(digits, out)
    return out


def add_at(acc: np.ndarray, index: np.ndarray, values: np.ndarray, first: int = 0,
           window_first: int | None = None) -> bool:
    """Add ``values[i, j]`` to the accumulator ``acc[index[i], first + j]`` for every row
    ``i`` of ``values`` (shape ``(n, width)``, or ``(n,)`` for a width of 1), exactly; the
    blocks added to end normalized. ``acc``: shape ``(blocks, fields, DIGITS)``, C
    contiguous float64; with ``window_first``, ``(blocks, fields, digits)``: the digits
    ``window_first ..`` of each (many tags: fewer bytes), and a value that falls outside
    them (or is infinite or NaN) is left out: then True (sum again with every digit). One
    compiled pass, whatever the number of blocks (many tags: no Python call a tag)."""
    return _core.exact.add_at(acc, np.ascontiguousarray(index, dtype=np.int64),
                              np.ascontiguousarray(values, dtype=np.float64), first,
                              -1 if window_first is None else window_first)


def row_fsums(terms: np.ndarray) -> np.ndarray:
    """Each row's sum of ``terms`` (shape ``(n, k)``, finite float64, ``k <``
    :data:`SAFE_ADDS`) rounded once to the nearest float64, ties to even: ``math.fsum`` of
    the row (many rows in one compiled pass: the row's terms added to one accumulator,
    rounded by ``to_double`` as :func:`to_floats`, its digits cleared for the next row)."""
    terms = np.ascontiguousarray(terms, dtype=np.float64)
    out = np.empty(len(terms), dtype=np.float64)
    _core.exact.row_fsums(terms, out)
    return out


# -- a window of digits: many accumulators that use few of their digits (many tags) -------


def used_digits(acc: np.ndarray) -> tuple[int, int]:
    """``(first, stop)``: the digits ``first .. stop - 1`` hold every nonzero digit of the
    accumulators ``acc`` (shape ``(..., DIGITS)``, or a window of fewer digits: then
    counted from the window's first); ``(0, 0)`` when every digit is 0."""
    acc = np.asarray(acc)
    used = np.flatnonzero(acc.reshape(-1, acc.shape[-1]).any(axis=0))
    return (int(used[0]), int(used[-1]) + 1) if len(used) else (0, 0)


def joined_digits(ranges: list[tuple[int, int]]) -> tuple[int, int]:
    """The digits that hold those of every one of ``ranges`` (:func:`used_digits` of each
    rank's accumulators): the window every rank sends, at least one digit wide."""
    used = [(first, stop) for first, stop in ranges if stop > first]
    if not used:
        return 0, 1
    return min(first for first, _ in used), max(stop for _, stop in used)


@contextmanager
def thread_window(first: int, digits: int) -> Iterator[list[bool]]:
    """Within: the compiled additions of this thread go to accumulators of the digits
    ``first .. first + digits - 1`` (``_core.exact.set_window``: many tags, fewer bytes);
    after, the list yielded holds whether some value fell outside them (then sum again
    with every digit). The thread's window is reset to every digit, whatever happens."""
    outside: list[bool] = []
    _core.exact.set_window(first, digits)
    try:
        yield outside
    finally:
        outside.append(_core.exact.take_outside())
        _core.exact.set_window(0, DIGITS)


def window_to_floats(window: np.ndarray, first: int) -> np.ndarray:
    """:func:`to_floats` of accumulators given by their digits ``first .. first + width -
    1`` (``window``: shape ``(..., width)``; the other digits 0), the same floats, in one
    compiled pass (each set into ``DIGITS`` digits of scratch, the window's digits written
    over, the others staying 0)."""
    flat = np.ascontiguousarray(window, dtype=np.float64)
    out = np.empty(window.shape[:-1], dtype=np.float64)
    _core.exact.window_to_floats(flat, first, out)
    return out
