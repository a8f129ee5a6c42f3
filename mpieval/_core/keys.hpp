// Hashing of uid keys (see mpieval/kernels/keys.py): mix64 and the hash of variable-length
// byte strings.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mpieval::keys {

inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x *= UINT64_C(0x94D049BB133111EB);
    x ^= x >> 31;
    return x;
}

// constants and zero_terms: (2, width) each, row-major; value i is
// data[offsets[i]:offsets[i + 1]].
template <class O>
void hash_texts(const O* offsets, int64_t n, const uint8_t* data, const uint64_t* constants,
                const uint64_t* zero_terms, int64_t width, uint64_t* keys, uint64_t* checks) {
    for (int64_t i = 0; i < n; ++i) {
        int64_t start = int64_t(offsets[i]);
        const int64_t stop = int64_t(offsets[i + 1]);
        uint64_t key = 0, check = 0;
        int64_t j = 0;
        while (start < stop) {
            uint64_t word = 0;
            const int64_t count = std::min<int64_t>(8, stop - start);
            for (int64_t b = 0; b < count; ++b) word |= uint64_t(data[start + b]) << (8 * b);
            key += mix64(word + constants[j]) - zero_terms[j];
            check += mix64(word + constants[width + j]) - zero_terms[width + j];
            start += 8;
            ++j;
        }
        keys[i] = mix64(key);
        checks[i] = mix64(check);
    }
}

}  // namespace mpieval::keys
