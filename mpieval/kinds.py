"""The registry of metric kinds: each kind's name and the class that declares it.

What a kind reads, its options and their checks are declared once, on its class
(:class:`mpieval.metric.Metric`); a :class:`Kind` only finds the class and presents the
declaration to the config reader and the command line. Modules are imported when a kind
is first used (importing one does not load the compiled kernels), so a build without one
kind still runs the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mpieval.errors import InputError, KindUnavailable
from mpieval.metric import Input, Metric, Option


@dataclass(frozen=True)
class Kind:
    """A metric kind: where its class is, and its declaration (read from the class)."""

    name: str
    module: str
    class_name: str

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

    @property
    def declared_inputs(self) -> tuple[Input, ...]:
        return self.load().inputs

    @property
    def inputs(self) -> tuple[str, ...]:
        """``update()`` arguments, each read from one column."""
        return tuple(spec.name for spec in self.declared_inputs)

    @property
    def optional(self) -> frozenset[str]:
        """Inputs that may be left out."""
        return frozenset(spec.name for spec in self.declared_inputs if spec.optional)

    @property
    def ids(self) -> frozenset[str]:
        """Inputs that are ids (uid): integers or text, hashed."""
        return frozenset(spec.name for spec in self.declared_inputs if spec.role == "id")

    @property
    def names(self) -> frozenset[str]:
        """Inputs that name a group (tag): text shown in the results."""
        return frozenset(spec.name for spec in self.declared_inputs if spec.role == "name")

    @property
    def texts(self) -> frozenset[str]:
        """Inputs read as text (ids and names), not as numbers."""
        return self.ids | self.names

    @property
    def default_columns(self) -> dict[str, str]:
        """The column each input reads when none is named (optional inputs: none)."""
        return {spec.name: spec.default_column for spec in self.declared_inputs
                if spec.default_column is not None}

    @property
    def options(self) -> dict[str, Option]:
        """The options a config file or a flag may set, by name (not ``window``: a
        trainer's argument only)."""
        return {option.name: option for option in self.load().options if option.config}

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Every option, given or default, checked."""
        return self.load().check_options(options)

    def build(self, options: Mapping[str, Any], comm: Any) -> Metric:
        """A fresh metric on ``comm`` with checked ``options``."""
        return self.load()(**self.check_options(options), comm=comm)


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("auc", "mpieval.metrics.auc", "AucMetric"),
        Kind("wuauc", "mpieval.metrics.wuauc", "WuaucMetric"),
        Kind("pn", "mpieval.metrics.pn", "PnMetric"),
        Kind("pairwise", "mpieval.metrics.pairwise", "PairwiseMetric"),
    )
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
