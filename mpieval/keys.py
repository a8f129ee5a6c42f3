"""uid keys: a uid column as uint64 keys, shared by the per-user kinds.

Integer uids (any int dtype, or whole floats) are their own key (an int64 is read as its
two's complement uint64), so distinct integers never collide. Strings and bytes (and
pyarrow text, as its UTF-8 bytes: what the command line reads) get a stable 64-bit hash
(:mod:`mpieval.kernels.keys`), the same on every rank, host and run; a second,
independent hash (:func:`uid_keys_checked`) travels with the rows so that a collision of
the first is detected (:mod:`mpieval.exchange`), never silently merged.
:func:`group_keys` does the same for a key of several columns (GAUC's (user, position)).

Local: no MPI. Bad uids raise :class:`InputError` naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpieval.errors import InputError
from mpieval.kernels import keys as kernels
from mpieval.validation import check_given, from_tensor, unmasked

KEY_DTYPE = np.dtype(np.uint64)
_EXACT_FLOAT_LIMIT = 2.0**53  # whole floats above this are not exact integers


@dataclass(frozen=True)
class HashedIds:
    """Ids already made keys (:func:`hashed_ids`), given again as the ids of an
    ``update()`` (``uid=``) or taken by rows (``ids[rows]``), so that the rows of one batch
    given to several metrics (a sliced metric's base and slices) are hashed once.
    ``checks``: the 64-bit checks of hashed ids (None: integer ids)."""

    keys: np.ndarray
    checks: np.ndarray | None

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, rows: Any) -> HashedIds:
        return HashedIds(self.keys[rows], None if self.checks is None else self.checks[rows])


def hashed_ids(field: str, uid: Any) -> HashedIds:
    """``uid`` made keys once (:class:`HashedIds`); an :class:`InputError` naming ``field``
    as :func:`uid_keys_checked` raises it."""
    return uid if isinstance(uid, HashedIds) else HashedIds(*uid_keys_checked(field, uid))


def uid_keys(field: str, uid: Any) -> np.ndarray:
    """uint64 keys of a 1-D uid column (see the module docstring); raises
    :class:`InputError` naming ``field`` for missing, NaN, empty or non-id values."""
    return uid_keys_checked(field, uid)[0]


def uid_keys_checked(field: str, uid: Any, check_dtype: type = np.uint64,
                     out: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(keys, checks)``: the uint64 keys and, for hashed (string/bytes) uids, a second
    independent 64-bit hash to pass to :func:`mpieval.exchange.gather_by_user` (with
    ``check_dtype`` uint32, its low 32 bits); ``None`` for integer uids, whose keys are
    exact. ``out``: where Arrow text may be hashed to (keys and checks of its length),
    a hint."""
    if isinstance(uid, HashedIds):
        checks = uid.checks
        return uid.keys, None if checks is None else checks.astype(check_dtype, copy=False)
    if _is_arrow(uid):
        return _arrow_keys(field, uid, check_dtype, out)
    values = _as_ids(field, uid)
    if values.dtype.kind in "iu":
        return values.astype(KEY_DTYPE, copy=False), None
    keys, checks = kernels.hash_strings(values)
    return keys, checks.astype(check_dtype, copy=False)


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


def _is_arrow(values: Any) -> bool:
    """Whether ``values`` is a pyarrow array (pyarrow is never imported here for others)."""
    return type(values).__module__.startswith("pyarrow")


def _arrow_keys(field: str, uid: Any, check_dtype: type,
                out: tuple[np.ndarray, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """Keys of a pyarrow array: text (string or binary, as its bytes: the key of the same
    bytes as a numpy ``S`` array) hashed from its buffers in one compiled pass, without a
    Python object or a fixed-width copy per row; integers as numpy integers."""
    import pyarrow as pa

    if isinstance(uid, pa.ChunkedArray):
        uid = uid.combine_chunks()
    kind = uid.type
    if pa.types.is_integer(kind):
        if uid.null_count:
            _fail_rows(field, np.asarray(uid.is_null()), "is missing (null)")
        return uid_keys_checked(field, uid.to_numpy(), check_dtype)
    wide = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
    if not (wide or pa.types.is_string(kind) or pa.types.is_binary(kind)):
        raise InputError(field, f"must be integers or strings, got the arrow type {kind}")
    if uid.null_count:
        _fail_rows(field, np.asarray(uid.is_null()), "is missing (null)")
    n = len(uid)
    offsets, data = text_buffers(uid)
    longest, first_empty = kernels.text_lengths(offsets)
    if first_empty >= 0:
        _fail_rows(field, offsets[1:] == offsets[:-1], "is empty (a missing uid)", value="")
    if out is not None and any(len(array) != n for array in out):
        out = None
    return kernels.hash_texts(offsets, data, longest, check_dtype, out)


def text_buffers(text: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a pyarrow string or binary array (without nulls), views of
    its buffers: value ``i`` is ``data[offsets[i]:offsets[i + 1]]``; int32 offsets, int64
    for the large types."""
    import pyarrow as pa

    wide = pa.types.is_large_string(text.type) or pa.types.is_large_binary(text.type)
    offset_type = np.dtype(np.int64 if wide else np.int32)
    _, offset_buffer, data_buffer = text.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=offset_type, count=len(text) + 1,
                            offset=text.offset * offset_type.itemsize)
    data = (np.zeros(0, np.uint8) if data_buffer is None
            else np.frombuffer(data_buffer, dtype=np.uint8))
    return offsets, data


def _fail_rows(field: str, bad: np.ndarray, problem: str, value: Any = None) -> None:
    """Raise :class:`InputError` for the rows where ``bad`` holds: how many, the first."""
    where = np.flatnonzero(bad)
    raise InputError(field, problem, count=len(where), first_index=int(where[0]), value=value)


def _as_ids(field: str, uid: Any) -> np.ndarray:
    """The uid column as a 1-D int (``i``/``u``) or string (``U``/``S``) array, checked."""
    check_given(field, uid)
    values = np.asarray(unmasked(field, from_tensor(uid)))
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
    """:func:`_fail_rows`, showing the first bad value of ``values``."""
    value = values[int(np.argmax(bad))]
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, bytes):  # ids read as bytes: show them as the text they are
        value = value.decode("utf-8", errors="backslashreplace")
    _fail_rows(field, bad, problem, value)
