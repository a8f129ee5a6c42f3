"""The docs' per-kind parts, made from the registry at build time (an mkdocs hook).

- the nav's ``Kinds`` section: one page per registered kind, ``kinds/<kind>.md``;
- ``schema/results.schema.json``: :func:`mpieval.schema.results_schema`;
- each ``<!-- kinds: NAME -->`` line of a page: the part NAME of :data:`PARTS`, from the
  kinds' declarations.

A new kind needs no edit here or on a shared page: its folder, its registry line and its
page are enough.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mpieval.cli import kind_flags
from mpieval.declaration import Input, Option
from mpieval.kinds import KINDS
from mpieval.schema import text as schema_text

MARKER = re.compile(r"^<!-- kinds: ([a-z_]+) -->$", re.MULTILINE)  # a line of its own


def _link(name: str, page: str, anchor: str = "") -> str:
    prefix = "" if page.count("/") == 0 else "../" * page.count("/")
    return f"[`{name}`]({prefix}kinds/{name}.md{anchor})"


def kinds_table(page: str) -> str:
    """The kinds, what each computes and what ``update()`` reads."""
    rows = ["| kind | values | inputs |", "|---|---|---|"]
    for kind in KINDS.values():
        inputs = ", ".join(f"optional {spec.name}" if spec.optional else spec.name
                           for spec in kind.declared_inputs)
        rows.append(f"| {_link(kind.name, page)} | {kind.summary} | {inputs} |")
    return "\n".join(rows)


def kinds_list(page: str) -> str:
    """The kinds' pages, comma separated."""
    return ", ".join(_link(kind.name, page) for kind in KINDS.values())


def json_list(page: str) -> str:
    """Each kind's JSON block on its page."""
    return "\n".join(f"- {_link(kind.name, page, '#json')}: {kind.summary}"
                     for kind in KINDS.values())


def _flag_text(flag: str, uses: list[tuple[str, Input | Option]]) -> tuple[str, str]:
    kinds = ", ".join(f"`{name}`" for name in dict.fromkeys(name for name, _ in uses))
    first = uses[0][1]
    option = next((spec for _, spec in uses if isinstance(spec, Option)), None)
    if isinstance(first, Input):
        default = f"; default `{first.default_column}`" if first.default_column else ""
        return f"`{flag} COL`", f"{first.help} ({kinds}{default})"
    assert option is not None
    if option.parse is None:
        return f"`{flag}`", f"{option.help} ({kinds})"
    metavar = option.metavar or ("{" + ",".join(map(str, option.choices)) + "}"
                                 if option.choices else "VALUE")
    default = "" if option.default is None else f"; default `{option.default}`"
    return f"`{flag} {metavar}`", f"{option.help} ({kinds}{default})"


def flag_rows(page: str) -> str:
    """The kinds' flags as rows of the command line's option table (as ``--help``)."""
    return "\n".join("| {} | {} |".format(*_flag_text(flag, uses))
                     for flag, uses in kind_flags().items())


def metrics_row(page: str) -> str:
    """The ``--metrics`` row of the option table."""
    names = ", ".join(f"`{name}`" for name in KINDS)
    return (f"| `--metrics LIST` | comma list of kinds: {names} (default `auc`); an empty "
            "LIST is a usage error |")


def config_keys(page: str) -> str:
    """Each kind's config keys: its inputs (columns) and options."""
    lines = []
    for kind in KINDS.values():
        options = ", ".join(f"`{name}`" for name in kind.options)
        inputs = ", ".join(spec.name for spec in kind.declared_inputs)
        lines.append(f"- `{kind.name}`: columns {inputs}" + (f"; options {options}" if options
                                                            else ""))
    return "\n".join(lines)


def api_list(page: str) -> str:
    """Each kind's classes, on its page."""
    return "\n".join(f"- {_link(kind.name, page, '#api')}: "
                     + ", ".join(f"`{name}`" for name in kind.exports)
                     for kind in KINDS.values())


PARTS: dict[str, Callable[[str], str]] = {
    "table": kinds_table, "list": kinds_list, "json": json_list, "flags": flag_rows,
    "metrics": metrics_row, "config": config_keys, "api": api_list,
}


def expand(markdown: str, page: str) -> str:
    """``markdown`` with each marker line replaced by its part (``page``: the page's
    path in docs/, for relative links)."""
    return MARKER.sub(lambda match: PARTS[match.group(1)](page), markdown)


def on_config(config: Any) -> Any:
    """The nav's ``Kinds`` section: every registered kind's page."""
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Kinds" in entry:
            entry["Kinds"] = [{kind: f"kinds/{kind}.md"} for kind in KINDS]
    return config


def on_files(files: Any, config: Any) -> Any:
    """The assembled JSON schema, served as ``schema/results.schema.json``."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "schema/results.schema.json", content=schema_text()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return expand(markdown, page.file.src_uri)
