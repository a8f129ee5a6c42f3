"""A small Paddle CTR model trained with mpieval's metrics, under Paddle's launcher (CPU).

    python -m paddle.distributed.launch --nproc_per_node 2 \\
        scripts/example_paddle_trainer.py --checkpoint ckpt
    # stopped mid-pass (--stop-after 1:4 = pass 1, step 4)? Start it again, on as many
    # processes or another number: it resumes.

Each step's batch of synthetic clicks is split evenly over the processes (so a pass sees
the same rows on any number of them); every process trains a logistic model wrapped in
``paddle.DataParallel`` on its share and feeds its predictions to the metrics (``update``
takes the tensors as they are). After each pass rank 0 prints the Abacus lines of the
pass. With ``--checkpoint DIR`` every process saves the metrics' state after each step
(plain arrays: no communicator), rank 0 the model and the optimizer; a restart loads them
and goes on.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import paddle
import paddle.distributed as dist

from mpieval import AucMetric, Evaluator, WuaucMetric, checkpoint

FEATURES, USERS, BATCH = 8, 200, 240  # a batch splits evenly over 1 to 6 processes


def batch(pass_index: int, step: int, rank: int, size: int) -> dict[str, paddle.Tensor]:
    """This process's share of a step's synthetic clicks: features, a user id, a click
    whose odds the features drive."""
    rng = np.random.default_rng([pass_index, step])
    x = rng.normal(size=(BATCH, FEATURES)).astype(np.float32)
    logit = x @ np.linspace(-1, 1, FEATURES, dtype=np.float32) - 1.0
    click = (rng.random(BATCH) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    uid = rng.integers(0, USERS, BATCH)
    share = slice(rank, None, size)
    return {"x": paddle.to_tensor(x[share]), "click": paddle.to_tensor(click[share]),
            "uid": paddle.to_tensor(uid[share])}


def metrics() -> Evaluator:
    """The metrics of a pass: on Paddle's default group (comm=None picks it)."""
    return Evaluator({"ctr": AucMetric(table_size=1000), "user": WuaucMetric()})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--stop-after", help="PASS:STEP, to try a resume")
    args = parser.parse_args()
    paddle.set_device("cpu")
    dist.init_parallel_env()  # one process: no group, and comm=None is that process
    train(args)
    if dist.get_world_size() > 1:
        dist.barrier()  # every process done before any leaves


def train(args: argparse.Namespace) -> None:
    """The passes (from a checkpoint, if one is there), printing the metrics of each."""
    rank, size = dist.get_rank(), dist.get_world_size()
    paddle.seed(0)
    model = paddle.nn.Linear(FEATURES, 1)
    trained = paddle.DataParallel(model) if size > 1 else model
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    ev = metrics()
    start = (0, 0)
    if args.checkpoint and (args.checkpoint / "progress.pdparams").exists():
        start = resume(args.checkpoint, model, optimizer, ev, rank, size)
    for pass_index in range(start[0], args.passes):
        for step in range(start[1] if pass_index == start[0] else 0, args.steps):
            data = batch(pass_index, step, rank, size)
            logit = trained(data["x"]).squeeze(1)
            loss = paddle.nn.functional.binary_cross_entropy_with_logits(logit, data["click"])
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            pred = paddle.nn.functional.sigmoid(logit)  # with a graph: mpieval detaches it
            ev["ctr"].update(pred, data["click"])
            ev["user"].update(data["uid"], pred, data["click"])
            if args.checkpoint:
                save(args.checkpoint, model, optimizer, ev, rank, size, (pass_index, step + 1))
            if args.stop_after == f"{pass_index}:{step}":
                return
        results = ev.compute()  # collective: every process
        if rank == 0:
            print(f"pass {pass_index}", flush=True)
            for line in Evaluator.log_lines(results):
                print(line, flush=True)
        ev.reset()


def save(directory: Path, model, optimizer, ev: Evaluator, rank: int, size: int,
         position: tuple[int, int]) -> None:
    """This process's metric state; rank 0 also the model, the optimizer, where it was
    and on how many processes (each file written whole, then renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint.save(directory / f"metrics-{rank}.npz", ev.state_dict())
    if size > 1:
        dist.barrier()  # every rank's metric state is on disk before the progress says so
    if rank == 0:
        partial = directory / ".progress.pdparams"
        paddle.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                     "position": list(position), "size": size}, str(partial))
        os.replace(partial, directory / "progress.pdparams")


def resume(directory: Path, model, optimizer, ev: Evaluator, rank: int, size: int):
    """Load the saved model and optimizer, and this process's share of the metric states
    saved by every process of the earlier run (any number of them)."""
    progress = paddle.load(str(directory / "progress.pdparams"))
    model.set_state_dict(progress["model"])
    optimizer.set_state_dict(progress["optimizer"])
    mine = checkpoint.shares(int(progress["size"]), rank, size)
    ev.load_state_dicts([checkpoint.load(directory / f"metrics-{i}.npz") for i in mine])
    return tuple(int(i) for i in progress["position"])


if __name__ == "__main__":
    main()
