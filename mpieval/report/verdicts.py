"""The verdict B - A over everything that decides between two models, each value's paired
difference with its interval and "better", "worse" or "no evidence" in words, and one
overall sentence before them.

A kind names its values in :class:`Family` groups (its report module: the kinds of a CTR
model group them into how they order rows, how they are calibrated and their loss);
which way each is better comes from its declaration
(:meth:`mpieval.declaration.Kind.direction`). A value whose paired difference the run does
not hold (an older mpieval) is left out; a family with no such value is too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mpieval.declaration import Kind
from mpieval.report.html import escape, is_number, judgement, verdict


@dataclass(frozen=True)
class Family:
    """Values that answer one question about B against A: ``name``, ``values`` as
    ``(field, name)`` pairs, and what the overall sentence says when B is ``better`` or
    ``worse`` in them; ``detail(a_block, compare)`` adds to the words of a worse B (''
    for nothing)."""

    name: str
    values: tuple[tuple[str, str], ...]
    better: str
    worse: str
    detail: Callable[[dict[str, Any], dict[str, Any]], str] | None = None


def lines(kind: Kind, label: str, a_block: dict[str, Any], compare: dict[str, Any],
          families: Sequence[Family]) -> list[str]:
    """The overall sentence, then one line per family with its values' verdicts
    (:func:`mpieval.report.html.verdict`); [] when the run holds no paired difference."""
    said: list[tuple[Family, str, list[str]]] = []
    for family in families:
        present = [(field, name) for field, name in family.values if f"{field}_diff" in compare]
        if not present:
            continue
        judged = [judgement(compare, field, kind.direction(field) or "higher",
                            a_block.get(field)) for field, _ in present]
        texts = [verdict(compare, field, name, kind.direction(field) or "higher",
                         a_block.get(field)) for field, name in present]
        said.append((family, _family_judgement(judged), texts))
    if not said:
        return []
    out = [f"<b>{label}</b>: {overall(said, a_block, compare)}"]
    out += [f"<b>{label}</b>, {family.name}: " + "; ".join(texts)
            for family, _, texts in said]
    return out


def _family_judgement(judged: Sequence[str]) -> str:
    """A family's judgement from its values': better (or worse) when some value is and none
    is the other way, mixed when both, no evidence when none is either, "" when no value
    has an interval."""
    better, worse = "better" in judged, "worse" in judged
    if better and worse:
        return "mixed"
    if better or worse:
        return "better" if better else "worse"
    return "no evidence" if "no evidence" in judged else ""


def overall(said: Sequence[tuple[Family, str, list[str]]], a_block: dict[str, Any],
            compare: dict[str, Any]) -> str:
    """One sentence: what B does better, then ("but") what it does worse, then the
    families without evidence of a difference (``B ranks better, but is worse calibrated
    (predicts 1.32x the actual CTR, A 1.01x); no evidence of a difference in loss``)."""
    good = [family.better for family, judged, _ in said if judged == "better"]
    bad = [family.worse + (family.detail(a_block, compare) if family.detail else "")
           for family, judged, _ in said if judged == "worse"]
    mixed = [family.name for family, judged, _ in said if judged == "mixed"]
    none = [family.name for family, judged, _ in said if judged == "no evidence"]
    parts = []
    if good or bad:
        text = "B " + _join(good) if good else "B " + _join(bad)
        if good and bad:
            text += ", but " + _join(bad)
        parts.append(text)
    if mixed:
        parts.append("mixed " + _join(mixed) + " (some values better, some worse)")
    if none:
        parts.append("no evidence of a difference in " + _join(none, "or"))
    if not parts:
        return "no paired interval in this run"
    sentence = "; ".join(parts)
    cls = "worse" if bad else "better" if good else "neutral"
    return f"<span class={cls}>{sentence[0].upper()}{sentence[1:]}</span>"


def prediction_ratio(a_ratio: Any, b_ratio: Any) -> str:
    """How far each model's mean pred is from the actual rate, from their ratios actual /
    predicted (``(over-predicts: 1.32x the actual rate, A 1.01x)``); '' when undefined."""
    if not (is_number(a_ratio) and is_number(b_ratio)) or a_ratio <= 0 or b_ratio <= 0:
        return ""
    way = "over" if b_ratio < 1 else "under"
    return escape(f" ({way}-predicts: {1 / b_ratio:.2f}x the actual rate, A {1 / a_ratio:.2f}x)")


def _join(items: Sequence[str], word: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {word} " + items[-1]
