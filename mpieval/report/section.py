"""What a kind shows on a report page, declared once: its :class:`Section`.

Each kind's report module (``mpieval/kinds/<kind>/report.py``) declares ``SECTION``, and
its declaration points at it (``Kind.report = "mpieval.kinds.<kind>.report:SECTION"``,
imported when a page is drawn: :meth:`mpieval.declaration.Kind.report_section`). The page
is given the sections and names no kind: a block whose kind has no section is shown as a
kind this version of the report does not know (its plain values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as default
from typing import TYPE_CHECKING, Any

from mpieval.declaration import Kind
from mpieval.report.html import is_number

if TYPE_CHECKING:
    from mpieval.report.page import Page
    from mpieval.report.runs import Run

# section(page, name, runs): the section's HTML and its notes (HTML, one paragraph each).
Draw = Callable[["Page", str, Sequence["Run"]], tuple[str, list[str]]]
# summary(page, name, runs): the summary's lines of the metric (HTML).
Summarise = Callable[["Page", str, Sequence["Run"]], list[str]]


@dataclass(frozen=True)
class Flag:
    """A sane range: a value of one of ``fields`` for which ``outside(value, block)`` holds
    is flagged on the page with ``text`` (``{FIELD}``: the field's name in capitals)."""

    fields: tuple[str, ...]
    outside: Callable[[float, dict[str, Any]], bool]
    text: str

    def says(self, field: str, value: float, block: dict[str, Any]) -> str:
        if field not in self.fields or not self.outside(value, block):
            return ""
        return self.text.replace("{FIELD}", field.upper())


def _whole(block: dict[str, Any]) -> dict[str, Any]:
    return block


@dataclass(frozen=True)
class SliceView:
    """How a kind's slices (``--slice``: its block's ``slices``, each the kind's block over
    a slice's rows) are shown: ``fields``, the values the page names per slice as
    ``(field, name)`` pairs, the first drawn per slice column; ``values(block)``, the
    block of a slice that holds them (the block itself, or its ``all`` tag's)."""

    fields: tuple[tuple[str, str], ...]
    values: Callable[[dict[str, Any]], dict[str, Any]] = _whole


@dataclass(frozen=True)
class Section:
    """A kind on a report page.

    ``declaration``: the kind (its name, the JSON fields its blocks must have, those that
    are counts); ``draw``: its section; ``summary``: its lines in the page's summary;
    ``curves``: the fields of its blocks that are lists of points, and what a point is
    (``"[fpr, tpr] pairs"``: checked to have that many numbers); ``flags``: its sane
    ranges, the first that a value breaks is said beside it; ``rows``: the field of a
    block that holds the rows it counted (the header says it beside a run's weights);
    ``slices``: how its slices are shown (None: the page lists them without values).
    """

    declaration: Kind
    draw: Draw
    summary: Summarise
    curves: Mapping[str, str] = default(default_factory=dict)
    flags: tuple[Flag, ...] = ()
    rows: str | None = None
    slices: SliceView | None = None

    @property
    def kind(self) -> str:
        return self.declaration.name

    @property
    def counts(self) -> frozenset[str]:
        return self.declaration.counts

    def flag(self, field: str, value: Any, block: dict[str, Any]) -> str:
        """What is wrong with a value outside its sane range ('' when in range)."""
        if not is_number(value):
            return ""
        return next((text for rule in self.flags if (text := rule.says(field, value, block))),
                    "")

    def flag_texts(self, block: dict[str, Any], fields: Iterable[str]) -> list[str]:
        """The flags of ``fields`` of ``block``, in their order."""
        return [text for field in fields if (text := self.flag(field, block.get(field), block))]

    def check(self, block: dict[str, Any], where: str) -> None:
        """Raise ValueError (a one-line message) unless ``block`` has the fields the
        kind's declaration requires (``Kind.required``, or per tag ``Kind.tag_required``),
        each a number or null. The statistics are optional; when present they are
        checked."""
        declared = self.declaration
        missing = [field for field in declared.required if field not in block]
        if declared.tag_required is not None and "tags" not in block:
            missing = ["tags", *missing]
        if missing:
            raise ValueError(f"has an older or unknown layout: {where} ({self.kind}) has "
                             f"no {missing[0]!r}")
        if declared.tag_required is None:
            self._check_values(block, declared.required, where)
        else:
            self._check_tags(block["tags"], declared.tag_required, where)
        self._check_slices(block.get("slices"), where)

    def _check_slices(self, slices: Any, where: str) -> None:
        """Each slice (``--slice``) is an object: a too small one (``too_small``) with its
        counts, another the kind's block, checked as the block is."""
        if slices is None:
            return
        if not isinstance(slices, dict):
            raise ValueError(f"{where}: slices is not an object")
        for name, block in slices.items():
            if not isinstance(block, dict):
                raise ValueError(f"{where}, slice {name!r}: not an object")
            if block.get("too_small") is not True:
                self.check({k: v for k, v in block.items() if k != "slices"},
                           f"{where}, slice {name!r}")

    def _check_tags(self, tags: Any, required: tuple[str, ...], where: str) -> None:
        """Each tag's block has the ``required`` fields, each a number or null."""
        if not isinstance(tags, dict) or not tags:
            raise ValueError(f"has an older or unknown layout: {where} has no tag blocks")
        for tag, values in tags.items():
            if not isinstance(values, dict):
                raise ValueError(f"{where}, tag {tag!r}: not an object")
            missing = [field for field in required if field not in values]
            if missing:
                raise ValueError(f"has an older or unknown layout: {where}, tag {tag!r} "
                                 f"has no {missing[0]!r}")
            self._check_values(values, required, f"{where}, tag {tag!r}")

    def _check_values(self, block: dict[str, Any], fields: Iterable[str], where: str) -> None:
        for field in fields:
            value = block[field]
            if value is not None and not is_number(value):
                raise ValueError(f"{where}: {field} is {value!r}, not a number or null")
        self._check_statistics(block, where)

    def _check_statistics(self, block: dict[str, Any], where: str, compared: bool = True
                          ) -> None:
        """The curves, intervals and, when ``compared``, the comparison of ``block``
        (a location made only for the message: many tags)."""
        for field, what in self.curves.items():
            _check_points(block.get(field), what, f"{where}: {field}")
        intervals = block.get("ci95")
        if intervals is not None:
            if not isinstance(intervals, dict):
                raise ValueError(f"{where}: ci95 is not an object")
            for field, interval in intervals.items():
                if not _is_pair(interval):
                    raise _not_a_pair(interval, f"{where}: ci95 of {field}")
        compare = block.get("compare") if compared else None
        if compare is not None:
            if not isinstance(compare, dict):
                raise ValueError(f"{where}: compare is not an object")
            for field, value in compare.items():
                if field.endswith("_ci95") and not _is_pair(value):
                    raise _not_a_pair(value, f"{where}: compare {field}")
            self._check_statistics(compare, f"{where}, compare", compared=False)


def _check_points(points: Any, what: str, where: str) -> None:
    """``points`` is null or a list of points of as many numbers as ``what`` names."""
    if points is None:
        return
    width = what.count(",") + 1
    if not isinstance(points, list) or not all(
            isinstance(p, list) and len(p) == width and all(is_number(v) for v in p)
            for p in points):
        raise ValueError(f"{where} is not a list of {what}")


def _is_pair(interval: Any) -> bool:
    return interval is None or (isinstance(interval, list) and len(interval) == 2
                                and all(v is None or is_number(v) for v in interval))


def _not_a_pair(interval: Any, where: str) -> ValueError:
    return ValueError(f"{where} is {interval!r}, not a [low, high] pair or null")
