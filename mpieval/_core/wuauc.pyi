"""
The wuauc kind's kernels: rows grouped by user, each user's sums, the paired differences of two models (kernels.hpp).
"""

from typing import Annotated

from numpy.typing import NDArray


class Workspace:
    """
    Memory a thread of the pass over users keeps from one part to the next.
    """

    def __init__(self) -> None: ...

def parts(keys: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], parts: Annotated[NDArray, dict(order='C', device='cpu')], part_bits: int, sizes: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def group(keys: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], checks: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], parts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], part: int, packed: Annotated[NDArray, dict(order='C', device='cpu')], row_bits: int) -> bool: ...

def group_rows(keys: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], checks: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], parts: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], part: int, rows: int, pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], tag: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], n_tags: int, work: Workspace) -> bool: ...

def grouped_user_sums(work: Workspace, sums: Annotated[NDArray, dict(order='C', device='cpu')], moments: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def user_sums(packed: Annotated[NDArray, dict(order='C', device='cpu')], overwrite: bool, row_bits: int, pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], tag: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], n_tags: int, sums: Annotated[NDArray, dict(order='C', device='cpu')], record: Annotated[NDArray, dict(order='C', device='cpu')], work: Workspace, weight: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], moments: Annotated[NDArray, dict(order='C', device='cpu')]) -> int: ...

def row_sums(pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], codes: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], tag_of_code: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], sums: Annotated[NDArray, dict(order='C', device='cpu')], weight: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> None: ...

def moment_sums(packed: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], row_bits: int, pred: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], label: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], tag: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], n_tags: int, compare: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], weight: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], sums: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def paired_diff_sums(groups_a: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], groups_b: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], sums: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...
