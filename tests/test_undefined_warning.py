"""How a trainer sees an undefined value: one line, ``mpieval: warning: NAME: ...`` (as
the command line prints it), at every compute that has one, from the trainer's own call
(so that Python's filters by module and ``-W error`` name it); the user's filters apply
(``"once"``, ``"ignore"``, ``"error"``), and every other warning keeps Python's format.

Each case runs a small trainer in a fresh interpreter: warning filters, registries and
the format are process-wide."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PASSES = 3
# Two metrics undefined in every pass (one class only; no user with both labels), then a
# warning of the trainer's own.
TRAINER = f"""
import warnings
import numpy as np
from mpieval import AucMetric, Evaluator, WuaucMetric

ev = Evaluator({{"ctr": AucMetric(), "user": WuaucMetric()}})
for _ in range({PASSES}):
    ev["ctr"].update(np.array([0.2, 0.6]), np.array([1, 1]))
    ev["user"].update(np.array([1, 2]), np.array([0.2, 0.3]), np.array([1, 0]),
                      tag=np.array(["x", "x"]))
    ev.compute()
    ev.reset()
warnings.warn("the trainer's own", UserWarning)
"""


def run(tmp_path: Path, before: str = "", *flags: str) -> subprocess.CompletedProcess:
    """The trainer as ``trainer.py`` (module ``trainer``), imported by a script that runs
    ``before`` first."""
    (tmp_path / "trainer.py").write_text(TRAINER)
    main = f"import warnings\n{textwrap.dedent(before)}\nimport trainer\n"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONWARNINGS",) and not k.startswith(("PMI_", "PMIX_", "OMPI_"))}
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    env["MPIEVAL_NO_MPI"] = "1"
    return subprocess.run([sys.executable, *flags, "-c", main], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def mpieval_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("mpieval: warning: ")]


def test_each_pass_warns_one_line_per_metric_naming_it(tmp_path: Path) -> None:
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = mpieval_lines(done.stderr)
    assert [line.split(":")[2].strip() for line in lines] == ["ctr", "user"] * PASSES
    assert lines[:2] * PASSES == lines
    assert "auc is undefined with only one class" in lines[0]
    assert "tags all, x: no user has both labels" in lines[1]
    # no path, category or source line of mpieval's around them
    others = [line for line in done.stderr.splitlines() if line not in lines]
    assert len(others) == 2 and "trainer.py:13: UserWarning: the trainer's own" in others[0], (
        done.stderr)
    assert others[1].strip() == 'warnings.warn("the trainer\'s own", UserWarning)'
    assert "mpieval/" not in done.stderr and "UndefinedMetricWarning" not in done.stderr


@pytest.mark.parametrize(("before", "count"), [
    ("warnings.filterwarnings('once', category=__import__('mpieval').UndefinedMetricWarning)",
     2),
    ("warnings.filterwarnings('ignore', category=__import__('mpieval').UndefinedMetricWarning)",
     0),
    ("warnings.filterwarnings('ignore', module='trainer')", 0),  # the trainer's call
    ("warnings.filterwarnings('ignore', module='mpieval')", 2 * PASSES),  # not mpieval's
])
def test_the_users_filters_apply(tmp_path: Path, before: str, count: int) -> None:
    done = run(tmp_path, before)
    assert done.returncode == 0, done.stderr
    assert len(mpieval_lines(done.stderr)) == count, done.stderr


def test_an_error_filter_raises_at_the_trainers_compute(tmp_path: Path) -> None:
    done = run(tmp_path, "", "-W", "error::RuntimeWarning")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(
        "mpieval.errors.UndefinedMetricWarning: ctr: auc is undefined with only one class"
    ), done.stderr
    assert 'trainer.py", line 11, in <module>' in done.stderr  # ev.compute()
