// Per-user AUC sums of the wuauc kind (see kernels.py beside this file): the grouping of rows
// by user (a table of keys, no sort), the pass over users, the rows' sums and the paired
// differences.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "exact.hpp"
#include "keys.hpp"
#include "logloss.hpp"
#include "sort.hpp"

namespace mpieval::wuauc {

constexpr int64_t SHORT = 16;
// Rows ahead that a gather in packed order asks the memory for: the rows of one user lie
// anywhere in the columns, and each read of them would otherwise wait for memory in turn.
constexpr int64_t AHEAD = 16;
constexpr int64_t CHUNK = int64_t(1) << 14;
constexpr int64_t USER_FIELDS = 12;
constexpr int64_t DIFF_FIELDS = 5;
// At most this many tags: a row's tag code (n_tags: none) sits above its label in 32 bits.
constexpr int64_t MAX_TAGS = (int64_t(1) << 31) - 1;
// The digits of an accumulator: the thread's window of them (exact::window_digits).
#define D (::mpieval::exact::window_digits)

// The top part_bits bits of mix64(keys[i]) into parts; sizes (2**part_bits) the rows of each.
inline void parts(const uint64_t* keys, int64_t n, uint8_t* parts, int part_bits,
                  int64_t* sizes) {
    if (part_bits == 0) {
        sizes[0] = n;
        return;
    }
    const int drop = 64 - part_bits;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t part = uint8_t(keys::mix64(keys[i]) >> drop);
        parts[i] = part;
        ++sizes[part];
    }
}

// Calls batch(rows, count) with the rows i of `part` (parts[i] == part; every row when
// parts is null), in row order, up to ROWS_AT_ONCE at a time. x86-64: the part bytes are
// compared 16 at a time (SSE2, x86-64's baseline), the rows of a match taken from its bit
// mask; elsewhere 8 at a time in a word, a word's bytes equal to part found at once and
// kept without a branch a row.
constexpr int64_t ROWS_AT_ONCE = 256;
template <class F>
void rows_of_part(const uint8_t* parts, int64_t n, uint8_t part, F&& batch) {
    int64_t rows[ROWS_AT_ONCE + 16];
    int64_t count = 0;
    int64_t i = 0;
#if defined(__SSE2__)
    if (parts != nullptr) {
        const __m128i pattern = _mm_set1_epi8(char(part));
        for (; i + 16 <= n; i += 16) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(parts + i));
            unsigned mask = unsigned(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, pattern)));
            while (mask != 0) {  // the part's rows of the 16, in order
                rows[count++] = i + __builtin_ctz(mask);
                mask &= mask - 1;
            }
            if (count >= ROWS_AT_ONCE) {
                batch(static_cast<const int64_t*>(rows), count);
                count = 0;
            }
        }
    }
#else
    if (parts != nullptr && keys::is_little_endian()) {
        const uint64_t low7 = UINT64_C(0x7F7F7F7F7F7F7F7F);
        const uint64_t pattern = UINT64_C(0x0101010101010101) * part;
        for (; i + 8 <= n; i += 8) {
            uint64_t word;
            std::memcpy(&word, parts + i, 8);
            const uint64_t x = word ^ pattern;  // a zero byte: a row of the part
            const uint64_t zero = ~(((x & low7) + low7) | x | low7);  // its high bit, exactly
            for (int b = 0; b < 8; ++b) {  // every byte written, kept when it is the part's
                rows[count] = i + b;
                count += int64_t((zero >> (8 * b + 7)) & 1u);
            }
            if (count >= ROWS_AT_ONCE) {
                batch(static_cast<const int64_t*>(rows), count);
                count = 0;
            }
        }
    }
#endif
    for (; i < n; ++i) {
        if (parts == nullptr || parts[i] == part) rows[count++] = i;
        if (count == ROWS_AT_ONCE) {
            batch(static_cast<const int64_t*>(rows), count);
            count = 0;
        }
    }
    if (count > 0) batch(static_cast<const int64_t*>(rows), count);
}

// Memory a thread keeps from one part to the next (not what grouping a part takes): each
// buffer grows to the largest size asked, its contents never kept.
template <class T>
class Buffer {
  public:
    T* get() const { return data_.get(); }

    T* at_least(int64_t n) {
        if (n > size_) {
            data_.reset();
            data_.reset(new T[size_t(n)]);  // not zeroed: written before read
            size_ = n;
        }
        return data_.get();
    }

  private:
    std::unique_ptr<T[]> data_;
    int64_t size_ = 0;
};


// The users of one part: an open-addressing table from a key to its user number (in order
// of the user's first row) and the check of that first row, and each user's rows.
class Users {
  public:
    Users() = default;
    explicit Users(int64_t expected) { reset(expected); }

    // No users, room for about `expected` (the memory of the last part's table kept).
    void reset(int64_t expected) {
        int64_t capacity = 1024;
        while (capacity < 2 * expected) capacity *= 2;
        slots_.assign(capacity, Slot{0, EMPTY, 0});
        rows_.clear();
    }

    // The user of key (a new one on its first row); a check other than the first row's
    // sets collision.
    uint32_t add(uint64_t key, uint32_t check, bool& collision) {
        Slot* slot = find(key);
        if (slot->user == EMPTY) {
            if (2 * (int64_t(rows_.size()) + 1) > int64_t(slots_.size())) {
                grow();
                slot = find(key);
            }
            if (rows_.size() >= size_t(EMPTY)) throw std::length_error("too many users in a part");
            *slot = Slot{key, uint32_t(rows_.size()), check};
            rows_.push_back(0);
        } else if (slot->check != check) {
            collision = true;
        }
        ++rows_[slot->user];
        return slot->user;
    }

    // Where the next slot of key's probe lies, for a prefetch.
    const void* home(uint64_t key) const { return &slots_[keys::mix64(key) & mask()]; }

    // Each user's rows (rows_[u]) become the position of its first row in user order.
    int64_t starts() {
        int64_t position = 0;
        for (int64_t& count : rows_) {
            const int64_t rows = count;
            count = position;
            position += rows;
        }
        return int64_t(rows_.size());
    }

    int64_t& next(uint32_t user) { return rows_[user]; }

  private:
    static constexpr uint32_t EMPTY = UINT32_MAX;
    struct Slot {
        uint64_t key;
        uint32_t user;
        uint32_t check;
    };
    std::vector<Slot> slots_;
    std::vector<int64_t> rows_;  // per user: its rows, then (starts) its next position

    uint64_t mask() const { return uint64_t(slots_.size()) - 1; }

    Slot* find(uint64_t key) const {
        const uint64_t m = mask();
        uint64_t at = keys::mix64(key) & m;
        Slot* slots = const_cast<Slot*>(slots_.data());
        while (slots[at].user != EMPTY && slots[at].key != key) at = (at + 1) & m;
        return &slots[at];
    }

    void grow() {
        std::vector<Slot> old(2 * slots_.size(), Slot{0, EMPTY, 0});
        old.swap(slots_);
        for (const Slot& slot : old)
            if (slot.user != EMPTY) *find(slot.key) = slot;
    }
};

struct Workspace {
    Buffer<uint64_t> sort0, sort1;        // a long user's keys and their sorting space
    Buffer<uint32_t> payload0, payload1;  // their tag << 1 | label (float64 preds)
    // a part's rows as group_rows left them, by user: the sort key of each row (float64
    // preds: the pred's bits; float32: the pred's bits << 32 | tag << 1 | label), with
    // float64 preds its tag << 1 | label beside it, and each user's end
    Buffer<uint64_t> grouped;
    Buffer<uint32_t> grouped_payload;
    // while a part is grouped (group_rows): its table of users, each row's user and index
    Users users;
    Buffer<uint32_t> user_of, part_rows;
    std::vector<int64_t> ends;
    int64_t rows = 0;       // the rows grouped
    int64_t n_tags = 0;     // their tag codes' n_tags (the code of a row without a tag)
    bool has_tags = false;  // whether they had tag codes
    int pred_bytes = 0;     // 4 or 8: the preds' type, which says the keys' layout (0: none)
};

// Rows ahead that a grouping asks the memory for the table slot (number_users) or the
// place in the grouped rows (group_rows) of.
constexpr int64_t TABLE_AHEAD = 16;

// The first pass of a grouping: the m rows of `part` (every row when parts is null), in
// row order, numbered by user in `users` (in order of their first row): user_of[k] the
// user of the part's k-th row, and (rows not null) rows[k] its row index, for the second
// pass (each_row_again). True when two rows of one key have different checks (checks
// null: none). `what` names the caller in its errors.
inline bool number_users(const uint64_t* keys, const uint32_t* checks, int64_t n,
                         const uint8_t* parts, int64_t part, int64_t m, Users& users,
                         uint32_t* user_of, uint32_t* rows_out, const char* what) {
    bool collision = false;
    int64_t k = 0;
    uint64_t key[ROWS_AT_ONCE + 16];
    uint32_t check[ROWS_AT_ONCE + 16];
    rows_of_part(parts, n, uint8_t(part), [&](const int64_t* rows, int64_t count) {
        if (k + count > m)
            throw std::length_error(std::string(what) + ": the part has more rows than packed");
        // the batch's keys read first, then their table slots asked for, then looked up:
        // the reads of many rows wait for the memory at once, not each in turn
        for (int64_t j = 0; j < count; ++j) {
            key[j] = keys[rows[j]];
            check[j] = checks != nullptr ? checks[rows[j]] : 0u;
        }
        if (rows_out != nullptr)
            for (int64_t j = 0; j < count; ++j) rows_out[k + j] = uint32_t(rows[j]);
        // each slot asked for TABLE_AHEAD rows before it is looked up
        for (int64_t j = 0; j < std::min(count, TABLE_AHEAD); ++j)
            __builtin_prefetch(users.home(key[j]));
        for (int64_t j = 0; j < count; ++j) {
            if (j + TABLE_AHEAD < count) __builtin_prefetch(users.home(key[j + TABLE_AHEAD]));
            user_of[k++] = users.add(key[j], check[j], collision);
        }
    });
    if (k != m)
        throw std::length_error(std::string(what) + ": the part has fewer rows than packed");
    return collision;
}

// Calls each(k, row) for the part's k-th row, in row order, again: from the row indexes
// number_users kept (rows not null), else found in parts once more (rows_of_part).
template <class F>
void each_row_again(const uint32_t* rows, const uint8_t* parts, int64_t n, int64_t part,
                    int64_t m, F&& each) {
    if (rows != nullptr) {
        for (int64_t k = 0; k < m; ++k) each(k, int64_t(rows[k]));
        return;
    }
    int64_t k = 0;
    rows_of_part(parts, n, uint8_t(part), [&](const int64_t* found, int64_t count) {
        for (int64_t j = 0; j < count; ++j) each(k++, found[j]);
    });
}

// Whether number_users keeps the part's row indexes (4 bytes a row of the part) for the
// second pass: when they fit 32 bits; else the second pass reads the part bytes again.
inline bool keep_rows(int64_t n) { return n <= int64_t(UINT32_MAX) + 1; }

// The m rows of `part` (every row when parts is null) grouped by user:
// packed[k] = user << row_bits | row, the users numbered in order of their first row, each
// user's rows together and in row order. True when two rows of one key have different
// checks (checks null: none). One pass looks each row's key up in the part's table of
// users (number_users), a second puts the rows in place (a counting sort by user).
inline bool group(const uint64_t* keys, const uint32_t* checks, int64_t n, const uint8_t* parts,
                  int64_t part, uint64_t* packed, int64_t m, int row_bits) {
    Users users(m / 16);
    // each row's user and row, while the rows are grouped (not kept through the pass over
    // users)
    const std::unique_ptr<uint32_t[]> user_of(new uint32_t[size_t(m)]);
    const std::unique_ptr<uint32_t[]> rows(keep_rows(n) ? new uint32_t[size_t(m)] : nullptr);
    const bool collision =
        number_users(keys, checks, n, parts, part, m, users, user_of.get(), rows.get(), "group");
    const int64_t n_users = users.starts();
    if (n_users > 1 && (uint64_t(n_users - 1) >> (64 - row_bits)) != 0)
        throw std::length_error("too many users beside the row bits");
    each_row_again(rows.get(), parts, n, part, m, [&](int64_t k, int64_t row) {
        packed[users.next(user_of[k])++] = (uint64_t(user_of[k]) << row_bits) | uint64_t(row);
    });
    return collision;
}

// Where a pass adds its groups: the exact sums (blocks, USER_FIELDS, DIGITS) and, when
// `record` is not null, the valid groups' (block, rows, AUC).
struct Output {
    double* sums;
    double* record;
    int64_t cursor;
    double* moments = nullptr;  // not null: the users' moments too (KeyMoments), no weight
    // not null (unweighted counts): the whole-number fields (WHOLE_FIELDS), per block,
    // summed as integers and added to sums once (add_whole_counts)
    unsigned __int128* whole = nullptr;
    // not null (pairs, unweighted counts): each block's groups counted here and added to
    // its users sum once (add_user_counts): most groups (one row, no valid AUC) then touch
    // 8 bytes a tag, not the tag's sums
    int64_t* users = nullptr;
};

// The fields of an unweighted group that are whole numbers: users, valid users, rows,
// clicks, and rows^2 and rows^3 while their float64 products are exact (below 2**53).
constexpr int64_t WHOLE_FIELDS = 6;
constexpr int64_t WHOLE_FIELD[WHOLE_FIELDS] = {0, 1, 2, 3, 8, 11};

// A whole number below 2**53 (a float64 product that is exact) to the integer sum; else
// the float64 value to the exact accumulator, as add_counts adds it.
inline void add_whole_or_exact(unsigned __int128& whole, double* acc, double value) {
    if (value < 0x1p53)
        whole += uint64_t(value);
    else
        exact::add(acc, value);
}

// The integer sums of out.whole added to out.sums, exactly (three float64 pieces of 45
// bits each a sum, each exact), and cleared: the same value as each group's exact::add.
inline void add_whole_counts(Output& out, int64_t blocks) {
    if (out.whole == nullptr) return;  // (pairs: none kept)
    for (int64_t block = 0; block < blocks; ++block) {
        for (int64_t f = 0; f < WHOLE_FIELDS; ++f) {
            unsigned __int128& whole = out.whole[block * WHOLE_FIELDS + f];
            double* acc = out.sums + (block * USER_FIELDS + WHOLE_FIELD[f]) * D;
            const uint64_t mask = (uint64_t(1) << 45) - 1;
            exact::add(acc, double(uint64_t(whole) & mask));
            exact::add(acc, double(uint64_t(whole >> 45) & mask) * 0x1p45);
            exact::add(acc, double(uint64_t(whole >> 90)) * 0x1p90);  // whole < 2**128
            whole = 0;
        }
    }
}

// The group counts of out.users added to the users sums (exact: whole numbers below
// 2**53), and cleared.
inline void add_user_counts(Output& out, int64_t blocks) {
    if (out.users == nullptr) return;
    for (int64_t block = 0; block < blocks; ++block) {
        if (out.users[block])
            exact::add(out.sums + block * USER_FIELDS * D, double(out.users[block]));
        out.users[block] = 0;
    }
}

// exact::add, or with Pairs (the thread in pairs mode) exact::add_pair itself: no thread
// state read a value (many tags: the pass's hot path).
template <bool Pairs>
inline void add_to(double* acc, double value) {
    if constexpr (Pairs)
        exact::add_pair(acc, value);
    else
        exact::add(acc, value);
}

// add_counts but the group's count (1 user): its valid fields, when it has both labels.
template <bool Pairs = false>
inline void add_valid_counts(Output& out, int64_t block, double rows, double positives,
                             double negatives, double twice_u) {
    const int64_t d = Pairs ? 2 : D;
    double* s = out.sums + block * USER_FIELDS * d;
    if (positives > 0 && negatives > 0) {
        const double auc = twice_u / (2.0 * positives * negatives);
        if (out.record) {
            double* r = out.record + 3 * out.cursor;
            r[0] = double(block);
            r[1] = double(rows);
            r[2] = auc;
            ++out.cursor;
        }
        add_to<Pairs>(s + 1 * d, 1.0);
        add_to<Pairs>(s + 2 * d, rows);
        add_to<Pairs>(s + 3 * d, positives);
        add_to<Pairs>(s + 4 * d, auc);
        add_to<Pairs>(s + 5 * d, auc * rows);
        add_to<Pairs>(s + 6 * d, auc * positives);
        const double rows_sq = rows * rows;
        add_to<Pairs>(s + 7 * d, auc * auc);
        add_to<Pairs>(s + 8 * d, rows_sq);
        add_to<Pairs>(s + 9 * d, auc * rows_sq);
        add_to<Pairs>(s + 10 * d, auc * auc * rows_sq);
        add_to<Pairs>(s + 11 * d, rows_sq * rows);
    }
}

// A group of `rows` rows (their weight), `positives` and `negatives` of them (weights),
// twice_u twice its (weighted) pairs in order plus its tied ones.
inline void add_counts(Output& out, int64_t block, double rows, double positives,
                       double negatives, double twice_u) {
    exact::add(out.sums + block * USER_FIELDS * D, 1.0);
    add_valid_counts(out, block, rows, positives, negatives, twice_u);
}

// Counts of an unweighted group (whole numbers: exact as doubles below 2**53).
inline void add_counts(Output& out, int64_t block, int64_t rows, int64_t positives,
                       int64_t twice_u) {
    if (out.whole == nullptr) {
        const double n = double(rows), p = double(positives), u = double(twice_u);
        if (out.users == nullptr) {
            add_counts(out, block, n, p, double(rows - positives), u);
        } else {  // (out.users: the thread in pairs mode)
            ++out.users[block];
            add_valid_counts<true>(out, block, n, p, double(rows - positives), u);
        }
        return;
    }
    // the same values as the float64 add_counts, the whole-number ones summed as integers
    unsigned __int128* w = out.whole + block * WHOLE_FIELDS;
    w[0] += 1;
    const int64_t negatives = rows - positives;
    if (positives > 0 && negatives > 0) {
        const double n = double(rows), p = double(positives);
        const double auc = double(twice_u) / (2.0 * p * double(negatives));
        if (out.record) {
            double* r = out.record + 3 * out.cursor;
            r[0] = double(block);
            r[1] = n;
            r[2] = auc;
            ++out.cursor;
        }
        double* s = out.sums + block * USER_FIELDS * D;
        w[1] += 1;
        w[2] += uint64_t(rows);
        w[3] += uint64_t(positives);
        exact::add(s + 4 * D, auc);
        exact::add(s + 5 * D, auc * n);
        exact::add(s + 6 * D, auc * p);
        const double rows_sq = n * n;
        exact::add(s + 7 * D, auc * auc);
        add_whole_or_exact(w[4], s + 8 * D, rows_sq);
        exact::add(s + 9 * D, auc * rows_sq);
        exact::add(s + 10 * D, auc * auc * rows_sq);
        add_whole_or_exact(w[5], s + 11 * D, rows_sq * n);
    }
}

template <class T>
inline int64_t run_end(const T* values, int64_t start, int64_t stop, int shift) {
    const T first = values[start] >> shift;
    int64_t end = start + 1;
    while (end < stop && (values[end] >> shift) == first) ++end;
    return end;
}

// The pass's scratch, sized once per pass.
template <class P, class L>
struct Scratch {
    std::vector<P> got_pred;
    std::vector<L> got_label;
    std::vector<uint32_t> got_tag;
    uint64_t* sort0;  // from the Workspace: a long user's keys and their sorting space
    uint64_t* sort1;
    uint32_t* payload0;  // their tag << 1 | label (float64 preds)
    uint32_t* payload1;
    std::vector<int64_t> scratch;              // (1 + n_tags, 4)
    std::vector<int64_t> seen0, seen1;         // a user's tag codes
    P work_pred[2][SHORT];
    int64_t work_local[2][SHORT];
    int64_t tag_counts[4][SHORT];
};

// Input of a pass: the rows' columns.
template <class P, class L>
struct Rows {
    const P* pred;
    const L* label;
    const uint32_t* tag;  // null: no tags
    int64_t n_tags;
    const double* weight = nullptr;  // null: a weight of 1 a row
};

// The m rows of `part` (every row when parts is null) grouped by user as group groups them
// (users in order of their first row, each user's rows in row order), but the rows
// themselves rather than their indexes, into work (Workspace: grouped, grouped_payload,
// ends): each row's sort key (float64 preds: the bits of pred + 0.0, and tag << 1 | label
// beside it; float32: the bits of pred + 0.0f << 32 | tag << 1 | label), a row without a
// tag (tag null) of code n_tags. The pass over users (grouped_user_sums) then reads them
// in order, not gathered from the columns row by row. True on a key collision (group).
// Keeps in work, from one part to the next: 8 bytes a row of the part (12 with float64
// preds), 8 bytes a row of it more (each row's user and index) and its table of users.
template <class P, class L>
bool group_rows(const uint64_t* keys, const uint32_t* checks, int64_t n, const uint8_t* parts,
                int64_t part, int64_t m, const Rows<P, L>& in, Workspace& work) {
    Users& users = work.users;
    users.reset(m / 16);
    uint32_t* user_of = work.user_of.at_least(m);
    const uint32_t* rows = keep_rows(n) ? work.part_rows.at_least(m) : nullptr;
    const bool collision = number_users(keys, checks, n, parts, part, m, users, user_of,
                                        const_cast<uint32_t*>(rows), "group_rows");
    const int64_t n_users = users.starts();
    uint64_t* grouped = work.grouped.at_least(m);
    uint32_t* payload = sizeof(P) == 4 ? nullptr : work.grouped_payload.at_least(m);
    const uint32_t untagged = uint32_t(in.n_tags);
    each_row_again(rows, parts, n, part, m, [&](int64_t k, int64_t row) {
        if (k + TABLE_AHEAD < m) {  // a later row's place, for writing
            const int64_t ahead = users.next(user_of[k + TABLE_AHEAD]);
            __builtin_prefetch(grouped + ahead, 1);
            if (payload != nullptr) __builtin_prefetch(payload + ahead, 1);
        }
        const int64_t at = users.next(user_of[k])++;
        const uint32_t code = in.tag != nullptr ? uint32_t(in.tag[row]) : untagged;
        const uint32_t low = (code << 1) | uint32_t(in.label[row] ? 1 : 0);
        if constexpr (sizeof(P) == 4) {
            const P value = in.pred[row] + P(0);
            uint32_t value_bits;
            std::memcpy(&value_bits, &value, sizeof value_bits);
            grouped[at] = (uint64_t(value_bits) << 32) | low;
        } else {
            grouped[at] = bits_of(double(in.pred[row]) + 0.0);
            payload[at] = low;
        }
    });
    work.ends.resize(size_t(n_users));
    for (int64_t u = 0; u < n_users; ++u) work.ends[size_t(u)] = users.next(uint32_t(u));
    work.rows = m;
    work.n_tags = in.n_tags;
    work.has_tags = in.tag != nullptr;
    work.pred_bytes = int(sizeof(P));
    return collision;
}

// A weighted row of a user (weighted_user): sorted by pred, label, tag, weight, an order
// of the rows themselves, so the weighted sums have the same bits whatever their order.
struct WeightedRow {
    double pred, weight;
    uint32_t label, tag;
};

inline bool weighted_order(const WeightedRow& a, const WeightedRow& b) {
    if (a.pred != b.pred) return a.pred < b.pred;
    if (a.label != b.label) return a.label < b.label;
    if (a.tag != b.tag) return a.tag < b.tag;
    return a.weight < b.weight;
}

// Per group of a weighted user: its positives' and negatives' weights, the negatives'
// weight below the current run of tied preds and in it, and twice its weighted U.
struct WeightedCounts {
    double positives, negatives, below, in_run, twice_u;
};

// The groups of one user of m rows (rows sorted by weighted_order) weighted: one pass
// over the runs of tied preds counts `all` and each tag (slots: a tag's counts, found by
// slot_of[code], -1 when none yet; every slot_of entry set back to -1 at the end).
inline void weighted_user(const WeightedRow* rows, int64_t m, int64_t n_tags,
                          std::vector<WeightedCounts>& slots, std::vector<int64_t>& slot_of,
                          std::vector<int64_t>& codes, Output& out) {
    WeightedCounts all{0, 0, 0, 0, 0};
    codes.clear();
    auto slot = [&](uint32_t code) -> WeightedCounts* {
        if (int64_t(code) >= n_tags) return nullptr;
        if (slot_of[code] < 0) {
            slot_of[code] = int64_t(codes.size());
            codes.push_back(code);
            if (slots.size() < codes.size()) slots.resize(codes.size());
            slots[size_t(slot_of[code])] = WeightedCounts{0, 0, 0, 0, 0};
        }
        return &slots[size_t(slot_of[code])];
    };
    for (int64_t i = 0; i < m;) {
        int64_t j = i + 1;
        while (j < m && rows[j].pred == rows[i].pred) ++j;
        for (int64_t k = i; k < j; ++k) {
            if (rows[k].label) continue;
            all.in_run += rows[k].weight;
            if (WeightedCounts* t = slot(rows[k].tag)) t->in_run += rows[k].weight;
        }
        for (int64_t k = i; k < j; ++k) {
            if (!rows[k].label) continue;
            const double w = rows[k].weight;
            all.positives += w;
            all.twice_u += w * (2.0 * all.below + all.in_run);
            if (WeightedCounts* t = slot(rows[k].tag)) {
                t->positives += w;
                t->twice_u += w * (2.0 * t->below + t->in_run);
            }
        }
        for (int64_t k = i; k < j; ++k) {
            if (rows[k].label) continue;
            const double w = rows[k].weight;
            all.negatives += w;
            all.below += w;
            all.in_run = 0.0;
            if (WeightedCounts* t = slot(rows[k].tag)) {
                t->negatives += w;
                t->below += w;
                t->in_run = 0.0;
            }
        }
        i = j;
    }
    // a group whose rows all weigh 0 is no group (as a row of weight 0 is no row)
    if (all.positives + all.negatives > 0)
        add_counts(out, 0, all.positives + all.negatives, all.positives, all.negatives,
                   all.twice_u);
    std::sort(codes.begin(), codes.end());
    for (const int64_t code : codes) {
        const WeightedCounts& t = slots[size_t(slot_of[code])];
        if (t.positives + t.negatives > 0)
            add_counts(out, 1 + code, t.positives + t.negatives, t.positives, t.negatives,
                       t.twice_u);
        slot_of[code] = -1;
    }
}

// Every user of the grouped rows with weights (user_sums with in.weight): each user's rows
// gathered, sorted (weighted_order) and passed once (weighted_user).
template <class P, class L>
void weighted_user_sums(const uint64_t* packed, int64_t n, int row_bits, const Rows<P, L>& in,
                        Output& out) {
    const int64_t blocks = (1 + in.n_tags) * USER_FIELDS;
    const uint64_t row_mask = (uint64_t(1) << row_bits) - 1;
    std::vector<WeightedRow> rows;
    std::vector<WeightedCounts> slots;
    std::vector<int64_t> slot_of(size_t(in.n_tags + 1), -1), codes;
    int64_t users = 0;
    for (int64_t start = 0; start < n;) {
        const int64_t end = run_end(packed, start, n, row_bits);
        rows.resize(size_t(end - start));
        for (int64_t k = start; k < end; ++k) {
            const uint64_t row = packed[k] & row_mask;
            rows[size_t(k - start)] = WeightedRow{
                double(in.pred[row]) + 0.0, in.weight[row] + 0.0, in.label[row] ? 1u : 0u,
                in.tag ? uint32_t(in.tag[row]) : uint32_t(in.n_tags)};
        }
        std::sort(rows.begin(), rows.end(), weighted_order);
        weighted_user(rows.data(), end - start, in.n_tags, slots, slot_of, codes, out);
        if (++users % exact::SAFE_ADDS == 0) exact::normalize(out.sums, blocks);
        start = end;
    }
    exact::normalize(out.sums, blocks);
}

// A user of m <= SHORT rows, row k's pred, label (0 or 1) and tag code from at(k, pred,
// label, code) (has_tags false: no tag groups, the code unread): every (positive,
// negative) pair compared.
template <class P, class L, class At>
void add_short_rows(int64_t m, At at, bool has_tags, int64_t n_tags, Scratch<P, L>& s,
                    Output& out) {
    int64_t n_local = 0, p = 0, q = 0;
    for (int64_t k = 0; k < m; ++k) {
        P value;
        int64_t y, code;
        at(k, value, y, code);
        int64_t local = 0;
        if (has_tags) {
            local = n_local;
            for (int64_t d = 0; d < n_local; ++d) {
                if (s.tag_counts[0][d] == code) {
                    local = d;
                    break;
                }
            }
            if (local == n_local) {
                s.tag_counts[0][local] = code;
                s.tag_counts[1][local] = 0;
                s.tag_counts[2][local] = 0;
                s.tag_counts[3][local] = 0;
                ++n_local;
            }
            s.tag_counts[1][local] += y;
            s.tag_counts[2][local] += 1 - y;
        }
        s.work_pred[0][p] = value;
        s.work_pred[1][q] = value;
        s.work_local[0][p] = local;
        s.work_local[1][q] = local;
        p += y;
        q += 1 - y;
    }
    int64_t twice_u = 0;
    for (int64_t i = 0; i < p; ++i) {
        const P a = s.work_pred[0][i];
        const int64_t local = s.work_local[0][i];
        int64_t mine = 0;
        for (int64_t j = 0; j < q; ++j) {
            const P b = s.work_pred[1][j];
            const int64_t score = int64_t(a > b) + int64_t(a >= b);
            twice_u += score;
            mine += score * int64_t(s.work_local[1][j] == local);
        }
        if (has_tags) s.tag_counts[3][local] += mine;
    }
    add_counts(out, 0, m, p, twice_u);
    for (int64_t d = 0; d < n_local; ++d) {
        const int64_t code = s.tag_counts[0][d];
        if (code < n_tags)
            add_counts(out, 1 + code, s.tag_counts[1][d] + s.tag_counts[2][d],
                       s.tag_counts[1][d], s.tag_counts[3][d]);
    }
}

// A user of at most SHORT rows, rows lo .. hi - 1 of the gathered columns (add_short_rows).
template <class P, class L>
void add_short_user(const P* pred, const L* label, const uint32_t* tag, int64_t lo, int64_t hi,
                    int64_t n_tags, Scratch<P, L>& s, Output& out) {
    add_short_rows(
        hi - lo,
        [&](int64_t k, P& value, int64_t& y, int64_t& code) {
            value = pred[lo + k];
            y = label[lo + k] ? 1 : 0;
            code = tag != nullptr ? int64_t(tag[lo + k]) : 0;
        },
        tag != nullptr, n_tags, s, out);
}

// Row k of a user's m rows: lo + k, or (rows not null) the row index in rows[lo + k]'s low
// bits, whose rows lie anywhere in the columns: the pred, label and tag of the row AHEAD
// further on are then asked of the memory now.
template <class P, class L>
inline int64_t gathered_row(const P* pred, const L* label, const uint32_t* tag,
                            const uint64_t* rows, uint64_t row_mask, int64_t lo, int64_t k,
                            int64_t m) {
    if (rows == nullptr) return lo + k;
    if (k + AHEAD < m) {
        const uint64_t ahead = rows[lo + k + AHEAD] & row_mask;
        __builtin_prefetch(pred + ahead);
        __builtin_prefetch(label + ahead);
        if (tag != nullptr) __builtin_prefetch(tag + ahead);
    }
    return int64_t(rows[lo + k] & row_mask);
}

// The sort keys of m rows (gathered_row).
template <class P, class L>
void sort_keys_of(const P* pred, const L* label, const uint32_t* tag, const uint64_t* rows,
                  uint64_t row_mask, int64_t lo, int64_t m, uint64_t* bits, uint32_t* payload) {
    for (int64_t k = 0; k < m; ++k) {
        const int64_t row = gathered_row(pred, label, tag, rows, row_mask, lo, k, m);
        const double value = double(pred[row]) + 0.0;
        std::memcpy(&bits[k], &value, sizeof value);
        const uint32_t code = tag != nullptr ? uint32_t(tag[row]) : 0u;
        payload[k] = (code << 1) | uint32_t(label[row] ? 1 : 0);
    }
}

// A long user's rows sorted by pred: the pred's bits in bits[k] >> shift (a run of equal
// ones is a run of tied preds), the row's tag << 1 | label in payload[k] (null: in the low
// 32 bits of bits[k]).
template <class P, class L>
void add_sorted_user(const uint64_t* bits, int shift, const uint32_t* payload_or_null,
                     int64_t m, int64_t n_tags, Scratch<P, L>& s, Output& out) {
    int64_t* sc = s.scratch.data();
    int64_t* seen = s.seen0.data();
    int64_t n_seen = 0;
    int64_t i = 0;
    struct Payloads {
        const uint64_t* bits;
        const uint32_t* payload;
        uint32_t operator[](int64_t k) const {
            return payload ? payload[k] : uint32_t(bits[k] & UINT64_C(0xFFFFFFFF));
        }
    } const payload{bits, payload_or_null};
    while (i < m) {
        const int64_t j = run_end(bits, i, m, shift);
        for (int64_t k = i; k < j; ++k) {
            const int64_t code = int64_t(payload[k] >> 1);
            const int64_t negative = 1 - int64_t(payload[k] & 1u);
            sc[3] += negative;
            if (code < n_tags) {
                int64_t* t = sc + 4 * (1 + code);
                if (t[0] + t[1] + t[3] == 0) seen[n_seen++] = code;
                t[3] += negative;
                t[0] += 1 - negative;
            }
        }
        for (int64_t k = i; k < j; ++k) {
            if (payload[k] & 1u) {
                const int64_t code = int64_t(payload[k] >> 1);
                sc[0] += 1;
                sc[2] += 2 * sc[1] + sc[3];
                if (code < n_tags) {
                    int64_t* t = sc + 4 * (1 + code);
                    t[2] += 2 * t[1] + t[3];
                }
            }
        }
        for (int64_t k = i; k < j; ++k) {
            if ((payload[k] & 1u) == 0) {
                const int64_t code = int64_t(payload[k] >> 1);
                sc[1] += 1;
                sc[3] = 0;
                if (code < n_tags) {
                    int64_t* t = sc + 4 * (1 + code);
                    t[1] += 1;
                    t[3] = 0;
                }
            }
        }
        i = j;
    }
    add_counts(out, 0, m, sc[0], sc[2]);
    std::fill(sc, sc + 4, 0);
    sort::merge_sort<false>(seen, s.seen1.data(), n_seen);
    for (int64_t k = 0; k < n_seen; ++k) {
        const int64_t block = 1 + seen[k];
        int64_t* t = sc + 4 * block;
        const int64_t positives = t[0], negatives = t[1];
        add_counts(out, block, positives + negatives, positives, t[2]);
        std::fill(t, t + 4, 0);
    }
}

// tmp_keys: m rows of scratch for the sort, free once the rows are gathered (so possibly
// the rows' own packed indexes).
template <class P, class L>
void add_long_user(const P* pred, const L* label, const uint32_t* tag, const uint64_t* rows,
                   uint64_t row_mask, int64_t lo, int64_t m, int64_t n_tags, uint64_t* tmp_keys,
                   Scratch<P, L>& s, Output& out) {
    if constexpr (sizeof(P) == 4) {
        // a float32 pred's bits (-0.0 made 0.0) above the row's tag << 1 | label, in one
        // uint64 a row: no payload to carry, and the runs of tied preds of the float64
        // bits, as the float32's bits order the same
        uint64_t* keys = s.sort0;
        for (int64_t k = 0; k < m; ++k) {
            const int64_t row = gathered_row(pred, label, tag, rows, row_mask, lo, k, m);
            const P value = pred[row] + P(0);
            uint32_t value_bits;
            std::memcpy(&value_bits, &value, sizeof value_bits);
            const uint32_t code = tag != nullptr ? uint32_t(tag[row]) : 0u;
            keys[k] = (uint64_t(value_bits) << 32) | (code << 1) | uint32_t(label[row] ? 1 : 0);
        }
        sort::radix_sort(keys, static_cast<sort::NoPayload*>(nullptr), tmp_keys,
                         static_cast<sort::NoPayload*>(nullptr), m);
        add_sorted_user(keys, 32, static_cast<const uint32_t*>(nullptr), m, n_tags, s, out);
        return;
    }
    uint64_t* bits = s.sort0;
    uint32_t* payload = s.payload0;
    sort_keys_of(pred, label, tag, rows, row_mask, lo, m, bits, payload);
    sort::radix_sort(bits, payload, tmp_keys, s.payload1, m);
    add_sorted_user(bits, 0, payload, m, n_tags, s, out);
}

// The per-user sums of the intervals of the row values (actual CTR, predicted CTR, COPC,
// LogLoss) with users as clusters: each group (a user in `all`, a (user, tag)) sums its
// rows' weight n, clicks c = sum w y, pred p = sum w pred and logloss l = sum w logloss
// (with a compared model also B's pB and lB) in one order that depends on the rows only,
// not on their order or ranks (the rows sorted by tag, pred, label, B's pred, weight), then
// adds the products of MOMENT_NAMES (kernels.py) to its block, each exactly.
constexpr int64_t MOMENT_FIELDS = 10;
constexpr int64_t COMPARE_MOMENT_FIELDS = 5;

struct MomentRow {
    double pred, compare, weight;
    uint32_t tag, label;
};

inline bool moment_order(const MomentRow& a, const MomentRow& b) {
    if (a.tag != b.tag) return a.tag < b.tag;
    if (a.pred != b.pred) return a.pred < b.pred;
    if (a.label != b.label) return a.label < b.label;
    if (a.compare != b.compare) return a.compare < b.compare;
    return a.weight < b.weight;
}

struct GroupSums {
    double n, c, p, l, pb, lb;
};

template <bool Pairs = false>
inline void add_moments(double* sums, int64_t fields, int64_t block, const GroupSums& g,
                        bool compare) {
    const int64_t d = Pairs ? 2 : D;
    double* s = sums + block * fields * d;
    add_to<Pairs>(s + 0 * d, g.c * g.c);
    add_to<Pairs>(s + 1 * d, g.c * g.n);
    add_to<Pairs>(s + 2 * d, g.n * g.n);
    add_to<Pairs>(s + 3 * d, g.p * g.p);
    add_to<Pairs>(s + 4 * d, g.p * g.n);
    add_to<Pairs>(s + 5 * d, g.c * g.p);
    add_to<Pairs>(s + 6 * d, g.l * g.l);
    add_to<Pairs>(s + 7 * d, g.l * g.n);
    add_to<Pairs>(s + 8 * d, g.n * g.n * g.n);
    add_to<Pairs>(s + 9 * d, g.p * g.p * g.p);
    if (compare) {
        const double diff = g.lb - g.l;
        add_to<Pairs>(s + 10 * d, g.pb * g.pb);
        add_to<Pairs>(s + 11 * d, g.c * g.pb);
        add_to<Pairs>(s + 12 * d, g.p * g.pb);
        add_to<Pairs>(s + 13 * d, diff * diff);
        add_to<Pairs>(s + 14 * d, diff * g.n);
    }
}

// One user's rows, sorted (moment_order), add its groups' products to sums; the groups
// added.
inline int64_t add_user_moments(const std::vector<MomentRow>& rows, double* sums,
                                int64_t fields, int64_t n_tags, bool compare) {
    int64_t groups = 1;
    GroupSums user{0, 0, 0, 0, 0, 0}, group{0, 0, 0, 0, 0, 0};
    for (size_t k = 0; k < rows.size(); ++k) {
        const MomentRow& r = rows[k];
        const double w = r.weight;
        const double l = w * binary_logloss(r.pred, r.label);
        const double lb = compare ? w * binary_logloss(r.compare, r.label) : 0.0;
        for (GroupSums* g : {&user, &group}) {
            g->n += w;
            if (r.label) g->c += w;
            g->p += w * r.pred;
            g->l += l;
            g->pb += w * r.compare;
            g->lb += lb;
        }
        if (k + 1 == rows.size() || rows[k + 1].tag != r.tag) {
            if (int64_t(r.tag) < n_tags) {
                add_moments(sums, fields, 1 + int64_t(r.tag), group, compare);
                ++groups;
            }
            group = GroupSums{0, 0, 0, 0, 0, 0};
        }
    }
    add_moments(sums, fields, 0, user, compare);
    return groups;
}

// loss[i] = binary_logloss of keys[i] (a pred's float64 bits above its label), i < n: a
// loop of fixed work a row, which the compiler vectorises. x86-64: also compiled for AVX2
// (four float64 at once, not two), run where the processor has it (has_avx2, as
// logloss_terms): the same operations, so the same bits (no FMA).
MPIEVAL_INLINE void key_losses_loop(const uint64_t* __restrict keys, int64_t n,
                                    double* __restrict loss) {
    for (int64_t i = 0; i < n; ++i)
        loss[i] = binary_logloss(double_of(keys[i] >> 1), int64_t(keys[i] & 1));
}

#ifdef MPIEVAL_AVX2
[[gnu::target("avx2")]] inline void key_losses_avx2(const uint64_t* __restrict keys, int64_t n,
                                                    double* __restrict loss) {
    key_losses_loop(keys, n, loss);
}
#endif

inline void key_losses(const uint64_t* __restrict keys, int64_t n, double* __restrict loss) {
#ifdef MPIEVAL_AVX2
    if (n > SHORT && has_avx2()) return key_losses_avx2(keys, n, loss);
#endif
    key_losses_loop(keys, n, loss);
}

// Ask for the memory of the row at packed[k] (when k < n): the rows lie anywhere.
template <class P>
inline void prefetch_row(const uint64_t* packed, int64_t k, int64_t n, uint64_t row_mask,
                         const P* pred, const uint8_t* label, const uint32_t* tag) {
    if (k >= n) return;
    const uint64_t ahead = packed[k] & row_mask;
    __builtin_prefetch(pred + ahead);
    __builtin_prefetch(label + ahead);
    if (tag) __builtin_prefetch(tag + ahead);
}

// Rows ahead that add_staged asks the memory for the sums of (many tags: each group's
// sums lie anywhere in them).
constexpr size_t STAGED_AHEAD = 8;

// Asks the memory for a block's `fields` sums (D digits or a pair each), a line at a time.
inline void prefetch_sums(const double* block, int64_t fields) {
    const int64_t bytes = fields * D * int64_t(sizeof(double));
    for (int64_t at = 0; at < bytes; at += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(block) + at, 1);
}

// The moments of users without a weight or a compared model, from one uint64 a row: the
// pred's float64 bits (a pred >= 0, -0.0 made 0.0: its bits order as its value) above its
// label, sorted within each tag code (a radix sort), the codes in increasing order: the
// order of moment_order, so the same sums, bit for bit, as add_user_moments. Scratch kept
// from one user to the next.
struct KeyMoments {
    std::vector<uint64_t> keys, tmp;
    std::vector<uint32_t> codes, touched;
    std::vector<int64_t> counts;  // rows a code (up to the largest seen), 0 between users
    std::vector<int64_t> bounds;  // the codes' first rows, and the end
    std::vector<double> loss;
    // per block, the whole-number moments (c^2, c n, n^2, n^3 while exact: add_group)
    // summed as integers until flush
    std::vector<unsigned __int128> whole;
    // the thread's pairs mode when made (a pass makes its KeyMoments within it): read once,
    // not a group
    const bool pairs = exact::pairs;
    // short users staged (stage, add_staged): their keys and codes, each user's end
    std::vector<uint64_t> staged_keys;
    std::vector<uint32_t> staged_codes;
    std::vector<int64_t> staged_ends;
    std::unique_ptr<LoglossScratch> block;

    // The integer sums added to sums (blocks of `fields`), exactly, and cleared.
    void flush(double* sums, int64_t fields) {
        const uint64_t mask = (uint64_t(1) << 45) - 1;
        for (size_t i = 0; i < whole.size(); ++i) {
            double* acc = sums + (int64_t(i / 4) * fields + WHOLE_MOMENT[i % 4]) * D;
            exact::add(acc, double(uint64_t(whole[i]) & mask));
            exact::add(acc, double(uint64_t(whole[i] >> 45) & mask) * 0x1p45);
            exact::add(acc, double(uint64_t(whole[i] >> 90)) * 0x1p90);
            whole[i] = 0;
        }
    }

    // The m rows of one user (row_of(k): the index of its k-th row in pred, label and
    // tag; ahead(k): asks for a later row's memory) add its groups' products to sums; the
    // groups added.
    template <class P, class RowOf, class Ahead>
    int64_t add_user(int64_t rows, RowOf row_of, Ahead ahead, const P* pred,
                     const uint8_t* label, const uint32_t* tag, int64_t n_tags, double* sums,
                     int64_t fields) {
        return add_keys(
            rows,
            [&](int64_t k, uint64_t& key, uint32_t& code) {
                const int64_t row = row_of(k);
                ahead(k);
                key = (bits_of(double(pred[row]) + 0.0) << 1) | uint64_t(label[row] ? 1 : 0);
                code = tag ? uint32_t(tag[row]) : uint32_t(n_tags);
            },
            n_tags, sums, fields);
    }

    // add_user of the m rows whose key (the bits of the pred as a float64 + 0.0, above the
    // label) and tag code (n_tags: none) key_code(k, key, code) gives.
    template <class KeyCode>
    int64_t add_keys(int64_t rows, KeyCode key_code, int64_t n_tags, double* sums,
                     int64_t fields) {
        const size_t m = size_t(rows);
        if (keys.size() < m) {
            keys.resize(m);
            tmp.resize(m);
            codes.resize(m);
            loss.resize(m);
        }
        bool one_code = true;
        uint32_t top = 0;  // the largest code (a code >= n_tags counts in `all` only)
        for (int64_t k = 0; k < rows; ++k) {
            const size_t i = size_t(k);
            key_code(k, keys[i], codes[i]);
            one_code = one_code && codes[i] == codes[0];
            top = std::max(top, codes[i]);
        }
        touched.clear();
        bounds.clear();
        bounds.push_back(0);
        bool sorted = false;
        if (one_code) {
            touched.push_back(codes[0]);
        } else if (rows <= sort::TINY) {  // by (code, key), by insertion
            for (size_t j = 1; j < m; ++j) {
                const uint32_t code = codes[j];
                const uint64_t key = keys[j];
                size_t i = j;
                for (; i > 0 && (codes[i - 1] > code || (codes[i - 1] == code && keys[i - 1] > key));
                     --i) {
                    codes[i] = codes[i - 1];
                    keys[i] = keys[i - 1];
                }
                codes[i] = code;
                keys[i] = key;
            }
            touched.push_back(codes[0]);
            for (size_t i = 1; i < m; ++i)
                if (codes[i] != codes[i - 1]) {
                    touched.push_back(codes[i]);
                    bounds.push_back(int64_t(i));
                }
            sorted = true;
        } else {  // the keys put in code order, then each code's keys sorted
            place_by_code(m, top, [&](size_t i) { return codes[i]; },
                          [&](size_t i) { return keys[i]; }, tmp.data());
            keys.swap(tmp);
        }
        return add_groups(m, sorted, n_tags, sums, fields);
    }

    // The m rows of one long user, float32 preds, as add_long_user left them sorted: a
    // pred's float32 bits above the row's tag code << 1 | label, sorted by pred, then code,
    // then label (tags: false when the rows have no tag code). The rows of each code, put
    // in code order by a stable counting pass, are then in the order add_user sorts them
    // in (pred, then label: ties are equal rows), so the same sums, bit for bit, without
    // a sort of their own; the groups added.
    int64_t add_sorted(const uint64_t* sorted, int64_t rows, bool tags, int64_t n_tags,
                       double* sums, int64_t fields) {
        const size_t m = size_t(rows);
        place_user(m, tags, n_tags, [&](size_t i) { return code_of_sorted(sorted[i]); },
                   [&](size_t i) { return key_of_sorted(sorted[i]); });
        return add_groups(m, true, n_tags, sums, fields);
    }

    // Short users' moments a batch at a time (grouped_user_sums): stage() puts a user's
    // rows, in the order add_user sorts them in (code, then key), at the end of the batch;
    // add_staged() then computes the batch's logloss terms in blocks (logloss_terms: one
    // vectorised loop, not one a group) and adds each staged user's groups as add_groups
    // does, row by row in that order: the same sums, bit for bit. A user of m <= SHORT rows,
    // row k's key and code from key_code(k, key, code) (as add_keys).
    template <class KeyCode>
    void stage(int64_t rows, KeyCode key_code) {
        const size_t base = staged_keys.size(), m = size_t(rows);
        staged_keys.resize(base + m);
        staged_codes.resize(base + m);
        uint64_t* key = staged_keys.data() + base;
        uint32_t* code = staged_codes.data() + base;
        for (size_t j = 0; j < m; ++j) {  // by (code, key), by insertion
            uint64_t k_j;
            uint32_t c_j;
            key_code(int64_t(j), k_j, c_j);
            size_t i = j;
            for (; i > 0 && (code[i - 1] > c_j || (code[i - 1] == c_j && key[i - 1] > k_j)); --i) {
                code[i] = code[i - 1];
                key[i] = key[i - 1];
            }
            code[i] = c_j;
            key[i] = k_j;
        }
        staged_ends.push_back(int64_t(base + m));
    }

    // Rows staged: add_staged() once there are this many or more.
    int64_t staged_rows() const { return int64_t(staged_keys.size()); }

    // The staged users' groups added to sums (blocks of `fields`), the batch emptied; the
    // groups added.
    int64_t add_staged(int64_t n_tags, double* sums, int64_t fields) {
        const size_t r = staged_keys.size();
        if (r == 0) return 0;
        if (!block) block = std::make_unique<LoglossScratch>();
        if (loss.size() < r + size_t(BLOCK)) loss.resize(r + size_t(BLOCK));
        for (size_t start = 0; start < r; start += size_t(BLOCK)) {
            const size_t stop = std::min(r, start + size_t(BLOCK));
            for (size_t i = start; i < stop; ++i) {
                block->p[i - start] = double_of(staged_keys[i] >> 1);
                block->y[i - start] = double(staged_keys[i] & 1);
            }
            for (size_t i = stop - start; i < size_t(BLOCK); ++i) {  // padding, dropped
                block->p[i] = 0.5;
                block->y[i] = 0.0;
            }
            logloss_terms(*block, loss.data() + start);
        }
        int64_t groups = 0;
        size_t lo = 0;
        for (const int64_t end : staged_ends) {
            const size_t hi = size_t(end);
            GroupSums user{0, 0, 0, 0, 0, 0}, group{0, 0, 0, 0, 0, 0};
            for (size_t i = lo; i < hi; ++i) {  // as add_groups
                if (i + STAGED_AHEAD < r) {  // (many tags: the sums of a later row's tag)
                    const int64_t code = int64_t(staged_codes[i + STAGED_AHEAD]);
                    if (code < n_tags) prefetch_sums(sums + (1 + code) * fields * D, fields);
                }
                const uint64_t key = staged_keys[i];
                const double value = double_of(key >> 1);
                for (GroupSums* g : {&user, &group}) {
                    g->n += 1.0;
                    if (key & 1) g->c += 1.0;
                    g->p += value;
                    g->l += loss[i];
                }
                if (i + 1 == hi || staged_codes[i + 1] != staged_codes[i]) {
                    if (int64_t(staged_codes[i]) < n_tags) {
                        add_group(sums, fields, 1 + int64_t(staged_codes[i]), group);
                        ++groups;
                    }
                    group = GroupSums{0, 0, 0, 0, 0, 0};
                }
            }
            add_group(sums, fields, 0, user);
            ++groups;
            lo = hi;
        }
        staged_keys.clear();
        staged_codes.clear();
        staged_ends.clear();
        return groups;
    }

    // The m rows of one long user, float64 preds, as grouped_user_sums left them sorted:
    // the bits of each pred (+ 0.0) in bits, sorted, the row's tag code << 1 | label in
    // payload (tags: false when the rows have no tag code). Each code's keys (the pred's
    // bits above the label), put in code order by a stable counting pass, are then in pred
    // order, and a pass puts the labels of each run of tied preds in order (0 first): the
    // order add_user sorts them in, so the same sums, bit for bit, without a sort of their
    // own; the groups added.
    int64_t add_sorted_pairs(const uint64_t* bits, const uint32_t* payload, int64_t rows,
                             bool tags, int64_t n_tags, double* sums, int64_t fields) {
        const size_t m = size_t(rows);
        place_user(m, tags, n_tags, [&](size_t i) { return payload[i] >> 1; },
                   [&](size_t i) { return (bits[i] << 1) | uint64_t(payload[i] & 1u); });
        for (size_t g = 0; g < touched.size(); ++g) {  // a tie's labels in order
            const size_t lo = size_t(bounds[g]);
            const size_t hi = g + 1 < touched.size() ? size_t(bounds[g + 1]) : m;
            for (size_t i = lo + 1; i < hi; ++i) {
                if (keys[i] >= keys[i - 1]) continue;  // only a 1 before a 0 of one pred
                const uint64_t key = keys[i];
                size_t j = i;
                for (; j > lo && keys[j - 1] > key; --j) keys[j] = keys[j - 1];
                keys[j] = key;
            }
        }
        return add_groups(m, true, n_tags, sums, fields);
    }

  private:
    // The m rows of one long user to keys in code order: row i's key key_at(i), its code
    // code_at(i) (tags: false when the rows have no tag code: one code, n_tags, in `all`
    // only), by place_by_code; touched and bounds as it leaves them.
    template <class CodeAt, class KeyAt>
    void place_user(size_t m, bool tags, int64_t n_tags, CodeAt code_at, KeyAt key_at) {
        if (keys.size() < m) {
            keys.resize(m);
            tmp.resize(m);
            codes.resize(m);
            loss.resize(m);
        }
        touched.clear();
        bounds.clear();
        bounds.push_back(0);
        if (!tags) {
            for (size_t i = 0; i < m; ++i) keys[i] = key_at(i);
            touched.push_back(uint32_t(n_tags));
        } else {
            uint32_t top = 0;
            for (size_t i = 0; i < m; ++i) top = std::max(top, code_at(i));
            place_by_code(m, top, code_at, key_at, keys.data());
        }
    }

    // A stable counting pass: row i's key (key_at(i)) to out in the order of its code
    // (code_at(i), at most top), each code's rows in their order; touched gets the codes
    // present, ascending, and bounds each code's first row after the 0 already there.
    template <class CodeAt, class KeyAt>
    void place_by_code(size_t m, uint32_t top, CodeAt code_at, KeyAt key_at, uint64_t* out) {
        if (counts.size() <= top) counts.resize(size_t(top) + 1, 0);
        for (size_t i = 0; i < m; ++i) {
            const uint32_t code = code_at(i);
            if (counts[code]++ == 0) touched.push_back(code);
        }
        std::sort(touched.begin(), touched.end());
        int64_t first = 0;
        for (const uint32_t code : touched) {
            const int64_t count = counts[code];
            counts[code] = first;
            first += count;
            bounds.push_back(first);
        }
        for (size_t i = 0; i < m; ++i) out[size_t(counts[code_at(i)]++)] = key_at(i);
        for (const uint32_t code : touched) counts[code] = 0;
        bounds.pop_back();
    }

    static constexpr int64_t WHOLE_MOMENT[4] = {0, 1, 2, 8};  // c^2, c n, n^2, n^3

    // add_moments of an unweighted group without a compared model: the same values, the
    // whole-number products below 2**53 (exact) summed as integers
    void add_group(double* sums, int64_t fields, int64_t block, const GroupSums& g) {
        if (pairs) {  // a whole number goes to its pair exactly: no integers kept
            add_moments<true>(sums, fields, block, g, false);
            return;
        }
        if (whole.size() < size_t(4 * (block + 1))) whole.resize(size_t(4 * (block + 1)), 0);
        unsigned __int128* w = whole.data() + 4 * block;
        double* s = sums + block * fields * D;
        add_whole_or_exact(w[0], s + 0 * D, g.c * g.c);
        add_whole_or_exact(w[1], s + 1 * D, g.c * g.n);
        add_whole_or_exact(w[2], s + 2 * D, g.n * g.n);
        exact::add(s + 3 * D, g.p * g.p);
        exact::add(s + 4 * D, g.p * g.n);
        exact::add(s + 5 * D, g.c * g.p);
        exact::add(s + 6 * D, g.l * g.l);
        exact::add(s + 7 * D, g.l * g.n);
        add_whole_or_exact(w[3], s + 8 * D, g.n * g.n * g.n);
        exact::add(s + 9 * D, g.p * g.p * g.p);
    }

    static uint32_t code_of_sorted(uint64_t key) {
        return uint32_t((key & UINT64_C(0xFFFFFFFF)) >> 1);
    }

    // add_user's key of a row of add_sorted: the pred's float64 bits above its label
    static uint64_t key_of_sorted(uint64_t key) {
        const uint32_t value_bits = uint32_t(key >> 32);
        float value;
        std::memcpy(&value, &value_bits, sizeof value);
        return (bits_of(double(value)) << 1) | (key & 1u);
    }

    // The groups of the keys in code order (touched, bounds up to the last code's first
    // row), each code's keys sorted unless `sorted`, added to sums; the groups added.
    int64_t add_groups(size_t m, bool sorted, int64_t n_tags, double* sums, int64_t fields) {
        bounds.push_back(int64_t(m));
        int64_t groups = 1;
        GroupSums user{0, 0, 0, 0, 0, 0};
        for (size_t g = 0; g < touched.size(); ++g) {
            const int64_t lo = bounds[g], hi = bounds[g + 1];
            if (!sorted)
                sort::radix_sort(keys.data() + lo, static_cast<sort::NoPayload*>(nullptr),
                                 tmp.data() + lo, static_cast<sort::NoPayload*>(nullptr),
                                 hi - lo);
            key_losses(keys.data() + lo, hi - lo, loss.data() + lo);
            GroupSums group{0, 0, 0, 0, 0, 0};
            for (int64_t i = lo; i < hi; ++i) {  // as add_user_moments with a weight of 1
                const uint64_t key = keys[size_t(i)];
                const double value = double_of(key >> 1);
                for (GroupSums* s : {&user, &group}) {
                    s->n += 1.0;
                    if (key & 1) s->c += 1.0;
                    s->p += value;
                    s->l += loss[size_t(i)];
                }
            }
            if (int64_t(touched[g]) < n_tags) {
                add_group(sums, fields, 1 + int64_t(touched[g]), group);
                ++groups;
            }
        }
        add_group(sums, fields, 0, user);
        return groups;
    }
};

// Add every user of the grouped rows (group: a run of one packed >> row_bits is a user).
// With overwrite, a user of more than CHUNK rows is sorted in its own packed rows once they
// are gathered (8 bytes a row of the longest user less to hold): packed is left unordered.
// With out.moments (no weight), each user's moments too (KeyMoments), from the rows the
// pass has gathered: one gather of the rows for both.
template <class P, class L>
void user_sums(uint64_t* packed, bool overwrite, int64_t n, int row_bits, const Rows<P, L>& in,
               Workspace& work, Output& out) {
    if (in.weight != nullptr) {
        weighted_user_sums(packed, n, row_bits, in, out);
        return;
    }
    const int64_t n_tags = in.n_tags;
    const int64_t blocks = (1 + n_tags) * USER_FIELDS;
    const uint64_t row_mask = (uint64_t(1) << row_bits) - 1;
    // (pairs: a whole number is added to its pair exactly, with no per-block integers
    // but the groups' count)
    std::vector<unsigned __int128> whole(
        exact::pairs ? 0 : size_t((1 + n_tags) * WHOLE_FIELDS), 0);
    out.whole = exact::pairs ? nullptr : whole.data();
    std::vector<int64_t> group_counts(exact::pairs ? size_t(1 + n_tags) : 0, 0);
    out.users = exact::pairs ? group_counts.data() : nullptr;
    int64_t longest = 0;
    for (int64_t start = 0; start < n;) {
        const int64_t end = run_end(packed, start, n, row_bits);
        longest = std::max(longest, end - start);
        start = end;
    }
    const int64_t size = std::min(n, CHUNK);
    Scratch<P, L> s;
    s.got_pred.resize(size);
    s.got_label.resize(size);
    s.got_tag.resize(in.tag ? size : 0);
    const int64_t longs = longest > SHORT ? longest : 0;
    const int64_t wide = sizeof(P) == 4 ? 0 : longs;  // float32: no payload (add_long_user)
    s.sort0 = work.sort0.at_least(longs);
    s.sort1 = work.sort1.at_least(overwrite ? std::min(longs, CHUNK) : longs);
    s.payload0 = work.payload0.at_least(wide);
    s.payload1 = work.payload1.at_least(wide);
    s.scratch.assign(4 * (1 + n_tags), 0);
    s.seen0.resize(std::min(n_tags, longs));
    s.seen1.resize(std::min(n_tags, longs));
    KeyMoments moments;
    const int64_t moment_blocks = (1 + n_tags) * MOMENT_FIELDS;
    int64_t moment_groups = 0;
    // float32 preds: a long user's moments from the rows add_long_user sorted (add_sorted)
    constexpr bool sorted_moments = sizeof(P) == 4;
    int64_t users = 0;
    int64_t start = 0;
    while (start < n) {
        int64_t stop = run_end(packed, start, n, row_bits);
        if (stop - start > CHUNK) {  // a heavy user: its rows read where they lie
            exact::normalize(out.sums, blocks);
            if (out.moments) {  // before its packed rows may be overwritten by its sort
                exact::normalize(out.moments, moment_blocks);
                moments.add_user(
                    stop - start,
                    [&](int64_t k) { return int64_t(packed[start + k] & row_mask); },
                    [&](int64_t k) { prefetch_row(packed, start + k + AHEAD, stop, row_mask,
                                                  in.pred, in.label, in.tag); },
                    in.pred, in.label, in.tag, n_tags, out.moments, MOMENT_FIELDS);
                exact::normalize(out.moments, moment_blocks);
            }
            add_long_user(in.pred, in.label, in.tag, packed, row_mask, start, stop - start,
                          n_tags, overwrite ? packed + start : s.sort1, s, out);
            ++users;
            exact::normalize(out.sums, blocks);
            start = stop;
            continue;
        }
        while (stop < n) {
            const int64_t end = run_end(packed, stop, n, row_bits);
            if (end - start > CHUNK) break;
            stop = end;
        }
        for (int64_t k = 0; k < stop - start; ++k) {  // the users' rows, gathered
            const uint64_t row = packed[start + k] & row_mask;
            if (start + k + AHEAD < stop) {
                const uint64_t ahead = packed[start + k + AHEAD] & row_mask;
                __builtin_prefetch(in.pred + ahead);
                __builtin_prefetch(in.label + ahead);
                if (in.tag) __builtin_prefetch(in.tag + ahead);
            }
            s.got_pred[k] = in.pred[row];
            s.got_label[k] = in.label[row];
            if (in.tag) s.got_tag[k] = in.tag[row];
        }
        int64_t first = 0;
        while (first < stop - start) {
            const int64_t last = run_end(packed, start + first, stop, row_bits) - start;
            if (out.moments && !(sorted_moments && last - first > SHORT)) {  // gathered rows
                moment_groups += moments.add_user(
                    last - first, [first](int64_t k) { return first + k; }, [](int64_t) {},
                    s.got_pred.data(), s.got_label.data(), in.tag ? s.got_tag.data() : nullptr,
                    n_tags, out.moments, MOMENT_FIELDS);
                if (moment_groups >= exact::SAFE_ADDS / 2) {
                    exact::normalize(out.moments, moment_blocks);
                    moment_groups = 0;
                }
            }
            if (last - first <= SHORT)
                add_short_user(s.got_pred.data(), s.got_label.data(),
                               in.tag ? s.got_tag.data() : nullptr, first, last, n_tags, s, out);
            else
                add_long_user(s.got_pred.data(), s.got_label.data(),
                              in.tag ? s.got_tag.data() : nullptr, nullptr, row_mask, first,
                              last - first, n_tags, s.sort1, s, out);
            if (out.moments && sorted_moments && last - first > SHORT) {  // from its sort
                moment_groups += moments.add_sorted(s.sort0, last - first, in.tag != nullptr,
                                                    n_tags, out.moments, MOMENT_FIELDS);
                if (moment_groups >= exact::SAFE_ADDS / 2) {
                    exact::normalize(out.moments, moment_blocks);
                    moment_groups = 0;
                }
            }
            ++users;
            if (users % exact::SAFE_ADDS == 0) exact::normalize(out.sums, blocks);
            first = last;
        }
        start = stop;
    }
    add_whole_counts(out, 1 + n_tags);
    out.whole = nullptr;
    add_user_counts(out, 1 + n_tags);
    out.users = nullptr;
    exact::normalize(out.sums, blocks);
    if (out.moments) {
        moments.flush(out.moments, MOMENT_FIELDS);
        exact::normalize(out.moments, moment_blocks);
    }
}

// Every user of the rows group_rows left in work, as user_sums adds them (with
// out.moments, each user's moments too), the rows read in their grouped order, not
// gathered: a user of at most SHORT rows compares its pairs (add_short_rows), its moments
// staged and added a batch of users at a time (KeyMoments::stage); a longer one is sorted
// by pred where it lies (its keys, with float64 preds their payloads beside them) and
// passed once (add_sorted_user), its moments from that sort (add_sorted,
// add_sorted_pairs). Leaves the long users' rows sorted. Scratch: 8 bytes a row of the longest
// user (12 with float64 preds).
// Short users' rows staged for their moments before the batch is added (KeyMoments::stage).
constexpr int64_t STAGED_ROWS = 4 * BLOCK;

template <class P>
void grouped_user_sums(Workspace& work, Output& out) {
    using L = uint8_t;
    const int64_t n_tags = work.n_tags;
    const bool has_tags = work.has_tags;
    const int64_t blocks = (1 + n_tags) * USER_FIELDS;
    // (pairs: a whole number is added to its pair exactly, with no per-block integers
    // but the groups' count)
    std::vector<unsigned __int128> whole(
        exact::pairs ? 0 : size_t((1 + n_tags) * WHOLE_FIELDS), 0);
    out.whole = exact::pairs ? nullptr : whole.data();
    std::vector<int64_t> group_counts(exact::pairs ? size_t(1 + n_tags) : 0, 0);
    out.users = exact::pairs ? group_counts.data() : nullptr;
    uint64_t* grouped = work.grouped.get();
    uint32_t* payload = work.grouped_payload.get();
    const std::vector<int64_t>& ends = work.ends;
    int64_t longest = 0;
    for (size_t u = 0; u < ends.size(); ++u)
        longest = std::max(longest, ends[u] - (u ? ends[u - 1] : 0));
    const int64_t longs = longest > SHORT ? longest : 0;
    Scratch<P, L> s;
    s.sort0 = nullptr;
    s.payload0 = nullptr;
    s.sort1 = work.sort1.at_least(longs);
    s.payload1 = work.payload1.at_least(sizeof(P) == 4 ? 0 : longs);
    s.scratch.assign(4 * (1 + n_tags), 0);
    s.seen0.resize(std::min(n_tags, longs));
    s.seen1.resize(std::min(n_tags, longs));
    KeyMoments moments;
    const int64_t moment_blocks = (1 + n_tags) * MOMENT_FIELDS;
    int64_t moment_groups = 0;
    int64_t lo = 0;
    for (size_t u = 0; u < ends.size(); ++u) {
        const int64_t hi = ends[u], m = hi - lo;
        uint64_t* keys = grouped + lo;
        uint32_t* low = sizeof(P) == 4 ? nullptr : payload + lo;  // float64: tag << 1 | label
        if (m <= SHORT) {
            if (out.moments)
                moments.stage(
                    m,
                    [&](int64_t k, uint64_t& key, uint32_t& code) {
                        if constexpr (sizeof(P) == 4) {
                            float value;
                            const uint32_t value_bits = uint32_t(keys[k] >> 32);
                            std::memcpy(&value, &value_bits, sizeof value);
                            key = (bits_of(double(value)) << 1) | (keys[k] & 1u);
                            code = uint32_t(keys[k] & UINT64_C(0xFFFFFFFF)) >> 1;
                        } else {
                            key = (keys[k] << 1) | uint64_t(low[k] & 1u);
                            code = low[k] >> 1;
                        }
                    });
            add_short_rows<P, L>(
                m,
                [&](int64_t k, P& value, int64_t& y, int64_t& code) {
                    if constexpr (sizeof(P) == 4) {
                        const uint32_t value_bits = uint32_t(keys[k] >> 32);
                        std::memcpy(&value, &value_bits, sizeof value);
                        y = int64_t(keys[k] & 1u);
                        code = int64_t(uint32_t(keys[k] & UINT64_C(0xFFFFFFFF)) >> 1);
                    } else {
                        value = double_of(keys[k]);
                        y = int64_t(low[k] & 1u);
                        code = int64_t(low[k] >> 1);
                    }
                },
                has_tags, n_tags, s, out);
        } else if constexpr (sizeof(P) == 4) {
            sort::radix_sort(keys, static_cast<sort::NoPayload*>(nullptr), s.sort1,
                             static_cast<sort::NoPayload*>(nullptr), m);
            add_sorted_user(keys, 32, static_cast<const uint32_t*>(nullptr), m, n_tags, s, out);
            if (out.moments)
                moment_groups += moments.add_sorted(keys, m, has_tags, n_tags, out.moments,
                                                    MOMENT_FIELDS);
        } else {
            sort::radix_sort(keys, low, s.sort1, s.payload1, m);
            add_sorted_user(keys, 0, low, m, n_tags, s, out);
            if (out.moments)
                moment_groups += moments.add_sorted_pairs(keys, low, m, has_tags, n_tags,
                                                          out.moments, MOMENT_FIELDS);
        }
        if (out.moments && moments.staged_rows() >= STAGED_ROWS)
            moment_groups += moments.add_staged(n_tags, out.moments, MOMENT_FIELDS);
        if (out.moments && moment_groups >= exact::SAFE_ADDS / 2) {
            exact::normalize(out.moments, moment_blocks);
            moment_groups = 0;
        }
        if ((u + 1) % size_t(exact::SAFE_ADDS) == 0) exact::normalize(out.sums, blocks);
        lo = hi;
    }
    add_whole_counts(out, 1 + n_tags);
    out.whole = nullptr;
    add_user_counts(out, 1 + n_tags);
    out.users = nullptr;
    exact::normalize(out.sums, blocks);
    if (out.moments) {
        moments.add_staged(n_tags, out.moments, MOMENT_FIELDS);
        exact::normalize(out.moments, moment_blocks);
        moments.flush(out.moments, MOMENT_FIELDS);
        exact::normalize(out.moments, moment_blocks);
    }
}

// Every user of the grouped rows (group: a run of one packed >> row_bits is a user) adds
// its groups' products to sums (blocks, MOMENT_FIELDS [+ COMPARE_MOMENT_FIELDS], DIGITS).
// compare, weight: null when absent (a weight of 1).
template <class P>
void moment_sums(const uint64_t* packed, int64_t n, int row_bits, const P* pred,
                 const uint8_t* label, const uint32_t* tag, int64_t n_tags, const P* compare,
                 const double* weight, double* sums) {
    const int64_t fields = MOMENT_FIELDS + (compare ? COMPARE_MOMENT_FIELDS : 0);
    const int64_t blocks = 1 + n_tags;
    const uint64_t row_mask = (uint64_t(1) << row_bits) - 1;
    std::vector<MomentRow> rows;
    KeyMoments by_keys;
    int64_t groups = 0;
    for (int64_t start = 0; start < n;) {
        const int64_t end = run_end(packed, start, n, row_bits);
        if (compare == nullptr && weight == nullptr) {
            groups += by_keys.add_user(
                end - start, [&](int64_t k) { return int64_t(packed[start + k] & row_mask); },
                [&](int64_t k) { prefetch_row(packed, start + k + AHEAD, n, row_mask, pred,
                                              label, tag); },
                pred, label, tag, n_tags, sums, fields);
            if (groups >= exact::SAFE_ADDS / 2) {
                exact::normalize(sums, blocks * fields);
                groups = 0;
            }
            start = end;
            continue;
        }
        rows.resize(size_t(end - start));
        for (int64_t k = start; k < end; ++k) {
            const uint64_t row = packed[k] & row_mask;
            if (k + AHEAD < n) {
                const uint64_t ahead = packed[k + AHEAD] & row_mask;
                __builtin_prefetch(pred + ahead);
                __builtin_prefetch(label + ahead);
                if (tag) __builtin_prefetch(tag + ahead);
                if (compare) __builtin_prefetch(compare + ahead);
                if (weight) __builtin_prefetch(weight + ahead);
            }
            MomentRow& r = rows[size_t(k - start)];
            r.pred = double(pred[row]) + 0.0;
            r.compare = compare ? double(compare[row]) + 0.0 : 0.0;
            r.weight = weight ? weight[row] + 0.0 : 1.0;
            r.tag = tag ? uint32_t(tag[row]) : uint32_t(n_tags);
            r.label = label[row] ? 1u : 0u;
        }
        std::sort(rows.begin(), rows.end(), moment_order);
        groups += add_user_moments(rows, sums, fields, n_tags, compare != nullptr);
        if (groups >= exact::SAFE_ADDS / 2) {
            exact::normalize(sums, blocks * fields);
            groups = 0;
        }
        start = end;
    }
    by_keys.flush(sums, fields);
    exact::normalize(sums, blocks * fields);
}

// row_sums with a weight a row: each weighted value added to its blocks exactly.
template <class P, class L, class C, class T>
void weighted_row_sums(const P* pred, const L* label, const C* codes, const T* tag_of_code,
                       int64_t n, int64_t n_tags, double* sums, const double* weight) {
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = codes != nullptr ? int64_t(tag_of_code[codes[i]]) : n_tags;
        const double w = weight[i];
        const double p = double(pred[i]);
        const int64_t y = label[i] ? 1 : 0;
        const double values[4] = {w, y ? w : 0.0, w * p, w * binary_logloss(p, y)};
        for (const int64_t block : {int64_t(0), 1 + t}) {
            if (block > n_tags) continue;
            double* s = sums + block * 4 * D;
            for (int k = 0; k < 4; ++k) exact::add(s + k * D, values[k]);
        }
        if ((i + 1) % exact::SAFE_ADDS == 0) exact::normalize(sums, (n_tags + 1) * 4);
    }
    exact::normalize(sums, (n_tags + 1) * 4);
}

// Calls each(row, pred, label, logloss) for rows 0 .. n - 1 in order, the logloss terms
// computed a block of BLOCK rows at a time in one vectorised loop (the last block padded
// with pred 0, label 0, whose terms are dropped).
template <class P, class L, class F>
void for_each_logloss(const P* pred, const L* label, int64_t n, F&& each) {
    auto block = std::make_unique<LoglossScratch>();
    std::vector<double> logloss(BLOCK);
    std::vector<P> pad_pred(BLOCK);
    std::vector<L> pad_label(BLOCK);
    for (int64_t start = 0; start < n; start += BLOCK) {
        const int64_t m = std::min(BLOCK, n - start);
        const P* p_block = pred + start;
        const L* y_block = label + start;
        if (m < BLOCK) {
            std::fill(pad_pred.begin(), pad_pred.end(), P(0));
            std::fill(pad_label.begin(), pad_label.end(), L(0));
            std::copy(p_block, p_block + m, pad_pred.begin());
            std::copy(y_block, y_block + m, pad_label.begin());
            p_block = pad_pred.data();
            y_block = pad_label.data();
        }
        logloss_block(p_block, y_block, *block, logloss.data());
        for (int64_t i = 0; i < m; ++i) each(start + i, p_block[i], y_block[i], logloss[i]);
    }
}

// Rows a tag from which row_sums gives each tag its own exact::Wide pair (64 KB, cleared and
// folded once: about as much work as adding 4,096 rows to the digits directly); with fewer,
// a tag's rows go to its digits directly (many tags: no per-tag scratch).
constexpr int64_t WIDE_ROWS = 4096;

// many_tag_row_sums in pairs mode (many tags): each row's count, click, pred and logloss
// added to its tag's four pairs (64 bytes side by side, asked of the memory AHEAD rows
// before), with no per-tag counters beside them (a pair holds a whole count exactly): one
// place a row touches, not four. Block 0's as many_tag_row_sums.
template <class P, class L, class C, class T>
void pair_row_sums(const P* pred, const L* label, const C* codes, const T* tag_of_code,
                   int64_t n, int64_t n_tags, double* sums) {
    auto all = std::make_unique<exact::Wide[]>(2);
    all[0].clear();
    all[1].clear();
    int64_t rows = 0, clicks = 0;
    const int64_t d = D;  // (2: a pair; read once, a thread-local)
    for_each_logloss(pred, label, n, [&](int64_t row, P p, L label_value, double logloss) {
        rows += 1;
        clicks += int64_t(label_value);
        all[0].add(double(p));
        all[1].add(logloss);
        if (codes == nullptr) return;
        if (row + AHEAD < n) {  // a later row's tag sums (anywhere): both their lines
            const int64_t later = int64_t(tag_of_code[codes[row + AHEAD]]);
            if (later < n_tags) {
                const char* at = reinterpret_cast<const char*>(sums + (1 + later) * 4 * d);
                __builtin_prefetch(at, 1);
                __builtin_prefetch(at + 4 * d * sizeof(double) - 1, 1);
            }
        }
        const int64_t t = int64_t(tag_of_code[codes[row]]);
        if (t >= n_tags) return;
        double* s = sums + (1 + t) * 4 * d;
        s[0] += 1.0;  // (a count: a whole number below 2**53, exact in hi, lo 0)
        s[d] += double(label_value);
        exact::add_pair(s + 2 * d, double(p));
        exact::add_pair(s + 3 * d, logloss);
    });
    exact::fold_into_window(all[0], sums + 2 * d);
    exact::fold_into_window(all[1], sums + 3 * d);
    exact::add(sums, double(rows));
    exact::add(sums + d, double(clicks));
}

// row_sums with fewer than WIDE_ROWS rows a tag: block 0's pred and logloss sums in one
// exact::Wide pair, each tag's added to its digits (the same exact sums, so the same bits).
template <class P, class L, class C, class T>
void many_tag_row_sums(const P* pred, const L* label, const C* codes, const T* tag_of_code,
                       int64_t n, int64_t n_tags, double* sums) {
    auto all = std::make_unique<exact::Wide[]>(2);
    all[0].clear();
    all[1].clear();
    std::vector<int64_t> rows(n_tags + 1, 0), clicks(n_tags + 1, 0);
    std::vector<int32_t> adds(n_tags, 0);  // a tag's additions since its digits' last carry
    for_each_logloss(pred, label, n, [&](int64_t row, P p, L label_value, double logloss) {
        const int64_t t = codes != nullptr ? int64_t(tag_of_code[codes[row]]) : n_tags;
        if (codes != nullptr && row + AHEAD < n) {  // a later row's tag sums (anywhere)
            const int64_t later = int64_t(tag_of_code[codes[row + AHEAD]]);
            if (later < n_tags) __builtin_prefetch(sums + (1 + later) * 4 * D + 2 * D, 1);
        }
        rows[t] += 1;
        clicks[t] += int64_t(label_value);
        all[0].add(double(p));
        all[1].add(logloss);
        if (t >= n_tags) return;
        double* s = sums + (1 + t) * 4 * D;
        exact::add(s + 2 * D, double(p));
        exact::add(s + 3 * D, logloss);
        if (++adds[t] == exact::SAFE_ADDS) {
            exact::normalize(s + 2 * D, 2);
            adds[t] = 0;
        }
    });
    exact::fold_into_window(all[0], sums + 2 * D);  // (D: the thread's window of digits)
    exact::fold_into_window(all[1], sums + 3 * D);
    for (int64_t t = 0; t < n_tags + 1; ++t) {
        for (const int64_t b : {int64_t(0), 1 + t}) {
            if (b > n_tags) continue;
            exact::add(sums + b * 4 * D, double(rows[t]));
            exact::add(sums + b * 4 * D + D, double(clicks[t]));
        }
    }
    exact::normalize(sums, (n_tags + 1) * 4);
}

// sums (1 + n_tags, 4, DIGITS): rows, clicks, pred, logloss; block 0 every row, 1 + t tag t
// (t = tag_of_code[codes[row]]; codes null: no row has a tag).
// With weight (not null): rows, clicks, pred and logloss each weighted (sum w, sum w y,
// sum w pred, sum w logloss), each in fixed point.
template <class P, class L, class C, class T>
void row_sums(const P* pred, const L* label, const C* codes, const T* tag_of_code, int64_t n,
              int64_t n_tags, double* sums, const double* weight = nullptr) {
    if (weight != nullptr) {
        weighted_row_sums(pred, label, codes, tag_of_code, n, n_tags, sums, weight);
        return;
    }
    if (n_tags * WIDE_ROWS > n) {
        if (exact::pairs)
            pair_row_sums(pred, label, codes, tag_of_code, n, n_tags, sums);
        else
            many_tag_row_sums(pred, label, codes, tag_of_code, n, n_tags, sums);
        return;
    }
    // each tag's pred and logloss sums in fixed point (exact::Wide), folded once
    std::vector<exact::Wide> wide(2 * (n_tags + 1));
    for (auto& w : wide) w.clear();
    std::vector<int64_t> rows(n_tags + 1, 0), clicks(n_tags + 1, 0);
    for_each_logloss(pred, label, n, [&](int64_t row, P p, L label_value, double logloss) {
        const int64_t t = codes != nullptr ? int64_t(tag_of_code[codes[row]]) : n_tags;
        rows[t] += 1;
        clicks[t] += int64_t(label_value);
        wide[2 * t].add(double(p));
        wide[2 * t + 1].add(logloss);
    });
    for (int64_t t = 0; t < n_tags + 1; ++t) {
        for (const int64_t block : {int64_t(0), 1 + t}) {
            if (block > n_tags) continue;
            double* s = sums + block * 4 * D;
            exact::add(s, double(rows[t]));
            exact::add(s + D, double(clicks[t]));
            // (folded into each of its two blocks: few tags; a digit or a pair alike)
            exact::fold_into_window(wide[2 * t], s + 2 * D);
            exact::fold_into_window(wide[2 * t + 1], s + 3 * D);
        }
    }
    exact::normalize(sums, (n_tags + 1) * 4);
}

// groups (G, 3): block, rows, AUC of the two models; sums (blocks, DIFF_FIELDS, D), D the
// thread's window of digits.
inline void paired_diff_sums(const double* groups_a, const double* groups_b, int64_t g_count,
                             double* sums, int64_t blocks) {
    for (int64_t g = 0; g < g_count; ++g) {
        const int64_t block = int64_t(groups_a[3 * g]);
        const double n = groups_a[3 * g + 1];
        const double d = groups_b[3 * g + 2] - groups_a[3 * g + 2];
        double* s = sums + block * DIFF_FIELDS * D;
        exact::add(s, d);
        exact::add(s + D, d * d);
        exact::add(s + 2 * D, n * d);
        exact::add(s + 3 * D, n * n * d);
        exact::add(s + 4 * D, n * n * d * d);
        if ((g + 1) % exact::SAFE_ADDS == 0) exact::normalize(sums, blocks * DIFF_FIELDS);
    }
    exact::normalize(sums, blocks * DIFF_FIELDS);
}

}  // namespace mpieval::wuauc

#undef D
