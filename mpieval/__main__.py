"""``python -m mpieval``: the same as the ``mpieval`` command."""

import sys

from mpieval.cli import command

sys.exit(command())
