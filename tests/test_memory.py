"""glibc's tuning (mpieval.memory): in a module of its own, and doing what it says."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mpieval

# In a fresh process: a 4 MiB block freed raises glibc's mmap threshold to 4 MiB, so a
# 2 MiB block then comes from the heap, unless map_large_blocks() fixed the threshold at
# 1 MiB. Prints how many mapped blocks the 2 MiB one added (mallinfo2's hblks).
_PROBE = """
import ctypes, sys
from mpieval import memory

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
libc.free(libc.malloc(4 << 20))
before = libc.mallinfo2().hblks
block = libc.malloc(2 << 20)
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
def test_map_large_blocks_maps_a_block_of_2_mib_after_a_larger_one_was_freed():
    mapped = {how: int(subprocess.run([sys.executable, "-c", _PROBE, how], check=True,
                                      capture_output=True, text=True).stdout)
              for how in ("default", "tuned")}
    assert mapped == {"default": 0, "tuned": 1}


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
