"""Tag values of the kinds with per-tag blocks (``wuauc``, ``ranking``): checked a batch at
a time, coded as small integers (:class:`TagCodes`), and agreed over ranks at compute
(:class:`mpieval.user_rows.UserRowsMetric` sorts every rank's values).

A tag column is integers or non-empty strings, never both; ``all`` is reserved for the
block of every row; a string tag is one word of the log line.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import gc
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import Field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast, overload

import numpy as np

from mpieval.errors import InputError
from mpieval.jsonwriter import ChunkedDict
from mpieval.kernels import stats
from mpieval.kernels.codes import TAG_DTYPE, TextCodes, remap
from mpieval.validation import Coded, all_log_words, check_log_word, from_tensor, unmasked

ALL = "all"


SHOWN_TAGS = 5  # tags named in one warning line; the rest are counted


def held_reasons_text(held: Sequence[tuple[str, np.ndarray]], names: Sequence[str]) -> str:
    """The warning of the reasons ``held`` (:func:`held_reasons`: each with the indexes of
    the blocks it holds for, in order of their first block; ``names``: the blocks'), one
    clause per reason with the tags it holds for: ``tags t1, t2, t3, t4, t5 and 148 more:
    ci95 ... needs 10 valid users`` (a 300-tag run gives one short line, not one clause a
    tag). Only the first ``SHOWN_TAGS`` names of each are read (many tags: no text a tag)."""
    clauses = []
    for reason, where in held:
        count = len(where)
        named = ", ".join(names[i] for i in where[:SHOWN_TAGS].tolist())
        if count > SHOWN_TAGS:
            named += f" and {count - SHOWN_TAGS} more"
        clauses.append(f"{'tag' if count == 1 else 'tags'} {named}: {reason}")
    return "; ".join(clauses)


class _Block(Protocol):
    @property
    def tag(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


class Comparison(Protocol):
    """A block's paired A/B comparison (a frozen dataclass): each value's two-sided
    p-value, and ``q``, the q-values :meth:`TagBlocks.with_q_values` sets."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def q(self) -> dict[str, float]: ...

    def p(self, name: str) -> float: ...


class ComparedBlock(Protocol):
    """A tag block (a frozen dataclass) that may hold a :class:`Comparison`."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def tag(self) -> str: ...

    @property
    def compare(self) -> Comparison | None: ...


B = TypeVar("B", bound=_Block)
F = TypeVar("F", bound=Callable[..., Any])


Made = TypeVar("Made")


def block_of(cls: type[Made], names: tuple[str, ...], values: tuple[Any, ...]) -> Made:
    """``cls(*values)``, a frozen dataclass of the fields ``names`` (every field, in
    order), its fields set at once rather than by the dataclass's ``__init__``, one
    ``object.__setattr__`` a field (many tags: a third of the time a block)."""
    block: Made = object.__new__(cls)
    block.__dict__.update(zip(names, values, strict=True))
    return block


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused (if it runs) while many blocks are made: each
    block's objects would otherwise set off collections that walk every object made so
    far (many tags: a collection every few hundred blocks), and a block holds no cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def without_gc(method: F) -> F:
    """``method`` run with the cyclic garbage collector paused (:func:`gc_paused`): a call
    that makes many objects a tag or slice. The wrapper is mpieval's own, so a warning
    raised inside still names the caller's frame (``metric._warn_undefined``)."""

    @functools.wraps(method)
    def paused(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return method(*args, **kwargs)

    return cast(F, paused)


def whole_ints(x: np.ndarray) -> list[int]:
    """``int`` of each element of ``x`` (whole numbers: a per-tag block's counts), in one
    conversion when they fit int64 (many tags: no Python call a tag); one element by the
    scalar (a slice's own block: no array's steps)."""
    if len(x) == 1:
        return [int(x.item())]
    if len(x) and np.abs(x).max() < 2.0**63:
        whole: list[int] = x.astype(np.int64).tolist()
        return whole
    return [int(v) for v in x.tolist()]


def dicts_of(keys: tuple[str, ...], columns: list[list[Any]]) -> list[dict[str, Any]]:
    """Row ``i`` of ``columns`` (lists of one length, one a key) as the dict ``{keys[j]:
    columns[j][i]}``, keys in order: many tags' JSON objects made in one compiled pass
    (``_core.text.dicts``), not a Python step a tag."""
    from mpieval import _core

    made: list[dict[str, Any]] = _core.text.dicts(keys, columns)
    return made


def fresh_dicts(keys: Sequence[str], n: int) -> list[dict[str, Any]]:
    """``n`` dicts ``dict.fromkeys(keys)``, each its own (a tag's null intervals), copied
    in one compiled pass (``_core.text.copies``)."""
    from mpieval import _core

    made: list[dict[str, Any]] = _core.text.copies(dict.fromkeys(keys), n)
    return made


def held_reasons(reasons: list[tuple[int, str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
    """Of ``(rank, text, mask)``, a reason and the blocks it holds for (a mask over the
    blocks), those that hold for some block: ``(text, blocks)``, by their first block,
    then rank (the order of the per-block reasons)."""
    held = [(np.flatnonzero(mask), rank, text) for rank, text, mask in reasons]
    held = sorted((entry for entry in held if len(entry[0])),
                  key=lambda entry: (int(entry[0][0]), entry[1]))
    return [(text, where) for where, _, text in held]


class BlockNames(Sequence[str]):
    """The names of a per-tag result's blocks: ``all``, then the tag values as text, each
    made when read (many tags: a result made but not all read makes no text a tag)."""

    def __init__(self, values: Sequence[Any]) -> None:
        self._values = values

    def __len__(self) -> int:
        return 1 + len(self._values)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            head = [ALL] if start == 0 < stop else []
            return head + list(map(str, self._values[max(start - 1, 0):max(stop - 1, 0)]))
        i = range(len(self))[index]  # an IndexError past the end
        return ALL if i == 0 else str(self._values[i - 1])

    def __iter__(self) -> Iterator[str]:
        yield ALL
        yield from map(str, self._values)


class ColumnBlocks(Sequence[B]):
    """A result's blocks kept as its columns (many tags: a few arrays, not objects a
    block), each block made when read, by the kind's ``make(start, stop)`` (the blocks
    ``start .. stop - 1``, a chunk at a time when iterated); read as the tuple of those
    blocks (indexes, slices, iteration, ``==``). ``dicts(start, stop)``, if given, writes
    those blocks' ``to_dict()`` without making them (:meth:`TagBlocks.tags_dict`)."""

    CHUNK = 4096  # blocks made at a time when iterated

    def __init__(self, tags: Sequence[str], make: Callable[[int, int], list[B]],
                 dicts: Callable[[int, int], list[dict[str, Any]]] | None = None,
                 source: object = None) -> None:
        self._block_tags = tags
        self._make_blocks = make
        self._make_dicts = dicts
        self.source = source
        """What the kind made them from (its columns: its log lines read them)."""
        self._positions: dict[str, int] | None = None

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(self._block_tags)

    def position(self, tag: str) -> int:
        """The index of the block of ``tag`` (a KeyError if none)."""
        if self._positions is None:
            self._positions = dict(zip(self._block_tags, range(len(self._block_tags)),
                                       strict=True))
        return self._positions[tag]

    def __len__(self) -> int:
        return len(self._block_tags)

    @overload
    def __getitem__(self, index: int) -> B: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[B, ...]: ...

    def __getitem__(self, index: int | slice) -> B | tuple[B, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return tuple(self._make_blocks(start, max(start, stop)))
            return tuple(self[i] for i in range(start, stop, step))
        i = range(len(self))[index]  # an IndexError past the end, as a tuple's
        return self._make_blocks(i, i + 1)[0]

    def __iter__(self) -> Iterator[B]:
        for start in range(0, len(self), self.CHUNK):
            yield from self._make_blocks(start, min(start + self.CHUNK, len(self)))

    def dicts(self) -> dict[str, dict[str, Any]]:
        """Each block's ``to_dict()`` by tag, a chunk at a time."""
        out: dict[str, dict[str, Any]] = {}
        for chunk in self.dict_chunks():
            out.update(chunk)
        return out

    def dict_chunks(self) -> Iterator[dict[str, dict[str, Any]]]:
        """Each block's ``to_dict()`` by tag, :data:`CHUNK` blocks in a dict at a time."""
        for start in range(0, len(self), self.CHUNK):
            stop = min(start + self.CHUNK, len(self))
            yield dict(zip(self._block_tags[start:stop], self.chunk_dicts(start // self.CHUNK),
                           strict=True))

    def chunk_dicts(self, chunk: int) -> list[dict[str, Any]]:
        """The ``to_dict()`` of the blocks of chunk ``chunk`` (:data:`CHUNK` blocks each)."""
        start = chunk * self.CHUNK
        stop = min(start + self.CHUNK, len(self))
        if self._make_dicts is not None:
            return self._make_dicts(start, stop)
        return [block.to_dict() for block in self._make_blocks(start, stop)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, ColumnBlocks)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ColumnBlocks({len(self)} blocks: {', '.join(self._block_tags[:3])}, ...)"


class TagDicts(ChunkedDict):
    """A many-tag result's ``tags`` as its JSON output writes them: each block's
    ``to_dict()`` by tag, made from the result's columns a chunk at a time as they are
    written (:class:`~mpieval.jsonwriter.ChunkedDict`), so that the output never holds
    every tag's dicts (:func:`dicts_as_written`). Read-only: a member read by its tag
    comes with the others of its chunk, the last chunk read held (a gate's walk over
    every tag makes each chunk once)."""

    def __init__(self, blocks: ColumnBlocks[Any]) -> None:
        self._blocks = blocks
        self._held: tuple[int, list[dict[str, Any]]] = (-1, [])  # the last chunk read

    def chunks(self) -> Iterator[dict[str, dict[str, Any]]]:
        return self._blocks.dict_chunks()

    def __getitem__(self, tag: str) -> dict[str, Any]:
        chunk, offset = divmod(self._blocks.position(tag), self._blocks.CHUNK)
        if self._held[0] != chunk:
            self._held = (chunk, self._blocks.chunk_dicts(chunk))
        return self._held[1][offset]

    def __contains__(self, tag: object) -> bool:
        try:
            self._blocks.position(tag)  # type: ignore[arg-type]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks.tags)

    def __len__(self) -> int:
        return len(self._blocks)


_AS_WRITTEN = contextvars.ContextVar("tags_as_written", default=False)


@contextmanager
def dicts_as_written() -> Iterator[None]:
    """Within it, a result of many tags (its blocks kept as columns) gives its ``tags`` in
    ``to_dict()`` as :class:`TagDicts`, made as the JSON writer reads them, not a dict of
    every tag's dict: for an output that is written and read but not changed (a run's
    ``--json`` and ``--gate``), whose readers take a
    :class:`~mpieval.jsonwriter.ChunkedDict` (any ``Mapping``)."""
    with _written_as(True):
        yield


@contextmanager
def dicts_made() -> Iterator[None]:
    """Within it, ``to_dict()`` gives every tag's dict as ever (a part of an output that
    is read or changed after it is made, as a slice's blocks: :func:`dicts_as_written`
    off)."""
    with _written_as(False):
        yield


@contextmanager
def _written_as(lazily: bool) -> Iterator[None]:
    token = _AS_WRITTEN.set(lazily)
    try:
        yield
    finally:
        _AS_WRITTEN.reset(token)


Blocks = TypeVar("Blocks", bound="TagBlocks[Any]")


class TagBlocks(Generic[B]):
    """The blocks of a per-tag result (``all`` first, then the tags sorted), by tag:
    ``result.all``, ``result["search"]``, ``for block in result``. Its subclasses are
    frozen dataclasses."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    blocks: Sequence[B]  # a tuple, or ColumnBlocks

    def tags_dict(self) -> dict[str, dict[str, Any]] | TagDicts:
        """Each block's ``to_dict()`` by tag (the JSON's ``tags``), made with the cyclic
        garbage collector paused (many tags: :func:`gc_paused`); within
        :func:`dicts_as_written`, many tags' as :class:`TagDicts`."""
        with gc_paused():
            if isinstance(self.blocks, ColumnBlocks):
                if _AS_WRITTEN.get():
                    return TagDicts(self.blocks)
                return self.blocks.dicts()
            return {block.tag: block.to_dict() for block in self.blocks}

    def with_q_values(self: Blocks, names: Sequence[str]) -> Blocks:
        """The result (a frozen dataclass of :class:`ComparedBlock`) whose comparisons in
        the tag blocks (not ``all``) carry the Benjamini-Hochberg q-values over those tags
        of each of ``names``' p-values (:func:`mpieval.kernels.stats.bh_q_values`; NaN
        where the p-value is); itself when no tag block has a comparison."""
        blocks: Sequence[ComparedBlock] = self.blocks
        tagged = [(i, block.compare) for i, block in enumerate(blocks) if i > 0
                  and block.compare is not None]
        if not tagged:
            return self
        q = {name: stats.bh_q_values([compare.p(name) for _, compare in tagged])
             for name in names}
        replaced = list(blocks)
        for j, (i, compare) in enumerate(tagged):
            replaced[i] = dataclasses.replace(blocks[i], compare=dataclasses.replace(
                compare, q={name: q[name][j] for name in names}))
        changed: Blocks = dataclasses.replace(self, blocks=tuple(replaced))
        return changed

    @property
    def all(self) -> B:
        return self.blocks[0]

    @property
    def tags(self) -> tuple[str, ...]:
        if isinstance(self.blocks, ColumnBlocks):
            return self.blocks.tags
        return tuple(block.tag for block in self.blocks)

    def __getitem__(self, tag: object) -> B:
        if isinstance(self.blocks, ColumnBlocks):
            try:
                block: B = self.blocks[self.blocks.position(str(tag))]
            except KeyError:
                raise KeyError(tag) from None
            return block
        for block in self.blocks:
            if block.tag == str(tag):
                return block
        raise KeyError(tag)

    def __iter__(self) -> Iterator[B]:
        return iter(self.blocks)


NO_TAG = int(np.iinfo(TAG_DTYPE).max)  # local tag code of a row given without a tag
MAX_TAGS = (1 << 31) - 1
"""At most this many distinct tag values: the compiled passes keep a row's tag code beside
its label in 32 bits (``code << 1 | label``), the code of no tag (``MAX_TAGS``) too."""


class TagCodes:
    """The tag values this metric has seen, in order of arrival; a value's code is its
    index (:data:`TAG_DTYPE`; :data:`NO_TAG` for a row without a tag)."""

    def __init__(self, values: Sequence[Any] = ()) -> None:
        self._values: list[Any] = list(values)
        self._lookup: dict[Any, int] | None = None  # made when first asked (many tags)
        self._texts: TextCodes | None = None  # so too (text values)
        self._ints: tuple[np.ndarray, np.ndarray] | None = None  # so too (int values)
        self._not_ints = False  # a value not an integer of int64 seen: no _ints
        self._type: type | None = type(self._values[0]) if self._values else None

    def __getstate__(self) -> dict[str, Any]:
        # the look-ups are made again from the values (the compiled table is not pickled)
        return {"_values": self._values, "_type": self._type}

    def __setstate__(self, state: dict[str, Any]) -> None:
        TagCodes.__init__(self, state["_values"])  # (a pickle of before: its dict dropped)
        self._type = state.get("_type", self._type)

    @property
    def _index(self) -> dict[Any, int]:
        """Each value's code."""
        if self._lookup is None:
            self._lookup = dict(zip(self._values, range(len(self._values)), strict=True))
        return self._lookup

    def _looked_up(self, values: list[Any] | np.ndarray) -> np.ndarray:
        """Each value's code (``int64``), -1 for one not seen: text values in the compiled
        table (:class:`~mpieval.kernels.codes.TextCodes`: many tags, a batch's values
        without a dict look-up each), integers in the sorted values (:meth:`_int_index`:
        16 bytes a value, not a dict's hundred), others in the dict."""
        if not len(values):  # (no table made for none)
            return np.empty(0, dtype=np.int64)
        wanted = _int64s(values) if self._type is not str else None
        if wanted is not None:
            index = self._int_index()
            if index is not None:
                return _found(index, wanted)
        if self._type is not int:
            if self._texts is None:
                self._texts = TextCodes.of_values(self._values)
            codes = self._texts.codes(list(values))
            if codes is not None:
                return codes
        return np.fromiter(map(self._index.get, values, itertools.repeat(-1)),
                           dtype=np.int64, count=len(values))

    def _int_index(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The values sorted (``int64``) and each one's code, made when first asked and
        kept as values are taken; None when some value is not an integer of int64."""
        if self._ints is None:
            values = None if self._type is str or self._not_ints else _int64s(self._values)
            if values is None:  # (for good: values are only added)
                self._not_ints = bool(self._values)
                return None
            order = np.argsort(values, kind="stable")
            self._ints = values[order], order.astype(np.int64)
        return self._ints

    @property
    def values(self) -> Sequence[Any]:
        """The values by code (not to be changed: :meth:`codes` adds new ones)."""
        return self._values

    @property
    def type(self) -> type | None:
        """``int`` or ``str``; None before the first value."""
        return self._type

    def copy(self) -> TagCodes:
        return TagCodes(self._values)

    def sent(self, start: int = 0) -> list[Any] | np.ndarray:
        """The values from code ``start`` on as a collective sends them: integers as an
        ``int64`` array (8 bytes a value rather than a Python int's 36, and pickled whole:
        many tags), others as a list. :meth:`take` takes either."""
        values = self._values[start:]
        if self._type is int:
            ints = _int64s(values)
            if ints is not None:
                return ints
        return values

    def as_array(self) -> np.ndarray:
        """The values by code, as a state's array (int64 or str)."""
        return np.array(self._values, dtype=np.int64 if self._type is int else str)

    def take(self, values: Iterable[Any] | np.ndarray) -> None:
        """Give the values not seen yet the next codes, in order (many tags: no Python step
        a value; integers, a list or an ``int64`` array, by numpy)."""
        ints = _int64s(values) if self._type is not str and isinstance(
            values, (list, tuple, np.ndarray)) else None
        if ints is not None:
            _, first = np.unique(ints, return_index=True)
            distinct = ints[np.sort(first)]  # in order of first appearance
            fresh = distinct[self._looked_up(distinct) < 0]
            new = fresh.tolist()  # Python ints
        else:
            listed = list(dict.fromkeys(values))
            new = [listed[i] for i in np.flatnonzero(self._looked_up(listed) < 0).tolist()]
        if new:
            start = len(self._values)
            if self._lookup is not None:
                self._lookup.update(zip(new, range(start, start + len(new)), strict=True))
            if self._texts is not None:
                self._texts.add_texts(new, start)
            if self._ints is not None:
                self._ints = _int_index_with(self._ints, fresh if ints is not None
                                             else _int64s(new), start)
                self._not_ints = self._ints is None
            self._values += new
            self._type = type(new[-1])

    def _taken(self, values: list[Any], check: Callable[[list[Any]], None] | None = None
               ) -> np.ndarray:
        """:meth:`take` then :meth:`of`, with one look-up a value seen before (many tags: a
        later batch's tags, most seen, looked up once rather than three times); ``check``
        called on the new values (in order) before any is taken."""
        codes = self._looked_up(values)
        new_at = np.flatnonzero(codes < 0).tolist()
        if new_at:
            new = [values[i] for i in new_at]
            if check is not None:
                check(new)
            self.take(new)
            codes[new_at] = self.of(new)
        taken: np.ndarray = codes.astype(TAG_DTYPE)
        return taken

    def of(self, values: Sequence[Any]) -> np.ndarray:
        """The code (:data:`TAG_DTYPE`) of each of ``values``, every one seen (a KeyError
        else)."""
        codes = self._looked_up(list(values))
        unseen = np.flatnonzero(codes < 0)
        if len(unseen):
            raise KeyError(values[int(unseen[0])])
        of: np.ndarray = codes.astype(TAG_DTYPE)
        return of

    def add(self, other: TagCodes) -> np.ndarray:
        """Take in ``other``'s values (the new ones get the next codes): the lookup from
        ``other``'s codes to these (one entry a code of ``other``; :func:`recoded` keeps
        :data:`NO_TAG`)."""
        self.take(other._values)
        return self.of(other._values)

    def check(self, tag: Any, n: int) -> tuple[list[Any], np.ndarray]:
        """The distinct values of a tag column of ``n`` rows (as Python ints or strs) and
        each row's index among them; checked against the values seen so far. A
        :class:`Coded` column is checked on its distinct values only."""
        distinct_values, inverse = distinct(tag)
        if len(inverse) != n:
            raise InputError("tag", f"length mismatch: tag={len(inverse)}, pred={n}")
        if ALL in distinct_values:
            rows = np.flatnonzero(inverse == distinct_values.index(ALL))
            raise InputError("tag", "the tag 'all' is reserved for the block of every row",
                             count=len(rows), first_index=int(rows[0]))
        kind = str if distinct_values and isinstance(distinct_values[0], str) else int
        if distinct_values and self._type is not None and kind is not self._type:
            raise InputError("tag", "integer tags in one batch and strings in another")
        unseen = [distinct_values[i] for i in
                  np.flatnonzero(self._looked_up(distinct_values) < 0).tolist()]
        # a tag is a word of the space-separated log line (seen: checked)
        if kind is str and not all_log_words(unseen):
            for value in unseen:
                check_log_word("tag", value)
        new = len(unseen)
        if len(self._values) + new > MAX_TAGS:
            raise InputError("tag", f"more than {MAX_TAGS} distinct tag values")
        return distinct_values, inverse

    def codes(self, distinct: list[Any], inverse: np.ndarray,
              out: np.ndarray | None = None,
              check: Callable[[list[Any]], None] | None = None) -> np.ndarray:
        """Local codes (:data:`TAG_DTYPE`) of checked tags (new values get the next
        codes; ``check``: called on the new ones first, :meth:`_taken`); a new array, or
        ``out`` (one a row) for a uint16 ``inverse`` (a column the file reader coded),
        remapped compiled, without numpy's intp copy of the indexes."""
        lookup = self._taken(distinct, check)
        if inverse.dtype == np.uint16:
            if out is not None and (len(out) != len(inverse) or out.dtype != TAG_DTYPE):
                out = None
            return remap(inverse, lookup, out=out)
        coded: np.ndarray = lookup[inverse]
        return coded


def _int64s(values: Any) -> np.ndarray | None:
    """``values`` (a list of Python ints, or an integer array) as an ``int64`` array;
    None for anything else (text, a bool, a float, an integer past int64)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "i" or (values.dtype.kind == "u" and (
                not len(values) or values.max() < 2**63)):
            return values.astype(np.int64, copy=False).reshape(-1)
        return None
    if not len(values):
        return np.empty(0, dtype=np.int64)
    if type(values[0]) is not int:
        return None
    try:
        array = np.asarray(values)
    except (OverflowError, ValueError, TypeError):
        return None
    # every element a Python int (not a bool, float or text), as numpy made an int array
    if array.dtype.kind != "i" or array.ndim != 1 or set(map(type, values)) != {int}:
        return None
    return array.astype(np.int64, copy=False)


def _found(index: tuple[np.ndarray, np.ndarray], wanted: np.ndarray) -> np.ndarray:
    """The code of each of ``wanted`` among the sorted values of ``index`` (``int64``),
    -1 for one not there."""
    keys, codes = index
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[at] == wanted, codes[at], -1)


def _int_index_with(index: tuple[np.ndarray, np.ndarray], new: np.ndarray | None,
                    start: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``index`` with the values ``new`` (distinct, not in it) of codes ``start`` on, still
    sorted (two sorted runs merged); None when they are not integers of int64."""
    if new is None:
        return None
    order = np.argsort(new, kind="stable")
    keys = np.concatenate((index[0], new[order]))
    codes = np.concatenate((index[1], order.astype(np.int64) + start))
    merged = np.argsort(keys, kind="stable")  # (timsort: two runs)
    return keys[merged], codes[merged]


def recoded(codes: np.ndarray, lookup: np.ndarray, no_tag: int = NO_TAG) -> np.ndarray:
    """Tag codes (:data:`TAG_DTYPE`) mapped through ``lookup`` (one entry a code) in
    place, in one compiled pass; :data:`NO_TAG`, the code of a row without a tag, written
    as ``no_tag``. The codes themselves, returned."""
    return remap(codes, lookup, out=codes, none=(NO_TAG, no_tag))


_FEW_TAGS = 8


def distinct(column: Any) -> tuple[list[Any], np.ndarray]:
    """The distinct values of a name column (a tag or a slice column: ints or strs, or a
    :class:`Coded` column, read on its distinct values only) as Python ints or strs, and
    each row's index among them; an :class:`InputError` for values that cannot be one."""
    if isinstance(column, Coded):
        return _distinct_coded(column)
    return _distinct(_tag_values(column))


def _distinct(values: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct values of ``values`` (as Python ints or strs) and the index of each
    row's value among them, as ``np.unique(values, return_inverse=True)`` but unsorted.

    Tag columns hold a few values: while they are few (``_FEW_TAGS``), each costs one
    whole-array comparison, much cheaper than sorting the strings; the rest are sorted.
    """
    inverse = np.full(len(values), -1, dtype=np.intp)
    distinct: list[Any] = []
    first = 0
    while len(distinct) < _FEW_TAGS:
        unassigned = inverse[first:] < 0
        if not unassigned.any():
            return distinct, inverse
        first += int(np.argmax(unassigned))
        value = values[first]
        inverse[values == value] = len(distinct)
        distinct.append(value.item())
    rest = inverse < 0
    more, more_inverse = np.unique(values[rest], return_inverse=True)
    inverse[rest] = len(distinct) + more_inverse.reshape(-1)
    return distinct + more.tolist(), inverse


def _distinct_coded(tag: Coded) -> tuple[list[Any], np.ndarray]:
    """:func:`_distinct` of a :class:`Coded` column: its values that some row uses, in
    their order, and each row's index among them; every value a non-empty string, or
    every value an integer. The codes of a column the file reader coded (``_dense``) use
    every value and index them by construction: they are not scanned."""
    codes = np.asarray(tag.codes)
    if tag._dense:
        used = None
    else:
        if codes.ndim != 1 or codes.dtype.kind not in "iu":
            raise InputError("tag", "Coded codes must be a 1-D integer array")
        if len(codes) and (codes.min() < 0 or codes.max() >= len(tag.values)):
            raise InputError("tag", f"Coded codes must index its {len(tag.values)} values")
        used = np.bincount(codes, minlength=len(tag.values)) > 0
    if used is None or used.all():  # the usual case: a batch's own dictionary
        distinct, inverse = list(tag.values), codes
    else:
        distinct = [value for value, use in zip(tag.values, used.tolist(), strict=True) if use]
        inverse = (np.cumsum(used) - 1)[codes]
    if not tag._dense:  # (the reader's values are the strs it decoded: many tags)
        is_int = [isinstance(value, (int, np.integer))
                  and not isinstance(value, (bool, np.bool_)) for value in distinct]
        if not (all(isinstance(value, str) for value in distinct) or all(is_int)):
            raise InputError("tag", "Coded values must all be strings or all integers")
        distinct = [value if isinstance(value, str) else int(value) for value in distinct]
    if "" in distinct:
        rows = np.flatnonzero(inverse == distinct.index(""))
        raise InputError("tag", "is empty (a missing tag)", count=len(rows),
                         first_index=int(rows[0]), value="")
    return distinct, inverse


def _tag_values(tag: Any) -> np.ndarray:
    """A tag column as a 1-D int or str array; missing, empty or other values raise."""
    values = np.asarray(unmasked("tag", from_tensor(tag)))
    if values.ndim != 1:
        raise InputError("tag", f"must be 1-D, got an array of shape {values.shape}")
    if values.dtype.kind == "O" and len(values):
        is_str = np.frompyfunc(lambda v: isinstance(v, str), 1, 1)(values).astype(bool)
        is_int = np.frompyfunc(
            lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)),
            1, 1,
        )(values).astype(bool)
        for bad, problem in ((~(is_str | is_int), "must be integers or strings (not missing)"),
                             (is_int if is_str[0] else is_str, "mixes integers and strings")):
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise InputError("tag", problem, count=int(bad.sum()), first_index=first,
                                 value=values[first])
        values = values.astype(str if is_str[0] else np.int64)
    if values.dtype.kind not in "iuU" and len(values):
        raise InputError("tag", f"must be integers or strings, got dtype {values.dtype}")
    if values.dtype.kind == "U" and len(values):
        empty = values == ""
        if empty.any():
            raise InputError("tag", "is empty (a missing tag)", count=int(empty.sum()),
                             first_index=int(np.flatnonzero(empty)[0]), value="")
    return values
