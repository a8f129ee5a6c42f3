"""
The pn kind's kernels: each user's positive, negative and tied pairs (kernels.hpp).
"""

from typing import Annotated

from numpy.typing import NDArray


def pair_counts_per_user(starts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], positive: Annotated[NDArray, dict(order='C', device='cpu')], negative: Annotated[NDArray, dict(order='C', device='cpu')], tie: Annotated[NDArray, dict(order='C', device='cpu')], long_user: int) -> None: ...

def grouped(keys: Annotated[NDArray, dict(order='C', device='cpu')], order: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], checks: Annotated[NDArray, dict(order='C', device='cpu', writable=False)] | None, out_label: Annotated[NDArray, dict(order='C', device='cpu')], starts: Annotated[NDArray, dict(order='C', device='cpu')]) -> tuple: ...
