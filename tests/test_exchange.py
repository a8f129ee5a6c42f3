"""The exchange of rows to their users' owners (:mod:`mpieval.exchange`).

The ``mpi``-marked tests run under ``mpiexec -n N``; their assertions hold for any N."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import RemoteError, UidCollisionError
from mpieval.exchange import gather_by_user, group_rows
from mpieval.kernels import keys as kernels
from mpieval.keys import uid_keys


def test_group_rows_makes_users_contiguous_in_arrival_order() -> None:
    keys = np.array([5, 3, 5, 3, 9, 5], dtype=np.uint64)
    rows = group_rows(keys, {"row": np.arange(6)})
    assert rows.keys.tolist() == [3, 3, 5, 5, 5, 9]
    assert rows.starts.tolist() == [0, 2, 5, 6]
    assert rows.columns["row"].tolist() == [1, 3, 0, 2, 5, 4]
    assert rows.user_keys.tolist() == [3, 5, 9]
    assert rows.counts.tolist() == [2, 3, 1]
    empty = group_rows(np.zeros(0, np.uint64), {"row": np.zeros(0)})
    assert empty.starts.tolist() == [0] and empty.n_users == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 5), max_size=300))
def test_group_rows_unstable_holds_each_key_s_rows(keys) -> None:
    """``stable=False`` (one radix sort): the keys sorted, each key's rows those of the
    stable sort in some order, the checks' collisions found alike."""
    keys = np.array(keys, dtype=np.uint64)
    row = np.arange(len(keys))
    stable = group_rows(keys, {"row": row}, checks=keys // 3)
    found = group_rows(keys, {"row": row}, checks=keys // 3, stable=False)
    assert np.array_equal(found.keys, stable.keys)
    assert np.array_equal(found.starts, stable.starts)
    for start, stop in zip(stable.starts[:-1], stable.starts[1:], strict=True):
        assert sorted(found.columns["row"][start:stop]) == list(stable.columns["row"][start:stop])
    if len(keys):
        checks = keys // 3
        checks[-1] += 1  # a key of several rows with another check: a collision
        if (keys == keys[-1]).sum() > 1:
            with pytest.raises(UidCollisionError):
                group_rows(keys, {}, checks=checks, stable=False)


def test_group_rows_detects_a_key_collision() -> None:
    keys = np.array([1, 2, 1], dtype=np.uint64)
    with pytest.raises(UidCollisionError, match="collision"):
        group_rows(keys, {}, checks=np.array([10, 20, 11], dtype=np.uint64))
    group_rows(keys, {}, checks=np.array([10, 20, 10], dtype=np.uint64))


# -- across ranks ----------------------------------------------------------------------


@pytest.mark.mpi
def test_gather_by_user_puts_each_user_on_one_rank(comm: Comm, rng: np.random.Generator) -> None:
    n = 5000
    rows = {"uid": rng.integers(0, 700, size=n).astype(np.int64),
            "pred": rng.random(n), "row": np.arange(n)}
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    owned = gather_by_user(comm, uid_keys("uid", mine["uid"]),
                           {"pred": mine["pred"], "row": mine["row"]})
    everything = comm.allgather((owned.user_keys.tolist(), owned.columns["row"].tolist()))
    users = [u for user_keys, _ in everything for u in user_keys]
    assert len(users) == len(set(users)) == len(np.unique(rows["uid"]))  # one owner each
    assert sorted(r for _, got in everything for r in got) == list(range(n))  # every row once
    owner = kernels.owner_of(owned.user_keys, comm.size)
    assert np.all(owner == comm.rank)
    for u in range(owned.n_users):
        part = slice(owned.starts[u], owned.starts[u + 1])
        assert np.all(rows["uid"][owned.columns["row"][part]] == owned.keys[part].astype(np.int64))


@pytest.mark.mpi
def test_a_collision_on_one_rank_fails_every_rank(comm: Comm) -> None:
    keys = np.array([1, 1], dtype=np.uint64) if comm.rank == 0 else np.zeros(0, np.uint64)
    checks = np.array([5, 6], dtype=np.uint64) if comm.rank == 0 else np.zeros(0, np.uint64)
    with pytest.raises((UidCollisionError, RemoteError), match="collision"):
        gather_by_user(comm, keys, {}, checks=checks)
    # the communicator still works afterwards
    assert comm.allgather(comm.rank) == list(range(comm.size))


@pytest.mark.mpi
def test_mismatched_columns_fail_every_rank(comm: Comm) -> None:
    if comm.size == 1:
        pytest.skip("needs two ranks to disagree")
    dtype = np.float64 if comm.rank == 0 else np.float32
    with pytest.raises(ValueError, match="different columns"):
        gather_by_user(comm, np.zeros(3, np.uint64), {"pred": np.zeros(3, dtype)})
    with pytest.raises(ValueError, match=r"rank 0: .*one length"):
        gather_by_user(comm, np.zeros(3 if comm.rank else 2, np.uint64), {"x": np.zeros(3)})


def test_a_kind_without_kept_rows_loads_no_exchange() -> None:
    """``auc`` keeps no rows: updating and computing it imports neither the exchange nor a
    schema reader (``json``, ``importlib.resources``), which start-up would pay for."""
    program = (
        "import sys\nimport numpy as np\nfrom mpieval import AucMetric, Comm\n"
        "metric = AucMetric(comm=Comm.local())\n"
        "metric.update(np.array([0.1, 0.9]), np.array([0, 1]))\nmetric.compute()\n"
        "print(sorted(m for m in ('mpieval.exchange', 'json', 'importlib.resources')"
        " if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", program], check=True,
                          capture_output=True, text=True)
    assert done.stdout.strip() == "[]"
