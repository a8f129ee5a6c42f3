"""The text of a JSON output, the same bytes as ``json.dumps(obj, indent=2,
allow_nan=False)``, made faster.

``json.dumps`` with an indent runs the standard library's pure-Python encoder, one
generator step per value: the JSON of a sliced run (each slice's curves, a few
thousand numbers each) spends most of its time there. This writer walks dicts and
lists itself and formats a list of plain numbers (``float`` and ``int``, no ``bool``),
or a list of such lists of one length (a curve), in one call of ``_core.text.numbers``
(C++: the text of their ``repr``, which ``json`` writes for them); anything else
(strings, other types, a non-finite float, a non-string key) goes to ``json.dumps``
(its text re-indented for its depth: a JSON text holds no raw newline but those of
its indent), so errors and the text of odd values are the standard library's. The
top levels are handed on in pieces as they are made; from :data:`WHOLE_FROM` down
(a tag's or a slice's block) each value's text is made whole in one compiled call
(``_core.text.json``: plain dicts, lists, ASCII texts and numbers; the rest as above).
A :class:`ChunkedDict` (a many-tag result's ``tags`` as the output writes them:
:func:`mpieval.tags.dicts_as_written`) is written a chunk of members at a time, as it
makes them, never every member at once.
"""
from __future__ import annotations

import itertools
import json
import math
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

from mpieval import _core

INDENT = "  "
PIECE = 1 << 20  # bytes of text handed to the file at a time


class ChunkedDict(Mapping[str, Any]):
    """A read-only mapping of string keys whose members are made when read and written
    by :func:`pieces` and :func:`dumps` a chunk at a time (:meth:`chunks`), in the order
    of its keys, as a dict of the same members would be: the output of many members
    without holding them all."""

    @abstractmethod
    def chunks(self) -> Iterator[dict[str, Any]]:
        """The members, in order, as plain dicts of a few thousand each."""


def dumps(obj: Any) -> str:
    """``json.dumps(obj, indent=2, allow_nan=False)``, byte for byte."""
    return "".join(_encode(obj, 0))


def pieces(obj: Any, size: int = PIECE) -> Iterator[bytes]:
    """The text of ``dumps(obj) + "\\n"`` as ASCII bytes, in pieces of about ``size``
    bytes (a large output written as it is made, never held whole twice)."""
    held: list[str] = []
    count = 0
    for part in _encode(obj, 0):
        held.append(part)
        count += len(part)
        if count >= size:
            yield "".join(held).encode("ascii")
            held.clear()
            count = 0
    held.append("\n")
    yield "".join(held).encode("ascii")


def _members(opening: str, labelled: Iterable[tuple[str, Any]], level: int,
             closing: str) -> Iterator[str]:
    """A dict's or a list's text from ``opening`` to ``closing``: each value on a line of
    its own at ``level + 1``, after its label (a dict's key and ``": "``, or nothing)."""
    inner = "\n" + INDENT * (level + 1)
    whole = level + 1 >= WHOLE_FROM  # a value made whole: its text at once, not a generator
    first = True
    for label, value in labelled:
        head = (opening if first else ",") + inner + label
        first = False
        text = _scalar(value)
        if text is None and whole and type(value) in (dict, list, tuple):
            text = _text(value, level + 1)
        if text is not None:
            yield head + text
        else:
            yield head
            yield from _encode(value, level + 1)
    yield "\n" + INDENT * level + closing


def _rows(items: list[Any] | tuple[Any, ...]) -> int:
    """The length of every item when each is a non-empty list (or tuple) of one length,
    else 0."""
    if not set(map(type, items)) <= {list, tuple}:
        return 0
    lengths = set(map(len, items))
    return 0 if len(lengths) != 1 or 0 in lengths else lengths.pop()


def _fallback(obj: Any, level: int) -> str:
    text = json.dumps(obj, indent=2, allow_nan=False, default=_plain)
    return text.replace("\n", "\n" + INDENT * level) if level else text


def _plain(obj: Any) -> dict[str, Any]:
    """``json.dumps``' ``default``: a :class:`ChunkedDict` as a dict of its members (one
    inside a value that goes to the standard library); any other type refused as it
    refuses it."""
    if isinstance(obj, ChunkedDict):
        return dict(itertools.chain.from_iterable(chunk.items() for chunk in obj.chunks()))
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _scalar(obj: Any) -> str | None:
    kind = type(obj)
    if kind is str:
        return encode_basestring_ascii(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if kind is int:
        return repr(obj)
    if kind is float and math.isfinite(obj):
        return repr(obj)
    return None


WHOLE_FROM = 3
"""The depth from which a value's text is made whole (:func:`_text`), not handed on in
pieces: a tag's or a slice's block (``{kind: {"tags": {tag: block}}}``), small each, many
of them in a run of many tags (a Python call a value cost more than the text)."""


def _encode(obj: Any, level: int) -> Iterator[str]:
    kind = type(obj)
    if isinstance(obj, ChunkedDict):
        yield from _chunked_members(obj.chunks(), level)
        return
    if level >= WHOLE_FROM and (kind is dict or kind is list or kind is tuple):
        yield _text(obj, level)
        return
    if kind is dict:
        if not obj:
            yield "{}"
            return
        if not {str}.issuperset(map(type, obj)):  # (many tags: no Python step a key)
            yield _fallback(obj, level)
            return
        if level + 1 >= WHOLE_FROM:  # its members made whole: many in one call
            yield from _whole_members(obj, level)
            return
        labelled = ((encode_basestring_ascii(key) + ": ", value) for key, value in obj.items())
        yield from _members("{", labelled, level, "}")
        return
    if kind is list or kind is tuple:
        text = _numbers(obj, level)
        if text is not None:
            yield text
            return
        yield from _members("[", (("", value) for value in obj), level, "]")
        return
    text = _scalar(obj)
    yield text if text is not None else _fallback(obj, level)


MEMBERS_AT_ONCE = 1024
"""A dict's members made whole in one compiled call (:func:`_whole_members`)."""


def _whole_members(obj: dict[str, Any], level: int) -> Iterator[str]:
    """The text of a non-empty dict of string keys whose members are made whole (a run's
    ``tags``: many tags' blocks), :data:`MEMBERS_AT_ONCE` of them at a time in one
    compiled call: the text of a dict of those members, its braces cut off (no Python
    step a member; the whole text is never held at once)."""
    items = list(obj.items())
    yield from _chunked_members((dict(items[start : start + MEMBERS_AT_ONCE])
                                 for start in range(0, len(items), MEMBERS_AT_ONCE)), level)


def _chunked_members(chunks: Iterable[dict[str, Any]], level: int) -> Iterator[str]:
    """The text of a dict at ``level`` whose members come in ``chunks`` (dicts of string
    keys, in order), each chunk's members made whole in one compiled call: the text of
    that chunk as a dict, its braces cut off."""
    closing = len("\n" + INDENT * level + "}")
    first = True
    for chunk in chunks:
        if not chunk:
            continue
        text = _text(chunk, level)
        yield ("{" if first else ",") + text[1:-closing]
        first = False
    yield "{}" if first else "\n" + INDENT * level + "}"


def _numbers(obj: list[Any] | tuple[Any, ...], level: int) -> str | None:
    """The text of an empty list, of a list of plain numbers or of a curve (rows of plain
    numbers of one length), each in one compiled call; None for any other list."""
    if not obj:
        return "[]"
    inner = "\n" + INDENT * (level + 1)
    outer = "\n" + INDENT * level + "]"
    listed = _core.text.numbers(obj, ["," + inner])  # None for a tuple
    if isinstance(listed, str):
        return "[" + inner + listed + outer
    rows = _rows(obj)
    if rows:  # a curve: rows of ``rows`` numbers each, formatted as one list
        deeper = "\n" + INDENT * (level + 2)
        separators = ["," + deeper] * (rows - 1) + [inner + "]," + inner + "[" + deeper]
        listed = _core.text.numbers(list(itertools.chain.from_iterable(obj)), separators)
        if isinstance(listed, str):
            return "[" + inner + "[" + deeper + listed + inner + "]" + outer
    return None


def _text(obj: Any, level: int) -> str:
    """``"".join(_encode(obj, level))`` made whole in one compiled call
    (``_core.text.json``), which hands what it does not write itself (a non-finite
    float, a non-ASCII text, a dict with another key, another type) to :func:`_fallback`."""
    return _core.text.json(obj, level, _fallback)
