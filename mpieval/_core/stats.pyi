"""The intervals' special functions (stats.hpp)."""



def beta_fraction(a: float, b: float, x: float) -> float: ...
