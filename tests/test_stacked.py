"""Stacked states (mpieval.state.Stacked, a kind's slices): a part counted in uint32 beside
its float64 array is added to it before any read, whatever reads it, and before a count
could pass uint32's range."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from mpieval.state import Stacked, Summed


def _stacked(states: int = 3) -> Stacked:
    stacked = Stacked({"table": Summed((2, 4)), "sums": Summed((3,))})
    stacked.append(states)
    return stacked


def _counted(stacked: Stacked) -> np.ndarray:
    counts = stacked.counts("table", 5)
    assert counts.dtype == np.uint32 and counts.shape == (len(stacked.array("sums")), 2, 4)
    counts[1, 0, 2] += 5
    counts[2, 1, 3] += 1
    want = np.zeros((3, 2, 4))
    want[1, 0, 2], want[2, 1, 3] = 5, 1
    return want


@pytest.mark.parametrize("read", [
    lambda s: s["table"].copy(),
    lambda s: s.array("table")[: len(s)].copy(),
    lambda s: np.stack([s.state(k).summed("table") for k in range(len(s))]),
    lambda s: pickle.loads(pickle.dumps(s))["table"],
    lambda s: copy.deepcopy(s)["table"],
])
def test_counts_are_in_the_part_whatever_reads_it(read) -> None:
    stacked = _stacked()
    stacked.array("table")[1, 0, 2] = 2.0  # counted before, as float64
    want = _counted(stacked)
    want[1, 0, 2] += 2
    assert np.array_equal(read(stacked), want)
    assert np.array_equal(stacked["table"], want)  # added once


def test_another_part_read_leaves_the_counts_waiting() -> None:
    stacked = _stacked()
    want = _counted(stacked)
    stacked.array("sums")[0] += 1  # the kernel's other parts, read each batch
    counts = stacked.counts("table", 5)
    counts[1, 0, 2] += 5
    want[1, 0, 2] += 5
    assert np.array_equal(stacked["table"], want)


def test_growing_and_adding_states_keep_the_counts() -> None:
    stacked = _stacked()
    want = _counted(stacked)
    assert stacked.append(20) == 3  # grown: the arrays made again
    grown = np.zeros((23, 2, 4))
    grown[:3] = want
    assert np.array_equal(stacked["table"], grown)
    stacked = _stacked()
    want = _counted(stacked)
    stacked.add(np.array([0]), {"table": np.ones((1, 2, 4)), "sums": np.zeros((1, 3))})
    want[0] += 1
    assert np.array_equal(stacked["table"], want)


def test_counts_are_added_before_they_could_pass_uint32() -> None:
    stacked = _stacked()
    most = np.iinfo(np.uint32).max
    counts = stacked.counts("table", most)
    counts[0, 0, 0] = most
    again = stacked.counts("table", 1)  # most + 1 could overflow: added first
    assert again is not counts and not again.any()
    again[0, 0, 0] += 1
    assert stacked["table"][0, 0, 0] == float(most) + 1
