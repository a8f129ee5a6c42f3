// The continued fraction of the regularized incomplete beta function (modified Lentz, as
// Numerical Recipes' betacf), for mpieval/kernels/stats.py's incomplete_beta: every
// operation of the Python it replaced, in the same order, so the same bits (that Python
// is tests/test_beta_fraction.py's reference; the build contracts no a * b + c into a
// fused multiply-add).
#pragma once

#include <cmath>

#include "exact.hpp"

namespace mpieval::stats {

inline double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    d = 1.0 / (std::fabs(d) > tiny ? d : tiny);
    double h = d;
    for (int i = 1; i < 1000; ++i) {
        double m = i, m2 = 2.0 * i;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = 1.0 / (std::fabs(d) > tiny ? d : tiny);
        c = 1.0 + aa / c;
        c = std::fabs(c) > tiny ? c : tiny;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = 1.0 / (std::fabs(d) > tiny ? d : tiny);
        c = 1.0 + aa / c;
        c = std::fabs(c) > tiny ? c : tiny;
        double step = d * c;
        h *= step;
        if (std::fabs(step - 1.0) < 1e-15) break;
    }
    return h;
}

// mpieval/kernels/stats.py's t_two_sided_p of a finite t at df degrees of freedom (below
// NORMAL_DF), its incomplete_beta's steps in the same order, so the same bits (its
// log_gammas, lgamma(a + b) - lgamma(a) - lgamma(b) with a = df / 2 and b = 1 / 2, given:
// Python's math.lgamma is its own, not the C library's; log, log1p and exp are the C
// library's in both).
inline double t_two_sided_p(double t, double df, double log_gammas) {
    const double a = df / 2, b = 0.5;
    const double x = df / (df + t * t);
    if (x <= 0) return 0.0;
    if (x >= 1) return 1.0;
    const double log_front = log_gammas + a * std::log(x) + b * std::log1p(-x);
    if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_fraction(a, b, x) / a;
    return 1.0 - std::exp(log_front) * beta_fraction(b, a, 1.0 - x) / b;
}

// mpieval/kernels/stats.py's t_value: the t with P(|T| >= t) = target by bisection from
// [0, z] (z doubled until above it), the same steps, so the same bits.
inline double t_quantile(double df, double target, double log_gammas, double z) {
    double low = 0.0, high = z;
    while (t_two_sided_p(high, df, log_gammas) > target) {
        low = high;
        high = 2 * high;
    }
    for (int i = 0; i < 200; ++i) {
        const double mid = (low + high) / 2;
        if (t_two_sided_p(mid, df, log_gammas) > target)
            low = mid;
        else
            high = mid;
        if (high - low <= 1e-13 * high) break;
    }
    return (low + high) / 2;
}

// mpieval/kernels/stats.py's ratio_stderr of one element (error 0), the same operations in
// the same order, so the same bits: out = sqrt(spread) / |b| with spread = fsum(aa, -2 r
// ab, r r bb), r = a / b, 0 when within 8 * 2**-52 * fsum(|terms|); NaN when b is 0.
// False (out unset) when a term or either fsum is not finite: the Python ratio_stderr
// then decides (math.fsum's errors).
inline bool ratio_stderr(double a, double b, double aa, double ab, double bb, double& out) {
    if (b == 0.0) {
        out = NAN;
        return true;
    }
    const double r = a / b;
    const double terms[3] = {aa, -2.0 * r * ab, r * r * bb};
    if (!std::isfinite(terms[0]) || !std::isfinite(terms[1]) || !std::isfinite(terms[2]))
        return false;
    const double sizes[3] = {std::fabs(terms[0]), std::fabs(terms[1]), std::fabs(terms[2])};
    double spread = exact::fsum(terms, 3);
    const double size = exact::fsum(sizes, 3);
    if (!std::isfinite(spread) || !std::isfinite(size)) return false;
    if (spread <= 8.0 * 0x1p-52 * size) spread = 0.0;
    out = std::sqrt(spread) / std::fabs(b);
    return true;
}

// mpieval/kernels/stats.py's weighted_cluster_stderr, its steps in their order, so the
// same bits: stderr / sqrt(k), k = 1 - 2 total_cube / (total total_sq) + total_sq / (total
// total); NaN when stderr is NaN, total or total_sq is not above 0, or k is not above 0.
inline double weighted_cluster_stderr(double stderr, double total, double total_sq,
                                      double total_cube) {
    const double k = 1.0 - 2.0 * total_cube / (total * total_sq) + total_sq / (total * total);
    if (std::isnan(stderr) || total <= 0.0 || total_sq <= 0.0 || !(k > 0.0)) return NAN;
    return stderr / std::sqrt(k);
}

}  // namespace mpieval::stats
