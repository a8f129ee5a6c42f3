"""The docs' per-kind parts come from the registry (``docs/_ext/kind_pages.py``, a Sphinx
extension): every registered kind has its page, its nav entry, its rows in the shared
tables and its block in the served JSON schema, with no edit of a shared page; the
README's short table names only registered kinds."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
from kinds import NAMES

from mpieval.cli import kind_flags
from mpieval.kinds import KINDS
from mpieval.schema import results_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("kind_pages",
                                                  DOCS / "_ext" / "kind_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()
PAGES = sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("kind", NAMES)
def test_every_kind_has_its_page_with_json_and_api(kind: str) -> None:
    page = (DOCS / "kinds" / f"{kind}.md").read_text()
    assert page.startswith(f"# `{kind}`\n")
    assert "\n## JSON\n" in page and "\n## API\n" in page
    folder = re.escape(KINDS[kind].folder)
    for name in KINDS[kind].exports:  # each exported class's autodoc line on the page
        assert re.search(rf"^\.\. auto(class|exception|function):: {folder}\.[a-z_.]+\.{name}$",
                         page, re.MULTILINE), name


def test_every_kind_page_is_a_registered_kind() -> None:
    assert sorted(p.stem for p in (DOCS / "kinds").glob("*.md")) == NAMES


@pytest.mark.parametrize("kind", NAMES)
def test_every_kind_is_in_the_nav_and_each_generated_part(kind: str) -> None:
    assert f"\n{kind} <kinds/{kind}>\n" in HOOK.kinds_toctree("index.md")  # the nav
    assert f"\n{kind} <../kinds/{kind}>\n" in HOOK.kinds_toctree("api/x.md")
    for name, part in HOOK.PARTS.items():
        if name != "toc":
            assert f"`{kind}`" in part("index.md"), name
    assert f"]({'../' * 1}kinds/{kind}.md" in HOOK.kinds_list("api/x.md")  # relative links
    flags = HOOK.flag_rows("cli.md")
    for flag, uses in kind_flags().items():
        if any(name == kind for name, _ in uses):
            assert f"| `{flag}" in flags, flag


def test_every_marker_of_a_page_is_a_part_and_is_replaced() -> None:
    markers = [(page.name, m) for page in PAGES for m in HOOK.MARKER.findall(page.read_text())]
    assert markers, "no generated part on any page"
    assert [m for _, m in markers if m not in HOOK.PARTS] == []
    for page in PAGES:
        assert "<!-- kinds:" not in HOOK.expand(page.read_text(), str(page.relative_to(DOCS)))


def test_the_served_schema_is_the_assembly() -> None:
    import json

    assert json.loads(HOOK.SERVED["schema/results.schema.json"]()) == results_schema()
    assert results_schema()["additionalProperties"]["oneOf"] == [
        {"$ref": f"#/$defs/{kind}"} for kind in KINDS]


@pytest.mark.parametrize(("page", "url", "target", "expected"), [
    ("json", "json/", "schema/results.schema.json", "../schema/results.schema.json"),
    ("json", "json.html", "schema/results.schema.json", "schema/results.schema.json"),
    ("kinds/auc", "kinds/auc/", "../schema/results.schema.json",
     "../../schema/results.schema.json"),
    ("index", "", "schema/results.schema.json", "schema/results.schema.json"),
    ("json", "json/", "schema/other.json", None),  # not a served file: not resolved here
    ("kinds/auc", "kinds/auc/", "schema/results.schema.json", None),  # kinds/schema/...
])
def test_a_link_to_the_served_schema_is_relative_to_the_page(
        page: str, url: str, target: str, expected: str | None) -> None:
    assert HOOK.served_url(page, url, target) == expected


def test_the_readme_table_names_registered_kinds_only() -> None:
    """The README keeps a short table of kinds; each row is a registered kind, links its
    page and lists its inputs. A new kind need not be added (the docs' table has every
    kind)."""
    rows = re.findall(r"^\| \[`([a-z0-9_]+)`\]\(docs/kinds/([a-z0-9_]+)\.md\) \|.*\| (.*) \|$",
                      (ROOT / "README.md").read_text(), re.MULTILINE)
    assert rows
    for name, page, inputs in rows:
        assert name in KINDS and page == name and (DOCS / "kinds" / f"{page}.md").exists()
        for spec in KINDS[name].declared_inputs:
            if not spec.optional:
                assert spec.name.replace("_", " ") in inputs, (name, spec.name)
