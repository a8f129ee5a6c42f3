"""
Text values coded in order of first appearance; codes remapped (codes.hpp).
"""

from typing import Annotated

import numpy
from numpy.typing import NDArray


def first_appearance(offsets: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], data: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], limit: int, codes: Annotated[NDArray, dict(order='C', device='cpu')]) -> NDArray[numpy.int64] | None: ...

def remap(codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], lookup: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')], none: int | None, none_out: int) -> int: ...

def lookup_counted(codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], lookup: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')], counts: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...
