"""The tags of a per-tag metric on a report page: sorted by rows, the few drawn in a
figure, the others in a table that opens on demand (past :data:`LISTED_TAGS`, the largest
and every one where B differs, the rest counted: they are in the JSON)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from mpieval.declaration import Kind
from mpieval.report.html import Q_LEVEL, escape, is_number, judgement, q_text

# Tags drawn in a figure at most ("all" included); the others are in a table on demand.
DRAWN_TAGS = 20
# The tags (or slices) named in the summary where B differs, at most, each direction.
NAMED_TAGS = 8

Blocks = dict[str, dict[str, Any]]  # a run's tags: tag -> its block


def ordered_tags(blocks: Sequence[Blocks], rows: str) -> list[str]:
    """The tags of ``blocks`` (each a run's ``tags``): ``all`` first, then by their rows
    (field ``rows``: the most first; ties by name)."""
    counted: dict[str, float] = {}
    for tags in blocks:
        for tag, values in tags.items():
            count = values.get(rows)
            counted[tag] = max(counted.get(tag, 0.0), float(count) if is_number(count) else 0.0)
    return sorted(counted, key=lambda tag: (tag != "all", -counted[tag], tag))


def drawn_tags(tags: Sequence[str], blocks: Sequence[Blocks], fields: Sequence[str],
               too_few: Callable[[dict[str, Any]], bool]) -> list[str]:
    """At most :data:`DRAWN_TAGS` of ``tags`` (in their order) to draw: ``all``, the
    most significant by q (up to half), then the largest. A tag with too few users for
    an interval (``too_few(its block)``) is never drawn (in the table, it says so)."""
    drawable = [tag for tag in tags if not _too_few_everywhere(tag, blocks, too_few)]
    chosen = ["all"] if "all" in drawable else []
    qs = {tag: best_q(tag, blocks, fields) for tag in drawable}
    significant = sorted((tag for tag in drawable if tag != "all" and qs[tag] < Q_LEVEL),
                         key=lambda tag: (qs[tag], tags.index(tag)))
    chosen += significant[:DRAWN_TAGS // 2]
    for tag in drawable:
        if len(chosen) >= DRAWN_TAGS:
            break
        if tag not in chosen:
            chosen.append(tag)
    return [tag for tag in tags if tag in chosen]


def _too_few_everywhere(tag: str, blocks: Sequence[Blocks],
                        too_few: Callable[[dict[str, Any]], bool]) -> bool:
    """The tag has too few users for an interval in every run that has it."""
    return all(too_few(tb.get(tag) or {}) for tb in blocks if tag in tb)


def best_q(tag: str, blocks: Sequence[Blocks], fields: Sequence[str]) -> float:
    """The smallest q-value of a difference B - A of ``fields`` of a tag in any run."""
    qs = [values["compare"].get(f"{field}_diff_q") for tb in blocks
          if (values := tb.get(tag)) and isinstance(values.get("compare"), dict)
          for field in fields]
    return min([q for q in qs if is_number(q)], default=math.inf)


def differs(compare: dict[str, Any], fields: Iterable[str]) -> bool:
    """Whether a compare block has a q-value below 0.05 for any of ``fields``."""
    return any(is_number(q := compare.get(f"{field}_diff_q")) and q < Q_LEVEL
               for field in fields)


def significant(blocks: Sequence[Blocks], fields: Collection[str]) -> set[str]:
    """The tags (or slices) of ``blocks`` (each a run's, by name) where B differs from A
    at q < 0.05 in any of ``fields`` in some run: those the summary may name."""
    found = set()
    for tags in blocks:
        for tag, values in tags.items():
            compare = values.get("compare")
            if isinstance(compare, dict) and differs(compare, fields):
                found.add(tag)
    return found


LISTED_TAGS = 1000
"""The tags (or slices) a metric's tables list at most, the drawn ones included, but for
those where B differs at q < 0.05 (always listed): the most rows first. A run of 60,000
tags would otherwise make a page of hundreds of MB that no browser opens; the others are
in the run's JSON."""


def lists_all(count: int) -> bool:
    """Whether a metric's tables list every one of ``count`` tags (:func:`tag_tables`)."""
    return count <= LISTED_TAGS


def where_listed(count: int, what: str = "tags", tables: str = "the tables") -> str:
    """A caption's words for where ``count`` tags (or slices: ``what``) are listed: every
    one, or past :data:`LISTED_TAGS` the largest and the significant ones
    (:func:`tag_tables`)."""
    if lists_all(count):
        return f"every {what.removesuffix('s')} is in {tables}"
    verb = "list" if tables.endswith("s") else "lists"
    return (f"{tables} {verb} {LISTED_TAGS:,} of the {count:,}, the largest, and every one "
            "where B differs")


def tag_tables(tags: Sequence[str], drawn: Sequence[str],
               table: Callable[[Sequence[str]], str], what: str = "tags",
               kept: Collection[str] = ()) -> str:
    """The table of the drawn tags, and when there are more, the others in a table that
    opens on demand: up to :data:`LISTED_TAGS` in all by rows (``tags``' order), and
    ``kept`` (the significant ones: :func:`significant`) wherever they come; the count of
    those left out. ``table(tags)`` makes one; ``what`` names them (tags, slices)."""
    shown = set(drawn)
    rest = [tag for tag in tags if tag not in shown]
    if not rest:
        return table(tags)
    room = max(LISTED_TAGS - len(drawn), 0)
    listed = rest[:room] + [tag for tag in rest[room:] if tag in kept]
    left = len(rest) - len(listed)
    more = (f"<p class=small>{left:,} more {what}, none with more rows than these or a "
            f"difference at q &lt; {Q_LEVEL}, are not listed: they are in the JSON.</p>"
            ) if left else ""
    return (table(drawn) + f"<details><summary>The other {len(rest):,} {what}, by rows"
            f"</summary>{table(listed)}{more}</details>")


def differing(label: str, blocks: dict[str, dict[str, Any]], fields: dict[str, str],
              kind: Kind, skip: Sequence[str] = ("all",)) -> list[str]:
    """The summary's lines of the blocks (tags or slices by name; those in ``skip``
    aside) where B is significantly worse, then better, at q < 0.05 in any of ``fields``
    (field -> its name): each block once per direction with its values' effects and q,
    the largest effect first, then by name; at most :data:`NAMED_TAGS` a line."""
    found: dict[str, list[tuple[float, str, str]]] = {"worse": [], "better": []}
    for name, values in blocks.items():
        compare = values.get("compare")
        if name in skip or not isinstance(compare, dict):
            continue
        for said, items in found.items():
            effects = []
            for field, what in fields.items():
                q = compare.get(f"{field}_diff_q")
                if is_number(q) and q < Q_LEVEL and judgement(
                        compare, field, kind.direction(field) or "higher",
                        values.get(field)) == said:
                    effects.append((abs(compare[f"{field}_diff"]),
                                    f"{what} {compare[f'{field}_diff']:+.4f}, {q_text(q)}"))
            if effects:
                items.append((-max(size for size, _ in effects), name,
                              f"<b>{escape(name)}</b> ("
                              + "; ".join(text for _, text in effects) + ")"))
    lines = []
    for said, items in found.items():
        if items:
            items.sort(key=lambda item: (item[0], item[1]))
            shown = [text for _, _, text in items[:NAMED_TAGS]]
            more = f" and {len(items) - NAMED_TAGS} more" if len(items) > NAMED_TAGS else ""
            lines.append(f"<b>{label}</b>: <span class={said}>B {said}</span> in "
                         + ", ".join(shown) + more)
    return lines
