"""Checks at the boundary: every array a user hands in is checked here, never fixed up.

Each check raises :class:`~mpieval.errors.InputError` naming the field, the number of
bad values and the first bad index. The fast path is one ``min``/``max`` pass; the
slow path that locates the bad values runs only when something is wrong.
"""

from __future__ import annotations

import re
import sys
from argparse import ArgumentTypeError
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpieval import _core
from mpieval.errors import InputError, OptionHint


def from_tensor(values: object) -> object:
    """A torch or Paddle tensor as a numpy array, detached: a CPU tensor without a copy
    (its memory), one on another device copied to the host; bfloat16 (which numpy lacks)
    widened to float32, exactly. Anything else as it is (neither torch nor paddle is ever
    imported here)."""
    paddle = sys.modules.get("paddle")
    if paddle is not None and isinstance(values, paddle.Tensor):
        return _from_paddle(paddle, values)
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(values, torch.Tensor):
        return values
    tensor = values.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.resolve_conj().resolve_neg().numpy()


def _from_paddle(paddle: Any, values: Any) -> np.ndarray:
    """:func:`from_tensor` of a Paddle tensor (read through DLPack: no copy on the CPU)."""
    tensor = values.detach()
    if not tensor.place.is_cpu_place():
        tensor = tensor.cpu()
    if tensor.dtype == paddle.bfloat16:
        tensor = tensor.astype("float32")
    return np.from_dlpack(tensor)


def unmasked(field: str, values: object) -> object:
    """``values``, or the data of a ``numpy.ma`` masked array that masks nothing.

    A masked value is refused, never dropped or read as its hidden data: say which rows
    count by passing only those. A masked array exists only once ``numpy.ma`` is imported,
    so it is looked for only then (``np.ma`` would import it, 20-40 ms of every run).
    """
    ma = sys.modules.get("numpy.ma")
    if ma is not None and isinstance(values, ma.MaskedArray):
        mask = ma.getmaskarray(values)
        if mask.any():
            where = np.flatnonzero(mask.ravel())
            raise InputError(field, "is a masked array with masked values (numpy.ma): "
                             "pass only the rows that count", count=len(where),
                             first_index=int(where[0]))
        return values.data
    return values


@dataclass(frozen=True)
class Coded:
    """A column of few distinct values as codes into them: row ``i`` holds
    ``values[codes[i]]`` (how the command line passes a tag column: dictionary-encoded
    once a batch, not a string a row). A value need not be used by any row."""

    values: tuple[Any, ...]
    codes: np.ndarray
    # Set only by the file reader, which makes the codes (uint16, in order of first
    # appearance): every value is used by some row and every code indexes ``values``, so
    # the tag checks skip scanning the codes for that. Rows taken from it drop the flag.
    _dense: bool = field(default=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows: Any) -> Coded:
        """The rows ``rows`` (a mask or indexes), with the same values."""
        return Coded(self.values, self.codes[rows])


def as_vector(field: str, values: object) -> np.ndarray:
    """``values`` (a sequence, numpy array or torch tensor) as a 1-D numeric (bool, int,
    uint or float) numpy array, without copying (a masked array only when nothing is
    masked: :func:`unmasked`)."""
    check_given(field, values)
    array = np.asarray(unmasked(field, from_tensor(values)))
    if array.dtype.kind not in "biuf":  # before the shape: "abc" is text, not a 0-d array
        got = f"the text {values!r}" if isinstance(values, (str, bytes)) else (
            f"dtype {array.dtype}")
        raise InputError(field, f"must be numeric, got {got}")
    if array.ndim != 1:
        raise InputError(field, f"must be 1-D, got an array of shape {array.shape}")
    return array


def check_given(field: str, values: object) -> None:
    """A required input is not ``None`` (which numpy would read as a 0-d object array)."""
    if values is None:
        raise InputError(field, "missing: got None where an array is required")


def check_lengths(**arrays: np.ndarray | None) -> int:
    """The common length of the arrays given (``None`` entries are skipped)."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        first = next(iter(lengths))
        raise InputError(first, f"length mismatch: {detail}")
    return next(iter(lengths.values()), 0)


def _fail(field: str, bad: np.ndarray, values: np.ndarray, problem: str,
          hint: OptionHint | None = None) -> None:
    where = np.flatnonzero(bad)
    first = int(where[0])
    raise InputError(
        field, problem, count=len(where), first_index=first, value=values[first].item(),
        hint=hint,
    )


def check_interval(field: str, values: np.ndarray, low: float, high: float) -> None:
    """Every value finite and in ``[low, high]``."""
    if len(values) == 0 or values.dtype.kind == "b":
        return
    lo, hi = values.min(), values.max()  # NaN propagates, so it fails the test below
    if low <= lo and hi <= high:
        return
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values)
        if bad.any():
            _fail(field, bad, values, "must be finite")
    _fail(field, (values < low) | (values > high), values, f"must be in [{low:g}, {high:g}]")


def check_binary(field: str, values: np.ndarray, hint: OptionHint | None = None) -> None:
    """Every value is 0 or 1; ``hint``: the option that would accept other values."""
    check_interval(field, values, 0, 1)
    if values.dtype.kind == "f":
        bad = (values != 0) & (values != 1)
        if bad.any():
            _fail(field, bad, values, "must be 0 or 1", hint)


_NARROWED = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64, np.float32,
                                        np.float64, np.bool_))  # binary_uint8's one pass


def binary_uint8(field: str, values: np.ndarray, hint: OptionHint | None = None,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``values`` checked as by :func:`check_binary`, as a uint8 array of 0 and 1 (``out``
    if given, a uint8 array of their length, else a new one): one compiled pass for the
    usual dtypes (no temporary arrays), numpy for the others."""
    if out is None or len(out) != len(values) or out.dtype != np.uint8:
        out = np.empty(len(values), np.uint8)
    if values.dtype in _NARROWED and values.flags.c_contiguous:
        if _core.labels.binary_to_u8(values, out) < 0:
            return out
    check_binary(field, values, hint)  # raises, naming the first bad value
    out[...] = values
    return out


EXACT_FLOAT_LIMIT = 2**53  # integers beyond this are not exact as float64


def check_finite(field: str, values: np.ndarray) -> None:
    """Every value finite, and exact as float64 (integers within +-2**53)."""
    if len(values) == 0 or values.dtype.kind == "b":
        return
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values)
        if bad.any():
            _fail(field, bad, values, "must be finite")
    elif values.dtype.itemsize >= 8 and not (
        -EXACT_FLOAT_LIMIT <= values.min() and values.max() <= EXACT_FLOAT_LIMIT
    ):
        bad = (values < -EXACT_FLOAT_LIMIT) | (values > EXACT_FLOAT_LIMIT)
        _fail(field, bad, values, "must be within +-2**53 (exact as float64)")


def is_binary(values: np.ndarray) -> bool:
    """Whether every value of an array already known to lie in [0, 1] is 0 or 1."""
    if values.dtype.kind in "biu":
        return True
    return bool(np.all((values == 0) | (values == 1)))


def check_weight(field: str, values: np.ndarray) -> None:
    """Every weight finite (exact as float64) and non-negative, and their sum finite."""
    check_finite(field, values)
    if len(values) == 0 or values.dtype.kind == "b":
        return
    bad = values < 0
    if bad.any():
        _fail(field, bad, values, "must be >= 0")
    with np.errstate(over="ignore"):
        total = float(np.sum(values, dtype=np.float64))
    if not np.isfinite(total):  # float64 sums of the weights (the state) would overflow
        with np.errstate(over="ignore"):
            running = np.cumsum(values, dtype=np.float64)
        _fail(field, ~np.isfinite(running), values, "too large: the weights sum past "
              "float64's range (1.8e308); scale them down (auc, the ctrs and copc do not "
              "change when every weight is multiplied by one number)")


# -- options ---------------------------------------------------------------------------


def integer_text(text: str) -> int:
    """A flag's text as an integer, for the option's check to judge (a flag's ``parse``)."""
    try:
        return int(text)
    except ValueError:
        raise ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(name: str, value: object) -> int:
    """An option that is a whole number >= 1 (``True`` is not a number here)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise InputError(name, f"must be a positive integer, got {value!r}")
    return int(value)


def window_rows(name: str, value: object) -> int | None:
    """A window's size in rows: a whole number >= 1, or ``None`` (no window)."""
    return None if value is None else positive_int(name, value)


# The auc histogram's upper bound: two float64 counts per bucket, 2 GiB per rank at most
# (the state is also copied when the ranks sum it).
MAX_TABLE_SIZE = 2**27


def auc_table_size(name: str, value: object) -> int:
    """The ``auc`` table size: a whole number from 1 to :data:`MAX_TABLE_SIZE`."""
    size = positive_int(name, value)
    if size > MAX_TABLE_SIZE:
        raise InputError(name, f"must be at most {MAX_TABLE_SIZE:,} (2**27 buckets, "
                         f"{16 * MAX_TABLE_SIZE >> 30} GiB of histogram per rank), got {size:,}")
    return size


def boolean(name: str, value: object) -> bool:
    """An option that is ``True`` or ``False``."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(name, f"must be true or false, got {value!r}")
    return bool(value)


def one_of(*allowed: str) -> Callable[[str, object], str]:
    """A check for an option whose value is one of ``allowed``."""

    def check(name: str, value: object) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise InputError(name, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    return check


# -- names in the Abacus log lines ---------------------------------------------------


_BREAKS_LOG_WORD = re.compile(r"[\s=]")
"""Whitespace (the same characters as ``str.isspace``) or ``=``."""


def check_log_word(field: str, value: str, *, empty: bool = False) -> str:
    """A metric name or tag as it appears in a space-separated ``key=value`` log line: no
    whitespace (space, tab, newline) or ``=`` that would split it, and not empty unless
    ``empty`` (a tag may be empty: ``Tag=`` still parses)."""
    if not value and not empty:
        raise InputError(field, "must not be empty")
    if _BREAKS_LOG_WORD.search(value) is None:  # one look (many tags: a call a value)
        return value
    bad = next((c for c in value if c.isspace() or c == "="), None)
    if bad is not None:
        raise InputError(field, f"{value!r} holds {bad!r}, which would break the "
                         "space-separated key=value log line", value=value)
    return value


def all_log_words(values: list[str], *, empty: bool = False) -> bool:
    """Whether :func:`check_log_word` passes every one of ``values`` (strs), in one look at
    them all (many tags: no call a value); False for a value that is not a str too (the
    caller checks each then, for the error of the first that fails)."""
    try:
        joined = "a".join(values)
    except TypeError:
        return False
    return _BREAKS_LOG_WORD.search(joined) is None and (empty or all(values))


def check_metric_mapping(metrics: object) -> None:
    """``metrics`` maps names (strings) to metrics (objects with ``update``, ``local_sums``
    and ``finish``, as :class:`mpieval.metric.Metric`): a TypeError naming the entry
    otherwise, raised when an Evaluator is built rather than at ``compute()``."""
    if not isinstance(metrics, Mapping):
        raise TypeError("metrics must be a mapping of name -> metric, "
                        f"got {type(metrics).__name__}")
    for name, metric in metrics.items():
        if not isinstance(name, str):
            raise TypeError(f"metric name {name!r} must be a string")
        if not all(callable(getattr(metric, method, None))
                   for method in ("update", "local_sums", "finish")):
            raise TypeError(f"metric {name!r} must be a metric (e.g. AucMetric()), "
                            f"got {type(metric).__name__} {metric!r}")


def column_name(name: str, value: object) -> str | None:
    """An option naming model B's pred column (``compare``): None or a non-empty string."""
    if value is None or (isinstance(value, str) and value):
        return value
    raise InputError(name, f"must be the name of model B's pred (a non-empty string), "
                     f"got {value!r}")
