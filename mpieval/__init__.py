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

from typing import Any

import mpieval._command_process  # noqa: F401  # first: before numpy loads
from mpieval.comm import Comm
from mpieval.errors import InputError, RemoteError, StateFormatError, UndefinedMetricWarning
from mpieval.kinds import KINDS
from mpieval.metric import Evaluator, Metric, compute_all

# Each kind's classes (AucMetric, AucResult, ...), imported from its folder on first use.
_KIND_EXPORTS = {name: kind for kind in KINDS.values() for name in kind.exports}

__all__ = [
    "Comm",
    "Evaluator",
    "InputError",
    "Metric",
    "RemoteError",
    "StateFormatError",
    "UndefinedMetricWarning",
    "compute_all",
]
__all__ += list(_KIND_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # one source: the package's metadata (pyproject.toml)
        from importlib.metadata import version

        return version("mpieval")
    kind = _KIND_EXPORTS.get(name)
    if kind is None:
        raise AttributeError(f"module 'mpieval' has no attribute {name!r}")
    return getattr(kind.load_module(), name)
