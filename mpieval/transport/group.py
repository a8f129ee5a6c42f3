"""What the transports over a trainer's process group (``torch.distributed``, Paddle)
share: one transport per group while metrics use it, and a gloo twin for a group whose
backend takes device tensors only. Imports neither library: each transport's module
(:mod:`mpieval.transport.torch`, :mod:`mpieval.transport.paddle`) says how its library
does these things."""

from __future__ import annotations

import weakref
from collections.abc import MutableMapping
from typing import Any, ClassVar, TypeVar

G = TypeVar("G", bound="GroupTransport")


class GroupTransport:
    """A transport over one process group, in CPU tensors that share the numpy arrays'
    memory (so the group needs a CPU backend, gloo).

    One transport per group while metrics use it; none is kept beyond them, so mpieval
    never holds a group alive after the program drops it. For a group whose backend takes
    device tensors only (NCCL), a gloo group over the same ranks, its twin, is created
    the first time a metric uses the group and kept for it (``new_group`` is collective:
    every process must resolve its first metric on such a group at the same point)."""

    # by id(group), each subclass its own: each transport holds its group (``base``)
    _of_group: ClassVar[weakref.WeakValueDictionary[int, Any]]
    # the gloo twins, each subclass its own, by :meth:`_twin_key`
    _twins: ClassVar[MutableMapping[Any, Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._of_group = weakref.WeakValueDictionary()

    @classmethod
    def of(cls: type[G], group: Any) -> G:
        """The transport of ``group``, shared by every metric on it."""
        transport = cls._of_group.get(id(group))
        if transport is None:
            transport = cls(group)
            cls._of_group[id(group)] = transport
        return transport

    def __init__(self, group: Any) -> None:
        self.base = group  # keeps id(group) from being reused while this transport lives
        if not self._on_host(group):
            key = self._twin_key(group)
            twin = self._twins.get(key)
            if twin is None:
                twin = self._gloo_group(group)
                self._twins[key] = twin
            group = twin
        self.group = group

    # -- what each library says ----------------------------------------------------------

    def _on_host(self, group: Any) -> bool:
        """Whether ``group``'s backend takes CPU tensors."""
        raise NotImplementedError

    def _twin_key(self, group: Any) -> Any:
        """What ``group``'s twin is kept by."""
        raise NotImplementedError

    def _gloo_group(self, group: Any) -> Any:
        """A new gloo group over ``group``'s ranks (collective)."""
        raise NotImplementedError
