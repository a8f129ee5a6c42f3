"""The installed ``mpieval`` as a user runs it: alone and under ``mpiexec -n 1/2/3``.

Serial tests that launch processes (not ``@pytest.mark.mpi``): every launch runs under
``timeout`` so that a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_cli import (
    ALL_KINDS,
    api,
    assert_same,
    assert_same_lines,
    column_flags,
    metrics_json,
    rows,
    shards,
    write,
)

from mpieval.kinds import KINDS

FLAGS, INPUTS = column_flags(ALL_KINDS)  # every kind on one command line
BIN = Path(sys.executable).parent
MPIEVAL = str(BIN / "mpieval")
MPIEXEC = os.environ.get("MPIEXEC") or str(BIN / "mpiexec")
ALONE = 0  # run without mpiexec
LIMIT = 120  # seconds a launch may take before `timeout` kills it
ERROR_SECONDS = 30  # an error must end every rank well within this (startup included)

pytestmark = pytest.mark.skipif(
    not (os.path.exists(MPIEVAL) and os.path.exists(MPIEXEC)),
    reason="needs the installed mpieval and mpiexec beside the test interpreter",
)


def launch(ranks: int, *argv: object, per_rank_status: bool = False,
           program: list[str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``mpieval ARGV`` alone (``ranks=0``) or under ``mpiexec -n ranks``.

    With ``per_rank_status`` every rank prints ``exit=N`` on stderr when it ends.
    """
    command = list(program or [MPIEVAL]) + [str(a) for a in argv]
    if per_rank_status:
        command = ["sh", "-c", '"$@"; s=$?; echo "exit=$s" >&2; exit $s', "sh", *command]
    if ranks:
        command = [MPIEXEC, "-n", str(ranks), *command]
    # a fresh job: none of this process's own MPI launch settings, if it has any
    env = {k: v for k, v in os.environ.items()
           if k != "MPIEVAL_NO_MPI" and not k.startswith(("PMI_", "PMIX_", "MPI_LOCAL", "HYDI_"))}
    start = time.monotonic()
    proc = subprocess.run(["timeout", "-k", "5", str(LIMIT), *command], capture_output=True,
                          text=True, timeout=LIMIT + 15, env=env)
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[dict[str, np.ndarray], list[str]]:
    """Rows cut into files of every format, a user's rows spread over several files."""
    root = tmp_path_factory.mktemp("dump")
    data = rows(6000, seed=11)
    files = shards(root, data, ["part-0.tsv", "part-1.tsv", "part-2.csv", "part-3.tsv.gz",
                                "part-4.parquet"])
    return data, files


@pytest.mark.parametrize(("ranks", "order"), [
    (ALONE, 1), (1, 1), (2, 1), (3, 1), (2, -1), (3, -1),
])
def test_same_numbers_on_any_ranks_and_file_order(tmp_path, dataset, ranks, order):
    data, files = dataset
    out_json = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", "--metrics", ",".join(ALL_KINDS), *FLAGS,
                     "--json", out_json, *files[::order])
    assert proc.returncode == 0, proc.stderr
    want, lines = api({k: (k, {}) for k in ALL_KINDS}, data, INPUTS)
    assert_same(metrics_json(out_json), want)
    assert_same_lines(proc.stdout.splitlines(), lines)


@pytest.mark.parametrize("extra", [
    [],
    ["--weight", "grade", "--compare", "pred2", "--table-size", "997"],
], ids=["every-kind", "weighted-compare"])
def test_json_is_bit_identical_on_any_ranks_file_order_and_batch(tmp_path, dataset, extra):
    """Every float of the JSON has the same bits alone, on 2, 3 and 8 ranks (8
    oversubscribed), in the given and a shuffled file order: the sums are exact, rounded
    once (:mod:`mpieval.kernels.exact`)."""
    _, files = dataset
    shuffled = [files[i] for i in np.random.default_rng(3).permutation(len(files))]
    # with --weight, the kinds that take weights (the others refuse the flag)
    kinds = [kind for kind in ALL_KINDS if "--weight" not in extra
             or any(spec.weight for spec in KINDS[kind].declared_inputs)]
    texts = {}
    for ranks, order in [(ALONE, files), (2, files), (3, shuffled), (8, shuffled),
                         (2, files[::-1])]:
        out_json = tmp_path / f"run-{ranks}-{len(texts)}.json"
        proc, _ = launch(ranks, "eval", "--metrics", ",".join(kinds),
                         *column_flags(kinds)[0], *extra, "--json", out_json, *order)
        assert proc.returncode == 0, proc.stderr
        texts[(ranks, len(texts))] = json.dumps(metrics_json(out_json))  # floats as written
    first = next(iter(texts.values()))
    assert '"predicted_ctr"' in first and '"wuauc"' in first
    for where, text in texts.items():
        assert text == first, f"ranks, run {where} differs from alone"


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [16, 32])
def test_every_kind_on_many_oversubscribed_ranks(tmp_path, dataset, ranks):
    """Correctness at scale on 2 cores: 16 and 32 ranks (most of them with a sliver of a
    file or nothing) give the JSON of one process, byte for byte."""
    _, files = dataset
    texts = []
    for n in (ALONE, ranks):
        out_json = tmp_path / f"run-{n}.json"
        proc, _ = launch(n, "eval", "--metrics", ",".join(ALL_KINDS), *FLAGS, "--table-size",
                         "1000", "--json", out_json, *files)
        assert proc.returncode == 0, proc.stderr[-3000:]
        texts.append(json.dumps(metrics_json(out_json)))  # floats as written
    assert texts[1] == texts[0]


def test_one_file_on_three_ranks(tmp_path):
    data = rows(20_000, seed=3)
    (path,) = shards(tmp_path, data, ["big.tsv"])
    out_json = tmp_path / "run.json"
    proc, _ = launch(3, "eval", "--metrics", "auc", "--json", out_json, path)
    assert proc.returncode == 0, proc.stderr
    assert_same(metrics_json(out_json), api({"auc": ("auc", {})}, data)[0])


def test_ranks_with_nothing_to_read(tmp_path):
    """One gzip file (it cannot be cut) on three ranks: two ranks read nothing, take part in
    every round and the per-user exchange, and the numbers are the API's."""
    data = rows(3000, seed=7)
    (path,) = shards(tmp_path, data, ["only.tsv.gz"])
    out_json = tmp_path / "run.json"
    proc, _ = launch(3, "eval", "--metrics", ",".join(ALL_KINDS), *FLAGS, "--json", out_json,
                     path)
    assert proc.returncode == 0, proc.stderr
    want, lines = api({k: (k, {}) for k in ALL_KINDS}, data, INPUTS)
    assert_same(metrics_json(out_json), want)
    assert_same_lines(proc.stdout.splitlines(), lines)


# -- errors: every rank exits 2, promptly, with one message and no JSON -----------------


def bad_copy(tmp_path, name: str, line: int, **change: str | None) -> str:
    """A good TSV whose line ``line`` has the given columns changed (None: cut there)."""
    path = write(str(tmp_path / name), rows(3000, seed=1))
    lines = Path(path).read_text().splitlines()
    header = lines[0].split("\t")
    fields = lines[line - 1].split("\t")
    for column, value in change.items():
        at = header.index(column)
        fields = fields[:at] if value is None else [*fields[:at], value, *fields[at + 1:]]
    lines[line - 1] = "\t".join(fields)
    Path(path).write_text("\n".join(lines) + "\n")
    return path


DATA_ERRORS = {
    # case: (how to make the file, expected message with {path})
    "not a number": (lambda d: bad_copy(d, "part-3.tsv", 2950, pred="abc"),
                     "{path}:2950: column pred: 'abc' is not a number"),
    "out of range": (lambda d: bad_copy(d, "part-3.tsv", 1042, pred="1.5"),
                     "{path}:1042: column pred: value 1.5 must be in [0, 1]"),
    "ragged row": (lambda d: bad_copy(d, "part-3.tsv", 2500, pred=None),
                   "{path}:2500: column pred: missing: the line has 2 of the 11 columns"),
    "missing column": (lambda d: write(str(d / "nopred.tsv"), {"label": np.array([1, 0])}),
                       "{path}:1: column pred: not in the header"),
    "empty file": (lambda d: (d / "empty.tsv").write_text("") or str(d / "empty.tsv"),
                   "{path}:1: empty file"),
    "missing file": (lambda d: str(d / "gone.tsv"), "{path}: cannot read: No such file"),
}


def assert_failed_everywhere(proc: subprocess.CompletedProcess, seconds: float, ranks: int,
                             message: str, out_json: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    assert seconds < ERROR_SECONDS
    assert proc.stderr.count(message) == 1, proc.stderr  # rank 0 speaks once
    assert proc.stderr.count("exit=2") == max(ranks, 1), proc.stderr  # every rank exits 2
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not out_json.exists()


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
@pytest.mark.parametrize("case", list(DATA_ERRORS))
def test_data_errors_exit_2_on_every_rank(tmp_path, dataset, ranks, case):
    make, message = DATA_ERRORS[case]
    path = make(tmp_path)
    out_json = tmp_path / "run.json"
    proc, seconds = launch(ranks, "eval", "--json", out_json, dataset[1][0], path,
                           per_rank_status=True)
    assert_failed_everywhere(proc, seconds, ranks, message.format(path=path), out_json)


@pytest.mark.parametrize("ranks", [ALONE, 3])
@pytest.mark.parametrize(("argv", "message"), [
    (["--metrics", "auc,gauc"], "unknown metric kind 'gauc'"),
    (["--pn-ties", "often"], "argument --pn-ties: invalid choice: 'often'"),
    (["--table-size", "-3"], "--table-size: must be a positive integer, got -3"),
    (["--metrics", "auc,pn", "--weight", "label"], "--weight: kind pn does not take weights"),
])
def test_usage_errors_exit_2_on_every_rank(tmp_path, dataset, ranks, argv, message):
    out_json = tmp_path / "run.json"
    proc, seconds = launch(ranks, "eval", *argv, "--json", out_json, dataset[1][0],
                           per_rank_status=True)
    assert_failed_everywhere(proc, seconds, ranks, message, out_json)


def test_an_unexpected_error_on_one_rank_aborts_the_job(tmp_path, dataset):
    """A bug on rank 1 only: traceback, MPI_Abort, status 1 promptly; no hang."""
    script = (
        "import sys\n"
        "from mpieval import cli, pipeline\n"
        "from mpi4py import MPI\n"
        "real = pipeline.Task.feed\n"
        "def feed(self, batch):\n"
        "    if MPI.COMM_WORLD.Get_rank() == 1: raise RuntimeError('boom on rank 1')\n"
        "    return real(self, batch)\n"
        "pipeline.Task.feed = feed\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    out_json = tmp_path / "run.json"
    proc, seconds = launch(3, "eval", "--json", out_json, *dataset[1],
                           program=[sys.executable, "-c", script])
    assert proc.returncode == 1, proc.stderr
    assert "RuntimeError: boom on rank 1" in proc.stderr
    assert seconds < ERROR_SECONDS
    assert not out_json.exists()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, theirs, ...), from one pass over /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def mpieval_ranks(launcher: int) -> list[int]:
    """The ranks below ``launcher`` (mpiexec -> proxy -> ranks): processes running
    ``python MPIEVAL eval``, this job's only, in pid order."""
    ranks = []
    for pid in _descendants(launcher):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                argv = cmd.read().split(b"\0")
        except OSError:
            continue
        if b"python" in argv[0] and argv[1:3] == [MPIEVAL.encode(), b"eval"]:
            ranks.append(pid)
    return sorted(ranks)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the ranks through /proc")
def test_kill_9_of_one_rank_ends_mpiexec_promptly(tmp_path):
    data = rows(400_000, seed=2)
    (path,) = shards(tmp_path, data, ["big.tsv"])
    config = tmp_path / "m.toml"
    # several metrics: the survivor has its work left when its peer is killed
    config.write_text("[metrics.a]\nkind = 'auc'\n" + "".join(
        f"[metrics.p{k}]\nkind = 'pn'\n" for k in range(3)))
    proc = subprocess.Popen(["timeout", "-k", "5", str(LIMIT), MPIEXEC, "-n", "2", MPIEVAL,
                             "eval", "--config", str(config), path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ranks: list[int] = []
        deadline = time.monotonic() + 30
        while len(ranks) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            ranks = mpieval_ranks(proc.pid)
        assert len(ranks) == 2, "ranks not found"
        # both stopped (SIGSTOP): a stopped job cannot end before the kill, however fast or
        # busy the machine; the survivor goes on after it
        for rank in ranks:
            os.kill(rank, signal.SIGSTOP)
        assert proc.poll() is None, "the job ended before a rank could be killed"
        killed = time.monotonic()
        os.kill(ranks[-1], signal.SIGKILL)
        os.kill(ranks[0], signal.SIGCONT)
        proc.wait(timeout=60)
        assert proc.returncode != 0
        assert time.monotonic() - killed < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- demo ---------------------------------------------------------------------------------


def test_demo_alone_and_on_three_ranks(tmp_path, monkeypatch):
    demo_tmp = tmp_path / "tmp"  # the demo's own TMPDIR: only this run's files land there
    demo_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(demo_tmp))
    outputs = []
    for ranks in (ALONE, 3):
        out_json = tmp_path / f"demo-{ranks}.json"
        proc, _ = launch(ranks, "demo", "--rows", "30000", "--json", out_json)
        assert proc.returncode == 0, proc.stderr
        assert f"files under {demo_tmp}{os.sep}mpieval-demo-" in proc.stderr  # used, then
        assert os.listdir(demo_tmp) == []  # removed
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("item_sim: auc=")
        assert any(line.startswith("pair_click: Ins=30000 ") for line in lines)
        outputs.append(metrics_json(out_json))
        if "wuauc" not in ALL_KINDS:
            assert "skipping user_ctr" in proc.stderr
    assert_same(outputs[1], outputs[0])
