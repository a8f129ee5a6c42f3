// Hashing of uid keys (see mpieval/kernels/keys.py): mix64 and the hash of variable-length
// byte strings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mpieval::keys {

inline bool is_little_endian() {
    const uint16_t one = 1;
    uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

// The little-endian word of data[start:start + count] (count 1 to 8; bytes past it 0);
// `size` is data's length: on a little-endian machine, one 8-byte load when it stays
// inside data (the bytes past count masked off), else byte by byte.
inline uint64_t word_at(const uint8_t* data, int64_t size, int64_t start, int64_t count) {
    uint64_t word = 0;
    if (is_little_endian() && start + 8 <= size) {
        std::memcpy(&word, data + start, 8);
        return count == 8 ? word : word & ((uint64_t(1) << (8 * count)) - 1);
    }
    for (int64_t b = 0; b < count; ++b) word |= uint64_t(data[start + b]) << (8 * b);
    return word;
}

// The longest of the n texts (offsets[i + 1] - offsets[i]) and the first empty one's row
// (-1: none).
template <class O>
void text_lengths(const O* offsets, int64_t n, int64_t& longest, int64_t& first_empty) {
    longest = 0;
    first_empty = -1;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t length = int64_t(offsets[i + 1]) - int64_t(offsets[i]);
        longest = std::max(longest, length);
        if (length == 0 && first_empty < 0) first_empty = i;
    }
}

// constants and zero_terms: (2, width) each, row-major; value i is
// data[offsets[i]:offsets[i + 1]] (data holds `size` bytes).
// checks: uint64, or uint32 for their low 32 bits.
template <class O, class C>
void hash_texts(const O* offsets, int64_t n, const uint8_t* data, int64_t size,
                const uint64_t* constants, const uint64_t* zero_terms, int64_t width,
                uint64_t* keys, C* checks) {
    for (int64_t i = 0; i < n; ++i) {
        int64_t start = int64_t(offsets[i]);
        const int64_t stop = int64_t(offsets[i + 1]);
        uint64_t key = 0, check = 0;
        int64_t j = 0;
        while (start < stop) {
            const int64_t count = std::min<int64_t>(8, stop - start);
            const uint64_t word = word_at(data, size, start, count);
            key += mix64(word + constants[j]) - zero_terms[j];
            check += mix64(word + constants[width + j]) - zero_terms[width + j];
            start += 8;
            ++j;
        }
        keys[i] = mix64(key);
        checks[i] = C(mix64(check));
    }
}

// The decimal text of v ('-' and the digits, as str(v) in Python) as the little-endian
// words of its bytes (hash_texts' word_at; zero past the text); returns its length. A text
// of 8 bytes or fewer (most uids) is made in a register, a digit at a time from the right
// (bytes stored and then read as a word would stall the load); a longer one byte by byte.
constexpr int64_t DECIMAL_WORDS = 3;  // 20 digits and a sign

template <class T>
int64_t decimal_text(T v, uint64_t* words) {
    // the magnitude as unsigned (INT64_MIN's too)
    uint64_t magnitude = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    int64_t digits = 1;
    for (uint64_t bound = 10; digits < 20 && magnitude >= bound; bound *= 10) ++digits;
    const int64_t sign = v < 0 ? 1 : 0;
    const int64_t length = sign + digits;
    words[0] = words[1] = words[2] = 0;
    if (length <= 8) {
        uint64_t word = sign ? uint64_t('-') : 0;
        for (int64_t at = length - 1; at >= sign; --at) {
            word |= uint64_t('0' + magnitude % 10) << (8 * at);
            magnitude /= 10;
        }
        words[0] = word;
        return length;
    }
    if (sign) words[0] = uint64_t('-');
    for (int64_t at = length - 1; at >= sign; --at) {
        words[at >> 3] |= uint64_t('0' + magnitude % 10) << (8 * (at & 7));
        magnitude /= 10;
    }
    return length;
}

// The keys and checks of hash_texts of each value's decimal text (decimal_text), without
// the text: constants and zero_terms as hash_texts', of width DECIMAL_WORDS or more.
template <class T, class C>
void hash_decimals(const T* values, int64_t n, const uint64_t* constants,
                   const uint64_t* zero_terms, int64_t width, uint64_t* keys, C* checks) {
    uint64_t words[DECIMAL_WORDS];
    for (int64_t i = 0; i < n; ++i) {
        const int64_t length = decimal_text(values[i], words);
        uint64_t key = 0, check = 0;
        for (int64_t j = 0; j * 8 < length; ++j) {
            const uint64_t word = words[j];
            key += mix64(word + constants[j]) - zero_terms[j];
            check += mix64(word + constants[width + j]) - zero_terms[width + j];
        }
        keys[i] = mix64(key);
        checks[i] = C(mix64(check));
    }
}

}  // namespace mpieval::keys
