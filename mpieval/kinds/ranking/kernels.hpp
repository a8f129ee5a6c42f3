// The ranking kind's compiled kernels (bound by bindings.cpp beside it): what its per-user
// values leave to compiled passes over many tags' blocks.
#pragma once

#include <cmath>
#include <cstdint>

namespace mpieval::ranking {

// mpieval/kinds/ranking/metric.py's _correlation, its steps in their order, so the same
// bits: x ** 2 as Python's float power computes it, libm's pow (not folded into x * x: it
// can differ in the last bit), max(0.0, x) as x when above 0.0 (NaN: 0.0), min(1.0, r)
// as r when below 1.0, max(-1.0, r) as r when above -1.0.
inline double correlation(double a, double aa, double b, double bb, double dd, double units) {
    if (units < 2) return 0.0;
    volatile double two = 2.0;  // (a power, not a product)
    const double var_a0 = aa / units - std::pow(a / units, two);
    const double var_b0 = bb / units - std::pow(b / units, two);
    const double var_a = var_a0 > 0.0 ? var_a0 : 0.0, var_b = var_b0 > 0.0 ? var_b0 : 0.0;
    if (var_a <= 1e-15 || var_b <= 1e-15) return 0.0;
    const double cov = (aa + bb - dd) / 2 / units - (a / units) * (b / units);
    const double r = cov / std::sqrt(var_a * var_b);
    const double below = r < 1.0 ? r : 1.0;
    return below > -1.0 ? below : -1.0;
}

// correlation of each block (n of them), into out.
inline void correlations(const double* a, const double* aa, const double* b, const double* bb,
                         const double* dd, const double* units, int64_t n, double* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = correlation(a[i], aa[i], b[i], bb[i], dd[i], units[i]);
}

}  // namespace mpieval::ranking
