"""How a rank waits for the others: polling with sleeps, never spinning.

MPI implementations busy-poll inside a blocking collective; with more ranks than free
cores (a laptop, a shared CI machine) a rank spinning in a collective steals the CPU from
the rank it waits for (docs/design.md, Layers: communication). So the transports meet
before a collective by polling something non-blocking (MPI: a non-blocking barrier;
Paddle: a count on the job's store), and a sum started without waiting is collected the
same way (:meth:`mpieval.comm.PendingSum.result`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

_FIRST_NAP, _LONGEST_NAP = 20e-6, 2e-3  # seconds

# Set when this process was interrupted (SIGINT, noted by the command line's handler): a
# rank waiting for the others stops waiting, so that the interrupt ends it (see
# mpieval.comm.abort).
_interrupted = False


def note_interrupt() -> None:
    """Record an interrupt (called from a SIGINT handler): :func:`wait_until` then raises
    KeyboardInterrupt instead of waiting on."""
    global _interrupted
    _interrupted = True


def wait_until(complete: Callable[[], Any]) -> None:
    """Poll ``complete`` until it is true, sleeping between polls (longer and longer, up
    to ``_LONGEST_NAP``). An interrupt (:func:`note_interrupt`) ends the wait with
    KeyboardInterrupt."""
    nap = _FIRST_NAP
    while not complete():
        if _interrupted:
            raise KeyboardInterrupt
        time.sleep(nap)
        nap = min(2 * nap, _LONGEST_NAP)
