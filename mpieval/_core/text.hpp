// Numbers as the text Python's repr gives them (mpieval/jsonwriter.py's lists of numbers):
// the shortest digits that read back to the same double (std::to_chars), laid out as
// float.__repr__ does (fixed from 1e-4 up to below 1e16, with ".0" when integral, else
// d.ddde+XX with at least two exponent digits).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace mpieval::text {

inline void append_float(std::string& out, double value) {
    char buf[64];
    auto done = std::to_chars(buf, buf + sizeof buf - 1, value, std::chars_format::scientific);
    *done.ptr = '\0';  // to_chars writes no terminator; atoi reads the exponent up to it
    const char* p = buf;
    const char* end = done.ptr;
    if (*p == '-') {
        out.push_back('-');
        ++p;
    }
    char digits[32];
    int n = 0;
    while (p < end && *p != 'e') {
        if (*p != '.') digits[n++] = *p;
        ++p;
    }
    int exponent = std::atoi(p + 1);  // "e-05", "e+16"
    int point = exponent + 1;        // digits are 0.d1d2... x 10^point
    if (-4 < point && point <= 16) {
        if (point <= 0) {
            out.append("0.");
            out.append(static_cast<size_t>(-point), '0');
            out.append(digits, static_cast<size_t>(n));
        } else if (point < n) {
            out.append(digits, static_cast<size_t>(point));
            out.push_back('.');
            out.append(digits + point, static_cast<size_t>(n - point));
        } else {
            out.append(digits, static_cast<size_t>(n));
            out.append(static_cast<size_t>(point - n), '0');
            out.append(".0");
        }
        return;
    }
    out.push_back(digits[0]);
    if (n > 1) {
        out.push_back('.');
        out.append(digits + 1, static_cast<size_t>(n - 1));
    }
    out.push_back('e');
    out.push_back(exponent < 0 ? '-' : '+');
    int magnitude = std::abs(exponent);
    if (magnitude < 10) out.push_back('0');
    out.append(std::to_string(magnitude));
}

inline void append_int(std::string& out, long long value) {
    char buf[32];
    auto done = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, done.ptr);
}

}  // namespace mpieval::text
