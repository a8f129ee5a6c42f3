// The bindings of the wuauc kind's kernels (this folder's *.hpp): its submodule
// mpieval._core.wuauc, registered by the build (CMakeLists.txt finds this file by its name).
// The conventions are module.cpp's (mpieval/_core/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "bindings.hpp"
#include "kernels.hpp"

namespace mpieval::bindings {

namespace {

// A pass's n_tags, checked against the codes' room (wuauc::MAX_TAGS).
int64_t tags_checked(int64_t n_tags, const char* pass) {
    if (n_tags < 0 || n_tags > wuauc::MAX_TAGS)
        throw std::invalid_argument(std::string(pass) + ": n_tags must be in [0, 2**31 - 1]");
    return n_tags;
}

}  // namespace

void bind_wuauc(nb::module_ m) {
    m.doc() = "The wuauc kind's kernels: rows grouped by user, each user's sums, the "
              "paired differences of two models (kernels.hpp).";
    nb::class_<wuauc::Workspace>(m, "Workspace",
        "Memory a thread of the pass over users keeps from one part to the next.")
        .def(nb::init<>());
    m.def("parts", [](In keys_, Out parts, int part_bits, Out sizes) {
        const uint64_t* k = as<uint64_t>(keys_, "keys");
        uint8_t* p = as<uint8_t>(parts, "parts");
        int64_t* s = as<int64_t>(sizes, "sizes");
        const int64_t n = length(keys_);
        Release r;
        wuauc::parts(k, n, p, part_bits, s);
    }, nb::arg("keys").noconvert(), nb::arg("parts").noconvert(), nb::arg("part_bits"),
       nb::arg("sizes").noconvert());
    m.def("group", [](In keys_, In checks, In parts, int64_t part, Out packed, int row_bits) {
        const uint64_t* k = as<uint64_t>(keys_, "keys");
        const uint32_t* c = length(checks) ? as<uint32_t>(checks, "checks") : nullptr;
        const uint8_t* p = length(parts) ? as<uint8_t>(parts, "parts") : nullptr;
        uint64_t* out = as<uint64_t>(packed, "packed");
        const int64_t n = length(keys_);
        const int64_t m = length(packed);
        if ((p != nullptr && length(parts) != n) || (p == nullptr && m != n) || part < 0 || part > 255)
            throw std::invalid_argument("group: parts of every row, packed of the part's");
        Release r;
        return wuauc::group(k, c, n, p, part, out, m, row_bits);
    }, nb::arg("keys").noconvert(), nb::arg("checks").noconvert(), nb::arg("parts").noconvert(),
       nb::arg("part"), nb::arg("packed").noconvert(), nb::arg("row_bits"));
    m.def("group_rows", [](In keys_, In checks, In parts, int64_t part, int64_t rows, In pred,
                           In label, In tag, int64_t n_tags, wuauc::Workspace& work) {
        const uint64_t* k = as<uint64_t>(keys_, "keys");
        const uint32_t* c = length(checks) ? as<uint32_t>(checks, "checks") : nullptr;
        const uint8_t* p = length(parts) ? as<uint8_t>(parts, "parts") : nullptr;
        const int64_t n = length(keys_);
        if ((p != nullptr && length(parts) != n) || (p == nullptr && rows != n) || part < 0 ||
            part > 255 || rows < 0)
            throw std::invalid_argument("group_rows: parts of every row, rows of the part's");
        if (length(pred) != n || length(label) != n || (length(tag) && length(tag) != n) ||
            tags_checked(n_tags, "group_rows") != n_tags)
            throw std::invalid_argument("group_rows: a pred, label (and tag) a key");
        bool collision = false;
        dispatch(pred, [&](auto* values) {
            using P = std::remove_pointer_t<decltype(values)>;
            wuauc::Rows<P, uint8_t> in{values, as<uint8_t>(label, "label"),
                                       length(tag) ? as<uint32_t>(tag, "tag") : nullptr, n_tags};
            Release r;
            collision = wuauc::group_rows(k, c, n, p, part, rows, in, work);
        }, Floats{});
        return collision;
    }, nb::arg("keys").noconvert(), nb::arg("checks").noconvert(), nb::arg("parts").noconvert(),
       nb::arg("part"), nb::arg("rows"), nb::arg("pred").noconvert(),
       nb::arg("label").noconvert(), nb::arg("tag").noconvert(), nb::arg("n_tags"),
       nb::arg("work"));
    m.def("grouped_user_sums", [](wuauc::Workspace& work, Out sums, Out moments) {
        if (work.pred_bytes == 0) throw std::invalid_argument("grouped_user_sums: no rows grouped");
        const int64_t n_tags = work.n_tags;
        if (int64_t(sums.shape(0)) != 1 + n_tags || int64_t(sums.shape(1)) != wuauc::USER_FIELDS)
            throw std::invalid_argument(
                "grouped_user_sums: sums of shape (1 + n_tags, USER_FIELDS, DIGITS)");
        wuauc::Output out{as<double>(sums, "sums"), nullptr, 0};
        if (moments.size()) {
            if (int64_t(moments.shape(0)) != 1 + n_tags ||
                int64_t(moments.shape(1)) != wuauc::MOMENT_FIELDS)
                throw std::invalid_argument(
                    "grouped_user_sums: moments of shape (1 + n_tags, MOMENT_FIELDS, DIGITS)");
            out.moments = as<double>(moments, "moments");
        }
        Release r;
        if (work.pred_bytes == 4)
            wuauc::grouped_user_sums<float>(work, out);
        else
            wuauc::grouped_user_sums<double>(work, out);
        work.pred_bytes = 0;  // the long users' rows are left sorted: grouped again first
    }, nb::arg("work"), nb::arg("sums").noconvert(), nb::arg("moments").noconvert());
    m.def("user_sums", [](Out packed, bool overwrite, int row_bits, In pred, In label, In tag,
                          int64_t n_tags, Out sums, Out record, wuauc::Workspace& work,
                          In weight, Out moments) {
        uint64_t* p = as<uint64_t>(packed, "packed");
        const int64_t n = length(packed);
        tags_checked(n_tags, "user_sums");
        wuauc::Output out{as<double>(sums, "sums"),
                          record.size() ? as<double>(record, "record") : nullptr, 0};
        if (moments.size()) {
            if (length(weight))
                throw std::invalid_argument("user_sums: moments without a weight only");
            if (int64_t(moments.shape(0)) != 1 + n_tags ||
                int64_t(moments.shape(1)) != wuauc::MOMENT_FIELDS)
                throw std::invalid_argument(
                    "user_sums: moments of shape (1 + n_tags, MOMENT_FIELDS, DIGITS)");
            out.moments = as<double>(moments, "moments");
        }
        dispatch(pred, [&](auto* values) {
            using P = std::remove_pointer_t<decltype(values)>;
            wuauc::Rows<P, uint8_t> in{values, as<uint8_t>(label, "label"),
                                       length(tag) ? as<uint32_t>(tag, "tag") : nullptr, n_tags,
                                       length(weight) ? as<double>(weight, "weight") : nullptr};
            Release r;
            wuauc::user_sums(p, overwrite, n, row_bits, in, work, out);
        }, Floats{});
        return out.cursor;
    }, nb::arg("packed").noconvert(), nb::arg("overwrite"), nb::arg("row_bits"),
       nb::arg("pred").noconvert(), nb::arg("label").noconvert(), nb::arg("tag").noconvert(),
       nb::arg("n_tags"), nb::arg("sums").noconvert(), nb::arg("record").noconvert(),
       nb::arg("work"), nb::arg("weight").noconvert(), nb::arg("moments").noconvert());
    m.def("row_sums", [](In pred, In label, In codes, In tag_of_code, Out sums, In weight) {
        const uint8_t* y = as<uint8_t>(label, "label");
        const uint32_t* c = length(codes) ? as<uint32_t>(codes, "codes") : nullptr;
        const uint32_t* t = as<uint32_t>(tag_of_code, "tag_of_code");
        double* s = as<double>(sums, "sums");
        const double* w = length(weight) ? as<double>(weight, "weight") : nullptr;
        const int64_t n = length(pred),
                      n_tags = tags_checked(int64_t(sums.shape(0)) - 1, "row_sums");
        if ((w != nullptr && length(weight) != n) || (c != nullptr && length(codes) != n))
            throw std::invalid_argument("row_sums: a weight (and a code) a row");
        dispatch(pred, [&](auto* p) {
            Release r;
            wuauc::row_sums(p, y, c, t, n, n_tags, s, w);
        }, Floats{});
    }, nb::arg("pred").noconvert(), nb::arg("label").noconvert(), nb::arg("codes").noconvert(),
       nb::arg("tag_of_code").noconvert(), nb::arg("sums").noconvert(),
       nb::arg("weight").noconvert());
    m.def("moment_sums", [](In packed, int row_bits, In pred, In label, In tag, int64_t n_tags,
                            In compare, In weight, Out sums) {
        const uint64_t* k = as<uint64_t>(packed, "packed");
        const int64_t n = length(packed);
        const uint8_t* y = as<uint8_t>(label, "label");
        const uint32_t* t = length(tag) ? as<uint32_t>(tag, "tag") : nullptr;
        tags_checked(n_tags, "moment_sums");
        const double* w = length(weight) ? as<double>(weight, "weight") : nullptr;
        double* s = as<double>(sums, "sums");
        const int64_t fields = wuauc::MOMENT_FIELDS +
                               (length(compare) ? wuauc::COMPARE_MOMENT_FIELDS : 0);
        if (int64_t(sums.shape(0)) != 1 + n_tags || int64_t(sums.shape(1)) != fields)
            throw std::invalid_argument("moment_sums: sums of shape (1 + n_tags, fields, DIGITS)");
        dispatch(pred, [&](auto* p) {
            using P = std::remove_pointer_t<decltype(p)>;
            const P* b = length(compare) ? as<P>(compare, "compare") : nullptr;
            Release r;
            wuauc::moment_sums(k, n, row_bits, p, y, t, n_tags, b, w, s);
        }, Floats{});
    }, nb::arg("packed").noconvert(), nb::arg("row_bits"), nb::arg("pred").noconvert(),
       nb::arg("label").noconvert(), nb::arg("tag").noconvert(), nb::arg("n_tags"),
       nb::arg("compare").noconvert(), nb::arg("weight").noconvert(),
       nb::arg("sums").noconvert());
    m.def("paired_diff_sums", [](In groups_a, In groups_b, Out sums) {
        const double* a = as<double>(groups_a, "groups_a");
        const double* b = as<double>(groups_b, "groups_b");
        double* s = as<double>(sums, "sums");
        if (sums.ndim() != 3 || int64_t(sums.shape(1)) != wuauc::DIFF_FIELDS ||
            int64_t(sums.shape(2)) != exact::window_digits)
            throw nb::value_error("mpieval._core: paired_diff_sums' sums have shape (blocks, "
                                  "5, the thread's window of digits)");
        if (groups_a.ndim() != 2 || groups_a.shape(1) != 3 || groups_b.ndim() != 2 ||
            groups_b.shape(1) != 3 || groups_b.shape(0) != groups_a.shape(0))
            throw nb::value_error("mpieval._core: paired_diff_sums' groups are (G, 3), alike");
        const int64_t g = length(groups_a), blocks = int64_t(sums.shape(0));
        Release r;
        wuauc::paired_diff_sums(a, b, g, s, blocks);
    }, nb::arg("groups_a").noconvert(), nb::arg("groups_b").noconvert(),
       nb::arg("sums").noconvert());
}

}  // namespace mpieval::bindings
