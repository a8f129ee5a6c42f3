"""A small CTR model trained with mpieval's metrics in an mpi4py program.

    mpiexec -n 2 python scripts/example_mpi_trainer.py --checkpoint ckpt
    # stopped mid-pass (--stop-after 1:4 = pass 1, step 4)? Start it again: it resumes.

The same job as ``example_torch_trainer.py`` without torch: each step's batch of
synthetic clicks is split over the ranks (so a pass sees the same rows on any number of
them), a logistic model in numpy whose gradients every rank sums with one ``Allreduce``,
and the metrics on the trainer's communicator (mpieval shares one duplicate of it,
whatever the number of metrics created). After each pass rank 0 prints the Abacus lines
of the pass, and the AUC of the recent window (each rank's last 500 rows, as in TorchRec:
on N ranks the job's window is up to N * 500 rows, so its line depends on N) beside the
pass's; with ``--checkpoint DIR`` each rank saves the model and the metrics' state after
each step, and a restart, on any number of ranks, goes on from there: the pass's lines
are those of a run never stopped (the window's too when the restart has as many ranks).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from mpi4py import MPI

from mpieval import AucMetric, Evaluator, PairwiseMetric, WuaucMetric, checkpoint
from mpieval.comm import abort_on_unhandled_error

FEATURES, USERS, BATCH = 8, 200, 240  # a step's rows, over all ranks
WINDOW = 500  # the recent window: each rank's last rows


def batch(pass_index: int, step: int, rank: int, size: int) -> dict[str, np.ndarray]:
    """This rank's share of a step's synthetic clicks (every ``size``-th row from
    ``rank``): features, a user id, a click whose odds the features drive."""
    rng = np.random.default_rng([pass_index, step])
    x = rng.normal(size=(BATCH, FEATURES))
    logit = x @ np.linspace(-1, 1, FEATURES) - 1.0
    rows = {"x": x, "click": (rng.random(BATCH) < 1 / (1 + np.exp(-logit))).astype(np.int64),
            "uid": rng.integers(0, USERS, BATCH),
            "shown_first": (rng.random(BATCH) < 0.5).astype(np.int64)}
    return {name: column[rank::size] for name, column in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--stop-after", help="PASS:STEP, to try a resume")
    args = parser.parse_args()
    abort_on_unhandled_error()  # an exception on one rank ends the job, no hang
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    weights = np.zeros(FEATURES + 1)  # the model: 8 weights and a bias
    ev = Evaluator({"ctr": AucMetric(table_size=1000, window=WINDOW), "user": WuaucMetric(),
                    "order": PairwiseMetric()}, comm=comm)
    start = (0, 0)
    if args.checkpoint and (args.checkpoint / "progress.npz").exists():
        with np.load(args.checkpoint / "progress.npz") as saved:
            weights, start, saved_size = saved["weights"], tuple(saved["position"]), saved["size"]
        mine = checkpoint.shares(int(saved_size), rank, size)
        ev.load_state_dicts([checkpoint.load(args.checkpoint / f"metrics-{i}.npz")
                             for i in mine])
    for pass_index in range(start[0], args.passes):
        for step in range(start[1] if pass_index == start[0] else 0, args.steps):
            data = batch(pass_index, step, rank, size)
            pred = 1 / (1 + np.exp(-(data["x"] @ weights[:-1] + weights[-1])))
            gradient = np.append(data["x"].T @ (pred - data["click"]), np.sum(pred - data["click"]))
            total = np.empty_like(gradient)
            comm.Allreduce(gradient, total)
            weights = weights - 0.1 * total / BATCH  # the mean over the step's rows
            ev["ctr"].update(pred, data["click"])
            ev["user"].update(data["uid"], pred, data["click"])
            ev["order"].update(data["click"], data["shown_first"])
            if args.checkpoint:
                save(args.checkpoint, weights, ev, comm, (pass_index, step + 1))
            if args.stop_after == f"{pass_index}:{step}":
                return
        results = ev.compute()  # collective: every rank
        if rank == 0:
            print(f"pass {pass_index}", flush=True)
            for line in Evaluator.log_lines(results):
                print(line, flush=True)
            recent = results["ctr"].window  # the pass's values are in the line above
            print(f"ctr recent: auc={recent.auc:g} num={recent.num:g} "
                  f"(each rank's last {WINDOW} rows)", flush=True)
        ev.reset()


def save(directory: Path, weights: np.ndarray, ev: Evaluator, comm, position) -> None:
    """This rank's metric state; rank 0 also the model and where it was (each file is
    written atomically, the progress last)."""
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint.save(directory / f"metrics-{comm.Get_rank()}.npz", ev.state_dict())
    comm.Barrier()
    if comm.Get_rank() == 0:
        partial = directory / ".progress.npz"
        np.savez(partial, weights=weights, position=np.array(position),
                 size=comm.Get_size())
        os.replace(partial, directory / "progress.npz")


if __name__ == "__main__":
    main()
