"""Inputs and outputs where dumps live: ``s3://`` against a real S3 server (moto in server
mode on 127.0.0.1, started here), ``hdfs://`` and ``gs://`` with pyarrow's local and mock
file systems standing in for stores that cannot run here.

Every launched run is under ``timeout`` (:func:`test_cli_mpi.launch`), so a hang fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from test_cli import rows, shards, write
from test_cli_mpi import ALL_KINDS, ALONE, FLAGS, launch

from mpieval import cli, locations

pytest.importorskip("moto", reason="the S3 tests need moto[server] (the test extra)")

BUCKET = "dumps"
FORMATS = ["part-0.tsv", "part-1.csv", "part-2.tsv.gz", "part-3.parquet", "part-4.tsv"]
METRICS = ["--metrics", ",".join(ALL_KINDS), *FLAGS]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def moto_server() -> Iterator[int]:
    """``python -m moto.server`` on a free port of 127.0.0.1; its port."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                               "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def s3_environment(port: int) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Iterator[dict]:
    """A moto S3 server holding the dump of every format under ``s3://dumps/dump/``, the
    same files on local disk, and the environment that points at the server."""
    root = tmp_path_factory.mktemp("local")
    data = rows(3000, seed=23)
    files = shards(root, data, FORMATS)
    with moto_server() as port:
        environment = s3_environment(port)
        saved = {name: os.environ.get(name) for name in environment}
        os.environ.update(environment)
        try:
            store = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                                      allow_bucket_creation=True)
            store.create_dir(BUCKET)
            for path in files:
                with store.open_output_stream(f"{BUCKET}/dump/{Path(path).name}",
                                              compression=None) as out:
                    out.write(Path(path).read_bytes())
            yield {"port": port, "files": files, "store": store, "env": environment,
                   "root": root}
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def remote(path: str) -> str:
    return f"s3://{BUCKET}/dump/{Path(path).name}"


def evaluate(capsys, tmp_path: Path, *inputs: str, extra: tuple[str, ...] = ()
             ) -> tuple[int, str, str, str]:
    """``mpieval eval`` in this process: status, stdout, stderr and the JSON text."""
    out_json = tmp_path / f"run-{len(list(tmp_path.iterdir()))}.json"
    status = cli.main(["eval", *METRICS, "--json", str(out_json), *extra, *inputs])
    out, err = capsys.readouterr()
    return status, out, err, metrics_text(out_json.read_text()) if out_json.exists() else ""


def metrics_text(text: str) -> str:
    """A ``--json`` file's text without its ``run`` object (which names the command)."""
    data = json.loads(text)
    assert isinstance(data.pop("run"), dict)
    return json.dumps(data)


# -- the same numbers ------------------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_from_s3_gives_the_local_numbers(s3, tmp_path, capsys, name):
    local = next(path for path in s3["files"] if path.endswith(name))
    want = evaluate(capsys, tmp_path, local)
    got = evaluate(capsys, tmp_path, remote(local))
    assert want[0] == 0 and got[0] == 0, got[2]
    assert got[1] == want[1] and got[3] == want[3]


def test_a_glob_is_expanded_on_the_bucket_listing(s3, tmp_path, capsys):
    want = evaluate(capsys, tmp_path, *s3["files"])
    got = evaluate(capsys, tmp_path, f"s3://{BUCKET}/dump/part-*")
    assert got[0] == 0, got[2]
    assert got[1] == want[1] and got[3] == want[3]
    two = evaluate(capsys, tmp_path, f"s3://{BUCKET}/dump/part-[01].[tc]sv")
    assert two[1] == evaluate(capsys, tmp_path, *s3["files"][:2])[1]
    assert locations.expand(f"s3://{BUCKET}/*/part-[0-9].parquet") == [
        f"s3://{BUCKET}/dump/part-3.parquet"]


def test_one_object_read_in_byte_ranges_gives_every_row_once(s3, tmp_path, capsys, monkeypatch):
    from mpieval import pipeline, readers, split

    monkeypatch.setenv("MPIEVAL_THREADS", "1")
    uri = remote(s3["files"][0])
    file = readers.inspect(uri, "tsv")
    seen = []
    for pieces in split.plan([file], 3):
        for piece in pieces:
            for batch in readers.read_piece(file, piece, {"uid": "string"}):
                seen.extend(batch.keys("uid").tolist())
    local = readers.inspect(s3["files"][0], "tsv")
    everything = [key for batch in readers.read_piece(local, split.Piece(0, 0, local.size),
                                                      {"uid": "string"})
                  for key in batch.keys("uid").tolist()]
    assert seen == everything
    assert pipeline.Job  # the planner's view carries the sizes: no listing on other ranks


@pytest.mark.parametrize("ranks", [2, 3])
def test_under_mpiexec_s3_gives_the_local_numbers(s3, tmp_path, ranks):
    local_json, remote_json = tmp_path / "local.json", tmp_path / "remote.json"
    want, _ = launch(ALONE, "eval", *METRICS, "--json", local_json, *s3["files"])
    got, _ = launch(ranks, "eval", *METRICS, "--json", remote_json,
                    f"s3://{BUCKET}/dump/part-*")
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert metrics_text(remote_json.read_text()) == metrics_text(local_json.read_text())


# -- outputs -----------------------------------------------------------------------------


def test_json_and_saved_state_to_s3_and_merge_from_it(s3, tmp_path, capsys):
    local = evaluate(capsys, tmp_path, *s3["files"])
    status = cli.main(["eval", *METRICS, "--json", f"s3://{BUCKET}/out/run.json",
                       "--save-state", f"s3://{BUCKET}/runs/a", *s3["files"]])
    _, err = capsys.readouterr()
    assert status == 0, err
    assert metrics_text(s3["store"].open_input_file(f"{BUCKET}/out/run.json").read().decode()
                        ) == local[3]
    status = cli.main(["merge", f"s3://{BUCKET}/runs/a", "--json", str(tmp_path / "m.json")])
    merged, err = capsys.readouterr()
    assert status == 0, err
    assert merged == local[1]
    assert metrics_text((tmp_path / "m.json").read_text()) == local[3]


def test_json_to_a_missing_bucket_is_an_error_before_reading(s3, tmp_path, capsys):
    status, out, err, _ = evaluate(capsys, tmp_path, *s3["files"][:1],
                                   extra=("--json", "s3://no-such-bucket/run.json"))
    assert status == 2 and out == ""
    assert "s3://no-such-bucket/run.json" in err


# -- errors ------------------------------------------------------------------------------

ERRORS = {
    "missing object": (f"s3://{BUCKET}/dump/gone.tsv",
                       f"s3://{BUCKET}/dump/gone.tsv: cannot read: No such file or directory"),
    "wrong bucket": ("s3://no-such-bucket/dump/part-0.tsv",
                     "s3://no-such-bucket/dump/part-0.tsv: cannot read: No such file or "
                     "directory (no bucket no-such-bucket)"),
    "no match": (f"s3://{BUCKET}/dump/*.json", f"s3://{BUCKET}/dump/*.json: no file matches"),
    "secrets": ("s3://AKIDSECRET:VERYSECRET@no-such-bucket/x.tsv?region=us-east-1",
                "s3://***@no-such-bucket/x.tsv?region=***: cannot read: No such file"),
}


@pytest.mark.parametrize("ranks", [ALONE, 2])
@pytest.mark.parametrize("case", list(ERRORS))
def test_store_errors_exit_2_on_every_rank_naming_the_uri(s3, tmp_path, ranks, case):
    uri, message = ERRORS[case]
    out_json = tmp_path / "run.json"
    proc, seconds = launch(ranks, "eval", "--json", out_json, s3["files"][0], uri,
                           per_rank_status=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(message) == 1, proc.stderr
    assert proc.stderr.count("exit=2") == max(ranks, 1), proc.stderr
    assert "SECRET" not in proc.stderr and "Traceback" not in proc.stderr
    assert not out_json.exists() and seconds < 60


def test_redact_hides_user_info_and_query_values():
    assert locations.redact("s3://key:secret@b/k.tsv?region=x&endpoint_override=h:1") == (
        "s3://***@b/k.tsv?region=***&endpoint_override=***")
    assert locations.redact("hdfs://nn:8020/a/b.tsv") == "hdfs://nn:8020/a/b.tsv"
    assert locations.redact("/local/path?.tsv") == "/local/path?.tsv"


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_the_run_object_redacts_the_secrets_of_a_uri(s3, tmp_path, ranks):
    name = Path(s3["files"][0]).name
    uri = f"s3://AKIDSECRET:VERYSECRET@{BUCKET}/dump/{name}?region=us-east-1"
    out_json = tmp_path / "run.json"
    proc, _ = launch(ranks, "eval", f"--json={out_json}", uri, s3["files"][1])
    assert proc.returncode == 0, proc.stderr
    text = out_json.read_text()
    assert "SECRET" not in text
    record = json.loads(text)["run"]
    shown = f"s3://***@{BUCKET}/dump/{name}?region=***"
    assert record["command"] == ["mpieval", "eval", f"--json={out_json}", shown,
                                 s3["files"][1]]
    assert record["inputs"] == [shown, s3["files"][1]]
    assert record["ranks"] == max(ranks, 1)


class DroppingProxy:
    """A TCP proxy to the S3 server that, once ``budget`` bytes of replies have passed,
    drops every connection and stops listening: a server that goes away mid-run."""

    def __init__(self, target: int, budget: int) -> None:
        self.target, self.budget = target, budget
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, replies: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                sink.sendall(data)
                if replies:
                    with self.lock:
                        self.budget -= len(data)
                    if self.budget <= 0:
                        self.stop()
                        return
        except OSError:
            pass

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()


@pytest.mark.parametrize("ranks", [ALONE, 2])
def test_a_server_stopped_mid_run_is_exit_1_naming_the_uri_without_a_hang(
        s3, tmp_path, monkeypatch, ranks):
    big = write(str(tmp_path / "big.tsv"), rows(60_000, seed=3))  # about 3 MB
    uri = f"s3://{BUCKET}/big/big.tsv"
    with s3["store"].open_output_stream(f"{BUCKET}/big/big.tsv", compression=None) as out:
        out.write(Path(big).read_bytes())
    proxy = DroppingProxy(s3["port"], budget=1_500_000)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("MPIEVAL_THREADS", "1")
    out_json = tmp_path / "run.json"
    try:
        proc, seconds = launch(ranks, "eval", "--json", out_json, uri, per_rank_status=True)
    finally:
        proxy.stop()
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count(f"{uri}: cannot read after ") == 1, proc.stderr
    if ranks == ALONE:
        assert proc.stderr.count("exit=1") == 1, proc.stderr
    # under mpiexec the ranks end by MPI_Abort(1) (a read may still be retrying on one
    # of pyarrow's threads: see cli._exit_now), so mpiexec's status is the job's
    assert "Traceback" not in proc.stderr and not out_json.exists()
    assert seconds < 90


# -- stores that cannot run here ---------------------------------------------------------


def test_hdfs_and_gcs_uris_through_stand_in_file_systems(s3, tmp_path, capsys, monkeypatch):
    """``hdfs://`` on a local directory (``SubTreeFileSystem``), ``gs://`` on pyarrow's
    in-memory ``_MockFileSystem``: the URI handling, globbing and reading are the same
    code a real store goes through; only ``FileSystem.from_uri`` is replaced."""
    memory = pafs._MockFileSystem()
    memory.create_dir("bucket/dump")
    for path in s3["files"]:
        with memory.open_output_stream(f"bucket/dump/{Path(path).name}",
                                       compression=None) as out:
            out.write(Path(path).read_bytes())
    stand_ins = {"hdfs": pafs.SubTreeFileSystem(str(s3["root"]), pafs.LocalFileSystem()),
                 "gs": memory}
    asked = []

    def connect(uri: str) -> tuple[pafs.FileSystem, str]:
        asked.append(uri)
        return stand_ins[uri.split(":", 1)[0]], ""

    monkeypatch.setattr(locations, "connect", connect)
    monkeypatch.setattr(locations, "_filesystems", {})
    want = evaluate(capsys, tmp_path, *s3["files"])
    for pattern in ("hdfs://namenode:8020/part-*", "gs://bucket/dump/part-*"):
        got = evaluate(capsys, tmp_path, pattern)
        assert got[0] == 0, got[2]
        assert got[1] == want[1] and got[3] == want[3]
    assert asked == ["hdfs://namenode:8020", "gs://bucket"]  # one file system per store
    status, _, err, _ = evaluate(capsys, tmp_path, "hdfs://namenode:8020/gone.tsv")
    assert status == 2 and "hdfs://namenode:8020/gone.tsv: cannot read: No such file" in err


def test_an_unreachable_hdfs_is_one_line(tmp_path, capsys):
    status, _, err, _ = evaluate(capsys, tmp_path, "hdfs://namenode.invalid:8020/a.tsv")
    assert status in (1, 2)
    assert "hdfs://namenode.invalid:8020/a.tsv" in err
    assert len(err.strip().splitlines()) == 1, err
