"""The trainer examples of scripts/ run, and a run stopped mid-pass and resumed from its
checkpoint, on as many ranks or another number, prints the same Abacus lines as one that
was never stopped."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
SECONDS = 300


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDI_", "MPI_LOCAL", "OMPI_"))}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(kind: str, n: int, *args: str) -> str:
    if kind == "torch":
        command = [os.path.join(BIN, "torchrun"), "--nproc_per_node", str(n),
                   "--master_port", str(_port()),
                   os.path.join(ROOT, "scripts", "example_torch_trainer.py"), *args]
    else:
        command = [os.path.join(BIN, "mpiexec"), "-n", str(n), sys.executable,
                   os.path.join(ROOT, "scripts", "example_mpi_trainer.py"), *args]
    result = subprocess.run(command, capture_output=True, text=True, env=_env(),
                            timeout=SECONDS)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _pass_lines(output: str) -> str:
    """The lines of the passes: all but the recent window's, which is each rank's last
    rows (its job-wide value depends on the number of ranks, as TorchRec's)."""
    return "".join(line for line in output.splitlines(keepends=True)
                   if not line.startswith("ctr recent:"))


@pytest.mark.timeout(2 * 4 * SECONDS)
@pytest.mark.parametrize("kind", ["torch", "mpi4py"])
def test_an_example_resumes_mid_pass_as_if_never_stopped(kind, tmp_path):
    """Stopped in pass 1 on 2 ranks, resumed on 2 (every line) or on 3 (the passes' lines):
    the lines of a run never stopped, since a step's batch is split over the ranks."""
    if kind == "torch":
        pytest.importorskip("torch")
    launcher = "torchrun" if kind == "torch" else "mpiexec"
    if not os.path.exists(os.path.join(BIN, launcher)):
        pytest.skip("no launcher beside this python")
    whole = _launch(kind, 2)
    assert whole.count("pass ") == 2 and "ctr: auc=" in whole and "user: Tag=all" in whole
    assert "num=2400 " in whole and "RealInsNum=2400 " in whole
    first = _launch(kind, 2, "--checkpoint", str(tmp_path / "a"), "--stop-after", "1:4")
    assert first.count("pass ") == 1
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert first + _launch(kind, 2, "--checkpoint", str(tmp_path / "a")) == whole
    assert _pass_lines(first + _launch(kind, 3, "--checkpoint", str(tmp_path / "b"))) == (
        _pass_lines(whole))
