"""numpy's BLAS on one thread for a run of the command (mpieval.blas): the pool is set,
and the command's numbers do not depend on how many threads BLAS was started with."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from mpieval import blas

pytestmark = pytest.mark.skipif(not blas.threads(), reason="numpy's BLAS is not OpenBLAS")

# In a fresh process: OpenBLAS given two threads, then the command run (or not) on a
# file; prints the thread count of each OpenBLAS loaded.
_PROBE = """
import sys
import numpy
from mpieval import blas, cli
from mpieval.blas import _SETTERS, _first, _openblas_libraries
for library in _openblas_libraries():
    _first(library, _SETTERS)(2)
if sys.argv[1] == "command":
    cli.main(["eval", "--metrics", "auc", sys.argv[2]])
print(blas.threads(), file=sys.stderr)
"""


def _environment(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return {**env, **extra}


def _file(tmp_path, n: int = 300_000, seed: int = 3) -> str:
    """Preds spread over the default table (a million buckets), so that the intervals'
    sums over the table are long enough for OpenBLAS to split them over threads."""
    rng = np.random.default_rng(seed)
    pred = np.round(rng.beta(2, 6, n), 6)
    path = str(tmp_path / "rows.tsv")
    pacsv.write_csv(pa.table({"pred": pred, "label": (rng.random(n) < pred).astype(np.int64)}),
                    path, pacsv.WriteOptions(delimiter="\t", quoting_style="none"))
    return path


def test_one_thread_sets_every_openblas_loaded():
    before = blas.threads()
    try:
        assert blas.one_thread()
        assert blas.threads() == [1] * len(before)
    finally:
        for library, count in zip(blas._openblas_libraries(), before, strict=True):
            blas._first(library, blas._SETTERS)(count)


def test_the_command_runs_blas_on_one_thread(tmp_path):
    path = _file(tmp_path, n=100)
    counts = {how: subprocess.run([sys.executable, "-c", _PROBE, how, path], check=True,
                                  capture_output=True, text=True, env=_environment()
                                  ).stderr.strip().splitlines()[-1]
              for how in ("none", "command")}
    assert counts == {"none": "[2]", "command": "[1]"}


def test_the_results_do_not_depend_on_the_threads_blas_starts_with(tmp_path):
    path = _file(tmp_path)
    results = {}
    for threads in ("1", "2"):
        out = tmp_path / f"run-{threads}.json"
        subprocess.run([sys.executable, "-m", "mpieval", "eval", "--metrics", "auc", path,
                        "--json", str(out)], check=True, capture_output=True,
                       env=_environment(OPENBLAS_NUM_THREADS=threads))
        data = json.loads(out.read_text())
        data.pop("run", None)
        results[threads] = data
    assert results["1"] == results["2"]
