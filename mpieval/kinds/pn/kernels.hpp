// PN pair counts inside each user (see kernels.py beside this file): two merge sorts a user.
#pragma once

#include <cstdint>
#include <vector>

#include "sort.hpp"

namespace mpieval::pn {

// A user's rows sorted by (label, pred), then by pred: the sorts' space.
struct Scratch {
    std::vector<double> label, pred, tmp_label, tmp_pred;
    explicit Scratch(int64_t longest)
        : label(longest), pred(longest), tmp_label(longest), tmp_pred(longest) {}
};

inline void pair_counts_per_user(const int64_t* starts, int64_t users, const double* pred,
                                 const double* label, int64_t* positive, int64_t* negative,
                                 int64_t* tie) {
    int64_t longest = 0;
    for (int64_t u = 0; u < users; ++u) longest = std::max(longest, starts[u + 1] - starts[u]);
    Scratch s(longest);
    for (int64_t u = 0; u < users; ++u) {
        const int64_t lo = starts[u], m = starts[u + 1] - starts[u];
        if (m < 2) continue;
        const double first = label[lo];
        bool one_label = true;
        for (int64_t r = lo + 1; r < lo + m; ++r) {
            if (label[r] != first) {
                one_label = false;
                break;
            }
        }
        if (one_label) continue;
        double* wl = s.label.data();
        double* wp = s.pred.data();
        for (int64_t r = 0; r < m; ++r) {
            wl[r] = label[lo + r];
            wp[r] = pred[lo + r];
        }
        sort::merge_sort<false>(wl, s.tmp_label.data(), m, wp, s.tmp_pred.data());
        int64_t same_label = 0, same_both = 0, run_label = 1, run_both = 1;
        for (int64_t r = 1; r < m + 1; ++r) {
            if (r < m && wl[r] == wl[r - 1]) {
                ++run_label;
                if (wp[r] == wp[r - 1]) {
                    ++run_both;
                } else {
                    same_both += run_both * (run_both - 1) / 2;
                    run_both = 1;
                }
            } else {
                same_label += run_label * (run_label - 1) / 2;
                same_both += run_both * (run_both - 1) / 2;
                run_label = 1;
                run_both = 1;
            }
        }
        const int64_t inversions = sort::merge_sort<true>(wp, s.tmp_pred.data(), m);
        int64_t same_pred = 0, run_pred = 1;
        for (int64_t r = 1; r < m + 1; ++r) {
            if (r < m && wp[r] == wp[r - 1]) {
                ++run_pred;
            } else {
                same_pred += run_pred * (run_pred - 1) / 2;
                run_pred = 1;
            }
        }
        const int64_t different = m * (m - 1) / 2 - same_label;
        const int64_t ties = same_pred - same_both;
        negative[u] = inversions;
        tie[u] = ties;
        positive[u] = different - ties - inversions;
    }
}

}  // namespace mpieval::pn
