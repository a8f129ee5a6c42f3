"""Expecting :class:`UndefinedMetricWarning` as the metrics issue it: on rank 0 only."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from mpieval.comm import Comm
from mpieval.errors import UndefinedMetricWarning


@contextmanager
def warns_undefined(comm: Comm, match: str | None = None) -> Iterator[None]:
    """The block warns :class:`UndefinedMetricWarning` (matching ``match``) on rank 0 of
    ``comm``, and on no other rank."""
    if comm.rank == 0:
        with pytest.warns(UndefinedMetricWarning, match=match):
            yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        yield
    for warning in caught:
        assert not issubclass(warning.category, UndefinedMetricWarning), (
            f"rank {comm.rank} warned: {warning.message}")
        warnings.warn_explicit(warning.message, warning.category, warning.filename,
                               warning.lineno, source=warning.source)
