"""
Merge sort (a second array carried, inversions counted), radix sort (sort.hpp).
"""

from typing import Annotated

from numpy.typing import NDArray


def merge_sort(first: Annotated[NDArray, dict(order='C', device='cpu')], tmp_first: Annotated[NDArray, dict(order='C', device='cpu')], m: int, second: Annotated[NDArray, dict(order='C', device='cpu')] | None, tmp_second: Annotated[NDArray, dict(order='C', device='cpu')] | None, count_inversions: bool) -> int: ...

def radix_sort(keys: Annotated[NDArray, dict(order='C', device='cpu')], payload: Annotated[NDArray, dict(order='C', device='cpu')], tmp_keys: Annotated[NDArray, dict(order='C', device='cpu')], tmp_payload: Annotated[NDArray, dict(order='C', device='cpu')], m: int) -> None: ...
