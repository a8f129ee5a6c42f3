"""Per-user rows, shared by the per-user kinds (``wuauc``, ``pn``).

Three pieces:

- **keys**: :func:`uid_keys` turns a uid column into uint64 keys. Integer uids (any
  int dtype, or whole floats) are their own key (an int64 is read as its two's
  complement uint64), so distinct integers never collide. Strings and bytes get a
  stable 64-bit hash (:mod:`mpieval.kernels.users`), the same on every rank, host and
  run; a second, independent hash (:func:`uid_keys_checked`) travels with the rows so
  that a collision of the first is detected, never silently merged.
  :func:`group_keys` does the same for a key of several columns (GAUC's (user, position)).
- **storage**: :class:`RowBuffer` keeps rows in growing typed arrays (capacity doubles;
  untouched capacity costs no resident memory).
- **exchange**: :func:`gather_by_user` (collective) moves every row to the rank that owns
  its user, ``mix64(key) mod size``, with :meth:`Comm.exchange` (``Alltoall`` of counts,
  ``Alltoallv`` per typed column), and sorts each rank's rows so that every user's rows
  are contiguous: a :class:`UserRows`. Its two steps are public too:
  :func:`exchange_to_owners` (collective) and :func:`group_rows` (local), for a kind that
  groups its rows another way after the exchange.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from mpieval.comm import Comm
from mpieval.errors import InputError, UidCollisionError
from mpieval.kernels import users as kernels

KEY_DTYPE = np.dtype(np.uint64)
_EXACT_FLOAT_LIMIT = 2.0**53  # whole floats above this are not exact integers
_KEY, _CHECK = "\0key", "\0check"  # exchange column names no caller's column has


# -- keys ------------------------------------------------------------------------------


def uid_keys(field: str, uid: Any) -> np.ndarray:
    """uint64 keys of a 1-D uid column (see the module docstring); raises
    :class:`InputError` naming ``field`` for missing, NaN, empty or non-id values."""
    return uid_keys_checked(field, uid)[0]


def uid_keys_checked(field: str, uid: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(keys, checks)``: the uint64 keys and, for hashed (string/bytes) uids, a second
    independent 64-bit hash to pass to :func:`gather_by_user`; ``None`` for integer uids,
    whose keys are exact."""
    values = _as_ids(field, uid)
    if values.dtype.kind in "iu":
        return values.astype(KEY_DTYPE, copy=False), None
    return kernels.hash_strings(values)


def group_keys(columns: Mapping[str, Any]) -> np.ndarray:
    """uint64 keys of a group made of several key columns (e.g. user and position)."""
    return group_keys_checked(columns)[0]


def group_keys_checked(columns: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """``(keys, checks)`` of a several-column group key. One column is :func:`uid_keys_checked`;
    with more, both are independent hashes of the per-column keys (and checks)."""
    if not columns:
        raise InputError("key", "at least one key column is needed")
    if len(columns) == 1:
        ((field, values),) = columns.items()
        return uid_keys_checked(field, values)
    parts = []
    lengths = {}
    for field, values in columns.items():
        key, check = uid_keys_checked(field, values)
        lengths[field] = len(key)
        parts.append(key)
        if check is not None:
            parts.append(check)
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise InputError(next(iter(lengths)), f"length mismatch: {detail}")
    seeds = kernels.SEED_GROUP
    return kernels.combine_keys(parts, seeds[0]), kernels.combine_keys(parts, seeds[1])


def _as_ids(field: str, uid: Any) -> np.ndarray:
    """The uid column as a 1-D int (``i``/``u``) or string (``U``/``S``) array, checked."""
    values = np.asarray(uid)
    if values.ndim != 1:
        raise InputError(field, f"must be 1-D, got an array of shape {values.shape}")
    kind = values.dtype.kind
    if kind in "iu":
        return values
    if kind == "f":
        return _whole_floats(field, values)
    if kind in "US":
        _check_not_empty(field, values)
        return values
    if kind == "O":
        return _from_objects(field, values)
    raise InputError(field, f"must be integers or strings, got dtype {values.dtype}")


def _whole_floats(field: str, values: np.ndarray) -> np.ndarray:
    """Float ids (as a reader with missing values yields them) if every one is a whole
    number that a float holds exactly; NaN is a missing uid."""
    bad = np.isnan(values)
    if bad.any():
        _fail(field, bad, values, "is missing (NaN)")
    bad = (values != np.floor(values)) | (np.abs(values) > _EXACT_FLOAT_LIMIT)
    if bad.any():
        _fail(field, bad, values, "must be a whole number below 2**53 (or an integer/string)")
    return values.astype(np.int64)


def _check_not_empty(field: str, values: np.ndarray) -> None:
    if len(values) and values.dtype.itemsize == 0:
        raise InputError(field, "is empty (a missing uid)", count=len(values), first_index=0)
    if len(values):
        bad = values == values.dtype.type()
        if bad.any():
            _fail(field, bad, values, "is empty (a missing uid)")


def _object_kind(value: object) -> int:
    """0 str, 1 bytes, 2 int, 3 missing (None or NaN), 4 anything else."""
    if isinstance(value, str):
        return 0
    if isinstance(value, bytes):
        return 1
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return 2
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return 3
    return 4


_OBJECT_KIND = np.frompyfunc(_object_kind, 1, 1)


def _from_objects(field: str, values: np.ndarray) -> np.ndarray:
    """An object column of str, bytes or int as a typed array; None/NaN are missing."""
    kinds = _OBJECT_KIND(values).astype(np.int8) if len(values) else np.zeros(0, np.int8)
    for bad_kind, problem in ((3, "is missing (None or NaN)"), (4, "must be integers or strings")):
        bad = kinds == bad_kind
        if bad.any():
            _fail(field, bad, values, problem)
    if len(values) and (kinds != kinds[0]).any():
        _fail(field, kinds != kinds[0], values, "mixes strings, bytes and integers")
    if len(values) and kinds[0] == 2:
        try:
            return values.astype(np.int64)
        except OverflowError:
            return values.astype(np.uint64)
    typed = values.astype(bytes if len(values) and kinds[0] == 1 else str)
    _check_not_empty(field, typed)
    return typed


def _fail(field: str, bad: np.ndarray, values: np.ndarray, problem: str) -> None:
    where = np.flatnonzero(bad)
    first = int(where[0])
    value = values[first]
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, bytes):  # ids read as bytes: show them as the text they are
        value = value.decode("utf-8", errors="backslashreplace")
    raise InputError(field, problem, count=len(where), first_index=first, value=value)


# -- storage ---------------------------------------------------------------------------


class RowBuffer:
    """Typed columns that grow by appending rows; capacity doubles (amortised O(1) per row).

    >>> rows = RowBuffer({"key": np.uint64, "pred": np.float64})
    >>> rows.append(key=keys, pred=pred)
    >>> rows.columns()["pred"]            # a view of the rows so far

    ``append`` accepts only values that cast to the column dtype safely (no silent
    narrowing); untouched capacity is never written, so it costs address space only.
    """

    MIN_CAPACITY = 1024

    def __init__(self, dtypes: Mapping[str, DTypeLike]) -> None:
        self.dtypes = {name: np.dtype(dtype) for name, dtype in dtypes.items()}
        self._length = 0
        self._arrays = {name: np.empty(0, dtype=dt) for name, dt in self.dtypes.items()}

    def __len__(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        return len(next(iter(self._arrays.values()), ()))

    @property
    def row_nbytes(self) -> int:
        """Bytes one row costs (the sum of the column item sizes)."""
        return sum(dt.itemsize for dt in self.dtypes.values())

    @property
    def nbytes(self) -> int:
        """Bytes allocated: ``capacity * row_nbytes`` (only ``len * row_nbytes`` written)."""
        return self.capacity * self.row_nbytes

    def append(self, **columns: Any) -> None:
        """Append rows: every column of the buffer, 1-D, of one length."""
        if set(columns) != set(self.dtypes):
            raise ValueError(f"append needs exactly the columns {sorted(self.dtypes)}, "
                             f"got {sorted(columns)}")
        arrays = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(a) if a.ndim == 1 else -1 for a in arrays.values()}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError("append needs 1-D columns of one length")
        for name, array in arrays.items():
            if not np.can_cast(array.dtype, self.dtypes[name], "safe"):
                raise TypeError(f"column {name!r}: {array.dtype} does not cast safely to "
                                f"{self.dtypes[name]}")
        count = lengths.pop()
        self._reserve(self._length + count)
        end = self._length + count
        for name, array in arrays.items():
            self._arrays[name][self._length : end] = array
        self._length = end

    def _reserve(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        capacity = max(needed, 2 * self.capacity, self.MIN_CAPACITY)
        for name, old in self._arrays.items():
            new = np.empty(capacity, dtype=old.dtype)
            new[: self._length] = old[: self._length]
            self._arrays[name] = new

    def widen(self, name: str, dtype: DTypeLike) -> None:
        """Store column ``name`` as ``dtype`` from now on (a safe cast, e.g. float32 to
        float64: the rows so far keep their values exactly)."""
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtypes[name], dtype, "safe"):
            raise TypeError(f"column {name!r}: {self.dtypes[name]} does not widen to {dtype}")
        old = self._arrays[name]
        new = np.empty(len(old), dtype=dtype)
        new[: self._length] = old[: self._length]
        self._arrays[name] = new
        self.dtypes[name] = dtype

    def columns(self) -> dict[str, np.ndarray]:
        """Views of the filled rows, by column name (valid until the next append/clear)."""
        return {name: array[: self._length] for name, array in self._arrays.items()}

    def clear(self) -> None:
        """Forget every row and release the memory."""
        self._length = 0
        self._arrays = {name: np.empty(0, dtype=dt) for name, dt in self.dtypes.items()}


# -- exchange --------------------------------------------------------------------------


@dataclass(frozen=True)
class UserRows:
    """The rows of the users this rank owns, each user's rows contiguous.

    - ``keys``: uint64 key of every row, non-decreasing (sorted by key);
    - ``columns``: the other columns, in the same row order;
    - ``starts``: int64, ``starts[u]`` is the first row of the ``u``-th user and
      ``starts[-1] == len(keys)``; so user ``u`` is rows ``starts[u]:starts[u + 1]`` and
      ``np.diff(starts)`` are the row counts (length ``n_users + 1``; ``[0]`` if no rows).

    Within a user the rows are in arrival order (by source rank, then original order).
    """

    keys: np.ndarray
    columns: dict[str, np.ndarray]
    starts: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def n_users(self) -> int:
        return len(self.starts) - 1

    @property
    def counts(self) -> np.ndarray:
        """Rows per user."""
        return np.diff(self.starts)

    @property
    def user_keys(self) -> np.ndarray:
        """The key of each user (sorted, distinct)."""
        return self.keys[self.starts[:-1]]


def gather_by_user(
    comm: Comm,
    keys: np.ndarray,
    columns: Mapping[str, np.ndarray],
    *,
    checks: np.ndarray | None = None,
    field: str = "uid",
) -> UserRows:
    """Collective: every rank's rows, moved to the rank that owns their user and grouped.

    :func:`exchange_to_owners`, then :func:`group_rows` on each rank; a uid collision on
    any rank raises :class:`UidCollisionError` on every rank. The inputs are not modified.
    """
    owned = exchange_to_owners(comm, keys, columns, checks=checks)
    error, rows = None, None
    try:
        rows = group_rows(owned.keys, owned.columns, checks=owned.checks, field=field)
    except UidCollisionError as collision:
        error = collision
    comm.agree(error)
    assert rows is not None
    return rows


@dataclass(frozen=True)
class OwnedRows:
    """The rows a rank owns after :func:`exchange_to_owners`, in arrival order (by source
    rank, then original order); ``checks`` as given (``None`` on every rank or none)."""

    keys: np.ndarray
    checks: np.ndarray | None
    columns: dict[str, np.ndarray]


def exchange_to_owners(
    comm: Comm,
    keys: np.ndarray,
    columns: Mapping[str, np.ndarray],
    *,
    checks: np.ndarray | None = None,
) -> OwnedRows:
    """Collective: send every row to the rank that owns its key, ``mix64(key) mod size``.

    One small ``allgather`` checks that every rank passes the same column names and
    dtypes, then :meth:`Comm.exchange` moves the rows (``Alltoall`` of counts,
    ``Alltoallv`` per column). With one rank the arrays come back as they are.
    """
    local = {_KEY: np.asarray(keys, dtype=KEY_DTYPE)}
    if checks is not None:
        local[_CHECK] = np.asarray(checks, dtype=KEY_DTYPE)
    local.update({name: np.asarray(values) for name, values in columns.items()})
    _agree_layout(comm, local)
    if comm.size > 1:
        local = comm.exchange(kernels.owner_of(local[_KEY], comm.size), local)
    owned_keys = local.pop(_KEY)
    owned_checks = local.pop(_CHECK, None)
    return OwnedRows(keys=owned_keys, checks=owned_checks, columns=local)


def group_rows(
    keys: np.ndarray,
    columns: Mapping[str, np.ndarray],
    *,
    checks: np.ndarray | None = None,
    field: str = "uid",
) -> UserRows:
    """Local: the rows sorted by key (stable). ``checks`` must be constant within each key,
    else :class:`UidCollisionError`."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if checks is not None:
        collision = _collision(field, sorted_keys, checks[order])
        if collision is not None:
            raise collision
    grouped = {name: values[order] for name, values in columns.items()}
    return UserRows(keys=sorted_keys, columns=grouped, starts=_starts(sorted_keys))


def _agree_layout(comm: Comm, local: Mapping[str, np.ndarray]) -> None:
    """Collective: every rank has the same columns and dtypes, of one length each."""
    problem = None
    lengths = {len(v) if v.ndim == 1 else -1 for v in local.values()}
    if len(lengths) != 1 or -1 in lengths:
        problem = "the key and columns must be 1-D and of one length"
    layout = tuple((name, values.dtype.str) for name, values in local.items())
    views = comm.allgather((layout, problem))
    problems = [(rank, p) for rank, (_, p) in enumerate(views) if p is not None]
    if problems:
        rank, text = problems[0]
        raise ValueError(f"exchange_to_owners: rank {rank}: {text}")
    if any(other != layout for other, _ in views):
        raise ValueError(
            f"exchange_to_owners: ranks pass different columns: {[v for v, _ in views]}"
        )


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """First row of each run of equal keys, plus the total length."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    boundaries = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return np.concatenate(([0], boundaries, [n])).astype(np.int64)


def _collision(field: str, keys: np.ndarray, checks: np.ndarray) -> UidCollisionError | None:
    if len(keys) < 2:
        return None
    clash = (keys[1:] == keys[:-1]) & (checks[1:] != checks[:-1])
    if not clash.any():
        return None
    key = int(keys[1:][clash][0])
    return UidCollisionError(
        f"{field}: {int(clash.sum())} rows share the 64-bit key {key:#018x} with a "
        "different uid (a hash collision); rename one of the uids"
    )
