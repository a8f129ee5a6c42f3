// Exact sums of float64 values (see mpieval/kernels/exact.py): an accumulator is DIGITS
// float64 digits of BITS bits each, value = sum(digits[k] * 2**(BITS * k - 1074)).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace mpieval::exact {

constexpr int BITS = 32;
constexpr int DIGITS = 68;
constexpr int64_t SAFE_ADDS = int64_t(1) << 20;
constexpr double RADIX = 4294967296.0;  // 2**BITS
constexpr int64_t LOW = (int64_t(1) << BITS) - 1;
constexpr int64_t MANTISSA = (int64_t(1) << 52) - 1;
constexpr int64_t HIDDEN = int64_t(1) << 52;

// A window of digits (many tags): while a thread's window is set (set_window in
// mpieval/kernels/exact.py), the accumulators that add() and normalize() take on that
// thread hold only digits window_first .. window_first + window_digits - 1 (the others 0),
// window_digits of them; a value that would reach a digit outside (or below two digits
// under the window's top one, kept for carries), or an infinite or NaN value, is not added
// and sets window_outside: the caller sums again with every digit. The same exact sum in
// fewer bytes (a tag's sums use few digits). Default: every digit.
inline thread_local int window_first = 0;
inline thread_local int window_digits = DIGITS;
inline thread_local bool window_outside = false;

// The digits a value adds to (add): from the one returned on, three of them; DIGITS - 1
// for an infinite or NaN value (kept in the top digit), -1 for 0.
inline int digit_of(double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const int64_t magnitude = bits & INT64_C(0x7FFFFFFFFFFFFFFF);
    if (magnitude == 0) return -1;
    const int64_t exponent = magnitude >> 52;
    if (exponent == 2047) return DIGITS - 1;
    return int((exponent == 0 ? 0 : exponent - 1) >> 5);
}

// Pairs (many tags): while a thread's pairs mode is set (thread_pairs in
// mpieval/kernels/exact.py), the accumulators that add() takes on that thread are two
// float64s, hi and lo, and the exact sum is hi + lo plus the thread's spills of that
// accumulator: each value is added to hi by an error-free sum (TwoSum: hi + value = s + e
// exactly), e to lo the same way (lo + e = t + f), and a nonzero f, the bits that hi and lo
// cannot hold (values whose bits span more than about 106), is kept as a spill (the
// accumulator's address, f). Without spills, fl(hi + lo) is the exact sum rounded once,
// ties to even: the same float64 as the digits give. 16 bytes an accumulator, not
// 8 * window_digits, and no carries (normalize does nothing). An infinite or NaN value,
// or a sum that overflows, is not added and sets window_outside, as outside a window.
inline thread_local bool pairs = false;
struct Spill {
    const double* acc;
    double value;
};
inline thread_local std::vector<Spill> spills;
// Spills a thread keeps before it compacts them (compact_spills): sums whose values' bits
// span wide (a user's pred sum cubed, next to a tiny one) may spill at most additions.
constexpr size_t SPILLS_KEPT = size_t(1) << 20;
inline thread_local size_t spill_limit = SPILLS_KEPT;

// a + b as s + e exactly, s = fl(a + b) (Knuth's TwoSum: no branch, any order of a and b;
// exact unless s overflows).
inline double two_sum(double a, double b, double& e) {
    const double s = a + b;
    const double b_part = s - a;
    e = (a - (s - b_part)) + (b - b_part);
    return s;
}

// value added to the pair (hi, lo): hi + lo + value = hi' + lo' + f exactly; returns
// f, the part that the pair cannot hold (0 when it holds the sum).
inline double pair_spill(double& hi, double& lo, double value) {
    double e, f;
    hi = two_sum(hi, value, e);
    lo = two_sum(lo, e, f);
    return f;
}

// pair_spill, true when the pair holds the sum (nothing spilled).
inline bool pair_step(double& hi, double& lo, double value) {
    return pair_spill(hi, lo, value) == 0.0;
}

// The thread's spills of each accumulator summed exactly and given again as the few
// float64s that sum rounds to (the bits below each one's rounding, in turn): the same
// exact sums in a few spills an accumulator (one when they span 53 bits, at most about
// 40); the thread keeps up to twice as many again before it compacts them once more
// (defined below to_double).
inline void compact_spills();

inline void add_pair(double* acc, double value) {
    double hi = acc[0], lo = acc[1];
    const double f = pair_spill(hi, lo, value);
    if (!std::isfinite(hi) || !std::isfinite(lo)) {
        window_outside = true;
        return;
    }
    acc[0] = hi;
    acc[1] = lo;
    if (f != 0.0) {
        spills.push_back({acc, f});
        if (spills.size() >= spill_limit) compact_spills();
    }
}

// Add the float64 value to the accumulator acc (DIGITS digits; the thread's window of
// them when Windowed), exactly.
template <bool Windowed>
inline void add_digits(double* acc, double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const int64_t magnitude = bits & INT64_C(0x7FFFFFFFFFFFFFFF);
    if (magnitude == 0) return;
    int64_t exponent = magnitude >> 52;
    if (exponent == 2047) {  // inf or NaN: kept as such in the top digit
        if (Windowed && window_digits != DIGITS) {
            window_outside = true;
            return;
        }
        acc[DIGITS - 1] += value;
        return;
    }
    int64_t mantissa = magnitude & MANTISSA;
    if (exponent == 0)
        exponent = 1;  // subnormal: no hidden bit
    else
        mantissa |= HIDDEN;
    const int64_t position = exponent - 1;
    int64_t k = position >> 5;
    if (Windowed && window_digits != DIGITS) {
        k -= window_first;
        if (k < 0 || k + 2 > window_digits - 2) {
            window_outside = true;
            return;
        }
    }
    const int64_t shift = position & 31;
    const int64_t low = (mantissa & ((int64_t(1) << (BITS - shift)) - 1)) << shift;
    const int64_t rest = mantissa >> (BITS - shift);
    const double sign = bits < 0 ? -1.0 : 1.0;
    acc[k] += sign * double(low);
    acc[k + 1] += sign * double(rest & LOW);
    acc[k + 2] += sign * double(rest >> BITS);
}

// Add the float64 value to the accumulator acc (DIGITS digits), exactly, whatever the
// thread's window or pairs mode.
inline void add_full(double* acc, double value) { add_digits<false>(acc, value); }

// Add the float64 value to the accumulator acc, exactly: DIGITS digits, the thread's
// window of them, or its pair (pairs mode).
inline void add(double* acc, double value) {
    if (pairs) {
        add_pair(acc, value);
        return;
    }
    add_digits<true>(acc, value);
}

// Carry every digit's excess to the next one, in each of `rows` accumulators of `digits`.
// The digits below the top one are whole numbers below 2**53 in magnitude (the top one may
// hold inf or NaN), so the carries run in int64: floor(digit / 2**32) is an arithmetic
// shift, the rest the low 32 bits; the same digits as the float64 steps
// (floor(digit / RADIX), digit - carry * RADIX), each exact.
// (digits < 0: the thread's window_digits; nothing in pairs mode, whose pairs carry nothing.)
inline void normalize(double* acc, int64_t rows, int64_t digits = -1) {
    if (digits < 0) {
        if (pairs) return;
        digits = window_digits;
    }
    for (int64_t row = 0; row < rows; ++row) {
        double* a = acc + row * digits;
        int64_t carry = 0;
        for (int64_t k = 0; k < digits - 1; ++k) {
            const int64_t digit = int64_t(a[k]) + carry;
            carry = digit >> BITS;  // floor division (arithmetic shift)
            a[k] = double(digit & LOW);
        }
        a[digits - 1] += double(carry);
    }
}

// The value of one accumulator (any digits, normalized or not) rounded once to the nearest
// float64, ties to even; inf or NaN when the top digit holds one (an infinite or NaN value
// was added), +-inf beyond the float64 range. The same as the Python to_float (exact.py).
// Only the digits first .. stop - 1 are read: the caller knows the others are 0 (a window
// of digits: many accumulators, each read in a few digits rather than all of them).
inline double to_double(const double* acc, int first = 0, int stop = DIGITS) {
    const double top = acc[DIGITS - 1];
    if (!std::isfinite(top)) return top;
    int high = stop - 1;  // the highest nonzero digit (most sums are 0 or few digits)
    while (high >= first && acc[high] == 0.0) --high;
    if (high < first) return 0.0;
    int lo = first;  // the lowest nonzero digit: the digits below stay 0 (carries go up)
    while (acc[lo] == 0.0) ++lo;
    // carried in int64 (as normalize): digits 0 .. DIGITS - 2 in [0, 2**32), the top one
    // the sign and the rest; a carry goes at most two digits above the highest nonzero one
    int64_t a[DIGITS];
    const int used = std::min(high + 3, DIGITS);
    for (int k = lo; k <= high; ++k) a[k] = int64_t(acc[k]);
    for (int k = high + 1; k < used; ++k) a[k] = 0;
    auto carry_up = [&a, lo, used]() {
        int64_t carry = 0;
        for (int k = lo; k < used - 1; ++k) {
            const int64_t digit = a[k] + carry;
            carry = digit >> BITS;
            a[k] = digit & LOW;
        }
        a[used - 1] += carry;
    };
    carry_up();
    double sign = 1.0;
    if (a[used - 1] < 0) {  // negative: the magnitude's digits, carried again
        for (int k = lo; k < used; ++k) a[k] = -a[k];
        carry_up();
        sign = -1.0;
    }
    if (used == DIGITS && a[DIGITS - 1] != 0) return sign * HUGE_VAL;  // >= 2**(32 * 67 - 1074)
    high = used - 1;
    while (high >= lo && a[high] == 0) --high;
    if (high < lo) return 0.0;
    // the top three digits (or fewer) as one integer m: the value is m * 2**base (in units of
    // 2**-1074) plus a rest below 2**base, nonzero when `sticky`
    const int low = std::max(high >= 2 ? high - 2 : 0, lo);
    unsigned __int128 m = 0;
    for (int k = high; k >= low; --k) m = (m << BITS) | static_cast<unsigned __int128>(uint64_t(a[k]));
    bool sticky = false;
    for (int k = lo; k < low; ++k) sticky = sticky || a[k] != 0;
    const int base = BITS * low;
    // bits of m (m > 0: its top digit a[high] is nonzero)
    const uint64_t m_high = uint64_t(m >> 64);
    const int length = m_high ? 128 - __builtin_clzll(m_high) : 64 - __builtin_clzll(uint64_t(m));
    // the last bit kept, as a power of 2**-1074: 53 significant bits, none below 2**-1074
    const int last = std::max(base + length - 53, 0);
    const int shift = last - base;
    uint64_t kept;
    if (shift <= 0) {  // every bit of m kept: m * 2**-shift < 2**53 (base - last bits more)
        kept = uint64_t(m) << -shift;
    } else {
        kept = uint64_t(m >> shift);
        const unsigned __int128 rest = m & ((static_cast<unsigned __int128>(1) << shift) - 1);
        const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
        if (rest > half || (rest == half && (sticky || (kept & 1)))) ++kept;
    }
    // kept <= 2**53: exact as a double; the scaling is exact unless it overflows (to inf)
    return sign * std::ldexp(double(kept), last - 1074);
}

// Add values[i, j] to the accumulator acc[index[i], first + j] (acc: `blocks` blocks of
// `fields` accumulators; values: n rows of `width`), exactly; every block added to ends
// normalized. Scratch: 4 bytes a block (its additions since its last normalize). The
// accumulators hold the thread's window of digits (window_digits of them).
inline void add_at(double* acc, int64_t blocks, int64_t fields, const int64_t* index,
                   const double* values, int64_t n, int64_t width, int64_t first) {
    std::vector<int32_t> adds(size_t(blocks), 0);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t block = index[i];
        double* a = acc + (block * fields + first) * window_digits;
        for (int64_t j = 0; j < width; ++j) add(a + j * window_digits, values[i * width + j]);
        if (++adds[size_t(block)] == SAFE_ADDS) {
            normalize(a, width);
            adds[size_t(block)] = 1;  // 1: still to normalize at the end
        }
    }
    for (int64_t block = 0; block < blocks; ++block)
        if (adds[size_t(block)])
            normalize(acc + (block * fields + first) * window_digits, width);
}

inline void compact_spills() {
    std::sort(spills.begin(), spills.end(), [](const Spill& a, const Spill& b) {
        return reinterpret_cast<uintptr_t>(a.acc) < reinterpret_cast<uintptr_t>(b.acc);
    });
    std::vector<Spill> kept;
    double full[DIGITS];
    for (size_t k = 0; k < spills.size();) {
        const double* acc = spills[k].acc;
        std::fill(full, full + DIGITS, 0.0);
        int64_t adds = 0;
        for (; k < spills.size() && spills[k].acc == acc; ++k) {
            add_full(full, spills[k].value);
            if (++adds % SAFE_ADDS == 0) normalize(full, 1, DIGITS);
        }
        // a sum of finite spills, each below half a pair's last bit: finite, a few steps
        for (double value; (value = to_double(full)) != 0.0;) {
            kept.push_back({acc, value});
            add_full(full, -value);
        }
    }
    spills.swap(kept);
    spill_limit = std::max(SPILLS_KEPT, 2 * spills.size());
}

// Add the exact value of the accumulator full (DIGITS digits) to the pair acc (pairs mode):
// its value rounded to a float64, added, and taken off full, until full is 0 (each step
// leaves at most half the last bit of the float64 added: a few steps). An infinite or NaN
// value, or one beyond the float64 range, sets window_outside.
inline void add_exact_to_pair(double* acc, double* full) {
    for (int step = 0; step < DIGITS; ++step) {
        const double value = to_double(full);
        if (value == 0.0) return;
        if (!std::isfinite(value)) {
            window_outside = true;
            return;
        }
        add_pair(acc, value);
        add_full(full, -value);
    }
}

// An exact sum of float64 values gathered in fixed point, one wide integer per exponent:
// each value adds its 53-bit integer mantissa (signed) to the 128-bit integer of its
// exponent, one integer addition (2**74 values fit), and fold() adds those integers to an
// accumulator's digits once, at the end of a batch. The same value as add() of each value
// to the accumulator, exactly, so the same bits; several times cheaper a value.
struct Wide {
    __int128 by_exponent[2048];  // index: the biased exponent (0: subnormals)
    double special;              // the sum of the infinite and NaN values added
    bool any_special;

    void clear() {
        std::memset(by_exponent, 0, sizeof by_exponent);
        special = 0.0;
        any_special = false;
    }

    void add(double value) {
        uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        const uint64_t magnitude = bits & UINT64_C(0x7FFFFFFFFFFFFFFF);
        const uint64_t exponent = magnitude >> 52;
        if (__builtin_expect(exponent == 2047, 0)) {
            special += value;
            any_special = true;
            return;
        }
        const int64_t mantissa =
            int64_t((magnitude & uint64_t(MANTISSA)) | (exponent ? uint64_t(HIDDEN) : 0));
        const int64_t sign = int64_t(bits) >> 63;  // 0 or -1
        by_exponent[exponent] += (mantissa ^ sign) - sign;
    }

    // Add the sum to the accumulator acc (normalized, or with room for 160 additions to
    // each digit) and normalize it.
    void fold(double* acc) const {
        for (int exponent = 0; exponent < 2047; ++exponent) {
            const __int128 total = by_exponent[exponent];
            if (total == 0) continue;
            const double sign = total < 0 ? -1.0 : 1.0;
            const unsigned __int128 size =
                total < 0 ? -static_cast<unsigned __int128>(total)
                          : static_cast<unsigned __int128>(total);
            const int position = (exponent ? exponent : 1) - 1;  // the mantissa's unit: 2**(position - 1074)
            const int k = position >> 5;
            const int shift = position & 31;
            const unsigned __int128 low = size << shift;
            const uint64_t high = shift ? uint64_t(size >> (128 - shift)) : 0;
            for (int d = 0; d < 4; ++d)
                acc[k + d] += sign * double(uint64_t(low >> (32 * d)) & uint64_t(LOW));
            acc[k + 4] += sign * double(high);
        }
        if (any_special) acc[DIGITS - 1] += special;
        normalize(acc, 1, DIGITS);
    }
};

// wide.fold(acc) for an accumulator of the thread's window of digits (set_window): the sum
// folded into every digit of scratch, then its digits added to the window's, normalized; a
// sum with a digit outside the window (or in its top one, kept for carries and the sign),
// or an infinite or NaN value, is not added and sets window_outside, as add() does.
inline void fold_into_window(const Wide& wide, double* acc) {
    if (pairs) {  // the exact sum as the float64s it rounds to, each added to the pair
        double full[DIGITS] = {};
        wide.fold(full);
        add_exact_to_pair(acc, full);
        return;
    }
    if (window_digits == DIGITS) {
        wide.fold(acc);
        return;
    }
    double full[DIGITS] = {};
    wide.fold(full);
    for (int k = 0; k < DIGITS; ++k) {
        if (full[k] == 0.0) continue;
        const int j = k - window_first;
        if (j < 0 || j > window_digits - 2) {
            window_outside = true;
            return;
        }
    }
    for (int j = 0; j < window_digits - 1; ++j) acc[j] += full[window_first + j];
    normalize(acc, 1);
}

// Add every value and normalize: many values by exponent in a Wide (one 128-bit addition
// a value), folded once; a few digit by digit. The same exact sum either way.
inline void add_values(double* acc, const double* values, int64_t n) {
    if (n >= 1024) {
        auto wide = std::make_unique<Wide>();
        wide->clear();
        for (int64_t i = 0; i < n; ++i) wide->add(values[i]);
        normalize(acc, 1);
        wide->fold(acc);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        add(acc, values[i]);
        if ((i + 1) % SAFE_ADDS == 0) normalize(acc, 1);
    }
    normalize(acc, 1);
}

// Exact sums of a block of up to 2**10 float64 values in plain float64 additions (which a
// compiler vectorises), for values in a known range: a value v with 2**-K <= v < 2**A, or
// 0, splits exactly into hi, v rounded to a multiple of 2**-G ((v + C) - C, C = 1.5 *
// 2**(52 - G): the sum rounds at C's last bit, 2**-G, and the difference is exact), and
// the rest v - hi (exact: at most 2**(-G-1), a multiple of v's last bit, at least
// 2**(-K-52)); with PARTS = 3, the rest splits again so, into mid, a multiple of 2**-G2
// (G2 = G + 44), and lo. 2**10 his are whole multiples of 2**-G below 2**(A+G+10) <=
// 2**53; as many mids multiples of 2**-G2 below 2**(G2-G-1+10) <= 2**53; and as many last
// parts multiples of 2**(-K-52) below 2**(K+52-G'-1+10) <= 2**53 (G' the last grid, G or
// G2): every partial sum of each, in any order, is exact, so the block's sum goes to a
// Wide as two or three values (the same exact sum, so the same bits, as adding each value
// to it). A value out of the range (ok() is false: negative, tiny, large, inf, NaN) is
// added to the Wide on its own.
template <int A, int G, int PARTS>
struct Split {
    static_assert(PARTS == 2 || PARTS == 3, "two or three parts");
    static constexpr int G2 = G + 44;
    static constexpr int K = (PARTS == 2 ? G : G2) - 8;
    static_assert(A + G + 10 <= 53 && G2 - G - 1 + 10 <= 53, "inexact");
    static constexpr double C = 1.5 * double(int64_t(1) << (52 - G));
    static constexpr double C2 = 1.5 / double(int64_t(1) << (G2 - 52));
    static constexpr double BELOW = double(int64_t(1) << A);
    static constexpr double FROM =  // 2**-K
        1.0 / double(int64_t(1) << (K / 2)) / double(int64_t(1) << (K - K / 2));

    // Whether v splits exactly (branch-free: vectorised as it is written).
    static bool ok(double v) { return (v < BELOW) & ((v >= FROM) | (v == 0.0)); }
};

// math.fsum of n finite values (n < SAFE_ADDS): their exact sum rounded once, ties to even
// (0.0 for none or a sum of 0): first as a pair (pair_step), whose float64 sum it is when
// no bit spilled (most short rows of terms), else added to DIGITS digits and rounded by
// to_double. Touches no thread state (its window, spills or pairs mode).
inline double fsum(const double* values, int64_t n) {
    double hi = 0.0, lo = 0.0;
    bool held = true;
    for (int64_t j = 0; j < n; ++j) held &= pair_step(hi, lo, values[j]);
    if (held && std::isfinite(hi) && std::isfinite(lo)) return hi + lo;
    double a[DIGITS] = {};
    int first = DIGITS, stop = 0;  // the digits the values add to
    for (int64_t j = 0; j < n; ++j) {
        const int k = digit_of(values[j]);
        if (k < 0) continue;
        add_full(a, values[j]);
        first = std::min(first, k);
        stop = std::max(stop, k + 3);
    }
    // carries: normalized digits of fewer than SAFE_ADDS values go at most two digits
    // above the highest one a value added to
    stop = std::min(stop + 2, DIGITS);
    return first >= stop ? 0.0 : to_double(a, first, stop);
}

// -- pairs (pairs mode) as floats and as digits ------------------------------------------

// The spills of accumulators (index, value) in index order: an accumulator's spills together.
inline std::vector<std::pair<int64_t, double>> spills_by_index(const int64_t* index,
                                                                const double* value, int64_t n) {
    std::vector<std::pair<int64_t, double>> sorted(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) sorted[size_t(k)] = {index[k], value[k]};
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    return sorted;
}

// out[i]: the exact sum of pair i (table[2i] + table[2i + 1]) and its spills (index, value:
// n_spills of them, indexes in 0 .. rows - 1) rounded once to a float64, ties to even: the
// float64 sum of the pair when it has no spill (the pair's sum is then exact), else its
// terms added to DIGITS digits and rounded by to_double. out holds the pairs of a table
// of `columns` columns a column after the other: pair i at out[(i % columns) * (rows /
// columns) + i / columns] (one column, the default: pair i at out[i]).
inline void pairs_to_floats(const double* table, int64_t rows, const int64_t* index,
                            const double* value, int64_t n_spills, double* out,
                            int64_t columns = 1) {
    const int64_t lines = rows / columns;
    const auto at = [&](int64_t i) -> double& {
        return out[(i % columns) * lines + i / columns];
    };
    for (int64_t line = 0; line < lines; ++line)
        for (int64_t c = 0; c < columns; ++c) {
            const int64_t i = line * columns + c;
            out[c * lines + line] = table[2 * i] + table[2 * i + 1];
        }
    const auto sorted = spills_by_index(index, value, n_spills);
    double full[DIGITS];
    for (size_t k = 0; k < sorted.size();) {
        const int64_t i = sorted[k].first;
        std::fill(full, full + DIGITS, 0.0);
        add_full(full, table[2 * i]);
        add_full(full, table[2 * i + 1]);
        int64_t adds = 2;
        for (; k < sorted.size() && sorted[k].first == i; ++k) {
            add_full(full, sorted[k].second);
            if (++adds % SAFE_ADDS == 0) normalize(full, 1, DIGITS);
        }
        at(i) = to_double(full);
    }
}

// The pairs (table: rows of them) and their spills added to accumulators out (rows of the
// thread's window of digits, zeroed by the caller), each normalized: the same exact sums
// in digits (to be summed over ranks). A value outside the window sets window_outside.
inline void pairs_to_digits(const double* table, int64_t rows, const int64_t* index,
                            const double* value, int64_t n_spills, double* out) {
    const int64_t digits = window_digits;
    for (int64_t i = 0; i < rows; ++i) {
        add(out + i * digits, table[2 * i]);
        add(out + i * digits, table[2 * i + 1]);
    }
    const auto sorted = spills_by_index(index, value, n_spills);
    int64_t adds = 0;
    for (size_t k = 0; k < sorted.size(); ++k) {
        const int64_t i = sorted[k].first;
        adds = (k > 0 && sorted[k - 1].first == i) ? adds + 1 : 3;
        add(out + i * digits, sorted[k].second);
        if (adds % SAFE_ADDS == 0) normalize(out + i * digits, 1);
    }
    normalize(out, rows);
}

}  // namespace mpieval::exact
