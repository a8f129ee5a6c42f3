"""The per-user rows split by owner rank for a move (moves.hpp)."""

from collections.abc import Sequence
from typing import Annotated

from numpy.typing import NDArray


def owners(keys: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], size: int, dest: Annotated[NDArray, dict(order='C', device='cpu')], counts: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def buckets(keys: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], bits: int, bucket: Annotated[NDArray, dict(order='C', device='cpu')], counts: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def split_columns(dest: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], rank: int, columns: Sequence[Annotated[NDArray, dict(order='C', device='cpu')]], out: Annotated[NDArray, dict(order='C', device='cpu')], firsts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], counts: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...
