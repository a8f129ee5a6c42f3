#!/usr/bin/env python3
"""The package's import structure: its import circles and its imports from a shared module
into a kind.

    scripts/imports.py            # a summary; exit 1 if either list is not empty
    scripts/imports.py --edges    # also every import between the package's modules

Read from the source with ``ast`` (nothing is imported or run): every ``import`` and
``from ... import`` of an ``mpieval`` module, at any depth of the file, is an arrow; those
under ``if TYPE_CHECKING:`` are typing only, listed apart and left out of the circles.

- A circle: modules that reach each other through their imports (a strongly connected
  component of more than one module).
- Upward: a module that imports one of a later layer of ``docs/design.md`` ("each layer
  imports only the ones above it"), by :data:`LAYERS`.
- Into a kind: a module outside ``mpieval/kinds/<kind>/`` that imports one inside it (the
  registry, ``mpieval/kinds/__init__.py``, finds the kinds by name, not by import).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "mpieval"

# docs/design.md's layers, first to last, as regular expressions of module names (the first
# layer with a match is the module's). "base": what every layer may use.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", (r"mpieval\.(errors|logline|validation|jsonwriter|_command_process)",
              r"mpieval\._core(\..*)?")),
    ("kernels", (r"mpieval\.kernels(\..*)?",
                 r"mpieval\.kinds\.\w+\.(kernels|delong|importance|buckets|moments|influence)",)),
    ("state", (r"mpieval\.(state|rows|window|keys|tags|memory)",)),
    ("communication", (r"mpieval\.(comm|exchange)", r"mpieval\.transport.*")),
    ("api", (r"mpieval", r"mpieval\.(declaration|metric|user_rows|checkpoint|locations|kinds)",
             r"mpieval\.kinds\.\w+", r"mpieval\.kinds\.\w+\.(metric|result)")),
    ("command line", (r".*",)),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[-1] = parts[-1].split(".")[0]  # _core.cpython-311-x86_64-linux-gnu
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _typing_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(modules: dict[str, Path]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(arrows, typing-only arrows) between the package's modules."""
    arrows: set[tuple[str, str]] = set()
    typing: set[tuple[str, str]] = set()

    def target(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_nodes = {id(child) for node in ast.walk(tree)
                        if isinstance(node, ast.If) and _typing_only(node)
                        for child in ast.walk(node)}
        for node in ast.walk(tree):
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                found = [f"{base}.{alias.name}" for alias in node.names] or [base]
            for imported in found:
                if not imported.startswith(PACKAGE):
                    continue
                to = target(imported)
                if to and to != name:
                    (typing if id(node) in typing_nodes else arrows).add((name, to))
    return arrows, typing


def circles(nodes: list[str], arrows: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    out: dict[str, list[str]] = {node: [] for node in nodes}
    for a, b in arrows:
        out[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in out[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(found)


def kind_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "kinds" else None


def into_kinds(arrows: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Arrows from a module outside a kind's folder to a module inside it."""
    return sorted((a, b) for a, b in arrows
                  if kind_of(b) is not None and kind_of(a) != kind_of(b))


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    for number, (_, patterns) in enumerate(LAYERS):
        if any(re.fullmatch(pattern, module) for pattern in patterns):
            return number
    return len(LAYERS) - 1


def upward(arrows: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Arrows from a module to one of a later layer."""
    return sorted((a, b) for a, b in arrows if layer(b) > layer(a))


@dataclass(frozen=True)
class Structure:
    modules: list[str]
    arrows: set[tuple[str, str]]
    typing: set[tuple[str, str]]
    circles: list[list[str]]
    into_kinds: list[tuple[str, str]]
    upward: list[tuple[str, str]]


def structure() -> Structure:
    # the compiled modules count by their stubs (``_core.pyi``), which name what they give
    sources = sorted((ROOT / PACKAGE).rglob("*.py")) + sorted((ROOT / PACKAGE).rglob("*.pyi"))
    modules = {module_name(path): path for path in sources}
    arrows, typing = imports(modules)
    return Structure(sorted(modules), arrows, typing, circles(sorted(modules), arrows),
                     into_kinds(arrows), upward(arrows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="list every arrow too")
    args = parser.parse_args()
    found = structure()
    print(f"{len(found.modules)} modules, {len(found.arrows)} imports between them, "
          f"{len(found.typing)} typing-only")
    if args.edges:
        for a, b in sorted(found.arrows):
            print(f"  {a} -> {b}")
    print(f"import circles: {len(found.circles)}")
    for component in found.circles:
        print("  " + " <-> ".join(component))
    print(f"imports from outside a kind into it: {len(found.into_kinds)}")
    for a, b in found.into_kinds:
        print(f"  {a} -> {b}")
    print(f"imports of a later layer: {len(found.upward)}")
    for a, b in found.upward:
        print(f"  {a} ({LAYERS[layer(a)][0]}) -> {b} ({LAYERS[layer(b)][0]})")
    return 1 if found.circles or found.into_kinds or found.upward else 0


if __name__ == "__main__":
    sys.exit(main())
