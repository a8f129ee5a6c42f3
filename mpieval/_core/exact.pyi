"""Exact sums of float64 values in fixed point (exact.hpp)."""

from typing import Annotated

from numpy.typing import NDArray


DIGITS: int = 68

def normalize(acc: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def add_values(acc: Annotated[NDArray, dict(order='C', device='cpu')], values: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> None: ...

def to_floats(acc: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def add_at(acc: Annotated[NDArray, dict(order='C', device='cpu')], index: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], values: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], first: int) -> None: ...
