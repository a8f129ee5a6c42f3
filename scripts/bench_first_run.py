"""The first run in a fresh environment against the runs after it (issue 20).

    .venv/bin/python scripts/bench_first_run.py                # 3 fresh environments
    .venv/bin/python scripts/bench_first_run.py --repeats 5

Builds the package's wheel once (``pip wheel . --no-deps``: the kernels compiled ahead of
time, as a cluster installs them), then, ``--repeats`` times: a new virtual environment
in a temporary folder, the wheel and its dependencies installed into it from pip's cache
(``pip install WHEEL[mpich]``: MPI from pip, as the README's set-up does), and in it
``mpieval eval --metrics auc,wuauc,pn --tag tag --compare pred_b`` on 200,000 rows (of
``scripts/traffic.py``'s ``--shape``) run once (the first run of that environment), then
five times more. The figure: the first
run's wall time against the median of the next five, per environment (target: at most
1.2x; with kernels compiled at run time, the first run paid their compilation, on every
rank). Also prints the environment's site-packages size (``du``), and whether a JIT
compiler (numba, llvmlite) is in it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import traffic

ROOT = Path(__file__).resolve().parent.parent
ROWS = 200_000
COMMAND = ["eval", "--metrics", "auc,wuauc,pn", "--tag", "tag", "--compare", "pred_b"]


def write_data(path: Path, shape: str) -> None:
    """200,000 rows of uid, pred, label, tag, pred_b of the shape (``scripts/traffic.py``)."""
    traffic.write(path, ROWS, shape, seed=7, pred_b=True)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def site_packages_mb(venv: Path) -> tuple[int, list[str]]:
    """The environment's site-packages in MB and the JIT compilers found in it."""
    (site,) = venv.glob("lib/python*/site-packages")
    size = int(subprocess.run(["du", "-sm", str(site)], check=True, capture_output=True,
                              text=True).stdout.split()[0])
    jits = [name for name in ("numba", "llvmlite") if (site / name).exists()]
    return size, jits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh environments")
    traffic.add_shape_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpieval-first-run-") as tmp:
        work = Path(tmp)
        data = work / "data.tsv"
        write_data(data, args.shape)
        wheels = work / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--wheel-dir", str(wheels), str(ROOT)], check=True)
        (wheel,) = wheels.glob("mpieval-*.whl")
        ratios = []
        for k in range(args.repeats):
            venv = work / f"venv{k}"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", f"{wheel}[mpich]"], check=True)
            mpieval = [str(venv / "bin" / "mpieval"), *COMMAND, str(data)]
            first = timed(mpieval)
            after = statistics.median(timed(mpieval) for _ in range(5))
            ratios.append(first / after)
            size, jits = site_packages_mb(venv)
            print(f"environment {k + 1}: first run {first:.2f} s, next five (median) "
                  f"{after:.2f} s: {first / after:.2f}x; site-packages {size} MB; JIT "
                  f"compilers: {', '.join(jits) or 'none'}", flush=True)
        worst = max(ratios)
        print(f"first run against the next: median {statistics.median(ratios):.2f}x, highest "
              f"{worst:.2f}x ({'meets' if worst <= 1.2 else 'MISSES'} target <= 1.2x)")


if __name__ == "__main__":
    main()
