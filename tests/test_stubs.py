"""The compiled module's layout and stubs: each kind with compiled kernels binds its own
submodule ``mpieval._core.<kind>`` from ``mpieval/kinds/<kind>/bindings.cpp``, found by the
build (the shared ``module.cpp`` names no kind); and the committed stubs
(``mpieval/_core/*.pyi``, which mypy reads) are exactly what nanobind's stubgen makes of the
installed module (``scripts/stubs.py`` regenerates them)."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

from mpieval import _core

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mpieval"
COMPILED_KINDS = sorted(p.parent.name for p in PACKAGE.glob("kinds/*/bindings.cpp"))


def test_each_compiled_kind_binds_its_own_submodule():
    assert COMPILED_KINDS  # auc, pn, wuauc today
    for kind in COMPILED_KINDS:
        submodule = getattr(_core, kind)
        assert isinstance(submodule, types.ModuleType)
        assert submodule.__name__ == f"mpieval._core.{kind}"
        assert sys.modules[f"mpieval._core.{kind}"] is submodule


def test_the_shared_bindings_name_no_kind():
    shared = (PACKAGE / "_core" / "module.cpp").read_text()
    for kind in COMPILED_KINDS:
        assert f"bind_{kind}" not in shared
        assert f'"{kind}"' not in shared


def test_no_kind_is_named_as_a_shared_submodule():
    """The two would be one module (its import fails: ``submodule`` in bindings.hpp)."""
    shared = re.findall(r'submodule\(core, "(\w+)"\)',
                        (PACKAGE / "_core" / "module.cpp").read_text())
    assert "exact" in shared
    assert not set(shared) & set(COMPILED_KINDS)
    assert set(shared) | set(COMPILED_KINDS) == {
        name for name in dir(_core) if isinstance(getattr(_core, name), types.ModuleType)}


def test_committed_stubs_are_stubgens(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "scripts" / "stubs.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    made = {p.name: p.read_text() for p in (tmp_path / "_core").glob("*.pyi")}
    committed = {p.name: p.read_text() for p in (PACKAGE / "_core").glob("*.pyi")}
    assert {"__init__.pyi", *(f"{kind}.pyi" for kind in COMPILED_KINDS)} <= set(made)
    assert sorted(committed) == sorted(made), "run scripts/stubs.py and commit its stubs"
    for name, text in made.items():
        assert committed[name] == text, f"mpieval/_core/{name} is stale: run scripts/stubs.py"
