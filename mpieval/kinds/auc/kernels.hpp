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
        const V l_hi = (l + LossSplit::C) - LossSplit::C;
        const V l_rest = l - l_hi;
        const V l_mid = (l_rest + LossSplit::C2) - LossSplit::C2;
        lanes[BLOCK_PRED] += p_hi;
        lanes[BLOCK_PRED + 1] += p_rest;
        lanes[BLOCK_LABEL_PRED] += p_hi * y;
        lanes[BLOCK_LABEL_PRED + 1] += p_rest * y;
        lanes[BLOCK_PRED_SQ] += q_hi;
        lanes[BLOCK_PRED_SQ + 1] += q - q_hi;
        lanes[BLOCK_LOGLOSS] += l_hi;
        lanes[BLOCK_LOGLOSS + 1] += l_mid;
        lanes[BLOCK_LOGLOSS + 2] += l_rest - l_mid;
    }
    int64_t oks[LANES];
    std::memcpy(oks, &ok, sizeof oks);
    bool out = false;
    for (int64_t j = 0; j < LANES; ++j) out |= oks[j] == 0;
    for (int k = 0; k < BLOCK_SUMS; ++k) {
        double values[LANES];
        std::memcpy(values, &lanes[k], sizeof values);
        block[k] = 0.0;
        for (int64_t j = 0; j < LANES; ++j) block[k] += values[j];  // exact
    }
    return out;
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
        if (m < BLOCK) {  // the last rows, padded (with pred 0, label 0: a logloss to drop)
            std::fill(scratch->pred, scratch->pred + BLOCK, P(0));
            std::fill(scratch->label, scratch->label + BLOCK, L(0));
            std::copy(p_block, p_block + m, scratch->pred);
            std::copy(y_block, y_block + m, scratch->label);
            p_block = scratch->pred;
            y_block = scratch->label;
        }
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

// The moments of unweighted rows with 0/1 labels (mpieval/kinds/auc/moments.py): into
// the accumulators moments + fields[k] * DIGITS (k = 0..3) the exact sums of ce^2, ce y,
// (p - y)^4 and p^3, ce the row's binary_logloss (logloss_block: the kernels' own log, the
// same bits on every machine), each a float64 product of the row's own values, computed a
// block at a time in loops the compiler vectorises.
struct MomentScratch {
    exact::Wide wide[4];
    LoglossScratch block;
    double ce[BLOCK], terms[4][BLOCK];
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
        if (m < BLOCK) {  // the last rows, padded; their terms are not added
            std::fill(pad_p, pad_p + BLOCK, P(0));
            std::fill(pad_y, pad_y + BLOCK, L(0));
            std::copy(p_block, p_block + m, pad_p);
            std::copy(y_block, y_block + m, pad_y);
            p_block = pad_p;
            y_block = pad_y;
        }
        logloss_block(p_block, y_block, s->block, s->ce);
        const double* p = s->block.p;
        const double* y = s->block.y;
        for (int64_t i = 0; i < BLOCK; ++i) {
            const double ce = s->ce[i], e = p[i] - y[i], e2 = e * e;
            s->terms[0][i] = ce * ce;
            s->terms[1][i] = ce * y[i];
            s->terms[2][i] = e2 * e2;
            s->terms[3][i] = p[i] * p[i] * p[i];
        }
        for (int k = 0; k < 4; ++k)
            for (int64_t i = 0; i < m; ++i) s->wide[k].add(s->terms[k][i]);
    }
    for (int k = 0; k < 4; ++k) s->wide[k].fold(moments + fields[k] * exact::DIGITS);
}

}  // namespace mpieval::auc
