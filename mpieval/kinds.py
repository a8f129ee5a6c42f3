"""The metric kinds the command line knows: what each reads and how it is built.

Each kind names its module and class, the ``update()`` arguments it takes (each read
from one column) and its constructor options. Modules are imported only when a kind is
used, so a build without one kind still runs the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mpieval.errors import InputError, KindUnavailable
from mpieval.metric import Metric

TIE_MODES = ("negative", "ignore", "half")


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(name, f"must be a positive integer, got {value!r}")
    return value


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputError(name, f"must be true or false, got {value!r}")
    return value


def _tie_mode(name: str, value: Any) -> str:
    if value not in TIE_MODES:
        raise InputError(name, f"must be one of {', '.join(TIE_MODES)}, got {value!r}")
    return value


@dataclass(frozen=True)
class Option:
    """A constructor keyword of a kind: its default and its check."""

    default: Any
    check: Callable[[str, Any], Any]


@dataclass(frozen=True)
class Kind:
    """A metric kind as the command line drives it."""

    name: str
    module: str
    class_name: str
    inputs: tuple[str, ...]  # update() arguments, each read from one column
    optional: frozenset[str] = frozenset()  # inputs that may be left out
    ids: frozenset[str] = frozenset()  # inputs that are ids (uid): hashed text
    names: frozenset[str] = frozenset()  # inputs that name a group (tag): text shown in results
    options: Mapping[str, Option] = field(default_factory=dict)

    @property
    def texts(self) -> frozenset[str]:
        """Inputs read as text (ids and names), not as numbers."""
        return self.ids | self.names

    def load(self) -> type[Metric]:
        """The metric class (imported now)."""
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            if error.name != self.module:
                raise
            raise KindUnavailable(
                "--metrics", f"kind {self.name!r} is not available: this build of mpieval "
                f"has no {self.module}"
            ) from None
        return getattr(module, self.class_name)

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Every option, given or default, checked."""
        unknown = set(options) - set(self.options)
        if unknown:
            raise InputError(sorted(unknown)[0], f"is not an option of kind {self.name}")
        return {
            name: option.check(name, options.get(name, option.default))
            for name, option in self.options.items()
        }

    def build(self, options: Mapping[str, Any], comm: Any) -> Metric:
        """A fresh metric on ``comm`` with checked ``options``."""
        return self.load()(**self.check_options(options), comm=comm)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "auc", "mpieval.metrics.auc", "AucMetric",
            inputs=("pred", "label", "weight"),
            optional=frozenset({"weight"}),
            options={
                "table_size": Option(1_000_000, _positive_int),
                "soft_labels": Option(False, _boolean),
            },
        ),
        Kind(
            "wuauc", "mpieval.metrics.wuauc", "WuaucMetric",
            inputs=("uid", "pred", "label", "tag"),
            optional=frozenset({"tag"}),
            ids=frozenset({"uid"}),
            names=frozenset({"tag"}),
        ),
        Kind(
            "pn", "mpieval.metrics.pn", "PnMetric",
            inputs=("uid", "pred", "label"),
            ids=frozenset({"uid"}),
            options={"ties": Option("negative", _tie_mode)},
        ),
        Kind(
            "pairwise", "mpieval.metrics.pairwise", "PairwiseMetric",
            inputs=("left_label", "right_label"),
        ),
    )
}

# Column of each input when nothing else is said (the command line's defaults).
DEFAULT_COLUMNS = {
    "pred": "pred",
    "label": "label",
    "uid": "uid",
    "left_label": "left_label",
    "right_label": "right_label",
}


def kind_named(name: str) -> Kind:
    """The kind called ``name``; an unknown name is an input error."""
    try:
        return KINDS[name]
    except KeyError:
        raise InputError(
            "kind", f"unknown metric kind {name!r} (known: {', '.join(KINDS)})"
        ) from None


def available(name: str) -> bool:
    """Whether the kind's module can be imported in this build."""
    try:
        KINDS[name].load()
    except KindUnavailable:
        return False
    return True
