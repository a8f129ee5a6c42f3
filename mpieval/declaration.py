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
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mpieval.errors import InputError, KindUnavailable
from mpieval.validation import column_name, one_of, window_rows

if TYPE_CHECKING:
    from mpieval.metric import Metric
    from mpieval.report.section import Section


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
    ``about``: the optional input the option is about (``weights``: how the ``weight``
    column is read); giving the option without that input's column is an error, on the
    command line and in a config, rather than an option silently without effect.
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
    about: str | None = None

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")

    def setting(self, value: Any) -> str:
        """How the command line sets the option to ``value``: the flag of a switch
        (``--soft-labels``), else the flag and the value (``--pn-ties half``)."""
        return self.flag if self.parse is None else f"{self.flag} {value}"


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

WEIGHT = Input("weight", optional=True, weight=True, help="sample weight column")
"""A sample weight a row (``auc``, ``wuauc``): integer weights equal repeated rows. A kind
that does not declare it refuses ``--weight`` (:func:`mpieval.config.specs_from_flags`)."""

WEIGHT_MEANINGS = ("frequency", "importance")
"""How the intervals read the weights: ``frequency`` (a weight of 2 is two identical
rows) or ``importance`` (a weight is an inverse sampling rate: a row stands for ``w``
rows of the population, and the weights' spread adds to the intervals'; docs/statistics.md)."""

WEIGHTS = Option("weights", "frequency", one_of(*WEIGHT_MEANINGS), choices=WEIGHT_MEANINGS,
                 help="how the intervals read the --weight column: frequency (a weight of 2 "
                      "is two rows) or importance (inverse sampling rates)", about="weight")
"""What a weight means to the intervals (the kinds that take :data:`WEIGHT`)."""

COMPARED = Option("compare", None, column_name, help=COMPARE.help)
"""The name of model B's pred (``auc``, ``wuauc``): ``update()`` then takes ``compare=``,
and the result gains the paired A/B values; on the command line ``--compare`` names B's
column and the result's name for it."""


@dataclass(frozen=True)
class Kind:
    """A metric kind's declaration.

    ``metric`` and ``report`` are ``"module:attribute"`` references, imported when first
    used. ``required`` names the JSON fields every block of the kind has (``mpieval
    report`` refuses a file without them as of another layout); a kind whose results are
    per tag (``{"tags": {"all": {...}, ...}}``) names the fields of each tag block in
    ``tag_required`` instead. ``counts`` names fields that are counts (printed with
    thousands separators). ``demo`` is the TOML of the kind's metrics in ``mpieval demo``
    (over the demo's columns), or empty. ``better``: for each value that decides between two
    models, the way it is better: ``"higher"``, ``"lower"`` or ``"one"`` (closest to 1,
    as COPC); a value ``NAME@K`` is found under ``NAME@`` (:meth:`direction`).

    ``report``: the kind's :class:`~mpieval.report.section.Section`, what ``mpieval
    report`` shows of it.
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
    better: Mapping[str, str] = field(default_factory=dict)

    def direction(self, value: str) -> str | None:
        """How ``value`` is better (``better``), or None for a value that does not decide
        between models (a count, a rate of the data)."""
        name, at, _ = value.partition("@")
        return self.better.get(name + at)

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
        import json  # here: a run without a schema check imports neither at start-up
        from importlib.resources import files

        text = files(self.folder).joinpath("schema.json").read_text(encoding="utf-8")
        fragment: dict[str, Any] = json.loads(text)
        return fragment

    def report_section(self) -> Section | None:
        """The kind's section of a report page (imported now), or None."""
        if self.report is None:
            return None
        module_name, attribute = self.report.split(":")
        section: Section = getattr(importlib.import_module(module_name), attribute)
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

    def unread_option(self, options: Mapping[str, Any],
                      columns: Mapping[str, Any]) -> tuple[Option, Input] | None:
        """An option among ``options`` (those given) that is ``about`` an input whose
        column is not among ``columns`` (those given), with that input; or None."""
        inputs = {spec.name: spec for spec in self.declared_inputs}
        for name in options:
            about = self.options[name].about if name in self.options else None
            if about is not None and columns.get(about) is None:
                return self.options[name], inputs[about]
        return None

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


def check_shared_options(kinds: Iterable[Kind]) -> None:
    """Options of several kinds that share a name or a flag are one declaration
    (:data:`WINDOW`, :data:`COMPARED`): the command line has one flag per name, parsed
    once, and sets every kind's option of that name with it. Two different declarations
    are a :class:`ValueError` naming both kinds."""
    seen: dict[str, tuple[str, Option]] = {}
    for kind in kinds:
        for option in kind.declared_options:
            for key in dict.fromkeys((option.name, option.flag)):
                first_kind, first = seen.setdefault(key, (kind.name, option))
                if first is not option:
                    what = "flag" if key == option.flag else "option"
                    raise ValueError(
                        f"kinds {first_kind} and {kind.name} declare the {what} {key} "
                        "each its own way: declare the option once and give both kinds "
                        "that one Option (as WINDOW)")


def signature_problem(signature: inspect.Signature, declared: tuple[Option, ...],
                      arguments: tuple[str, ...] = ()) -> str | None:
    """What is wrong with a metric class's constructor ``signature`` against its kind's
    ``declared`` options, or None: ``comm`` first (default None), then keyword-only
    arguments, the declared options in their order with their declared defaults, and the
    class's own ``arguments`` (not options of the kind) anywhere among them."""
    parameters = list(signature.parameters.values())
    if not parameters or parameters[0].name != "comm" or parameters[0].default is not None:
        return "must take comm=None first"
    if parameters[0].kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
        return "must take comm as its one positional argument"
    rest = parameters[1:]
    spread = [p for p in rest if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if spread:
        stars = "*" if spread[0].kind is inspect.Parameter.VAR_POSITIONAL else "**"
        return f"must name each option, not take {stars}{spread[0].name}"
    loose = [p.name for p in rest if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    if loose:
        return f"must take {loose[0]} as a keyword-only argument (after *)"
    names = tuple(p.name for p in rest if p.name not in arguments)
    wanted = tuple(option.name for option in declared)
    if names != wanted:
        return f"takes options ({', '.join(names)}), its kind declares ({', '.join(wanted)})"
    defaults = {p.name: p.default for p in rest}
    for option in declared:
        if not _same_default(defaults[option.name], option.default):
            return (f"has {option.name}={defaults[option.name]!r}, its kind declares "
                    f"{option.name}={option.default!r}")
    return None


def _same_default(given: Any, declared: Any) -> bool:
    """The same value of the same type (``0`` is not ``False``)."""
    return (given is not inspect.Parameter.empty and type(given) is type(declared)
            and given == declared)
