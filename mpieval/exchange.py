"""The exchange of per-user rows to the rank that owns their user (the per-user kinds).

:func:`gather_by_user` (collective) moves every row to the rank that owns its user,
``mix64(key) mod size`` (:func:`mpieval.kernels.keys.owner_of`), with
:meth:`Comm.exchange` (``Alltoall`` of counts, ``Alltoallv`` per typed column), and sorts
each rank's rows so that every user's rows are contiguous: a :class:`UserRows`. Its two
steps are public too: :func:`exchange_to_owners` (collective) and :func:`group_rows`
(local), for a kind that groups its rows another way after the exchange. Keys come from
:mod:`mpieval.keys`; a second hash (``checks``) travelling with them detects a key
collision (:class:`UidCollisionError`).

The per-user kinds move their rows in steps instead (:func:`move_to_owners`): the rows a
metric kept since its last move, every column it keeps, taken out of its buffers and
appended to the owner's, so that a rank holds its own users' rows once while the
command reads (a :class:`Moved` record says how many are at their owner already);
``compute()`` moves the rest and groups the rows on each rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mpieval.comm import Comm
from mpieval.errors import UidCollisionError
from mpieval.kernels.codes import remap
from mpieval.kernels.keys import owner_of
from mpieval.kernels.moves import MAX_RANKS, owners, split_columns
from mpieval.kernels.sort import radix_order
from mpieval.keys import KEY_DTYPE
from mpieval.rows import RowBuffer

_KEY, _CHECK = "\0key", "\0check"  # exchange column names no caller's column has


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
        keys: np.ndarray = self.keys[self.starts[:-1]]
        return keys


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
    return comm.agreed(
        lambda: group_rows(owned.keys, owned.columns, checks=owned.checks, field=field),
        catch=UidCollisionError,
    )


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
        local[_CHECK] = np.asarray(checks)
    local.update({name: np.asarray(values) for name, values in columns.items()})
    _agree_layout(comm, local)
    if comm.size > 1:
        local = comm.exchange(owner_of(local[_KEY], comm.size), local)
    owned_keys = local.pop(_KEY)
    owned_checks = local.pop(_CHECK, None)
    return OwnedRows(keys=owned_keys, checks=owned_checks, columns=local)


def group_rows(
    keys: np.ndarray,
    columns: Mapping[str, np.ndarray],
    *,
    checks: np.ndarray | None = None,
    field: str = "uid",
    stable: bool = True,
) -> UserRows:
    """Local: the rows sorted by key (stable; ``stable=False``: the rows of a key in some
    order, the same for the same input, by one radix sort of uint64 keys:
    :func:`mpieval.kernels.sort.radix_order`). ``checks`` must be constant within each
    key, else :class:`UidCollisionError`."""
    if stable or keys.dtype != np.uint64 or len(keys) >= 2**32:
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
    else:
        sorted_keys = keys.copy()
        order = radix_order(sorted_keys)
    if checks is not None:
        collision = _collision(field, sorted_keys, checks[order])
        if collision is not None:
            raise collision
    grouped = {name: values[order] for name, values in columns.items()}
    return UserRows(keys=sorted_keys, columns=grouped, starts=_starts(sorted_keys))


@dataclass
class Moved:
    """How many of a metric's kept rows are at their owner rank already
    (:func:`move_to_owners`): the first ``count`` rows of ``rows``, the buffer they are
    in, for ``comm``'s ranks; ``tags``: how many of the metric's first tag values every
    rank of ``comm`` has, in the same order (a kind with tags). A metric whose state is
    new (reset, merged, loaded) has other buffers, so a record of the old one no longer
    counts (:meth:`at_owners`)."""

    comm: Comm
    rows: RowBuffer
    count: int = 0
    tags: int = 0
    stopped: bool = False  # the ranks disagreed (compute raises it): the rows stay

    def at_owners(self, comm: Comm, rows: RowBuffer) -> bool:
        """Whether this record holds for ``rows`` on ``comm``."""
        return self.comm is comm and self.rows is rows


def move_to_owners(comm: Comm, buffers: Sequence[RowBuffer], start: int,
                   recode: Mapping[str, tuple[np.ndarray, int]] | None = None,
                   aligned: Sequence[RowBuffer] = (), dest: np.ndarray | None = None) -> None:
    """Collective: every row of ``buffers`` from ``start`` on, moved to the rank that owns
    its key (the first buffer's ``key`` column), where it is appended; the rows before
    ``start`` stay (they are at their owner already). ``dest``: each of those rows' rank
    instead (uint16, one a row from ``start`` on; a hand-over of whole users), the same
    for every rank (given on every rank or on none).

    ``buffers`` are row-aligned (one row of each makes a row), and every rank passes the
    same columns of the same dtypes (the caller has agreed on them): every column a kind
    keeps travels, so a column added to a kind's rows travels too. What moves is taken
    out of the buffers first (:meth:`RowBuffer.split_off`), so a rank holds its kept rows
    once, plus this move's rows in transit. ``recode``: code columns of the first buffer
    mapped through a lookup before they travel (:func:`mpieval.kernels.codes.remap`; a
    kind's local tag codes to the codes every rank agreed on), each with the code of no
    value past the lookup's end, which stays as it is. ``aligned``: more
    buffers of the same rows (every rank passes the same number), moved alike.

    The rows arrive by source rank, then in their order (this rank's own where its rank
    comes). How (:func:`_move_packed`): one compiled pass finds each row's owner, one a
    column splits it into the rows that stay, compacted where they are, and the rows
    that leave, packed by owner into one buffer of records (each owner's rows column
    after column), which one ``Alltoallv`` sends (:meth:`Comm.exchange_packed`); the
    rows that stay never travel, and where the buffers' reserved room holds the move's
    rows (:meth:`RowBuffer.free_rows`) every received column is copied once, into it.
    """
    moving = max(len(buffers[0]) - start, 0)
    if dest is not None and len(dest) != moving:
        raise ValueError(f"move_to_owners: {len(dest)} ranks for {moving} rows")  # none moved
    buffers = [*buffers, *aligned]
    tails = [buffer.split_off(start) for buffer in buffers]
    for name, (lookup, none) in (recode or {}).items():
        codes = tails[0][name]
        tails[0][name] = remap(codes, lookup, out=codes if codes.flags.writeable else None,
                               none=(none, none))
    if 1 < comm.size <= MAX_RANKS:
        _move_packed(comm, buffers, tails, dest)
        return
    local = {f"{index}.{name}": values for index, tail in enumerate(tails)
             for name, values in tail.items()}
    if comm.size > 1:
        local = comm.exchange(owner_of(tails[0]["key"], comm.size) if dest is None else dest,
                              local)
    del tails
    for index, buffer in enumerate(buffers):
        buffer.append(handed_over=set(buffer.dtypes) if comm.size > 1 else (),
                      **{name: local.pop(f"{index}.{name}") for name in buffer.dtypes})


def _move_packed(comm: Comm, buffers: list[RowBuffer], tails: list[dict[str, np.ndarray]],
                 dest: np.ndarray | None = None) -> None:
    """:func:`move_to_owners`' move of the rows ``tails`` (split off ``buffers``) to their
    owners (``dest``: to those ranks): the leaving rows packed
    (:func:`mpieval.kernels.moves.split_columns`), sent in one ``Alltoallv``, and every
    buffer given its rows (source rank order: the staying rows between the ranks' below
    and above)."""
    rank = comm.rank
    if dest is None:
        dest, counts = owners(tails[0]["key"], comm.size)
    else:
        dest = np.ascontiguousarray(dest, dtype=np.uint16)
        counts = np.bincount(dest, minlength=comm.size).astype(np.int64)
    columns = []  # (index, name, writable contiguous column), in the records' order
    for index, tail in enumerate(tails):
        for name, column in tail.items():
            if not (column.flags.c_contiguous and column.flags.writeable):
                column = tail[name] = np.array(column)
            columns.append((index, name, column))
    row_nbytes = sum(column.dtype.itemsize for _, _, column in columns)
    stay = int(counts[rank])
    send_counts = counts
    send_counts[rank] = 0
    firsts = np.cumsum(send_counts) - send_counts  # each owner's first record
    packed = np.empty(int(send_counts.sum()), dtype=np.dtype((np.void, row_nbytes)))
    kept = split_columns(dest, rank, [column for _, _, column in columns],
                         packed.view(np.uint8), firsts)
    assert kept == stay
    del dest
    recv_counts, received = comm.exchange_packed(packed, send_counts)
    del packed
    data = received.view(np.uint8)
    firsts = (np.cumsum(recv_counts) - recv_counts) * row_nbytes  # each source's bytes
    low = int(recv_counts[:rank].sum())
    total = int(recv_counts.sum()) + stay
    at_rows = np.cumsum(recv_counts) - recv_counts  # each source's first row here
    at_rows[rank + 1 :] += stay
    before = 0
    for index, buffer in enumerate(buffers):
        if total == 0:
            continue
        free = buffer.free_rows(total)
        joined = {}
        for name, dtype in buffer.dtypes.items():
            column = tails[index][name]
            width = dtype.itemsize
            target = free[name] if free is not None else np.empty(total, dtype)
            if _starts_at(target, column):  # the staying rows at its front already
                _shift_right(target, stay, low)
            else:
                target[low : low + stay] = column[:stay]
            bytes_ = target.view(np.uint8)
            for source in np.flatnonzero(recv_counts).tolist():
                rows, first = int(recv_counts[source]), int(firsts[source]) + \
                    int(recv_counts[source]) * before
                here = int(at_rows[source]) * width
                bytes_[here : here + rows * width] = data[first : first + rows * width]
            joined[name] = target
            before += width
        buffer.append(handed_over=set(buffer.dtypes), **joined)
    del tails


def _starts_at(target: np.ndarray, column: np.ndarray) -> bool:
    """Whether ``column`` begins at ``target``'s first byte (the reserved room's rows)."""
    return len(column) > 0 and len(target) > 0 and \
        target.__array_interface__["data"][0] == column.__array_interface__["data"][0]


def _shift_right(array: np.ndarray, count: int, by: int) -> None:
    """Move ``array[:count]`` to ``array[by:by + count]`` (in pieces of ``by`` rows from
    the end, which do not overlap, when they are few; else through a copy)."""
    if by == 0 or count == 0:
        return
    if count > 8 * by:
        array[by : by + count] = array[:count].copy()
        return
    for end in range(count, 0, -by):
        begin = max(end - by, 0)
        array[begin + by : end + by] = array[begin:end]


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
