"""Which metrics to compute, from ``--metrics`` and the column flags or a TOML file.

A config file is data, read with ``tomllib`` and never executed::

    [metrics.ctr]              # the name: log-line prefix and JSON key
    kind = "auc"
    pred = "ctr_pred"          # columns, one per input of the kind
    label = "click"
    mask = "is_eval"           # optional: a row counts when this column is non-zero
    filters = { cmatch = 222, rank = 1 }   # optional: equality on other columns
    table_size = 1000000       # options of the kind
    slice = ["country", "country*device"]  # optional: the block per value (docs/slices.md)
    min_slice_rows = 100       # with slice: fewer rows give counts and too_small
    slice_table_size = 10000   # with slice: the buckets of a slice's table (table_size)

The keys of a metric are ``kind``, ``mask``, ``filters``, the slice keys, and the inputs
and options its kind declares (:mod:`mpieval.kinds`). An input left out reads the column
of the same name (optional ones are then absent).
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mpieval.declaration import Kind
from mpieval.errors import InputError
from mpieval.kinds import KINDS, kind_named
from mpieval.slices import DEFAULT_MIN_ROWS, DEFAULT_SLICE_TABLE_SIZE, parse_slices

FilterValue = int | float | str

RUN_KEY = "run"  # the JSON's key of the run's provenance, beside the metrics: not a metric name
GATE_KEY = "gate"  # the JSON's key of the gate's verdict (mpieval.gate): not a metric name


@dataclass(frozen=True)
class MetricSpec:
    """One named metric: its kind, the columns it reads, which rows count, its options."""

    name: str  # JSON key
    kind: str
    columns: Mapping[str, str]  # update() argument -> column
    prefix: str = ""  # log-line prefix; the name when empty
    mask: str | None = None
    filters: Mapping[str, FilterValue] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    slices: tuple[tuple[str, ...], ...] = ()  # each a column, or two crossed (a*b)
    min_slice_rows: int = DEFAULT_MIN_ROWS
    slice_table_size: int | None = None  # None: DEFAULT_SLICE_TABLE_SIZE or the table's

    @property
    def log_prefix(self) -> str:
        return self.prefix or self.name

    def slice_options(self) -> dict[str, Any]:
        """The options of the slices' metrics that differ from the metric's: a kind with a
        ``table_size`` gives its slices ``slice_table_size`` buckets (default the smaller
        of :data:`~mpieval.slices.DEFAULT_SLICE_TABLE_SIZE` and its own)."""
        if "table_size" not in self.options:
            return {}
        size = self.slice_table_size
        return {"table_size": size if size is not None
                else min(DEFAULT_SLICE_TABLE_SIZE, self.options["table_size"])}

    def reads(self) -> list[tuple[str, str, str]]:
        """Every column this metric reads: ``(column, read as, what for)``.

        Numeric inputs and masks are read as ``float``; ids as ``string``; tags as ``name``
        (text of a few values, dictionary-encoded as it is parsed); a filtered column as
        its value's type (``int``, ``float`` or ``string``).
        """
        kind = kind_named(self.kind)
        reads = [(column, "name" if arg in kind.names else "string" if arg in kind.texts
                  else "float", f"{arg} of {self.name}")
                 for arg, column in self.columns.items()]
        if self.mask is not None:
            reads.append((self.mask, "float", f"mask of {self.name}"))
        for column, value in self.filters.items():
            read_as = ("string" if isinstance(value, str)
                       else "int" if isinstance(value, int) else "float")
            reads.append((column, read_as, f"filter of {self.name}"))
        for column in dict.fromkeys(c for dimension in self.slices for c in dimension):
            reads.append((column, "name", f"slice of {self.name}"))
        return reads


def _columns(kind: Kind, given: Mapping[str, str | None]) -> dict[str, str]:
    """Columns of the kind's inputs: given, else the default column, else absent if optional."""
    columns = {}
    for arg in kind.inputs:
        column = given.get(arg) or kind.default_columns.get(arg)
        if column is None:
            if arg not in kind.optional:  # pragma: no cover - every required input has a default
                raise InputError(arg, f"a column is needed for kind {kind.name}")
            continue
        columns[arg] = column
    return columns


def specs_from_flags(
    kinds: str, columns: Mapping[str, str | None], options: Mapping[str, Any], prefix: str | None
) -> list[MetricSpec]:
    """The metrics of ``--metrics auc,wuauc`` with the column flags and option flags.

    Each metric is named after its kind; ``prefix`` (``--name``) replaces the kind in
    the log lines only. Options apply to the kinds that have them; a column or option
    flag that no listed kind uses is an error, never silently ignored; so is ``--weight``
    beside a kind that takes no weight.
    """
    names = [k.strip() for k in kinds.split(",")]
    if any(not k for k in names):
        raise InputError("--metrics", f"empty kind in {kinds!r}")
    seen = set()
    specs = []
    for name in names:
        if name in seen:
            raise InputError("--metrics", f"kind {name!r} is listed twice")
        seen.add(name)
        try:
            kind = kind_named(name)
        except InputError as error:
            raise InputError("--metrics", error.problem) from None
        chosen = {k: v for k, v in options.items() if k in kind.options and v is not None}
        unread = kind.unread_option(chosen, columns)
        if unread is not None:
            option, about = unread
            raise InputError(option.flag, f"is about the {about.flag} column, which is not "
                             f"given (add {about.flag} COL)")
        try:
            checked = kind.check_options(chosen)
        except InputError as error:  # named by its flag
            flag = kind.options[error.field].flag if error.field in kind.options else error.field
            raise InputError(flag, error.problem) from None
        if columns.get("weight") is not None and "weight" not in kind.inputs:
            raise InputError("--weight", f"kind {name} does not take weights: its values "
                             "would be unweighted beside weighted ones (drop it from "
                             "--metrics, or run it without --weight)")
        specs.append(MetricSpec(name=name, kind=name, columns=_columns(kind, columns),
                                prefix=prefix or "", options=checked))
    used = {name for spec in specs
            for name in (*kind_named(spec.kind).inputs, *kind_named(spec.kind).options)}
    flags = {spec.name: spec.flag for kind in KINDS.values() for spec in kind.flagged}
    for name, value in {**columns, **options}.items():
        if value is not None and name not in used:
            raise InputError(flags.get(name, "--" + name.replace("_", "-")),
                             f"no metric of --metrics {kinds} uses it")
    return specs


_SPEC_KEYS = {"kind", "mask", "filters", "slice", "min_slice_rows", "slice_table_size"}


CONFIG_LIMIT = 1 << 20  # bytes: a config larger than this is not one


def load_config(path: str) -> list[MetricSpec]:
    """The metrics of a TOML config file, in file order (:func:`read_toml`)."""
    return specs_from_config(read_toml(path, "config", " (not a config file?)"), path)


def read_toml(path: str, what: str, too_large: str = "") -> dict[str, Any]:
    """A TOML file (a config, a gate's rules) parsed; an :class:`InputError` naming the
    file otherwise. A path that is not a regular file (``/dev/zero``, a pipe) or holds
    more than ``CONFIG_LIMIT`` bytes is refused without reading it all (``too_large``:
    what the message adds then)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(path, f"cannot read the {what}: not a regular file")
        with open(path, "rb") as handle:
            data = handle.read(CONFIG_LIMIT + 1)
    except OSError as error:
        raise InputError(path, f"cannot read the {what}: {error.strerror or error}") from None
    if len(data) > CONFIG_LIMIT:
        raise InputError(path, f"cannot read the {what}: larger than {CONFIG_LIMIT:,} "
                         f"bytes{too_large}")
    try:
        return parse_toml(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, "not valid TOML: not UTF-8 text") from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        raise InputError(path, f"not valid TOML: {error}") from None


def parse_toml(text: str) -> dict[str, Any]:
    """``text`` parsed by ``tomllib`` (imported here: a run without a config needs none);
    not valid TOML raises its ``TOMLDecodeError``, a ``ValueError``."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(text)


def specs_from_config(data: Mapping[str, Any], source: str = "config") -> list[MetricSpec]:
    """The metrics of a parsed config (see the module docstring for the layout)."""
    extra = set(data) - {"metrics"}
    if extra:
        raise InputError(source, f"unknown top-level key {sorted(extra)[0]!r} "
                         "(a config holds [metrics.NAME] tables)")
    metrics = data.get("metrics")
    if not isinstance(metrics, Mapping) or not metrics:
        raise InputError(source, "no metrics: add at least one [metrics.NAME] table")
    specs = []
    for name, table in metrics.items():
        where = f"{source}: metric {name!r}"
        if not isinstance(table, Mapping):
            raise InputError(where, "must be a table ([metrics.NAME])")
        if name == RUN_KEY:
            raise InputError(where, f"{RUN_KEY!r} is the JSON's key of the run's provenance: "
                             "name the metric otherwise")
        if name == GATE_KEY:
            raise InputError(where, f"{GATE_KEY!r} is the JSON's key of the gate's verdict: "
                             "name the metric otherwise")
        try:
            specs.append(_spec(name, table))
        except InputError as error:
            raise InputError(where, str(error)) from None
    return specs


def _spec(name: str, table: Mapping[str, Any]) -> MetricSpec:
    if "kind" not in table:
        raise InputError("kind", f"missing (one of {', '.join(KINDS)})")
    kind = kind_named(table["kind"]) if isinstance(table["kind"], str) else None
    if kind is None:
        raise InputError("kind", f"must be a string, got {table['kind']!r}")
    allowed = _SPEC_KEYS | set(kind.inputs) | set(kind.options)
    for key in table:
        if key not in allowed:
            raise InputError(key, f"is not a key of kind {kind.name} "
                             f"(allowed: {', '.join(sorted(allowed))})")
    given = {arg: table[arg] for arg in kind.inputs if arg in table}
    for arg, column in given.items():
        _check_column_name(arg, column)
    mask = table.get("mask")
    if mask is not None:
        _check_column_name("mask", mask)
    filters = table.get("filters", {})
    if not isinstance(filters, Mapping):
        raise InputError("filters", "must be a table of column = value")
    for column, value in filters.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InputError(f"filters.{column}",
                             f"must be a number or a string, got {value!r}")
    chosen = {k: v for k, v in table.items() if k in kind.options}
    unread = kind.unread_option(chosen, given)
    if unread is not None:
        option, about = unread
        raise InputError(option.name, f"is about the {about.name} column, which is not given "
                         f"(add {about.name} = \"COL\")")
    options = kind.check_options(chosen)
    return with_slices(MetricSpec(
        name=name, kind=kind.name, columns=_columns(kind, given), mask=mask,
        filters=dict(filters), options=options,
    ), table.get("slice"), table.get("min_slice_rows"), table.get("slice_table_size"),
        ("slice", "min_slice_rows", "slice_table_size"))


def with_slices(spec: MetricSpec, slices: Any, min_rows: Any, table_size: Any,
                names: tuple[str, str, str]) -> MetricSpec:
    """``spec`` with its slices (a list of ``COL`` or ``a*b``), the rows a slice needs and
    the buckets of a slice's table; ``names``: how the three are given (config keys or
    flags), for errors. ``min_rows`` and ``table_size`` without slices, or a table size
    for a kind without a table, are errors (never options without effect)."""
    if slices is None:
        given = next((name for name, value in zip(names[1:], (min_rows, table_size),
                                                  strict=True) if value is not None), None)
        if given is not None:
            raise InputError(given, f"is about slices, which are not given (add {names[0]})")
        return spec
    if isinstance(slices, str) or not isinstance(slices, Sequence) or not slices:
        raise InputError(names[0], f"must be a list of columns, got {slices!r}")
    dimensions = parse_slices(names[0], slices)
    for name, value, least in ((names[1], min_rows, 0), (names[2], table_size, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < least):
            raise InputError(name, f"must be an integer >= {least}, got {value!r}")
    if table_size is not None and "table_size" not in spec.options:
        raise InputError(names[2], f"kind {spec.kind} has no table (table_size)")
    return dataclasses.replace(
        spec, slices=dimensions,
        min_slice_rows=DEFAULT_MIN_ROWS if min_rows is None else min_rows,
        slice_table_size=table_size)


def _check_column_name(key: str, column: Any) -> None:
    if not isinstance(column, str) or not column:
        raise InputError(key, f"must be a column name (a non-empty string), got {column!r}")


def column_types(specs: Sequence[MetricSpec]) -> dict[str, str]:
    """How each column is read from text files: ``float``, ``int``, ``string`` or
    ``name``.

    A column read as ``int`` by one metric and ``float`` by another is read as
    ``float``; a tag (``name``) also read as an id or a text filter is read as
    ``string``; one wanted both as text and as a number is an error.
    """
    wanted: dict[str, set[str]] = {}
    users: dict[str, list[str]] = {}
    for spec in specs:
        for column, read_as, use in spec.reads():
            wanted.setdefault(column, set()).add(read_as)
            users.setdefault(column, []).append(use)
    types = {}
    for column, kinds in wanted.items():
        text = kinds & {"string", "name"}
        if text and kinds - text:
            raise InputError(
                f"column {column}", "is read both as text and as a number "
                f"({', '.join(users[column])}); quote a filter value to compare text"
            )
        types[column] = ("string" if "string" in kinds else "name" if text
                         else "float" if "float" in kinds else "int")
    return types


def column_uses(specs: Sequence[MetricSpec]) -> dict[str, str]:
    """Each column read -> its first use, for messages about a missing column."""
    uses: dict[str, str] = {}
    for spec in specs:
        for column, _, use in spec.reads():
            uses.setdefault(column, use)
    return uses
