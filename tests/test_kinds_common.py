"""What every metric kind must do, tested over the kind registry (:data:`mpieval.kinds.KINDS`).

A kind in the registry is tested here through its declarations only (``inputs``,
``optional``, ``ids``, ``names``, ``options``) and the rows its entry in :data:`DATA`
makes; a new kind without an entry fails :func:`test_every_kind_has_a_data_maker`:

- row order and batches: shuffled rows in any batches give the result of one batch;
- sharding: rows spread over the ranks (uneven, a user's rows on several ranks, rank 1
  empty), in random batches on each rank, give the result of all rows on one rank, and
  the same result on every rank;
- integer weights equal repeated rows (a weight of 0 drops the row), for every kind with
  a ``weight`` input;
- bad input on one rank is the same :class:`InputError` (field, count, index) on every
  rank at ``compute()``, and ``reset()`` forgets it;
- ``compute()`` leaves the local state alone: computing twice gives the same result,
  rows added later add to the earlier ones, and the buffer a compute hands to the sum
  is never the metric's live state;
- no rows anywhere: the values are null (NaN) or zero;
- several kinds computed together (one ``Allreduce``) equal each computed alone;

and every compute here checks the rule for undefined values: a result holds a null iff
rank 0 warned :class:`UndefinedMetricWarning`; no other rank warns.

Results are compared as ``to_dict()``: the same keys, nulls and integers exactly, floats
to 1e-12 (sums in another order round differently). Multi-rank tests (``mpi`` mark) hold
for any ``comm.size`` and draw their cases from generators seeded alike on every rank,
not from hypothesis, which draws and shrinks on each rank alone: ranks that drew other
examples would call different collectives.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds import KINDS
from mpieval.metric import Evaluator, Metric

Rows = dict[str, np.ndarray]


def _preds(rng: np.random.Generator, n: int) -> np.ndarray:
    """Preds in [0, 1]: half of them from five values (ties, 0 and 1), half anywhere."""
    return np.where(rng.random(n) < 0.5, rng.integers(0, 5, n) / 4, rng.random(n))


def _users(rng: np.random.Generator, n: int) -> np.ndarray:
    """Integer uids, about four rows a user."""
    return rng.integers(0, max(1, n // 4), n)


@dataclass(frozen=True)
class KindData:
    """How the tests make rows for one kind."""

    rows: Callable[[np.random.Generator, int], Rows]  # n valid rows: every input, ids as ints
    out_of_range: Mapping[str, float] = field(default_factory=dict)  # a bad finite value
    row_counts: frozenset[str] = frozenset()  # result fields that count rows, not weight
    fast_options: Mapping[str, Any] = field(default_factory=dict)  # for many small examples
    # inputs a metric takes only when made with the option of the same name (compare:
    # model B's preds); left out here, tested with their kind's own tests
    option_inputs: frozenset[str] = frozenset()


DATA: dict[str, KindData] = {
    "auc": KindData(
        lambda rng, n: {"pred": _preds(rng, n), "label": rng.integers(0, 2, n),
                        "weight": rng.integers(0, 4, n).astype(np.float64)},
        out_of_range={"pred": 1.5, "label": 2, "weight": -1},
        row_counts=frozenset({"rows"}),
        fast_options={"table_size": 64},
        option_inputs=frozenset({"compare"}),  # tests/test_auc_stats*.py, test_stats_cli.py
    ),
    "wuauc": KindData(
        lambda rng, n: {"uid": _users(rng, n), "pred": _preds(rng, n),
                        "label": rng.integers(0, 2, n), "tag": rng.integers(0, 3, n)},
        out_of_range={"pred": -0.5, "label": 2},
        option_inputs=frozenset({"compare"}),  # tests/test_wuauc*.py, test_stats_cli.py
    ),
    "pn": KindData(
        lambda rng, n: {"uid": _users(rng, n), "pred": _preds(rng, n),
                        "label": rng.integers(0, 4, n).astype(np.float64)},  # graded
    ),
    "pairwise": KindData(
        lambda rng, n: {"left_label": rng.integers(0, 2, n), "right_label": rng.integers(0, 2, n)},
        out_of_range={"left_label": 2, "right_label": -1},
    ),
    "ranking": KindData(
        lambda rng, n: {"uid": _users(rng, n), "pred": _preds(rng, n),
                        "label": rng.integers(0, 4, n) * (rng.random(n) < 0.4) / 2,  # graded
                        "tag": rng.integers(0, 3, n)},
        out_of_range={"label": -0.5},
    ),
}

NAMES = sorted(KINDS)
WEIGHTED = [name for name in NAMES if "weight" in KINDS[name].inputs]


def dataset(name: str, rng: np.random.Generator, n: int) -> Rows:
    """``n`` valid rows of kind ``name``, each id and name input as ints or as text, each
    optional input given or left out (drawn from ``rng`` too)."""
    kind = KINDS[name]
    rows = DATA[name].rows(rng, n)
    for text, prefix in ((kind.ids, "u"), (kind.names, "t")):
        for input_name in sorted(text):
            if rng.random() < 0.5:
                rows[input_name] = np.char.add(prefix, rows[input_name].astype(str))
    for input_name in sorted(kind.optional - DATA[name].option_inputs):
        if rng.random() < 0.3:
            del rows[input_name]
    return rows


def make(name: str, comm: Comm, *, fast: bool = False) -> Metric:
    """A fresh metric of kind ``name``: the default options (small ones with ``fast``)."""
    kind = KINDS[name]
    options = {key: option.default for key, option in kind.options.items()}
    if fast:
        options.update(DATA[name].fast_options)
    return kind.load()(comm=comm, **options)


def fed(name: str, comm: Comm, batches: list[Rows], *, fast: bool = False) -> Metric:
    metric = make(name, comm, fast=fast)
    for batch in batches:
        metric.update(**batch)
    return metric


def batches_of(rows: Rows, cuts: list[int]) -> list[Rows]:
    """``rows`` cut before each index in ``cuts`` (empty batches included)."""
    n = len(next(iter(rows.values())))
    edges = [0, *sorted(min(c, n) for c in cuts), n]
    return [{k: v[a:b] for k, v in rows.items()} for a, b in itertools.pairwise(edges)]


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):  # intervals, curve points (an empty curve: no leaves)
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def computed(metric: Metric) -> dict[str, Any]:
    """``metric.compute().to_dict()``; checks that rank 0 warned iff the result has a null,
    and that no other rank warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        result = metric.compute().to_dict()
    undefined = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    for w in caught:
        if w not in undefined:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    has_null = any(v is None for v in _leaves(result))
    assert bool(undefined) == (has_null and metric.comm.rank == 0), (
        f"rank {metric.comm.rank}: warnings {[str(w.message) for w in undefined]}, {result}")
    return result


def assert_same(got: Any, want: Any, where: str = "result", *, bits: bool = False) -> None:
    """Equal ``to_dict()`` values: same keys in the same order, the same types, nulls,
    integers and text exactly, floats to 1e-12 (also inside lists), or with ``bits`` to
    the last bit."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), where
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]", bits=bits)
    elif isinstance(want, list):  # intervals, curve points
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same(a, b, f"{where}[{i}]", bits=bits)
    elif isinstance(want, float):
        assert isinstance(got, float), (where, got, want)
        if bits:
            assert got == want or (math.isnan(got) and math.isnan(want)), (where, got, want)
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12) or (
                math.isnan(got) and math.isnan(want)), (where, got, want)
    else:
        assert type(got) is type(want) and got == want, (where, got, want)


# -- the registry ----------------------------------------------------------------------


def test_every_kind_has_a_data_maker() -> None:
    assert sorted(DATA) == NAMES, "add the kind's rows to DATA in tests/test_kinds_common.py"
    for name, kind in KINDS.items():
        rows = DATA[name].rows(np.random.default_rng(0), 10)
        assert set(rows) == set(kind.inputs) - DATA[name].option_inputs, name
        assert all(len(v) == 10 for v in rows.values()), name
        assert set(DATA[name].out_of_range) <= set(kind.inputs), name
        fed(name, Comm.local(), [rows])  # valid


# -- one process: row order, batches, weights ------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 80), data=st.data())
def test_row_order_and_batches_do_not_matter(
    name: str, seed: int, n: int, data: st.DataObject
) -> None:
    rows = dataset(name, np.random.default_rng(seed), n)
    want = computed(fed(name, Comm.local(), [rows], fast=True))
    order = np.array(data.draw(st.permutations(range(n)), label="order"), dtype=np.intp)
    cuts = data.draw(st.lists(st.integers(0, n), max_size=4), label="cuts")
    shuffled = {k: v[order] for k, v in rows.items()}
    got = computed(fed(name, Comm.local(), batches_of(shuffled, cuts), fast=True))
    assert_same(got, want, bits=True)  # exact sums (integer weights: exact tables)


@pytest.mark.parametrize("name", WEIGHTED)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 80), data=st.data())
def test_integer_weights_equal_repeated_rows(
    name: str, seed: int, n: int, data: st.DataObject
) -> None:
    rows = dataset(name, np.random.default_rng(seed), n)
    counts = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), np.int64)
    rows["weight"] = counts.astype(np.float64)
    repeated = {k: np.repeat(v, counts) for k, v in rows.items() if k != "weight"}
    got = computed(fed(name, Comm.local(), [rows], fast=True))
    want = computed(fed(name, Comm.local(), [repeated], fast=True))
    for count in DATA[name].row_counts:  # rows given, whatever their weight
        assert (got.pop(count), want.pop(count)) == (n, int(counts.sum())), count
    assert_same(got, want)


# -- across ranks ----------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize("n", [7, 90, 600])
@pytest.mark.parametrize("name", NAMES)
def test_any_sharding_and_batches_give_the_one_process_result(
    comm: Comm, rng: np.random.Generator, name: str, n: int
) -> None:
    rows = dataset(name, rng, n)
    want = computed(fed(name, Comm.local(), [rows]))
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=n % 2 == 0)
    if comm.size > 1 and comm.rank == 1:
        assert all(len(v) == 0 for v in mine.values())
    here = np.random.default_rng([n, comm.rank])  # this rank's own batches
    size = len(next(iter(mine.values())))
    cuts = here.integers(0, size + 1, int(here.integers(0, 4))).tolist()
    got = computed(fed(name, comm, batches_of(mine, cuts)))
    assert_same(got, want, bits=True)
    assert comm.allgather(got) == [got] * comm.size


def _bad_cases() -> Iterator[tuple[str, str, Any]]:
    """(kind, input, bad value): NaN in each number or id, a missing name, and each
    kind's out-of-range values."""
    for name in NAMES:
        kind = KINDS[name]
        option_inputs = DATA[name].option_inputs if name in DATA else frozenset()
        for input_name in kind.inputs:
            if input_name not in option_inputs:
                yield name, input_name, None if input_name in kind.names else math.nan
        out_of_range = DATA[name].out_of_range if name in DATA else {}  # else: no maker
        for input_name, value in out_of_range.items():
            yield name, input_name, value


def with_bad_value(rows: Rows, input_name: str, value: Any, at: int) -> Rows:
    column = rows[input_name].astype(object if value is None else np.float64)
    column[at] = value
    return {**rows, input_name: column}


@pytest.mark.mpi
@pytest.mark.parametrize(("name", "input_name", "value"), list(_bad_cases()))
def test_bad_input_on_the_last_rank_fails_every_rank_until_reset(
    comm: Comm, rng: np.random.Generator, name: str, input_name: str, value: Any
) -> None:
    rows = DATA[name].rows(rng, 8)
    metric = make(name, comm)
    metric.update(**rows)
    if comm.rank == comm.size - 1:
        with pytest.raises(InputError) as raised:
            metric.update(**with_bad_value(rows, input_name, value, at=5))
        assert metric.error is raised.value
    else:
        metric.update(**rows)
        assert metric.error is None
    with pytest.raises(InputError) as info:
        metric.compute()  # every rank, none hangs
    assert (info.value.field, info.value.count, info.value.first_index) == (input_name, 1, 5)
    metric.reset()
    assert metric.error is None
    metric.update(**rows)
    assert_same(computed(metric), computed(fed(name, Comm.local(), [rows] * comm.size)))


@pytest.mark.mpi
@pytest.mark.parametrize("name", NAMES)
def test_compute_leaves_the_local_state_alone(
    comm: Comm, rng: np.random.Generator, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compute twice, then add rows: as if every row had come before one compute. The
    sum here spoils the buffer it is handed once it has summed it (an in-place
    ``Allreduce`` may leave anything there), so a live state handed to it shows."""
    summed = Comm.sum

    def spoiling_sum(self: Comm, buffer: np.ndarray, **options: bool) -> np.ndarray:
        total = summed(self, buffer, **options)
        if total is not buffer:  # a scratch buffer may be the sum itself
            buffer[...] = np.nan
        return total

    monkeypatch.setattr(Comm, "sum", spoiling_sum)
    before, after = dataset(name, rng, 60), dataset(name, rng, 40)
    metric = fed(name, comm, [before])
    first = computed(metric)
    assert computed(metric) == first
    metric.update(**after)
    want = computed(fed(name, Comm.local(), [before, after] * comm.size))
    assert_same(computed(metric), want)
    metric.reset()
    assert_same(computed(metric), computed(make(name, Comm.local())))


@pytest.mark.mpi
@pytest.mark.parametrize("name", NAMES)
def test_no_rows_anywhere_gives_nulls_or_zeros(comm: Comm, name: str) -> None:
    result = computed(make(name, comm))  # null iff rank 0 warns (computed checks it)
    for key, value in result.items():
        if key in KINDS[name].options:  # a result may echo its options (table_size, ties)
            continue
        for leaf in _leaves(value):
            assert isinstance(leaf, str) or leaf is None or (
                type(leaf) in (int, float) and leaf == 0), (key, result)


@pytest.mark.mpi
def test_every_kind_in_one_compute_equals_each_alone(
    comm: Comm, rng: np.random.Generator
) -> None:
    rows = {name: dataset(name, rng, 300) for name in NAMES}
    mine = {name: my_rows(rows[name], comm.rank, comm.size, rng, scatter=True)
            for name in NAMES}
    evaluator = Evaluator({name: fed(name, comm, [mine[name]]) for name in NAMES}, comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # computed() checks them
        together = Evaluator.to_dict(evaluator.compute())
    for name in NAMES:
        assert_same(together[name], computed(evaluator[name]))
