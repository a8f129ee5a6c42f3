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
