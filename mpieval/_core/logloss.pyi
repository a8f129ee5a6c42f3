"""
mpieval's own log (logloss.hpp), for the tests against its Python twin.
"""

from typing import Annotated

from numpy.typing import NDArray


def log(x: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...
