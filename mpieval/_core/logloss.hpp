// A row's logloss, shared by the kinds that report it (auc, wuauc): the pred clipped to
// [PRED_CLIP, 1 - PRED_CLIP] with Python's min and max, then mpieval's own `log` below.
#pragma once

#include <cstdint>
#include <cstring>

namespace mpieval {

constexpr double PRED_CLIP = 1e-15;

// Python's min and max of two floats: the first unless the second is strictly beyond it.
inline double py_max(double a, double b) { return b > a ? b : a; }
inline double py_min(double a, double b) { return b < a ? b : a; }

inline uint64_t bits_of(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}

inline double double_of(uint64_t bits) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

inline double clip(double p) { return py_min(py_max(p, PRED_CLIP), 1.0 - PRED_CLIP); }

// The natural log of a positive normal float64 (2**-1022 <= x < inf; no check): fdlibm's
// e_log.c (as in FreeBSD and musl), written in plain float64 operations without a branch or
// a table, so that a compiler vectorises a loop of it, and every operation rounded as
// written (no fast-math, no contraction into FMA): the same bits on every machine, which the
// C library's log does not promise. Error below 1 ulp. x = 2**k m with m in
// [sqrt(2)/2, sqrt(2)) by integer operations on the bits; with f = m - 1 and s = f / (2 + f),
// ln m = f - f*f/2 + s (f*f/2 + R(s*s)), R a polynomial of degree 7 in s*s (Remez);
// ln x = k ln2_hi + (ln m + k ln2_lo). The Python twin, for the tests and the plain-Python
// oracles: mpieval.kinds.auc.kernels.log.
inline double log(double x) {
    constexpr double LN2_HI = 0x1.62e42fee00000p-1;  // ln 2's first 32 bits: k * LN2_HI exact
    constexpr double LN2_LO = 0x1.a39ef35793c76p-33;
    constexpr double LG1 = 0x1.5555555555593p-1, LG2 = 0x1.999999997fa04p-2,
                     LG3 = 0x1.2492494229359p-2, LG4 = 0x1.c71c51d8e78afp-3,
                     LG5 = 0x1.7466496cb03dep-3, LG6 = 0x1.39a09d078c69fp-3,
                     LG7 = 0x1.2f112df3e5244p-3;
    constexpr uint64_t SQRT_HALF = UINT64_C(0x3fe6a09e) << 32;  // sqrt(1/2)'s top 32 bits
    constexpr uint64_t ONE = UINT64_C(0x3ff) << 52;
    constexpr uint64_t MANTISSA = (UINT64_C(1) << 52) - 1;
    constexpr uint64_t TWO_52 = UINT64_C(0x433) << 52;  // the bits of 2**52
    uint64_t bits = bits_of(x);
    // the exponent of x * sqrt(2) (by the bits), so that m = x / 2**k is in [sqrt(1/2), sqrt(2))
    bits += ONE - SQRT_HALF;
    const uint64_t biased = bits >> 52;  // k + 1023
    const uint64_t m_bits = (bits & MANTISSA) + SQRT_HALF;
    // k as a double without an integer conversion: (2**52 + biased) - (2**52 + 1023), exact
    const uint64_t k_bits = TWO_52 | biased;
    const double m = double_of(m_bits);
    const double k = double_of(k_bits) - (0x1p52 + 1023.0);
    const double f = m - 1.0;
    const double hfsq = 0.5 * f * f;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double w = z * z;
    const double t1 = w * (LG2 + w * (LG4 + w * LG6));
    const double t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    const double r = t2 + t1;
    return (((s * (hfsq + r) + k * LN2_LO) - hfsq) + f) + k * LN2_HI;
}

// A row's logloss for a 0/1 label.
inline double binary_logloss(double p, int64_t y) {
    const double q = clip(p);
    return -log(y == 1 ? q : 1.0 - q);
}

// Rows taken together: the logloss terms of a block are computed in one loop of fixed
// length (which the compiler vectorises: log has no branch), then the block's rows are
// added one by one (the auc kind's table and sums, the wuauc kind's sums per tag).
constexpr int64_t BLOCK = 1024;

// A block's scratch: its preds and labels as float64, the clipped preds, the logs' arguments.
struct LoglossScratch {
    double p[BLOCK], y[BLOCK], q[BLOCK], x[BLOCK];
};

// x86-64 with GCC or Clang: the loops of a block that vectorise are compiled twice, for the
// baseline (SSE2, two float64 at once) and for AVX2 (four), and the AVX2 copy runs where the
// processor has it. The same operations on more values at once: the same bits (no FMA:
// AVX2 alone does not enable it, and -ffp-contract=off forbids contracting anyway).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MPIEVAL_BASELINE_ONLY)
#define MPIEVAL_AVX2 1
// Whether the AVX2 copies run: where the processor has AVX2, unless turned off (the tests
// run both copies: mpieval._core.logloss.use_avx2).
inline bool& avx2_on() {
    static bool on = __builtin_cpu_supports("avx2");
    return on;
}
inline bool has_avx2() { return avx2_on(); }
#define MPIEVAL_INLINE [[gnu::always_inline]] inline
#else
#define MPIEVAL_INLINE inline
#endif

// The branch-free part of logloss_block, from s.p and s.y (see there).
MPIEVAL_INLINE void logloss_terms_loops(LoglossScratch& __restrict s, double* __restrict out) {
    for (int64_t i = 0; i < BLOCK; ++i) s.q[i] = clip(s.p[i]);
    for (int64_t i = 0; i < BLOCK; ++i)
        s.x[i] = s.q[i] * s.y[i] + (1.0 - s.q[i]) * (1.0 - s.y[i]);
    for (int64_t i = 0; i < BLOCK; ++i) out[i] = -log(s.x[i]);
}

#ifdef MPIEVAL_AVX2
[[gnu::target("avx2")]] inline void logloss_terms_avx2(LoglossScratch& __restrict s,
                                                       double* __restrict out) {
    logloss_terms_loops(s, out);
}
#endif

inline void logloss_terms(LoglossScratch& __restrict s, double* __restrict out) {
#ifdef MPIEVAL_AVX2
    if (has_avx2()) return logloss_terms_avx2(s, out);
#endif
    logloss_terms_loops(s, out);
}

// binary_logloss(pred[i], label[i]) of BLOCK rows (labels 0 or 1) into out, in loops over
// float64 arrays without a branch, which the compiler vectorises: p and y as float64 (kept
// in s.p and s.y for the caller), q = clip(p), then x = q y + (1 - q)(1 - y), which is q for
// y = 1 and 1 - q for y = 0 exactly (a product by 1 or 0 and an addition of 0), and
// out = -log(x): binary_logloss's bits.
template <class P, class L>
void logloss_block(const P* __restrict pred, const L* __restrict label,
                   LoglossScratch& __restrict s, double* __restrict out) {
    for (int64_t i = 0; i < BLOCK; ++i) s.p[i] = double(pred[i]);
    for (int64_t i = 0; i < BLOCK; ++i) s.y[i] = double(label[i]);
    logloss_terms(s, out);
}

}  // namespace mpieval
