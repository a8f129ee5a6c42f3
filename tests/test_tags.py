"""TagCodes: a metric's tag values and their codes, kept behind its methods."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mpieval
from mpieval import tags
from mpieval.errors import InputError
from mpieval.kernels.codes import TAG_DTYPE
from mpieval.tags import NO_TAG, TagCodes, recoded
from mpieval.validation import all_log_words, check_log_word


def test_add_maps_the_other_codes_to_these_and_appends_the_new_values():
    mine, theirs = TagCodes(["x", "y"]), TagCodes(["z", "y"])
    lookup = mine.add(theirs)
    assert list(mine.values) == ["x", "y", "z"] and list(theirs.values) == ["z", "y"]
    assert lookup.dtype == TAG_DTYPE and lookup.tolist() == [2, 1]
    codes = np.array([1, NO_TAG, 0], dtype=TAG_DTYPE)
    assert recoded(codes, lookup) is codes and codes.tolist() == [1, NO_TAG, 2]


def test_the_agreed_tags_code_every_local_value_by_its_place():
    codes = TagCodes([7, 3])
    lookup = TagCodes((1, 3, 7)).of(codes.values)  # as UserRowsMetric._agree
    assert lookup.tolist() == [2, 1]
    rows = np.array([0, NO_TAG, 1, 0], dtype=TAG_DTYPE)
    assert recoded(rows, lookup, no_tag=3).tolist() == [2, 3, 1, 2]  # no value: len(tags)


def test_a_code_of_no_value_but_not_the_code_of_no_tag_is_an_error():
    with pytest.raises(IndexError):
        recoded(np.array([0, 2], dtype=TAG_DTYPE), np.array([5, 6], dtype=TAG_DTYPE))


def test_tag_codes_past_the_uint16_range_keep_their_values():
    """Codes past 65,535 (the reader's batch codes are uint16, a metric's are not): a
    million values coded, recoded to their sorted order, each row's value kept."""
    values = [f"t{k}" for k in range(1_000_000)]
    rng = np.random.default_rng(3)
    inverse = rng.integers(0, len(values), 200_000)
    tags = TagCodes()
    codes = tags.codes(values, inverse)
    assert codes.dtype == TAG_DTYPE and int(codes.max()) > 1 << 16
    assert [tags.values[c] for c in codes[:1000].tolist()] == [
        values[i] for i in inverse[:1000].tolist()]
    ordered = tuple(sorted(values))
    global_codes = recoded(codes.copy(), TagCodes(ordered).of(tags.values))
    assert [ordered[c] for c in global_codes.tolist()] == [values[i] for i in inverse.tolist()]


def test_more_tags_than_the_codes_hold_is_an_error(monkeypatch):
    """The limit (MAX_TAGS, 2**31 - 1, the compiled passes' room) counted over every batch
    a metric saw, shown with a smaller one."""
    import mpieval.tags

    monkeypatch.setattr(mpieval.tags, "MAX_TAGS", 5)
    tags = TagCodes()
    tags.codes(*tags.check(np.array(["a", "b", "c"]), 3))
    tags.codes(*tags.check(np.array(["a", "d", "e"]), 3))  # 5 values: at the limit
    with pytest.raises(InputError, match="more than 5 distinct tag values"):
        tags.check(np.array(["f", "a"]), 2)


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.lists(st.one_of(st.text(max_size=12), st.integers(-3, 3),
                                           st.sampled_from(["\ud800", "a\udc80"])),
                                 max_size=30), max_size=6),
       pickled=st.integers(0, 6))
def test_tag_codes_number_values_in_order_of_arrival(batches, pickled):
    """A run's values (text, kept in the compiled table, and ints, in a dict; mixed) coded
    in the order they first came, as a plain dict numbers them; a pickled copy mid-run
    (the table made again) goes on alike; ``of`` of a value not seen is a KeyError."""
    coding, index = TagCodes(), {}
    for number, batch in enumerate(batches):
        if number == pickled:
            coding = pickle.loads(pickle.dumps(coding))
        distinct = list(dict.fromkeys(batch))
        for value in distinct:
            index.setdefault(value, len(index))
        codes = coding.codes(distinct, np.arange(len(distinct)))
        assert codes.tolist() == [index[value] for value in distinct]
        assert coding.of(batch).tolist() == [index[value] for value in batch]
        coding.take(batch)  # all seen: nothing new
        assert list(coding.values) == list(index)
    with pytest.raises(KeyError):
        coding.of(["never seen"])


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.tuples(
    st.lists(st.one_of(st.integers(-5, 5), st.integers(-2**63, 2**63 - 1),
                       st.sampled_from([2**63, -2**63 - 1, 2**70])), max_size=40),
    st.booleans()), max_size=6), pickled=st.integers(0, 6))
def test_integer_tags_coded_by_numpy_as_a_dict_numbers_them(batches, pickled):
    """Integer values (kept sorted in arrays, not a dict: many tags) taken as lists or as
    the ``int64`` arrays a collective sends (:meth:`TagCodes.sent`), values past int64
    too (then the dict): coded in the order they first came, as a plain dict numbers
    them; ``sent`` gives the values, an array while they fit int64."""
    coding, index = TagCodes(), {}
    for number, (batch, as_array) in enumerate(batches):
        if number == pickled:
            coding = pickle.loads(pickle.dumps(coding))
        fits = all(-2**63 <= value < 2**63 for value in batch)
        coding.take(np.array(batch, dtype=np.int64) if as_array and fits else batch)
        for value in batch:
            index.setdefault(value, len(index))
        assert list(coding.values) == list(index)
        assert all(type(value) is int for value in coding.values)
        assert coding.of(batch).tolist() == [index[value] for value in batch]
        sent, want = coding.sent(len(index) // 2), list(index)[len(index) // 2:]
        assert list(sent) == want
        assert isinstance(sent, np.ndarray) == (all(-2**63 <= v < 2**63 for v in want)
                                                 and bool(want))
    for unseen in (max(index, default=0) + 1, min(index, default=0) - 1, 2**80):
        with pytest.raises(KeyError):
            coding.of([unseen])


def test_a_tag_coding_pickled_before_its_text_table_loads():
    """A pickle of a ``TagCodes`` from before the compiled table (its dict of values
    pickled with it) loads and codes alike."""
    old = TagCodes.__new__(TagCodes)
    old.__setstate__({"_values": ["a", 3, "b"], "_lookup": {"a": 0, 3: 1, "b": 2},
                      "_type": str})
    assert old.of(["b", 3, "a"]).tolist() == [2, 1, 0] and old.type is str
    assert pickle.loads(pickle.dumps(old)).of(["b"]).tolist() == [2]


def test_as_array_keeps_the_type_of_the_values():
    assert TagCodes([5, 2]).as_array().dtype == np.int64
    assert TagCodes(["a"]).as_array().tolist() == ["a"] and TagCodes().as_array().size == 0
    assert TagCodes(TagCodes([5, 2]).as_array().tolist()).type is int


def test_no_module_but_tags_touches_the_state_of_a_tag_coding():
    """``TagCodes``' underscore attributes are read and written in ``tags.py`` only."""
    tags = Path(mpieval.__file__).parent / "tags.py"
    privates = {node.attr for node in ast.walk(ast.parse(tags.read_text()))
                if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and isinstance(node.value, ast.Name) and node.value.id == "self"}
    assert {"_values", "_index", "_type"} <= privates
    for path in Path(mpieval.__file__).parent.rglob("*.py"):
        if path != tags:
            found = {node.attr for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.Attribute)} & privates
            assert not found, (path, found)


def test_with_q_values_sets_benjamini_hochberg_over_the_tag_blocks_only():
    """TagBlocks.with_q_values, on a toy result: q_(i) = min_{j >= i} m p_(j) / j over the
    tag blocks' defined p-values (not ``all``'s, not a NaN), each name on its own."""
    import dataclasses
    import math

    from mpieval.tags import TagBlocks

    @dataclasses.dataclass(frozen=True)
    class Compared:
        ps: dict[str, float]
        q: dict[str, float] = dataclasses.field(default_factory=dict)

        def p(self, name: str) -> float:
            return self.ps[name]

    @dataclasses.dataclass(frozen=True)
    class Block:
        tag: str
        compare: Compared | None

    @dataclasses.dataclass(frozen=True)
    class Result(TagBlocks[Block]):
        blocks: tuple[Block, ...]

    ps = {"a": 0.01, "b": 0.04, "c": 0.03, "d": math.nan}
    blocks = (Block("all", Compared({"x": 0.0})),
              *(Block(t, Compared({"x": p})) for t, p in ps.items()), Block("e", None))
    result = Result(blocks).with_q_values(["x"])
    got = {block.tag: block.compare.q for block in result.blocks if block.compare}
    assert got["all"] == {} and math.isnan(got["d"]["x"])
    # m = 3 defined: sorted a .01, c .03, b .04 -> min(3*.01/1, ...), min(3*.03/2, .04), .04
    assert got["a"]["x"] == pytest.approx(0.03) and got["c"]["x"] == pytest.approx(0.04)
    assert got["b"]["x"] == pytest.approx(0.04)
    assert Result(blocks[:1]).with_q_values(["x"]) == Result(blocks[:1])


@given(st.lists(st.text(alphabet=st.sampled_from("ab= \t\n\x0b\x1c\u2028\u00a0\u3000é"),
                        max_size=4), max_size=6), st.booleans())
def test_all_log_words_is_check_log_word_of_each(values: list[str], empty: bool) -> None:
    """The one look at a batch's new tags says what checking each says: whitespace (every
    character str.isspace() holds, the Unicode ones too), '=', and an empty tag where one
    is not allowed."""
    def passes(value: str) -> bool:
        try:
            check_log_word("tag", value, empty=empty)
        except InputError:
            return False
        return True

    assert all_log_words(values, empty=empty) == all(map(passes, values))
    assert not all_log_words(["a", 5], empty=empty)  # type: ignore[list-item]


@given(st.lists(st.text(max_size=3), max_size=5, unique=True), st.integers(0, 6),
       st.data())
def test_dicts_of_are_each_row_as_a_dict(keys: list[str], n: int, data) -> None:
    """Many tags' JSON objects made in one compiled pass: each row's dict, the keys in order,
    the values the columns' own objects; columns of unequal length or another count are
    errors; fresh_dicts are each a dict of their own."""
    columns = [data.draw(st.lists(st.integers() | st.floats() | st.none() | st.text(),
                                  min_size=n, max_size=n)) for _ in keys]
    made = tags.dicts_of(tuple(keys), columns)
    want = [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]
    if keys:
        assert [list(d.items()) for d in made] == [list(d.items()) for d in want]
        assert all(d[k] is c[i] for i, d in enumerate(made) for k, c in zip(keys, columns,
                                                                             strict=True))
    else:
        assert made == []
    with pytest.raises(ValueError):
        tags.dicts_of((*keys, "extra-key"), columns)
    if len(keys) > 1:
        with pytest.raises(ValueError):
            tags.dicts_of(tuple(keys), [*columns[:-1], [*columns[-1], 0]])
    fresh = tags.fresh_dicts(keys, 3)
    assert fresh == [dict.fromkeys(keys)] * 3 and len({id(d) for d in fresh}) == 3


def test_block_names_read_as_all_then_the_tags_as_text() -> None:
    """``BlockNames``: ``all`` then each tag value's text, made when read, indexed,
    sliced (any step, empty and past the end) and iterated as the tuple it stands for."""
    from mpieval.tags import ALL, BlockNames

    values = (3, -7, 10**12, 0)
    names, want = BlockNames(values), (ALL, "3", "-7", str(10**12), "0")
    assert len(names) == len(want) and tuple(names) == want and list(iter(names)) == list(want)
    for index in range(-len(want), len(want)):
        assert names[index] == want[index]
    for start in range(-6, 7):
        for stop in [*range(-6, 7), None]:
            for step in (1, 2, -1):
                assert names[start:stop:step] == list(want[start:stop:step])
    with pytest.raises(IndexError):
        names[len(want)]
    assert tuple(BlockNames(())) == (ALL,) and BlockNames(())[1:] == []


@given(st.lists(st.lists(st.integers(-2**63, 2**63 - 1), unique=True, max_size=30),
                min_size=1, max_size=4), st.integers(0, 3))
def test_integer_tags_agreed_by_numpy_are_the_sorted_set(ranks, mine) -> None:
    """The ranks' integer tags sorted and coded by numpy (``_sorted_int_tags``, many tags)
    are the sorted set of them and each of a rank's values' index there, as the Python
    path makes them; a value beyond int64 leaves it to that path."""
    from mpieval.user_rows import _sorted_int_tags

    own = ranks[mine % len(ranks)]
    tags_, codes = _sorted_int_tags(ranks, own)
    assert tags_ == tuple(sorted({value for rank in ranks for value in rank}))
    assert codes.dtype == TAG_DTYPE and codes.tolist() == TagCodes(tags_).of(own).tolist()
    assert _sorted_int_tags([*ranks, [2**64 - 1]], own) == (None, None)


@given(st.one_of(st.lists(st.text(max_size=6), unique=True, max_size=30),
                 st.lists(st.integers(-2**70, 2**70), unique=True, max_size=30)))
def test_a_rank_alones_tags_sorted_once_are_the_sorted_set(values) -> None:
    """A rank alone's tags (text, or integers past int64: distinct) sorted once by
    position (``_sorted_alone``) are the sorted set of them, and each value is coded by
    its index there, as ``TagCodes(tags).of`` codes it."""
    from mpieval.user_rows import _sorted_alone

    tags_, codes = _sorted_alone(values)
    assert tags_ == tuple(sorted(set(values)))
    assert codes.dtype == TAG_DTYPE
    assert codes.tolist() == TagCodes(tags_).of(values).tolist()


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=12), max_size=5))
def test_codes_of_batches_take_the_new_values_as_take_then_of(batches) -> None:
    """A batch's codes (``TagCodes.codes``: one look-up a value seen before, the new ones
    taken in order, a value twice in a batch one code) are ``take`` then ``of``'s, batch
    after batch, and the values by code the same."""
    fast, plain = TagCodes(), TagCodes()
    for batch in batches:
        got = fast.codes(batch, np.arange(len(batch)))
        plain.take(batch)
        assert got.tolist() == plain.of(batch).tolist() and got.dtype == TAG_DTYPE
        assert list(fast.values) == list(plain.values)


def test_looking_up_no_value_makes_no_table(monkeypatch) -> None:
    """A move with no tag new here looks up none (``of([])``): no dict or table of the
    run's values is made for it (many tags: each move would make one)."""
    def made(self):
        raise AssertionError("a table of the values made for no value")

    monkeypatch.setattr(TagCodes, "_index", property(made))
    monkeypatch.setattr(tags.TextCodes, "of_values", classmethod(made))
    for values in (["a", "b"], [1, 2], [2**70]):
        assert TagCodes(values).of([]).tolist() == []
        TagCodes(values).take([])
