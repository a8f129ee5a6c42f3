"""Shared test fixtures. Multi-rank tests are marked ``@pytest.mark.mpi`` and run under
``mpiexec -n N python -m pytest --with-mpi -m mpi``; their assertions hold for any N."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/ helpers (oracles, sharding)

from mpieval.comm import Comm
from mpieval.errors import UndefinedMetricWarning


@pytest.fixture(scope="session")
def comm() -> Comm:
    """The world communicator as mpieval sees it (one rank without MPI)."""
    return Comm()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name: the same data on every rank."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % 2**32
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True)
def _undefined_warnings_are_expected_only_when_asserted():
    """An :class:`UndefinedMetricWarning` that reaches the end of a test fails the test: a
    test that expects one asserts it (``pytest.warns``, or :func:`undefined.warns_undefined`
    across ranks), or silences it where undefined values are beside its point.

    Recorded and failed at teardown rather than raised where it is issued: only rank 0
    warns, and an exception on rank 0 alone would leave the other ranks waiting in the
    test's next collective. Other warnings are passed on to pytest unchanged.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        yield
    unexpected = []
    for warning in caught:
        if issubclass(warning.category, UndefinedMetricWarning):
            unexpected.append(f"{warning.filename}:{warning.lineno}: {warning.message}")
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno, source=warning.source)
    if unexpected:
        pytest.fail("UndefinedMetricWarning not expected by the test:\n  "
                    + "\n  ".join(unexpected), pytrace=False)
