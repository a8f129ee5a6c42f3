"""The docs site's own rules (``docs/_ext/site_rules.py``) and its nav: every page of
docs/ is in the nav (the toctrees of docs/index.md, the kinds' from the registry), the
heading anchors are spelled as the earlier site spelled them, and a docstring's reference
passes only when the name exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from mpieval.kinds import KINDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _extension(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, DOCS / "_ext" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RULES = _extension("site_rules")


def nav_pages() -> list[str]:
    """The pages of the nav: the toctree entries of index.md (``Title <page>`` or
    ``page``) and the kinds' section the marker ``<!-- kinds: toc -->`` stands for."""
    index = (DOCS / "index.md").read_text()
    pages = []
    for block in re.findall(r"^:::\{toctree\}\n(.*?)^:::$", index, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line and not line.startswith(":"):
                found = re.fullmatch(r".*<(.+)>", line)
                pages.append(found.group(1) if found else line)
    if "<!-- kinds: toc -->" in index:
        pages += [f"kinds/{kind}" for kind in KINDS]
    return pages


def test_every_page_is_in_the_nav_once() -> None:
    """A page in no toctree fails the strict build: this says which, sooner."""
    pages = sorted(str(p.relative_to(DOCS).with_suffix(""))
                   for p in DOCS.rglob("*.md") if p.name != "index.md" or p.parent != DOCS)
    assert sorted(nav_pages()) == pages


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Same bits on any number of ranks", "same-bits-on-any-number-of-ranks"),
    ("Statistics: intervals, paired tests and when they are null",
     "statistics-intervals-paired-tests-and-when-they-are-null"),
    ("The edge cases, as they come out now", "the-edge-cases-as-they-come-out-now"),
    ("compute() is a collective", "compute-is-a-collective"),
    ("run", "run"),
    ("Stores: S3, HDFS, GCS", "stores-s3-hdfs-gcs"),
    ("A -- B  c", "a-b-c"),
    ("Über déjà", "uber-deja"),
])
def test_heading_anchors_are_spelled_as_before(heading: str, anchor: str) -> None:
    assert RULES.slug(heading) == anchor


@pytest.mark.parametrize(("name", "found"), [
    ("mpieval.metric.Evaluator.compute", True),
    ("mpieval.declaration.WINDOW", True),
    ("mpieval.kernels.stats", True),
    ("numpy.float64", True),
    ("mpieval.metric.WINDOW", False),  # WINDOW lives in mpieval.declaration
    ("mpieval.metric.Evaluator.no_such_method", False),
    ("mpieval.no_such_module.thing", False),
])
def test_a_reference_passes_only_when_the_name_exists(name: str, found: bool) -> None:
    assert RULES.exists(name) is found


class _Node(dict[str, str]):
    pass


def test_a_short_name_is_looked_up_in_the_docstrings_module_then_in_mpieval() -> None:
    import mpieval.errors  # noqa: F401  (loaded, as autodoc loads every documented module)

    def resolve(target: str, module: str | None = "mpieval.metric",
                cls: str | None = None) -> Any:
        node = _Node({"refdomain": "py", "reftarget": target})
        if module:
            node["py:module"] = module
        if cls:
            node["py:class"] = cls
        return RULES._undocumented(None, None, node, "text")

    assert resolve("compute", cls="Evaluator") == "text"
    assert resolve("LayoutMismatchError") == "text"  # in mpieval.errors
    assert resolve("NoSuchName") is None
    assert resolve("mpieval.metric.NoSuchName") is None
