"""Inside a trainer: communicator lifecycle, checkpoints (N -> M ranks), agreement before
merging. Multi-rank tests hold for any ``comm.size``."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from kinds import NAMES, bad_cases, build, fixture, with_bad_value

from mpieval import (
    AucMetric,
    Evaluator,
    InputError,
    PairwiseMetric,
    UndefinedMetricWarning,
    WuaucMetric,
    checkpoint,
)
from mpieval.comm import Comm
from mpieval.errors import LayoutMismatchError
from mpieval.metric import Metric
from mpieval.state import Summed
from mpieval.transport.mpi import live_duplicates

N_ROWS = 3000


def _rows(kind: str, rng: np.random.Generator, n: int = N_ROWS) -> dict[str, np.ndarray]:
    """``n`` rows of the inputs of ``kind`` (its fixture's; the same on every rank for one
    ``rng``)."""
    return fixture(kind).plain_rows(rng, n)


def _make(kind: str, comm: Comm | None = None) -> Metric:
    """A fresh metric of ``kind`` with its fixture's options."""
    return build(kind, fixture(kind).options, comm)


KINDS = NAMES


def sliced_part(kind: str, index: int, parts: int, comm: Comm | object | None) -> Metric:
    """A per-user kind's metric sliced by a column of 40 values, given part ``index`` of
    ``parts`` of its rows (:func:`_part`): the torch and Paddle workers' (each slice then
    computed whole on one process) and, with ``0, 1``, their one-process reference."""
    from mpieval.slices import SlicedMetric

    rows = _rows(kind, np.random.default_rng(8))
    rows["site"] = np.random.default_rng(9).integers(0, 40, len(rows["pred"]))
    mine = _part(rows, index, parts)
    site = mine.pop("site")
    metric = SlicedMetric(_make(kind, comm), ["site"], min_rows=5)
    metric.update(**mine, slices={"site": site})
    return metric


def many_tags_part(index: int, parts: int, comm: Comm | object | None) -> dict[str, dict]:
    """``wuauc`` and ``ranking`` over 8,000 rows of 1,500 tags (the per-tag sums made as
    pairs, summed by the tags' owners on several processes: ``exact.PAIRS_FROM``), preds
    of 1e-200 among them (spills), given part ``index`` of ``parts`` of the rows
    (:func:`_part`): each one's JSON object. The torch and Paddle workers' and, with ``0,
    1``, their one-process reference."""
    from mpieval import RankingMetric, WuaucMetric

    rng = np.random.default_rng(36)
    n = 8000
    rows = {"uid": rng.integers(0, 900, n), "pred": rng.random(n),
            "label": (rng.random(n) < 0.3).astype(np.float64),
            "tag": np.char.add("t", rng.integers(0, 1500, n).astype(str))}
    rows["pred"][rng.random(n) < 0.02] = 1e-200
    mine = _part(rows, index, parts)
    out = {}
    for kind, metric in (("wuauc", WuaucMetric(comm=comm)), ("ranking", RankingMetric(comm=comm))):
        metric.update(**mine)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[kind] = metric.compute().to_dict()
    return out


def per_user_kinds() -> list[str]:
    from mpieval.kinds import KINDS as REGISTRY

    return [kind for kind in KINDS if REGISTRY[kind].ids]


def _part(rows: dict[str, np.ndarray], index: int, parts: int) -> dict[str, np.ndarray]:
    """Part ``index`` of ``parts`` contiguous slices of growing length; part 1 of 2+ is
    empty (its rows go to part 0)."""
    n = len(next(iter(rows.values())))
    edges = [round(n * i**2 / parts**2) for i in range(parts + 1)]
    lo, hi = edges[index], edges[index + 1]
    if parts > 1 and index < 2:
        lo, hi = (0, edges[2]) if index == 0 else (0, 0)
    return {k: v[lo:hi] for k, v in rows.items()}


def test_parts_cover_every_row_once():
    rows = {"x": np.arange(100)}
    for parts in (1, 2, 3, 5):
        got = np.concatenate([_part(rows, i, parts)["x"] for i in range(parts)])
        assert np.array_equal(got, rows["x"])
        if parts > 1:
            assert len(_part(rows, 1, parts)["x"]) == 0


def _values(result) -> object:
    """The result's JSON values, floats approximate (sums added in another order differ
    in the last bits; counts stay exact)."""
    def approx(value: object) -> object:
        if isinstance(value, dict):
            return {k: approx(v) for k, v in value.items()}
        if isinstance(value, list):
            return [approx(v) for v in value]
        if isinstance(value, (float, np.floating)):
            return pytest.approx(float(value), rel=1e-12, abs=1e-15, nan_ok=True)
        return value

    return approx(result.to_dict())


# -- communicator lifecycle ------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.timeout(300)
def test_ten_thousand_metrics_on_one_communicator_keep_one_duplicate(comm):
    """A metric per pass on the trainer's communicator: no communicator is leaked (MPICH
    has 2048 in all). Every metric resolves its communicator; every 10th computes (each
    compute costs milliseconds on a loaded 2-core machine)."""
    mpi = pytest.importorskip("mpi4py.MPI")
    world = mpi.COMM_WORLD
    warnings.simplefilter("ignore", UndefinedMetricWarning)  # no rows; bucket_error of 2
    AucMetric(table_size=10, comm=world).compute()
    before = live_duplicates()
    for step in range(10_000):
        metric = PairwiseMetric(comm=world) if step % 2 else AucMetric(table_size=10, comm=world)
        assert metric.comm.size == comm.size
        if step % 10 == 0:
            metric.update(np.array([0.25, 0.75]), np.array([0, 1]))
            assert metric.compute().to_dict()["num"] == 2 * comm.size
        del metric
    assert live_duplicates() == before


@pytest.mark.mpi
def test_a_freed_sub_communicator_frees_its_duplicate(comm):
    mpi = pytest.importorskip("mpi4py.MPI")
    before = live_duplicates()
    for _ in range(50):
        sub = mpi.COMM_WORLD.Split(comm.rank % 2, comm.rank)
        metrics = [AucMetric(table_size=10, comm=sub) for _ in range(3)]
        assert all(m.comm.size == sub.Get_size() for m in metrics)
        assert live_duplicates() == before + 1
        sub.Free()
    assert live_duplicates() == before


# -- checkpoints -----------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_pickle_and_deepcopy_at_any_point_then_resume(comm, rng, kind):
    rows = _rows(kind, rng)
    mine = _part(rows, comm.rank, comm.size)
    first = {k: v[: len(v) // 2] for k, v in mine.items()}
    second = {k: v[len(v) // 2 :] for k, v in mine.items()}
    whole = _make(kind, comm)
    whole.update(**mine)
    expected = _values(whole.compute())

    metric = _make(kind, comm)
    pickle.loads(pickle.dumps(metric))  # before any row
    metric.update(**first)
    metric.compute()  # resolves the communicator
    restored = pickle.loads(pickle.dumps(metric))
    copied = copy.deepcopy(metric)
    assert copied.comm is metric.comm
    restored.comm = comm
    for m in (restored, copied):  # the summed parts are still views of the one buffer
        assert all(np.shares_memory(m.state.summed(name), m.state.buffer)
                   for name, part in m.state.layout.items() if isinstance(part, Summed))
    for m in (metric, restored, copied):
        m.update(**second)
        assert m.compute().to_dict() == expected
    assert pickle.loads(pickle.dumps(metric.compute())) == metric.compute()


@pytest.mark.parametrize("kind", KINDS)
def test_a_rank_alone_sums_nothing_and_keeps_its_state(rng, kind):
    """A rank alone makes no sum: each metric's parts go to finish as they are (copied
    when the metric holds them: its state), with the bytes of the sum of the packed parts
    (on a communicator that sums: ``sums_only``), and a second compute() gives them again
    and leaves the state as it was (the first moves a per-user kind's rows to their owner,
    this rank)."""
    metric = _make(kind, Comm.local())
    metric.update(**_rows(kind, rng))
    alone = metric.compute().to_dict()
    state = pickle.dumps(metric.state_dict())
    summing = copy.deepcopy(metric)
    summing.comm = Comm.local()
    summing.comm.sums_only = True
    assert summing.compute().to_dict() == alone
    assert metric.compute().to_dict() == alone
    assert pickle.dumps(metric.state_dict()) == state


def test_a_finish_that_writes_over_its_sums_leaves_the_state_alone():
    """On a rank alone the parts a metric holds (its state: ``fresh_sums`` False) are
    copied before they reach finish, as the sum's buffer was: a finish that writes over
    its sums does not change the next compute()."""

    class Overwriting(PairwiseMetric):
        def finish(self, sums, comm):
            result = super().finish(sums, comm)
            for part in sums.values():
                part[...] = 0
            return result

    metric = Overwriting(comm=Comm.local())
    metric.update(np.array([1, 0, 1]), np.array([1, 1, 0]))
    assert metric.compute() == metric.compute() and metric.compute().ins == 3


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_is_plain_and_round_trips_through_npz(comm, rng, kind, tmp_path):
    rows = _part(_rows(kind, rng), comm.rank, comm.size)
    metric = _make(kind, comm)
    metric.update(**rows)
    state = metric.state_dict()
    assert all(isinstance(v, (np.ndarray, int, float, bool, str)) for v in state.values())
    path = tmp_path / f"{kind}.npz"
    checkpoint.save(path, {"m": state})
    restored = _make(kind, comm)
    restored.load_state_dict(checkpoint.load(path)["m"])
    assert restored.compute().to_dict() == _values(metric.compute())


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("saved_ranks", [1, 2, 3, 5])
def test_a_checkpoint_of_n_ranks_resumes_on_this_many(comm, rng, kind, saved_ranks):
    """Mid-pass: ``saved_ranks`` processes saved after the first half of the rows; this
    job (any size) loads the saved states shared out, then reads the second half."""
    rows = _rows(kind, rng)
    half = N_ROWS // 2
    first = {k: v[:half] for k, v in rows.items()}
    second = {k: v[half:] for k, v in rows.items()}
    saved = []
    for index in range(saved_ranks):  # the earlier job, one process at a time
        writer = _make(kind, Comm.local())
        writer.update(**_part(first, index, saved_ranks))
        saved.append(pickle.loads(pickle.dumps(writer.state_dict())))
    metric = _make(kind, comm)
    metric.load_state_dicts([saved[i] for i in checkpoint.shares(saved_ranks, comm.rank,
                                                                  comm.size)])
    metric.update(**_part(second, comm.rank, comm.size))
    reference = _make(kind, Comm.local())
    reference.update(**rows)
    assert metric.compute().to_dict() == _values(reference.compute())


def test_loading_a_state_of_other_options_or_kind_fails():
    auc = AucMetric(table_size=100)
    auc.update(np.array([0.5]), np.array([1]))
    with pytest.raises(ValueError, match="options"):
        AucMetric(table_size=200).load_state_dict(auc.state_dict())
    with pytest.raises(ValueError, match="auc"):
        PairwiseMetric().load_state_dict(auc.state_dict())


@pytest.mark.mpi
def test_an_evaluator_pickles_saves_and_merges_several_runs(comm, rng, tmp_path):
    def evaluator() -> Evaluator:
        return Evaluator({"ctr": AucMetric(table_size=1000), "gauc": WuaucMetric(),
                          "pairs": PairwiseMetric()}, comm)

    days = []
    for _day in range(3):
        data = {kind: _part(_rows(kind, rng), comm.rank, comm.size)
                for kind in ("auc", "wuauc", "pairwise")}
        ev = evaluator()
        ev["ctr"].update(**data["auc"])
        ev["gauc"].update(**data["wuauc"])
        ev["pairs"].update(**data["pairwise"])
        ev.compute()
        ev = pickle.loads(pickle.dumps(ev))
        ev.comm = comm
        path = tmp_path / f"day{_day}-rank{comm.rank}.npz"
        checkpoint.save(path, ev.state_dict())
        days.append((data, checkpoint.load(path)))
    week = evaluator()
    week.load_state_dicts([state for _, state in days])
    together = evaluator()
    for data, _ in days:
        together["ctr"].update(**data["auc"])
        together["gauc"].update(**data["wuauc"])
        together["pairs"].update(**data["pairwise"])
    assert {n: _values(r) for n, r in week.compute().items()} == \
        {n: r.to_dict() for n, r in together.compute().items()}
    assert copy.deepcopy(week).comm is week.comm


# -- agreement before merging ----------------------------------------------------------


def _other_ranks_only(comm) -> None:
    if comm.size == 1:
        pytest.skip("needs two ranks")


@pytest.mark.mpi
def test_a_different_table_size_on_one_rank_is_one_clear_error_everywhere(comm):
    _other_ranks_only(comm)
    last = comm.size - 1
    metric = AucMetric(table_size=1000 if comm.rank != last else 500, comm=comm)
    with pytest.raises(LayoutMismatchError) as info:
        metric.compute()
    text = str(info.value)
    assert f"rank {last} has" in text or f"ranks {last}" in text
    assert "table_size=1000" in text and "table_size=500" in text
    metric = AucMetric(table_size=1000, comm=comm)
    metric.update(np.array([0.2, 0.7]), np.array([0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # bucket_error of 2 rows
        assert metric.compute().num == 2 * comm.size  # the job goes on


@pytest.mark.mpi
def test_metrics_in_another_order_on_one_rank_are_an_error_not_a_hang(comm):
    _other_ranks_only(comm)
    names = ["gauc", "ctr"] if comm.rank == 1 else ["ctr", "gauc"]
    make = {"ctr": lambda: AucMetric(table_size=100), "gauc": lambda: WuaucMetric()}
    ev = Evaluator({name: make[name]() for name in names}, comm)
    with pytest.raises(LayoutMismatchError, match="rank 1 has gauc"):
        ev.compute()


@pytest.mark.mpi
def test_a_missing_metric_on_one_rank_is_an_error(comm):
    _other_ranks_only(comm)
    metrics = {"ctr": AucMetric(table_size=100)}
    if comm.rank != 0:
        metrics["pairs"] = PairwiseMetric()
    with pytest.raises(LayoutMismatchError, match="rank 0 has \\(nothing\\)"):
        Evaluator(metrics, comm).compute()


@pytest.mark.mpi
def test_a_bad_batch_on_one_rank_names_that_rank_elsewhere(comm):
    metric = AucMetric(table_size=100, comm=comm)
    last = comm.size - 1
    if comm.rank == last:
        with pytest.raises(InputError):
            metric.update(np.array([0.5, 1.5]), np.array([0, 1]))
    with pytest.raises(InputError) as info:
        metric.compute()
    error = info.value
    assert (error.field, error.count, error.first_index, error.value) == ("pred", 1, 1, 1.5)
    if comm.rank != last:
        assert str(error).startswith(f"rank {last}: pred: must be in [0, 1]")
        assert error.rank == last


def test_numpy_use_never_imports_torch():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from mpieval import AucMetric
        m = AucMetric(table_size=100)
        m.update(np.array([0.1, 0.9]), np.array([0, 1]))
        m.compute()
        m.state_dict()
        assert "torch" not in sys.modules, "torch loaded"
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "HYDI_", "PMIX_"))}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr


# -- what a checkpoint carries (issue 24) -----------------------------------------------

def _failure(metric: Metric) -> tuple:
    with pytest.raises(InputError) as info:
        metric.compute()
    error = info.value
    return type(error), str(error), error.field, error.count, error.first_index, repr(error.value)


@pytest.mark.mpi
@pytest.mark.parametrize("kind", KINDS)
def test_a_remembered_bad_batch_survives_a_checkpoint(comm, rng, kind, tmp_path):
    """A bad update() on the last rank, then a checkpoint (through an .npz file) loaded
    into fresh metrics: compute() raises on every rank what the uninterrupted run raises."""
    last = comm.size - 1

    def fed() -> Metric:
        metric = _make(kind, comm)
        metric.update(**_part(_rows(kind, np.random.default_rng(3)), comm.rank, comm.size))
        if comm.rank == last:
            input_name, value = next(bad_cases(kind))
            bad = with_bad_value(_rows(kind, np.random.default_rng(4), 2), input_name, value, 1)
            with pytest.raises(InputError):
                metric.update(**bad)
        return metric

    path = tmp_path / f"{kind}-{comm.rank}.npz"
    checkpoint.save(path, {"m": fed().state_dict()})
    resumed = _make(kind, comm)
    resumed.load_state_dict(checkpoint.load(path)["m"])
    assert resumed.error is not None or comm.rank != last
    assert _failure(resumed) == _failure(fed())
    merged = _make(kind, comm)  # a resume on fewer ranks merges the saved states
    merged.load_state_dicts([checkpoint.load(path)["m"], _make(kind, comm).state_dict()])
    assert _failure(merged) == _failure(fed())
    resumed.reset()  # the next pass starts clean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        resumed.compute()


def test_an_evaluator_state_of_other_names_is_an_error_naming_both():
    saved = Evaluator({"x": AucMetric(table_size=100), "z": PairwiseMetric()}).state_dict()
    with pytest.raises(ValueError) as info:
        Evaluator({"y": AucMetric(table_size=100), "z": PairwiseMetric()}).load_state_dict(saved)
    assert str(info.value) == ("the saved state holds the metrics ['x', 'z'], this evaluator "
                               "['y', 'z']")


def test_checkpoint_save_is_durable_like_the_command_line_outputs(tmp_path, monkeypatch):
    """The file is fsynced before it is renamed into place, the directory after."""
    from mpieval import locations

    events: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def noted_fsync(handle: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{handle}")))
        fsync(handle)

    def noted_replace(source: str, target: str) -> None:
        events.append(("replace", os.fspath(source)))
        replace(source, target)

    monkeypatch.setattr(os, "fsync", noted_fsync)
    monkeypatch.setattr(os, "replace", noted_replace)
    for write in (lambda path: checkpoint.save(path, {"m": AucMetric(table_size=10).state_dict()}),
                  lambda path: locations.write_atomically(str(path), b"{}", flag="--json")):
        events.clear()
        write(tmp_path / "out")
        temporary = events[-2][1] if len(events) >= 2 else ""
        assert [e[0] for e in events] == ["fsync", "replace", "fsync"], events
        assert events[0][1] == temporary and events[2][1] == str(tmp_path), events
        assert sorted(os.listdir(tmp_path)) == ["out"]
