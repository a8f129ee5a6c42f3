// 0/1 labels checked and narrowed to uint8 in one pass (see mpieval/validation.py).
#pragma once

#include <algorithm>
#include <cstdint>

namespace mpieval::labels {

// out[i] = 1 for a label 1, 0 for a label 0; the first row holding anything else (-1:
// none), after which out holds no meaning. In blocks whose loop has no branch (so that a
// compiler vectorises it); a block with a bad value is looked at again for the first.
template <class T>
int64_t binary_to_u8(const T* values, int64_t n, uint8_t* out) {
    constexpr int64_t BLOCK = 4096;
    for (int64_t start = 0; start < n; start += BLOCK) {
        const int64_t m = std::min(BLOCK, n - start);
        const T* v = values + start;
        uint8_t* o = out + start;
        uint8_t bad = 0;
        for (int64_t i = 0; i < m; ++i) {
            const uint8_t one = v[i] == T(1);
            bad |= uint8_t(v[i] != T(0)) & uint8_t(one ^ 1);
            o[i] = one;
        }
        if (bad)
            for (int64_t i = 0; i < m; ++i)
                if (!(v[i] == T(0) || v[i] == T(1))) return start + i;
    }
    return -1;
}

}  // namespace mpieval::labels
