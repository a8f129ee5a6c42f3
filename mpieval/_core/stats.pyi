"""The intervals' special functions (stats.hpp)."""

from typing import Annotated

from numpy.typing import NDArray


def beta_fraction(a: float, b: float, x: float) -> float: ...

def t_quantile(df: float, target: float, log_gammas: float, z: float) -> float: ...

def ratio_stderrs(a: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], b: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], aa: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], ab: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], bb: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], out: Annotated[NDArray, dict(order='C', device='cpu')], scalar: Annotated[NDArray, dict(order='C', device='cpu')], where: Annotated[NDArray, dict(order='C', device='cpu', writable=False)], weights: Annotated[NDArray, dict(order='C', device='cpu', writable=False)]) -> None: ...
