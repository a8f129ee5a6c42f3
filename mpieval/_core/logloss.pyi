"""
mpieval's own log (logloss.hpp), for the tests against its Python twin; the choice of the block loops' copies (use_avx2).
"""

from typing import Annotated

from numpy.typing import NDArray


def log(x: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')]) -> None: ...

def use_avx2(on: bool) -> bool:
    """
    Run the AVX2 copies of the block loops (where the processor has AVX2) or the baseline's; returns whether they ran before. For the tests: both give the same bits.
    """
