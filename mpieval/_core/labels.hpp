// 0/1 labels checked and narrowed to uint8 in one pass (see mpieval/validation.py).
#pragma once

#include <cstdint>

namespace mpieval::labels {

// out[i] = 1 for a label 1, 0 for a label 0; the first row holding anything else (-1:
// none), after which out is not written.
template <class T>
int64_t binary_to_u8(const T* values, int64_t n, uint8_t* out) {
    for (int64_t i = 0; i < n; ++i) {
        const T value = values[i];
        if (!(value == T(0) || value == T(1))) return i;
        out[i] = value == T(1) ? 1 : 0;
    }
    return -1;
}

}  // namespace mpieval::labels
