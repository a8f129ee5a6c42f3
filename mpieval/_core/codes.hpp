// Coding of a column of a few distinct byte strings (a tag column; see
// mpieval/kernels/codes.py): each row's code in order of first appearance, in one pass
// over an Arrow string array's buffers, the remap of small codes through a lookup, and
// codes looked up and counted in one pass (a batch's slices: mpieval/slices.py).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "keys.hpp"

namespace mpieval::codes {

// A distinct value in the table: its length, first word (its first 8 bytes, little-endian,
// 0 past its end) and code; code -1: an empty slot. Values of 8 bytes or fewer are equal
// when their lengths and first words are; longer ones are compared byte by byte.
struct Slot {
    uint64_t word;
    int64_t length;
    int64_t code;
};

// An open-addressing table of distinct byte strings (linear probing from the top bits of
// a value's hash): by entry, each value's hash and the start of its bytes in a buffer
// (stored[starts[entry]:starts[entry] + length], the buffer the caller's: Seen's, the
// batch's own data; Texts', copies).
struct Table {
    std::vector<Slot> slots = std::vector<Slot>(64, Slot{0, 0, -1});  // code: an entry
    std::vector<uint64_t> hashes;
    std::vector<int64_t> starts;
    int shift = 64 - 6;  // a hash's slot: its top (64 - shift) bits

    int64_t size() const { return int64_t(hashes.size()); }

    // The slot of the value of `length` bytes at `value` (hash h, first word `word`): its
    // own, or the empty one where it goes. A seen value is found in its first slot
    // mostly: the compares come before the test for an empty slot (whose word and length
    // match an empty value's).
    Slot* find(uint64_t h, uint64_t word, const uint8_t* stored, const uint8_t* value,
               int64_t length) {
        const uint64_t mask = slots.size() - 1;
        for (uint64_t i = h >> shift;; i = (i + 1) & mask) {
            Slot* slot = &slots[i];
            if (slot->word == word && slot->length == length && slot->code >= 0 &&
                (length <= 8 || std::memcmp(stored + starts[size_t(slot->code)] + 8,
                                            value + 8, size_t(length - 8)) == 0))
                return slot;
            if (slot->code < 0) return slot;
        }
    }

    // A new value in its (empty) slot, entry size(), its bytes at stored[start:]; the slots
    // doubled once more than 1 / `fill` full.
    void add(Slot* slot, uint64_t h, uint64_t word, int64_t length, int64_t start, int fill) {
        *slot = Slot{word, length, size()};
        hashes.push_back(h);
        starts.push_back(start);
        if (fill * size() > int64_t(slots.size())) grow();
    }

    // Twice the slots (every value is told apart already: each goes to the first empty
    // slot of its probe sequence).
    void grow() {
        std::vector<Slot> old(slots.size() * 2, Slot{0, 0, -1});
        old.swap(slots);
        --shift;
        const uint64_t mask = slots.size() - 1;
        for (const Slot& slot : old) {
            if (slot.code < 0) continue;
            uint64_t i = hashes[size_t(slot.code)] >> shift;
            while (slots[i].code >= 0) i = (i + 1) & mask;
            slots[i] = slot;
        }
    }
};

// A batch's distinct values (first_appearance): a Table over the batch's data, a value's
// code its entry, and each value's first row; a quarter full at most (few collisions:
// most values found in their first slot; the table is thrown away with the batch).
struct Seen : Table {
    std::vector<int64_t> first_rows;

    explicit Seen(int64_t room) {
        hashes.reserve(size_t(room));
        first_rows.reserve(size_t(room));
        starts.reserve(size_t(room));
    }

    void add(Slot* slot, uint64_t h, uint64_t word, int64_t length, int64_t row, int64_t start) {
        first_rows.push_back(row);
        Table::add(slot, h, word, length, start, 4);
    }
};

// The table hash of a value of `length` bytes whose first word is `first`, the rest
// data[start + 8:stop]: the words folded by multiplication (the top bits, on which every
// bit of the words bears, are the slot).
inline uint64_t text_hash(uint64_t first, int64_t length, const uint8_t* data, int64_t size,
                          int64_t start, int64_t stop) {
    uint64_t h = (first ^ uint64_t(length)) * UINT64_C(0x9E3779B97F4A7C15);
    for (start += 8; start < stop; start += 8) {
        const int64_t count = stop - start < 8 ? stop - start : 8;
        h = (h ^ (h >> 29) ^ keys::word_at(data, size, start, count)) *
            UINT64_C(0xBF58476D1CE4E5B9);
    }
    return h;
}

// Text values kept with their codes across calls (a run's tag or slice values,
// mpieval.tags.TagCodes): a Table over copies of the values' bytes, each value's code
// given by its caller, half full at most (kept while the run lasts). A batch's values are
// looked up here rather than in a Python dict of str (whose look-ups hash each new str
// object).
struct Texts : Table {
    std::vector<int64_t> codes;  // an entry's caller's code
    std::vector<uint8_t> bytes;

    // The code of the value data[0:length], or -1 when it is not here.
    int64_t code_of(const uint8_t* data, int64_t length) {
        const uint64_t word = length ? keys::word_at(data, length, 0, length < 8 ? length : 8)
                                     : 0;
        const Slot* slot = find(text_hash(word, length, data, length, 0, length), word,
                                bytes.data(), data, length);
        return slot->code < 0 ? -1 : codes[size_t(slot->code)];
    }

    // The value data[0:length] with code `code`; false (nothing added) when it is here.
    bool add(const uint8_t* data, int64_t length, int64_t code) {
        const uint64_t word = length ? keys::word_at(data, length, 0, length < 8 ? length : 8)
                                     : 0;
        const uint64_t h = text_hash(word, length, data, length, 0, length);
        Slot* slot = find(h, word, bytes.data(), data, length);
        if (slot->code >= 0) return false;
        codes.push_back(code);
        const int64_t start = int64_t(bytes.size());
        bytes.insert(bytes.end(), data, data + length);
        Table::add(slot, h, word, length, start, 2);
        return true;
    }
};

// Row i's value is data[offsets[i]:offsets[i + 1]] (data holds `size` bytes). codes[i] gets
// the index of row i's value among the distinct values in order of first appearance, and
// first_rows the first row of each. False when there are more than `limit` distinct
// values (codes and first_rows then hold only part of the answer). `limit` is at most
// 65536, the uint16 codes.
template <class O>
bool first_appearance(const O* offsets, int64_t n, const uint8_t* data, int64_t size,
                      int64_t limit, uint16_t* codes, std::vector<int64_t>& first_rows) {
    Seen seen(limit < 64 ? limit : 64);  // room for a few values (the vectors grow)
    bool fits = true;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t start = int64_t(offsets[i]), stop = int64_t(offsets[i + 1]);
        const int64_t length = stop - start;
        const uint64_t word = length ? keys::word_at(data, size, start, length < 8 ? length : 8)
                                     : 0;
        const uint64_t h = text_hash(word, length, data, size, start, stop);
        Slot* slot = seen.find(h, word, data, data + start, length);
        if (slot->code < 0) {
            if (seen.size() >= limit) {
                fits = false;
                break;
            }
            const int64_t code = seen.size();
            seen.add(slot, h, word, length, i, start);  // (slot is stale after this)
            codes[i] = uint16_t(code);
        } else {
            codes[i] = uint16_t(slot->code);
        }
    }
    first_rows.swap(seen.first_rows);
    return fits;
}

// out[i] = lookup[codes[i]] (lookup holds `size` entries), a code equal to `none` (when
// has_none) written as `none_out` instead: the code of no value (a row without a tag).
// Codes and lookup of uint16 or uint32 (C, O). Returns the first i whose code is past the
// end of lookup and not `none` (out then holds only part of the answer), or -1.
template <class C, class O>
int64_t remap(const C* codes, int64_t n, const O* lookup, int64_t size, O* out, bool has_none,
              C none, O none_out) {
    for (int64_t i = 0; i < n; ++i) {
        const C code = codes[i];
        if (int64_t(code) < size) {
            out[i] = lookup[code];
        } else if (has_none && code == none) {
            out[i] = none_out;
        } else {
            return i;
        }
    }
    return -1;
}

// out[i] = lookup[codes[i]] and counts[codes[i]] += 1 (lookup and counts hold `size`
// entries; codes of any integer type). Returns the first i whose code is outside [0, size)
// (out and counts then hold only part of the answer), or -1.
template <class C>
int64_t lookup_counted(const C* codes, int64_t n, const int32_t* lookup, int64_t size,
                       int32_t* out, int64_t* counts) {
    for (int64_t i = 0; i < n; ++i) {
        const C code = codes[i];
        if (!(code >= 0 && int64_t(code) < size)) return i;  // (unsigned: >= 0 always)
        out[i] = lookup[int64_t(code)];
        ++counts[int64_t(code)];
    }
    return -1;
}

}  // namespace mpieval::codes
