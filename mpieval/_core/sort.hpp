// The merge sort of the per-user kernels (stable, O(m log m), in scratch the caller owns)
// and the LSD radix sort of uint64 keys (see mpieval/kernels/sort.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace mpieval::sort {

constexpr int64_t RUN = 16;

// Sort rows 0 .. m - 1 of `first` (with `second`, when not null, by (first, second));
// CountInversions: return the pairs i < j with first[i] > first[j] (else 0).
template <bool CountInversions, class A, class S = A>
int64_t merge_sort(A* first, A* tmp_first, int64_t m, S* second = nullptr,
                   S* tmp_second = nullptr) {
    int64_t inversions = 0;
    const bool pairs = second != nullptr;
    for (int64_t start = 0; start < m; start += RUN) {
        const int64_t stop = std::min(start + RUN, m);
        for (int64_t j = start + 1; j < stop; ++j) {
            const A a = first[j];
            S b{};
            if (pairs) b = second[j];
            int64_t i = j - 1;
            while (i >= start &&
                   (first[i] > a || (pairs && first[i] == a && second[i] > b))) {
                first[i + 1] = first[i];
                if (pairs) second[i + 1] = second[i];
                --i;
                if constexpr (CountInversions) ++inversions;
            }
            first[i + 1] = a;
            if (pairs) second[i + 1] = b;
        }
    }
    for (int64_t width = RUN; width < m; width *= 2) {
        for (int64_t start = 0; start < m; start += 2 * width) {
            const int64_t mid = std::min(start + width, m);
            const int64_t stop = std::min(start + 2 * width, m);
            if (mid >= stop || first[mid - 1] < first[mid] ||
                (first[mid - 1] == first[mid] && (!pairs || second[mid - 1] <= second[mid])))
                continue;  // already in order
            int64_t i = start, j = mid, k = start;
            while (i < mid && j < stop) {
                if (first[j] < first[i] ||
                    (pairs && first[j] == first[i] && second[j] < second[i])) {
                    tmp_first[k] = first[j];
                    if (pairs) tmp_second[k] = second[j];
                    if constexpr (CountInversions) inversions += mid - i;
                    ++j;
                } else {
                    tmp_first[k] = first[i];
                    if (pairs) tmp_second[k] = second[i];
                    ++i;
                }
                ++k;
            }
            while (i < mid) {
                tmp_first[k] = first[i];
                if (pairs) tmp_second[k] = second[i];
                ++i;
                ++k;
            }
            for (int64_t t = start; t < k; ++t) {
                first[t] = tmp_first[t];
                if (pairs) second[t] = tmp_second[t];
            }
        }
    }
    return inversions;
}

constexpr int DIGIT_BITS = 8;

// Sort rows 0 .. m - 1 of keys and payload by key (stable); true when the sorted rows ended
// up in tmp_keys and tmp_payload.
template <class Payload>
bool radix_sort(uint64_t* keys, Payload* payload, uint64_t* tmp_keys, Payload* tmp_payload,
                int64_t m) {
    constexpr int digits = 64 / DIGIT_BITS;
    constexpr int buckets = 1 << DIGIT_BITS;
    constexpr uint64_t mask = buckets - 1;
    int64_t counts[digits][buckets];
    std::memset(counts, 0, sizeof counts);
    for (int64_t i = 0; i < m; ++i) {
        const uint64_t key = keys[i];
        for (int d = 0; d < digits; ++d) ++counts[d][(key >> (d * DIGIT_BITS)) & mask];
    }
    uint64_t* source_keys = keys;
    Payload* source_payload = payload;
    uint64_t* target_keys = tmp_keys;
    Payload* target_payload = tmp_payload;
    bool swapped = false;
    for (int d = 0; d < digits; ++d) {
        const int shift = d * DIGIT_BITS;
        if (m == 0 || counts[d][(keys[0] >> shift) & mask] == m) continue;
        int64_t start = 0;
        for (int b = 0; b < buckets; ++b) {
            const int64_t count = counts[d][b];
            counts[d][b] = start;
            start += count;
        }
        for (int64_t i = 0; i < m; ++i) {
            const uint64_t key = source_keys[i];
            const uint64_t b = (key >> shift) & mask;
            const int64_t position = counts[d][b];
            target_keys[position] = key;
            target_payload[position] = source_payload[i];
            counts[d][b] = position + 1;
        }
        std::swap(source_keys, target_keys);
        std::swap(source_payload, target_payload);
        swapped = !swapped;
    }
    return swapped;
}

}  // namespace mpieval::sort
