"""``python -m mpieval``: the same as the ``mpieval`` command."""

import sys

from mpieval.cli import main

sys.exit(main())
