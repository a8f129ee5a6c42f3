"""glibc's tuning (mpieval.memory): in a module of its own, and doing what it says."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mpieval
from mpieval import memory

# Both probes' start: glibc's malloc, free and mallinfo2 (its counters) through ctypes.
_MALLINFO = """
import ctypes, sys
from mpieval import memory

T = memory.MMAP_THRESHOLD

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
"""

# In a fresh process (glibc's mmap threshold at its start, 128 KiB): a block of 2 T
# (T = memory.MMAP_THRESHOLD) is mapped on its own, and so is one of T / 2 unless
# map_large_blocks() fixed the threshold at T. Prints how many mapped blocks each of the two
# added (mallinfo2's hblks).
_PROBE = _MALLINFO + """
if sys.argv[1] == "tuned":
    memory.map_large_blocks()
for size in (2 * T, T // 2):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    print(libc.mallinfo2().hblks - before)
    libc.free(block)
memory.trim_heap()
"""


# In a fresh process whose mmap threshold is fixed at T (as map_large_blocks fixes it): a
# freed block of T / 2 from the heap's top stays in the heap (its arena) when
# map_large_blocks() set the trim threshold, and is given back at once with glibc's default
# one; trim_heap() gives it back either way. Prints both answers.
_KEPT_PROBE = _MALLINFO + """
libc.mallopt(memory._M_MMAP_THRESHOLD, T)
if sys.argv[1] == "tuned":
    memory.map_large_blocks()
block = libc.malloc(T // 2)
libc.free(block)
print(libc.mallinfo2().arena >= T // 2)
memory.trim_heap()
print(libc.mallinfo2().arena < T // 2)
"""


def _glibc_has_mallinfo2() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


def _probed(script: str) -> dict[str, list[str]]:
    """What a probe prints in a fresh interpreter, with glibc's default and tuned."""
    return {how: subprocess.run([sys.executable, "-c", script, how], check=True,
                                capture_output=True, text=True).stdout.split()
            for how in ("default", "tuned")}


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="glibc 2.33 or later only")
def test_map_large_blocks_maps_blocks_of_its_threshold_or_more_only():
    assert _probed(_PROBE) == {"default": ["1", "1"], "tuned": ["1", "0"]}


def test_the_threshold_leaves_a_batch_of_columns_to_the_heap():
    # a batch's float64 column (the readers' batches of up to 1M rows) is reused from the
    # heap, not mapped and zeroed anew each batch; glibc takes at most 32 MiB
    assert 8 << 20 < memory.MMAP_THRESHOLD <= 32 << 20


def test_only_the_memory_module_calls_into_c_libraries():
    package = Path(mpieval.__file__).parent
    callers = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [alias.name for alias in node.names] + [getattr(node, "module", "")]
                if "ctypes" in names:
                    callers.add(path.relative_to(package).as_posix())
    assert callers == {"memory.py"}  # glibc


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="glibc 2.33 or later only")
def test_map_large_blocks_keeps_freed_heap_memory_until_trim_heap():
    assert _probed(_KEPT_PROBE) == {"default": ["False", "True"], "tuned": ["True", "True"]}
    assert memory.KEPT_FREE >= 8 * memory.MMAP_THRESHOLD  # rounds of blocks below it


def test_the_command_tunes_glibc_before_mpi_starts_for_a_per_user_eval_only(
        monkeypatch, capsys):
    """The command reads its line quietly before MPI starts: an eval of a per-user kind
    tunes glibc and numpy's huge pages; an eval of auc alone, another command, a line
    that does not parse (its error is reported later, by rank 0) and --help do not, and
    nothing is printed."""
    from mpieval import cli

    calls: list[int] = []
    monkeypatch.setattr(memory, "map_large_blocks", lambda: calls.append(1))
    monkeypatch.setattr(memory, "no_huge_pages", lambda: calls.append(2))
    for argv, tuned in [(["eval", "--metrics", "auc,pn", "--uid", "u", "f.tsv"], True),
                        (["eval", "--metrics", "wuauc", "--uid", "u", "f.tsv"], True),
                        (["eval", "--metrics", "auc", "f.tsv"], False),
                        (["eval", "f.tsv"], False),
                        (["gate", "run.json", "rules.toml"], False),
                        (["eval", "--no-such-flag"], False), (["--help"], False)]:
        calls.clear()
        cli._tune_memory(argv)
        assert calls == ([1, 2] if tuned else []), argv
    assert capsys.readouterr() == ("", "")


# In a fresh process: a 64 MiB array touched page by page, and the huge pages the kernel
# gave the mappings that hold it (/proc/self/smaps' AnonHugePages, kB), with numpy's
# default and after no_huge_pages(); and numpy's setting then (its setter returns it).
_HUGE_PROBE = """
import sys
import numpy as np
from mpieval import memory

if sys.argv[1] == "tuned":
    print(memory.no_huge_pages())
array = np.empty(64 << 20, np.uint8)
array[::4096] = 1
first = array.__array_interface__["data"][0]
end = first + array.nbytes
huge = 0  # over every mapping of the array (numpy's advice splits its mapping)
with open("/proc/self/smaps") as smaps:
    for line in smaps:
        head = line.split()[0]
        if "-" in head and ":" not in head:
            low, high = (int(x, 16) for x in head.split("-"))
            inside = low < end and first < high
        elif inside and head == "AnonHugePages:":
            huge += int(line.split()[1])
print(huge)
setter = memory._numpy_hugepage_setter()
print(setter(False))
"""


def _thp_left_to_madvise() -> bool:
    try:
        return "[madvise]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False


def test_no_huge_pages_leaves_numpy_setting_alone_when_numpy_madvise_hugepage_is_set():
    assert memory.no_huge_pages({"NUMPY_MADVISE_HUGEPAGE": "1"}) is False
    run = subprocess.run([sys.executable, "-c", _HUGE_PROBE, "tuned"], check=True,
                         capture_output=True, text=True,
                         env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": "1"})
    tuned, _, setting = run.stdout.split()
    assert (tuned, setting) == ("False", "True")


@pytest.mark.skipif(not _thp_left_to_madvise(),
                    reason="the kernel gives huge pages to every array, or none")
def test_no_huge_pages_leaves_numpy_arrays_on_small_pages():
    env = {name: value for name, value in os.environ.items()
           if name != "NUMPY_MADVISE_HUGEPAGE"}
    found = {how: subprocess.run([sys.executable, "-c", _HUGE_PROBE, how], check=True,
                                 capture_output=True, text=True, env=env).stdout.split()
             for how in ("default", "tuned")}
    huge, setting = found["default"]
    assert setting == "True"  # numpy asks for huge pages by default
    if huge == "0":
        pytest.skip("the kernel gave numpy's array no huge page (none free)")
    assert found["tuned"] == ["True", "0", "False"]
