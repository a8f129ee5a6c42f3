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

}  // namespace mpieval::exact
