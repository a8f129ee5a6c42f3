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
compute it, so those loops stay one pass; or, on a thread set to them, a window of the
digits (:func:`thread_window`), or *pairs* (:func:`thread_pairs`, :class:`Pairs`): two
float64s a sum and the spills of the bits they cannot hold, the same exact sum in 16
bytes (many tags), rounded at once on a rank alone or made into digits to be summed over
ranks.
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


def add_at(acc: np.ndarray | Pairs, index: np.ndarray, values: np.ndarray, first: int = 0,
           window_first: int | None = None) -> bool:
    """Add ``values[i, j]`` to the accumulator ``acc[index[i], first + j]`` for every row
    ``i`` of ``values`` (shape ``(n, width)``, or ``(n,)`` for a width of 1), exactly; the
    blocks added to end normalized. ``acc``: shape ``(blocks, fields, DIGITS)``, C
    contiguous float64; with ``window_first``, ``(blocks, fields, digits)``: the digits
    ``window_first ..`` of each (many tags: fewer bytes), and a value that falls outside
    them (or is infinite or NaN) is left out: then True (sum again with every digit); or
    :class:`Pairs` of shape ``(blocks, fields)`` (``window_first`` unused): True when a
    value is infinite or NaN or a sum overflows. One compiled pass, whatever the number of
    blocks (many tags: no Python call a tag)."""
    index = np.ascontiguousarray(index, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if isinstance(acc, Pairs):
        with summing(PAIRS, acc) as outside:
            _core.exact.add_at(acc.table, index, values, first, -1)
        return outside[0]
    return _core.exact.add_at(acc, index, values, first,
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


# -- pairs: many tags -------------------------------------------------------------------------


@contextmanager
def thread_pairs() -> Iterator[list[bool]]:
    """Within: the compiled additions of this thread go to accumulators of two float64s,
    ``hi`` and ``lo`` (``_core.exact.set_pairs``; ``exact.hpp``'s ``add_pair``: each value
    added by error-free sums, the bits the pair cannot hold kept as the thread's *spills*,
    taken by :func:`take_spills` before the end), so that an accumulator is 16 bytes, not
    ``8 * digits`` (many tags). After, the list yielded holds whether some value was
    infinite or NaN, or a sum overflowed (then sum again with every digit). The thread's
    window is reset to every digit and its spills not taken dropped, whatever happens."""
    outside: list[bool] = []
    _core.exact.set_pairs()
    try:
        yield outside
    finally:
        outside.append(_core.exact.take_outside())
        _core.exact.set_window(0, DIGITS)


class Pairs:
    """Exact sums held as pairs: ``table`` (shape ``(..., 2)``, ``hi`` and ``lo``) and the
    spills of its accumulators (``index`` into ``table.reshape(-1, 2)``, ``value``), each
    sum ``hi + lo + `` its spills, exactly. :meth:`to_floats` rounds them once (the same
    float64s as the digits give), :meth:`to_digits` gives them as accumulators of digits
    (summed over ranks)."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table
        self.index = np.zeros(0, np.int64)
        self.value = np.zeros(0, np.float64)
        # the digits (first, count) it is made into to be summed as digits (:meth:`digits`)
        self.window = (0, DIGITS)

    @classmethod
    def zeros(cls, *shape: int) -> Pairs:
        return cls(np.zeros((*shape, 2), dtype=np.float64))

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the sums (the table's, less its last axis)."""
        return self.table.shape[:-1]

    def take_spills(self) -> None:
        """Keep this thread's spills of the table (:func:`thread_pairs`, within it),
        compacted first (a few a sum, at most the float64s its spills' exact sum spans: a
        pass over many rows in parts, each part's spills taken, keeps no more a part)."""
        _core.exact.compact_spills()
        n = _core.exact.spill_count(self.table)
        if n:
            index, value = np.empty(n, np.int64), np.empty(n, np.float64)
            _core.exact.take_spills(self.table, index, value)
            self.index = np.concatenate([self.index, index])
            self.value = np.concatenate([self.value, value])

    def add(self, other: Pairs) -> bool:
        """Add ``other``'s sums to these, exactly; True when a sum overflowed (then sum
        again with every digit)."""
        if other.table.shape != self.table.shape:
            raise ValueError("Pairs.add: sums of another shape")
        with summing(PAIRS, self) as outside:
            _core.exact.add_pairs(self.table, other.table)
        self.index = np.concatenate([self.index, other.index])
        self.value = np.concatenate([self.value, other.value])
        return outside[0]

    def to_floats(self, columns: bool = False) -> np.ndarray:
        """Each sum rounded once to the nearest float64, ties to even (shape
        :attr:`shape`): ``hi + lo`` where the sum has no spill, else its terms' exact sum
        rounded (:func:`to_floats` of its digits). ``columns`` (sums of shape ``(rows,
        fields)``): held a column after the other, Fortran order (many tags' fields, each
        then read whole)."""
        if not columns or len(self.shape) != 2:
            out = np.empty(self.shape, dtype=np.float64)
            _core.exact.pairs_to_floats(self.table, self.index, self.value, out)
            return out
        rows, fields = self.shape
        held = np.empty((fields, rows), dtype=np.float64)
        _core.exact.pairs_to_floats(self.table, self.index, self.value, held, fields)
        return held.T

    def columns(self, start: int, stop: int) -> Pairs:
        """The sums of the fields ``start .. stop - 1`` (sums of shape ``(rows, fields)``)
        as pairs of their own: a copy of the table's columns, the spills of those sums."""
        fields = self.shape[1]
        part = Pairs(np.ascontiguousarray(self.table[:, start:stop]))
        part.window = self.window
        field = self.index % fields
        kept = (field >= start) & (field < stop)
        part.index = self.index[kept] // fields * (stop - start) + field[kept] - start
        part.value = self.value[kept]
        return part

    def digits(self) -> tuple[np.ndarray, int]:
        """The sums as accumulators of the digits of :attr:`window`, or of every digit
        when some sum has a digit outside them, and their first digit (to be summed as
        digits over ranks)."""
        window = self.to_digits(*self.window)
        if window is not None:
            return window, self.window[0]
        every = self.to_digits()
        assert every is not None, "every digit holds every finite sum"
        return every, 0

    def sent(self, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
        """The sums of shape ``(rows, fields)`` split by rows for their owners, rank ``r``
        owning the rows ``bounds[r] .. bounds[r + 1] - 1``: the table as float64s in
        row order (no copy) and each owner's count of them; the spills as records of an
        index among the owner's sums (int64) and a value (float64), grouped by owner
        (:data:`SPILL`), and each owner's count of them."""
        fields = self.shape[1]
        owner = np.searchsorted(bounds, self.index // fields, side="right") - 1
        order = np.argsort(owner, kind="stable")
        spills = np.empty(len(order), dtype=SPILL)
        spills["index"] = self.index[order] - bounds[owner[order]] * fields
        spills["value"] = self.value[order]
        return (self.table.reshape(-1), np.diff(bounds) * fields * 2,
                spills, np.bincount(owner, minlength=len(bounds) - 1).astype(np.int64))

    @classmethod
    def received(cls, tables: np.ndarray, spills: np.ndarray, spill_counts: np.ndarray,
                 fields: int) -> tuple[Pairs, bool]:
        """The exact sum of every rank's pairs of the same sums (:meth:`sent` to this
        rank: ``tables`` the ranks' tables one after the other, ``spills`` the ranks'
        spills, ``spill_counts`` of them a rank), and whether a sum overflowed (then sum
        again with every digit)."""
        ranks = len(spill_counts)
        table = tables.reshape(ranks, len(tables) // (ranks * fields * 2), fields, 2)
        starts = np.concatenate([[0], np.cumsum(spill_counts)])
        parts: list[Sums] = []
        for rank in range(ranks):
            part = cls(table[rank])
            mine = spills[starts[rank]: starts[rank + 1]]
            part.index, part.value = mine["index"].copy(), mine["value"].copy()
            parts.append(part)
        total, overflow = added(parts)
        assert isinstance(total, Pairs)
        return total, overflow

    def to_digits(self, first: int = 0, digits: int = DIGITS) -> np.ndarray | None:
        """The sums as accumulators of the digits ``first .. first + digits - 1`` (shape
        ``(*shape, digits)``, normalized), or None when some sum has a digit outside them."""
        out = np.zeros((*self.shape, digits), dtype=np.float64)
        if _core.exact.pairs_to_digits(self.table, self.index, self.value, out, first):
            return None
        return out


SPILL = np.dtype([("index", np.int64), ("value", np.float64)])
"""A spill of :class:`Pairs` sent to the rank that owns its sum (:meth:`Pairs.sent`)."""
PAIRS = (-1, 2)
"""The window ``(first, digits)`` of pairs (:class:`Pairs`, :func:`thread_pairs`): what the
compiled passes that take a window (``thread_window``) take instead (many tags)."""
ROUNDED = -1
"""The first digit of a part already rounded to float64s (:func:`rounded`): a rank
alone, which sums nothing over ranks, rounds its pairs at once."""

Sums = np.ndarray | Pairs
"""Accumulators of a window of digits (an array ``(..., digits)``) or pairs."""
PAIRS_FROM = 1024
"""Blocks (tags) from which per-block sums are made as pairs rather than in a window of
digits: fewer blocks' digits stay in the caches, and a block of many groups (``all``)
sums values whose bits span wide, which a pair spills."""


def summed_in(blocks: int, window: tuple[int, int]) -> tuple[int, int]:
    """Where ``blocks`` blocks of sums are made: ``PAIRS`` from :data:`PAIRS_FROM` blocks
    on, else ``window``'s digits."""
    return PAIRS if blocks >= PAIRS_FROM else window


def zeroed(window: tuple[int, int], *shape: int) -> Sums:
    """Zeroed accumulators of leading shape ``shape``: pairs (``PAIRS``) or the window's
    digits."""
    return Pairs.zeros(*shape) if window == PAIRS else np.zeros((*shape, window[1]))


def table(sums: Sums) -> np.ndarray:
    """The array the compiled passes add to: the digits, or the pairs' table."""
    return sums.table if isinstance(sums, Pairs) else sums


@contextmanager
def summing(window: tuple[int, int], *into: Sums) -> Iterator[list[bool]]:
    """Within: this thread's compiled additions go to ``window``'s accumulators
    (:func:`thread_window`; ``PAIRS``: :func:`thread_pairs`, whose spills ``into`` keep
    at the end). After, the list yielded holds whether some value fell outside them."""
    if window != PAIRS:
        with thread_window(*window) as outside:
            yield outside
        return
    with thread_pairs() as outside:
        yield outside
        for sums in into:
            assert isinstance(sums, Pairs)
            sums.take_spills()


def added(parts: list[Sums]) -> tuple[Sums, bool]:
    """The exact sum of ``parts`` (accumulators of one shape: digits, added digit by digit
    and normalized, or pairs) in the first of them (many tags: no copy), and whether some
    pair overflowed."""
    total, outside = parts[0], False
    for part in parts[1:]:
        if isinstance(total, Pairs):
            assert isinstance(part, Pairs)
            outside |= total.add(part)
        else:
            total += part
    if not isinstance(total, Pairs):
        normalize(total)
    return total, outside


def rounded(part: np.ndarray, first: int) -> np.ndarray:
    """The floats of a part summed over ranks: its window of digits from ``first`` on
    rounded (:func:`window_to_floats`), or the part itself when ``first`` is ``ROUNDED``."""
    return part if first == ROUNDED else window_to_floats(part, first)


def settled(parts: list[Sums], alone: bool, window: tuple[int, int], *,
            kept: bool = False) -> tuple[list[Sums], list[int]]:
    """Parts summed as pairs made ready for the sum over ranks, and each one's first digit:
    on a rank alone rounded at once (``ROUNDED``: no sum is made); else, ``kept``, as the
    pairs themselves (their :attr:`Pairs.window` set: summed by the sums' owners,
    :func:`mpieval.metric.narrowed_sums`), or as accumulators of ``window``'s digits, of
    every digit when some sum falls outside them (the same exact sums either way). Parts
    of digits are as they are."""
    if not all(isinstance(part, Pairs) for part in parts):
        return [table(part) for part in parts], [window[0]] * len(parts)
    pairs = [part for part in parts if isinstance(part, Pairs)]
    if alone:  # (each field's column whole: many tags' values are read a field at a time)
        return [part.to_floats(columns=True) for part in pairs], [ROUNDED] * len(parts)
    if kept:
        for part in pairs:
            part.window = window
        return list(pairs), [window[0]] * len(parts)
    windows = [part.to_digits(*window) for part in pairs]
    if all(w is not None for w in windows):
        return [w for w in windows if w is not None], [window[0]] * len(parts)
    return [_every_digit(part) for part in pairs], [0] * len(parts)


def _every_digit(part: Pairs) -> np.ndarray:
    digits = part.to_digits()
    assert digits is not None, "every digit holds every finite sum"
    return digits
