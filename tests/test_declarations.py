"""Each kind is declared once, on its class: the registry, the config reader and the
command line read that declaration; the base class checks options and creates, resets
and merges the declared state."""

from __future__ import annotations

import numpy as np
import pytest

from mpieval import AucMetric, PairwiseMetric, PnMetric, WuaucMetric
from mpieval.comm import Comm
from mpieval.config import specs_from_config, specs_from_flags
from mpieval.errors import InputError
from mpieval.kinds import KINDS
from mpieval.state import Rows, State, Summed, pack_taking, unpack


@pytest.mark.parametrize("bad", [True, 0, -3, 2.5, "10"])
def test_table_size_is_checked_the_same_in_the_api_and_the_config(bad):
    with pytest.raises(InputError, match="table_size: must be a positive integer"):
        AucMetric(table_size=bad, comm=Comm.local())
    with pytest.raises(InputError, match="table_size: must be a positive integer"):
        specs_from_config({"metrics": {"m": {"kind": "auc", "table_size": bad}}})


@pytest.mark.parametrize("bad", ["zero", "", None, 1])
def test_tie_mode_is_checked_the_same_in_the_api_and_the_config(bad):
    with pytest.raises(InputError, match="ties: must be one of negative, ignore, half"):
        PnMetric(ties=bad, comm=Comm.local())
    with pytest.raises(InputError, match="ties: must be one of negative, ignore, half"):
        specs_from_config({"metrics": {"m": {"kind": "pn", "ties": bad}}})


def test_soft_labels_must_be_a_boolean():
    with pytest.raises(InputError, match="soft_labels: must be true or false"):
        AucMetric(soft_labels=1, comm=Comm.local())


@pytest.mark.parametrize("name", list(KINDS))
def test_the_registry_presents_each_class_declaration(name):
    kind = KINDS[name]
    cls = kind.load()
    assert cls.kind == name
    assert kind.inputs == tuple(spec.name for spec in cls.inputs)
    assert set(kind.options) == {option.name for option in cls.options if option.config}
    for option in cls.options:  # every default passes its own check
        assert option.check(option.name, option.default) == option.default
    # the command line's defaults: every required input reads its own column
    assert kind.default_columns == {spec.name: spec.name for spec in cls.inputs
                                    if not spec.optional}
    spec = specs_from_flags(name, columns={}, options={}, prefix=None)[0]
    assert dict(spec.columns) == kind.default_columns
    assert dict(spec.options) == {option.name: option.default for option in cls.options}


def test_an_unknown_option_names_the_kind():
    with pytest.raises(InputError, match="window: is not an option of kind pn"):
        PnMetric.check_options({"window": 3})


def test_pack_and_unpack_are_inverse():
    def parts_of() -> dict[str, np.ndarray]:
        return {"a": np.arange(6.0).reshape(2, 3), "b": np.array([7.0]), "c": np.zeros(0)}

    parts, taken = parts_of(), parts_of()
    buffer = pack_taking([taken])
    assert buffer.tolist() == [0, 1, 2, 3, 4, 5, 7] and taken == {}  # taken out as packed
    back = unpack(buffer, {k: v.shape for k, v in parts.items()})
    for name, value in parts.items():
        np.testing.assert_array_equal(back[name], value)
    with pytest.raises(ValueError, match="does not hold"):
        unpack(buffer, {"a": (2, 2)})
    more = {"d": np.array([[8.0, 9.0]], np.float32)}
    both = pack_taking([parts_of(), {}, more])  # several parts, one after the other
    assert both.dtype == np.float64 and both.tolist() == [0, 1, 2, 3, 4, 5, 7, 8, 9]
    assert unpack(both[7:], {"d": (1, 2)})["d"].tolist() == [[8.0, 9.0]]
    assert pack_taking([]).tolist() == []


def test_summed_parts_share_one_buffer_and_rows_concatenate():
    layout = {"t": Summed((2, 2)), "s": Summed((3,)), "r": Rows({"x": np.float32})}
    a, b = State(layout), State(layout)
    assert a.buffer.shape == (7,)
    a.summed("t")[1, 1] = 5
    b.summed("s")[0] = 2
    a.rows("r").append(x=np.array([1.5], np.float32))
    b.rows("r").widen("x", np.float64)
    b.rows("r").append(x=np.array([0.1]))
    merged = a.merge(b)
    assert merged.buffer.tolist() == [0, 0, 0, 5, 2, 0, 0]
    assert merged.rows("r").columns()["x"].tolist() == [1.5, 0.1]  # widened, values kept
    assert a.buffer.tolist() == [0, 0, 0, 5, 0, 0, 0] and len(a.rows("r")) == 1
    with pytest.raises(ValueError, match="different layouts"):
        a.merge(State({"t": Summed((3,))}))


def _users(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"uid": rng.integers(0, n // 4 + 1, n), "pred": rng.random(n).round(3),
            "label": rng.integers(0, 2, n)}


@pytest.mark.parametrize("string_uids", [False, True])
def test_per_user_kinds_merge_shards_into_the_whole(rng, string_uids):
    rows = _users(rng, 400)
    if string_uids:
        rows["uid"] = np.char.add("u", rows["uid"].astype(str))
    tags = rng.choice(["b", "a", "c"], 400)
    halves = [slice(0, 150), slice(150, 400)]
    whole_w = WuaucMetric(comm=Comm.local())
    whole_w.update(rows["uid"], rows["pred"], rows["label"], tag=tags)
    whole_p = PnMetric(comm=Comm.local())
    whole_p.update(rows["uid"], rows["pred"], rows["label"])
    parts_w, parts_p = [], []
    for k, part in enumerate(halves):
        w = WuaucMetric(comm=Comm.local())
        # the shards meet their tags in different orders: the merge maps the codes
        order = slice(None) if k == 0 else slice(None, None, -1)
        w.update(rows["uid"][part][order], rows["pred"][part][order],
                 rows["label"][part][order], tag=tags[part][order])
        parts_w.append(w)
        p = PnMetric(comm=Comm.local())
        p.update(rows["uid"][part], rows["pred"][part], rows["label"][part])
        parts_p.append(p)
    merged_w = parts_w[0].merge(parts_w[1])
    merged_p = parts_p[0].merge(parts_p[1])
    assert _close(merged_w.compute().to_dict(), whole_w.compute().to_dict())
    assert merged_p.compute().to_dict() == whole_p.compute().to_dict()
    # the inputs are unchanged
    assert parts_w[0].rows == 150 and parts_w[1].rows == 250


def test_merging_metrics_of_different_options_is_refused():
    with pytest.raises(ValueError, match="cannot merge"):
        AucMetric(table_size=10, comm=Comm.local()).merge(
            AucMetric(table_size=20, comm=Comm.local()))
    with pytest.raises(ValueError, match="cannot merge"):
        PairwiseMetric(comm=Comm.local()).merge(PnMetric(comm=Comm.local()))


def test_merging_integer_and_string_uids_is_refused():
    a, b = WuaucMetric(comm=Comm.local()), WuaucMetric(comm=Comm.local())
    a.update([1, 2], [0.1, 0.2], [0, 1])
    b.update(["x", "y"], [0.1, 0.2], [0, 1])
    with pytest.raises(InputError, match="integer uids in one metric and strings"):
        a.merge(b)


def test_reset_clears_rows_tags_and_the_recorded_error():
    metric = WuaucMetric(comm=Comm.local())
    metric.update([1, 2], [0.1, 0.2], [0, 1], tag=["x", "y"])
    with pytest.raises(InputError):
        metric.update([1], [2.0], [0])
    assert metric.error is not None
    metric.reset()
    assert metric.error is None and metric.rows == 0 and metric.nbytes == 0
    metric.update(["s"], [0.5], [1])  # strings after a reset: a fresh metric
    assert metric.rows == 1


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12)
    return a == b
