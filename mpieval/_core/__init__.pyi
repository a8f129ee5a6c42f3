"""
mpieval's compiled kernels (see mpieval/kernels/ and the kinds' kernels.py)
"""

from mpieval._core import (
    auc as auc,
    codes as codes,
    exact as exact,
    keys as keys,
    labels as labels,
    logloss as logloss,
    moves as moves,
    pn as pn,
    ranking as ranking,
    sort as sort,
    stats as stats,
    text as text,
    wuauc as wuauc
)
