"""The transports under :class:`mpieval.comm.Comm`: the few primitives each communication
library gives (:mod:`~mpieval.transport.protocol`), on which ``comm`` builds every
collective mpieval makes.

- :mod:`~mpieval.transport.mpi`: an MPI communicator, the only module that imports mpi4py;
- :mod:`~mpieval.transport.torch`, :mod:`~mpieval.transport.paddle`: a
  ``torch.distributed`` or Paddle process group, each the only module that imports its
  library, loaded only when such a group is given (:func:`of_group`) or initialised
  (:func:`initialised_group`); what they share is :mod:`~mpieval.transport.group`'s;
- :mod:`~mpieval.transport.waiting`: how a rank waits for the others, without spinning.

None of them imports :mod:`mpieval.comm`.
"""

from __future__ import annotations

import sys
from typing import Any

from mpieval.transport.protocol import Transport

__all__ = ["Transport", "initialised_group", "of_group"]


def of_group(group: Any) -> Transport | None:
    """The transport of a ``torch.distributed`` or Paddle process group (its library's
    transport loaded now); None for another object (an mpi4py communicator)."""
    kind = type(group).__module__
    if "torch" in sys.modules and kind.startswith("torch"):
        from mpieval.transport.torch import TorchTransport

        return TorchTransport.of(group)
    if "paddle" in sys.modules and kind.startswith("paddle"):
        from mpieval.transport.paddle import PaddleTransport

        return PaddleTransport.of(group)
    return None


def initialised_group() -> Any | None:
    """torch's default group when this process initialised ``torch.distributed``, else
    Paddle's when it initialised Paddle's parallel environment; else None (neither
    library imported here)."""
    torch_dist = sys.modules.get("torch.distributed")
    if torch_dist is not None and torch_dist.is_available() and torch_dist.is_initialized():
        return torch_dist.group.WORLD
    paddle_dist = sys.modules.get("paddle.distributed")
    if paddle_dist is not None and paddle_dist.is_initialized():
        return paddle_dist.get_group()
    return None
