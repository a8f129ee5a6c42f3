"""
Numbers as Python's repr writes them (text.hpp), and JSON values (JsonText).
"""

from collections.abc import Sequence
from typing import Annotated

from numpy.typing import NDArray


def json(obj: object | None, level: int, fallback: object) -> str: ...

def dicts(keys: tuple, columns: list) -> list: ...

def copies(template: dict, n: int) -> list: ...

def texts(data: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], starts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], stops: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> list: ...

def g_values(values: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> list: ...

def numbers(items: object, separators: Sequence[str]) -> object: ...
