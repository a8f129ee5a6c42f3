"""Mergeable state: what one rank accumulates, declared by each kind as named parts.

Each part says how it merges with the same part of another state (another shard, another
rank, a saved run):

- :class:`Summed` — a float64 array of a fixed shape (histograms, sums, counts), merged by
  addition. Counts are exact up to 2**53; nothing is float32.
- :class:`Rows` — typed columns of rows kept until compute (the per-user kinds), merged by
  concatenation.

A :class:`State` holds the parts of one metric; all its summed parts live in one
contiguous float64 buffer, so that ranks merge them with one ``Allreduce``. Merging
returns a new state and never changes its inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from mpieval.rows import RowBuffer


@dataclass(frozen=True)
class Summed:
    """A part that merges by addition: a float64 array of shape ``shape``."""

    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class Rows:
    """A part that merges by concatenation: columns of rows of the given dtypes (a column
    may be widened later, e.g. float32 to float64, by :meth:`RowBuffer.widen`)."""

    dtypes: Mapping[str, DTypeLike]


Part = Summed | Rows


class State(Mapping[str, "np.ndarray | RowBuffer"]):
    """The parts of one metric's state, by name, as its kind declares them.

    ``state[name]`` is a float64 array (a view into :attr:`buffer`) for a summed part, a
    :class:`RowBuffer` for a rows part.
    """

    def __init__(self, layout: Mapping[str, Part]) -> None:
        self.layout = dict(layout)
        summed = [part.size for part in self.layout.values() if isinstance(part, Summed)]
        self.buffer = np.zeros(sum(summed), dtype=np.float64)
        self._parts: dict[str, np.ndarray | RowBuffer] = {}
        offset = 0
        for name, part in self.layout.items():
            if isinstance(part, Summed):
                self._parts[name] = self.buffer[offset : offset + part.size].reshape(part.shape)
                offset += part.size
            else:
                self._parts[name] = RowBuffer(part.dtypes)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (and deep-copied) as the buffer and the rows parts: the summed parts
        are views into the buffer, made again on loading."""
        rows = {name: part for name, part in self._parts.items() if isinstance(part, RowBuffer)}
        return {"layout": self.layout, "buffer": self.buffer, "rows": rows}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        self.__init__(saved["layout"])  # type: ignore[misc]
        self.buffer[...] = saved["buffer"]
        self._parts.update(saved["rows"])

    def __getitem__(self, name: str) -> np.ndarray | RowBuffer:
        return self._parts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def summed(self, name: str) -> np.ndarray:
        """The summed part ``name`` (a view into :attr:`buffer`)."""
        part = self._parts[name]
        assert isinstance(part, np.ndarray), f"{name} is not a summed part"
        return part

    def rows(self, name: str) -> RowBuffer:
        """The rows part ``name``."""
        part = self._parts[name]
        assert isinstance(part, RowBuffer), f"{name} is not a rows part"
        return part

    def merge(self, other: State) -> State:
        """A new state holding both: summed parts added, rows concatenated (a column
        stored narrower on one side is widened). Neither input changes."""
        if self._shapes() != other._shapes():
            raise ValueError(f"cannot merge states of different layouts: {self._shapes()} "
                             f"and {other._shapes()}")
        merged = State(self.layout)
        merged.buffer += self.buffer
        merged.buffer += other.buffer
        for name in self.layout:
            if isinstance(self.layout[name], Rows):
                _concatenate(merged.rows(name), self.rows(name), other.rows(name))
        return merged

    def _shapes(self) -> dict[str, object]:
        return {name: part.shape if isinstance(part, Summed) else tuple(part.dtypes)
                for name, part in self.layout.items()}

    @classmethod
    def viewing(cls, layout: Mapping[str, Part], parts: Mapping[str, np.ndarray]) -> State:
        """A state of summed parts only whose parts are the arrays ``parts`` (views into
        other arrays: one row of a :class:`Stacked`), for counting rows into them; it has
        no buffer of its own (:attr:`buffer` is empty)."""
        if not all(isinstance(part, Summed) for part in layout.values()):
            raise ValueError("a viewing state holds summed parts only")
        state = cls.__new__(cls)
        state.layout = dict(layout)
        state.buffer = np.zeros(0, dtype=np.float64)
        state._parts = {name: parts[name] for name in layout}
        return state


class Stacked:
    """The summed parts of many states of one layout (a kind's slices,
    :mod:`mpieval.slices`): each part one float64 array whose first axis is the state,
    ``stacked.array(name)[k]`` state ``k``'s part ``name``, so that the states are a few
    large arrays (counted into, summed over ranks and saved whole), not an object each.
    States are added at the end (:meth:`append`), zero; the arrays grow by doubling.

    A part of whole counts may be counted into a uint32 array beside it (:meth:`counts`:
    half the bytes, so that the tables of many slices stay nearer the processor), added to
    the part before the part is next read (by any method but :meth:`counts`)."""

    def __init__(self, layout: Mapping[str, Part]) -> None:
        if not all(isinstance(part, Summed) for part in layout.values()):
            raise ValueError("stacked states hold summed parts only")
        self.layout = dict(layout)
        self.count = 0
        self._arrays = {name: np.zeros((0, *part.shape)) for name, part in self._summed()}
        # per part: the uint32 counts not yet added, and a bound on any one of them
        self._counts: dict[str, np.ndarray] = {}
        self._counted: dict[str, int] = {}

    def _summed(self) -> Iterator[tuple[str, Summed]]:
        for name, part in self.layout.items():
            assert isinstance(part, Summed)
            yield name, part

    def __len__(self) -> int:
        return self.count

    def array(self, name: str) -> np.ndarray:
        """Part ``name`` of every state room is made for: ``(capacity, *shape)``, C-order,
        the rows from :attr:`count` on zero (kernels write into it in place)."""
        self._add_counts(name)
        return self._arrays[name]

    def counts(self, name: str, most: int) -> np.ndarray:
        """A uint32 array shaped as :meth:`array` ``(name)``, into which a kernel adds
        whole counts, at most ``most`` to any one element this time; they are added to
        part ``name`` before it is next read (and now, first, should the counts since then
        reach 2**32). The array is the one to count into until then only: ask again
        after any other call."""
        if self._counted.get(name, 0) + most > np.iinfo(np.uint32).max:
            self._add_counts(name)
        if name not in self._counts:
            self._counts[name] = np.zeros(self._arrays[name].shape, dtype=np.uint32)
            self._counted[name] = 0
        self._counted[name] += most
        return self._counts[name]

    def _add_counts(self, name: str | None = None) -> None:
        """The uint32 counts of part ``name`` (None: of every part) added to it."""
        for part in [name] if name is not None else list(self._counts):
            counted = self._counts.pop(part, None)
            if counted is not None:
                self._arrays[part] += counted  # whole numbers: exact in float64
                del self._counted[part]

    def __getitem__(self, name: str) -> np.ndarray:
        """Part ``name`` of the states, ``(count, *shape)`` (a view)."""
        self._add_counts(name)
        return self._arrays[name][: self.count]

    def append(self, count: int = 1) -> int:
        """Room for ``count`` more states, zero; the index of the first."""
        first = self.count
        self.count += count
        capacity = len(next(iter(self._arrays.values()), ()))
        if self.count > capacity:
            self._add_counts()
            capacity = max(self.count, 2 * capacity, 4)
            for name, part in self._summed():
                grown = np.zeros((capacity, *part.shape))  # untouched pages cost nothing
                grown[:first] = self._arrays[name][:first]
                self._arrays[name] = grown
        return first

    def state(self, index: int) -> State:
        """State ``index`` as a :class:`State` of views into the arrays."""
        self._add_counts()
        return State.viewing(self.layout, {name: array[index]
                                           for name, array in self._arrays.items()})

    def add(self, index: np.ndarray, parts: Mapping[str, np.ndarray]) -> None:
        """Add ``parts[name][j]`` to state ``index[j]`` of each part (``index`` without
        repeats)."""
        self._add_counts()
        for name in self.layout:
            self._arrays[name][index] += parts[name]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (and deep-copied) as the states there are, without the room beyond."""
        return {"layout": self.layout, "arrays": {name: self[name] for name in self.layout}}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        self.__init__(saved["layout"])  # type: ignore[misc]
        arrays = saved["arrays"]
        count = len(next(iter(arrays.values()), ()))
        self.append(count)
        for name, values in arrays.items():
            self._arrays[name][:count] = values


def _concatenate(into: RowBuffer, first: RowBuffer, second: RowBuffer) -> None:
    for name in into.dtypes:
        wide = np.promote_types(first.dtypes[name], second.dtypes[name])
        if wide != into.dtypes[name]:
            into.widen(name, wide)
    into.append(**first.columns())
    into.append(**second.columns())


def pack_taking(parts: list[dict[str, np.ndarray]]) -> np.ndarray:
    """Named float64 arrays, of one or more parts, as one flat buffer in order (the inverse
    of :func:`unpack`, part by part): one copy of each array, each taken out of its part
    as it is copied (the parts are left empty), so that one no other holds is freed then:
    the buffer and the arrays not yet copied are held, not every array beside the whole
    buffer (many tags)."""
    size = sum(int(np.size(a)) for part in parts for a in part.values())
    packed = np.empty(size, dtype=np.float64)
    offset = 0
    for part in parts:
        for name in list(part):
            array = part.pop(name)
            packed[offset : offset + np.size(array)] = np.asarray(array, np.float64).ravel()
            offset += int(np.size(array))
            del array
    return packed


def unpack(buffer: np.ndarray, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Views of ``buffer`` with the given shapes, in order (the inverse of
    :func:`pack_taking`)."""
    parts, offset = {}, 0
    for name, shape in shapes.items():
        size = prod(shape)
        parts[name] = buffer[offset : offset + size].reshape(shape)
        offset += size
    if offset != len(buffer):
        raise ValueError(f"buffer of {len(buffer)} values does not hold the parts {dict(shapes)}")
    return parts
