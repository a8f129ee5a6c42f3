"""The release gate: rules checked against a run's results (its ``--json`` object).

A rules file is TOML, an array of ``[[rule]]`` tables (docs/gate.md)::

    [[rule]]                              # rule 1
    value = "ctr.compare.auc_diff"        # a dotted path into the run's JSON
    max_drop = 0.001                      # B no worse than A by more than this (95%)

    [[rule]]                              # rule 2
    value = "ctr.slices.*.copc"           # * : every key (tag, slice) or list item
    min = 0.95
    max = 1.05

Keys of a rule: ``value`` (required), ``min`` and/or ``max`` (bounds on the value, inclusive),
or ``max_drop`` (on a ``_diff``, below), ``direction`` (``"higher"`` or ``"lower"``: which
way a value is better; the kinds declare it for their values, :func:`known_direction`),
``undefined`` (``"fail"``, the default, or ``"skip"``: what a null value or a missing
interval does).

``max_drop = d`` on a difference ``D = B - A`` with its 95% interval ``[low, high]``
(``NAME_diff_ci95`` beside ``NAME_diff``) fails when B is worse than A by more than ``d``
with 95% confidence: for a value better high when ``high < -d``, better low when ``low >
d``. Across the checks of one rule with a ``*`` the test is adjusted by Benjamini-Hochberg:
each check's one-sided p-value of "B is not worse by more than ``d``" is read from its
interval as a normal one, ``p = Phi(-(excess) / se)`` with ``excess = -d - D`` (better
high; ``D - d`` better low) and ``se`` the interval's half-width on the side towards the
bound over ``z = 1.959964``; the q-values of the rule's checks (:func:`bh_q_values`) fail
where ``q < 0.025``. For one check ``q = p`` and ``p < 0.025`` is ``high < -d`` exactly:
the interval's own test.

Pure: no MPI, no files but the rules file read by :func:`load_rules`; :func:`check` takes
the run's results as the JSON object (a dict).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from mpieval import logline
from mpieval.config import GATE_KEY, RUN_KEY, read_toml
from mpieval.errors import InputError
from mpieval.kernels.stats import bh_q_values

FAILED = 3  # the exit status of a run whose gate failed (0: passed; 2: bad input)
RULE_KEYS = ("value", "min", "max", "max_drop", "direction", "undefined")
DIRECTIONS = ("higher", "lower")
UNDEFINED = ("fail", "skip")
CONFIDENCE = 0.95
ONE_SIDED_ALPHA = (1 - CONFIDENCE) / 2  # 0.025: the 95% interval's one side
Z95 = NormalDist().inv_cdf(1 - ONE_SIDED_ALPHA)  # 1.959964



def known_direction(name: str) -> str | None:
    """Which way the value ``name`` is better (``"higher"`` or ``"lower"``; ``_diff`` read
    off first: ``ndcg@5_diff`` is ``ndcg@5``'s), as the kinds declare it
    (:meth:`mpieval.declaration.Kind.direction`); None when no kind says, when kinds
    disagree, or for a value best near a target (COPC: a rule then says its
    ``direction``)."""
    from mpieval.kinds import KINDS

    said = {kind.direction(name.removesuffix("_diff")) for kind in KINDS.values()} - {None}
    return said.pop() if len(said) == 1 and said <= set(DIRECTIONS) else None


@dataclass(frozen=True)
class Rule:
    """One ``[[rule]]`` table (``number``: its place in the file, from 1)."""

    number: int
    value: str
    min: float | None = None
    max: float | None = None
    max_drop: float | None = None
    direction: str | None = None
    undefined: str = "fail"

    @property
    def segments(self) -> list[str]:
        return self.value.split(".")

    def to_dict(self) -> dict[str, Any]:
        """The rule as written (keys not given are left out)."""
        given = {"value": self.value, "min": self.min, "max": self.max,
                 "max_drop": self.max_drop, "direction": self.direction}
        rule = {key: item for key, item in given.items() if item is not None}
        if self.undefined != "fail":
            rule["undefined"] = self.undefined
        return rule

    def better(self, name: str) -> str:
        """Which way the value ``name`` (a path's last key) is better: ``direction`` when
        given, else the kinds' (:func:`known_direction`); an :class:`InputError` when
        neither says."""
        if self.direction is not None:
            return self.direction
        known = known_direction(name)
        if known is None:
            raise InputError(f"rule {self.number}", f"max_drop on {name!r}: which way is it "
                             f"better? add direction = \"higher\" or \"lower\"")
        return known


@dataclass(frozen=True)
class Check:
    """One value a rule checked: the rule, the path it matched (``*`` filled in), the value
    (None: null or missing), and the verdict (``passed`` None: skipped, ``undefined =
    "skip"``). For ``max_drop``: the difference's 95% interval, the direction, the
    one-sided p-value and the rule's BH q-value (None where undefined). ``reason``: why a
    value could not be checked."""

    rule: Rule
    path: str
    value: float | None
    passed: bool | None
    interval: tuple[float, float] | None = None
    direction: str | None = None
    p: float | None = None
    q: float | None = None
    matched: int = 1
    reason: str | None = None

    @property
    def verdict(self) -> str:
        return "SKIP" if self.passed is None else "PASS" if self.passed else "FAIL"

    def line(self) -> str:
        """``gate: PASS rule N: PATH=VALUE BOUNDS [ci95=[LOW,HIGH] direction=D q=Q]``
        (``%g``; ``nan`` for an undefined value; `` (REASON)`` at the end when there is
        one)."""
        v = logline.value
        value = v(math.nan if self.value is None else self.value)
        parts = [f"gate: {self.verdict} rule {self.rule.number}: {self.path}={value}"]
        if self.rule.max_drop is not None:
            parts.append(f"max_drop={v(self.rule.max_drop)}")
            if self.interval is not None:
                parts.append(f"ci95=[{v(self.interval[0])},{v(self.interval[1])}]")
            if self.direction is not None:
                parts.append(f"direction={self.direction}")
            if self.q is not None and self.matched > 1:
                parts.append(f"q={v(self.q)}")
        for key in ("min", "max"):
            bound = getattr(self.rule, key)
            if bound is not None:
                parts.append(f"{key}={v(bound)}")
        text = " ".join(parts)
        return text if self.reason is None else f"{text} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        check: dict[str, Any] = {"rule": self.rule.number, "path": self.path,
                                 "value": self.value, "passed": self.passed}
        if self.rule.max_drop is not None:
            check.update(ci95=None if self.interval is None else list(self.interval),
                         direction=self.direction, p=self.p, q=self.q)
        check["reason"] = self.reason
        return check


@dataclass(frozen=True)
class Verdict:
    """The checks of every rule of ``source`` (the rules file), in rule order."""

    source: str
    rules: tuple[Rule, ...]
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """No check failed (a skipped one does not fail)."""
        return not any(check.passed is False for check in self.checks)

    def lines(self) -> list[str]:
        """One line per check, then ``gate: PASS|FAIL (F of N checks failed, S skipped)``."""
        failed = sum(check.passed is False for check in self.checks)
        skipped = sum(check.passed is None for check in self.checks)
        summary = (f"gate: {'PASS' if self.passed else 'FAIL'} ({failed} of "
                   f"{len(self.checks)} checks failed"
                   + (f", {skipped} skipped" if skipped else "") + f"; rules {self.source})")
        return [check.line() for check in self.checks] + [summary]

    def to_dict(self) -> dict[str, Any]:
        """The JSON's ``gate`` block."""
        return {"rules_file": self.source, "passed": self.passed,
                "rules": [rule.to_dict() for rule in self.rules],
                "checks": [check.to_dict() for check in self.checks]}


# -- the rules file ------------------------------------------------------------------


def load_rules(path: str) -> list[Rule]:
    """The rules of a TOML file (module docstring), checked; an :class:`InputError`
    naming the file (and the rule and key) otherwise."""
    parsed = read_toml(path, "rules")
    try:
        return rules_from_toml(parsed)
    except InputError as error:
        raise InputError(f"{path}: {error.field}", error.problem) from None


def rules_from_toml(data: Mapping[str, Any]) -> list[Rule]:
    """The rules of a parsed rules file (errors name ``rule N`` and the key)."""
    extra = sorted(set(data) - {"rule"})
    if extra:
        raise InputError(f"key {extra[0]!r}", "unknown top-level key (a rules file holds "
                         "[[rule]] tables)")
    tables = data.get("rule")
    if not isinstance(tables, list) or not tables:
        raise InputError("rule", "no rules: add at least one [[rule]] table")
    return [_rule(number, table) for number, table in enumerate(tables, 1)]


def _rule(number: int, table: Any) -> Rule:
    where = f"rule {number}"
    if not isinstance(table, Mapping):
        raise InputError(where, "must be a table ([[rule]])")
    for key in table:
        if key not in RULE_KEYS:
            raise InputError(f"{where}: key {key!r}", f"unknown (a rule takes "
                             f"{', '.join(RULE_KEYS)})")
    value = table.get("value")
    if not isinstance(value, str) or not value or "" in value.split("."):
        raise InputError(f"{where}: key 'value'", "must be a dotted path into the run's "
                         f"JSON, such as \"ctr.auc\" (got {value!r})")
    bounds = {key: _number(where, key, table[key]) for key in ("min", "max", "max_drop")
              if key in table}
    if not bounds:
        raise InputError(where, "has no bound: give min, max or max_drop")
    if "max_drop" in bounds and len(bounds) > 1:
        raise InputError(where, "max_drop is alone: a bound on the value itself (min, max) "
                         "is a rule of its own")
    if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
        raise InputError(f"{where}: key 'min'", f"{bounds['min']:g} is above max "
                         f"{bounds['max']:g}")
    if bounds.get("max_drop", 0.0) < 0:
        raise InputError(f"{where}: key 'max_drop'", f"must be >= 0, got {bounds['max_drop']:g}")
    direction = _choice(where, table, "direction", DIRECTIONS, None)
    undefined = _choice(where, table, "undefined", UNDEFINED, "fail")
    rule = Rule(number, value, bounds.get("min"), bounds.get("max"), bounds.get("max_drop"),
                direction, undefined or "fail")
    if rule.max_drop is not None:
        last = rule.segments[-1]
        if last != "*":
            if not last.endswith("_diff"):
                raise InputError(f"{where}: key 'value'", f"max_drop is a bound on a "
                                 f"difference B - A: the path must end in a NAME_diff, got "
                                 f"{last!r}")
            rule.better(last)
    return rule


def _number(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise InputError(f"{where}: key {key!r}", f"must be a finite number, got {value!r}")
    return float(value)


def _choice(where: str, table: Mapping[str, Any], key: str, choices: Sequence[str],
            default: str | None) -> str | None:
    value: str | None = table.get(key, default)
    if key in table and value not in choices:
        raise InputError(f"{where}: key {key!r}", f"must be one of "
                         f"{', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def check_metric_names(rules: Sequence[Rule], names: Sequence[str], source: str) -> None:
    """Before a run: every rule's path starts with one of the run's metric ``names`` (or
    ``*``, or the ``run`` object); an :class:`InputError` naming ``source`` and the rule
    otherwise, so that a misspelt metric is said before the data is read."""
    for rule in rules:
        first = rule.segments[0]
        if first in ("*", "run") or any(rule.value == name or rule.value.startswith(name + ".")
                                        for name in names):
            continue
        raise InputError(f"{source}: rule {rule.number}", f"value {rule.value!r}: no metric "
                         f"{first!r} in this run (its metrics: {', '.join(names)})")


def load_results(path: str) -> dict[str, Any]:
    """A run's results (its ``--json`` file), as the JSON object; an :class:`InputError`
    naming the file when it cannot be read or is not an object."""
    import json

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(path, "cannot read it: not a regular file")
        with open(path, encoding="utf-8") as source:
            data = json.load(source)
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"cannot read it: {getattr(error, 'strerror', None) or error}"
                         ) from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"is not JSON (line {error.lineno} column {error.colno}: "
                         f"{error.msg}); expected the --json output of mpieval eval") from None
    if not isinstance(data, dict):
        raise InputError(path, f"is not an mpieval result: a JSON {type(data).__name__}, "
                         "not an object of metrics")
    return data


# -- checking a run ------------------------------------------------------------------


def check(rules: Sequence[Rule], results: Mapping[str, Any], source: str) -> Verdict:
    """Every rule against ``results`` (a run's JSON object). A rule whose path matches
    nothing, or reaches something other than a number or null, is an :class:`InputError`
    naming ``source`` and the rule."""
    checks: list[Check] = []
    for rule in rules:
        try:
            checks.extend(_checks(rule, results))
        except InputError as error:
            raise InputError(f"{source}: {error.field}", error.problem) from None
    return Verdict(source, tuple(rules), tuple(checks))


@dataclass(frozen=True)
class _Match:
    """Where a path led: the concrete path, the object holding the last key (None: a
    ``*`` branch lacked the rest of the path), the last key."""

    path: str
    parent: Mapping[str, Any] | None
    key: str


def _checks(rule: Rule, results: Mapping[str, Any]) -> list[Check]:
    where = f"rule {rule.number}"
    matches = list(_walk(results, rule.segments, []))
    if all(match.parent is None for match in matches):
        raise InputError(where, f"value {rule.value!r} matches nothing in the run "
                         + _nearest_miss(results, rule.segments))
    if rule.max_drop is None:
        return [_bounded(rule, match) for match in matches]
    return _dropped(rule, matches)


def _walk(node: Any, segments: list[str], done: list[str], starred: bool = False
          ) -> Iterator[_Match]:
    """Every match of ``segments`` below ``node`` (``done``: the keys taken so far). A key
    may hold dots (a tag "1.5", a metric "ctr.v2"): the longest key that the next segments
    spell is taken. Under a ``*`` a branch that lacks the rest gives a match without a
    parent (checked as undefined: a slice too small for values, a tag without a compare
    block); ``starred``: a ``*`` was taken above ``node``."""
    if isinstance(node, list):
        head = segments[0]
        indexes = range(len(node)) if head == "*" else (
            [int(head)] if head.isdigit() and int(head) < len(node) else [])
        if len(segments) == 1:
            yield from (_Match(".".join([*done, str(i)]), _ListView(node), str(i))
                        for i in indexes)
        for i in indexes if len(segments) > 1 else ():
            yield from _walk(node[i], segments[1:], [*done, str(i)], starred or head == "*")
        if not indexes and starred:
            yield _Match(".".join([*done, *segments]), None, segments[-1])
        return
    if not isinstance(node, Mapping):
        if starred:
            yield _Match(".".join([*done, *segments]), None, segments[-1])
        return
    if segments[0] == "*":  # at the top: the metrics (not the run's object, not the gate's)
        keys = [(str(key), 1) for key in node if done or key not in (RUN_KEY, GATE_KEY)]
    else:
        keys = [(".".join(segments[:n]), n) for n in range(len(segments), 0, -1)
                if ".".join(segments[:n]) in node][:1]
    if not keys and starred:
        yield _Match(".".join([*done, *segments]), None, segments[-1])
    for key, used in keys:
        rest = segments[used:]
        if not rest:
            yield _Match(".".join([*done, key]), node, key)
        else:
            yield from _walk(node[key], rest, [*done, key], starred or segments[0] == "*")


class _ListView(Mapping[str, Any]):
    """A list read as a mapping from its indexes as text (a path's last step into a list)."""

    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries

    def __getitem__(self, key: str) -> Any:
        return self.entries[int(key)]

    def __iter__(self) -> Iterator[str]:
        return iter(str(i) for i in range(len(self.entries)))

    def __len__(self) -> int:
        return len(self.entries)


def _nearest_miss(results: Mapping[str, Any], segments: list[str]) -> str:
    """``(no key 'X' in 'a.b'; it has: ...)``: where the path first left the run."""
    node: Any = results
    taken: list[str] = []
    while segments:
        if isinstance(node, Mapping):
            if segments[0] == "*" and node:
                node, taken, segments = next(iter(node.values())), [*taken, "*"], segments[1:]
                continue
            used = next((n for n in range(len(segments), 0, -1)
                         if ".".join(segments[:n]) in node), 0)
            if used:
                key = ".".join(segments[:used])
                node, taken, segments = node[key], [*taken, key], segments[used:]
                continue
            keys = ", ".join(list(map(str, node))[:12]) + (", ..." if len(node) > 12 else "")
            at = ".".join(taken) or "the top level"
            return f"(no key {segments[0]!r} in {at}; it has: {keys or 'nothing'})"
        if isinstance(node, list) and (segments[0] == "*" or segments[0].isdigit()):
            index = 0 if segments[0] == "*" else int(segments[0])
            if index < len(node):
                node, taken, segments = node[index], [*taken, segments[0]], segments[1:]
                continue
            return f"({'.'.join(taken)} has {len(node)} items)"
        return f"({'.'.join(taken) or 'the top level'} is not an object)"
    return ""


def _number_at(rule: Rule, match: _Match) -> float | None:
    """The number at a match (None: null or missing); an :class:`InputError` for anything
    else."""
    if match.parent is None:
        return None
    value = match.parent[match.key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = (f"an object (keys: {', '.join(map(str, value))[:80]})"
                 if isinstance(value, Mapping) else f"{type(value).__name__} {value!r}"[:80])
        raise InputError(f"rule {rule.number}", f"{match.path} is not a number but {shown}")
    return float(value)


def _undefined(rule: Rule, match: _Match, reason: str, **fields: Any) -> Check:
    return Check(rule, match.path, None, None if rule.undefined == "skip" else False,
                 reason=reason, **fields)


def _bounded(rule: Rule, match: _Match) -> Check:
    value = _number_at(rule, match)
    if value is None:
        return _undefined(rule, match, "missing" if match.parent is None else "undefined")
    low = -math.inf if rule.min is None else rule.min
    high = math.inf if rule.max is None else rule.max
    return Check(rule, match.path, value, low <= value <= high)


def _dropped(rule: Rule, matches: list[_Match]) -> list[Check]:
    """``max_drop`` over a rule's matches: one-sided p-values from the intervals, BH
    q-values over the defined ones (module docstring)."""
    drop = rule.max_drop
    assert drop is not None
    tests: list[tuple[_Match, float, tuple[float, float], str, float]] = []
    undefined: dict[int, Check] = {}
    for i, match in enumerate(matches):
        if not match.key.endswith("_diff"):
            raise InputError(f"rule {rule.number}", f"max_drop is a bound on a difference B - "
                             f"A: {match.path} is not a NAME_diff")
        direction = rule.better(match.key)
        value = _number_at(rule, match)
        if value is None:
            undefined[i] = _undefined(rule, match, "missing" if match.parent is None
                                      else "undefined", direction=direction)
            continue
        assert match.parent is not None
        interval_key = match.key + "_ci95"
        if interval_key not in match.parent:
            raise InputError(f"rule {rule.number}", f"{match.path} has no {interval_key} "
                             "beside it (max_drop reads the difference's interval)")
        interval = match.parent[interval_key]
        if interval is None:
            undefined[i] = Check(rule, match.path, value,
                                 None if rule.undefined == "skip" else False,
                                 direction=direction, reason="no interval")
            continue
        if not (isinstance(interval, list) and len(interval) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in interval)):
            raise InputError(f"rule {rule.number}", f"{match.path}'s {interval_key} is not "
                             f"an interval [low, high] but {interval!r}"[:200])
        low, high = (float(x) for x in interval)
        p = _one_sided_p(value, (low, high), drop, direction)
        tests.append((match, value, (low, high), direction, p))
    q_values = bh_q_values([test[4] for test in tests])
    tested = iter(zip(tests, q_values, strict=True))
    checks = []
    for i in range(len(matches)):
        if i in undefined:
            checks.append(undefined[i])
            continue
        (match, value, interval, direction, p), q = next(tested)
        checks.append(Check(rule, match.path, value, not q < ONE_SIDED_ALPHA, interval,
                            direction, p, q, matched=len(tests)))
    return checks


def _one_sided_p(diff: float, interval: tuple[float, float], drop: float,
                 direction: str) -> float:
    """The one-sided p-value of "B is not worse than A by more than ``drop``", the
    interval read as ``diff -/+ z se`` on its side towards the bound."""
    low, high = interval
    if direction == "higher":
        excess, half = -drop - diff, high - diff
    else:
        excess, half = diff - drop, diff - low
    if half <= 0:
        return 0.0 if excess > 0 else 1.0
    return NormalDist().cdf(-excess * Z95 / half)
