"""The entry point for ``spark-submit``: ``mpieval eval`` over the cluster's Spark.

::

    spark-submit --master yarn --num-executors 50 --executor-cores 4 \\
        "$(python -c 'import mpieval.spark.submit as s; print(s.__file__)')" \\
        eval table:ads.dumps --metrics auc,wuauc --uid user --json result.json

The arguments are ``mpieval``'s; ``eval`` runs with ``--engine spark`` (added when not
given), in the session spark-submit set up.
"""

from __future__ import annotations

import runpy
import sys


def arguments(argv: list[str]) -> list[str]:
    """``argv`` with ``--engine spark`` for ``eval`` when no engine is named."""
    if argv[:1] == ["eval"] and not any(a == "--engine" or a.startswith("--engine=")
                                        for a in argv):
        return [*argv, "--engine", "spark"]
    return argv


if __name__ == "__main__":
    sys.argv[1:] = arguments(sys.argv[1:])
    runpy.run_module("mpieval", run_name="__main__")  # the mpieval command
