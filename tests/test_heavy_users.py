"""A heavy user's owner hands light users to the other ranks (``user_rows.shed_plan`` and
its buckets): the plan against its definition, whole users moved, the heavy user kept.
Across ranks: ``test_wuauc_mpi.py`` (the bits of one process, the owner holding fewer
rows)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval.user_rows import SHED_ABOVE, _shed_destinations, shed_plan


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=40))
def test_the_plan_moves_only_the_excess_to_ranks_below_the_mean(counts: list[int]) -> None:
    held = np.array(counts, dtype=np.int64)
    plan = shed_plan(held)
    mean = held.sum() / len(held)
    if plan is None:
        assert len(held) < 2 or held.max() <= SHED_ABOVE * mean
        return
    assert held.max() > SHED_ABOVE * mean and (plan >= 0).all()
    givers = held > SHED_ABOVE * mean
    assert not plan[~givers].any(), "only a rank above the bound gives"
    assert not plan[:, held >= mean].any(), "only a rank below the mean receives"
    after = held - plan.sum(axis=1) + plan.sum(axis=0)
    assert (after[givers] >= np.floor(mean)).all(), "a giver keeps the mean"
    assert (after[plan.sum(axis=0) > 0] <= np.ceil(mean)).all(), "a receiver stops at it"
    assert after.sum() == held.sum()


def test_whole_users_leave_and_the_heavy_user_stays(rng: np.random.Generator) -> None:
    keys = np.where(rng.random(50_000) < 0.4, 10**12, rng.integers(0, 20_000, 50_000))
    keys = keys.astype(np.uint64)
    wanted = np.array([0, 9000, 0, 6000])
    to, bucket = _shed_destinations(keys, wanted, rank=2)
    dest = to[bucket]
    assert (dest[keys == 10**12] == 2).all()
    for key in np.unique(keys):
        assert len(np.unique(dest[keys == key])) == 1, "a user's rows go together"
    sent = np.bincount(dest, minlength=4)
    assert sent[0] == 0 and 8000 <= sent[1] <= 9000 and 5000 <= sent[3] <= 6000
