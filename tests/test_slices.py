"""Slices (``--slice``, :mod:`mpieval.slices`), for every kind of the registry: each slice's
block is the kind's block of a fresh metric given only that slice's rows (same options,
the slices' own table size), on one rank and across ranks (uneven shards, an empty rank,
a user's rows on several ranks); crosses; ``min_rows``; the q-values over a column's
slices (Benjamini-Hochberg, written here from its definition); checkpoints; the command
line's log lines, JSON, config keys and bad input; the gate's ``*`` over slices.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kinds import NAMES, Rows, fixture
from sharding import my_rows
from test_cli import rows as cli_rows
from test_cli import write
from test_kinds_common import assert_same, batches_of, make

from mpieval import checkpoint, cli, gate
from mpieval.comm import Comm
from mpieval.errors import InputError, StateFormatError, UndefinedMetricWarning
from mpieval.kinds import KINDS
from mpieval.metric import Metric
from mpieval.slices import (
    STATE_KEY,
    SlicedMetric,
    SlicedResult,
    _in_order,
    _packed,
    _sort_key,
    _unpacked,
)
from mpieval.validation import Coded

SLICE_TABLE = 64  # the slices' auc table in these tests (the base's: the fixture's fast one)


def data(name: str, rng: np.random.Generator, n: int, compare: bool = False) -> Rows:
    """``n`` valid rows of kind ``name`` (with model B's preds when ``compare``) and two
    slice columns: ``country`` (text, 4 values of unequal shares) and ``site`` (ints)."""
    rows = fixture(name).rows(rng, n)
    if not compare:
        rows = {k: v for k, v in rows.items() if k not in fixture(name).option_inputs}
    rows["country"] = rng.choice(np.array(["US", "FR", "DE", "all"]), n, p=[.5, .3, .15, .05])
    rows["site"] = rng.integers(0, 3, n)
    return rows


def options(name: str, compare: bool = False) -> dict[str, Any]:
    chosen = {key: option.default for key, option in KINDS[name].options.items()}
    chosen.update(fixture(name).fast_options)
    if compare and "compare" in fixture(name).option_inputs:
        chosen["compare"] = "b"
    return chosen


def slice_options(name: str) -> dict[str, Any]:
    return {"table_size": SLICE_TABLE} if "table_size" in KINDS[name].options else {}


def sliced(name: str, comm: Comm, batches: list[Rows], *, compare: bool = False,
           min_rows: int = 0, dims: tuple[str, ...] = ("country", "site", "country*site")
           ) -> SlicedMetric:
    base = KINDS[name].load()(comm=comm, **options(name, compare))
    metric = SlicedMetric(base, list(dims), min_rows=min_rows, options=slice_options(name))
    for batch in batches:
        inputs = {k: v for k, v in batch.items() if k not in ("country", "site")}
        metric.update(**inputs, slices={"country": batch["country"], "site": batch["site"]})
    return metric


def alone(name: str, batches: list[Rows], pick: Any, compare: bool = False) -> dict[str, Any]:
    """The block of a fresh metric of the slices' options given only the rows ``pick``
    chooses of each batch, in the same batches (one rank)."""
    metric = KINDS[name].load()(comm=Comm.local(),
                                **{**options(name, compare), **slice_options(name)})
    for batch in batches:
        keep = pick(batch)
        metric.update(**{k: v[keep] for k, v in batch.items() if k not in ("country", "site")})
    return quiet(metric)


def quiet(metric: Metric) -> dict[str, Any]:
    """``metric``'s JSON block; undefined values (small slices) are beside the point here."""
    result: dict[str, Any] = silenced(metric).to_dict()
    return result


def silenced(metric: Metric) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return metric.compute()


def without_slice_fields(block: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """A slice block without what slicing adds (``rows``, a q-value over the slices that
    the run alone has no p-values of other slices for)."""
    def strip(got: Any, ref: Any) -> Any:
        if isinstance(got, dict) and isinstance(ref, dict):
            return {k: strip(v, ref.get(k)) for k, v in got.items()
                    if k in ref or not (k == "rows" or k.endswith("_diff_q"))}
        return got
    stripped: dict[str, Any] = strip(block, want)
    return stripped


def picks(batch_keys: tuple[str, ...]) -> dict[str, Any]:
    """Each slice of the test data by its JSON key -> a row filter of a batch."""
    found: dict[str, Any] = {}
    for country in ("DE", "FR", "US", "all"):
        found[f"country={country}"] = lambda b, c=country: b["country"] == c
    for site in range(3):
        found[f"site={site}"] = lambda b, s=site: b["site"] == s
        for country in ("DE", "FR", "US", "all"):
            found[f"country={country}*site={site}"] = (
                lambda b, c=country, s=site: (b["country"] == c) & (b["site"] == s))
    return {key: found[key] for key in batch_keys}


def check_slices(name: str, result: dict[str, Any], batches: list[Rows], compare: bool,
                 bits: bool) -> None:
    slices = result["slices"]
    assert list(slices) == sorted(slices, key=lambda k: (k.count("*"), k.startswith("site"), k))
    for key, pick in picks(tuple(slices)).items():
        want = alone(name, batches, pick, compare)
        rows = sum(int(np.count_nonzero(pick(b))) for b in batches)
        assert slices[key]["rows"] == rows, key
        assert_same(without_slice_fields(slices[key], want), want, key, bits=bits)


# -- one rank ---------------------------------------------------------------------------


@pytest.mark.parametrize("compare", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_each_slice_equals_a_run_over_its_rows(name: str, compare: bool) -> None:
    if compare and "compare" not in fixture(name).option_inputs:
        pytest.skip(f"kind {name} takes no --compare")
    rng = np.random.default_rng(34)
    rows = data(name, rng, 900, compare)
    batches = batches_of(rows, [0, 100, 101, 500])
    metric = sliced(name, Comm.local(), batches, compare=compare)
    result = quiet(metric)
    base = quiet(make_fed(name, batches, compare))
    assert_same({k: v for k, v in result.items() if k != "slices"}, base, bits=True)
    assert len(result["slices"]) == 4 + 3 + 12
    check_slices(name, result, batches, compare, bits=True)


@pytest.mark.parametrize("min_rows", [0, 12])
@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_many_slices_wait_for_their_rows_with_the_same_results_and_checkpoints(
        name: str, min_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-user kind's batch of many slices keeps its rows waiting, given to each slice
    in one update() of several batches (slices.WAIT_FROM, PENDING_ROWS): the same JSON
    and a checkpoint of the same slices as each slice updated a batch at a time, each
    slice the block of a run over its rows; the caller's arrays reused after update()
    change nothing. With ``min_rows``, the rows of a slice with fewer wait on (a row may
    be given in one dimension and wait in the other) and no metric is made for it."""
    from mpieval import slices

    rng = np.random.default_rng(57)
    rows = data(name, rng, 1500, compare=True)
    rows["site"] = rng.integers(0, 80, len(rows["site"]))  # 80 slices a batch: they wait
    batches = batches_of(rows, [0, 100, 101, 480, 900, 1200])

    def run(wait_from: int, pending: int) -> SlicedMetric:
        monkeypatch.setattr(slices, "WAIT_FROM", wait_from)
        monkeypatch.setattr(slices, "PENDING_ROWS", pending)
        given: list[dict[str, Any]] = [{k: np.array(v) for k, v in batch.items()}
                                       for batch in batches]
        for number, batch in enumerate(given):  # tags coded as the reader codes them
            if "tag" in batch:  # (each batch its own values' order: joined by their union)
                values, codes = np.unique(batch["tag"], return_inverse=True)
                if number % 2:
                    values, codes = values[::-1], len(values) - 1 - codes
                batch["tag"] = Coded(tuple(values.tolist()), codes.astype(np.uint16))
        metric = sliced(name, Comm.local(), given, compare=True, min_rows=min_rows,
                        dims=("site", "country*site"))
        for batch in given:  # the caller reuses its arrays
            for values in batch.values():
                reused = values.codes if isinstance(values, Coded) else values
                reused[...] = reused[::-1]
        return metric

    at_once, waiting, joined = run(10**9, 1), run(0, 450), run(0, 10**9)
    assert waiting._pending and not at_once._pending  # 300 rows of the last batch wait
    want = quiet(at_once)
    for metric in (waiting, joined):
        assert_same(quiet(metric), want, bits=True)
        made = [len(metrics) for metrics in metric._metrics]
        if min_rows:  # slices too small for values: no metric, their rows still wait
            assert made[1] < len(at_once._metrics[1]) and metric._pending
            assert sum(1 for block in want["slices"].values() if "too_small" in block) > 100
        else:
            assert made == [len(metrics) for metrics in at_once._metrics]
    # a checkpoint: the same slices in the same order (a slice's own tag codes may be
    # numbered otherwise), and a metric restored from it computes the same
    saved = at_once.state_dict()
    restored = []
    for metric in (waiting, joined):
        state = metric.state_dict()
        if min_rows:  # the small slices' rows saved as they wait, no metric of theirs
            assert "slices.waiting.codes1" in state
            assert sum(map(len, json.loads(state[STATE_KEY])["slices"])) < sum(
                map(len, json.loads(saved[STATE_KEY])["slices"]))
        else:
            assert state["slices.layout"] == saved["slices.layout"]
            assert list(state) == list(saved)
        state = checkpoint.from_bytes(checkpoint.to_bytes({"m": state}))["m"]  # as a file
        again = sliced(name, Comm.local(), [], compare=True, min_rows=min_rows,
                       dims=("site", "country*site"))
        again.load_state_dict(state)
        restored.append(again)
    for metric in (waiting, joined, *restored):
        assert_same(quiet(metric), want, bits=True)
    assert len(want["slices"]) > 80
    valued = [int(k.split("=")[1]) for k, block in want["slices"].items()
              if k.startswith("site=") and "too_small" not in block]
    for site in (valued[0], valued[len(valued) // 2], valued[-1]):
        pick = lambda b, s=site: b["site"] == s  # noqa: E731
        alone_block = alone(name, batches, pick, compare=True)
        assert_same(without_slice_fields(want["slices"][f"site={site}"], alone_block),
                    alone_block, f"site={site}", bits=True)


@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_rows_of_small_slices_wait_across_computes_in_their_order(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice too small for values at one compute keeps its rows waiting; rows that come
    after make it big enough, and its metric then gets every row in their order: each
    compute's JSON is that of slices given their rows a batch at a time, bit for bit."""
    from mpieval import slices

    rng = np.random.default_rng(58)
    rows = data(name, rng, 2400, compare=True)
    rows["site"] = rng.integers(0, 90, len(rows["site"]))
    batches = batches_of(rows, [300, 700, 1100, 1500, 2000])
    metrics = []
    for wait_from in (10**9, 0):
        monkeypatch.setattr(slices, "WAIT_FROM", wait_from)
        monkeypatch.setattr(slices, "PENDING_ROWS", 500)
        metrics.append(sliced(name, Comm.local(), batches[:3], compare=True, min_rows=15,
                              dims=("site", "country*site")))
    at_once, waiting = metrics
    first = quiet(at_once)
    assert_same(quiet(waiting), first, bits=True)
    assert 0 < sum(1 for block in first["slices"].values() if "too_small" in block)
    for batch in batches[3:]:
        for metric in metrics:
            inputs = {k: v for k, v in batch.items() if k not in ("country", "site")}
            metric.update(**inputs, slices={"country": batch["country"], "site": batch["site"]})
    last = quiet(at_once)
    assert_same(quiet(waiting), last, bits=True)
    grown = [name for name, block in last["slices"].items()
             if "too_small" not in block and "too_small" in first["slices"].get(name, {})]
    assert grown  # slices small at the first compute, with values at the second
    for site in (int(name.split("=")[1]) for name in grown if name.startswith("site=")):
        block = alone(name, batches, lambda b, s=site: b["site"] == s, compare=True)
        assert_same(without_slice_fields(last["slices"][f"site={site}"], block), block,
                    f"site={site}", bits=True)


@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_waiting_rows_saved_resume_on_one_rank_and_after_more_rows(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two metrics (two ranks' states) whose small slices' rows wait, saved and loaded
    into one: its JSON is one metric's over every row, and so after more rows come
    (slices small when saved get their values)."""
    from mpieval import slices

    monkeypatch.setattr(slices, "WAIT_FROM", 0)
    monkeypatch.setattr(slices, "PENDING_ROWS", 400)
    rng = np.random.default_rng(59)
    rows = data(name, rng, 2400, compare=True)
    rows["site"] = rng.integers(0, 90, len(rows["site"]))
    batches = batches_of(rows, [500, 1000, 1800])
    dims = ("site", "country*site")
    whole = sliced(name, Comm.local(), batches[:3], compare=True, min_rows=15, dims=dims)
    parts = [sliced(name, Comm.local(), part, compare=True, min_rows=15, dims=dims)
             for part in (batches[:1], batches[1:3])]
    states = [checkpoint.from_bytes(checkpoint.to_bytes({"m": part.state_dict()}))["m"]
              for part in parts]
    assert all("slices.waiting.codes0" in state for state in states)
    restored = sliced(name, Comm.local(), [], compare=True, min_rows=15, dims=dims)
    restored.load_state_dicts(states)
    assert_same(quiet(restored), quiet(whole), bits=True)
    for metric in (whole, restored):
        inputs = {k: v for k, v in batches[3].items() if k not in ("country", "site")}
        metric.update(**inputs, slices={"country": batches[3]["country"],
                                        "site": batches[3]["site"]})
    want = quiet(whole)
    assert_same(quiet(restored), want, bits=True)
    assert sum(1 for block in want["slices"].values() if "too_small" in block) > 10


def make_fed(name: str, batches: list[Rows], compare: bool) -> Metric:
    metric = KINDS[name].load()(comm=Comm.local(), **options(name, compare))
    for batch in batches:
        metric.update(**{k: v for k, v in batch.items() if k not in ("country", "site")})
    return metric


def bh(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values, from the definition: q_i = min over j with
    p_j >= p_i of m p_j / rank_j, capped at 1; NaN p-values are left out (and stay NaN)."""
    defined = [p for p in p_values if not math.isnan(p)]
    m = len(defined)
    ranked = sorted(defined)
    out = []
    for p in p_values:
        if math.isnan(p):
            out.append(math.nan)
            continue
        out.append(min(1.0, min(m * ranked[j] / (j + 1) for j in range(m)
                                if ranked[j] >= p)))
    return out


def test_q_values_are_over_the_slices_of_one_column() -> None:
    name = "auc"
    rng = np.random.default_rng(3)
    rows = data(name, rng, 3000, compare=True)
    result = quiet(sliced(name, Comm.local(), [rows], compare=True))
    slices = result["slices"]
    for dimension in ("country=", "site=", "*"):
        keys = [k for k in slices if (k.startswith(dimension) and "*" not in k)
                or (dimension == "*" and "*" in k)]
        for field in ("auc", "copc", "logloss"):
            ps = [slices[k]["compare"][f"{field}_diff_p"] for k in keys]
            qs = [slices[k]["compare"][f"{field}_diff_q"] for k in keys]
            want = bh([math.nan if p is None else p for p in ps])
            for q, w in zip(qs, want, strict=True):
                assert (q is None and math.isnan(w)) or q == pytest.approx(w, rel=1e-12)


def test_tags_keep_their_q_values_and_all_gains_one_over_slices() -> None:
    rng = np.random.default_rng(5)
    rows = data("wuauc", rng, 4000, compare=True)
    result = quiet(sliced("wuauc", Comm.local(), [rows], compare=True, dims=("site",)))
    tags = [result["slices"][f"site={s}"]["tags"] for s in range(3)]
    ps = [t["all"]["compare"]["wuauc_diff_p"] for t in tags]
    want = bh([math.nan if p is None else p for p in ps])
    for t, w in zip(tags, want, strict=True):
        q = t["all"]["compare"]["wuauc_diff_q"]
        assert (q is None and math.isnan(w)) or q == pytest.approx(w, rel=1e-12)
    alone_tags = alone("wuauc", [rows], lambda b: b["site"] == 0, True)["tags"]
    for tag, block in tags[0].items():  # a tag's q-value is over the slice's tags
        if tag != "all":
            assert block["compare"]["wuauc_diff_q"] == alone_tags[tag]["compare"]["wuauc_diff_q"]


def test_a_json_only_written_has_the_q_values_of_the_slices_tags() -> None:
    """The command line's JSON made as it is written (``tags.dicts_as_written``: the
    base's tags made a chunk at a time) keeps the slices' blocks whole, so that their
    ``all`` tags gain their q-values over the slices: the bytes of the dicts made whole."""
    from mpieval import jsonwriter
    from mpieval.tags import TagDicts, dicts_as_written

    rng = np.random.default_rng(5)
    rows = data("wuauc", rng, 4000, compare=True)
    result = silenced(sliced("wuauc", Comm.local(), [rows], compare=True, dims=("site",)))
    whole = result.to_dict()
    with dicts_as_written():
        written = result.to_dict()
    assert isinstance(written["tags"], TagDicts)
    assert "wuauc_diff_q" in written["slices"]["site=0"]["tags"]["all"]["compare"]
    assert jsonwriter.dumps(written) == json.dumps(whole, indent=2, allow_nan=False)


@pytest.mark.parametrize("name", NAMES)
def test_a_small_slice_gives_its_rows_and_too_small(name: str) -> None:
    rng = np.random.default_rng(8)
    rows = data(name, rng, 400)
    rows["country"][:] = "US"
    rows["country"][:7] = "FR"
    metric = sliced(name, Comm.local(), [rows], min_rows=8, dims=("country",))
    result = silenced(metric)
    block = result.to_dict()["slices"]
    assert block["country=FR"] == {"rows": 7, "too_small": True}
    assert block["country=US"]["rows"] == 393
    lines = result.to_log_line(name).splitlines()
    assert f"{name}[country=FR]: too_small rows=7" in lines
    base_lines = silenced(make_fed(name, [rows], False)).to_log_line(name).splitlines()
    us = [line for line in lines if line.startswith(f"{name}[country=US]: ")]
    assert lines[: len(base_lines)] == base_lines
    want = KINDS[name].load()(comm=Comm.local(), **{**options(name), **slice_options(name)})
    want.update(**{k: v[7:] for k, v in rows.items() if k not in ("country", "site")})
    assert us == [line.replace(f"{name}:", f"{name}[country=US]:", 1)
                  for line in silenced(want).to_log_line(name).splitlines()]


@pytest.mark.parametrize("name", NAMES)
def test_checkpoints_round_trip(name: str) -> None:
    rng = np.random.default_rng(9)
    rows = data(name, rng, 600)
    halves = batches_of(rows, [250])
    whole = quiet(sliced(name, Comm.local(), halves))
    parts = [sliced(name, Comm.local(), [half]) for half in halves]
    restored = sliced(name, Comm.local(), [])
    restored.load_state_dicts([part.state_dict() for part in parts])
    assert_same(quiet(restored), whole)
    one = sliced(name, Comm.local(), [])
    one.load_state_dict(parts[0].state_dict())
    assert_same(quiet(one), quiet(parts[0]), bits=True)
    assert_same(quiet(pickle.loads(pickle.dumps(parts[1]))), quiet(parts[1]), bits=True)
    assert_same(quiet(copy.deepcopy(parts[1])), quiet(parts[1]), bits=True)
    assert_same(quiet(parts[0].merge(parts[1])), whole)
    other = SlicedMetric(KINDS[name].load()(comm=Comm.local(), **options(name)), ["site"])
    with pytest.raises(ValueError, match="saved slices"):
        other.load_state_dict(parts[0].state_dict())


def _as_format_2(state: dict[str, Any]) -> dict[str, Any]:
    """A sliced state as format 2 saved it: each slice's own state under
    ``slices.DIMENSION.NUMBER.``, nothing packed, ``format`` 2 (no other part changed)."""
    layout = json.loads(state[STATE_KEY])
    of_slice: dict[tuple[int, int], dict[str, Any]] = {}
    _unpacked(layout, state, of_slice)
    old = {name: value for name, value in state.items()
           if not name.startswith(("slices.packed.", "slices.packed_lengths."))}
    for (index, number), own in of_slice.items():
        old.update({f"slices.{index}.{number}.{name}": value for name, value in own.items()})
    del layout["packed"]
    old[STATE_KEY] = json.dumps(layout)
    return {name: 2 if name.endswith("format") else value for name, value in old.items()}


@pytest.mark.parametrize("name", NAMES)
def test_slices_of_their_own_are_packed_stacked_ones_are_not(name: str) -> None:
    rows = data(name, np.random.default_rng(4), 300)
    metric = sliced(name, Comm.local(), [rows])
    state = metric.state_dict()
    packed = [key for key in state if key.startswith("slices.packed")]
    own = [key for key in state if key.startswith("slices.") and key.split(".")[1].isdigit()]
    assert own == []
    assert (packed == []) == (metric._stacked is not None)


@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # slices of their own
def test_slices_states_are_packed_into_a_few_entries_and_load_as_format_2s(
        tmp_path: Any, name: str) -> None:
    """Every slice's own state in one entry a part, not one a slice and part (many slices:
    a checkpoint of a few dozen arrays); saved, loaded and computed as each slice's own
    entries were (format 2's, still read)."""
    rng = np.random.default_rng(11)
    rows = data(name, rng, 900)
    rows["site"] = rng.integers(0, 40, 900)  # 40 sites, 160 crossed slices
    metric = sliced(name, Comm.local(), batches_of(rows, [400]))
    state = metric.state_dict()
    own = [key for key in state if key.startswith("slices.") and key.split(".")[1].isdigit()]
    assert own == []
    layout = json.loads(state[STATE_KEY])
    slices = sum(len(listed) for listed in layout["slices"])
    assert slices > 150
    packed = [key for key in state if key.startswith("slices.packed")]
    assert 0 < len(packed) <= 2 * len(layout["packed"]) < 40
    checkpoint.save(tmp_path / "c.npz", {"m": state})
    want = quiet(metric)
    for saved in (checkpoint.load(tmp_path / "c.npz")["m"], _as_format_2(state)):
        restored = sliced(name, Comm.local(), [])
        restored.load_state_dict(saved)
        assert_same(quiet(restored), want, bits=True)
    two = _as_format_2(state)
    assert sum(key.startswith("slices.0.") for key in two) > len(layout["packed"])


def test_packed_parts_unpack_to_each_slice_own() -> None:
    """What packs (a plain value alike in every slice; arrays of one dtype, text of any
    width, and one trailing shape) and what stays each slice's own; each slice's parts
    back as they were."""
    states = [
        {"kind": "pn", "format": 3, "ratio": 0.5, "ratio_nan": math.nan, "count": 1 + i,
         "keys": np.arange(i, dtype=np.uint64), "text": np.array(["x" * (i + 1)] * i),
         "grid": np.ones((i, 3)), "mixed": np.zeros(2, np.float64 if i else np.float32),
         "ints": np.zeros(2, np.int64 if i else np.int32),
         "empty": np.arange(i) if i % 2 else np.array([], dtype=str),
         "ragged": np.ones((2, i + 1)), "some": np.ones(1), "flag": True}
        for i in range(4)]
    states[2] = {k: v for k, v in states[2].items() if k != "some"}
    states[3]["flag"] = 1  # an int is not a bool alike
    entries, how, rest = _packed(states)
    assert how == {"kind": "same", "format": "same", "ratio": "same", "keys": "joined",
                   "text": "joined", "grid": "joined", "mixed": "joined", "empty": "joined"}
    assert [key for key in entries if "dtypes" in key] == [
        "slices.packed_dtypes.text", "slices.packed_dtypes.mixed",
        "slices.packed_dtypes.empty"]
    assert [sorted(own) for own in rest] == [
        ["count", "flag", "ints", "ragged", "ratio_nan", "some"]] * 2 + [
        ["count", "flag", "ints", "ragged", "ratio_nan"],
        ["count", "flag", "ints", "ragged", "ratio_nan", "some"]]
    layout = {"slices": [[[["a"], 1], [["b"], 1]], [[["c"], 1], [["d"], 1]]], "packed": how}
    of_slice: dict[tuple[int, int], dict[str, Any]] = {}
    _unpacked(layout, entries, of_slice)
    slots = [(0, 0), (0, 1), (1, 0), (1, 1)]
    for slot, state, own in zip(slots, states, rest, strict=True):
        back = {**of_slice[slot], **own}
        assert sorted(back) == sorted(state)
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(back[key], value) and back[key].shape == value.shape
                assert back[key].dtype == value.dtype
            else:
                assert back[key] == value or math.isnan(value)
    assert _packed([]) == ({}, {}, [])
    short = {**entries, "slices.packed_lengths.keys": np.array([0, 1, 2])}
    with pytest.raises(StateFormatError, match="part keys has 3 lengths"):
        _unpacked(layout, short, {})
    fewer = {**entries, "slices.packed_dtypes.mixed": np.array(["<f8"])}
    with pytest.raises(StateFormatError, match="part mixed has 1 dtypes for 4 slices"):
        _unpacked(layout, fewer, {})
    missing = {k: v for k, v in entries.items() if k != "slices.packed.grid"}
    with pytest.raises(StateFormatError, match="without its slices' part grid"):
        _unpacked(layout, missing, {})


@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_a_bad_uid_of_a_sliced_per_user_kind_is_named_and_changes_nothing(name: str) -> None:
    """The sliced metric makes the batch's uids keys (once, for the base and its slices):
    a missing one fails there, named ``uid`` with its row, before any row is kept, and
    compute fails after it."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(5)
    rows = data(name, rng, 40)
    rows["site"] = np.arange(40)  # 40 slices: the waiting path
    metric = sliced(name, Comm.local(), [], dims=("site",))
    inputs = {k: v for k, v in rows.items() if k not in ("country", "site")}
    inputs["uid"] = pa.array([str(u) for u in rows["uid"][:-1]] + [None])
    with pytest.raises(InputError) as caught:
        metric.update(**inputs, slices={"site": rows["site"]})
    assert caught.value.field == "uid" and caught.value.first_index == 39
    assert not metric._pending and not any(metric._rows)
    with pytest.raises(InputError):
        metric.compute()


@pytest.mark.parametrize("name", ["wuauc", "auc"])
def test_the_garbage_collector_runs_again_after_a_sliced_metrics_calls(name: str) -> None:
    """Many slices' updates, compute and finish pause the cyclic collector (no cycles
    among their objects): it runs again after each, after one that raised too, and
    stays off where the caller had turned it off; the slices' warnings still name the
    caller's line."""
    import gc

    rng = np.random.default_rng(6)
    rows = data(name, rng, 60)
    rows["site"] = np.arange(60)  # more slices than WAIT_FROM: the waiting path too
    inputs = {k: v for k, v in rows.items() if k not in ("country", "site")}
    metric = sliced(name, Comm.local(), [], dims=("site",))
    assert gc.isenabled()
    metric.update(**inputs, slices={"site": rows["site"]})
    assert gc.isenabled()
    with pytest.warns(UndefinedMetricWarning) as caught:  # (slices of a few rows)
        metric.compute()
    assert gc.isenabled()
    assert {warning.filename for warning in caught} == {__file__}  # the caller's line
    gc.disable()
    try:
        with pytest.warns(UndefinedMetricWarning):
            metric.compute()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(InputError):
        metric.update(**inputs, slices={"site": rows["site"][:-1]})
    assert gc.isenabled()
    with pytest.raises(InputError):  # (the failed update fails the compute)
        metric.compute()
    assert gc.isenabled()


def test_bad_slice_values_name_the_column() -> None:
    metric = SlicedMetric(make("auc", Comm.local(), fast=True), ["country"])
    pred, label = np.array([0.2, 0.4]), np.array([0, 1])
    with pytest.raises(InputError) as caught:
        metric.update(pred, label, slices={"country": np.array(["US", "a b"])})
    assert caught.value.field == "country"
    with pytest.raises(InputError, match="length mismatch"):
        metric.update(pred, label, slices={"country": np.array(["US"])})
    with pytest.raises(InputError, match="a slice column without values"):
        metric.update(pred, label, slices={})
    assert metric.error is not None
    with pytest.raises(InputError):
        metric.compute()
    for bad in (["a*b*c"], ["a", "a"], [""], ["x[1]"]):
        with pytest.raises(InputError):
            SlicedMetric(make("auc", Comm.local(), fast=True), bad)


@pytest.mark.parametrize("bad", ["x]", "a*b", "[1", "a b", "k=v"])
def test_a_bad_slice_value_among_many_is_named_by_its_first_row(bad: str) -> None:
    """Many new slice values are checked at once; the first bad one is named, with its
    first row, and the values before it in the batch are not taken."""
    rng = np.random.default_rng(3)
    values = np.array([f"v{i}" for i in range(500)], dtype=object)
    values[[321, 400]] = bad
    metric = SlicedMetric(make("wuauc", Comm.local(), fast=True), ["page"])
    rows = data("wuauc", rng, len(values))
    with pytest.raises(InputError) as caught:
        metric.update(rows["pred"], rows["label"], uid=rows["uid"], slices={"page": values})
    assert caught.value.field == "page" and caught.value.first_index == 321
    assert repr(bad) in caught.value.problem
    assert not metric._keys[0]  # nothing numbered from the batch


def test_a_bad_slice_value_in_a_file_names_its_line(tmp_path: Any, capsys: Any) -> None:
    table = cli_rows(40, seed=4)
    table["country"] = np.array(["US"] * 20 + ["FR"] * 19 + ["a*b"], dtype=object)
    path = write(str(tmp_path / "rows.tsv"), table)
    for kind in ("auc", "wuauc"):
        status, _, err = run(capsys, "eval", "--metrics", kind, "--slice", "country", path)
        assert status == 2
        assert f"{path}:41: column country: slice value 'a*b' holds *, [ or ]" in err


def test_a_sliced_result_reads_as_its_base() -> None:
    metric = sliced("auc", Comm.local(), [data("auc", np.random.default_rng(1), 300)])
    result = silenced(metric)
    assert isinstance(result, SlicedResult)
    assert result.auc == result.base.auc  # type: ignore[attr-defined]
    assert result["site=1"].result is not None and result["site=1"].rows > 0


# -- across ranks -----------------------------------------------------------------------


@pytest.mark.mpi
@pytest.mark.parametrize("one_rank", [0, 10**9])
@pytest.mark.parametrize("compare", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_slices_across_ranks_equal_a_run_over_their_rows(
        name: str, compare: bool, one_rank: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows scattered over the ranks (a user's rows on several, rank 1 with none); each
    rank's metric moves its rows between batches as the command line does. A per-user
    kind's slices computed each by every rank in step (``ONE_RANK_ROWS`` 0) or each whole
    on one rank."""
    from mpieval import slices as sliced_module

    if compare and "compare" not in fixture(name).option_inputs:
        pytest.skip(f"kind {name} takes no --compare")
    monkeypatch.setattr(sliced_module, "ONE_RANK_ROWS", one_rank)
    comm = Comm()
    rng = np.random.default_rng(77)  # alike on every rank
    rows = data(name, rng, 1500, compare)
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric = sliced(name, comm, batches_of(mine, [len(mine["site"]) // 3]), compare=compare,
                    min_rows=40)
    metric.move_rows(comm)
    result = quiet(metric)
    slices = result["slices"]
    everyone = comm.allgather(None)
    assert len(everyone) == comm.size
    for key, pick in picks(tuple(slices)).items():
        n = int(np.count_nonzero(pick(rows)))
        if n < 40:
            assert slices[key] == {"rows": n, "too_small": True}, key
            continue
        want = alone(name, [rows], pick, compare)
        assert slices[key]["rows"] == n
        assert_same(without_slice_fields(slices[key], want), want, key)
    gathered = comm.allgather(json.dumps(result, sort_keys=True))
    assert all(text == gathered[0] for text in gathered)  # the same on every rank


@pytest.mark.mpi
@pytest.mark.parametrize("one_rank", [0, 20, 10**9])
@pytest.mark.parametrize("min_rows", [5, 15])
@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_many_slices_waiting_across_ranks_equal_one_rank(
        name: str, min_rows: int, one_rank: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-user kind's many slices (80 a batch: their rows wait) with rows scattered
    over the ranks (rank 1 with none), each rank giving its slices their rows at its own
    point (PENDING_ROWS differs by rank), a slice's rows waiting while it has fewer than
    ``min_rows`` here and given at compute when it has them over every rank; the slices
    computed by every rank in step, each whole on one rank, or those of up to 20 rows so
    (``ONE_RANK_ROWS``): every rank's JSON and warnings are one rank's over every row."""
    from mpieval import slices

    monkeypatch.setattr(slices, "ONE_RANK_ROWS", one_rank)
    comm = Comm()
    rng = np.random.default_rng(78)  # alike on every rank
    rows = data(name, rng, 1500, compare=True)
    rows["site"] = rng.integers(0, 80, len(rows["site"]))
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    monkeypatch.setattr(slices, "WAIT_FROM", 10**9)
    whole = quiet(sliced(name, Comm.local(), batches_of(rows, [500]), compare=True,
                         min_rows=min_rows, dims=("site",)))
    monkeypatch.setattr(slices, "WAIT_FROM", 0)
    monkeypatch.setattr(slices, "PENDING_ROWS", 100 + 150 * comm.rank)
    metric = sliced(name, comm, batches_of(mine, [len(mine["site"]) // 3, 400]),
                    compare=True, min_rows=min_rows, dims=("site",))
    metric.move_rows(comm)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", UndefinedMetricWarning)
        result = metric.compute().to_dict()
    assert len(result["slices"]) == 80
    assert_same(result, whole, bits=True)
    with warnings.catch_warnings(record=True) as alone_said:  # one rank's warnings
        warnings.simplefilter("always", UndefinedMetricWarning)
        monkeypatch.setattr(slices, "WAIT_FROM", 10**9)
        sliced(name, Comm.local(), batches_of(rows, [500]), compare=True,
               min_rows=min_rows, dims=("site",)).compute()
    messages = [str(w.message) for w in said]
    want = [str(w.message) for w in alone_said]
    assert messages == (want if comm.rank == 0 else []), messages


@pytest.mark.mpi
@pytest.mark.parametrize("name", [n for n in NAMES if KINDS[n].ids])  # the per-user kinds
def test_a_slice_that_fails_on_its_rank_fails_every_rank(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slice computed whole on one rank whose compute fails there (an error of its
    rows): every rank raises that error, none waits for the others."""

    comm = Comm()
    if comm.size < 2:
        pytest.skip("a slice is computed whole on one of several ranks")
    rng = np.random.default_rng(79)
    rows = data(name, rng, 900)
    rows["site"] = rng.integers(0, 40, len(rows["site"]))
    mine = my_rows(rows, comm.rank, comm.size, rng, scatter=True)
    metric = sliced(name, comm, [mine], min_rows=5, dims=("site",))
    real = SlicedMetric._whole_result

    def failing(self: SlicedMetric, states: list[dict[str, Any]]) -> Any:
        result = real(self, states)
        if result[0].to_dict() and comm.rank == comm.size - 1:  # this rank's first slice
            raise InputError("uid", "a collision of two uids' keys (as if)")
        return result

    monkeypatch.setattr(SlicedMetric, "_whole_result", failing)
    with pytest.raises(InputError, match="as if"):
        silenced(metric)


@pytest.mark.mpi
def test_a_slice_seen_on_one_rank_only() -> None:
    """A slice value only rank 0 has: every rank agrees on it before the sum."""
    comm = Comm()
    rng = np.random.default_rng(4)
    rows = data("wuauc", rng, 600)
    mine = my_rows(rows, comm.rank, comm.size, rng)
    if comm.rank == 0:
        mine["country"] = np.full(len(mine["pred"]), "ZZ")
    metric = sliced("wuauc", comm, [mine], dims=("country",))
    result = quiet(metric)
    assert result["slices"]["country=ZZ"]["rows"] == comm.allgather(len(mine["pred"]))[0]


# -- the command line -------------------------------------------------------------------


def sliced_file(tmp_path: Any, n: int = 3000) -> tuple[str, dict[str, np.ndarray]]:
    table = cli_rows(n, seed=21)
    rng = np.random.default_rng(2)
    table["country"] = rng.choice(np.array(["US", "FR", "DE", "NG"]), n, p=[.5, .3, .19, .01])
    return write(str(tmp_path / "rows.tsv"), table), table


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_line_equals_a_filtered_run_per_slice(tmp_path: Any, capsys: Any) -> None:
    path, table = sliced_file(tmp_path)
    status, plain, _ = run(capsys, "eval", path, "--metrics", "auc,wuauc", "--tag", "tag")
    assert status == 0
    status, out, _ = run(capsys, "eval", path, "--metrics", "auc,wuauc", "--tag", "tag",
                         "--slice", "country,country*tag", "--min-slice-rows", "50",
                         "--slice-table-size", "1000", "--json", tmp_path / "s.json")
    assert status == 0
    lines = out.splitlines()
    auc_lines = [line for line in lines if line.startswith(("auc:", "auc["))]
    assert [line for line in lines if ":" in line and "[" not in line.split(":")[0]] \
        == plain.splitlines()  # the run's own lines, unchanged
    assert auc_lines[1] == "auc[country=DE]: " + auc_lines[1].split(": ", 1)[1]
    assert "auc[country=NG]: too_small rows=" in out
    data = json.loads((tmp_path / "s.json").read_text())
    config = tmp_path / "us.toml"
    config.write_text('[metrics.auc]\nkind = "auc"\ntable_size = 1000\n'
                      'filters = { country = "US" }\n'
                      '[metrics.wuauc]\nkind = "wuauc"\ntag = "tag"\n'
                      'filters = { country = "US" }\n')
    status, out_us, _ = run(capsys, "eval", path, "--config", config, "--json",
                            tmp_path / "us.json")
    assert status == 0
    us = json.loads((tmp_path / "us.json").read_text())
    for name in ("auc", "wuauc"):
        block = data[name]["slices"]["country=US"]
        assert_same(without_slice_fields(block, us[name]), us[name], name, bits=True)
        assert block["rows"] == int(np.count_nonzero(table["country"] == "US"))
    want = [line.replace("auc:", "auc[country=US]:", 1).replace("wuauc:", "wuauc[country=US]:")
            for line in out_us.splitlines()]
    assert [line for line in lines if "[country=US]" in line] == want


def test_config_keys_and_bad_slices(tmp_path: Any, capsys: Any) -> None:
    path, _ = sliced_file(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text('[metrics.ctr]\nkind = "auc"\nslice = ["country"]\nmin_slice_rows = 1\n')
    status, out, _ = run(capsys, "eval", path, "--config", config)
    assert status == 0 and "ctr[country=NG]: auc=" in out
    status, _, err = run(capsys, "eval", path, "--slice", "region")
    assert status == 2 and "region" in err
    status, _, err = run(capsys, "eval", path, "--min-slice-rows", "5")
    assert status == 2 and "--min-slice-rows" in err and "--slice" in err
    status, _, err = run(capsys, "eval", path, "--metrics", "pn", "--slice", "country",
                         "--slice-table-size", "100")
    assert status == 2 and "--slice-table-size" in err
    status, _, err = run(capsys, "eval", path, "--slice", "a*b*c")
    assert status == 2 and "--slice" in err
    status, _, err = run(capsys, "eval", path, "--config", config, "--slice", "country")
    assert status == 2 and "--slice" in err
    config.write_text('[metrics.ctr]\nkind = "auc"\nslice = "country"\n')
    status, _, err = run(capsys, "eval", path, "--config", config)
    assert status == 2 and "slice" in err


def test_the_gate_stars_over_slices(tmp_path: Any, capsys: Any) -> None:
    path, _ = sliced_file(tmp_path)
    status, _, _ = run(capsys, "eval", path, "--slice", "country", "--compare", "pred2",
                       "--min-slice-rows", "100", "--json", tmp_path / "run.json")
    assert status == 0
    results = json.loads((tmp_path / "run.json").read_text())
    rules = gate.rules_from_toml({"rule": [
        {"value": "auc.slices.*.auc", "min": 0.5},
        {"value": "auc.slices.*.compare.auc_diff", "max_drop": 0.001},
    ]})
    verdict = gate.check(rules, results, "rules")
    checks = [c for c in verdict.checks if c.rule is rules[1]]
    assert [c.path for c in checks] == [f"auc.slices.country={c}.compare.auc_diff"
                                        for c in ("DE", "FR", "NG", "US")]
    assert not verdict.passed  # model B (random preds) is far worse in every large slice
    too_small = checks[2]  # NG: no value, checked as missing (a failure unless skipped)
    assert (too_small.value, too_small.passed, too_small.reason) == (None, False, "missing")
    defined = [c for c in checks if c.q is not None]
    assert len(defined) == 3
    ps = [c.p for c in defined]
    for c, q in zip(defined, bh(ps), strict=True):
        assert c.q == pytest.approx(q, rel=1e-12)


# -- the command line under mpiexec -----------------------------------------------------


@pytest.fixture(scope="module")
def sliced_files(tmp_path_factory: Any) -> list[str]:
    """Rows with a slice column cut into uneven files of several formats."""
    from test_cli import shards

    root = tmp_path_factory.mktemp("sliced")
    table = cli_rows(4000, seed=31)
    rng = np.random.default_rng(6)
    table["country"] = rng.choice(np.array(["US", "FR", "DE", "NG"]), 4000,
                                  p=[.5, .3, .19, .01])
    return shards(root, table, ["a.tsv", "b.csv", "c.parquet", "d.tsv.gz"])


MPI_ARGS = ("--metrics", "auc,wuauc,pn", "--tag", "tag", "--slice", "country,country*tag",
            "--min-slice-rows", "60", "--compare", "pred2")


@pytest.mark.parametrize("ranks", [2, 3])
def test_sliced_runs_are_the_same_on_any_ranks(tmp_path: Any, sliced_files: list[str],
                                               ranks: int) -> None:
    from test_cli_mpi import ALONE, launch

    results = []
    for n in (ALONE, ranks):
        out = tmp_path / f"run{n}.json"
        proc, _ = launch(n, "eval", *MPI_ARGS, "--json", out, *sliced_files)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(out.read_text())
        del data["run"]
        results.append((data, proc.stdout))
    (alone_json, alone_out), (ranks_json, ranks_out) = results
    assert_same(ranks_json, alone_json)
    assert alone_out.count("[country=") == ranks_out.count("[country=") > 0
    assert "too_small" in json.dumps(ranks_json)


@pytest.mark.parametrize("ranks", [0, 2, 3])
def test_a_missing_slice_column_exits_2_on_every_rank(tmp_path: Any, sliced_files: list[str],
                                                      ranks: int) -> None:
    from test_cli_mpi import assert_failed_everywhere, launch

    out = tmp_path / "run.json"
    proc, seconds = launch(ranks, "eval", "--slice", "country,region", "--json", out,
                           *sliced_files, per_rank_status=True)
    assert_failed_everywhere(proc, seconds, ranks, "region", out)
    assert "slice of auc" in proc.stderr


def test_saved_sliced_runs_merge(tmp_path: Any, capsys: Any) -> None:
    path, _ = sliced_file(tmp_path)
    argv = ("--metrics", "auc,ranking", "--tag", "tag", "--slice",
            "country*tag", "--min-slice-rows", "30")
    status, out, _ = run(capsys, "eval", path, *argv, "--save-state", tmp_path / "st",
                         "--json", tmp_path / "a.json")
    assert status == 0
    status, merged, _ = run(capsys, "merge", tmp_path / "st", "--json", tmp_path / "b.json")
    assert status == 0 and merged == out and "[country=US*tag=feed]" in out
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    assert_same({k: v for k, v in b.items() if k != "run"},
                {k: v for k, v in a.items() if k != "run"}, bits=True)


def test_saved_runs_of_many_small_slices_merge_to_one_run(tmp_path: Any, capsys: Any) -> None:
    """Per-user kinds sliced by a column of many values (their rows wait; most slices
    too small to have a metric when saved): two runs saved and merged give the JSON of
    one run over both files, bit for bit, small slices and slices with values alike."""
    table = cli_rows(6000, seed=23)
    rng = np.random.default_rng(23)
    table["item"] = np.minimum(rng.zipf(1.3, 6000), 400)  # a head and a tail of items
    paths = [write(str(tmp_path / f"part{i}.tsv"), {k: v[i::2] for k, v in table.items()})
             for i in range(2)]
    argv = ("--metrics", "wuauc,pn,ranking", "--slice", "item", "--min-slice-rows", "20")
    for i, path in enumerate(paths):
        status, _, _ = run(capsys, "eval", path, *argv, "--save-state", tmp_path / f"s{i}")
        assert status == 0
    status, whole, _ = run(capsys, "eval", *paths, *argv, "--json", tmp_path / "a.json")
    assert status == 0
    status, merged, _ = run(capsys, "merge", tmp_path / "s0", tmp_path / "s1",
                            "--json", tmp_path / "b.json")
    assert status == 0 and merged == whole
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    assert_same({k: v for k, v in b.items() if k != "run"},
                {k: v for k, v in a.items() if k != "run"}, bits=True)
    blocks = a["wuauc"]["slices"].values()
    assert sum("too_small" in block for block in blocks) > 30
    assert sum("too_small" not in block for block in blocks) > 5
    saved = checkpoint.load(str(tmp_path / "s0" / "state-00000.npz"))
    assert any("slices.waiting." in name for state in saved.values() for name in state)


def test_sliced_json_of_every_kind_validates(tmp_path: Any, capsys: Any) -> None:
    import jsonschema

    from mpieval.schema import results_schema

    path, _ = sliced_file(tmp_path)
    schema = results_schema()
    for argv in (("--metrics", "auc,wuauc,pn,ranking", "--tag", "tag", "--compare", "pred2"),
                 ("--metrics", "pairwise", "--left-label", "left", "--right-label", "right")):
        out = tmp_path / "run.json"
        status, _, _ = run(capsys, "eval", path, *argv, "--slice", "country,country*tag",
                           "--min-slice-rows", "40", "--json", out)
        assert status == 0
        data = json.loads(out.read_text())
        assert all("slices" in block for name, block in data.items() if name != "run")
        jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
        broken = copy.deepcopy(data)
        name = next(iter(broken))
        broken[name]["slices"]["country=US"]["too_small"] = True  # values and too_small
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_spark_runs_refuse_slices(tmp_path: Any, capsys: Any) -> None:
    path, _ = sliced_file(tmp_path)
    status, _, err = run(capsys, "eval", "--engine", "spark", path, "--slice", "country")
    assert status == 2 and "--slice: is for --engine mpi" in err


@pytest.mark.parametrize("name", NAMES)
def test_compute_leaves_the_state_alone(name: str) -> None:
    rng = np.random.default_rng(12)
    first, second = batches_of(data(name, rng, 500), [200])
    metric = sliced(name, Comm.local(), [first])
    once = quiet(metric)
    assert_same(quiet(metric), once, bits=True)  # twice: the same
    inputs = {k: v for k, v in second.items() if k not in ("country", "site")}
    metric.update(**inputs, slices={"country": second["country"], "site": second["site"]})
    assert_same(quiet(metric), quiet(sliced(name, Comm.local(), [first, second])), bits=True)


def test_auc_slices_count_the_base_s_validated_rows(monkeypatch: Any) -> None:
    """``auc`` is checked once, by the base: its slices never run ``update()`` (the path
    that checks every slice's rows again), and still equal a run over their rows (the
    tests above)."""

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a slice of auc was updated through update()")

    monkeypatch.setattr(SlicedMetric, "_update_slice", staticmethod(refused))
    metric = sliced("auc", Comm.local(), [data("auc", np.random.default_rng(3), 300)])
    slices = silenced(metric).slices
    assert slices and all(one.rows > 0 for one in slices)


# -- auc's stacked slices and their compiled pass ----------------------------------------


def auc_rows(rng: np.random.Generator, n: int, pred_dtype: Any = np.float64) -> Rows:
    """Unweighted 0/1 rows for the compiled pass, with preds at the splits' edges (0, 1,
    tiny preds whose square or cube leaves the exact splits' ranges, a subnormal) and
    three slice columns: ``country`` (text), ``site`` (200 ints) and ``big`` (one value
    for most rows: a slice whose partial sums fill up many times)."""
    pred = rng.beta(2, 8, n)
    edges = [0.0, 1.0, 1e-300, 5e-324, 1e-12, 3e-7, 2.0**-34, 2.0**-17, 1 - 1e-16, 0.5]
    at = rng.choice(n, 40 * len(edges), replace=False)
    pred[at] = np.resize(edges, len(at))
    rows: Rows = {"pred": pred.astype(pred_dtype),
                  "label": (rng.random(n) < pred).astype(np.int8)}
    rows["country"] = rng.choice(np.array(["US", "FR", "DE", "all"]), n, p=[.5, .3, .15, .05])
    rows["site"] = rng.integers(0, 200, n)
    rows["big"] = np.where(rng.random(n) < 0.95, 1, rng.integers(2, 5, n))
    return rows


def auc_sliced(batches: list[Rows], dims: tuple[str, ...], **opts: Any) -> SlicedMetric:
    metric = SlicedMetric(KINDS["auc"].load()(comm=Comm.local(), table_size=1000, **opts),
                          list(dims), min_rows=0, options={"table_size": SLICE_TABLE})
    names = ("country", "site", "big")
    for batch in batches:
        metric.update(**{k: v for k, v in batch.items() if k not in names},
                      slices={k: batch[k] for k in names})
    return metric


@pytest.mark.parametrize("pred_dtype", [np.float64, np.float32])
def test_auc_slices_in_one_pass_have_the_bits_of_their_rows_alone(pred_dtype: Any) -> None:
    """The compiled pass over every slice of every column at once gives each slice the
    table, exact sums and moments (as arrays, bit for bit) and the block of a fresh
    metric given only its rows: more than 2**10 rows a slice (partial sums flushed),
    preds out of the exact splits' ranges, float32 preds."""
    rng = np.random.default_rng(341)
    rows = auc_rows(rng, 12_000, pred_dtype)
    batches = batches_of(rows, [0, 5000, 5001])
    dims = ("country", "site", "big", "country*site")
    metric = auc_sliced(batches, dims)
    result = quiet(metric)
    stacked = metric.state_dict()
    assert {k for k in stacked if k.startswith("slices.")} == {
        "slices.layout", "slices.stacked.table", "slices.stacked.sums",
        "slices.stacked.moments"}  # a few large arrays, not a state per slice
    listed = json.loads(stacked["slices.layout"])["stacked"]
    checked = 0
    for dimension, slices in zip(dims, listed, strict=True):
        columns = dimension.split("*")
        for values, count, row in slices:
            def pick(b: Rows, columns: list[str] = columns, values: list[Any] = values
                     ) -> np.ndarray:
                keep = np.ones(len(b["pred"]), dtype=bool)
                for column, value in zip(columns, values, strict=True):
                    keep &= b[column] == value
                return keep
            want = KINDS["auc"].load()(comm=Comm.local(), table_size=SLICE_TABLE)
            for batch in batches:
                keep = pick(batch)
                if keep.any():
                    want.update(batch["pred"][keep], batch["label"][keep])
            for part in ("table", "sums", "moments"):
                got = stacked[f"slices.stacked.{part}"][row]
                assert got.tobytes() == want.state.summed(part).tobytes(), (values, part)
            name = "*".join(f"{c}={v}" for c, v in zip(columns, values, strict=True))
            assert result["slices"][name]["rows"] == count == int(
                sum(np.count_nonzero(pick(b)) for b in batches))
            assert_same(without_slice_fields(result["slices"][name], quiet(want)),
                        quiet(want), name, bits=True)
            checked += 1
    assert checked == len(result["slices"]) and checked > 200
    # the metric's own table and sums, counted in the same pass, as a run without slices
    whole = KINDS["auc"].load()(comm=Comm.local(), table_size=1000)
    for batch in batches:
        whole.update(batch["pred"], batch["label"])
    for part in ("table", "sums", "moments"):
        assert (metric.base.state.summed(part).tobytes()
                == whole.state.summed(part).tobytes()), part
    assert_same({k: v for k, v in result.items() if k != "slices"}, quiet(whole), bits=True)


@pytest.mark.parametrize("opts", [{"soft_labels": True}, {"weights": "importance"}])
def test_auc_stacked_slices_of_other_rows_count_each_slice(opts: dict[str, Any]) -> None:
    """Rows the compiled pass does not take (soft labels, importance weights; weights:
    the test above over every kind) are counted slice by slice into the stacked states,
    still each slice's block of a run over its rows alone, and the metric's own block
    that of a run without slices."""
    rng = np.random.default_rng(342)
    rows = auc_rows(rng, 3000)
    if opts.get("soft_labels"):
        rows["label"] = np.round(rng.random(3000), 2)
    else:
        rows["weight"] = rng.integers(1, 4, 3000).astype(np.float64)
    batches = batches_of(rows, [1000])
    metric = auc_sliced(batches, ("country",), **opts)
    result = quiet(metric)
    whole = KINDS["auc"].load()(comm=Comm.local(), table_size=1000, **opts)
    for batch in batches:
        whole.update(**{k: v for k, v in batch.items() if k not in ("country", "site", "big")})
    assert_same({k: v for k, v in result.items() if k != "slices"}, quiet(whole), bits=True)
    for country in ("DE", "FR", "US", "all"):
        want = KINDS["auc"].load()(comm=Comm.local(), table_size=SLICE_TABLE, **opts)
        for batch in batches:
            keep = batch["country"] == country
            want.update(**{k: v[keep] for k, v in batch.items()
                           if k not in ("country", "site", "big")})
        block = result["slices"][f"country={country}"]
        assert_same(without_slice_fields(block, quiet(want)), quiet(want), bits=True)


def test_slices_are_in_numeric_then_natural_order() -> None:
    """Numbers read as text sort by their number, other text naturally (runs of digits as
    numbers), integers by value: the JSON's and the log lines' order."""
    values = np.array(["site10", "site2", "10", "2", "-1.5", "b", "site02", "9.75"])
    rng = np.random.default_rng(5)
    pred, label = rng.random(len(values)), np.arange(len(values)) % 2
    metric = SlicedMetric(make("auc", Comm.local(), fast=True), ["page", "n"], min_rows=0)
    metric.update(pred, label, slices={"page": values, "n": np.array([10, 2, 9, 1, 2, 3, 4, 5])})
    result = silenced(metric)
    assert [one.name for one in result.slices] == [
        "page=-1.5", "page=2", "page=9.75", "page=10", "page=b", "page=site02", "page=site2",
        "page=site10", "n=1", "n=2", "n=3", "n=4", "n=5", "n=9", "n=10"]
    assert list(result.to_dict()["slices"]) == [one.name for one in result.slices]
    lines = result.to_log_line("auc").splitlines()[1:]
    assert [line.split(":")[0] for line in lines] == [f"auc[{one.name}]"
                                                      for one in result.slices]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**25).map(str),
                          st.from_regex(r"0[0-9]{0,20}", fullmatch=True),
                          st.sampled_from(["9007199254740993", "9007199254740992", "٣"])),
                min_size=1, max_size=40, unique=True))
def test_slices_of_digits_sort_as_their_key(texts: list[str]) -> None:
    """A column of ASCII digits sorted by arrays (many item ids) is the key's order: by
    number, ties (``02`` and ``2``, ids past 2**53 that are one float) by their text; a
    value of other digits (``٣``) takes the key a slice."""
    counts = {(text,): number for number, text in enumerate(texts)}
    assert _in_order(counts) == sorted(counts.items(), key=lambda item: _sort_key(item[0]))


@pytest.mark.parametrize("tagged", [False, True])
def test_slices_finished_together_are_each_finished_alone(
        tagged: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind that finishes its slices in one pass (``wuauc``: Metric.finished_together)
    gives each slice the result and the warnings of its own finish(): the JSON, the log
    lines and every undefined-value warning as with the pass turned off."""
    rng = np.random.default_rng(71)
    rows = data("wuauc", rng, 1200)
    rows["site"] = rng.integers(0, 40, len(rows["site"]))  # slices of few users: warnings
    if not tagged:
        rows.pop("tag", None)
    batches = batches_of(rows, [0, 500])

    def finished() -> tuple[dict[str, Any], str, list[str]]:
        metric = sliced("wuauc", Comm.local(), batches, min_rows=5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UndefinedMetricWarning)
            result = metric.compute()
        return result.to_dict(), result.to_log_line("w"), [str(w.message) for w in caught]

    from mpieval.kinds.wuauc.metric import WuaucMetric

    passes: list[int] = []  # how many metrics each of the kind's passes finished
    original = WuaucMetric.finished_together.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(WuaucMetric, "finished_together", classmethod(
        lambda cls, metrics, sums, comm: passes.append(len(metrics))
        or original(cls, metrics, sums, comm)))
    together = finished()
    assert max(passes) > 20  # the slices in one pass
    monkeypatch.setattr(SlicedMetric, "_finished_together", lambda self, parts, comm: {})
    alone_each = finished()
    assert json.dumps(together[0]) == json.dumps(alone_each[0])
    assert together[1] == alone_each[1]
    assert together[2] == alone_each[2] and len(together[2]) >= 2


def test_slices_warn_once_per_reason() -> None:
    """An undefined value of many slices is one warning naming how many (and the first
    few); a slice alone with its reason keeps its own warning."""
    rng = np.random.default_rng(6)
    n = 700
    site = np.repeat(np.arange(7), 100)
    label = rng.integers(0, 2, n)
    label[site == 6] = 0  # one class only: auc undefined there alone
    metric = SlicedMetric(make("auc", Comm.local(), fast=True), ["site"], min_rows=0)
    metric.update(rng.random(n), label, slices={"site": site})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        metric.compute()
    said = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    sliced = [message for message in said if message.startswith("auc[") or
              message.startswith("auc: 6 slices")]
    assert len(sliced) == 2, said
    assert sliced[0] == ("auc: 6 slices (site=0, site=1, site=2, site=3, site=4, ...): "
                         "bucket_error is undefined: no bucket range reached the error bound")
    assert sliced[1].startswith("auc[site=6]: auc is undefined with only one class")
