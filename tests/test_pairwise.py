"""The ``pairwise`` kind: counts against a plain-Python loop, the seed's log line, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval.comm import Comm
from mpieval.errors import InputError
from mpieval.kinds.pairwise.metric import PairwiseMetric, PairwiseResult

SEED_LINE = (
    "click_ins_ratio: Ins=78998676 Same_label_click=13648034 Left_label_click=17479466 "
    "Right_label_click=17364220 Same_label_unclick=30506956"
)


def oracle(left: list[int], right: list[int]) -> dict[str, int]:
    """One row at a time, the seed's four cases."""
    counts = dict.fromkeys(
        ["same_label_click", "left_label_click", "right_label_click", "same_label_unclick"], 0
    )
    for a, b in zip(left, right, strict=True):
        if a == 1 and b == 1:
            counts["same_label_click"] += 1
        elif a == 1:
            counts["left_label_click"] += 1
        elif b == 1:
            counts["right_label_click"] += 1
        else:
            counts["same_label_unclick"] += 1
    return {"kind": "pairwise", "ins": len(left), **counts}


def test_seed_log_line_through_the_result_object() -> None:
    result = PairwiseResult(
        ins=78998676,
        same_label_click=13648034,
        left_label_click=17479466,
        right_label_click=17364220,
        same_label_unclick=30506956,
    )
    assert result.to_log_line("click_ins_ratio") == SEED_LINE


def test_counts_match_the_row_loop(comm: Comm, rng: np.random.Generator) -> None:
    left = rng.integers(0, 2, size=1000)
    right = rng.integers(0, 2, size=1000)
    metric = PairwiseMetric(comm=comm)
    metric.update(left[:300], right[:300])
    metric.update(left[300:].astype(np.float32), right[300:].astype(bool))
    result = metric.compute()
    assert result.to_dict() == oracle(left.tolist(), right.tolist())
    assert json.loads(json.dumps(result.to_dict())) == result.to_dict()
    total = (result.same_label_click + result.left_label_click + result.right_label_click
             + result.same_label_unclick)
    assert total == result.ins == 1000


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), max_size=40),
       st.integers(0, 40))
def test_any_batching_gives_the_oracle(comm: Comm, pairs: list[tuple[int, int]], cut: int) -> None:
    left = [a for a, _ in pairs]
    right = [b for _, b in pairs]
    metric = PairwiseMetric(comm=comm)
    cut = min(cut, len(pairs))
    metric.update(np.array(left[:cut], dtype=np.int64), np.array(right[:cut], dtype=np.int64))
    metric.update(np.array(left[cut:], dtype=np.int64), np.array(right[cut:], dtype=np.int64))
    assert metric.compute().to_dict() == oracle(left, right)


def test_no_rows_is_all_zero(comm: Comm) -> None:
    result = PairwiseMetric(comm=comm).compute()
    assert result.to_log_line("p") == (
        "p: Ins=0 Same_label_click=0 Left_label_click=0 Right_label_click=0 Same_label_unclick=0"
    )


@pytest.mark.parametrize(
    ("left", "right", "field", "count", "first"),
    [
        ([0, 1, 2, 1, 3], [0, 0, 0, 0, 0], "left_label", 2, 2),
        ([0, 1, 1], [0.0, 0.5, 0.25], "right_label", 2, 1),
        ([0, 1, 1], [0.0, np.nan, 1.0], "right_label", 1, 1),
        ([-1, 1], [0, 1], "left_label", 1, 0),
    ],
)
def test_bad_labels_name_field_count_and_first_index(
    comm: Comm, left: list[float], right: list[float], field: str, count: int, first: int
) -> None:
    metric = PairwiseMetric(comm=comm)
    with pytest.raises(InputError) as info:
        metric.update(np.array(left), np.array(right))
    assert (info.value.field, info.value.count, info.value.first_index) == (field, count, first)
    with pytest.raises(InputError):  # the recorded error fails the compute too
        metric.compute()


def test_length_mismatch_and_shape_are_rejected(comm: Comm) -> None:
    metric = PairwiseMetric(comm=comm)
    with pytest.raises(InputError, match="length mismatch"):
        metric.update([0, 1], [1])
    with pytest.raises(InputError, match="1-D"):
        PairwiseMetric(comm=comm).update([[0, 1]], [[1, 0]])
    with pytest.raises(InputError, match="numeric"):
        PairwiseMetric(comm=comm).update(["a"], ["b"])


@pytest.mark.mpi
def test_ranks_sum_their_rows(comm: Comm, rng: np.random.Generator) -> None:
    from sharding import my_rows

    left = rng.integers(0, 2, size=5000)
    right = rng.integers(0, 2, size=5000)
    mine = my_rows({"left": left, "right": right}, comm.rank, comm.size, rng)
    metric = PairwiseMetric(comm=comm)
    metric.update(mine["left"], mine["right"])
    assert metric.compute().to_dict() == oracle(left.tolist(), right.tolist())
