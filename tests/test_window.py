"""Windowed values (``window=``): the window's values are those of a fresh metric fed
only the last ``window`` rows, in the same batches; the lifetime values, the JSON's
other fields and the Abacus line do not change; checkpoints, merges, pickles and
``reset()`` carry the window. One process; ``test_window_mpi.py`` has the ranks."""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from kinds import NAMES, build, fixture

from mpieval import AucMetric, Evaluator, PairwiseMetric, checkpoint
from mpieval.comm import Comm
from mpieval.config import specs_from_config
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kernels.exact import DIGITS
from mpieval.kinds import KINDS
from mpieval.kinds.auc import moments
from mpieval.kinds.auc.kernels import N_SUMS
from mpieval.metric import Metric, Result

Rows = dict[str, np.ndarray]
Bounds = list[tuple[int, int]]


def _auc_rows(rng: np.random.Generator, n: int) -> Rows:
    return {"pred": rng.integers(0, 50, n) / 49, "label": rng.integers(0, 2, n)}


Case = tuple[Callable[[Comm, int | None], Metric], Callable[[np.random.Generator, int], Rows]]


def _kind_case(name: str) -> Case:
    """A windowed kind with its fixture's (small) options and rows."""
    data = fixture(name)
    return (lambda comm, window: build(name, {**data.fast_options, "window": window}, comm),
            data.plain_rows)


# Every kind with a window, and two more cases of auc's.
CASES: dict[str, Case] = {
    **{name: _kind_case(name) for name in NAMES
       if "window" in {option.name for option in KINDS[name].declared_options}},
    "auc weighted": (
        lambda comm, window: AucMetric(table_size=64, window=window, comm=comm),
        lambda rng, n: {**_auc_rows(rng, n), "weight": rng.integers(0, 4, n) / 2}),
    "auc soft compare": (
        lambda comm, window: AucMetric(table_size=64, soft_labels=True, compare="b",
                                       window=window, comm=comm),
        lambda rng, n: {"pred": rng.random(n), "label": rng.integers(0, 5, n) / 4,
                        "compare": rng.random(n).astype(np.float32)}),
}


def window_rows(case: str, result: Result) -> int:
    """The rows of the result's window: its field that counts rows (the fixture's
    ``row_counts``)."""
    (field,) = fixture(case.split()[0]).row_counts
    count: int = getattr(result.window, field)
    return count


def batches(n: int, size: int) -> Bounds:
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def feed(metric: Metric, rows: Rows, bounds: Bounds) -> Metric:
    for a, b in bounds:
        metric.update(**{name: column[a:b] for name, column in rows.items()})
    return metric


def last(bounds: Bounds, rows: int) -> Bounds:
    """The batches cut to the last ``rows`` rows (the oldest one cut at the row)."""
    start = max(0, bounds[-1][1] - rows) if bounds else 0
    return [(max(a, start), b) for a, b in bounds if b > start]


def computed(metric: Metric) -> Result:
    """The result; undefined values (few rows in a window) are beside the point here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def as_dict(result: Result) -> dict:
    return result.to_dict()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("n", "batch", "window"), [
    (1000, 100, 300),   # the window a multiple of the batch
    (1000, 128, 300),   # batches cross the window's start: the oldest is cut at the row
    (1000, 450, 300),   # batches larger than the window
    (1000, 1, 7),       # one row a batch
    (250, 100, 300),    # fewer rows than the window: every row
    (300, 100, 300),    # exactly the window
])
def test_the_window_is_a_fresh_metric_fed_the_last_rows(case, n, batch, window, rng):
    make, data = CASES[case]
    rows, bounds = data(rng, n), batches(n, batch)
    result = computed(feed(make(Comm.local(), window), rows, bounds))
    fresh = computed(feed(make(Comm.local(), None), rows, last(bounds, window)))
    assert result.window is not None
    assert as_dict(result.window) == as_dict(fresh)
    expected = min(n, window)
    assert window_rows(case, result) == expected


@pytest.mark.parametrize("case", CASES)
def test_lifetime_values_json_and_log_line_are_those_without_a_window(case, rng):
    make, data = CASES[case]
    rows, bounds = data(rng, 900), batches(900, 128)
    windowed = computed(feed(make(Comm.local(), 200), rows, bounds))
    plain = computed(feed(make(Comm.local(), None), rows, bounds))
    assert plain.window is None and "window" not in as_dict(plain)
    got = as_dict(windowed)
    window = got.pop("window")
    assert got == as_dict(plain)
    assert windowed.to_log_line("m") == plain.to_log_line("m")
    assert "kind" not in window  # the enclosing block's kind; the kind's usual names
    assert window == {k: v for k, v in as_dict(windowed.window).items() if k != "kind"}
    assert set(window) == set(got) - {"kind"}


def test_window_values_differ_from_lifetime_when_recent_rows_do():
    # the last 100 rows are all positive-left pairs: the window sees only those
    metric = PairwiseMetric(comm=Comm.local(), window=100)
    metric.update(np.zeros(900), np.zeros(900))
    metric.update(np.ones(100), np.zeros(100))
    result = metric.compute()
    assert (result.same_label_unclick, result.left_label_click) == (900, 100)
    assert result.window is not None
    assert (result.window.same_label_unclick, result.window.left_label_click) == (0, 100)
    assert result.to_dict()["window"] == {"ins": 100, "same_label_click": 0,
                                          "left_label_click": 100, "right_label_click": 0,
                                          "same_label_unclick": 0}


@pytest.mark.parametrize("summing", [False, True])
def test_the_window_and_the_lifetime_are_one_sum_of_one_buffer(monkeypatch, rng, summing):
    """On a communicator that sums (here one whose sums alone are the job's, as Spark's
    rounds: ``sums_only``), every metric's parts and windows go in one sum of one buffer; a
    rank alone sums nothing (its parts go to finish as they are), with the same results."""
    sums = []
    original = Comm.sum

    def counted(self, buffer, **options):
        sums.append(len(buffer))
        return original(self, buffer, **options)

    monkeypatch.setattr(Comm, "sum", counted)
    rows = _auc_rows(rng, 500)
    comm = Comm.local()
    comm.sums_only = summing
    ev = Evaluator({"a": AucMetric(table_size=64, window=100), "b": AucMetric(table_size=32),
                    "p": PairwiseMetric(window=10)}, comm=comm)
    ev["a"].update(rows["pred"], rows["label"])
    ev["b"].update(rows["pred"], rows["label"])
    ev["p"].update(rows["label"], rows["label"])
    results = computed_all(ev)
    sums_size = (N_SUMS + len(moments.FIELDS)) * DIGITS  # the exact sums and the moments
    state = 2 * 64 + sums_size
    assert sums == ([2 * state + (2 * 32 + sums_size) + 2 * 4] if summing else [])
    assert results["a"].window is not None and results["a"].window.rows == 100
    assert results["b"].window is None
    assert results["p"].window is not None and results["p"].window.ins == 10


def computed_all(ev: Evaluator) -> dict[str, Result]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return ev.compute()


def test_undefined_window_values_warn_under_the_window_name(rng):
    metric = AucMetric(table_size=64, window=10, comm=Comm.local())
    metric.update(rng.random(100), np.r_[np.zeros(90), np.ones(10)])  # the window: one class
    with pytest.warns(UndefinedMetricWarning) as caught:
        result = metric.compute()
    assert result.window is not None and np.isnan(result.window.auc)
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("auc window: ") and "only one class" in m for m in messages)
    assert result.to_dict()["window"]["auc"] is None


@pytest.mark.parametrize("case", CASES)
def test_a_checkpoint_mid_window_resumes_as_an_uninterrupted_run(case, rng, tmp_path):
    make, data = CASES[case]
    rows, bounds = data(rng, 1000), batches(1000, 128)
    if case == "auc weighted":  # some batches without weights: saved as such
        rows_unweighted = {k: v for k, v in rows.items() if k != "weight"}
    uninterrupted = make(Comm.local(), 300)
    first = make(Comm.local(), 300)
    for index, (a, b) in enumerate(bounds):
        for metric in ((uninterrupted, first) if index < 5 else (uninterrupted,)):
            given = rows_unweighted if case == "auc weighted" and index % 2 else rows
            metric.update(**{name: column[a:b] for name, column in given.items()})
    path = tmp_path / "metrics-0.npz"
    checkpoint.save(path, {"m": first.state_dict()})  # 640 rows: the oldest batch is cut
    resumed = make(Comm.local(), 300)
    resumed.load_state_dict(checkpoint.load(path)["m"])
    assert as_dict(computed(resumed)) == as_dict(computed(first))
    for index, (a, b) in enumerate(bounds[5:], start=5):
        given = rows_unweighted if case == "auc weighted" and index % 2 else rows
        resumed.update(**{name: column[a:b] for name, column in given.items()})
    assert as_dict(computed(resumed)) == as_dict(computed(uninterrupted))


def test_a_checkpoint_of_a_metric_without_window_has_no_window_keys(rng):
    rows = _auc_rows(rng, 100)
    plain = AucMetric(table_size=64, comm=Comm.local())
    windowed = AucMetric(table_size=64, window=10, comm=Comm.local())
    for metric in (plain, windowed):
        metric.update(rows["pred"], rows["label"])
    assert not any(key.startswith("window.") for key in plain.state_dict())
    state = windowed.state_dict()
    assert state["window.rows"].tolist() == [10] and len(state["window.pred"]) == 10
    with pytest.raises(ValueError, match="saved options"):
        plain.load_state_dict(state)


@pytest.mark.parametrize("case", CASES)
def test_several_saved_parts_load_with_all_their_windows_then_cut_oldest_first(case, rng):
    """N -> M: a rank loading two saved ranks' states holds both windows (the job's window
    is the saved one); its next rows cut that back to ``window`` rows, oldest first."""
    make, data = CASES[case]
    parts = [data(rng, 500), data(rng, 300)]
    writers = [feed(make(Comm.local(), 200), part, batches(len(next(iter(part.values()))), 64))
               for part in parts]
    loaded = make(Comm.local(), 200)
    loaded.load_state_dicts([pickle.loads(pickle.dumps(w.state_dict())) for w in writers])
    kept = [last(batches(500, 64), 200), last(batches(300, 64), 200)]
    union = make(Comm.local(), None)
    for part, bounds in zip(parts, kept, strict=True):
        feed(union, part, bounds)
    result = computed(loaded)
    assert result.window is not None and as_dict(result.window) == as_dict(computed(union))
    assert as_dict(result.window) == as_dict(computed(writers[0].merge(writers[1])).window)

    more = data(rng, 50)
    feed(loaded, more, [(0, 50)])
    # the window now: the last 150 kept rows of the second part, then the 50 new ones
    expected = make(Comm.local(), None)
    feed(expected, parts[1], last(kept[1], 150))
    feed(expected, more, [(0, 50)])
    result = computed(loaded)
    assert result.window is not None and as_dict(result.window) == as_dict(computed(expected))


@pytest.mark.parametrize("case", CASES)
def test_reset_clears_the_window_too(case, rng):
    make, data = CASES[case]
    metric = feed(make(Comm.local(), 100), data(rng, 300), batches(300, 64))
    metric.reset()
    rows = data(rng, 40)
    feed(metric, rows, [(0, 40)])
    result = computed(metric)
    fresh = computed(feed(make(Comm.local(), None), rows, [(0, 40)]))
    assert result.window is not None and as_dict(result.window) == as_dict(fresh)
    lifetime = as_dict(result)
    lifetime.pop("window")
    assert lifetime == as_dict(fresh)


@pytest.mark.parametrize("case", CASES)
def test_pickle_and_deepcopy_carry_the_window(case, rng):
    make, data = CASES[case]
    rows, bounds = data(rng, 600), batches(600, 100)
    metric = feed(make(Comm.local(), 250), rows, bounds[:3])
    copies = [pickle.loads(pickle.dumps(metric)), copy.deepcopy(metric)]
    copies[0].comm = Comm.local()
    for m in (metric, *copies):
        feed(m, rows, bounds[3:])
    expected = as_dict(computed(metric))
    assert [as_dict(computed(m)) for m in copies] == [expected, expected]
    # a copy's window is its own: more rows in the original leave the copy alone
    feed(metric, rows, bounds[:1])
    assert as_dict(computed(copies[1])) == expected


def test_the_window_keeps_copies_not_the_callers_arrays(rng):
    rows = _auc_rows(rng, 100)
    metric = AucMetric(table_size=64, window=50, comm=Comm.local())
    pred = rows["pred"].copy()
    metric.update(pred, rows["label"])
    before = as_dict(computed(metric))
    pred[:] = 0.0  # a trainer reuses its buffers
    assert as_dict(computed(metric)) == before


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100"])
def test_window_must_be_a_positive_integer(bad):
    with pytest.raises(InputError, match="window: must be a positive integer"):
        AucMetric(window=bad, comm=Comm.local())
    with pytest.raises(InputError, match="window: must be a positive integer"):
        PairwiseMetric(window=bad, comm=Comm.local())


def test_window_is_a_trainer_option_not_a_config_key():
    with pytest.raises(InputError, match="window: is not a key of kind auc"):
        specs_from_config({"metrics": {"m": {"kind": "auc", "window": 1000}}})


def test_metrics_of_different_windows_do_not_merge():
    with pytest.raises(ValueError, match="cannot merge"):
        AucMetric(table_size=64, window=10, comm=Comm.local()).merge(
            AucMetric(table_size=64, comm=Comm.local()))
