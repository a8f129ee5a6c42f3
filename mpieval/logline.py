"""Number formats of the Abacus log lines: ``%g`` for values, whole numbers for counts."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np


def value(x: float) -> str:
    """C's ``%g`` (6 significant digits); NaN prints as ``nan``."""
    return "nan" if math.isnan(x) else "%g" % x


def count(x: float) -> str:
    """A count as ``%d``; a half count (PN ``half`` ties, weighted rows) as ``12.5``, never
    in exponent form."""
    if float(x).is_integer():
        return "%d" % x
    return repr(float(x)) if abs(x) < 1e16 else "%.1f" % x


def values(xs: Sequence[float] | np.ndarray) -> list[str]:
    """:func:`value` of each (many tags: a column of values at once, without a call
    each; a float64 array in one compiled pass, ``_core.text.g_values``)."""
    if isinstance(xs, np.ndarray) and xs.dtype == np.float64:
        from mpieval import _core

        texts: list[str] = _core.text.g_values(np.ascontiguousarray(xs))
        return texts
    return ["nan" if x != x else "%g" % x for x in xs]


def counts(xs: Sequence[float]) -> list[str]:
    """:func:`count` of each (many tags: a column of counts at once; Python ints, most
    counts, as their digits)."""
    if _all_ints(xs):
        return list(map(str, xs))
    return ["%d" % x if float(x).is_integer() else count(x) for x in xs]


def _all_ints(xs: Sequence[Any]) -> bool:
    """Whether every element is a Python int (not a bool), without a Python step each."""
    return {int}.issuperset(map(type, xs))


def joined(pieces: Sequence[str], columns: Sequence[Sequence[str]]) -> list[str]:
    """Row ``i`` of the texts ``columns`` between the fixed ``pieces``: ``pieces[0] +
    columns[0][i] + pieces[1] + ... + columns[-1][i] + pieces[-1]`` (``len(columns) + 1``
    pieces), made without a Python step a row (many tags: a log line a tag)."""
    if not columns or len(pieces) != len(columns) + 1:
        raise ValueError(f"joined: {len(columns)} columns (at least one) take "
                         f"{len(columns) + 1} pieces, got {len(pieces)}")
    if len({len(column) for column in columns}) > 1:
        raise ValueError("joined: columns of different lengths")
    parts: list[Iterable[str]] = [itertools.repeat(pieces[0])]
    for column, piece in zip(columns, pieces[1:], strict=True):
        parts += [column, itertools.repeat(piece)]
    # (the pieces repeat without end: the rows stop with the columns, checked above)
    return list(map("".join, zip(*parts, strict=False)))


EXACT_COUNT = 2.0**53  # float64 holds every whole number below this, and not all above


def rounded_count(x: float) -> str:
    """A weighted count (``auc``'s ``num``) rounded to a whole number as ``%d``; from
    2**53 on, where float64 no longer holds every whole number (weights of 1e100), as
    Python's shortest repr (``1e+100``) rather than hundreds of made-up digits."""
    return "%d" % round(x) if abs(x) < EXACT_COUNT else repr(float(x))


def json_count(x: float) -> int | float:
    """A count for JSON: an int when whole and exact (below 2**53), else a float."""
    if type(x) is int and -EXACT_COUNT < x < EXACT_COUNT:  # most counts (many tags)
        return x
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < EXACT_COUNT else x


def json_counts(xs: list[int | float]) -> list[int | float]:
    """:func:`json_count` of each (many tags: a column at a time; ints below 2**53, most
    counts, as they are)."""
    if (_all_ints(xs) and -EXACT_COUNT < min(xs, default=0)
            and max(xs, default=0) < EXACT_COUNT):
        return xs
    return [json_count(x) for x in xs]


def json_numbers(xs: list[float] | np.ndarray) -> list[float | None]:
    """:func:`json_number` of each Python float, or of each value of a float64 array in
    C-level passes (many tags: a column at a time)."""
    if isinstance(xs, np.ndarray):
        numbers = xs.astype(object)
        numbers[np.isnan(xs)] = None
        listed: list[float | None] = numbers.tolist()
        return listed
    return [None if x != x else x for x in xs]


def json_number(x: float) -> float | int | None:
    """A float for JSON: NaN becomes None (``null``), whole counts stay ints elsewhere; a
    numpy scalar becomes the Python number it holds (``to_dict()`` gives plain values)."""
    if type(x) is float:  # most values (many tags)
        return None if x != x else x
    if isinstance(x, np.generic):
        x = x.item()
    return None if isinstance(x, float) and math.isnan(x) else x


def json_fields(result: Any) -> dict[str, Any]:
    """The fields of a result dataclass for JSON, in order, NaN as None."""
    return {name: json_number(value) for name, value in asdict(result).items()}
