"""Results do not depend on the BLAS or its threads: no value is a ``np.dot`` / ``@`` sum.

OpenBLAS splits a dot product of more than 10,000 values over its threads, so such a sum's
last bits follow ``OPENBLAS_NUM_THREADS`` (and the CPU's kernel): ``ci95.auprc`` of 10M
traffic rows moved with it. Long sums are exact sums (:func:`mpieval.kernels.exact.dot`).
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpieval.kernels import exact

ROOT = Path(__file__).resolve().parent.parent

BLAS_CALLS = {"dot", "vdot", "inner", "matmul", "einsum", "tensordot", "kron", "cov",
              "corrcoef", "polyfit", "lstsq"}
"""numpy functions whose float sums (may) go to the BLAS."""


def _blas_calls(tree: ast.AST) -> list[int]:
    """Lines of ``a @ b``, ``x.dot(...)``, ``np.<BLAS_CALLS>(...)`` and ``np.linalg``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute):
            ours = isinstance(node.value, ast.Name) and node.value.id == "exact"
            if (node.attr in BLAS_CALLS and not ours) or node.attr == "linalg":
                lines.append(node.lineno)
    return sorted(lines)


def test_no_value_is_a_blas_sum():
    found = {str(path.relative_to(ROOT)): lines for path in sorted((ROOT / "mpieval").rglob("*.py"))
             if (lines := _blas_calls(ast.parse(path.read_text())))}
    assert found == {}


def test_the_check_sees_a_blas_sum():
    code = "a @ b\nnp.dot(a, b)\nx.dot(y)\nc @= d\nnp.linalg.norm(a)\nexact.dot(a, b)\n"
    assert _blas_calls(ast.parse(code)) == [1, 2, 3, 4, 5]


def test_exact_dot_is_the_correctly_rounded_sum_of_the_products():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(30_000) * 10.0 ** rng.integers(-8, 9, 30_000)
    b = rng.standard_normal(30_000)
    assert exact.dot(a, b) == math.fsum((a * b).tolist())
    assert exact.dot(a[::-1], b) == math.fsum((a[::-1] * b).tolist())  # a view, as the sweep's
    assert exact.dot(np.zeros(0), np.zeros(0)) == 0.0


def _traffic(path: Path, rows: int) -> None:
    """Rows whose filled buckets (default table) are well over 10,000, with fractional
    weights (a table of float sums: the AUC's own sweep is then a float sum too) and a
    model B."""
    rng = np.random.default_rng(7)
    pred = rng.beta(2, 9, rows)
    label = (rng.random(rows) < pred).astype(int)
    uid = rng.zipf(1.5, rows) % 5000
    tag = rng.choice(["a", "b"], rows)
    weight = rng.choice([0.5, 1.0, 1.7, 3.1], rows)
    pred_b = np.clip(pred + rng.normal(0, 0.05, rows), 0, 1)
    with path.open("w") as out:
        out.write("uid\tpred\tlabel\ttag\tweight\tpred_b\n")
        for row in zip(uid, pred, label, tag, weight, pred_b, strict=True):
            out.write("%d\t%.9f\t%d\t%s\t%g\t%.9f\n" % row)


def _eval(args: list[str], threads: int, out: Path) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    proc = subprocess.run([sys.executable, "-m", "mpieval", "eval", *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    del result["run"]
    return result


@pytest.mark.parametrize("args", [
    ["--metrics", "auc,wuauc", "--weight", "weight", "--compare", "pred_b"],
    ["--metrics", "auc,wuauc,pn,ranking", "--compare", "pred_b"],
], ids=["weighted", "every-kind"])
def test_the_json_has_the_same_bits_at_one_and_two_blas_threads(tmp_path, args):
    data = tmp_path / "rows.tsv"
    _traffic(data, 60_000)
    common = [*args, "--uid", "uid", "--tag", "tag", str(data)]
    one = _eval(common, 1, tmp_path / "one.json")
    two = _eval(common, 2, tmp_path / "two.json")
    assert json.dumps(one) == json.dumps(two)


def test_the_command_s_process_gives_the_blas_one_thread_and_a_trainer_s_keeps_its_own():
    """The ``mpieval`` command (its console script, ``python -m mpieval``) sets
    ``OPENBLAS_NUM_THREADS=1`` before numpy loads (OpenBLAS's threads spin at load, and no
    value calls the BLAS), unless it is set; any other program importing mpieval keeps
    its BLAS as it is."""
    from mpieval._command_process import one_blas_thread

    python = ["/usr/bin/python3"]
    cases = [(["/venv/bin/mpieval", "eval", "a.tsv"], python, {}, "1"),
             (["/x/mpieval/__main__.py", "eval"], [*python, "-m", "mpieval", "eval"], {}, "1"),
             (["/venv/bin/mpieval"], python, {"OPENBLAS_NUM_THREADS": "8"}, "8"),
             (["train.py"], [*python, "train.py"], {}, None),
             (["-c"], [*python, "-c", "import mpieval"], {}, None)]
    for argv, orig_argv, environ, want in cases:
        names = dict(environ)
        one_blas_thread(names, argv, orig_argv)
        assert names.get("OPENBLAS_NUM_THREADS") == want, (argv, orig_argv)


@pytest.mark.parametrize("program", ["mpieval", "trainer.py"])
def test_the_blas_threads_a_process_sees(tmp_path, program):
    """Run as a program named ``mpieval`` (as the console script is), the package's import
    leaves numpy's OpenBLAS one thread (threadpoolctl reads the loaded library); as a
    trainer's program, the variable is not set."""
    pytest.importorskip("threadpoolctl")
    script = tmp_path / program
    script.write_text("import json, os\nimport mpieval\nimport threadpoolctl\n"
                      "pools = [p for p in threadpoolctl.threadpool_info()"
                      " if p['user_api'] == 'blas']\n"
                      "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'),"
                      " [p['num_threads'] for p in pools]]))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, check=True, timeout=120).stdout
    variable, threads = json.loads(out)
    if program == "mpieval":
        assert variable == "1" and threads and all(n == 1 for n in threads), out
    else:
        assert variable is None, out

