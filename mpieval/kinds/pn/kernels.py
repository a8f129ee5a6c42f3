"""PN pair counts inside each user, exact, in O(n log n) without enumerating pairs.

For the rows of one user, every pair with different labels is ordered so that
``label_i < label_j``; it is *positive* when ``pred_i < pred_j``, *negative* when
``pred_i > pred_j`` and a *tie* when the preds are equal. With ``m`` rows::

    pairs with different labels  D = C(m, 2) - sum over label groups C(g, 2)
    ties                         T = sum over pred groups C(g, 2)
                                     - sum over (label, pred) groups C(g, 2)
    negative                     N = inversions of the preds once the rows are sorted
                                     by (label, pred): pairs i < j with pred_i > pred_j
                                     (rows of one label are sorted by pred, so only
                                     pairs with label_i < label_j can be inverted)
    positive                     P = D - T - N

Sorting by (label, pred) and counting inversions are both a merge sort
(:mod:`mpieval.kernels.sort`; the pass: ``kernels.hpp`` beside this module), per user, in scratch
buffers as long as the largest user: a user of ``m`` rows is two sorts of ``m`` values.

A long user (``LONG_USER`` rows or more, a heavy user's case) with at most ``MAX_CODES``
distinct labels is counted in one radix sort instead: each row's label becomes its rank
``c`` among the user's distinct labels, the rows are sorted by pred (the bits of the
float64 in the doubles' order, :func:`mpieval.kernels.sort.radix_sort`), and one pass over
the runs of tied preds counts, for each row of a run, the rows below the run with a
smaller code (positive pairs) and a larger one (negative pairs), from a Fenwick tree of
the codes, and the rows of its run with another code (ties). The same counts as the two
merge sorts; 18 bytes of scratch a row of the longest such user instead of 32.
Counts are int64.
"""

from __future__ import annotations

import numpy as np

from mpieval import _core

LONG_USER = 256
"""Users of this many rows or more are counted in one radix sort (module doc)."""
MAX_CODES = 64
"""The most distinct labels of a user counted so (``kernels.hpp``'s ``MAX_CODES``)."""


def pair_counts_per_user(
    starts: np.ndarray, pred: np.ndarray, label: np.ndarray, long_user: int = LONG_USER
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-user (positive, negative, tie) pair counts, int64 arrays of ``len(starts) - 1``.

    Rows ``starts[u]:starts[u + 1]`` are user ``u``'s (any order inside a user);
    ``pred`` and ``label`` are finite (checked by the caller) and read as float64. Users
    of ``long_user`` rows or more take the one-sort pass (module doc; the tests set it
    low to check both passes against each other).
    """
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    pred = np.ascontiguousarray(pred, dtype=np.float64)
    label = np.ascontiguousarray(label, dtype=np.float64)
    if len(starts) == 0:
        raise ValueError("starts must hold at least the final row count")
    if starts[0] != 0 or starts[-1] != len(pred) or len(label) != len(pred):
        raise ValueError("starts must run from 0 to the number of rows of pred and label")
    if np.any(np.diff(starts) < 0):
        raise ValueError("starts must be non-decreasing")
    users = len(starts) - 1
    positive = np.zeros(users, np.int64)
    negative = np.zeros(users, np.int64)
    tie = np.zeros(users, np.int64)
    _core.pn.pair_counts_per_user(starts, pred, label, positive, negative, tie,
                                  max(int(long_user), 2))
    return positive, negative, tie


def pair_counts(starts: np.ndarray, pred: np.ndarray, label: np.ndarray,
                long_user: int = LONG_USER) -> tuple[int, int, int]:
    """Total (positive, negative, tie) pair counts over the users delimited by ``starts``."""
    positive, negative, tie = pair_counts_per_user(starts, pred, label, long_user)
    return int(positive.sum()), int(negative.sum()), int(tie.sum())


def grouped(sorted_keys: np.ndarray, order: np.ndarray, pred: np.ndarray, label: np.ndarray,
            checks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """``(starts, pred, label, collision)`` of rows grouped by user from their uint64 keys
    sorted with the rows' uint32 numbers (``order``): each user's first row and the rows'
    count (int64), the rows' ``pred`` and ``label`` (each float32 or float64, else read as
    float64) as float64 in that order, and whether two rows of one key have different
    uint32 ``checks`` (None: not compared). One compiled pass (``kernels.hpp``). A writable
    contiguous uint64 ``sorted_keys`` is consumed: the preds take its place (no more memory
    for them); another is copied first."""
    n = len(sorted_keys)
    keys = sorted_keys
    if not (keys.dtype == np.uint64 and keys.flags.c_contiguous and keys.flags.writeable):
        keys = np.array(keys, dtype=np.uint64)
    out_label = np.empty(n)
    starts = np.empty(n + 1, dtype=np.int64)
    users, collision = _core.pn.grouped(
        keys, np.ascontiguousarray(order, dtype=np.uint32),
        _floats(pred), _floats(label),
        None if checks is None else np.ascontiguousarray(checks, dtype=np.uint32),
        out_label, starts)
    return starts[: users + 1], keys.view(np.float64), out_label, bool(collision)


def _floats(values: np.ndarray) -> np.ndarray:
    """``values`` contiguous, as float32 or float64 (as they are when they are either)."""
    dtype = values.dtype if values.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(values, dtype=dtype)
