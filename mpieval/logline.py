"""Number formats of the Abacus log lines: ``%g`` for values, whole numbers for counts."""

from __future__ import annotations

import math
from collections.abc import Sequence
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
    if all(type(x) is int for x in xs):
        return list(map(str, xs))
    return ["%d" % x if float(x).is_integer() else count(x) for x in xs]


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
    if (all(type(x) is int for x in xs) and -EXACT_COUNT < min(xs, default=0)
            and max(xs, default=0) < EXACT_COUNT):
        return xs
    return [json_count(x) for x in xs]


def json_numbers(xs: list[float]) -> list[float | None]:
    """:func:`json_number` of each Python float (many tags: a column at a time)."""
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
