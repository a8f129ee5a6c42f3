"""mpieval: Abacus/Paddle CTR metrics over MPI, exact on any number of ranks.

Trainer use, on every rank::

    from mpieval import AucMetric
    metric = AucMetric(comm=trainer_comm)      # any mpi4py communicator; None = world
    for pred, label in batches:
        metric.update(pred, label)             # local
    result = metric.compute()                  # collective; same result on every rank
    print(result.to_log_line("item_sim"))
    metric.reset()

The names below are imported on first use, so that ``import mpieval.cli`` does not load
numba (about 0.2 s): the command line loads the compiled kernels on a background thread
while it reads (:func:`mpieval.cli.main`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mpieval.comm import Comm
    from mpieval.errors import InputError, RemoteError, UndefinedMetricWarning
    from mpieval.metric import Evaluator, Metric, compute_all
    from mpieval.metrics.auc import AucMetric, AucResult
    from mpieval.metrics.pairwise import PairwiseMetric, PairwiseResult
    from mpieval.metrics.pn import PnMetric, PnResult
    from mpieval.metrics.wuauc import WuaucMetric, WuaucResult

_HOMES = {
    "AucMetric": "mpieval.metrics.auc",
    "AucResult": "mpieval.metrics.auc",
    "Comm": "mpieval.comm",
    "Evaluator": "mpieval.metric",
    "InputError": "mpieval.errors",
    "Metric": "mpieval.metric",
    "PairwiseMetric": "mpieval.metrics.pairwise",
    "PairwiseResult": "mpieval.metrics.pairwise",
    "PnMetric": "mpieval.metrics.pn",
    "PnResult": "mpieval.metrics.pn",
    "RemoteError": "mpieval.errors",
    "UndefinedMetricWarning": "mpieval.errors",
    "WuaucMetric": "mpieval.metrics.wuauc",
    "WuaucResult": "mpieval.metrics.wuauc",
    "compute_all": "mpieval.metric",
}

__all__ = [
    "AucMetric",
    "AucResult",
    "Comm",
    "Evaluator",
    "InputError",
    "Metric",
    "PairwiseMetric",
    "PairwiseResult",
    "PnMetric",
    "PnResult",
    "RemoteError",
    "UndefinedMetricWarning",
    "WuaucMetric",
    "WuaucResult",
    "compute_all",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mpieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
