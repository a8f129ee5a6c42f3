"""The ``ranking`` kind beside torchmetrics' retrieval metrics (where torchmetrics is
installed: the ``peers`` extra), and the conventions docs/kinds/ranking.md states: a user
without a relevant row is left out of the means (torchmetrics by default counts it as 0),
a user with a single relevant row scores 1."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mpieval import RankingMetric
from mpieval.comm import Comm
from mpieval.errors import UndefinedMetricWarning

K = (1, 3, 5)


def users_rows(seed: int) -> dict[str, np.ndarray]:
    """Users of 1 to 8 rows, graded labels 0..3 (about a third of the users without a
    relevant row), preds without ties (torchmetrics' recall breaks ties by position)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, 300)
    uid = np.repeat(np.arange(len(sizes)), sizes)
    relevant_user = rng.random(len(sizes)) < 0.65
    label = np.where(relevant_user[uid] & (rng.random(len(uid)) < 0.4),
                     rng.integers(1, 4, len(uid)), 0)
    pred = rng.permutation(len(uid)) / len(uid)  # distinct
    order = rng.permutation(len(uid))  # a user's rows anywhere
    return {"uid": uid[order], "pred": pred[order], "label": label[order]}


def block(rows: dict[str, np.ndarray]) -> dict:
    """mpieval's ``all`` block of the rows (one process)."""
    metric = RankingMetric(comm=Comm.local(), k=list(K))
    metric.update(rows["uid"], rows["pred"], rows["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()["tags"]["all"]


def test_a_user_with_a_single_relevant_row_scores_1_and_one_without_is_left_out() -> None:
    one_row = {"uid": np.array([1, 2, 3]), "pred": np.array([0.1, 0.9, 0.5]),
               "label": np.array([1, 3, 0])}  # user 3: no relevant row
    got = block(one_row)
    assert (got["valid_user_count"], got["real_user_count"]) == (2, 3)
    assert all(got[name] == 1.0 for name in ("ndcg", *(f"ndcg@{k}" for k in K),
                                             *(f"recall@{k}" for k in K)))


@pytest.mark.parametrize("seed", [1, 2])
def test_ndcg_and_recall_equal_torchmetrics_with_the_empty_query_action_spelled_out(
    seed: int
) -> None:
    """torchmetrics with ``empty_target_action="skip"`` gives mpieval's values; its
    default (``"neg"``: a user without a relevant row scores 0 and counts) gives mpieval's
    times valid / real users."""
    torch = pytest.importorskip("torch")
    retrieval = pytest.importorskip("torchmetrics.retrieval")
    rows = users_rows(seed)
    got = block(rows)
    valid, real = got["valid_user_count"], got["real_user_count"]
    assert 0 < valid < real
    preds = torch.from_numpy(rows["pred"])
    indexes = torch.from_numpy(rows["uid"])
    graded = torch.from_numpy(rows["label"])
    relevant = graded > 0
    for k in (None, *K):
        name = "ndcg" if k is None else f"ndcg@{k}"
        skip = retrieval.RetrievalNormalizedDCG(empty_target_action="skip", top_k=k)
        default = retrieval.RetrievalNormalizedDCG(top_k=k)
        assert float(skip(preds, graded, indexes=indexes)) == pytest.approx(got[name], abs=1e-6)
        assert float(default(preds, graded, indexes=indexes)) == pytest.approx(
            got[name] * valid / real, abs=1e-6)
    for k in K:
        skip = retrieval.RetrievalRecall(empty_target_action="skip", top_k=k)
        default = retrieval.RetrievalRecall(top_k=k)
        want = got[f"recall@{k}"]
        assert float(skip(preds, relevant, indexes=indexes)) == pytest.approx(want, abs=1e-6)
        assert float(default(preds, relevant, indexes=indexes)) == pytest.approx(
            want * valid / real, abs=1e-6)
