// The auc kind's uncertainty kernels (see delong.py beside this file): DeLong's sweep of
// a histogram and the paired spread of two models' placements.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "exact.hpp"

namespace mpieval::stats {

struct Delong {
    double auc, variance, auprc, tie_bound;
};

// One sweep over the filled buckets' counts from the top bucket down. pos_units and
// neg_units: the class sizes of the spreads' small-sample divisors (P - 1, N - 1); NaN:
// the class totals (frequency weights), else their effective sizes (importance weights).
inline Delong delong(const double* negatives, const double* positives, int64_t n,
                     double pos_units = NAN, double neg_units = NAN) {
    double neg_above = 0.0, pos_above = 0.0, tied = 0.0, precision_sum = 0.0;
    double pos_t = 0.0, pos_tt = 0.0, neg_u = 0.0, neg_uu = 0.0;
    for (int64_t b = n - 1; b >= 0; --b) {
        const double neg = negatives[b];
        const double pos = positives[b];
        if (neg == 0 && pos == 0) continue;
        if (pos != 0) {
            const double t = neg_above + 0.5 * neg;
            pos_t += pos * t;
            pos_tt += pos * t * t;
            const double tp = pos_above + pos;
            precision_sum += pos * tp / (tp + neg_above + neg);
        }
        if (neg != 0) {
            const double u = pos_above + 0.5 * pos;
            neg_u += neg * u;
            neg_uu += neg * u * u;
        }
        tied += neg * pos;
        neg_above += neg;
        pos_above += pos;
    }
    const double neg_total = neg_above;
    const double pos_total = pos_above;
    if (pos_total == 0) return {NAN, NAN, NAN, NAN};
    const double auprc = precision_sum / pos_total;
    if (neg_total == 0) return {NAN, NAN, auprc, NAN};
    const double auc = neg_u / (neg_total * pos_total);
    const double tie_bound = tied / (2 * neg_total * pos_total);
    const double pos_n = std::isnan(pos_units) ? pos_total : pos_units;
    const double neg_n = std::isnan(neg_units) ? neg_total : neg_units;
    if (neg_n <= 1 || pos_n <= 1) return {auc, NAN, auprc, tie_bound};
    double s10 = std::max(pos_tt - pos_t * pos_t / pos_total, 0.0) / (neg_total * neg_total);
    double s01 = std::max(neg_uu - neg_u * neg_u / neg_total, 0.0) / (pos_total * pos_total);
    s10 /= pos_n - 1;
    s01 /= neg_n - 1;
    return {auc, s10 / pos_total + s01 / neg_total, auprc, tie_bound};
}

// spread (2, DIGITS): sum_pos w (d10_b - d10_a)^2 and sum_neg w (d01_b - d01_a)^2.
template <class B, class W>
void paired_spread(const B* bucket_a, const B* bucket_b, const W* positive, const W* negative,
                   int64_t n, const double* v10_a, const double* v10_b, const double* v01_a,
                   const double* v01_b, double* spread) {
    constexpr int D = exact::DIGITS;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t a = int64_t(bucket_a[i]);
        const int64_t b = int64_t(bucket_b[i]);
        if (positive[i] != 0) {
            const double d = v10_b[b] - v10_a[a];
            exact::add(spread, double(positive[i]) * d * d);
        }
        if (negative[i] != 0) {
            const double d = v01_b[b] - v01_a[a];
            exact::add(spread + D, double(negative[i]) * d * d);
        }
        if ((i + 1) % exact::SAFE_ADDS == 0) exact::normalize(spread, 2);
    }
    exact::normalize(spread, 2);
}

}  // namespace mpieval::stats
