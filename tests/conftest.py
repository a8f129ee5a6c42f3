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
    """The world communicator as mpieval sees it (one rank without mpiexec)."""
    return Comm()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name: the same data on every rank."""
    seed = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % 2**32
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True)
def _undefined_warnings_are_expected_only_when_asserted():
    with warnings.catch_warnings():
        warnings.simplefilter("default", UndefinedMetricWarning)
        yield
