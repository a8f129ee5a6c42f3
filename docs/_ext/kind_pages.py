"""The docs' per-kind parts, made from the registry at build time (a Sphinx extension,
loaded by docs/conf.py).

- each ``<!-- kinds: NAME -->`` line of a page: the part NAME of :data:`PARTS`, from the
  kinds' declarations, put in before the page is parsed; the part ``toc`` is the nav's
  ``Kinds`` section (a toctree of every registered kind's page, ``kinds/<kind>.md``);
- ``schema/results.schema.json``: :func:`mpieval.schema.results_schema`, written into the
  built site (:data:`SERVED`), and a page's Markdown link to it made a link to that file.

A new kind needs no edit here or on a shared page: its folder, its registry line and its
page are enough.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpieval.cli import kind_flags
from mpieval.declaration import Input, Option
from mpieval.kinds import KINDS
from mpieval.schema import text as schema_text

MARKER = re.compile(r"^<!-- kinds: ([a-z_]+) -->$", re.MULTILINE)  # a line of its own


def _up(page: str) -> str:
    """The relative path from ``page``'s folder up to docs/."""
    return "../" * page.count("/")


def _link(name: str, page: str, anchor: str = "") -> str:
    return f"[`{name}`]({_up(page)}kinds/{name}.md{anchor})"


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


def kinds_toctree(page: str) -> str:
    """The nav's ``Kinds`` section: every registered kind's page, in the registry's order."""
    entries = "\n".join(f"{name} <{_up(page)}kinds/{name}>" for name in KINDS)
    return f":::{{toctree}}\n:caption: Kinds\n:hidden:\n\n{entries}\n:::"


PARTS: dict[str, Callable[[str], str]] = {
    "table": kinds_table, "list": kinds_list, "json": json_list, "flags": flag_rows,
    "metrics": metrics_row, "config": config_keys, "api": api_list, "toc": kinds_toctree,
}


def expand(markdown: str, page: str) -> str:
    """``markdown`` with each marker line replaced by its part (``page``: the page's
    path in docs/, for relative links)."""
    return MARKER.sub(lambda match: PARTS[match.group(1)](page), markdown)


# Files of the built site made from the registry, by their path in it.
SERVED: dict[str, Callable[[], str]] = {"schema/results.schema.json": schema_text}


def _expand_page(app: Any, docname: str, source: list[str]) -> None:
    source[0] = expand(source[0], docname + ".md")


def served_url(page: str, page_url: str, target: str) -> str | None:
    """The URL, relative to ``page_url``, of the file of :data:`SERVED` that a link from
    ``page`` (a docname such as ``kinds/auc``) to ``target`` names; None for another
    target. ``page_url``: the page's URL in the site, ``json/`` (dirhtml) or ``json.html``."""
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
    if path not in SERVED:
        return None
    folder = page_url if page_url.endswith("/") else posixpath.dirname(page_url)
    return posixpath.relpath(path, folder or ".")


def _served_domain() -> Any:
    """A Sphinx domain that resolves a page's Markdown link to a file of :data:`SERVED`
    (MyST asks every domain about a link to no page)."""
    from sphinx.domains import Domain

    class ServedFiles(Domain):
        name = "served"
        label = "files the build writes"

        def resolve_any_xref(self, env: Any, fromdocname: str, builder: Any, target: str,
                             node: Any, contnode: Any) -> list[tuple[str, Any]]:
            from docutils import nodes

            url = served_url(fromdocname, builder.get_target_uri(fromdocname), target)
            if url is None:
                return []
            return [("served:file", nodes.reference("", "", contnode, internal=False,
                                                    refuri=url))]

        def merge_domaindata(self, docnames: Any, otherdata: Any) -> None:
            pass  # it keeps no data

    return ServedFiles


def _write_served(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for path, text in SERVED.items():
        out = Path(app.outdir, path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text())


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _expand_page)
    app.add_domain(_served_domain())
    app.connect("build-finished", _write_served)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
