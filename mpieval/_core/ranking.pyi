"""
The ranking kind's kernels: the A-B correlations of many blocks (kernels.hpp).
"""

from typing import Annotated

from numpy.typing import NDArray


def correlations(a: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], aa: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], b: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], bb: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], dd: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], units: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...
