// The continued fraction of the regularized incomplete beta function (modified Lentz, as
// Numerical Recipes' betacf), for mpieval/kernels/stats.py's incomplete_beta: every
// operation of the Python it replaced, in the same order, so the same bits (that Python
// is tests/test_beta_fraction.py's reference; the build contracts no a * b + c into a
// fused multiply-add).
#pragma once

#include <cmath>

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

}  // namespace mpieval::stats
