// The merge sort of the per-user kernels (stable, O(m log m), in scratch the caller owns)
// and the radix sort of uint64 keys (see mpieval/kernels/sort.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

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

// A radix sort without a payload (the payload type of key-only sorts).
struct NoPayload {};

// Rows this short are sorted by insertion.
constexpr int64_t TINY = 48;

// The most buckets of a level, 2**MAX_BITS: the rows moved into 2**16 buckets wrote to as
// many places at once (each write another page: a miss of the TLB), and two levels of
// 2**11 took 0.55 s on 20M keys of 22 bits where one of 2**16 and one of 2**6 took 0.74
// (doubles' bits 0.70 against 1.15 s, 64-bit hashes 0.73 against 1.14 s).
constexpr int MAX_BITS = 11;

namespace detail {

template <class Payload>
void insertion_sort(uint64_t* keys, Payload* payload, int64_t m) {
    constexpr bool carry = !std::is_same_v<Payload, NoPayload>;
    for (int64_t j = 1; j < m; ++j) {
        const uint64_t key = keys[j];
        Payload value{};
        if constexpr (carry) value = payload[j];
        int64_t i = j - 1;
        while (i >= 0 && keys[i] > key) {
            keys[i + 1] = keys[i];
            if constexpr (carry) payload[i + 1] = payload[i];
            --i;
        }
        keys[i + 1] = key;
        if constexpr (carry) payload[i + 1] = value;
    }
}

// One level: the rows' own key range [lo, hi] cut into 2**bits buckets by its top bits
// (about 16 rows a bucket, 256 to 2048 buckets: MAX_BITS), the rows moved into bucket
// order, then each bucket sorted the same way on its own range. `counts` is a stack of the levels'
// bucket bounds (each level pushes 2 * 2**bits + 1 and pops them).
template <class Payload>
void msd_level(uint64_t* keys, Payload* payload, uint64_t* tmp_keys, Payload* tmp_payload,
               int64_t m, std::vector<int64_t>& counts) {
    constexpr bool carry = !std::is_same_v<Payload, NoPayload>;
    if (m <= TINY) {
        insertion_sort(keys, payload, m);
        return;
    }
    uint64_t lo = keys[0], hi = keys[0];
    for (int64_t i = 1; i < m; ++i) {
        lo = std::min(lo, keys[i]);
        hi = std::max(hi, keys[i]);
    }
    if (lo == hi) return;
    const int width = 64 - __builtin_clzll(hi - lo);
    const int rows_bits = 64 - __builtin_clzll(uint64_t(m));
    const int bits = std::min(width, std::clamp(rows_bits - 4, 8, MAX_BITS));
    const int shift = width - bits;
    const int64_t buckets = int64_t(1) << bits;
    const size_t base = counts.size();
    counts.resize(base + 2 * buckets + 1);
    int64_t* bounds = counts.data() + base;  // bucket b: rows bounds[b] .. bounds[b + 1] - 1
    int64_t* next = bounds + buckets + 1;
    std::fill(bounds, bounds + buckets + 1, 0);
    for (int64_t i = 0; i < m; ++i) ++bounds[((keys[i] - lo) >> shift) + 1];
    for (int64_t b = 0; b < buckets; ++b) bounds[b + 1] += bounds[b];
    std::copy(bounds, bounds + buckets, next);
    for (int64_t i = 0; i < m; ++i) {
        const int64_t position = next[(keys[i] - lo) >> shift]++;
        tmp_keys[position] = keys[i];
        if constexpr (carry) tmp_payload[position] = payload[i];
    }
    std::memcpy(keys, tmp_keys, sizeof(uint64_t) * m);
    if constexpr (carry) std::memcpy(payload, tmp_payload, sizeof(Payload) * m);
    for (int64_t b = 0; b < buckets; ++b) {
        const int64_t first = counts[base + b], stop = counts[base + b + 1];  // may move
        if (stop - first > 1) {
            Payload* rest = nullptr;
            Payload* tmp_rest = nullptr;
            if constexpr (carry) {
                rest = payload + first;
                tmp_rest = tmp_payload + first;
            }
            msd_level(keys + first, rest, tmp_keys + first, tmp_rest, stop - first, counts);
        }
    }
    counts.resize(base);
}

}  // namespace detail

// Sort rows 0 .. m - 1 of keys (and their payload, unless Payload is NoPayload and payload
// null) by key, in place, through tmp_keys and tmp_payload (m rows each): a most
// significant digit radix sort on the keys' own range, so that the high bits all keys
// share (a float's sign and exponent) cost nothing, with buckets of a few rows sorted by
// insertion. Not stable: rows of one key end in some order (the same for the same input).
// Each level reads and moves the rows once; a level narrows the range by 8 bits or more, so
// there are at most 8 levels.
template <class Payload>
void radix_sort(uint64_t* keys, Payload* payload, uint64_t* tmp_keys, Payload* tmp_payload,
                int64_t m) {
    std::vector<int64_t> counts;
    detail::msd_level(keys, payload, tmp_keys, tmp_payload, m, counts);
}

}  // namespace mpieval::sort
