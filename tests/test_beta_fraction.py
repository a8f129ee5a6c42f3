"""The compiled continued fraction of the incomplete beta function gives the same bits as
the Python it replaced (kept here as the reference)."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from mpieval import _core


def python_beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz,
    as in Numerical Recipes' ``betacf``); converges fast for ``x < (a + 1) / (a + b + 2)``."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


@given(st.floats(min_value=0.01, max_value=1e6), st.floats(min_value=0.01, max_value=1e6),
       st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_same_bits_as_python(a: float, b: float, x: float) -> None:
    got = _core.stats.beta_fraction(a, b, x)
    want = python_beta_fraction(a, b, x)
    assert got == want or (math.isnan(got) and math.isnan(want))


def test_t_quantiles_cases() -> None:
    for df in (0.5, 1.0, 9.0, 30.0, 99_999.0):
        for a, b in ((df / 2, 0.5), (0.5, df / 2)):
            for x in (0.01, 0.3, 0.9, 0.999):
                assert _core.stats.beta_fraction(a, b, x) == python_beta_fraction(a, b, x)


def reference_t_value(level: float, df: float) -> float:
    """The t quantile's bisection on :func:`stats.t_two_sided_p` itself (as ``t_value``
    was written before its steps for one ``df`` were worked out once)."""
    from mpieval.kernels import stats

    target = 1 - level
    low, high = 0.0, stats.z_value(level)
    while stats.t_two_sided_p(high, df) > target:
        low, high = high, 2 * high
    for _ in range(200):
        mid = (low + high) / 2
        if stats.t_two_sided_p(mid, df) > target:
            low = mid
        else:
            high = mid
        if high - low <= 1e-13 * high:
            break
    return (low + high) / 2


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0.05, max_value=99_999.0), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_t_value_is_the_bisection_on_t_two_sided_p(df: float, level: float) -> None:
    """``t_value`` (the bisection compiled, ``_core.stats.t_quantile``) gives the bits of
    the bisection on ``t_two_sided_p`` itself."""
    from mpieval.kernels import stats

    stats.t_value.cache_clear()
    assert stats.t_value(level, df) == reference_t_value(level, df)


def test_t_value_cases() -> None:
    """The bits of the bisection at whole and tiny degrees of freedom, and the textbook
    quantiles."""
    from mpieval.kernels import stats

    stats.t_value.cache_clear()
    for df in (0.05, 0.5, 1.0, 2.0, 9.0, 30.0, 99.5, 1000.0, 99_999.0):
        for level in (0.5, 0.9, 0.95, 0.99, 0.999):
            assert stats.t_value(level, df) == reference_t_value(level, df), (df, level)
    assert round(stats.t_value(0.95, 1.0), 3) == 12.706
    assert round(stats.t_value(0.95, 9.0), 3) == 2.262
