"""mpieval: Abacus/Paddle CTR metrics over MPI, exact on any number of ranks.

Trainer use, on every rank::

    from mpieval import AucMetric
    metric = AucMetric(comm=trainer_comm)      # any mpi4py communicator; None = world
    for pred, label in batches:
        metric.update(pred, label)             # local
    result = metric.compute()                  # collective; same result on every rank
    print(result.to_log_line("item_sim"))
    metric.reset()

Importing the package does not load MPI: it is loaded when a communicator is first
resolved. The kernels are compiled ahead of time (the extension module ``mpieval._core``).
"""

from __future__ import annotations

from mpieval.comm import Comm
from mpieval.errors import InputError, RemoteError, UndefinedMetricWarning
from mpieval.metric import Evaluator, Metric, compute_all
from mpieval.metrics.auc import AucMetric, AucResult
from mpieval.metrics.pairwise import PairwiseMetric, PairwiseResult
from mpieval.metrics.pn import PnMetric, PnResult
from mpieval.metrics.wuauc import WuaucMetric, WuaucResult

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
