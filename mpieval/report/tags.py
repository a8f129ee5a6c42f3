"""The tags of a per-tag metric on a report page: sorted by rows, the few drawn in a
figure, every one in a table (those not drawn in one that opens on demand)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from mpieval.report.html import Q_LEVEL, is_number

# Tags drawn in a figure at most ("all" included); the others are in a table on demand.
DRAWN_TAGS = 20

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


def tag_tables(tags: Sequence[str], drawn: Sequence[str],
               table: Callable[[Sequence[str]], str]) -> str:
    """The table of the drawn tags, and when there are more, the others in a table that
    opens on demand. ``table(tags)`` makes one."""
    rest = [tag for tag in tags if tag not in drawn]
    if not rest:
        return table(tags)
    return (table(drawn) + f"<details><summary>The other {len(rest):,} tags, by rows"
            f"</summary>{table(rest)}</details>")
