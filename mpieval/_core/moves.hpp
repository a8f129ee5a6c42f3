// The per-user rows' moves to the ranks that own their users (see mpieval/kernels/moves.py):
// each row's owner and the rows per owner in one pass, then each column split in one pass
// into the rows that stay (compacted in place) and the rows that leave (packed by owner).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "keys.hpp"

namespace mpieval::moves {

// x mod d for a d fixed over many x, without a division: Lemire, Kaser and Kurz's direct
// remainder ("Faster remainder by direct computation", 2019) with a 128-bit reciprocal
// m = floor((2^128 - 1) / d) + 1, exact for every 64-bit x and 1 <= d < 2^64 (the same
// value as x % d); a power of two is a mask.
class Remainder {
public:
    explicit Remainder(uint64_t d)
        : d_(d), mask_((d & (d - 1)) == 0 ? d - 1 : 0), pow2_((d & (d - 1)) == 0),
          m_(~static_cast<unsigned __int128>(0) / d + 1) {}

    uint64_t operator()(uint64_t x) const {
        if (pow2_) return x & mask_;
        const unsigned __int128 low = m_ * x;  // the fraction x / d, mod 1, in 128 bits
        const unsigned __int128 below = static_cast<unsigned __int128>(uint64_t(low)) * d_;
        const unsigned __int128 above =
            static_cast<unsigned __int128>(uint64_t(low >> 64)) * d_ + (below >> 64);
        return uint64_t(above >> 64);
    }

private:
    uint64_t d_, mask_;
    bool pow2_;
    unsigned __int128 m_;
};

// dest[i] = mix64(keys[i]) mod size, and counts[d] the rows of owner d (counts zeroed first).
// The rows of each owner counted at the end, from dest (a count kept in the loop would chain
// each row's increment to the last one's store when few ranks share the rows).
inline void owners(const uint64_t* keys, int64_t n, uint64_t size, uint16_t* dest,
                   int64_t* counts) {
    const Remainder mod(size);
    for (int64_t i = 0; i < n; ++i) dest[i] = uint16_t(mod(keys::mix64(keys[i])));
    for (uint64_t d = 0; d < size; ++d) counts[d] = 0;
    if (size <= 4) {  // four counts a lane, summed: no increment waits for the last
        int64_t lanes[4][4] = {};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            ++lanes[0][dest[i]];
            ++lanes[1][dest[i + 1]];
            ++lanes[2][dest[i + 2]];
            ++lanes[3][dest[i + 3]];
        }
        for (; i < n; ++i) ++lanes[0][dest[i]];
        for (uint64_t d = 0; d < size; ++d)
            counts[d] = lanes[0][d] + lanes[1][d] + lanes[2][d] + lanes[3][d];
        return;
    }
    for (int64_t i = 0; i < n; ++i) ++counts[dest[i]];
}

// bucket[i] = the top `bits` bits of mix64(keys[i]) (1 <= bits <= 16), and counts[b] the
// keys of bucket b (2^bits of them, zeroed first): a user's rows all in one bucket.
inline void buckets(const uint64_t* keys, int64_t n, int bits, uint16_t* bucket,
                    int64_t* counts) {
    const int shift = 64 - bits;
    for (int64_t i = 0; i < n; ++i) bucket[i] = uint16_t(keys::mix64(keys[i]) >> shift);
    for (int64_t b = 0; b < (int64_t(1) << bits); ++b) counts[b] = 0;
    for (int64_t i = 0; i < n; ++i) ++counts[bucket[i]];
}

// Each row's place among its owner's rows: place[i], the rows of dest[i] before row i.
inline void places(const uint16_t* dest, int64_t n, int64_t size, uint32_t* place) {
    std::vector<uint32_t> placed(static_cast<size_t>(size), 0);
    for (int64_t i = 0; i < n; ++i) place[i] = placed[dest[i]]++;
}

// Column rows of W bytes: row i goes to starts[dest[i]] + (its place among its owner's rows)
// * W. This rank's start is the column itself, so its rows are compacted to its front, in
// order (a place is at most i: a row is never written before it is read). Branch-free: the
// owners come at random. The places: `place` (see places), or with two owners and no
// `place`, counted as the rows come (two counts in registers: no store to wait for).
template <int64_t W>
void scatter_rows(const uint16_t* dest, const uint32_t* place, int64_t n, uint8_t* column,
                  uint8_t* const* starts) {
    const auto move = [&](int64_t i, int64_t at) {
        unsigned char row[W];
        std::memcpy(row, column + i * W, W);
        std::memcpy(starts[dest[i]] + at * W, row, W);
    };
    if (place) {
        for (int64_t i = 0; i < n; ++i) move(i, place[i]);
        return;
    }
    int64_t placed[2] = {0, 0};
    for (int64_t i = 0; i < n; ++i) {
        const int64_t d = dest[i];
        move(i, d ? placed[1] : placed[0]);
        placed[0] += d ^ 1;
        placed[1] += d;
    }
}

inline void scatter_rows(const uint16_t* dest, const uint32_t* place, int64_t n,
                         uint8_t* column, int64_t width, uint8_t* const* starts) {
    switch (width) {
        case 1: scatter_rows<1>(dest, place, n, column, starts); return;
        case 2: scatter_rows<2>(dest, place, n, column, starts); return;
        case 4: scatter_rows<4>(dest, place, n, column, starts); return;
        case 8: scatter_rows<8>(dest, place, n, column, starts); return;
        default: break;
    }
    std::vector<uint32_t> counted;
    if (!place) {
        counted.resize(static_cast<size_t>(n));
        places(dest, n, 2, counted.data());
        place = counted.data();
    }
    for (int64_t i = 0; i < n; ++i)
        std::memmove(starts[dest[i]] + int64_t(place[i]) * width, column + i * width,
                     size_t(width));
}

// Every column (widths[c] bytes a row) split: the rows of `rank` compacted to the front of
// their column, the others packed into `out` as records of sum(widths) bytes, owner d's from
// record firsts[d] on, each owner's rows column after column (column c's from byte
// firsts[d] * record + counts[d] * (widths before c)). The rows of each owner in order;
// counts[d] (`size` of them) is the rows of owner d.
inline void split_columns(const uint16_t* dest, int64_t n, int64_t size, int64_t rank,
                          const std::vector<uint8_t*>& columns, const std::vector<int64_t>& widths,
                          uint8_t* out, const int64_t* firsts, const int64_t* counts) {
    int64_t record = 0;
    for (int64_t w : widths) record += w;
    std::unique_ptr<uint32_t[]> place;  // two owners: none (counted in each column's pass)
    if (size > 2) {
        place.reset(new uint32_t[static_cast<size_t>(n)]);  // every entry written: not zeroed
        places(dest, n, size, place.get());
    }
    std::vector<uint8_t*> starts(static_cast<size_t>(size));
    int64_t before = 0;
    for (size_t c = 0; c < columns.size(); ++c) {
        for (int64_t d = 0; d < size; ++d)
            starts[size_t(d)] = out + firsts[d] * record + counts[d] * before;
        starts[size_t(rank)] = columns[c];
        scatter_rows(dest, place.get(), n, columns[c], widths[c], starts.data());
        before += widths[c];
    }
}

}  // namespace mpieval::moves
