"""Binary labels narrowed to uint8 (labels.hpp)."""

from typing import Annotated

from numpy.typing import NDArray


def binary_to_u8(values: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...
