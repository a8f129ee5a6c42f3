"""This tree's ``mpieval eval`` against another tree's, alternating, on the per-user path
and on ``--metrics auc`` (issue 37's per-user ratio for both trees in one sitting):

    .venv/bin/python scripts/bench_against.py OLD_TREE [--repeats 5] [--file FILE]

``OLD_TREE``: a source folder of the other tree with its compiled module built in place
(for example ``git worktree add /tmp/old REV`` and a copy of the built
``mpieval/_core*.so``; it runs from its source, as ``scripts/same_bits.py --source``
does). ``FILE``: default ``bench-data/10m-traffic.tsv`` (``scripts/traffic.py`` writes
it). Each repeat runs the per-user command (``--metrics auc,wuauc --uid uid --tag tag``)
and ``--metrics auc`` with each tree, the trees' order alternating; each command is a
process of its own, timed by its wall and its CPU (user + system, ``wait4``), after one
warm-up of each. Prints the medians, each tree's per-user / ``auc`` ratio (the median of
its repeats' ratios) and this tree / the other per command. Time with
``PYTHONDONTWRITEBYTECODE`` unset (a normal install's bytecode).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
_FROM_SOURCE = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path"
    " if 'editable' not in type(f).__module__.lower()];"
    " sys.path.insert(0, sys.argv.pop(1)); from mpieval.cli import command; sys.exit(command())"
)
JOBS = {"per-user": ["--metrics", "auc,wuauc", "--uid", "uid", "--tag", "tag"],
        "auc": ["--metrics", "auc"]}


def timed(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``command`` run to its end, output dropped."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: its output to /dev/null, then the command
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execv(command[0], command)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status})")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the other tree's source folder")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--file", type=Path, default=ROOT / "bench-data" / "10m-traffic.tsv")
    args = parser.parse_args()
    trees = {"this": [str(BIN / "mpieval")],
             "other": [sys.executable, "-c", _FROM_SOURCE, str(args.old)]}
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {
        (tree, job): [] for tree in trees for job in JOBS}
    for argv in JOBS.values():  # warm-up: the page cache, the bytecode
        for command in trees.values():
            timed([*command, "eval", *argv, str(args.file)])
    for repeat in range(args.repeats):
        order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
        for job, argv in JOBS.items():
            for tree in order:
                runs[(tree, job)].append(timed([*trees[tree], "eval", *argv, str(args.file)]))
    print(f"{args.file}, medians of {args.repeats}, load {os.getloadavg()[0]:.2f}")
    for (tree, job), times in runs.items():
        print(f"{tree:5} {job:8}: wall {statistics.median(t[0] for t in times):.2f} s, "
              f"CPU {statistics.median(t[1] for t in times):.2f} s")
    for tree in trees:
        pairs = list(zip(runs[(tree, "per-user")], runs[(tree, "auc")], strict=True))
        print(f"{tree}: per-user / auc: wall "
              f"{statistics.median(p[0] / a[0] for p, a in pairs):.2f}x, CPU "
              f"{statistics.median(p[1] / a[1] for p, a in pairs):.2f}x (target <= 2.0x)")
    for job in JOBS:
        pairs = list(zip(runs[("this", job)], runs[("other", job)], strict=True))
        print(f"{job}: this / other: wall {statistics.median(t[0] / o[0] for t, o in pairs):.2f}x,"
              f" CPU {statistics.median(t[1] / o[1] for t, o in pairs):.2f}x")


if __name__ == "__main__":
    main()
