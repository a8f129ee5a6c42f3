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


def values(xs: Sequence[float]) -> list[str]:
    """:func:`value` of each (many tags: a column of values at once, without a call
    each)."""
    return ["nan" if x != x else "%g" % x for x in xs]


def counts(xs: Sequence[float]) -> list[str]:
    """:func:`count` of each (many tags: a column of counts at once)."""
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
