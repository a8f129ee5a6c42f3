"""Every output path (stdout, ``--json``, ``--report``, ``--save-state``, ``merge``'s, a
checkpoint) on a full disk and over an earlier run: exit 1 for the environment's fault,
2 for the user's, one line, nothing half-written left; odd files on several ranks
(issue 24)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import rows, run, shards
from test_cli_mpi import ALONE, LIMIT, MPIEVAL, MPIEXEC, launch

from mpieval import cli
from mpieval.saved_runs import RUN_FILE


def _full_disk(monkeypatch) -> None:
    """Every file written from now on fails as on a full disk (a full disk often shows
    only when the data is flushed: ``fsync`` then fails with ENOSPC)."""

    def full(handle: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)


@pytest.fixture
def data_file(tmp_path) -> str:
    (path,) = shards(tmp_path, rows(2000), ["in.tsv"])
    return path


def _errors(err: str) -> list[str]:
    """stderr's lines but the warnings (the small file's bucket_error is undefined)."""
    return [line for line in err.splitlines() if not line.startswith("mpieval: warning:")]


def _one_line_exit_1(status: int, out: str, err: str, flag: str) -> None:
    assert status == 1, err
    (line,) = _errors(err)
    assert line.startswith(f"mpieval: error: {flag}: cannot write ") and \
        line.endswith("No space left on device"), err


@pytest.mark.parametrize("flag", ["--json", "--report", "--save-state"])
def test_an_output_on_a_full_disk_is_exit_1_and_leaves_nothing(tmp_path, capsys, monkeypatch,
                                                             data_file, flag):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / {"--json": "run.json", "--report": "run.html",
                        "--save-state": "state"}[flag]
    _full_disk(monkeypatch)
    status, out, err = run(capsys, "eval", flag, target, data_file)
    _one_line_exit_1(status, out, err, flag)
    assert os.listdir(out_dir) == []  # no temporary file, no empty state directory


def test_save_state_into_an_existing_directory_on_a_full_disk_leaves_no_run(
        tmp_path, capsys, monkeypatch, data_file):
    state = tmp_path / "state"
    assert cli.main(["eval", "--save-state", str(state), data_file]) == 0
    (state / "notes.txt").write_text("mine")
    capsys.readouterr()
    _full_disk(monkeypatch)
    _one_line_exit_1(*run(capsys, "eval", "--save-state", state, data_file), "--save-state")
    assert os.listdir(state) == ["notes.txt"]  # no half-replaced run to merge by mistake


def test_merge_outputs_on_a_full_disk_are_exit_1(tmp_path, capsys, monkeypatch, data_file):
    state = tmp_path / "state"
    assert cli.main(["eval", "--save-state", str(state), data_file]) == 0
    capsys.readouterr()
    _full_disk(monkeypatch)
    for flag, name in (("--json", "m.json"), ("--report", "m.html")):
        _one_line_exit_1(*run(capsys, "merge", state, flag, tmp_path / name), flag)
    assert sorted(os.listdir(tmp_path)) == ["in.tsv", "state"]


def test_a_denied_output_stays_a_usage_error(tmp_path, capsys, monkeypatch, data_file):
    """Not every write failure is the environment's: a path the user may not write is
    theirs to fix (exit 2)."""

    def denied(handle: int) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "fsync", denied)
    status, _, err = run(capsys, "eval", "--json", tmp_path / "run.json", data_file)
    assert status == 2 and _errors(err)[0].startswith("mpieval: error: --json: cannot write ")


def test_merge_has_report_as_eval_has(tmp_path, capsys, data_file):
    assert "--report PATH" in cli.build_parser()._subparsers._group_actions[0].choices[
        "merge"].format_help()
    state = tmp_path / "state"
    assert cli.main(["eval", "--save-state", str(state), "--report", str(tmp_path / "e.html"),
                     data_file]) == 0
    status, out, err = run(capsys, "merge", state, "--report", tmp_path / "m.html")
    assert status == 0, err
    page = (tmp_path / "m.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "auc" in page
    missing = tmp_path / "no" / "m.html"  # checked before anything is read
    status, out, err = run(capsys, "merge", state, "--report", missing)
    assert status == 2 and out == "" and "--report: cannot write" in err, err


def test_merge_of_one_run_twice_is_refused(tmp_path, capsys, data_file):
    state = tmp_path / "state"
    assert cli.main(["eval", "--save-state", str(state), data_file]) == 0
    capsys.readouterr()
    for again in (state, f"{state}/", tmp_path / "." / "state"):
        status, out, err = run(capsys, "merge", state, again)
        assert status == 2 and out == "", err
        assert err.strip() == (f"mpieval: error: {again}: is given twice (also as {state}): "
                               "its runs would count twice"), err


# -- several ranks (launched) ------------------------------------------------------------


def _saved(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.mark.parametrize(("first", "second"), [(3, ALONE), (3, 2), (2, 1)])
def test_a_save_over_an_earlier_run_holds_the_new_run_only(tmp_path, data_file, first,
                                                          second):
    state = tmp_path / "state"
    for ranks in (first, second):
        proc, _ = launch(ranks, "eval", "--save-state", state, data_file)
        assert proc.returncode == 0, proc.stderr
    count = max(second, 1)
    assert _saved(state) == [RUN_FILE, *(f"state-{r:05d}.npz" for r in range(count))]
    assert json.loads((state / RUN_FILE).read_text())["ranks"] == count
    merged, _ = launch(ALONE, "merge", state)
    alone, _ = launch(ALONE, "eval", data_file)
    assert merged.returncode == 0 and merged.stdout == alone.stdout


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
def test_log_lines_onto_a_full_device_are_one_line_exit_1(data_file, ranks):
    """``mpieval eval f.tsv > /dev/full``; under ``mpiexec`` each rank's stdout is
    ``/dev/full`` (mpiexec's own stdout is the launcher's to write, and to report)."""
    command = ["sh", "-c", 'exec "$@" > /dev/full', "sh", MPIEVAL, "eval", data_file]
    if ranks:
        command = [MPIEXEC, "-n", str(ranks), *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_"))}
    proc = subprocess.run(["timeout", "-k", "5", str(LIMIT), *command],
                          capture_output=True, text=True, env=env, timeout=LIMIT + 15)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert _errors(proc.stderr) == [
        "mpieval: error: stdout: cannot write the log lines: No space left on device"]


def _stdout_commands(tmp_path: Path, data_file: str) -> dict[str, list[str]]:
    """Every command that writes to stdout, by name: the log lines of eval, merge and
    demo, the version, the help."""
    state = tmp_path / "state"
    assert launch(ALONE, "eval", "--save-state", state, data_file)[0].returncode == 0
    return {
        "eval": ["eval", "--json", str(tmp_path / "eval.json"), data_file],
        "merge": ["merge", str(state), "--json", str(tmp_path / "merge.json")],
        "demo": ["demo", "--rows", "2000", "--json", str(tmp_path / "demo.json")],
        "version": ["--version"],
        "help": ["eval", "--help"],
    }


# runs a command with its stdout a pipe whose reader has already gone
_CLOSED_PIPE = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
                "os.execvp(sys.argv[1], sys.argv[1:])")


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_every_output_to_a_closed_pipe_is_a_quiet_exit_0(tmp_path, data_file, ranks):
    """``mpieval ... | head -1`` once ``head`` has gone: what was asked of the files is still
    written, no error is said, the status is 0 (a reader that leaves early is no
    failure). Under ``mpiexec`` each rank's stdout is such a pipe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_"))}
    for name, argv in _stdout_commands(tmp_path, data_file).items():
        command = [sys.executable, "-c", _CLOSED_PIPE, MPIEVAL, *argv]
        if ranks:
            command = [MPIEXEC, "-n", str(ranks), *command]
        proc = subprocess.run(["timeout", "-k", "5", str(LIMIT), *command],
                              capture_output=True, text=True, env=env, timeout=LIMIT + 15)
        assert proc.returncode == 0, (name, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, (
            name, proc.stderr[-2000:])
        assert "mpieval: error" not in proc.stderr, (name, proc.stderr[-2000:])
        if "--json" in argv:
            assert json.loads(Path(argv[argv.index("--json") + 1]).read_text()), name


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k t /mnt"],
                          capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root to mount a small tmpfs")
@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
@pytest.mark.parametrize("flag", ["--json", "--save-state"])
def test_a_really_full_disk_on_every_rank_count(tmp_path, data_file, ranks, flag):
    """A real full file system (a tmpfs filled up, in a mount namespace of its own)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    command = [MPIEVAL, "eval", flag, str(disk / "out"), data_file]
    if ranks:
        command = [MPIEXEC, "-n", str(ranks), *command]
    script = ('mount -t tmpfs -o size=256k t "$0" && (cat /dev/zero > "$0/filler" 2>/dev/null;'
              ' "$@"; s=$?; rm "$0/filler"; ls -A "$0" >&2; exit $s)')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "PMIX_"))}
    proc = subprocess.run(["timeout", "-k", "5", str(LIMIT), "unshare", "-m", "sh", "-c",
                           script, str(disk), *command], capture_output=True, text=True,
                          env=env, timeout=LIMIT + 15)
    assert proc.returncode == 1, proc.stderr
    lines = _errors(proc.stderr)
    assert lines[0].startswith(f"mpieval: error: {flag}: cannot write "), proc.stderr
    assert lines[0].endswith("No space left on device"), proc.stderr
    assert lines[1:] == [], proc.stderr  # one line, and `ls -A` found nothing left


# -- a file that is no text file, on several ranks ---------------------------------------


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
def test_a_sparse_4g_file_is_refused_at_once_on_every_rank(tmp_path, ranks):
    """``truncate -s 4G s.tsv``: exit 2 naming s.tsv:1 on every rank, in seconds and in
    bounded memory (the whole file was read looking for the header's end)."""
    import resource

    path = tmp_path / "s.tsv"
    with open(path, "wb") as out:
        out.truncate(4 << 30)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc, seconds = launch(ranks, "eval", path, per_rank_status=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(f"mpieval: error: {path}:1: the header holds a NUL byte") == 1
    assert proc.stderr.count("exit=2") == max(ranks, 1), proc.stderr
    assert seconds < 20
    assert peak_mb < 400 or before / 1024 >= 400, peak_mb  # a rank reads 64 KiB of it


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_blank_line_is_named_on_every_rank_count(tmp_path, ranks):
    from test_robust import _with_blank_line

    path = _with_blank_line(tmp_path, "far.tsv", 200_000, 180_001)
    proc, _ = launch(ranks, "eval", path, per_rank_status=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(f"{path}:180001: empty line") == 1, proc.stderr  # rank K: ...
    assert proc.stderr.count("exit=2") == ranks


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_3_mb_uid_on_several_ranks_gives_the_result_of_one(tmp_path, ranks):
    """A valid TSV with one uid of 3 MB (three of the one-thread reader's blocks), read on
    one thread per rank: every rank count gives what one rank gives."""
    data = rows(30_000, seed=4)
    (path,) = shards(tmp_path, data, ["users.tsv"])
    lines = Path(path).read_bytes().split(b"\n")
    header = lines[0].split(b"\t")
    at = header.index(b"uid")
    for index in (len(lines) // 3, len(lines) // 3 + 1, 2 * len(lines) // 3):
        fields = lines[index].split(b"\t")
        fields[at] = b"u" * 3_000_000 + str(index % 2).encode()  # two rows of one user
        lines[index] = b"\t".join(fields)
    Path(path).write_bytes(b"\n".join(lines))
    argv = ["eval", "--metrics", "auc,wuauc,pn", "--label", "label", path]
    alone, _ = launch(ALONE, *argv)
    assert alone.returncode == 0, alone.stderr
    proc, _ = launch(ranks, *argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == alone.stdout


@pytest.mark.parametrize("ranks", [ALONE, 2, 3])
def test_weights_of_1e300_exit_2_naming_the_column_on_every_rank(tmp_path, ranks):
    path = tmp_path / "w.tsv"
    body = "".join(f"0.{i % 9 + 1}\t{i % 2}\t1e300\n" for i in range(300))
    path.write_text("pred\tlabel\tw\n" + body)
    proc, _ = launch(ranks, "eval", "--weight", "w", path, per_rank_status=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("mpieval: error: column w: too large: the weighted positives") \
        == 1, proc.stderr
    assert proc.stderr.count("exit=2") == max(ranks, 1) and proc.stdout == ""


def test_demo_files_on_a_full_disk_are_exit_1_and_leave_nothing(tmp_path, capsys,
                                                                monkeypatch):
    import tempfile

    from mpieval import demo

    def full(directory: str, rows: int) -> list[str]:
        (Path(directory) / "part-00.tsv").write_text("pred\tla")  # half a file
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(demo, "write_shards", full)
    status, out, err = run(capsys, "demo", "--rows", "1000")
    assert status == 1 and out == "", err
    (line,) = _errors(err)
    assert line.startswith(f"mpieval: error: demo: cannot write the demo files in {tmp_path}")
    assert line.endswith(": No space left on device"), line
    assert os.listdir(tmp_path) == []
