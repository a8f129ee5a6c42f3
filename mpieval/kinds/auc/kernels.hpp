// Kernels of the auc kind (see kernels.py beside this file): the table and exact sums of a
// batch, the bucket-error sweep, the ROC and calibration curves of a table.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "exact.hpp"
#include "logloss.hpp"

namespace mpieval::auc {

constexpr double K_MAX_SPAN = 0.01;
constexpr double K_RELATIVE_ERROR_BOUND = 0.05;
enum { SUM_ABSERR, SUM_SQRERR, SUM_PRED, SUM_ROWS, SUM_LOGLOSS, SUM_LABEL_SQ, SUM_PRED_SQ,
       SUM_LABEL_PRED, N_SUMS };

inline int64_t bucket(double p, int64_t size) {
    return std::min(int64_t(p * double(size)), size - 1);
}

inline double* row(double* sums, int field) { return sums + field * exact::DIGITS; }

// The exact sums' splits (exact::Split): preds and their squares in [2**-34, 1] in two
// parts, logloss terms in [2**-73, 64) in three (from -log(1 - 1e-15), 1.1e-15, to
// -log(1e-15), 34.5: a pred clipped at 0 or 1 too); a row's value out of its range (a
// pred below 2**-17 but not 0: its square below 2**-34) is added to the batch's Wide on
// its own.
using PredSplit = exact::Split<1, 42, 2>;
using LossSplit = exact::Split<6, 37, 3>;

// A block's sums, the fields in this order: pred's hi and rest, pred * label's, pred^2's,
// logloss's hi, mid and lo; during the block's loop each in the lanes of a vector of BYTES bytes (GCC's
// and Clang's vector extensions: plain float64 operations on several values at once; 16
// bytes for SSE2, 32 for AVX2).
enum { BLOCK_PRED, BLOCK_LABEL_PRED = 2, BLOCK_PRED_SQ = 4, BLOCK_LOGLOSS = 6, BLOCK_SUMS = 9 };
template <int BYTES>
struct Vectors;
template <>
struct Vectors<16> {
    typedef double Lanes __attribute__((vector_size(16)));
    typedef int64_t Mask __attribute__((vector_size(16)));
};
template <>
struct Vectors<32> {
    typedef double Lanes __attribute__((vector_size(32)));
    typedef int64_t Mask __attribute__((vector_size(32)));
};
template <int BYTES>
using Lanes = typename Vectors<BYTES>::Lanes;
template <int BYTES>
using Mask = typename Vectors<BYTES>::Mask;

// Keep v where it splits exactly by Split (exact::Split::ok), 0 elsewhere; `ok` keeps a
// lane's bits set only where it does.
template <class Split, int BYTES>
MPIEVAL_INLINE void keep_in_range(Lanes<BYTES>& v, Mask<BYTES>& ok) {
    const Mask<BYTES> here = (v < Split::BELOW) & ((v >= Split::FROM) | (v == 0.0));
    ok &= here;
    v = here ? v : Lanes<BYTES>{};
}

// v in Split's three parts, hi, mid and lo, into part[0 .. 2] (exactly v's sum:
// exact::Split).
template <class Split, int BYTES>
MPIEVAL_INLINE void three_parts(const Lanes<BYTES>& v, Lanes<BYTES>* part) {
    part[0] = (v + Split::C) - Split::C;
    const Lanes<BYTES> rest = v - part[0];
    part[1] = (rest + Split::C2) - Split::C2;
    part[2] = rest - part[1];
}

// v's three parts (three_parts) added to the lanes sum[0 .. 2].
template <class Split, int BYTES>
MPIEVAL_INLINE void add_three(Lanes<BYTES>* sum, const Lanes<BYTES>& v) {
    Lanes<BYTES> part[3];
    three_parts<Split, BYTES>(v, part);
    for (int k = 0; k < 3; ++k) sum[k] += part[k];
}

// Each of `count` vectors of partial sums added across its lanes into block[k] (exact: the
// lanes hold parts of one split, whole multiples of its grid); whether a lane of `ok` was
// cleared (a value out of its split's range).
template <int BYTES>
MPIEVAL_INLINE bool lane_totals(const Lanes<BYTES>* lanes, int count, const Mask<BYTES>& ok,
                                double* block) {
    constexpr int64_t LANES = BYTES / 8;
    int64_t oks[LANES];
    std::memcpy(oks, &ok, sizeof oks);
    bool out = false;
    for (int64_t j = 0; j < LANES; ++j) out |= oks[j] == 0;
    for (int k = 0; k < count; ++k) {
        double values[LANES];
        std::memcpy(values, &lanes[k], sizeof values);
        block[k] = 0.0;
        for (int64_t j = 0; j < LANES; ++j) block[k] += values[j];  // exact
    }
    return out;
}

// The sums of a block's split values (BLOCK rows: pred, label and logloss as float64) into
// `block` (BLOCK_SUMS), those out of their splits' ranges as 0; whether some were.
template <int BYTES>
MPIEVAL_INLINE bool block_sums_loop(const double* __restrict pred,
                                    const double* __restrict label,
                                    const double* __restrict logloss,
                                    double (&block)[BLOCK_SUMS]) {
    using V = Lanes<BYTES>;
    constexpr int64_t LANES = BYTES / 8;
    V lanes[BLOCK_SUMS] = {};
    Mask<BYTES> ok = Mask<BYTES>{} - 1;
    for (int64_t i = 0; i < BLOCK; i += LANES) {
        V y, p, l;
        std::memcpy(&y, label + i, sizeof y);
        std::memcpy(&p, pred + i, sizeof p);
        std::memcpy(&l, logloss + i, sizeof l);
        keep_in_range<PredSplit, BYTES>(p, ok);
        V q = p * p;
        keep_in_range<PredSplit, BYTES>(q, ok);
        keep_in_range<LossSplit, BYTES>(l, ok);
        const V p_hi = (p + PredSplit::C) - PredSplit::C;
        const V p_rest = p - p_hi;
        const V q_hi = (q + PredSplit::C) - PredSplit::C;
        lanes[BLOCK_PRED] += p_hi;
        lanes[BLOCK_PRED + 1] += p_rest;
        lanes[BLOCK_LABEL_PRED] += p_hi * y;
        lanes[BLOCK_LABEL_PRED + 1] += p_rest * y;
        lanes[BLOCK_PRED_SQ] += q_hi;
        lanes[BLOCK_PRED_SQ + 1] += q - q_hi;
        add_three<LossSplit, BYTES>(lanes + BLOCK_LOGLOSS, l);
    }
    return lane_totals<BYTES>(lanes, BLOCK_SUMS, ok, block);
}

#ifdef MPIEVAL_AVX2
[[gnu::target("avx2")]] inline bool block_sums_avx2(const double* __restrict pred,
                                                    const double* __restrict label,
                                                    const double* __restrict logloss,
                                                    double (&block)[BLOCK_SUMS]) {
    return block_sums_loop<32>(pred, label, logloss, block);
}
#endif

inline bool block_sums(const double* __restrict pred, const double* __restrict label,
                       const double* __restrict logloss, double (&block)[BLOCK_SUMS]) {
#ifdef MPIEVAL_AVX2
    if (has_avx2()) return block_sums_avx2(pred, label, logloss, block);
#endif
    return block_sums_loop<16>(pred, label, logloss, block);
}

constexpr int64_t AHEAD = 16;  // rows between a table cell's prefetch and its addition
constexpr int64_t FETCH_AHEAD_FROM = 1 << 17;  // cells (1 MiB): a table that gets them

// The scratch of accumulate_binary: the batch's four exact sums in fixed point, a block's
// logloss terms (logloss_block, with the preds and labels as float64), and a short last
// block's rows padded to BLOCK.
// A block of m <= BLOCK rows as BLOCK rows: the rows themselves, or the last rows (m <
// BLOCK) copied to pad_p, pad_y and padded with pred 0, label 0; p_block and y_block then
// point there.
template <class P, class L>
void padded(const P*& p_block, const L*& y_block, int64_t m, P* pad_p, L* pad_y) {
    if (m == BLOCK) return;
    std::fill(pad_p, pad_p + BLOCK, P(0));
    std::fill(pad_y, pad_y + BLOCK, L(0));
    std::copy(p_block, p_block + m, pad_p);
    std::copy(y_block, y_block + m, pad_y);
    p_block = pad_p;
    y_block = pad_y;
}

template <class P, class L>
struct BinaryScratch {
    exact::Wide wide[4];
    LoglossScratch block;
    double logloss[BLOCK];
    int64_t cell[BLOCK];
    P pred[BLOCK];
    L label[BLOCK];
};

// table (2, size), sums (N_SUMS, DIGITS).
template <class P, class L>
void accumulate_binary(double* table, int64_t size, const P* pred, const L* label, int64_t n,
                       double* sums) {
    // the batch's exact sums: pred over negatives, over positives, pred^2, logloss
    constexpr int D = exact::DIGITS;
    auto scratch = std::make_unique<BinaryScratch<P, L>>();
    exact::Wide* wide = scratch->wide;
    for (auto& w : scratch->wide) w.clear();
    int64_t positives = 0;
    for (int64_t start = 0; start < n; start += BLOCK) {
        const int64_t m = std::min(BLOCK, n - start);
        const P* p_block = pred + start;
        const L* y_block = label + start;
        padded(p_block, y_block, m, scratch->pred, scratch->label);  // a logloss to drop
        // the table, in a loop of its own: its loads overlap, free of the sums' additions;
        // a table beyond the processor's nearer caches (a cell a cache miss) gets each
        // row's cell first, fetched AHEAD rows before its addition
        if (2 * size > FETCH_AHEAD_FROM) {
            int64_t* cell = scratch->cell;
            for (int64_t i = 0; i < m; ++i)
                cell[i] = int64_t(y_block[i]) * size + bucket(double(p_block[i]), size);
            for (int64_t i = 0; i < m; ++i) {
                if (i + AHEAD < m) __builtin_prefetch(table + cell[i + AHEAD], 1);
                table[cell[i]] += 1.0;
            }
            for (int64_t i = 0; i < m; ++i) positives += int64_t(y_block[i]);
        } else {
            for (int64_t i = 0; i < m; ++i) {
                const int64_t y = int64_t(y_block[i]);
                table[y * size + bucket(double(p_block[i]), size)] += 1.0;
                positives += y;
            }
        }
        logloss_block(p_block, y_block, scratch->block, scratch->logloss);
        // the sums: the block's split values in float64 lanes, exact, then into the Wides
        // as a few values; a padded row's pred is 0, and its logloss (-log(1 - 1e-15))
        // is dropped here, so it adds nothing
        std::fill(scratch->logloss + m, scratch->logloss + BLOCK, 0.0);
        double block[BLOCK_SUMS];
        if (block_sums(scratch->block.p, scratch->block.y, scratch->logloss, block)) {
            for (int64_t i = 0; i < m; ++i) {  // the values out of range, one by one
                const double p = double(p_block[i]);
                const int64_t y = int64_t(y_block[i]);
                const double q = p * p, l = scratch->logloss[i];
                if (!PredSplit::ok(p)) wide[y].add(p);
                if (!PredSplit::ok(q)) wide[2].add(q);
                if (!LossSplit::ok(l)) wide[3].add(l);
            }
        }
        for (int part = 0; part < 2; ++part) {
            const double all = block[BLOCK_PRED + part];
            const double positive = block[BLOCK_LABEL_PRED + part];
            wide[0].add(all - positive);  // exact: the sum over the negatives' rows
            wide[1].add(positive);
            wide[2].add(block[BLOCK_PRED_SQ + part]);
        }
        for (int part = 0; part < 3; ++part) wide[3].add(block[BLOCK_LOGLOSS + part]);
    }
    double part[4 * D] = {};
    for (int k = 0; k < 4; ++k) wide[k].fold(part + k * D);
    double ones[D] = {};
    exact::add(ones, double(positives));
    const double* p0 = part;
    const double* p1 = part + D;
    const double* p2 = part + 2 * D;
    const double* p3 = part + 3 * D;
    for (int k = 0; k < D; ++k) {
        row(sums, SUM_ABSERR)[k] += p0[k] - p1[k] + ones[k];
        row(sums, SUM_SQRERR)[k] += p2[k] - 2.0 * p1[k] + ones[k];
        row(sums, SUM_PRED)[k] += p0[k] + p1[k];
        row(sums, SUM_LOGLOSS)[k] += p3[k];
        row(sums, SUM_LABEL_SQ)[k] += ones[k];
        row(sums, SUM_PRED_SQ)[k] += p2[k];
        row(sums, SUM_LABEL_PRED)[k] += p1[k];
    }
    exact::add(row(sums, SUM_ROWS), double(n));
    exact::normalize(sums, N_SUMS);
}

// The scratch of accumulate_weighted: the batch's sums in fixed point (SUM_ROWS unused).
struct WeightedScratch {
    exact::Wide wide[N_SUMS];
};

template <class P, class L>
void accumulate_weighted(double* table, int64_t size, const P* pred, const L* label,
                         const double* weight, int64_t n, double* sums) {
    exact::normalize(sums, N_SUMS);
    for (int64_t i = 0; i < n; ++i) {
        const double y = double(label[i]);
        const double w = weight[i];
        const int64_t b = bucket(double(pred[i]), size);
        table[b] += w * (1.0 - y);
        table[size + b] += w * y;
    }
    // the sums in fixed point (exact::Wide), folded into `sums` once
    auto scratch = std::make_unique<WeightedScratch>();
    exact::Wide* wide = scratch->wide;
    for (auto& w : scratch->wide) w.clear();
    for (int64_t i = 0; i < n; ++i) {
        const double p = double(pred[i]);
        const double y = double(label[i]);
        const double w = weight[i];
        const double d = p - y;
        const double q = clip(p);
        double ce = 0.0;
        if (y != 0.0) ce -= y * log(q);
        if (y != 1.0) ce -= (1.0 - y) * log(1.0 - q);
        wide[SUM_ABSERR].add(w * std::fabs(d));
        wide[SUM_SQRERR].add(w * d * d);
        wide[SUM_PRED].add(w * p);
        wide[SUM_LOGLOSS].add(w * ce);
        wide[SUM_LABEL_SQ].add(w * y * y);
        wide[SUM_PRED_SQ].add(w * p * p);
        wide[SUM_LABEL_PRED].add(w * y * p);
    }
    for (int f = 0; f < N_SUMS; ++f)
        if (f != SUM_ROWS) wide[f].fold(row(sums, f));
    exact::add(row(sums, SUM_ROWS), double(n));
    exact::normalize(sums, N_SUMS);
}

template <class A, class B, class O>
void bucket_pairs(const A* pred_a, const B* pred_b, int64_t n, int64_t size, O* bucket_a,
                  O* bucket_b) {
    for (int64_t i = 0; i < n; ++i) {
        bucket_a[i] = O(bucket(double(pred_a[i]), size));
        bucket_b[i] = O(bucket(double(pred_b[i]), size));
    }
}

// The seed's calculate_bucket_error over the filled buckets (ascending) and their counts.
inline double bucket_error(const int64_t* filled, const double* negatives,
                           const double* positives, int64_t n_filled, int64_t table_size) {
    const double size = double(table_size);
    double last_ctr = -1.0;
    double impression_sum = 0.0, ctr_sum = 0.0, click_sum = 0.0;
    double error_sum = 0.0, error_count = 0.0;
    int64_t j = 0;
    for (int64_t k = 0; k < n_filled; ++k) {
        const int64_t i = filled[k];
        while (j < i) {
            int64_t step;
            if (last_ctr < 0) {
                step = j;
            } else {
                step = std::max(j, int64_t((last_ctr + K_MAX_SPAN) * size) - 2);
                while (step < i && !(std::fabs(double(step) / size - last_ctr) > K_MAX_SPAN))
                    ++step;
            }
            if (step >= i) break;
            last_ctr = double(step) / size;
            impression_sum = 0.0;
            ctr_sum = 0.0;
            click_sum = 0.0;
            j = step + 1;
        }
        const double click = positives[k];
        const double show = negatives[k] + positives[k];
        const double ctr = double(i) / size;
        if (std::fabs(ctr - last_ctr) > K_MAX_SPAN) {
            last_ctr = ctr;
            impression_sum = 0.0;
            ctr_sum = 0.0;
            click_sum = 0.0;
        }
        impression_sum += show;
        ctr_sum += ctr * show;
        click_sum += click;
        const double adjust_ctr = ctr_sum / impression_sum;
        const double relative_error =
            std::sqrt((1 - adjust_ctr) / (adjust_ctr * impression_sum));
        if (relative_error < K_RELATIVE_ERROR_BOUND) {
            const double actual_ctr = click_sum / impression_sum;
            const double relative_ctr_error = std::fabs(actual_ctr / adjust_ctr - 1);
            error_sum += relative_ctr_error * impression_sum;
            error_count += impression_sum;
            last_ctr = -1.0;
        }
        j = i + 1;
    }
    return error_count > 0 ? error_sum / error_count : NAN;
}

// The ROC sweep over the filled buckets' counts: rows [fpr, tpr] into `curve`.
inline std::vector<double> roc(const double* negatives, const double* positives, int64_t n,
                               int64_t points) {
    double neg_total = 0.0, pos_total = 0.0;
    int64_t filled = 0;
    for (int64_t b = 0; b < n; ++b) {
        neg_total += negatives[b];
        pos_total += positives[b];
        if (negatives[b] != 0 || positives[b] != 0) ++filled;
    }
    std::vector<double> curve;
    if (neg_total == 0 || pos_total == 0) return curve;
    const bool every = filled <= points;
    curve.reserve(2 * (std::min(filled, points + 1) + 1));
    curve.push_back(0.0);
    curve.push_back(0.0);
    double fp = 0.0, tp = 0.0;
    int64_t step = 0;
    for (int64_t b = n - 1; b >= 0; --b) {
        if (negatives[b] == 0 && positives[b] == 0) continue;
        fp += negatives[b];
        tp += positives[b];
        --filled;
        const double fpr = fp / neg_total;
        const double tpr = tp / pos_total;
        const int64_t reached = int64_t((fpr + tpr) * double(points) / 2);
        if (every || reached > step || filled == 0) {
            step = reached;
            curve.push_back(fpr);
            curve.push_back(tpr);
        }
    }
    return curve;
}

// Calibration bins [mean_pred, actual_ctr, rows] from the filled buckets.
inline std::vector<double> calibration(const int64_t* filled, const double* negatives,
                                       const double* positives, int64_t n_filled,
                                       int64_t size, int64_t points) {
    double total = 0.0;
    for (int64_t k = 0; k < n_filled; ++k) total += negatives[k] + positives[k];
    std::vector<double> bins(3 * points, 0.0);
    double below = 0.0;
    for (int64_t i = 0; i < n_filled; ++i) {
        const int64_t b = filled[i];
        const double rows = negatives[i] + positives[i];
        const int64_t k = std::min(int64_t(below * double(points) / total), points - 1);
        bins[3 * k] += rows * ((double(b) + 0.5) / double(size));
        bins[3 * k + 1] += positives[i];
        bins[3 * k + 2] += rows;
        below += rows;
    }
    int64_t m = 0;
    for (int64_t k = 0; k < points; ++k) {
        if (bins[3 * k + 2] != 0) {
            bins[3 * m] = bins[3 * k] / bins[3 * k + 2];
            bins[3 * m + 1] = bins[3 * k + 1] / bins[3 * k + 2];
            bins[3 * m + 2] = bins[3 * k + 2];
            ++m;
        }
    }
    bins.resize(3 * m);
    return bins;
}

// merge_calibration's grouping: bins with rows, from the lowest pred up, into at most
// `count` groups of about equal rows. A bin starts a new group where min(int(rows before it
// * count / total), count - 1) changes (`total` the rows of every bin).
struct CalibrationGroups {
    int64_t count;
    double total;
    double below = 0.0;
    int64_t last = -1;

    // Whether the next bin, of `rows` (more than 0), starts a new group.
    bool starts(double rows) {
        const int64_t index = std::min(int64_t(below * double(count) / total), count - 1);
        below += rows;
        const bool fresh = index != last;
        last = index;
        return fresh;
    }
};

// The expected calibration error of calibration bins (n rows of [mean_pred, actual_ctr,
// rows], as `calibration` gives them): the bins with rows merged into at most `count`
// groups of about equal rows, then sum rows |actual - pred| / sum rows over the groups;
// NaN without rows. kernels.merge_calibration and expected_calibration_error: the same
// float64 operations in the same order, so the same bits as their Python loops.
inline double calibration_error(const double* bins, int64_t n, int64_t count) {
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i)
        if (bins[3 * i + 2] > 0) total += bins[3 * i + 2];
    if (!(total > 0)) return std::nan("");
    std::vector<double> groups;  // [pred * rows, clicks, rows] a group
    CalibrationGroups grouping{count, total};
    for (int64_t i = 0; i < n; ++i) {
        const double pred = bins[3 * i], actual = bins[3 * i + 1], rows = bins[3 * i + 2];
        if (!(rows > 0)) continue;
        if (grouping.starts(rows)) groups.insert(groups.end(), {0.0, 0.0, 0.0});
        double* group = groups.data() + groups.size() - 3;
        group[0] += pred * rows;
        group[1] += actual * rows;
        group[2] += rows;
    }
    double error = 0.0, weight = 0.0;
    for (size_t g = 0; g < groups.size(); g += 3) {
        const double rows = groups[g + 2];
        error += rows * std::fabs(groups[g + 1] / rows - groups[g] / rows);
        weight += rows;
    }
    return error / weight;
}

// The ECE's calibration groups and the spreads of their gaps (influence.calibration_gaps:
// the same float64 operations in the same order, so the same bits as its numpy form):
// the filled buckets (index `filled`, weights `negatives`, `positives`; `total` their
// sum) go to `points` bins of about equal weight as `calibration` puts them, and the
// bins that hold weight to at most `count` groups (merge_calibration). Writes each
// bucket's group (`group`), each group's gap sum `sum w (m_b - y)` (`gap_sum`) and its
// gap's standard error `sqrt(sum v (a - g)^2) / total` (`stderrs`, from f1 and f0, each
// class's `sum v / sum w`, and `v_all`, `f1 P + f0 N`); returns the number of groups.
inline int64_t calibration_spread(const int64_t* filled, const double* negatives,
                                  const double* positives, int64_t n, int64_t size,
                                  int64_t points, int64_t count, double total, double v_all,
                                  double f1, double f0, int64_t* group, double* gap_sum,
                                  double* stderrs) {
    // each bucket's bin (in `group` for now) and the bins' weights
    std::vector<double> bin_rows(size_t(points), 0.0);
    double below = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double rows = positives[i] + negatives[i];
        const int64_t bin = std::min(int64_t(below * double(points) / total), points - 1);
        group[i] = bin;
        bin_rows[size_t(bin)] += rows;
        below += rows;
    }
    // each bin that holds weight to its group (CalibrationGroups)
    std::vector<int64_t> bin_group(size_t(points), 0);
    int64_t groups = 0;
    CalibrationGroups grouping{count, total};
    for (int64_t k = 0; k < points; ++k) {
        if (!(bin_rows[size_t(k)] > 0)) continue;
        if (grouping.starts(bin_rows[size_t(k)])) ++groups;
        bin_group[size_t(k)] = groups - 1;
    }
    std::vector<double> v_sq(size_t(groups), 0.0), v_lin(size_t(groups), 0.0);
    std::fill(gap_sum, gap_sum + groups, 0.0);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t g = bin_group[size_t(group[i])];
        group[i] = g;
        const double mid = (double(filled[i]) + 0.5) / double(size);
        const double pos = positives[i], neg = negatives[i], rows = pos + neg;
        const double rest = 1 - mid;
        gap_sum[g] += rows * mid - pos;
        v_sq[size_t(g)] += f0 * neg * (mid * mid) + f1 * pos * (rest * rest);
        v_lin[size_t(g)] += f0 * neg * mid - f1 * pos * rest;
    }
    for (int64_t g = 0; g < groups; ++g) {
        const double gap = gap_sum[g] / total;
        const double spread = v_sq[size_t(g)] - 2 * gap * v_lin[size_t(g)] + gap * gap * v_all;
        stderrs[g] = std::sqrt(std::max(spread, 0.0)) / total;
    }
    return groups;
}

// The splits of the moments' terms: ce^2 in [2**-68, 2**11), (p - y)^4 and p^3 in
// [2**-78, 2), each in three parts; ce y is the logloss of a positive row (LossSplit).
using SquareLossSplit = exact::Split<11, 32, 3>;
using PowerSplit = exact::Split<1, 42, 3>;

// The moments' terms of a row, in moments_binary's order, each a float64 product of the
// row's own values (the same operations in the lanes and one row at a time).
enum { MOMENT_CECE, MOMENT_CEY, MOMENT_FOURTH, MOMENT_UPPP, MOMENT_TERMS };

// The sums of a block's split terms (BLOCK rows: pred, label and ce as float64; a padded
// row's ce 0, so that its terms are 0) into `block` (three parts a term), those out of
// their splits' ranges as 0, and bad[i] nonzero where one of row i's terms is; whether
// some were.
template <int BYTES>
MPIEVAL_INLINE bool moment_sums_loop(const double* __restrict pred,
                                     const double* __restrict label,
                                     const double* __restrict ce,
                                     double (&block)[3 * MOMENT_TERMS],
                                     double* __restrict bad) {
    using V = Lanes<BYTES>;
    constexpr int64_t LANES = BYTES / 8;
    V lanes[3 * MOMENT_TERMS] = {};
    Mask<BYTES> ok = Mask<BYTES>{} - 1;
    for (int64_t i = 0; i < BLOCK; i += LANES) {
        V p, y, l;
        std::memcpy(&p, pred + i, sizeof p);
        std::memcpy(&y, label + i, sizeof y);
        std::memcpy(&l, ce + i, sizeof l);
        const V e = p - y, e2 = e * e;
        V cece = l * l, cey = l * y, fourth = e2 * e2, uppp = p * p * p;
        Mask<BYTES> row_ok = Mask<BYTES>{} - 1;
        keep_in_range<SquareLossSplit, BYTES>(cece, row_ok);
        keep_in_range<LossSplit, BYTES>(cey, row_ok);
        keep_in_range<PowerSplit, BYTES>(fourth, row_ok);
        keep_in_range<PowerSplit, BYTES>(uppp, row_ok);
        ok &= row_ok;
        const V none = row_ok ? V{} : V{} + 1.0;
        std::memcpy(bad + i, &none, sizeof none);
        add_three<SquareLossSplit, BYTES>(lanes + 3 * MOMENT_CECE, cece);
        add_three<LossSplit, BYTES>(lanes + 3 * MOMENT_CEY, cey);
        add_three<PowerSplit, BYTES>(lanes + 3 * MOMENT_FOURTH, fourth);
        add_three<PowerSplit, BYTES>(lanes + 3 * MOMENT_UPPP, uppp);
    }
    return lane_totals<BYTES>(lanes, 3 * MOMENT_TERMS, ok, block);
}

#ifdef MPIEVAL_AVX2
[[gnu::target("avx2")]] inline bool moment_sums_avx2(const double* __restrict pred,
                                                     const double* __restrict label,
                                                     const double* __restrict ce,
                                                     double (&block)[3 * MOMENT_TERMS],
                                                     double* __restrict bad) {
    return moment_sums_loop<32>(pred, label, ce, block, bad);
}
#endif

inline bool moment_sums(const double* __restrict pred, const double* __restrict label,
                        const double* __restrict ce, double (&block)[3 * MOMENT_TERMS],
                        double* __restrict bad) {
#ifdef MPIEVAL_AVX2
    if (has_avx2()) return moment_sums_avx2(pred, label, ce, block, bad);
#endif
    return moment_sums_loop<16>(pred, label, ce, block, bad);
}

// The moments of unweighted rows with 0/1 labels (mpieval/kinds/auc/moments.py): into
// the accumulators moments + fields[k] * DIGITS (k = 0..3) the exact sums of ce^2, ce y,
// (p - y)^4 and p^3, ce the row's binary_logloss (logloss_block: the kernels' own log, the
// same bits on every machine), each a float64 product of the row's own values. A block's
// terms are split and summed in vector lanes (moment_sums: each part's sum exact), then
// added to a fixed-point Wide as three values a term; a term out of its split's range is
// added on its own. The same exact sums as adding every term to the Wide, so the same
// bits, without a dependent 128-bit addition a term.
struct MomentScratch {
    exact::Wide wide[MOMENT_TERMS];
    LoglossScratch block;
    double ce[BLOCK], bad[BLOCK];
};

template <class P, class L>
void moments_binary(const P* pred, const L* label, int64_t n, double* moments,
                    const int64_t* fields) {
    auto s = std::make_unique<MomentScratch>();
    for (auto& w : s->wide) w.clear();
    P pad_p[BLOCK];
    L pad_y[BLOCK];
    for (int64_t start = 0; start < n; start += BLOCK) {
        const int64_t m = std::min(BLOCK, n - start);
        const P* p_block = pred + start;
        const L* y_block = label + start;
        padded(p_block, y_block, m, pad_p, pad_y);  // their terms are not added
        logloss_block(p_block, y_block, s->block, s->ce);
        std::fill(s->ce + m, s->ce + BLOCK, 0.0);  // a padded row's terms: all 0
        const double* p = s->block.p;
        const double* y = s->block.y;
        double block[3 * MOMENT_TERMS];
        if (moment_sums(p, y, s->ce, block, s->bad)) {
            for (int64_t i = 0; i < m; ++i) {  // the terms out of range, one by one
                if (s->bad[i] == 0.0) continue;
                const double ce = s->ce[i], e = p[i] - y[i], e2 = e * e;
                const double cece = ce * ce, cey = ce * y[i], fourth = e2 * e2,
                             uppp = p[i] * p[i] * p[i];
                if (!SquareLossSplit::ok(cece)) s->wide[MOMENT_CECE].add(cece);
                if (!LossSplit::ok(cey)) s->wide[MOMENT_CEY].add(cey);
                if (!PowerSplit::ok(fourth)) s->wide[MOMENT_FOURTH].add(fourth);
                if (!PowerSplit::ok(uppp)) s->wide[MOMENT_UPPP].add(uppp);
            }
        }
        for (int k = 0; k < MOMENT_TERMS; ++k)
            for (int part = 0; part < 3; ++part) s->wide[k].add(block[3 * k + part]);
    }
    for (int k = 0; k < MOMENT_TERMS; ++k)
        s->wide[k].fold(moments + fields[k] * exact::DIGITS);
}

// -- slices: every slice's table and sums in one walk over a batch's rows ---------------
//
// accumulate_slices counts unweighted rows with 0/1 labels into the tables and exact sums
// of many slices at once (mpieval/slices.py: `--slice`), each row into one slice of each
// slice column: its slice in column d is codes[d * n + i]. A row's logloss and the other
// terms are computed once, whatever the number of columns, and each slice gets what
// accumulate_binary and moments_binary would give it over its rows alone: the same table
// counts and the same exact sums, so the same bits (an exact sum does not depend on the
// order of its terms, and a normalized accumulator holds one value one way).
//
// The sums of a slice are gathered in float64 partial sums (SlicePartial) of the rows'
// split values (exact::Split: up to 2**10 values of a split sum exactly), added to the
// slice's accumulators every 2**10 rows and at the end. A value out of its split's range
// (a pred below 2**-34, a logloss below 2**-73, ...) is added to the accumulators on its
// own.

// A row's split values, what it adds to its slice's partial sums (zero where a value is
// out of its split's range), in this order: pred's two parts for a negative row, for a
// positive one (the other label's 0), pred^2's two parts, logloss's three parts for a
// negative and for a positive row, ce^2's, (p - y)^4's and p^3's three parts, then the
// row's label and 1 (the partial sums count positives and rows), and a 0: SPLIT_WIDTH
// values, a whole number of vectors.
enum { SPLIT_P0, SPLIT_P1 = 2, SPLIT_Q = 4, SPLIT_L0 = 6, SPLIT_L1 = 9, SPLIT_CECE = 12,
       SPLIT_FOURTH = 15, SPLIT_UPPP = 18, SPLIT_POSITIVES = 21, SPLIT_ROWS = 22,
       SPLIT_WIDTH = 24 };

// A slice's partial sums since its last flush (SPLIT_WIDTH: each a sum of at most 2**10
// values of one column of the rows' split values, exact), how many rows they hold,
// additions to its accumulators since they were last normalized, and whether the batch
// touched it (1; 2: a slice of the first column, whose sums the whole's are).
struct alignas(64) SlicePartial {
    double sum[SPLIT_WIDTH];
    int32_t count, adds;
    int8_t touched;
};

constexpr int32_t SLICE_FLUSH = 1 << 10;                             // rows of a partial sum
constexpr int32_t SLICE_NORMALIZE = int32_t(exact::SAFE_ADDS) - 64;  // adds before normalizing

// Where a slice's flushes go: its sums (N_SUMS accumulators) and the rows of its moments
// (moments_binary's fields: v, ce^2, ce y, (p - y)^4, p^3).
struct SliceTargets {
    double* sums;
    double* moments;
    int64_t sums_stride, moments_stride;  // doubles from one slice to the next
    int64_t v, cece, cey, fourth, uppp;   // the moments' fields

    double* sums_of(int64_t s) const { return sums + s * sums_stride; }
    double* moment(int64_t s, int64_t field) const {
        return moments + s * moments_stride + field * exact::DIGITS;
    }
    void normalize(int64_t s) const {
        exact::normalize(sums_of(s), N_SUMS);
        for (int64_t field : {v, cece, cey, fourth, uppp}) exact::normalize(moment(s, field), 1);
    }
};

// Count `n` additions to slice s's accumulators since they were last normalized, and
// normalize them before they could lose a digit.
inline void count_adds(int32_t& adds, int32_t n, int64_t s, const SliceTargets& to) {
    adds += n;
    if (adds >= SLICE_NORMALIZE) {
        to.normalize(s);
        adds = 0;
    }
}

// Add partial sums v (SPLIT_WIDTH) to slice s's accumulators, each part on its own (the
// parts of a split do not add exactly in float64): abserr = S0 - S1 + N1 and sqrerr =
// sum p^2 - 2 S1 + N1 (S0, S1 pred's sums over negatives and positives, N1 the positives)
// as accumulate_binary, exactly. At most 6 additions to one accumulator.
inline void add_partial(const double* v, int64_t s, const SliceTargets& to) {
    double* sums = to.sums_of(s);
    for (int k = 0; k < 2; ++k) {
        const double p0 = v[SPLIT_P0 + k], p1 = v[SPLIT_P1 + k], q = v[SPLIT_Q + k];
        exact::add(row(sums, SUM_ABSERR), p0);
        exact::add(row(sums, SUM_ABSERR), -p1);
        exact::add(row(sums, SUM_SQRERR), q);
        exact::add(row(sums, SUM_SQRERR), -2.0 * p1);
        exact::add(row(sums, SUM_PRED), p0);
        exact::add(row(sums, SUM_PRED), p1);
        exact::add(row(sums, SUM_PRED_SQ), q);
        exact::add(row(sums, SUM_LABEL_PRED), p1);
    }
    const double n1 = v[SPLIT_POSITIVES], rows = v[SPLIT_ROWS];
    exact::add(row(sums, SUM_ABSERR), n1);
    exact::add(row(sums, SUM_SQRERR), n1);
    exact::add(row(sums, SUM_LABEL_SQ), n1);
    exact::add(row(sums, SUM_ROWS), rows);
    exact::add(to.moment(s, to.v), rows);
    for (int k = 0; k < 3; ++k) {
        exact::add(row(sums, SUM_LOGLOSS), v[SPLIT_L0 + k]);
        exact::add(row(sums, SUM_LOGLOSS), v[SPLIT_L1 + k]);
        exact::add(to.moment(s, to.cey), v[SPLIT_L1 + k]);
        exact::add(to.moment(s, to.cece), v[SPLIT_CECE + k]);
        exact::add(to.moment(s, to.fourth), v[SPLIT_FOURTH + k]);
        exact::add(to.moment(s, to.uppp), v[SPLIT_UPPP + k]);
    }
}

// The whole metric's table and sums, counted in the same walk as its slices (optional):
// its table row by row, its sums those of the first slice column's partial sums as they
// are flushed (each row is in exactly one slice of a column, and exact sums add in any
// order), so the same bits as accumulate_binary and moments_binary over every row.
struct WholeTargets {
    double* table;  // (2, size) float64
    int64_t size;
    SliceTargets to;  // its sums and moments: "slice" 0
    int32_t adds;     // additions to its accumulators since they were last normalized
};

// Add a slice's partial sums to its accumulators (and the whole's, when given) and clear
// them.
inline void flush_slice(SlicePartial& part, int64_t s, const SliceTargets& to,
                        WholeTargets* whole) {
    add_partial(part.sum, s, to);
    if (whole != nullptr) {
        add_partial(part.sum, 0, whole->to);
        count_adds(whole->adds, 6, 0, whole->to);
    }
    std::fill(part.sum, part.sum + SPLIT_WIDTH, 0.0);
    part.count = 0;
    count_adds(part.adds, 6, s, to);
}

// The rows of LANES columns' lanes: out[j] holds lane j of v[0], v[1], ... (a transpose
// in registers: GCC's and Clang's shuffles of vector extensions).
#if defined(__clang__)
#define MPIEVAL_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define MPIEVAL_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, Mask<BYTES>{__VA_ARGS__})
#endif
template <int BYTES>
MPIEVAL_INLINE void transpose(const Lanes<BYTES>* v, Lanes<BYTES>* out) {
    if constexpr (BYTES == 16) {
        out[0] = MPIEVAL_SHUFFLE(v[0], v[1], 0, 2);
        out[1] = MPIEVAL_SHUFFLE(v[0], v[1], 1, 3);
    } else {
        static_assert(BYTES == 32, "vectors of two or four float64");
        const Lanes<BYTES> even_ab = MPIEVAL_SHUFFLE(v[0], v[1], 0, 4, 2, 6);
        const Lanes<BYTES> odd_ab = MPIEVAL_SHUFFLE(v[0], v[1], 1, 5, 3, 7);
        const Lanes<BYTES> even_cd = MPIEVAL_SHUFFLE(v[2], v[3], 0, 4, 2, 6);
        const Lanes<BYTES> odd_cd = MPIEVAL_SHUFFLE(v[2], v[3], 1, 5, 3, 7);
        out[0] = MPIEVAL_SHUFFLE(even_ab, even_cd, 0, 1, 4, 5);
        out[1] = MPIEVAL_SHUFFLE(odd_ab, odd_cd, 0, 1, 4, 5);
        out[2] = MPIEVAL_SHUFFLE(even_ab, even_cd, 2, 3, 6, 7);
        out[3] = MPIEVAL_SHUFFLE(odd_ab, odd_cd, 2, 3, 6, 7);
    }
}
#undef MPIEVAL_SHUFFLE

// The split values of a block's rows (from p, y and their logloss ce, as float64) into
// split[i * SPLIT_WIDTH ...], and bad[i] nonzero where one of row i's values is out of its
// split's range. Branch-free, in the lanes of a vector of BYTES bytes (as block_sums_loop).
template <int BYTES>
MPIEVAL_INLINE void split_block_loop(const double* __restrict p_in,
                                     const double* __restrict y_in,
                                     const double* __restrict ce_in, double* __restrict split,
                                     double* __restrict bad) {
    using V = Lanes<BYTES>;
    constexpr int64_t LANES = BYTES / 8;
    for (int64_t i = 0; i < BLOCK; i += LANES) {
        V p, y, ce;
        std::memcpy(&p, p_in + i, sizeof p);
        std::memcpy(&y, y_in + i, sizeof y);
        std::memcpy(&ce, ce_in + i, sizeof ce);
        Mask<BYTES> ok = Mask<BYTES>{} - 1;
        const V e = p - y, e2 = e * e;
        V q = p * p, cece = ce * ce, fourth = e2 * e2, uppp = p * p * p;
        V pv = p, l = ce;
        keep_in_range<PredSplit, BYTES>(pv, ok);
        keep_in_range<PredSplit, BYTES>(q, ok);
        keep_in_range<LossSplit, BYTES>(l, ok);
        keep_in_range<SquareLossSplit, BYTES>(cece, ok);
        keep_in_range<PowerSplit, BYTES>(fourth, ok);
        keep_in_range<PowerSplit, BYTES>(uppp, ok);
        // the rows' split values as columns, then written row by row, LANES columns at a
        // time
        V column[SPLIT_WIDTH];
        const V negative = 1.0 - y;  // a product by 0 or 1: exact
        const V p_hi = (pv + PredSplit::C) - PredSplit::C, p_rest = pv - p_hi;
        const V q_hi = (q + PredSplit::C) - PredSplit::C;
        column[SPLIT_P0] = p_hi * negative;
        column[SPLIT_P0 + 1] = p_rest * negative;
        column[SPLIT_P1] = p_hi * y;
        column[SPLIT_P1 + 1] = p_rest * y;
        column[SPLIT_Q] = q_hi;
        column[SPLIT_Q + 1] = q - q_hi;
        three_parts<LossSplit, BYTES>(l * negative, column + SPLIT_L0);
        three_parts<LossSplit, BYTES>(l * y, column + SPLIT_L1);
        three_parts<SquareLossSplit, BYTES>(cece, column + SPLIT_CECE);
        three_parts<PowerSplit, BYTES>(fourth, column + SPLIT_FOURTH);
        three_parts<PowerSplit, BYTES>(uppp, column + SPLIT_UPPP);
        column[SPLIT_POSITIVES] = y;
        column[SPLIT_ROWS] = V{} + 1.0;
        column[SPLIT_WIDTH - 1] = V{};
        double* out = split + i * SPLIT_WIDTH;
        for (int c = 0; c < SPLIT_WIDTH; c += LANES) {
            V rows[LANES];
            transpose<BYTES>(column + c, rows);
            for (int64_t j = 0; j < LANES; ++j)
                std::memcpy(out + j * SPLIT_WIDTH + c, &rows[j], sizeof rows[j]);
        }
        const V none = ok ? V{} : V{} + 1.0;
        std::memcpy(bad + i, &none, sizeof none);
    }
}

// A row's values that split_block left out (out of their splits' ranges), each added to
// slice s's accumulators on its own, with the same float64 operations.
inline void add_unsplit(double p, int64_t y, double ce, int64_t s, const SliceTargets& to,
                        int32_t& adds) {
    double* sums = to.sums_of(s);
    const double q = p * p;
    const double e = p - double(y), e2 = e * e;
    if (!PredSplit::ok(p)) {
        exact::add(row(sums, SUM_PRED), p);
        if (y == 1) {
            exact::add(row(sums, SUM_ABSERR), -p);
            exact::add(row(sums, SUM_SQRERR), -2.0 * p);
            exact::add(row(sums, SUM_LABEL_PRED), p);
        } else {
            exact::add(row(sums, SUM_ABSERR), p);
        }
    }
    if (!PredSplit::ok(q)) {
        exact::add(row(sums, SUM_SQRERR), q);
        exact::add(row(sums, SUM_PRED_SQ), q);
    }
    if (!LossSplit::ok(ce)) {
        exact::add(row(sums, SUM_LOGLOSS), ce);
        if (y == 1) exact::add(to.moment(s, to.cey), ce);
    }
    if (!SquareLossSplit::ok(ce * ce)) exact::add(to.moment(s, to.cece), ce * ce);
    if (!PowerSplit::ok(e2 * e2)) exact::add(to.moment(s, to.fourth), e2 * e2);
    if (!PowerSplit::ok(p * p * p)) exact::add(to.moment(s, to.uppp), p * p * p);
    count_adds(adds, 1, s, to);
}

// The scratch of accumulate_slices.
template <class P, class L>
struct SliceScratch {
    LoglossScratch block;
    double ce[BLOCK], bad[BLOCK];
    alignas(64) double split[BLOCK * SPLIT_WIDTH];
    int64_t cell[BLOCK];
    P pred[BLOCK];
    L label[BLOCK];
};

// The m rows of a block (their split values `split`, labels y as float64) into the
// partial sums of their slices `code` (each slice's SPLIT_WIDTH sums added in vectors);
// a slice's partial sums that reach SLICE_FLUSH rows flushed (to the whole's too, when
// given: the first slice column); rows marked `bad` (when any_bad) add their out-of-range
// values on their own.
template <int BYTES, class C>
MPIEVAL_INLINE void add_block_loop(const double* __restrict split, const C* __restrict code,
                                   int64_t m, SlicePartial* __restrict parts,
                                   const double* __restrict p, const double* __restrict ce,
                                   const double* __restrict bad, bool any_bad,
                                   const SliceTargets& to, WholeTargets* whole) {
    using V = Lanes<BYTES>;
    constexpr int64_t LANES = BYTES / 8;
    const int8_t mark = whole != nullptr ? 2 : 1;
    for (int64_t i = 0; i < m; ++i) {
        const int64_t s = int64_t(code[i]);
        SlicePartial& part = parts[s];
        const double* v = split + i * SPLIT_WIDTH;
        for (int64_t k = 0; k < SPLIT_WIDTH; k += LANES) {
            V sum, add;
            std::memcpy(&sum, part.sum + k, sizeof sum);
            std::memcpy(&add, v + k, sizeof add);
            sum += add;
            std::memcpy(part.sum + k, &sum, sizeof sum);
        }
        part.touched = mark;
        if (any_bad && bad[i] != 0.0) {
            const int64_t y = int64_t(v[SPLIT_POSITIVES]);
            add_unsplit(p[i], y, ce[i], s, to, part.adds);
            if (whole != nullptr) add_unsplit(p[i], y, ce[i], 0, whole->to, whole->adds);
        }
        if (++part.count == SLICE_FLUSH) flush_slice(part, s, to, whole);
    }
}

#ifdef MPIEVAL_AVX2
[[gnu::target("avx2")]] inline void split_block_avx2(const double* __restrict p,
                                                     const double* __restrict y,
                                                     const double* __restrict ce,
                                                     double* __restrict split,
                                                     double* __restrict bad) {
    split_block_loop<32>(p, y, ce, split, bad);
}

template <class C>
[[gnu::target("avx2")]] void add_block_avx2(const double* __restrict split,
                                            const C* __restrict code, int64_t m,
                                            SlicePartial* __restrict parts,
                                            const double* __restrict p,
                                            const double* __restrict ce,
                                            const double* __restrict bad, bool any_bad,
                                            const SliceTargets& to, WholeTargets* whole) {
    add_block_loop<32>(split, code, m, parts, p, ce, bad, any_bad, to, whole);
}
#endif

inline void split_block(const double* __restrict p, const double* __restrict y,
                        const double* __restrict ce, double* __restrict split,
                        double* __restrict bad) {
#ifdef MPIEVAL_AVX2
    if (has_avx2()) return split_block_avx2(p, y, ce, split, bad);
#endif
    split_block_loop<16>(p, y, ce, split, bad);
}

template <class C>
void add_block(const double* __restrict split, const C* __restrict code, int64_t m,
               SlicePartial* __restrict parts, const double* __restrict p,
               const double* __restrict ce, const double* __restrict bad, bool any_bad,
               const SliceTargets& to, WholeTargets* whole) {
#ifdef MPIEVAL_AVX2
    if (has_avx2())
        return add_block_avx2(split, code, m, parts, p, ce, bad, any_bad, to, whole);
#endif
    add_block_loop<16>(split, code, m, parts, p, ce, bad, any_bad, to, whole);
}

// tables (slices, 2, size): float64 counts, or uint32 ones (half the bytes: the tables of
// many slices stay nearer the processor) that the caller adds to its float64 tables later;
// sums (slices, N_SUMS, DIGITS) and the moments' rows of `to`; codes (dims, n), each in
// [0, slices); whole (or null): the metric's own table and sums, counted in the same walk
// (WholeTargets; dims >= 1).
template <class P, class L, class C, class T>
void accumulate_slices(T* tables, int64_t size, int64_t slices, const P* pred,
                       const L* label, int64_t n, const C* codes, int64_t dims,
                       const SliceTargets& to, WholeTargets* whole) {
    auto scratch = std::make_unique<SliceScratch<P, L>>();
    std::vector<SlicePartial> parts(static_cast<size_t>(slices));
    const bool far = 2 * size * slices > FETCH_AHEAD_FROM;
    for (int64_t start = 0; start < n; start += BLOCK) {
        const int64_t m = std::min(BLOCK, n - start);
        const P* p_block = pred + start;
        const L* y_block = label + start;
        padded(p_block, y_block, m, scratch->pred, scratch->label);  // not added
        logloss_block(p_block, y_block, scratch->block, scratch->ce);
        split_block(scratch->block.p, scratch->block.y, scratch->ce, scratch->split,
                    scratch->bad);
        bool any_bad = false;
        for (int64_t i = 0; i < m; ++i) any_bad |= scratch->bad[i] != 0.0;
        int64_t* cell = scratch->cell;
        if (whole != nullptr) {  // the whole's table, as accumulate_binary's
            double* table = whole->table;
            const int64_t wsize = whole->size;
            for (int64_t i = 0; i < m; ++i)
                cell[i] = int64_t(y_block[i]) * wsize + bucket(double(p_block[i]), wsize);
            if (2 * wsize > FETCH_AHEAD_FROM) {
                for (int64_t i = 0; i < m; ++i) {
                    if (i + AHEAD < m) __builtin_prefetch(table + cell[i + AHEAD], 1);
                    table[cell[i]] += 1.0;
                }
            } else {
                for (int64_t i = 0; i < m; ++i) table[cell[i]] += 1.0;
            }
        }
        for (int64_t d = 0; d < dims; ++d) {
            const C* code = codes + d * n + start;
            // the tables, in a loop of their own (as accumulate_binary's)
            for (int64_t i = 0; i < m; ++i)
                cell[i] = (int64_t(code[i]) * 2 + int64_t(y_block[i])) * size +
                          bucket(double(p_block[i]), size);
            if (far) {
                for (int64_t i = 0; i < m; ++i) {
                    if (i + AHEAD < m) __builtin_prefetch(tables + cell[i + AHEAD], 1);
                    tables[cell[i]] += T(1);
                }
            } else {
                for (int64_t i = 0; i < m; ++i) tables[cell[i]] += T(1);
            }
            add_block(scratch->split, code, m, parts.data(), scratch->block.p, scratch->ce,
                      scratch->bad, any_bad, to, d == 0 ? whole : nullptr);
        }
    }
    for (int64_t s = 0; s < slices; ++s) {
        SlicePartial& part = parts[size_t(s)];
        if (!part.touched) continue;
        flush_slice(part, s, to, part.touched == 2 ? whole : nullptr);
        to.normalize(s);
    }
    if (whole != nullptr) whole->to.normalize(0);
}

}  // namespace mpieval::auc
