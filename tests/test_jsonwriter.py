"""The JSON writer: the same bytes as ``json.dumps(obj, indent=2, allow_nan=False)``."""
from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mpieval import _core, jsonwriter, locations


def expected(obj: object) -> str:
    return json.dumps(obj, indent=2, allow_nan=False)


scalars = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
numbers = st.lists(st.floats(allow_nan=False, allow_infinity=False)
                   | st.integers(min_value=-2**80, max_value=2**80), max_size=20)
values = st.recursive(
    scalars | numbers,
    lambda inner: (st.lists(inner, max_size=5) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=6), inner, max_size=5)),
    max_leaves=40)


@given(values)
def test_same_bytes_as_json_dumps(obj: object) -> None:
    assert jsonwriter.dumps(obj) == expected(obj)
    assert b"".join(jsonwriter.pieces(obj, size=7)).decode() == expected(obj) + "\n"


@given(values)
def test_members_made_whole_a_few_at_a_time(obj: object) -> None:
    """The members of a dict deep enough to make them whole (a run's tags), two at a time
    in one compiled call: the same bytes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonwriter, "MEMBERS_AT_ONCE", 2)
        for deep in ({"a": {"b": obj}}, {"a": {"b": {"c": obj, "d": [obj], "e": 1}}}, obj):
            assert jsonwriter.dumps(deep) == expected(deep)


def test_many_tags_blocks_in_several_calls() -> None:
    """3,000 tag blocks (past ``MEMBERS_AT_ONCE``), with a non-ASCII tag and a block that
    the standard library writes (a non-string key): the same bytes, in pieces too."""
    tags = {f"t{i}": {"uauc": i / 7, "n": i, "ci95": {"uauc": None if i % 2 else [0.1, i]}}
            for i in range(3000)}
    tags["é"] = {"x": 1}
    tags["t5"] = {1: "int key"}
    obj = {"m": {"kind": "wuauc", "tags": tags}}
    assert jsonwriter.dumps(obj) == expected(obj)
    assert b"".join(jsonwriter.pieces(obj, size=1000)).decode() == expected(obj) + "\n"


class Chunked(jsonwriter.ChunkedDict):
    """The members of ``members`` in chunks of the sizes ``sizes`` (cycled; 0: an empty
    chunk), each made when its chunk is asked for."""

    def __init__(self, members: dict[str, object], sizes: list[int]) -> None:
        self.members, self.sizes, self.walks, self.made = members, sizes, 0, 0

    def chunks(self):
        self.walks += 1
        items, start = list(self.members.items()), 0
        for size in itertools.cycle(self.sizes):
            if start >= len(items):
                return
            self.made += 1
            yield dict(items[start:start + size])
            start += size

    def __getitem__(self, key: str) -> object:
        return self.members[key]

    def __iter__(self):
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)


@given(st.dictionaries(st.text(max_size=6), values, max_size=8),
       st.lists(st.integers(0, 4), min_size=1, max_size=4).filter(any))
def test_a_chunked_dict_is_written_as_its_members_dict(members: dict[str, object],
                                                       sizes: list[int]) -> None:
    """A :class:`~mpieval.jsonwriter.ChunkedDict` at any depth (a run's tags at depth 2;
    inside a value the standard library writes, or one made whole) gives the bytes of
    the dict of its members, in pieces too; its members are walked once a write."""
    def placed(chunked: object) -> list[object]:
        return [chunked, {"m": {"kind": "k", "tags": chunked}}, [chunked, 1],
                {"a": {"b": {"c": chunked}}}, {"a": {"b": {"c": {1: chunked}}}}]

    for made, plain in zip(placed(Chunked(members, sizes)), placed(members), strict=True):
        assert jsonwriter.dumps(made) == expected(plain)
        assert b"".join(jsonwriter.pieces(made, size=5)).decode() == expected(plain) + "\n"
    once = Chunked(members, sizes)
    jsonwriter.dumps({"m": {"tags": once}})
    assert once.walks == 1


def test_a_chunked_dict_is_made_as_it_is_written() -> None:
    """3,000 tag blocks in chunks of 100: the first piece of text is handed on after a few
    chunks are made, not all 30 (the members are never all held at once)."""
    tags = Chunked({f"t{i}": {"uauc": i / 7, "n": i, "ci95": {"uauc": None}}
                    for i in range(3000)}, [100])
    written = jsonwriter.pieces({"m": {"kind": "wuauc", "tags": tags}}, size=1000)
    next(written)
    assert 1 <= tags.made <= 2
    rest = b"".join(written)
    assert tags.made == 30 and rest.endswith(b"}\n")


@pytest.mark.parametrize("obj", [
    {"curve": [0.1, 1e-300, 5e+300, -0.0, 1, 2**64, True], "n": [1, 2, 3]},
    {"a": {"b": [[1.5, 2.5], [3.5]], "c": []}, "d": {}, "é": "ü\n\"", "e": [None]},
    {1: [1.0], "x": {2.5: "y", None: 3}},  # keys json converts
    {"k": {"t": {"a": {"b": [[1.5, 2.5], [3.5]], "c": [], "d": {}, "e": (1, [True]),
                       "f": {1: None}, "g": [None, "x", [0.5]]}}}},  # deep: made whole
    [float(2**53), 1e16, 123456789.125, 0.1 + 0.2],
])
def test_cases(obj: object) -> None:
    assert jsonwriter.dumps(obj) == expected(obj)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_refused(bad: float) -> None:
    deep = {"a": {"b": {"c": {"d": bad}}}}  # below WHOLE_FROM: made whole
    for obj in ({"curve": [0.5, bad, 1.0]}, {"v": bad}, [[bad]], [1, 2, bad], deep,
                [[[[1.0, bad]]]], {"a": {"b": {"c": [{"d": bad}]}}}):
        with pytest.raises(ValueError, match="Out of range float values"):
            jsonwriter.dumps(obj)


def test_other_types_raise_as_json_does() -> None:
    for obj in ({"a": [object()]}, {"a": {"b": {"c": {"d": object()}}}}):
        with pytest.raises(TypeError, match="not JSON serializable"):
            jsonwriter.dumps(obj)


def test_write_json_in_pieces(tmp_path) -> None:
    data = {"curve": [i / 7 for i in range(1000)], "name": "x"}
    path = tmp_path / "out.json"
    locations.write_json(str(path), data)
    assert path.read_text() == expected(data) + "\n"
    assert locations.json_text(data) == expected(data) + "\n"


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False)
                | st.integers(min_value=-2**63, max_value=2**63 - 1), max_size=30))
def test_numbers_text_is_repr(values: list[float | int]) -> None:
    assert _core.text.numbers(values, [",", ";"]) == "".join(
        repr(v) + (",;"[i % 2] if i + 1 < len(values) else "") for i, v in enumerate(values))


def test_numbers_declines_what_it_cannot_write() -> None:
    for values in ([1.0, math.nan], [math.inf], [True], [2**64], [1, "a"], [[1.0]]):
        assert _core.text.numbers(values, [","]) is None


texts = st.text(alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from(
    ["\x7f", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", '"', "\\", "é", "\U0001F600"]),
    max_size=8)
whole_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: (st.lists(inner, max_size=5) | st.tuples(inner, inner)
                   | st.dictionaries(texts, inner, max_size=5)
                   | st.dictionaries(st.integers(0, 9), inner, max_size=3)),
    max_leaves=40)


@example({"a\x7fb": ["\x00\x1f\b\f\n\r\t\"\\~ ", "\x7f"], "c": {"ü": 2**64}}, 3)
@given(whole_values, st.integers(0, 4))
def test_a_value_made_whole_is_json_s_text_at_its_level(obj: object, level: int) -> None:
    """The compiled writer of a tag's or a slice's block (and what it hands back to
    json.dumps: texts past ASCII, DEL and control characters, ints past 64 bits, keys
    that are not texts) gives json's bytes at any depth."""
    assert jsonwriter._text(obj, level) == expected(obj).replace("\n", "\n" + "  " * level)


def test_a_value_made_whole_nested_past_its_depth_or_in_a_cycle() -> None:
    deep: object = [1.5]
    for depth in range(150):
        deep = {"d": deep} if depth % 2 else [deep, depth]
    assert jsonwriter._text(deep, 3) == expected(deep).replace("\n", "\n" + "      ")
    cycle: list[object] = [1]
    cycle.append({"again": cycle})
    with pytest.raises(ValueError, match="Circular reference"):
        jsonwriter.dumps({"a": {"b": {"c": cycle}}})


def test_the_compiled_writer_s_fallback_must_give_text() -> None:
    assert _core.text.json([1, {"a": object()}], 0, lambda obj, level: "X") == \
        '[\n  1,\n  {\n    "a": X\n  }\n]'
    with pytest.raises(TypeError, match="must return a str"):
        _core.text.json([object()], 0, lambda obj, level: 5)
    with pytest.raises(KeyError):
        _core.text.json({"a": [object()]}, 0, lambda obj, level: {}[obj])
