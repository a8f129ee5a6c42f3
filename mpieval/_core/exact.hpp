// Exact sums of float64 values (see mpieval/kernels/exact.py): an accumulator is DIGITS
// float64 digits of BITS bits each, value = sum(digits[k] * 2**(BITS * k - 1074)).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mpieval::exact {

constexpr int BITS = 32;
constexpr int DIGITS = 68;
constexpr int64_t SAFE_ADDS = int64_t(1) << 20;
constexpr double RADIX = 4294967296.0;  // 2**BITS
constexpr int64_t LOW = (int64_t(1) << BITS) - 1;
constexpr int64_t MANTISSA = (int64_t(1) << 52) - 1;
constexpr int64_t HIDDEN = int64_t(1) << 52;

// Add the float64 value to the accumulator acc (DIGITS digits), exactly.
inline void add(double* acc, double value) {
    int64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const int64_t magnitude = bits & INT64_C(0x7FFFFFFFFFFFFFFF);
    if (magnitude == 0) return;
    int64_t exponent = magnitude >> 52;
    if (exponent == 2047) {  // inf or NaN: kept as such in the top digit
        acc[DIGITS - 1] += value;
        return;
    }
    int64_t mantissa = magnitude & MANTISSA;
    if (exponent == 0)
        exponent = 1;  // subnormal: no hidden bit
    else
        mantissa |= HIDDEN;
    const int64_t position = exponent - 1;
    const int64_t k = position >> 5;
    const int64_t shift = position & 31;
    const int64_t low = (mantissa & ((int64_t(1) << (BITS - shift)) - 1)) << shift;
    const int64_t rest = mantissa >> (BITS - shift);
    const double sign = bits < 0 ? -1.0 : 1.0;
    acc[k] += sign * double(low);
    acc[k + 1] += sign * double(rest & LOW);
    acc[k + 2] += sign * double(rest >> BITS);
}

// Carry every digit's excess to the next one, in each of `rows` accumulators of `digits`.
inline void normalize(double* acc, int64_t rows, int64_t digits = DIGITS) {
    for (int64_t row = 0; row < rows; ++row) {
        double* a = acc + row * digits;
        double carry = 0.0;
        for (int64_t k = 0; k < digits - 1; ++k) {
            const double digit = a[k] + carry;
            carry = std::floor(digit / RADIX);
            a[k] = digit - carry * RADIX;
        }
        a[digits - 1] += carry;
    }
}

// Add every value and normalize.
inline void add_values(double* acc, const double* values, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        add(acc, values[i]);
        if ((i + 1) % SAFE_ADDS == 0) normalize(acc, 1);
    }
    normalize(acc, 1);
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
        normalize(acc, 1);
    }
};

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

}  // namespace mpieval::exact
