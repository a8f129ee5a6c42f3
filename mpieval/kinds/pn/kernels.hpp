// PN pair counts inside each user (see kernels.py beside this file): two merge sorts a
// user, or for a long user with few distinct labels one radix sort by pred and a pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sort.hpp"

namespace mpieval::pn {

// Distinct labels a long user may have for the one-sort pass (more: the two merge sorts).
constexpr int64_t MAX_CODES = 64;

// A user's rows sorted by (label, pred), then by pred: the merge sorts' space; and, for
// the long users' pass, their preds' ordered bits and label codes. Each grows to the
// longest user that needs it.
struct Scratch {
    std::vector<double> label, pred, tmp_label, tmp_pred;
    std::vector<uint64_t> keys, tmp_keys;
    std::vector<uint8_t> codes, tmp_codes;
    std::vector<double> distinct;       // a long user's distinct labels, sorted
    std::vector<int64_t> tree, in_run;  // rows below a run per code (a Fenwick tree); a run's
};

// The bits of a finite double as a uint64 in the doubles' order (-0.0 as 0.0): equal preds
// have equal bits, a < b has bits(a) < bits(b).
inline uint64_t ordered_bits(double x) {
    if (x == 0.0) x = 0.0;
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return (bits >> 63) ? ~bits : bits | (uint64_t(1) << 63);
}

// A long user's rows lo .. lo + m - 1 counted in one radix sort by pred: each row's label as
// its rank among the user's distinct labels (its code), the rows sorted by pred, then one
// pass over the runs of tied preds. A row of code c in a run makes a positive pair with
// each row below the run of a smaller code, a negative one with each of a larger code (a
// Fenwick tree over the codes counts them), and a tie with each row of its run of another
// code. False (nothing counted) when the user has more than MAX_CODES distinct labels.
inline bool long_user_counts(const double* pred, const double* label, int64_t lo, int64_t m,
                             Scratch& s, int64_t& positive, int64_t& negative, int64_t& tie) {
    std::vector<double>& distinct = s.distinct;
    distinct.clear();
    double last = label[lo];
    distinct.push_back(last);
    for (int64_t r = lo + 1; r < lo + m; ++r) {
        const double y = label[r];
        if (y == last) continue;
        last = y;
        if (std::find(distinct.begin(), distinct.end(), y) == distinct.end()) {
            if (int64_t(distinct.size()) == MAX_CODES) return false;
            distinct.push_back(y);
        }
    }
    std::sort(distinct.begin(), distinct.end());
    const int64_t n_codes = int64_t(distinct.size());
    if (int64_t(s.keys.size()) < m) {
        s.keys.resize(m);
        s.tmp_keys.resize(m);
        s.codes.resize(m);
        s.tmp_codes.resize(m);
    }
    uint64_t* keys = s.keys.data();
    uint8_t* codes = s.codes.data();
    for (int64_t r = 0; r < m; ++r) {
        keys[r] = ordered_bits(pred[lo + r]);
        codes[r] = uint8_t(std::lower_bound(distinct.begin(), distinct.end(), label[lo + r]) -
                           distinct.begin());
    }
    sort::radix_sort(keys, codes, s.tmp_keys.data(), s.tmp_codes.data(), m);
    s.tree.assign(n_codes + 1, 0);
    s.in_run.assign(n_codes, 0);
    int64_t* tree = s.tree.data();
    int64_t* in_run = s.in_run.data();
    auto below = [tree](int64_t code) {  // rows below the run with a code < code
        int64_t sum = 0;
        for (int64_t i = code; i > 0; i -= i & -i) sum += tree[i];
        return sum;
    };
    int64_t pos = 0, neg = 0, ties = 0, under = 0;
    for (int64_t start = 0; start < m;) {
        int64_t stop = start + 1;
        while (stop < m && keys[stop] == keys[start]) ++stop;
        int64_t same = 0;  // pairs of the run with one code
        for (int64_t r = start; r < stop; ++r) {
            const int64_t c = codes[r];
            pos += below(c);
            neg += under - below(c + 1);
            same += in_run[c]++;
        }
        const int64_t run = stop - start;
        ties += run * (run - 1) / 2 - same;
        for (int64_t r = start; r < stop; ++r) {
            in_run[codes[r]] = 0;
            for (int64_t i = codes[r] + 1; i <= n_codes; i += i & -i) ++tree[i];
        }
        under += run;
        start = stop;
    }
    positive = pos;
    negative = neg;
    tie = ties;
    return true;
}

// Users of long_user rows or more take long_user_counts (when they have at most MAX_CODES
// distinct labels), the others two merge sorts.
inline void pair_counts_per_user(const int64_t* starts, int64_t users, const double* pred,
                                 const double* label, int64_t* positive, int64_t* negative,
                                 int64_t* tie, int64_t long_user) {
    Scratch s;
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
        if (m >= long_user &&
            long_user_counts(pred, label, lo, m, s, positive[u], negative[u], tie[u]))
            continue;
        if (int64_t(s.label.size()) < m) {
            for (auto* column : {&s.label, &s.pred, &s.tmp_label, &s.tmp_pred}) column->resize(m);
        }
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

// The rows grouped by user from their keys sorted with the rows' numbers (`order`): each
// user's first row (`starts`, then n; returns the users), the rows' pred and label in that
// order, and whether two rows of one key have different checks (a collision; `checks` null:
// keys without checks). One pass, the three reads of a row at a random place issued
// together and those of rows further on prefetched. The preds take the keys' place (their
// bits as a double, written through the keys' own type: each key is read before its place
// is written); the labels are written as doubles. P and L: the kept preds' and labels' type
// (float or double).
template <class P, class L>
int64_t grouped(uint64_t* keys, const uint32_t* order, int64_t n, const P* pred,
                const L* label, const uint32_t* checks, double* out_label, int64_t* starts,
                bool* collision) {
    constexpr int64_t AHEAD = 16;
    int64_t users = 0;
    uint64_t last_key = 0;
    uint32_t last_check = 0;
    bool clash = false;
    for (int64_t i = 0; i < n; ++i) {
        if (i + AHEAD < n) {
            const uint32_t ahead = order[i + AHEAD];
            __builtin_prefetch(pred + ahead);
            __builtin_prefetch(label + ahead);
            if (checks) __builtin_prefetch(checks + ahead);
        }
        const uint32_t row = order[i];
        const uint64_t key = keys[i];
        const bool first = i == 0 || key != last_key;
        last_key = key;
        const double value = double(pred[row]);
        uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        keys[i] = bits;
        out_label[i] = double(label[row]);
        if (first) starts[users++] = i;
        if (checks) {
            const uint32_t check = checks[row];
            clash |= !first && check != last_check;
            last_check = check;
        }
    }
    starts[users] = n;
    *collision = clash;
    return users;
}

}  // namespace mpieval::pn
