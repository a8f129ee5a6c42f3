"""What every metric kind must do, tested over the kind registry (:data:`mpieval.kinds.KINDS`).

A kind in the registry is tested here through its declarations only (``inputs``,
``optional``, ``ids``, ``names``, ``options``) and its fixture (``tests/kinds/<kind>.py``:
the rows it makes, its bad values); a kind without a fixture fails every test here:

- row order and batches: shuffled rows in any batches give the result of one batch;
- sharding: rows spread over the ranks (uneven, a user's rows on several ranks, rank 1
  empty), in random batches on each rank, give the result of all rows on one rank, and
  the same result on every rank;
- integer weights equal repeated rows (a weight of 0 drops the row), for every kind with
  a ``weight`` input; weights that are not whole numbers change a float over the ranks
  by a rounding at most, and only a field the kind's page names;
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kinds import NAMES, Rows, bad_cases, fixture, with_bad_value
from sharding import my_rows

from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds import KINDS
from mpieval.metric import Evaluator, Metric

WEIGHTED = [name for name in NAMES if "weight" in KINDS[name].inputs]
ROOT = Path(__file__).resolve().parent.parent


def dataset(name: str, rng: np.random.Generator, n: int) -> Rows:
    """``n`` valid rows of kind ``name``, each id and name input as ints or as text, each
    optional input given or left out (drawn from ``rng`` too)."""
    kind, data = KINDS[name], fixture(name)
    rows = data.plain_rows(rng, n)
    for text, prefix in ((kind.ids, "u"), (kind.names, "t")):
        for input_name in sorted(text):
            if rng.random() < 0.5:
                rows[input_name] = np.char.add(prefix, rows[input_name].astype(str))
    for input_name in sorted(kind.optional - data.option_inputs):
        if rng.random() < 0.3:
            del rows[input_name]
    return rows


def make(name: str, comm: Comm, *, fast: bool = False) -> Metric:
    """A fresh metric of kind ``name``: the default options (small ones with ``fast``)."""
    kind = KINDS[name]
    options = {key: option.default for key, option in kind.options.items()}
    if fast:
        options.update(fixture(name).fast_options)
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


@pytest.mark.parametrize("name", NAMES)
def test_every_kind_has_a_fixture(name: str) -> None:
    kind, data = KINDS[name], fixture(name)
    rows = data.rows(np.random.default_rng(0), 10)
    assert set(rows) == set(kind.inputs), name
    assert data.option_inputs <= set(kind.inputs) & set(kind.options), name
    assert all(len(v) == 10 for v in rows.values()), name
    assert set(data.out_of_range) <= set(kind.inputs), name
    assert set(data.columns) <= set(kind.inputs), name
    fed(name, Comm.local(), [data.plain_rows(np.random.default_rng(0), 10)])  # valid


def test_a_kind_without_a_fixture_fails_not_skips() -> None:
    with pytest.raises(ImportError, match=r"write tests/kinds/no_such_kind\.py"):
        fixture("no_such_kind")


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
    counts = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    assert_weights_equal_repeated_rows(name, seed, counts)


@pytest.mark.parametrize("name", WEIGHTED)
@pytest.mark.parametrize(("seed", "counts"), [
    (170965266, [2]),  # auc: ci95.rmse of the row twice from sum p^2 - 2 S1 + N1's rounding
    (141, [0, 3, 3]),  # auc: ci95.predicted_ctr, Hall's inverse at a skewness of 1e-14
])
def test_integer_weights_equal_repeated_rows_in_examples_found(
    name: str, seed: int, counts: list[int]
) -> None:
    """Examples hypothesis found for the test above (its ``data`` draws the counts)."""
    assert_weights_equal_repeated_rows(name, seed, counts)


def assert_weights_equal_repeated_rows(name: str, seed: int, counts_drawn: list[int]) -> None:
    """The rows of ``dataset(name, seed, len(counts_drawn))`` with these integer weights
    give the result of each row repeated its weight's times."""
    n = len(counts_drawn)
    rows = dataset(name, np.random.default_rng(seed), n)
    counts = np.array(counts_drawn, np.int64)
    rows["weight"] = counts.astype(np.float64)
    repeated = {k: np.repeat(v, counts) for k, v in rows.items() if k != "weight"}
    got = computed(fed(name, Comm.local(), [rows], fast=True))
    want = computed(fed(name, Comm.local(), [repeated], fast=True))
    for count in fixture(name).row_counts:  # rows given, whatever their weight
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


def _float_paths(got: Any, want: Any, path: tuple[Any, ...] = ()) -> Iterator[
        tuple[tuple[Any, ...], Any, Any]]:
    """(path, got, want) of every float leaf of two ``to_dict()`` values (their other
    leaves must be equal); lists give their indices."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), path
        for key in want:
            yield from _float_paths(got[key], want[key], (*path, key))
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            yield from _float_paths(a, b, (*path, i))
    elif isinstance(want, float):
        yield path, got, want
    else:
        assert type(got) is type(want) and got == want, (path, got, want)


def same_bits_section(name: str) -> str:
    """The "Same bits on any number of ranks" section of the kind's page ("" if none)."""
    text = (ROOT / "docs" / "kinds" / f"{name}.md").read_text()
    start = text.find("\n## Same bits")
    return "" if start < 0 else text[start:text.find("\n## ", start + 1)]


@pytest.mark.mpi
@pytest.mark.parametrize("name", WEIGHTED)
def test_weights_not_whole_move_only_the_fields_the_page_names_and_by_a_rounding(
    comm: Comm, rng: np.random.Generator, name: str
) -> None:
    """Weights that are not whole numbers, rows over the ranks: every field of the JSON
    (with each of the fixture's variants, such as compare) is one process's result,
    floats to a rounding (1e-12), all else exactly; a field whose bits differ is named on
    the kind's page ("Same bits ..."; a block such as `compare` or `ci95` by its name),
    so that the page says every field that can differ. The window (each rank's last
    rows) depends on the split by design and is left out."""
    section = same_bits_section(name)
    kind, data = KINDS[name], fixture(name)
    defaults = {key: option.default for key, option in kind.options.items()}
    for options in ({}, *data.variants):
        rows = data.rows_for(options, rng, 3000)
        rows["weight"] = np.round(rng.random(3000) * 3, 3)  # 0.001 is no binary fraction
        one = kind.load()(comm=Comm.local(), **{**defaults, **data.options, **options})
        one.update(**rows)
        want = computed(one)
        spread = kind.load()(comm=comm, **{**defaults, **data.options, **options})
        spread.update(**my_rows(rows, comm.rank, comm.size, rng))
        got = computed(spread)
        got.pop("window", None)  # each rank's own last rows: the split's, by design
        want.pop("window", None)
        differ = set()
        for path, a, b in _float_paths(got, want):
            assert a == pytest.approx(b, rel=1e-12, abs=1e-12) or (
                math.isnan(a) and math.isnan(b)), (options, path, a, b)
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                differ.add(str(path[0]))
        unnamed = sorted(f for f in differ if f"`{f}`" not in section)
        assert not unnamed, (f"{name} {options}: fields whose last bits differ on "
                             f"{comm.size} ranks, not named on docs/kinds/{name}.md: {unnamed}")
@pytest.mark.mpi
@pytest.mark.parametrize("n", [7, 90, 600])
@pytest.mark.parametrize("name", NAMES)
def test_rows_moved_between_batches_give_the_one_process_result(
    comm: Comm, rng: np.random.Generator, name: str, n: int
) -> None:
    """``move_rows()`` after every batch (the command line's reading rounds), with preds
    kept as float32 on some ranks and float64 on others, new tags on some ranks only, and
    an empty rank: the same bits as one process; again after compute and more rows, and
    after a reload of the state."""
    rows = dataset(name, rng, n)
    if "pred" in rows and rows["pred"].dtype.kind == "f":  # float32 values, as float64
        rows["pred"] = rows["pred"].astype(np.float32).astype(np.float64)
    before, after = batches_of(rows, [n // 2])
    mine = my_rows(before, comm.rank, comm.size, rng, scatter=True)
    if "pred" in mine and comm.rank % 2 == 0 and mine["pred"].dtype.kind == "f":
        mine["pred"] = mine["pred"].astype(np.float32)
    if "tag" in mine:  # tags arrive in another order on rank 0 than on the others
        order = np.argsort(mine["tag"], kind="stable")
        mine = {k: v[order if comm.rank == 0 else order[::-1]] for k, v in mine.items()}
    here = np.random.default_rng([n, comm.rank])  # this rank's own batches, 4 on each
    size = len(next(iter(mine.values())))
    metric = make(name, comm)
    for batch in batches_of(mine, here.integers(0, size + 1, 3).tolist()):
        metric.update(**batch)
        metric.move_rows(comm)
    assert_same(computed(metric), computed(fed(name, Comm.local(), [before])), bits=True)
    metric.update(**my_rows(after, comm.rank, comm.size, rng))
    metric.move_rows(comm)
    want = computed(fed(name, Comm.local(), [rows]))
    assert_same(computed(metric), want, bits=True)
    assert_same(computed(metric), want, bits=True)
    restored = make(name, comm)
    restored.load_state_dict(metric.state_dict())
    restored.move_rows(comm)
    assert_same(computed(restored), want, bits=True)


def _bad_cases() -> Iterator[tuple[str, str, Any]]:
    """(kind, input, bad value) of every kind (:func:`kinds.bad_cases`)."""
    for name in NAMES:
        for input_name, value in bad_cases(name):
            yield name, input_name, value


@pytest.mark.mpi
@pytest.mark.parametrize(("name", "input_name", "value"), list(_bad_cases()))
def test_bad_input_on_the_last_rank_fails_every_rank_until_reset(
    comm: Comm, rng: np.random.Generator, name: str, input_name: str, value: Any
) -> None:
    rows = fixture(name).plain_rows(rng, 8)
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
    before, after = batches_of(dataset(name, rng, 100), [60])  # ids alike: ints or text
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
