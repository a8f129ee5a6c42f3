"""
The ranking kind's kernels: every group's values, and the A-B correlations of many blocks (kernels.hpp).
"""

from typing import Annotated

from numpy.typing import NDArray


def correlations(a: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], aa: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], b: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], bb: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], dd: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], units: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def group_starts(key: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], block: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], starts: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...

def group_values(starts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], gain: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], discount: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], cutoffs: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], ndcg: Annotated[NDArray, dict(order='C', device='cpu')], ndcg_at: Annotated[NDArray, dict(order='C', device='cpu')], recall_at: Annotated[NDArray, dict(order='C', device='cpu')], ap_at: Annotated[NDArray, dict(order='C', device='cpu')], relevant_rows: Annotated[NDArray, dict(order='C', device='cpu')], first_group: Annotated[NDArray, dict(order='C', device='cpu')], first_at: Annotated[NDArray, dict(order='C', device='cpu')], first_rows: Annotated[NDArray, dict(order='C', device='cpu')], first_relevant: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...
