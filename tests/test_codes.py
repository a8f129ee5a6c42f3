"""The coding of a column of few distinct values (tags) in one compiled pass, against a
plain-Python reference: codes in order of first appearance, the first row of each value,
and the remap of uint16 codes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval.kernels import codes as kernels


def reference(values: list[bytes]) -> tuple[list[int], list[int]]:
    """Each value's index among the distinct values in order of first appearance, and the
    first row of each distinct value."""
    index: dict[bytes, int] = {}
    first_rows = []
    for row, value in enumerate(values):
        if value not in index:
            index[value] = len(index)
            first_rows.append(row)
    return [index[value] for value in values], first_rows


def buffers(values: list[bytes], offset_type: type = np.int32, lead: bytes = b""
            ) -> tuple[np.ndarray, np.ndarray]:
    """Arrow-style buffers of ``values``: offsets (starting after ``lead``, as a sliced
    array's do) and the data."""
    lengths = [len(value) for value in values]
    offsets = len(lead) + np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    data = np.frombuffer(lead + b"".join(values), dtype=np.uint8)
    return offsets.astype(offset_type), data


# byte strings that collide often (a small alphabet, short), share long prefixes (a word
# boundary every 8 bytes), are empty, or long
_prefix = b"prefix-shared-by-many-"
_value = st.one_of(
    st.binary(max_size=3),
    st.binary(min_size=0, max_size=40),
    st.sampled_from([b"", b"a", b"feed", b"search", b"12345678", b"123456789",
                     "é漢字".encode()]),
    st.builds(lambda tail: _prefix + tail, st.binary(max_size=10)),
    st.builds(lambda n: b"x" * n, st.integers(0, 300)),
)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_value, max_size=200), offset_type=st.sampled_from([np.int32, np.int64]),
       lead=st.binary(max_size=9))
def test_first_appearance_is_the_plain_python_one(values, offset_type, lead) -> None:
    offsets, data = buffers(values, offset_type, lead)
    got = kernels.first_appearance(offsets, data, kernels.CODE_SPACE)
    assert got is not None
    codes, first_rows = got
    want_codes, want_first = reference(values)
    assert codes.dtype == np.uint16 and first_rows.dtype == np.int64
    into = np.full(len(values) + 2, 7, dtype=np.uint16)  # into part of a larger array
    assert kernels.first_appearance(offsets, data, kernels.CODE_SPACE, out=into[1:-1])
    assert into[1:-1].tolist() == want_codes and into[[0, -1]].tolist() == [7, 7]
    assert codes.tolist() == want_codes
    assert first_rows.tolist() == want_first


@settings(max_examples=100, deadline=None)
@given(values=st.lists(_value, max_size=60), limit=st.integers(0, 20))
def test_more_distinct_values_than_the_limit_give_none(values, limit) -> None:
    offsets, data = buffers(values)
    got = kernels.first_appearance(offsets, data, limit)
    distinct = len(set(values))
    if distinct > limit:
        assert got is None
    else:
        assert got is not None and got[1].tolist() == reference(values)[1]


def test_the_whole_code_space_and_one_more() -> None:
    """65536 distinct values fit the uint16 codes (the table grows to hold them); one
    more does not, and is said, not wrapped round."""
    values = [f"t{k}".encode() for k in range(kernels.CODE_SPACE)]
    values += values[::-1]
    offsets, data = buffers(values)
    got = kernels.first_appearance(offsets, data, kernels.CODE_SPACE)
    assert got is not None
    codes, first_rows = got
    assert codes.tolist() == reference(values)[0]
    assert first_rows.tolist() == list(range(kernels.CODE_SPACE))
    offsets, data = buffers([*values, b"one more"])
    assert kernels.first_appearance(offsets, data, kernels.CODE_SPACE) is None
    with pytest.raises(ValueError, match="limit"):
        kernels.first_appearance(offsets, data, kernels.CODE_SPACE + 1)


def test_values_alike_but_for_their_last_bytes_are_told_apart() -> None:
    """Thousands of values of one length sharing their first 8 bytes (and more), and
    values that differ only by trailing zero bytes (one little-endian word), in a random
    order: the table's probes meet values alike in all but their last bytes."""
    rng = np.random.default_rng(5)
    values = [_prefix + b"%05d" % k for k in range(3000)]
    values += [b"v%03d" % k + b"\0" * zeros for k in range(300) for zeros in range(4)]
    values = [values[k] for k in rng.integers(0, len(values), 20000)]
    offsets, data = buffers(values, lead=b"lead")
    got = kernels.first_appearance(offsets, data, kernels.CODE_SPACE)
    assert got is not None
    want_codes, want_first = reference(values)
    assert got[0].tolist() == want_codes and got[1].tolist() == want_first


def test_no_rows() -> None:
    got = kernels.first_appearance(np.zeros(1, np.int32), np.zeros(0, np.uint8), 10)
    assert got is not None and len(got[0]) == 0 and len(got[1]) == 0


@settings(max_examples=100, deadline=None)
@given(lookup=st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=300),
       picks=st.lists(st.integers(0, 10**6), max_size=300))
def test_remap_is_numpys_lookup(lookup, picks) -> None:
    table = np.array(lookup, dtype=np.uint16)
    codes = np.array([p % len(lookup) for p in picks], dtype=np.uint16)
    want = [lookup[c] for c in codes.tolist()]
    got = kernels.remap(codes, table)
    assert got.dtype == np.uint16 and got.tolist() == want
    assert got is not codes
    in_place = kernels.remap(codes, table, out=codes)  # into the codes themselves
    assert in_place is codes and codes.tolist() == want


def test_a_code_past_the_lookup_is_an_error() -> None:
    with pytest.raises(IndexError):
        kernels.remap(np.array([0, 3], np.uint16), np.array([1, 2, 3], np.uint16))
    with pytest.raises(IndexError):  # past the lookup and not the code of no value
        kernels.remap(np.array([0, 3], np.uint32), np.array([1, 2, 3], np.uint32),
                      none=(4, 0))
    with pytest.raises(TypeError):
        kernels.remap(np.array([0, 1], np.int64), np.array([1, 2, 3], np.uint32))


@settings(max_examples=100, deadline=None)
@given(lookup=st.lists(st.integers(0, 2**32 - 2), min_size=1, max_size=300),
       picks=st.lists(st.integers(0, 10**6), max_size=300),
       wide_codes=st.booleans(), none_every=st.integers(2, 7))
def test_remap_to_uint32_writes_the_code_of_no_value_as_told(
        lookup, picks, wide_codes, none_every) -> None:
    """uint16 or uint32 codes into a uint32 lookup (a metric's tag codes), every
    ``none_every``-th code the code of no value, written as given."""
    none = 2**32 - 1 if wide_codes else 2**16 - 1
    table = np.array(lookup, dtype=np.uint32)
    codes = np.array([none if k % none_every == 0 else p % len(lookup)
                      for k, p in enumerate(picks)], dtype=np.uint32 if wide_codes else np.uint16)
    want = [7 if c == none else lookup[c] for c in codes.tolist()]
    got = kernels.remap(codes, table, none=(none, 7))
    assert got.dtype == np.uint32 and got.tolist() == want
    if wide_codes:
        in_place = kernels.remap(codes, table, out=codes, none=(none, none))
        assert in_place is codes
        assert codes.tolist() == [none if w == 7 and k % none_every == 0 else w
                                  for k, w in enumerate(want)]


@given(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=40),
       st.lists(st.integers(0, 10**6), max_size=300),
       st.sampled_from([np.uint16, np.int64, np.int32, np.uint8]))
def test_lookup_counted_is_numpys_lookup_and_bincount(lookup, picks, dtype) -> None:
    size = min(len(lookup), int(np.iinfo(dtype).max) + 1)
    table = np.array(lookup[:size], dtype=np.int32)
    codes = np.array([p % size for p in picks], dtype=dtype)
    out = np.full(len(codes), -1, dtype=np.int32)
    counts = np.arange(size, dtype=np.int64)  # added to
    kernels.lookup_counted(codes, table, out, counts)
    assert out.tolist() == [lookup[c] for c in codes.tolist()]
    assert counts.tolist() == (np.arange(size) + np.bincount(codes.astype(np.int64),
                                                             minlength=size)).tolist()


@pytest.mark.parametrize("codes", [[0, 3], [2, -1]])
def test_lookup_counted_refuses_a_code_outside_the_lookup(codes) -> None:
    with pytest.raises(IndexError, match=f"code {codes[1]} \\(row 1\\)"):
        kernels.lookup_counted(np.array(codes, np.int64), np.array([1, 2, 3], np.int32),
                               np.empty(2, np.int32), np.zeros(3, np.int64))


_text = _value.map(lambda raw: raw.decode("utf-8", "replace"))


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.lists(_text, max_size=40), max_size=6))
def test_text_codes_are_a_dicts(batches) -> None:
    """A run's text values and their codes (``TextCodes``) against a dict: each batch's
    values looked up (-1: not here), its new ones then added with the next codes."""
    table, index = kernels.TextCodes(), {}
    for batch in batches:
        assert table.codes(batch).tolist() == [index.get(value, -1) for value in batch]
        new = list(dict.fromkeys(value for value in batch if value not in index))
        table.add(new, np.arange(len(index), len(index) + len(new)))
        index.update(zip(new, range(len(index), len(index) + len(new)), strict=True))
        assert len(table) == len(index)
    values = list(index)
    made = kernels.TextCodes.of_values([*values, 7])
    assert made.codes(values).tolist() == list(range(len(values))) and len(made) == len(values)


def test_text_codes_leave_what_is_not_text_to_the_caller() -> None:
    table = kernels.TextCodes.of_values(["a", "b"])
    assert table.codes(["b", 1]) is None and table.codes([np.str_("a")]) is None
    assert table.codes(["\ud800"]) is None  # a lone surrogate: no UTF-8
    assert table.codes([]).tolist() == []
    with pytest.raises(ValueError, match="'b' is already coded"):
        table.add(["c", "b"], np.array([2, 3]))
    with pytest.raises(TypeError, match="takes str values"):
        table.add([5], np.array([9]))
    with pytest.raises(TypeError, match="no lone surrogate"):
        table.add(["\udc80"], np.array([9]))
    assert kernels.TextCodes.of_values(["x", "\udc80", 3]).codes(["x"]).tolist() == [0]
    assert not kernels.texted("\udc80") and not kernels.texted(b"x") and kernels.texted("é")
