"""What the command line's own process sets before numpy loads (imported first by the
package, so it runs before any module that imports numpy; no numpy here).

numpy's OpenBLAS starts a thread per core when it loads, and each spins for a while
before it sleeps: about 0.12 s of CPU a process on a 2-core machine, and under ``mpiexec``
every rank of a node starts one per core of the node. No value of a run calls the BLAS
(``tests/test_blas_threads.py``), so the command's process gives it one thread. Only the
command's: a trainer that imports mpieval keeps its BLAS as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping, Sequence

BLAS_THREADS = ("OPENBLAS_NUM_THREADS",)
"""The variables set (when unset): OpenBLAS's, the BLAS of numpy's wheels."""


def is_the_command(argv: Sequence[str], orig_argv: Sequence[str]) -> bool:
    """Whether this process is the ``mpieval`` command: its console script, or
    ``python -m mpieval`` (``orig_argv``: the interpreter's own arguments)."""
    script = os.path.basename(argv[0]) if argv else ""
    return script == "mpieval" or list(orig_argv[1:3]) == ["-m", "mpieval"]


def one_blas_thread(environ: MutableMapping[str, str] | None = None,
                    argv: Sequence[str] | None = None,
                    orig_argv: Sequence[str] | None = None) -> bool:
    """Give numpy's BLAS one thread in the command's process, before numpy loads, unless
    the variable is set (a user's choice stays). Returns whether it set one."""
    names = os.environ if environ is None else environ
    if "numpy" in sys.modules and environ is None:
        return False
    if not is_the_command(sys.argv if argv is None else argv,
                          getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv):
        return False
    changed = False
    for name in BLAS_THREADS:
        if name not in names:
            names[name] = "1"
            changed = True
    return changed


one_blas_thread()
