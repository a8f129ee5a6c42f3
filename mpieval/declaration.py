"""How a metric kind is declared: what ``update()`` reads, its options, and how the
command line, the config reader and ``mpieval report`` present it.

Each kind declares itself once, as the :class:`Kind` named ``KIND`` in its folder's
``__init__`` (``mpieval/kinds/<kind>/``); :mod:`mpieval.kinds` lists the folders. The
command line builds its per-kind flags and help from these declarations, the config
reader its keys, ``mpieval report`` its checks of a result file and its sections: none of
them names a kind. Importing a declaration is cheap: the kind's metric class, kernels and
report section are imported when first used (:meth:`Kind.load`, :meth:`Kind.report_section`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Literal

from mpieval.errors import InputError, KindUnavailable
from mpieval.validation import window_rows

if TYPE_CHECKING:
    from mpieval.metric import Metric


@dataclass(frozen=True)
class Input:
    """An argument of a kind's ``update()``, read from one column by the command line.

    ``role``: ``number`` (a numeric array), ``id`` (ids such as a uid: integers or strings,
    hashed to keys) or ``name`` (a group name shown in the results, such as a tag).
    A required input reads the column of its own name unless told otherwise; an optional
    one is left out unless a column is named. ``weight``: a sample weight (integer weights
    equal repeated rows). ``help``: what the column holds, for the command line's help.
    """

    name: str
    role: Literal["number", "id", "name"] = "number"
    optional: bool = False
    weight: bool = False
    help: str = ""

    @property
    def default_column(self) -> str | None:
        return None if self.optional else self.name

    @property
    def flag(self) -> str:
        """The command-line flag that names its column (``--left-label``)."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Option:
    """A constructor keyword of a kind: its default, and the check that returns the
    value to use or raises :class:`InputError` naming the option (the one check of the
    value, whichever way it is given: argument, config key or flag).

    On the command line: ``flag`` (default ``--`` and the name with dashes), ``parse``
    (the flag's text to the value the check takes; None: a switch, present means True),
    ``metavar`` and ``help``. ``config=False``: an argument of the class only.
    """

    name: str
    default: Any
    check: Callable[[str, Any], Any]
    choices: tuple[Any, ...] = ()  # the values allowed, when they are few
    config: bool = True
    flag_name: str | None = None
    parse: Callable[[str], Any] | None = str
    metavar: str | None = None
    help: str = ""

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")


WINDOW = Option("window", None, window_rows, config=False)
"""The recent window of a kind that has one (``auc``, ``pairwise``): ``window=N`` keeps a
copy of the last ``N`` rows this rank was given (their validated columns; bytes per row:
the columns' itemsizes), and ``compute()`` gives the values over them beside the lifetime
ones (``result.window``; JSON ``"window"``; the log line stays the lifetime one). ``None``:
no window. A trainer's option: not a config key or command-line flag, where a rank's
last rows are an arbitrary share of the files."""


# Inputs several kinds take, declared once.
PRED = Input("pred", help="prediction column")
LABEL = Input("label", help="label column")
UID = Input("uid", role="id", help="user id column (integers or text)")
TAG = Input("tag", role="name", optional=True,
            help="tag column: a block per tag value after the block 'all'")
COMPARE = Input("compare", optional=True,
                help="a second pred column (model B) on the same rows: paired A/B values")


@dataclass(frozen=True)
class Kind:
    """A metric kind's declaration.

    ``metric`` and ``report`` are ``"module:attribute"`` references, imported when first
    used. ``required`` names the JSON fields every block of the kind has (``mpieval
    report`` refuses a file without them as of another layout); a kind whose results are
    per tag (``{"tags": {"all": {...}, ...}}``) names the fields of each tag block in
    ``tag_required`` instead. ``counts`` names fields that are counts (printed with
    thousands separators). ``demo`` is the TOML of the kind's metrics in ``mpieval demo``
    (over the demo's columns), or empty.
    """

    name: str
    summary: str
    metric: str
    declared_inputs: tuple[Input, ...]
    declared_options: tuple[Option, ...] = ()
    report: str | None = None
    required: tuple[str, ...] = ()
    tag_required: tuple[str, ...] | None = None
    counts: frozenset[str] = field(default_factory=frozenset)
    demo: str = ""
    exports: tuple[str, ...] = ()

    def load_module(self) -> Any:
        """The module of the metric class (imported now); it also holds ``exports``, the
        names ``mpieval`` exports for the kind (``from mpieval import AucMetric``)."""
        module_name = self.metric.split(":")[0]
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            raise KindUnavailable(
                "--metrics", f"kind {self.name!r} is not available: this build of mpieval "
                f"has no {module_name}"
            ) from None

    def load(self) -> type[Metric]:
        """The metric class (imported now)."""
        cls: type[Metric] = getattr(self.load_module(), self.metric.split(":")[1])
        return cls

    @property
    def folder(self) -> str:
        """The package of the kind's folder (``mpieval.kinds.auc``): its declaration,
        metric, JSON schema fragment."""
        return self.metric.split(":")[0].rpartition(".")[0]

    def schema(self) -> dict[str, Any]:
        """The kind's JSON schema fragment (``schema.json`` in its folder): ``{"$defs":
        {...}}``, the kind's block named after it (:mod:`mpieval.schema`)."""
        text = files(self.folder).joinpath("schema.json").read_text(encoding="utf-8")
        fragment: dict[str, Any] = json.loads(text)
        return fragment

    def report_section(self) -> Callable[..., tuple[str, list[str]]] | None:
        """The function that draws the kind's section of a report page, or None."""
        if self.report is None:
            return None
        module_name, attribute = self.report.split(":")
        section: Callable[..., tuple[str, list[str]]] = getattr(
            importlib.import_module(module_name), attribute)
        return section

    @property
    def flagged(self) -> tuple[Input | Option, ...]:
        """The inputs and the options that the command line and a config may set."""
        return (*self.declared_inputs, *self.options.values())

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
        return {option.name: option for option in self.declared_options if option.config}

    def check_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every option of the kind, given or default, checked (:func:`checked_options`)."""
        return checked_options(self.name, self.declared_options, given)

    def build(self, options: Mapping[str, Any], comm: Any) -> Metric:
        """A fresh metric on ``comm`` with ``options`` (checked by its constructor)."""
        return self.load()(**options, comm=comm)


def checked_options(kind: str, declared: tuple[Option, ...],
                    given: Mapping[str, Any]) -> dict[str, Any]:
    """Every declared option, given or default, through its check; a name that is not an
    option of ``kind`` is an :class:`InputError`."""
    known = {option.name: option for option in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InputError(unknown[0], f"is not an option of kind {kind}")
    return {name: option.check(name, given.get(name, option.default))
            for name, option in known.items()}
