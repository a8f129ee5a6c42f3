"""glibc's tuning (mpieval.memory): in a module of its own, and doing what it says."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mpieval
from mpieval import memory

# In a fresh process (glibc's mmap threshold at its start, 128 KiB): a block of 2 T
# (T = memory.MMAP_THRESHOLD) is mapped on its own, and so is one of T / 2 unless
# map_large_blocks() fixed the threshold at T. Prints how many mapped blocks each of the two
# added (mallinfo2's hblks).
_PROBE = """
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
if sys.argv[1] == "tuned":
    memory.map_large_blocks()
for size in (2 * T, T // 2):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    print(libc.mallinfo2().hblks - before)
    libc.free(block)
memory.trim_heap()
"""


def _glibc_has_mallinfo2() -> bool:
    import ctypes

    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="glibc 2.33 or later only")
def test_map_large_blocks_maps_blocks_of_its_threshold_or_more_only():
    mapped = {how: subprocess.run([sys.executable, "-c", _PROBE, how], check=True,
                                  capture_output=True, text=True).stdout.split()
              for how in ("default", "tuned")}
    assert mapped == {"default": ["1", "1"], "tuned": ["1", "0"]}


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
