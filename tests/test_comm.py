"""The communication module: exchange, agreement, and running without MPI or a launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from mpieval import InputError

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.mark.mpi
def test_exchange_delivers_every_row_to_its_destination(comm, rng):
    n = 1000 + 17 * comm.rank
    if comm.size > 1 and comm.rank == 1:
        n = 0  # a rank with nothing to send
    dest = rng.integers(0, comm.size, n)
    ident = (comm.rank * 10**6 + np.arange(n)).astype(np.int64)
    columns = {
        "ident": ident,
        "value": ident.astype(np.float32) / 7,
        "flag": ident % 3 == 0,
        "key": ident.astype(np.uint64) * np.uint64(2654435761),
    }
    got = comm.exchange(dest, columns)
    assert all(got[k].dtype == columns[k].dtype for k in columns)
    everything = comm.allgather((ident, dest))
    expected = np.concatenate([i[d == comm.rank] for i, d in everything])
    assert np.array_equal(got["ident"], expected)  # rank order, then original order
    assert np.array_equal(got["value"], expected.astype(np.float32) / 7)
    assert np.array_equal(got["flag"], expected % 3 == 0)
    assert np.array_equal(got["key"], expected.astype(np.uint64) * np.uint64(2654435761))


@pytest.mark.mpi
def test_agree_passes_when_no_rank_failed_and_keeps_input_error_fields(comm):
    comm.agree(None)
    error = InputError("uid", "must not be missing", count=3, first_index=5, value=None)
    with pytest.raises(InputError) as info:
        comm.agree(error if comm.rank == comm.size - 1 else None)
    assert (info.value.field, info.value.count, info.value.first_index) == ("uid", 3, 5)


@pytest.mark.mpi
def test_sum_returns_a_new_array(comm):
    local = np.full(5, comm.rank + 1.0)
    total = comm.sum(local)
    assert total is not local and np.all(local == comm.rank + 1.0)
    assert np.all(total == comm.size * (comm.size + 1) / 2)


@pytest.mark.mpi
def test_a_scratch_buffer_sums_on_any_ranks_and_is_the_sum_alone(comm):
    """``scratch=True``: the same sum, written over the buffer itself on every rank (no
    fresh result buffer: an in-place ``Allreduce``), also without a transport (one rank,
    no MPI); without it the input is left as it was."""
    from mpieval.comm import Comm

    local = np.full(5, comm.rank + 1.0)
    kept = comm.sum(local)
    assert np.all(kept == comm.size * (comm.size + 1) / 2)
    assert np.all(local == comm.rank + 1.0) and kept is not local
    total = comm.sum(local, scratch=True)
    assert np.all(total == comm.size * (comm.size + 1) / 2)
    assert total is local
    alone = np.arange(4.0)
    assert Comm.local().sum(alone, scratch=True) is alone
    assert Comm.local().sum(alone) is not alone


@pytest.mark.mpi
def test_started_sums_are_collected_later_in_order(comm):
    """Two sums in flight at once, collected after other work, then a blocking
    collective: each total is its own sum over the ranks; the inputs are unchanged."""
    first, second = np.full(3, comm.rank + 1.0), np.arange(4.0) * comm.rank
    started = [comm.start_sum(first), comm.start_sum(second)]
    first[:] = -1.0  # the sum took a copy: changing the input now changes nothing
    assert np.all(started[0].result() == comm.size * (comm.size + 1) / 2)
    assert started[1].result().tolist() == (np.arange(4.0) * sum(range(comm.size))).tolist()
    assert np.all(second == np.arange(4.0) * comm.rank)
    assert comm.sum(np.ones(1))[0] == comm.size


def _run(code: str, env: dict[str, str] | None = None, launcher: list[str] | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*(launcher or []), sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, env=full_env, timeout=timeout)


COMPUTE_ONE_RANK = """
    import numpy as np
    from mpieval import AucMetric
    m = AucMetric(table_size=100)
    m.update(np.array([0.1, 0.9]), np.array([0, 1]))
    print(m.comm.size, m.compute().auc)
"""


def test_runs_as_one_rank_without_mpi4py():
    blocker = "import sys; sys.modules['mpi4py'] = None\n"  # ImportError on import
    result = _run(blocker + textwrap.dedent(COMPUTE_ONE_RANK))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "1.0"]


def test_runs_as_one_rank_with_mpi_switched_off_and_without_a_launcher():
    for env in ({"MPIEVAL_NO_MPI": "1"}, {}):
        result = _run(COMPUTE_ONE_RANK, env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["1", "1.0"]


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec beside this python")
def test_unhandled_error_on_one_rank_ends_the_job_instead_of_hanging():
    code = """
        import numpy as np
        from mpieval import AucMetric
        from mpieval.comm import abort_on_unhandled_error
        abort_on_unhandled_error()
        m = AucMetric(table_size=100)
        if m.comm.rank == 1:
            raise RuntimeError("trainer crashed on rank 1")
        m.compute()  # rank 0 would wait here forever
    """
    start = time.monotonic()
    result = _run(code, launcher=[MPIEXEC, "-n", "2"], timeout=60)
    seconds = time.monotonic() - start
    seen = f"status {result.returncode} after {seconds:.1f} s; stderr:\n{result.stderr}"
    assert result.returncode != 0, seen
    assert "trainer crashed on rank 1" in result.stderr, seen
    assert seconds < 30, seen


@pytest.mark.parametrize(("environ", "launched"), [
    ({"HOME": "/root", "PATH": "/bin"}, False),
    ({"PMI_RANK": "0", "PMI_SIZE": "4"}, True),  # MPICH / Intel MPI hydra
    ({"OMPI_COMM_WORLD_SIZE": "4"}, True),  # Open MPI
    ({"PMIX_RANK": "3"}, True),  # PMIx launchers
    ({"SLURM_PROCID": "0"}, True),  # srun
    ({"MV2_COMM_WORLD_SIZE": "2"}, True),  # MVAPICH
    ({"PALS_RANKID": "1"}, True),  # HPE PALS
])
def test_launched_by_mpi_reads_the_launchers_variables(environ, launched):
    from mpieval.comm import launched_by_mpi

    assert launched_by_mpi(environ) is launched


@pytest.mark.parametrize(("environ", "set_here"), [
    ({"PMI_SIZE": "2", "MPI_LOCALNRANKS": "2"}, True),  # Hydra, every rank on this node
    ({"PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}, False),  # ranks on other nodes too
    ({"PMI_SIZE": "2"}, False),  # not Hydra's count of local ranks
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, False),  # Open MPI
    ({}, False),  # no launcher
    ({"PMI_SIZE": "2", "MPI_LOCALNRANKS": "2", "UCX_MEM_EVENTS": "yes"}, False),  # the user's
])
def test_ucx_memory_hooks_are_left_out_only_when_every_rank_is_on_this_node(
        environ, set_here, monkeypatch):
    from mpieval.transport import mpi

    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)  # as before MPI loads
    names = dict(environ)
    assert mpi.lighter_start_on_one_node(names) is set_here
    assert names == ({**environ, "UCX_MEM_EVENTS": "no"} if set_here else environ)


def test_ucx_memory_hooks_are_left_alone_once_mpi_is_loaded(monkeypatch):
    from mpieval.transport import mpi

    monkeypatch.setitem(sys.modules, "mpi4py.MPI", object())
    names = {"PMI_SIZE": "2", "MPI_LOCALNRANKS": "2"}
    assert not mpi.lighter_start_on_one_node(names)
    assert "UCX_MEM_EVENTS" not in names


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="needs mpiexec beside the interpreter")
def test_the_command_under_mpiexec_starts_mpi_without_ucx_memory_hooks(tmp_path):
    """Under ``mpiexec -n 2`` on one node the command's ranks load MPI with
    ``UCX_MEM_EVENTS=no`` (each prints what MPI was loaded with), and still agree."""
    path = tmp_path / "a.tsv"
    path.write_text("pred\tlabel\n0.2\t0\n0.7\t1\n0.4\t1\n")
    code = f"""
        import os, sys
        from mpieval import cli
        status = cli.main(["eval", {str(path)!r}])
        # one write a rank (print writes its parts apart: the ranks' lines could interleave)
        os.write(2, f"UCX_MEM_EVENTS {{os.environ.get('UCX_MEM_EVENTS')}}\\n".encode())
        assert "mpi4py.MPI" in sys.modules and status == 0
    """
    env = {k: v for k, v in os.environ.items() if k != "UCX_MEM_EVENTS"}
    result = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-c", textwrap.dedent(code)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("UCX_MEM_EVENTS no") == 2
    assert result.stdout.startswith("auc: auc=1 ")


def test_the_command_line_alone_does_not_load_mpi(tmp_path):
    """Without a launcher the command runs as one rank and never loads the MPI library."""
    path = tmp_path / "a.tsv"
    path.write_text("pred\tlabel\n0.2\t0\n0.7\t1\n")
    code = f"""
        import sys
        from mpieval import cli
        assert cli.main(["eval", {str(path)!r}]) == 0
        assert "mpi4py.MPI" not in sys.modules
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "MPI_LOCAL", "HYDI_", "MPIEVAL_NO_MPI"))}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("auc: auc=1 ")


# -- no silent partial result: the launcher's count against the communicator found -----

JOB_SIZE_VARIABLES = ["WORLD_SIZE", "PADDLE_TRAINERS_NUM", "SLURM_STEP_NUM_TASKS",
                      "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS",
                      "MV2_COMM_WORLD_SIZE", "PALS_SIZE"]


def _alone(**variables: str) -> dict[str, str]:
    """This environment without a launcher's variables, plus ``variables``."""
    env = {k: v for k, v in os.environ.items()
           if k not in JOB_SIZE_VARIABLES
           and not k.startswith(("PMI_", "PMIX_", "MPI_LOCAL", "HYDI_", "OMPI_", "MV2_",
                                 "PALS_", "SLURM_", "MPIEVAL_NO_MPI"))}
    return {**env, **variables}


@pytest.mark.parametrize("name", JOB_SIZE_VARIABLES)
def test_compute_refuses_a_part_of_the_job_naming_the_variable(name):
    """A process that a launcher says is one of 2, where comm=None finds one process:
    compute() raises naming the variable and comm=; Comm.local() opts out."""
    code = """
        import numpy as np
        from mpieval import AucMetric, Comm, InputError
        metric = AucMetric(table_size=100)
        metric.update(np.array([0.1, 0.9]), np.array([0, 1]))
        try:
            metric.compute()
        except InputError as error:
            print("refused:", error)
        alone = AucMetric(table_size=100, comm=Comm.local())
        alone.update(np.array([0.1, 0.9]), np.array([0, 1]))
        print("local:", alone.compute().num)
    """
    env = _alone(**{name: "2"}, MPIEVAL_NO_MPI="1")  # an MPI launcher's, without MPI
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    refused, local = result.stdout.splitlines()
    assert refused.startswith(f"refused: {name}: is 2"), refused
    assert "comm=" in refused and "Comm.local()" in refused
    assert local == "local: 2.0"


def test_a_launcher_of_one_process_or_none_is_no_error(monkeypatch):
    from mpieval.comm import Comm, job_size_said

    for name in JOB_SIZE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert job_size_said() is None
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "not a number")
    assert job_size_said() is None
    monkeypatch.setenv("MPIEVAL_NO_MPI", "1")
    assert Comm.resolve(None).size == 1
    monkeypatch.setenv("PMI_SIZE", "3")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert job_size_said() == ("PMI_SIZE", 3)  # the largest count said
    with pytest.raises(InputError, match=r"^PMI_SIZE: is 3"):
        Comm.resolve(None)
    assert Comm.resolve(Comm.local()).size == 1  # a communicator given: no check


def test_the_command_line_refuses_a_part_of_the_job_on_every_process(tmp_path):
    """Two processes of a torchrun-like job (WORLD_SIZE=2, no MPI launcher): each exits 2
    with the message, rather than printing its half as the result."""
    path = tmp_path / "a.tsv"
    path.write_text("pred\tlabel\n0.2\t0\n0.7\t1\n")
    procs = [subprocess.Popen([sys.executable, "-m", "mpieval", "eval", str(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_alone(WORLD_SIZE="2", RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert out == ""
        assert err.startswith("mpieval: error: WORLD_SIZE: is 2"), err
        assert "mpiexec -n N" in err


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec beside this python")
def test_the_command_line_under_mpiexec_without_mpi_refuses_on_every_rank(tmp_path):
    path = tmp_path / "a.tsv"
    path.write_text("pred\tlabel\n0.2\t0\n0.7\t1\n")
    # -disable-auto-cleanup: the launcher lets each rank end on its own, as the test asks
    # of each, rather than ending the others once the first rank has exited with 2 (on a
    # busy machine, before the slower rank had said why)
    result = subprocess.run([MPIEXEC, "-disable-auto-cleanup", "-n", "2", sys.executable, "-m",
                             "mpieval", "eval", str(path)], capture_output=True, text=True,
                            timeout=120, env=_alone(MPIEVAL_NO_MPI="1"))
    assert result.returncode == 2, result.stderr
    # counted in the whole text, not by line: the launcher forwards the two ranks' stderr
    # as it reads it, so one rank's line can land inside the other's
    messages = result.stderr.split("mpieval: error: ")[1:]
    assert len(messages) == 2, result.stderr
    assert all(message.startswith("PMI_SIZE: is 2") for message in messages), result.stderr


@pytest.mark.mpi
def test_under_mpiexec_the_world_is_the_whole_job(comm):
    """mpiexec's variables count the world's ranks: comm=None finds them all, no error."""
    from mpieval.comm import Comm, job_size_said

    said = job_size_said()
    assert said is None or said[1] == comm.size
    assert Comm.resolve(None).size == comm.size


def test_each_library_is_imported_by_its_transport_only_and_no_transport_imports_comm():
    """mpi4py, torch and paddle each in one module of mpieval.transport; nothing there
    imports mpieval.comm back (no import circle)."""
    import ast
    from pathlib import Path

    import mpieval

    package = Path(mpieval.__file__).parent
    importers: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        name = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found = [node.module or ""]
            else:
                continue
            for module in found:
                importers.setdefault(module.split(".")[0], set()).add(name)
                if module.startswith("mpieval.comm"):
                    assert not name.startswith("transport/"), name
    assert importers["mpi4py"] == {"transport/mpi.py"}
    assert importers["torch"] == {"transport/torch.py"}
    assert importers["paddle"] == {"transport/paddle.py"}
