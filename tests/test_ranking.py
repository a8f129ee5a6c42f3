"""The ``ranking`` kind on one rank: against the plain-Python oracle (every order of each
tie enumerated, tags, graded labels), against scikit-learn's ``ndcg_score``, bad input,
the ``k`` option, the log line byte for byte and the JSON names."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import oracle_ranking
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score
from test_cli import run, write

from mpieval import RankingMetric
from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds.ranking.kernels import group_values, value_names


def computed(rows: dict[str, np.ndarray], k=(1, 2, 5), batches: int = 1) -> dict:
    metric = RankingMetric(comm=Comm.local(), k=k)
    for part in np.array_split(np.arange(len(rows["uid"])), batches):
        metric.update(rows["uid"][part], rows["pred"][part], rows["label"][part],
                      None if "tag" not in rows else rows["tag"][part])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute().to_dict()


def assert_matches_oracle(got: dict, rows: dict[str, np.ndarray], k) -> None:
    want = oracle_ranking.ranking(rows["uid"].tolist(), rows["pred"].tolist(),
                                  rows["label"].tolist(),
                                  rows["tag"].tolist() if "tag" in rows else None, sorted(set(k)))
    assert got["kind"] == "ranking" and got["k"] == sorted(set(k))
    assert list(got["tags"]) == list(want)
    for tag, block in want.items():
        mine = got["tags"][tag]
        for name, value in block.items():
            if value is None:
                assert mine[name] is None, (tag, name)
            elif isinstance(value, int):
                assert mine[name] == value, (tag, name)
            else:
                assert mine[name] == pytest.approx(value, rel=1e-12, abs=1e-15), (tag, name)


@st.composite
def users(draw) -> dict[str, np.ndarray]:
    """A few users of 1 to 9 rows: preds from a few values (ties), graded labels (many
    zeros, some users with none relevant), tags on some rows."""
    n_users = draw(st.integers(1, 6))
    uid, pred, label, tag = [], [], [], []
    for user in range(n_users):
        n = draw(st.integers(1, 9))
        uid += [user * 7 + 3] * n
        pred += draw(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.8, 0.9]), min_size=n,
                              max_size=n))
        label += draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.5, 3.0]), min_size=n,
                               max_size=n))
        tag += draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    order = draw(st.permutations(range(len(uid))))
    return {"uid": np.array(uid)[order], "pred": np.array(pred)[order],
            "label": np.array(label)[order], "tag": np.array(tag)[order]}


@settings(max_examples=150, deadline=None)
@given(users(), st.lists(st.integers(1, 12), min_size=1, max_size=4),
       st.booleans(), st.integers(1, 3), st.booleans())
def test_equals_the_oracle(rows, k, with_tags, batches, float32) -> None:
    """float32 preds (kept so) are ranked by one integer sort, others by lexsort."""
    if not with_tags:
        del rows["tag"]
    if float32:
        rows["pred"] = rows["pred"].astype(np.float32)
    assert_matches_oracle(computed(rows, k, batches), rows, k)


def test_a_large_user_with_long_ties_equals_the_oracle(rng) -> None:
    """Users past the oracle's enumeration (its direct expectation), ties across every
    cutoff, real-valued gains."""
    n = 400
    rows = {"uid": rng.integers(0, 4, n), "pred": rng.integers(0, 12, n) / 11,
            "label": np.where(rng.random(n) < 0.6, 0.0, rng.random(n) * 4)}
    k = (1, 3, 10, 50, 1000)
    assert_matches_oracle(computed(rows, k, batches=4), rows, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_user_equals_sklearn_ndcg_score(rng, dtype) -> None:
    """Per user of two or more rows with a relevant one: ndcg and ndcg@K are
    ``ndcg_score`` of that user (ties averaged, its default)."""
    n = 3000
    keys = rng.integers(0, 300, n).astype(np.uint64)
    pred = np.round(rng.random(n), 1).astype(dtype)  # many ties
    label = np.where(rng.random(n) < 0.5, 0.0, rng.integers(1, 4, n).astype(np.float64))
    cutoffs = (1, 3, 5, 10)
    values, valid, _, rows_per_user = group_values(keys, np.zeros(n, dtype=np.intp), pred,
                                                   label, cutoffs)
    names = value_names(cutoffs)
    checked = 0
    for i, user in enumerate(np.unique(keys)):
        mine = keys == user
        if rows_per_user[i] < 2 or not valid[i]:
            continue
        y_true, y_score = label[mine][None, :], pred[mine][None, :]
        assert values[i, names.index("ndcg")] == pytest.approx(
            ndcg_score(y_true, y_score), rel=1e-12)
        for cutoff in cutoffs:
            assert values[i, names.index(f"ndcg@{cutoff}")] == pytest.approx(
                ndcg_score(y_true, y_score, k=cutoff), rel=1e-12), (user, cutoff)
        checked += 1
    assert checked > 200


def test_invalid_users_count_as_real_users_only() -> None:
    rows = {"uid": np.array([1, 1, 2, 2, 2]), "pred": np.array([0.9, 0.1, 0.3, 0.2, 0.1]),
            "label": np.array([0.0, 1.0, 0.0, 0.0, 0.0])}
    block = computed(rows, k=(1,))["tags"]["all"]
    assert (block["valid_user_count"], block["real_user_count"], block["real_ins_num"]) == (
        1, 2, 5)
    assert block["ndcg"] == pytest.approx(1 / math.log2(3))  # user 1 alone
    assert block["recall@1"] == 0.0


def test_recall_of_a_tie_across_the_cutoff() -> None:
    """Three tied rows, one relevant, cutoff 2: it is in the first two with chance 2/3."""
    rows = {"uid": np.array([5, 5, 5]), "pred": np.array([0.4, 0.4, 0.4]),
            "label": np.array([0.0, 2.0, 0.0])}
    block = computed(rows, k=(1, 2, 3))["tags"]["all"]
    assert block["recall@1"] == pytest.approx(1 / 3)
    assert block["recall@2"] == pytest.approx(2 / 3)
    assert block["recall@3"] == 1.0


@pytest.mark.parametrize("steps", [4, 3])  # preds that are float32 values, and not
def test_values_do_not_depend_on_row_order(rng, steps) -> None:
    """The same bits: ties with gains whose sums round, in any order of rows and batches."""
    n = 2000
    rows = {"uid": rng.integers(0, 20, n).astype(str), "pred": rng.integers(0, 5, n) / steps,
            "label": rng.choice([0.0, 0.0, 0.1, 0.3, 0.7], n), "tag": rng.integers(0, 3, n)}
    want = computed(rows, batches=1)
    for _ in range(3):
        order = rng.permutation(n)
        assert computed({k: v[order] for k, v in rows.items()}, batches=5) == want


@pytest.mark.parametrize("label, problem", [
    (-1.0, "label: must be >= 0"),
    (math.nan, "label: must be finite"),
    (math.inf, "label: must be finite"),
])
def test_a_bad_label_names_the_field(label, problem) -> None:
    metric = RankingMetric(comm=Comm.local())
    with pytest.raises(InputError, match=problem) as caught:
        metric.update([1, 1, 2], [0.1, 0.2, 0.3], [1.0, label, 0.0])
    assert caught.value.field == "label"
    assert metric.rows == 0  # the bad batch changed nothing


def test_a_bad_pred_names_the_field() -> None:
    with pytest.raises(InputError, match="pred: must be finite"):
        RankingMetric(comm=Comm.local()).update([1, 2], [0.1, math.nan], [1.0, 0.0])


@pytest.mark.parametrize("k", [[], [0], [5, -1], ["5"], [1.5], [True], 5, "5,10", None])
def test_a_bad_k_names_the_option(k) -> None:
    with pytest.raises(InputError) as caught:
        RankingMetric(comm=Comm.local(), k=k)
    assert caught.value.field == "k"


def test_k_is_sorted_without_repeats() -> None:
    assert RankingMetric(comm=Comm.local(), k=[10, 5, 10]).k == (5, 10)
    assert RankingMetric(comm=Comm.local()).k == (5, 10, 20)


def test_the_log_line_byte_for_byte() -> None:
    """User 1 ranks its relevant row second of two, user 2 first, user 3 has none; the
    tag ``b`` holds no relevant row (nan)."""
    rows = {"uid": np.array([1, 1, 2, 2, 3]), "pred": np.array([0.9, 0.5, 0.7, 0.2, 0.4]),
            "label": np.array([0.0, 1.0, 1.0, 0.0, 0.0]),
            "tag": np.array(["a", "a", "a", "b", "b"])}
    metric = RankingMetric(comm=Comm.local(), k=[2, 1])
    metric.update(rows["uid"], rows["pred"], rows["label"], rows["tag"])
    with pytest.warns(UndefinedMetricWarning, match="tag b: no user has a relevant row"):
        result = metric.compute()
    mean = (1 + 1 / math.log2(3)) / 2  # the gain of rank 2 is 1 / log2(3), of rank 1 is 1
    assert result.to_log_line("rk").split("\n") == [
        f"rk: Tag=all NDCG={mean:g} NDCG@1=0.5 NDCG@2={mean:g} Recall@1=0.5 Recall@2=1 "
        "ValidUserCount=2 RealUserCount=3 RealInsNum=5",
        f"rk: Tag=a NDCG={mean:g} NDCG@1=0.5 NDCG@2={mean:g} Recall@1=0.5 Recall@2=1 "
        "ValidUserCount=2 RealUserCount=2 RealInsNum=3",
        "rk: Tag=b NDCG=nan NDCG@1=nan NDCG@2=nan Recall@1=nan Recall@2=nan "
        "ValidUserCount=0 RealUserCount=2 RealInsNum=2",
    ]
    assert f"{mean:g}" == "0.815465"


def test_json_names_and_intervals(rng) -> None:
    n = 600
    rows = {"uid": rng.integers(0, 60, n), "pred": rng.random(n),
            "label": rng.integers(0, 2, n).astype(np.float64),
            "tag": rng.choice(np.array(["x", "y"]), n)}
    got = computed(rows, k=(3, 1))
    assert list(got) == ["kind", "k", "tags"] and got["k"] == [1, 3]
    assert list(got["tags"]) == ["all", "x", "y"]
    names = ["ndcg", "ndcg@1", "ndcg@3", "recall@1", "recall@3"]
    for block in got["tags"].values():
        assert list(block) == [*names, "valid_user_count", "real_user_count",
                               "real_ins_num", "ci95"]
        assert list(block["ci95"]) == names
        for name in names:
            low, high = block["ci95"][name]
            assert 0 <= low <= block[name] <= high <= 1


def test_interval_is_the_cluster_standard_error() -> None:
    """Twelve users, half with ndcg 1 and half 1/log2(3): mean m, se = sd / sqrt(12) (sd
    over 11 degrees of freedom), the interval m -/+ t(0.975, 11) se (2.200985, from the
    tables)."""
    users = 12
    rows = {"uid": np.repeat(np.arange(users), 2),
            "pred": np.tile([0.9, 0.5, 0.7, 0.2], users // 2),
            "label": np.tile([0.0, 1.0, 1.0, 0.0], users // 2)}
    block = computed(rows, k=(2,))["tags"]["all"]
    values = [1 / math.log2(3), 1.0] * (users // 2)
    mean = sum(values) / users
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (users - 1)) / math.sqrt(users)
    low, high = block["ci95"]["ndcg"]
    assert low == pytest.approx(mean - 2.200985 * se, rel=1e-6)
    assert high == pytest.approx(min(1.0, mean + 2.200985 * se), rel=1e-6)


def test_few_valid_users_have_no_interval_and_warn() -> None:
    metric = RankingMetric(comm=Comm.local(), k=[1])
    metric.update(np.repeat(np.arange(9), 2), np.tile([0.2, 0.1], 9), np.tile([1.0, 0.0], 9))
    with pytest.warns(UndefinedMetricWarning, match="needs 10 valid users"):
        block = metric.compute().to_dict()["tags"]["all"]
    assert block["ndcg"] == 1.0 and block["ci95"]["ndcg"] is None


# -- the command line ------------------------------------------------------------------


def test_the_command_line_equals_the_oracle_and_the_api(tmp_path, capsys, rng) -> None:
    n = 1500
    rows = {"uid": rng.integers(0, 120, n) * 7919 + 10**12, "pred": np.round(rng.random(n), 2),
            "label": rng.integers(0, 4, n) * (rng.random(n) < 0.4),
            "tag": rng.choice(np.array(["feed", "search"]), n)}
    path = write(str(tmp_path / "rank.tsv"), rows)
    out = tmp_path / "out.json"
    status, stdout, err = run(capsys, "eval", "--metrics", "ranking", "--k", "10, 3",
                              "--tag", "tag", path, "--json", out)
    assert status == 0, err
    got = json.loads(out.read_text())["ranking"]
    assert_matches_oracle(got, {**rows, "tag": rows["tag"]}, (3, 10))
    metric = RankingMetric(comm=Comm.local(), k=[3, 10])
    metric.update(rows["uid"].astype(str), rows["pred"], rows["label"], rows["tag"])
    assert stdout.splitlines() == metric.compute().to_log_line("ranking").splitlines()


def test_the_config_key_k(tmp_path, capsys) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t2\nb\t0.3\t1\nb\t0.1\t0\n")
    config = tmp_path / "m.toml"
    config.write_text('[metrics.top]\nkind = "ranking"\nk = [2, 1]\n')
    status, stdout, err = run(capsys, "eval", "--config", config, data)
    assert status == 0, err
    assert stdout.startswith("top: Tag=all NDCG=") and " NDCG@1=0.5 NDCG@2=" in stdout


@pytest.mark.parametrize(("argv", "message"), [
    (["--metrics", "ranking", "--k", "0"], "k: must be a list of positive integers"),
    (["--metrics", "ranking", "--k", "5,x"], "k: must be a list of positive integers"),
    (["--metrics", "ranking", "--k", ""], "k: must be a list of positive integers"),
    (["--metrics", "auc", "--k", "5"], "--k: no metric of --metrics auc uses it"),
])
def test_bad_cutoff_flags_exit_2(tmp_path, capsys, argv, message) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t2\n")
    status, stdout, err = run(capsys, "eval", *argv, data)
    assert status == 2 and stdout == ""
    assert message in err


def test_a_negative_label_in_a_file_names_its_line_and_column(tmp_path, capsys) -> None:
    data = tmp_path / "r.tsv"
    data.write_text("uid\tpred\tlabel\na\t0.9\t0\na\t0.5\t-2\n")
    status, stdout, err = run(capsys, "eval", "--metrics", "ranking", data)
    assert status == 2 and stdout == ""
    assert f"{data}:3: column label:" in err and "must be >= 0" in err


# -- the report ------------------------------------------------------------------------


def test_the_report_shows_each_tag_with_its_values_and_intervals(tmp_path, capsys, rng) -> None:
    from test_report import parse

    from mpieval import report

    n = 800
    rows = {"uid": rng.integers(0, 80, n), "pred": np.round(rng.random(n), 2),
            "label": rng.integers(0, 3, n) * (rng.random(n) < 0.4),
            "tag": rng.choice(np.array(["feed", "search"]), n)}
    path = write(str(tmp_path / "rank.tsv"), rows)
    out, page_path = tmp_path / "run.json", tmp_path / "page.html"
    status, _, err = run(capsys, "eval", "--metrics", "ranking", "--k", "3,1", "--tag", "tag",
                         path, "--json", out, "--report", page_path)
    assert status == 0, err
    result = json.loads(out.read_text())["ranking"]
    text = " ".join(parse(page_path.read_text()).text)
    for heading in ("NDCG", "NDCG@1", "NDCG@3", "Recall@1", "Recall@3"):
        assert heading in text
    for tag in ("all", "feed", "search"):
        block = result["tags"][tag]
        for name in ("ndcg", "ndcg@3", "recall@1"):
            low, high = block["ci95"][name]
            # the tags' tables are compact: 4 significant digits, the interval as [low, high]
            assert f"{block[name]:.4g}" in text and f"[{low:.4g}, {high:.4g}]" in text
        assert f"{block['valid_user_count']:,} / {block['real_user_count']:,}" in text
    # two runs side by side: a row per run under each tag
    other = tmp_path / "other.json"
    other.write_text(out.read_text())
    both = " ".join(parse(report.render(report.load_runs([str(out), str(other)]))).text)
    assert both.count(f"{result['tags']['search']['ndcg']:.4g}") == 2 * text.count(
        f"{result['tags']['search']['ndcg']:.4g}")
