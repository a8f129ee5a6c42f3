"""Uid keys: mix64 and the hash of variable-length texts (keys.hpp)."""

from typing import Annotated

from numpy.typing import NDArray


def mix64(x: int) -> int: ...

def text_lengths(offsets: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> tuple[int, int]: ...

def hash_texts(offsets: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], data: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], constants: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], zero_terms: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], keys: Annotated[NDArray, dict(order='C', device='cpu')], checks: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def hash_decimals(values: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], constants: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], zero_terms: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], keys: Annotated[NDArray, dict(order='C', device='cpu')], checks: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...
