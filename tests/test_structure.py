"""The package's import structure (``scripts/imports.py``): no import circle, no import
from outside a kind's folder into it, no import of a later layer of docs/design.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "imports.py"


def test_no_circle_no_import_into_a_kind_no_upward_import():
    proc = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "import circles: 0" in proc.stdout
    assert "imports from outside a kind into it: 0" in proc.stdout
    assert "imports of a later layer: 0" in proc.stdout


def test_the_script_sees_a_circle_and_an_import_into_a_kind(tmp_path, monkeypatch):
    """The checks can fail: a copy of the package with comm importing metric (a circle,
    metric imports comm), and the page importing auc's kernels."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import imports
    finally:
        sys.path.pop(0)
    package = tmp_path / "mpieval"
    for path in (SCRIPT.parent.parent / "mpieval").rglob("*.py"):
        target = package / path.relative_to(SCRIPT.parent.parent / "mpieval")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    (package / "comm.py").write_text((package / "comm.py").read_text()
                                     + "\nfrom mpieval import metric\n")
    page = package / "report" / "page.py"
    page.write_text(page.read_text() + "\nfrom mpieval.kinds.auc import kernels\n")
    monkeypatch.setattr(imports, "ROOT", tmp_path)
    found = imports.structure()
    assert any({"mpieval.comm", "mpieval.metric"} <= set(circle) for circle in found.circles)
    assert ("mpieval.report.page", "mpieval.kinds.auc.kernels") in found.into_kinds
    assert ("mpieval.comm", "mpieval.metric") in found.upward
