// Kernels of the auc kind (see kernels.py beside this file): the table and exact sums of a
// batch, the bucket-error sweep, the ROC and calibration curves of a table.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// The scratch of accumulate_binary: the batch's four exact sums in fixed point, a block's
// logloss terms (logloss_block), and a short last block's rows padded to BLOCK.
template <class P, class L>
struct BinaryScratch {
    exact::Wide wide[4];
    LoglossScratch block;
    double logloss[BLOCK];
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
        // the table first, in a loop of its own: its loads (cache misses for a large
        // table) overlap, free of the exact sums' chains of additions
        for (int64_t i = 0; i < m; ++i) {
            const int64_t y = int64_t(y_block[i]);
            table[y * size + bucket(double(p_block[i]), size)] += 1.0;
            positives += y;
        }
        logloss_block(p_block, y_block, scratch->block, scratch->logloss);
        for (int64_t i = 0; i < m; ++i) {
            const double p = double(p_block[i]);
            const int64_t y = int64_t(y_block[i]);
            wide[y].add(p);
            wide[2].add(p * p);
            wide[3].add(scratch->logloss[i]);
        }
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

}  // namespace mpieval::auc
