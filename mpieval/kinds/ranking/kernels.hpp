// The ranking kind's compiled kernels (bound by bindings.cpp beside it): what its per-user
// values leave to compiled passes over many tags' blocks.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

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

// The rows in the order of (key, block, -pred, label) (kernels.py: ranked): where each group
// (a user's rows of one block) starts, starts[0 .. groups - 1], and starts[groups] = n;
// returns the number of groups.
inline int64_t group_starts(const uint64_t* key, const int64_t* block, int64_t n,
                            int64_t* starts) {
    int64_t groups = 0;
    for (int64_t i = 0; i < n; ++i)
        if (i == 0 || key[i] != key[i - 1] || block[i] != block[i - 1]) starts[groups++] = i;
    starts[groups] = n;
    return groups;
}

// Where group_values writes: one value a group (the `at` ones a cutoff, then a group: row
// c of a cuts x groups array), and the first run with a relevant row of each valid group
// (its group, first position, rows, relevant rows), in group order.
struct GroupValues {
    double* ndcg;
    double* ndcg_at;
    double* recall_at;
    double* ap_at;
    double* relevant_rows;
    int64_t* first_group;
    int64_t* first_at;
    int64_t* first_rows;
    double* first_relevant;
};

// Every group's NDCG, NDCG@K, Recall@K and the sum of AP@K's terms over its rows divided
// by min(K, relevant rows) (kernels.py's module doc), from the rows in ranked order: the
// group starts, each row's pred (runs of equal preds are ties), gain and label (relevant
// when above 0), the discounts 1 / log2(p + 2) of positions p = 0 .. (numpy's, so the same
// bits as ever), the cutoffs (`cuts` of them) and n, all the rows (a cutoff past n is n).
// Each sum starts from 0.0 and is added row after row (or run after run) in the ranked
// order, as np.bincount adds (no fused multiply-add: CMakeLists.txt), so a value's bits
// depend only on its group's rows. Returns the number of valid groups.
template <class P>
int64_t group_values(const int64_t* starts, int64_t groups, const P* pred, const double* gain,
                     const double* label, const double* discount, const int64_t* cutoffs,
                     int64_t cuts, int64_t n, const GroupValues& out) {
    int64_t longest = 0;
    for (int64_t g = 0; g < groups; ++g) longest = std::max(longest, starts[g + 1] - starts[g]);
    std::vector<double> sorted(static_cast<size_t>(longest));  // a group's gains, descending
    std::vector<int64_t> limit(static_cast<size_t>(cuts));
    for (int64_t c = 0; c < cuts; ++c) limit[size_t(c)] = std::min(cutoffs[c], n);
    std::vector<double> dcg_at(static_cast<size_t>(cuts)), ideal_at(static_cast<size_t>(cuts)),
        precision_at(static_cast<size_t>(cuts)), expected_at(static_cast<size_t>(cuts));
    int64_t valid = 0;
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t s = starts[g], e = starts[g + 1];
        // the ideal order: the gains descending, each at its position's discount
        std::copy(gain + s, gain + e, sorted.begin());
        std::sort(sorted.begin(), sorted.begin() + (e - s), std::greater<double>());
        double ideal = 0.0;
        for (int64_t c = 0; c < cuts; ++c) ideal_at[size_t(c)] = 0.0;
        for (int64_t p = 0; p < e - s; ++p) {
            ideal += sorted[size_t(p)] * discount[p];
            for (int64_t c = 0; c < cuts; ++c)
                if (p < limit[size_t(c)]) ideal_at[size_t(c)] = ideal;
        }
        // the runs of tied preds: each row's expected gain and precision term
        double dcg = 0.0, precision = 0.0, before = 0.0;  // relevant rows of the runs before
        bool first_seen = false;
        for (int64_t c = 0; c < cuts; ++c)
            dcg_at[size_t(c)] = precision_at[size_t(c)] = expected_at[size_t(c)] = 0.0;
        for (int64_t a = s; a < e;) {
            int64_t b = a + 1;
            while (b < e && !(pred[b] != pred[b - 1])) ++b;
            double gains = 0.0, r = 0.0;
            for (int64_t i = a; i < b; ++i) {
                gains += gain[i];
                r += label[i] > 0 ? 1.0 : 0.0;
            }
            const int64_t rows = b - a, first = a - s;
            const double m = double(rows), mean = gains / m;
            const double both = m > 1 ? r * (r - 1) / (m * (m - 1)) : 0.0;
            if (r > 0 && !first_seen) {
                first_seen = true;
                out.first_group[valid] = g;
                out.first_at[valid] = first;
                out.first_rows[valid] = rows;
                out.first_relevant[valid] = r;
                ++valid;
            }
            for (int64_t c = 0; c < cuts; ++c) {
                const int64_t in_top = std::clamp(limit[size_t(c)] - first, int64_t(0), rows);
                expected_at[size_t(c)] += r * double(in_top) / m;
            }
            for (int64_t i = a; i < b; ++i) {
                const int64_t p = i - s;
                dcg += mean * discount[p];
                precision += (r / m * (1.0 + before) + double(i - a) * both) / (double(p) + 1.0);
                for (int64_t c = 0; c < cuts; ++c)
                    if (p < limit[size_t(c)]) {
                        dcg_at[size_t(c)] = dcg;
                        precision_at[size_t(c)] = precision;
                    }
            }
            before += r;
            a = b;
        }
        const double relevant_rows = before;  // whole numbers: exact, in any order
        out.relevant_rows[g] = relevant_rows;
        out.ndcg[g] = dcg / ideal;
        for (int64_t c = 0; c < cuts; ++c) {
            const size_t at = size_t(c * groups + g);
            out.ndcg_at[at] = dcg_at[size_t(c)] / ideal_at[size_t(c)];
            out.recall_at[at] = expected_at[size_t(c)] / relevant_rows;
            out.ap_at[at] = precision_at[size_t(c)] / std::min(double(cutoffs[c]), relevant_rows);
        }
    }
    return valid;
}

}  // namespace mpieval::ranking
