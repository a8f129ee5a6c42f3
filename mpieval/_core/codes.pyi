"""
Text values coded in order of first appearance; codes remapped (codes.hpp).
"""

from typing import Annotated

import numpy
from numpy.typing import NDArray


def first_appearance(offsets: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], data: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], limit: int, codes: Annotated[NDArray, dict(order='C', device='cpu')]) -> NDArray[numpy.int64] | None: ...

def remap(codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], lookup: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')], none: int | None, none_out: int) -> int: ...

class Texts:
    """Text values and their codes, kept across calls (codes.hpp)."""

    def __init__(self) -> None: ...

    def __len__(self) -> int: ...

    def codes(self, values: list, out: Annotated[NDArray, dict(order='C', device='cpu')]) -> int:
        """
        Each value's code (-1: not here) into out (int64); -1, or the index of the first value that is not a str or has no UTF-8 (out then filled before it only).
        """

    def add(self, values: list, codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> int:
        """
        Each value (a str with UTF-8) with its code; -1, or the index of the first value already here (kept with its first code).
        """

def lookup_counted(codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], lookup: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')], counts: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...
