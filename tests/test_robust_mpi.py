"""Issue 11, end to end: Ctrl-C alone and under ``mpiexec -n 3`` (to one rank, and to
``mpiexec``), and bad input giving exit 2 with one message at 1, 2 and 3 ranks.

Serial tests that launch processes; every launch is guarded by a timeout.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from test_cli_mpi import ALONE, MPIEVAL, MPIEXEC, launch, mpieval_ranks

INTERRUPTED = 130
REPEATS = 3
WAIT = 60  # seconds an interrupted job may take to end


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> str:
    """A TSV of 6M rows (about 100 MB): still being read seconds after the start."""
    path = str(tmp_path_factory.mktemp("big") / "big.tsv")
    rng = np.random.default_rng(11)
    n = 6_000_000
    pred = np.round(rng.random(n), 6)
    table = pa.table({"uid": rng.integers(0, 10**6, n), "pred": pred,
                      "label": (rng.random(n) < pred).astype(np.int64)})
    with pacsv.CSVWriter(path, table.schema, write_options=pacsv.WriteOptions(
            include_header=False, delimiter="\t", quoting_style="none")) as out:
        out.write(table)
    with open(path, "r+b") as handle:  # the header, unquoted, in front
        body = handle.read()
        handle.seek(0)
        handle.write(b"uid\tpred\tlabel\n" + body)
    return path


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k != "MPIEVAL_NO_MPI" and not k.startswith(("PMI_", "PMIX_", "MPI_LOCAL", "HYDI_"))}


def _rank_pids(launcher: int) -> list[int]:
    """The pids of the mpieval ranks under ``launcher`` (never another job's), or
    ``launcher`` alone."""
    return mpieval_ranks(launcher) or [launcher]


def _reading(pids: list[int], path: str) -> list[int]:
    """The processes among ``pids`` that have ``path`` open."""
    found = []
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if path in links:
            found.append(pid)
    return found


def _wait_until_reading(proc: subprocess.Popen, path: str) -> list[int]:
    """Wait until a rank of the job started as ``proc`` reads ``path``; its rank pids."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the job ended before it started reading"
        pids = _rank_pids(proc.pid)
        if _reading(pids, path):
            return pids
        time.sleep(0.05)
    pytest.fail("the job did not start reading")


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _pending(pid: int, signum: int) -> bool:
    """Whether ``signum`` waits to be delivered to ``pid`` (or ``pid`` is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return True
    mask = 1 << (signum - 1)
    return any(int(fields[name], 16) & mask for name in ("SigPnd", "ShdPnd"))


def _stopped_at(proc: subprocess.Popen, path: str, slices: int) -> list[int]:
    """The job's ranks, stopped (SIGSTOP) while one reads ``path``, after ``slices`` short
    runs of 0.1 s from the start of its reading (fewer if the reading ends sooner).

    A stopped job cannot end on its own: a signal sent now is delivered when it goes on,
    so what the test interrupts is always a running job, however fast or busy the
    machine (the job may only run on in slices while it is still reading)."""
    pids = _wait_until_reading(proc, path)
    _signal_all(pids, signal.SIGSTOP)
    for _ in range(slices):
        if not _reading(pids, path):
            break
        _signal_all(pids, signal.SIGCONT)
        time.sleep(0.1)
        _signal_all(pids, signal.SIGSTOP)
    assert proc.poll() is None, "the job ended before it could be interrupted"
    return pids


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("ranks, target", [(ALONE, "self"), (3, "rank"), (3, "mpiexec")])
def test_ctrl_c_ends_every_rank_with_130_and_leaves_nothing(tmp_path, big_file, ranks, target,
                                                            repeat):
    out = tmp_path / "out.json"
    command = [MPIEVAL, "eval", "--metrics", "auc,wuauc", "--json", str(out), big_file]
    if ranks:
        command = [MPIEXEC, "-n", str(ranks), *command]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    try:
        # interrupted at various points of the reading
        pids = _stopped_at(proc, os.path.realpath(big_file), slices=repeat * 3)
        if target == "rank":
            os.kill(pids[repeat % len(pids)], signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
            deadline = time.monotonic() + 5  # mpiexec passes it on to every rank
            while not all(_pending(pid, signal.SIGINT) for pid in pids) and (
                    time.monotonic() < deadline):
                time.sleep(0.01)
        start = time.monotonic()
        _signal_all(pids, signal.SIGCONT)
        _, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail("an interrupted job did not end (hang)")
    assert proc.returncode == INTERRUPTED, (proc.returncode, err[-2000:])
    assert time.monotonic() - start < WAIT
    assert "Traceback" not in err, err[-2000:]
    assert os.listdir(tmp_path) == [], "a JSON or temporary file was left"


def _bad_inputs(tmp_path) -> dict[str, tuple[list[str], str]]:
    """Name -> (arguments, the text rank 0's one-line message holds)."""
    good = tmp_path / "good.tsv"
    good.write_text("pred\tlabel\n0.5\t1\n0.25\t0\n")
    cr = tmp_path / "mac.tsv"
    cr.write_bytes(b"pred\tlabel\r" + b"0.5\t1\r" * 20000)
    text = b"pred\tlabel\n" + b"".join(b"0.%d\t%d\n" % (i % 97, i % 2) for i in range(200000))
    packed = bytearray(gzip.compress(text))
    packed[len(packed) // 2: len(packed) // 2 + 64] = bytes(64)
    corrupt = tmp_path / "mid.tsv.gz"
    corrupt.write_bytes(bytes(packed))
    head = bytearray(gzip.compress(text))
    head[10:40] = b"\xff" * 30
    bad_head = tmp_path / "head.tsv.gz"
    bad_head.write_bytes(bytes(head))
    return {
        "cr-only": ([str(cr)], "carriage return only"),
        "gzip-mid": ([str(corrupt)], "bad gzip data"),
        "gzip-head": ([str(bad_head)], "bad gzip data"),
        "table-size": (["--table-size", "100000000000", str(good)], "at most"),
        "json-empty": (["--json", "", str(good)], "--json"),
        "name-space": (["--name", "a b", str(good)], "--name"),
        "metrics-empty": (["--metrics", "", str(good)], "--metrics"),
    }


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
def test_bad_input_is_exit_2_with_one_message_on_any_rank_count(tmp_path, ranks):
    messages = {}
    for name, (argv, text) in _bad_inputs(tmp_path).items():
        proc, _ = launch(ranks, "eval", *argv)
        assert proc.returncode == 2, (name, proc.returncode, proc.stderr[-2000:])
        lines = [line for line in proc.stderr.splitlines() if "error" in line]
        assert len(lines) == 1 and text in lines[0], (name, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, (name, proc.stderr[-2000:])
        messages[name] = lines[0]
    for name in ("cr-only", "gzip-mid", "gzip-head"):
        assert str(tmp_path) in messages[name]


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_a_usage_error_is_one_line_exit_2(tmp_path, ranks):
    """Every kind of usage error argparse finds (a value of the wrong type, a missing
    argument, an unknown flag or command, a value not among the choices) is one line
    ``mpieval: error: ...`` naming the flag and where to find help: no usage block."""
    good = tmp_path / "good.tsv"
    good.write_text("pred\tlabel\n0.5\t1\n0.25\t0\n")
    cases = {
        "--table-size abc": (["eval", "--table-size", "abc", good], "--table-size"),
        "--table-size 1e6, no FILE": (["eval", "--table-size", "1e6"], "--table-size"),
        "no FILE": (["eval"], "FILE"),
        "unknown flag": (["eval", "--tabel-size", "10", good], "--tabel-size"),
        "a choice": (["eval", "--pn-ties", "sometimes", good], "--pn-ties"),
        "unknown command": (["evaluate", good], "evaluate"),
        "merge, no DIR": (["merge"], "DIR"),
        "report, no -o": (["report", good], "--output"),
    }
    for name, (argv, text) in cases.items():
        proc, _ = launch(ranks, *argv)
        assert proc.returncode == 2, (name, proc.returncode, proc.stderr[-2000:])
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, (name, proc.stderr[-2000:])
        assert lines[0].startswith("mpieval: error: ") and text in lines[0], (name, lines)
        assert "--help" in lines[0], (name, lines)
