"""A small PyTorch CTR model trained with mpieval's metrics, under torchrun (gloo).

    torchrun --nproc_per_node 2 scripts/example_torch_trainer.py --checkpoint ckpt
    # stopped mid-pass (--stop-after 1:4 = pass 1, step 4)? Start it again, on as many
    # processes or another number: it resumes.

Each step's batch of synthetic clicks is split over the processes (so a pass sees the
same rows on any number of them); every process trains a logistic model wrapped in
DistributedDataParallel on its share and feeds its predictions to the metrics
(``update`` takes the tensors as they are). After each pass rank 0 prints the Abacus
lines of the pass. With ``--checkpoint DIR`` every process saves the model, the optimizer
and the metrics' state after each step (the metrics' state is plain arrays: no
communicator); a restart loads them, on as many processes as before or another number,
and goes on, printing the lines of a run never stopped. The model is float64: the
gradients of another number of processes, added in another order, differ by float64's
roundings, far below the printed digits (float32's could show in them).
"""

from __future__ import annotations

import argparse
import gc
import os
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from mpieval import AucMetric, Evaluator, PairwiseMetric, WuaucMetric, checkpoint

FEATURES, USERS, BATCH = 8, 200, 240  # a step's rows, over all processes


def batch(pass_index: int, step: int, rank: int, size: int) -> dict[str, torch.Tensor]:
    """This process's share of a step's synthetic clicks (every ``size``-th row from
    ``rank``): features, a user id, a click whose odds the features drive."""
    rng = np.random.default_rng([pass_index, step])
    x = rng.normal(size=(BATCH, FEATURES))
    logit = x @ np.linspace(-1, 1, FEATURES) - 1.0
    rows = {"x": x, "click": (rng.random(BATCH) < 1 / (1 + np.exp(-logit))).astype(np.float64),
            "uid": rng.integers(0, USERS, BATCH),
            "shown_first": (rng.random(BATCH) < 0.5).astype(np.int64)}
    return {name: torch.from_numpy(column[rank::size].copy()) for name, column in rows.items()}


def metrics() -> Evaluator:
    """The metrics of a pass: on torch's default group (comm=None picks it)."""
    return Evaluator({"ctr": AucMetric(table_size=1000), "user": WuaucMetric(),
                      "order": PairwiseMetric()})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--stop-after", help="PASS:STEP, to try a resume")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    train(args)
    # DistributedDataParallel sits in a reference cycle: collect it now, while the group
    # lives, not at interpreter exit (a gloo group freed then ends the process in
    # terminate()); and every process is done before any tears the group down
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def train(args: argparse.Namespace) -> None:
    """The passes (from a checkpoint, if one is there), printing the metrics of each."""
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1, dtype=torch.float64))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ev = metrics()
    start = (0, 0)
    if args.checkpoint and (args.checkpoint / "progress.pt").exists():
        start = resume(args.checkpoint, model, optimizer, ev, rank, size)
    for pass_index in range(start[0], args.passes):
        for step in range(start[1] if pass_index == start[0] else 0, args.steps):
            data = batch(pass_index, step, rank, size)
            logit = model(data["x"]).squeeze(1)
            # the mean over the step's rows: DistributedDataParallel averages the processes'
            # gradients, so each one's share sums its rows and counts the processes
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logit, data["click"], reduction="sum") * size / BATCH
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            pred = torch.sigmoid(logit)  # a tensor with a graph: mpieval detaches it
            ev["ctr"].update(pred, data["click"])
            ev["user"].update(data["uid"], pred, data["click"])
            ev["order"].update(data["click"], data["shown_first"])
            if args.checkpoint:
                save(args.checkpoint, model, optimizer, ev, rank, (pass_index, step + 1))
            if args.stop_after == f"{pass_index}:{step}":
                return
        results = ev.compute()  # collective: every process
        if rank == 0:
            print(f"pass {pass_index}", flush=True)
            for line in Evaluator.log_lines(results):
                print(line, flush=True)
        ev.reset()


def save(directory: Path, model, optimizer, ev: Evaluator, rank: int, position) -> None:
    """This process's model, optimizer and metric state; rank 0 also notes where it was
    and on how many processes (each file is written atomically)."""
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint.save(directory / f"metrics-{rank}.npz", ev.state_dict())
    dist.barrier()  # every rank's metric state is on disk before the progress says so
    if rank == 0:
        partial = directory / ".progress.pt"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "position": position, "size": dist.get_world_size()}, partial)
        os.replace(partial, directory / "progress.pt")


def resume(directory: Path, model, optimizer, ev: Evaluator, rank: int, size: int):
    """Load the saved model and optimizer, and this process's share of the metric states
    saved by every process of the earlier run (any number of them)."""
    progress = torch.load(directory / "progress.pt")
    model.load_state_dict(progress["model"])
    optimizer.load_state_dict(progress["optimizer"])
    mine = checkpoint.shares(progress["size"], rank, size)
    ev.load_state_dicts([checkpoint.load(directory / f"metrics-{i}.npz") for i in mine])
    return progress["position"]


if __name__ == "__main__":
    main()
