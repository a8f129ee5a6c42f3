// mpieval._core: the nanobind bindings of the kernels (the shared ones are the headers
// beside this file, each kind's are kernels.hpp in its folder, mpieval/kinds/<kind>/). Each binding takes C-contiguous numpy arrays (the Python wrappers in
// mpieval/kernels/ make them so), dispatches on their dtypes, and runs the kernel with the
// GIL released. Outputs are arrays the caller allocated, filled in place.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "codes.hpp"
#include "exact.hpp"
#include "keys.hpp"
#include "labels.hpp"
#include "logloss.hpp"
#include "sort.hpp"
// the kinds' own kernels, in their folders
#include "kinds/auc/delong.hpp"
#include "kinds/auc/kernels.hpp"
#include "kinds/pn/kernels.hpp"
#include "kinds/wuauc/kernels.hpp"

namespace nb = nanobind;
using namespace mpieval;

using In = nb::ndarray<nb::ro, nb::device::cpu, nb::c_contig>;
using Out = nb::ndarray<nb::device::cpu, nb::c_contig>;

template <class... Ts>
struct Types {};
using Floats = Types<float, double>;
using Labels = Types<int8_t, uint8_t, int32_t, int64_t, float, double, bool>;
using Indexes = Types<int64_t, int32_t, uint16_t, uint32_t, uint64_t, int16_t, uint8_t, int8_t>;

// f(pointer as T*) for the dtype T of `a` among Ts.
template <class A, class F, class T, class... Ts>
void dispatch(const A& a, F&& f, Types<T, Ts...>) {
    if (a.dtype() == nb::dtype<T>()) {
        f(static_cast<T*>(const_cast<void*>(static_cast<const void*>(a.data()))));
        return;
    }
    if constexpr (sizeof...(Ts) > 0)
        dispatch(a, f, Types<Ts...>{});
    else
        throw nb::type_error("mpieval._core: an array of an unsupported dtype");
}

template <class T, class A>
T* as(const A& a, const char* what) {
    if (a.dtype() != nb::dtype<T>())
        throw nb::type_error((std::string("mpieval._core: wrong dtype of ") + what).c_str());
    return static_cast<T*>(const_cast<void*>(static_cast<const void*>(a.data())));
}

template <class A>
int64_t length(const A& a) {
    return a.ndim() == 0 ? 1 : int64_t(a.shape(0));
}

using Release = nb::gil_scoped_release;

NB_MODULE(_core, m) {
    m.doc() = "mpieval's compiled kernels (see mpieval/kernels/)";
    m.attr("DIGITS") = exact::DIGITS;

    // exact
    m.def("normalize", [](Out acc) {
        double* a = as<double>(acc, "acc");
        const int64_t digits = acc.ndim() ? int64_t(acc.shape(acc.ndim() - 1)) : 1;
        const int64_t rows = digits ? int64_t(acc.size()) / digits : 0;
        Release r;
        if (digits) exact::normalize(a, rows, digits);
    }, nb::arg("acc").noconvert());
    m.def("add_values", [](Out acc, In values) {
        double* a = as<double>(acc, "acc");
        const double* v = as<double>(values, "values");
        const int64_t n = int64_t(values.size());
        Release r;
        exact::add_values(a, v, n);
    }, nb::arg("acc").noconvert(), nb::arg("values").noconvert());

    // logloss: mpieval's own log (logloss.hpp), for the tests against the Python twin
    m.def("log", [](In x, Out out) {
        const double* v = as<double>(x, "x");
        double* o = as<double>(out, "out");
        const int64_t n = int64_t(x.size());
        Release r;
        for (int64_t i = 0; i < n; ++i) o[i] = mpieval::log(v[i]);
    }, nb::arg("x").noconvert(), nb::arg("out").noconvert());

    // auc
    m.def("accumulate_binary", [](Out table, In pred, In label, Out sums) {
        double* t = as<double>(table, "table");
        double* s = as<double>(sums, "sums");
        const int64_t size = int64_t(table.shape(1)), n = length(pred);
        dispatch(pred, [&](auto* p) {
            dispatch(label, [&](auto* y) {
                Release r;
                auc::accumulate_binary(t, size, p, y, n, s);
            }, Labels{});
        }, Floats{});
    }, nb::arg("table").noconvert(), nb::arg("pred").noconvert(), nb::arg("label").noconvert(),
       nb::arg("sums").noconvert());
    m.def("accumulate_weighted", [](Out table, In pred, In label, In weight, Out sums) {
        double* t = as<double>(table, "table");
        double* s = as<double>(sums, "sums");
        const double* w = as<double>(weight, "weight");
        const int64_t size = int64_t(table.shape(1)), n = length(pred);
        dispatch(pred, [&](auto* p) {
            dispatch(label, [&](auto* y) {
                Release r;
                auc::accumulate_weighted(t, size, p, y, w, n, s);
            }, Labels{});
        }, Floats{});
    }, nb::arg("table").noconvert(), nb::arg("pred").noconvert(), nb::arg("label").noconvert(),
       nb::arg("weight").noconvert(), nb::arg("sums").noconvert());
    m.def("bucket_pairs", [](In pred_a, In pred_b, int64_t size, Out bucket_a, Out bucket_b) {
        const int64_t n = length(pred_a);
        dispatch(pred_a, [&](auto* a) {
            dispatch(pred_b, [&](auto* b) {
                dispatch(bucket_a, [&](auto* out_a) {
                    using O = std::remove_pointer_t<decltype(out_a)>;
                    O* out_b = as<O>(bucket_b, "bucket_b");
                    Release r;
                    auc::bucket_pairs(a, b, n, size, out_a, out_b);
                }, Indexes{});
            }, Floats{});
        }, Floats{});
    }, nb::arg("pred_a").noconvert(), nb::arg("pred_b").noconvert(), nb::arg("size"),
       nb::arg("bucket_a").noconvert(), nb::arg("bucket_b").noconvert());
    m.def("bucket_error", [](In filled, In negatives, In positives, int64_t table_size) {
        const int64_t* f = as<int64_t>(filled, "filled");
        const double* neg = as<double>(negatives, "negatives");
        const double* pos = as<double>(positives, "positives");
        const int64_t n = length(filled);
        Release r;
        return auc::bucket_error(f, neg, pos, n, table_size);
    }, nb::arg("filled").noconvert(), nb::arg("negatives").noconvert(),
       nb::arg("positives").noconvert(), nb::arg("table_size"));
    m.def("roc", [](In negatives, In positives, int64_t points, Out curve) {
        const double* neg = as<double>(negatives, "negatives");
        const double* pos = as<double>(positives, "positives");
        double* c = as<double>(curve, "curve");
        const int64_t n = length(negatives), room = int64_t(curve.size());
        Release r;
        std::vector<double> got = auc::roc(neg, pos, n, points);
        const int64_t count = std::min<int64_t>(int64_t(got.size()), room);
        std::copy(got.begin(), got.begin() + count, c);
        return count / 2;
    }, nb::arg("negatives").noconvert(), nb::arg("positives").noconvert(), nb::arg("points"),
       nb::arg("curve").noconvert());
    m.def("calibration", [](In filled, In negatives, In positives, int64_t size, int64_t points,
                            Out bins) {
        const int64_t* f = as<int64_t>(filled, "filled");
        const double* neg = as<double>(negatives, "negatives");
        const double* pos = as<double>(positives, "positives");
        double* b = as<double>(bins, "bins");
        const int64_t n = length(filled);
        Release r;
        std::vector<double> got = auc::calibration(f, neg, pos, n, size, points);
        std::copy(got.begin(), got.end(), b);
        return int64_t(got.size()) / 3;
    }, nb::arg("filled").noconvert(), nb::arg("negatives").noconvert(),
       nb::arg("positives").noconvert(), nb::arg("size"), nb::arg("points"),
       nb::arg("bins").noconvert());

    // stats
    m.def("delong", [](In negatives, In positives, double pos_units, double neg_units) {
        const double* neg = as<double>(negatives, "negatives");
        const double* pos = as<double>(positives, "positives");
        const int64_t n = length(negatives);
        stats::Delong d;
        {
            Release r;
            d = stats::delong(neg, pos, n, pos_units, neg_units);
        }
        return std::make_tuple(d.auc, d.variance, d.auprc, d.tie_bound);
    }, nb::arg("negatives").noconvert(), nb::arg("positives").noconvert(),
       nb::arg("pos_units") = NAN, nb::arg("neg_units") = NAN);
    m.def("paired_spread", [](In bucket_a, In bucket_b, In positive, In negative, In v10_a,
                              In v10_b, In v01_a, In v01_b, Out spread) {
        const int64_t n = length(bucket_a);
        const double* pa = as<double>(v10_a, "v10_a");
        const double* pb = as<double>(v10_b, "v10_b");
        const double* na = as<double>(v01_a, "v01_a");
        const double* nb_ = as<double>(v01_b, "v01_b");
        double* s = as<double>(spread, "spread");
        dispatch(bucket_a, [&](auto* a) {
            using B = std::remove_pointer_t<decltype(a)>;
            const B* b = as<B>(bucket_b, "bucket_b");
            dispatch(positive, [&](auto* pos) {
                using W = std::remove_pointer_t<decltype(pos)>;
                const W* neg = as<W>(negative, "negative");
                Release r;
                stats::paired_spread(a, b, pos, neg, n, pa, pb, na, nb_, s);
            }, Floats{});
        }, Indexes{});
    }, nb::arg("bucket_a").noconvert(), nb::arg("bucket_b").noconvert(),
       nb::arg("positive").noconvert(), nb::arg("negative").noconvert(),
       nb::arg("v10_a").noconvert(), nb::arg("v10_b").noconvert(),
       nb::arg("v01_a").noconvert(), nb::arg("v01_b").noconvert(),
       nb::arg("spread").noconvert());

    // sort
    m.def("merge_sort", [](Out first, Out tmp_first, int64_t m_, std::optional<Out> second,
                           std::optional<Out> tmp_second, bool count_inversions) {
        int64_t inversions = 0;
        using Keys = Types<double, float, uint64_t, int64_t>;
        using Second = Types<double, int64_t, uint64_t>;
        dispatch(first, [&](auto* f) {
            using A = std::remove_pointer_t<decltype(f)>;
            A* tf = as<A>(tmp_first, "tmp_first");
            if (!second) {
                Release r;
                inversions = count_inversions ? sort::merge_sort<true>(f, tf, m_)
                                              : sort::merge_sort<false>(f, tf, m_);
                return;
            }
            dispatch(*second, [&](auto* s) {
                using S = std::remove_pointer_t<decltype(s)>;
                S* ts = as<S>(*tmp_second, "tmp_second");
                Release r;
                inversions = count_inversions ? sort::merge_sort<true>(f, tf, m_, s, ts)
                                              : sort::merge_sort<false>(f, tf, m_, s, ts);
            }, Second{});
        }, Keys{});
        return inversions;
    }, nb::arg("first").noconvert(), nb::arg("tmp_first").noconvert(), nb::arg("m"),
       nb::arg("second").noconvert().none(), nb::arg("tmp_second").noconvert().none(),
       nb::arg("count_inversions"));
    m.def("radix_sort", [](Out keys, Out payload, Out tmp_keys, Out tmp_payload, int64_t m_) {
        uint64_t* k = as<uint64_t>(keys, "keys");
        uint64_t* tk = as<uint64_t>(tmp_keys, "tmp_keys");
        uint32_t* p = as<uint32_t>(payload, "payload");
        uint32_t* tp = as<uint32_t>(tmp_payload, "tmp_payload");
        Release r;
        sort::radix_sort(k, p, tk, tp, m_);
    }, nb::arg("keys").noconvert(), nb::arg("payload").noconvert(),
       nb::arg("tmp_keys").noconvert(), nb::arg("tmp_payload").noconvert(), nb::arg("m"));

    // pn
    m.def("pair_counts_per_user", [](In starts, In pred, In label, Out positive, Out negative,
                                     Out tie) {
        const int64_t* s = as<int64_t>(starts, "starts");
        const double* p = as<double>(pred, "pred");
        const double* y = as<double>(label, "label");
        int64_t* pos = as<int64_t>(positive, "positive");
        int64_t* neg = as<int64_t>(negative, "negative");
        int64_t* t = as<int64_t>(tie, "tie");
        const int64_t users = length(starts) - 1;
        Release r;
        pn::pair_counts_per_user(s, users, p, y, pos, neg, t);
    }, nb::arg("starts").noconvert(), nb::arg("pred").noconvert(), nb::arg("label").noconvert(),
       nb::arg("positive").noconvert(), nb::arg("negative").noconvert(),
       nb::arg("tie").noconvert());

    // keys
    m.def("mix64", [](uint64_t x) { return keys::mix64(x); }, nb::arg("x"));
    m.def("text_lengths", [](In offsets) {
        int64_t longest = 0, first_empty = -1;
        dispatch(offsets, [&](auto* o) {
            Release r;
            keys::text_lengths(o, std::max<int64_t>(length(offsets) - 1, 0), longest, first_empty);
        }, Types<int32_t, int64_t>{});
        return std::make_tuple(longest, first_empty);
    }, nb::arg("offsets").noconvert());
    m.def("hash_texts", [](In offsets, In data, In constants, In zero_terms, Out keys_,
                           Out checks) {
        const uint8_t* d = as<uint8_t>(data, "data");
        const uint64_t* c = as<uint64_t>(constants, "constants");
        const uint64_t* z = as<uint64_t>(zero_terms, "zero_terms");
        uint64_t* k = as<uint64_t>(keys_, "keys");
        const int64_t n = length(keys_);
        const int64_t width = constants.ndim() == 2 ? int64_t(constants.shape(1)) : 0;
        dispatch(offsets, [&](auto* o) {
            if (checks.dtype() == nb::dtype<uint32_t>()) {
                uint32_t* ch = as<uint32_t>(checks, "checks");
                Release r;
                keys::hash_texts(o, n, d, length(data), c, z, width, k, ch);
            } else {
                uint64_t* ch = as<uint64_t>(checks, "checks");
                Release r;
                keys::hash_texts(o, n, d, length(data), c, z, width, k, ch);
            }
        }, Types<int32_t, int64_t>{});
    }, nb::arg("offsets").noconvert(), nb::arg("data").noconvert(),
       nb::arg("constants").noconvert(), nb::arg("zero_terms").noconvert(),
       nb::arg("keys").noconvert(), nb::arg("checks").noconvert());

    // labels
    m.def("binary_to_u8", [](In values, Out out) {
        uint8_t* o = as<uint8_t>(out, "out");
        if (length(out) != length(values))
            throw nb::value_error("mpieval._core: binary_to_u8's out must be as long as values");
        int64_t first_bad = -1;
        dispatch(values, [&](auto* v) {
            Release r;
            first_bad = labels::binary_to_u8(v, length(values), o);
        }, Labels{});
        return first_bad;
    }, nb::arg("values").noconvert(), nb::arg("out").noconvert());

    // codes
    m.def("first_appearance", [](In offsets, In data, int64_t limit, Out codes_)
                                    -> std::optional<nb::ndarray<nb::numpy, int64_t>> {
        const uint8_t* d = as<uint8_t>(data, "data");
        uint16_t* c = as<uint16_t>(codes_, "codes");
        const int64_t n = length(codes_);
        if (length(offsets) != n + 1)
            throw nb::value_error("mpieval._core: offsets must have len(codes) + 1 entries");
        if (limit < 0 || limit > 65536)
            throw nb::value_error("mpieval._core: limit must be in [0, 65536]");
        auto* first_rows = new std::vector<int64_t>();
        nb::capsule owner(first_rows, [](void* p) noexcept {
            delete static_cast<std::vector<int64_t>*>(p);
        });
        bool fits = true;
        dispatch(offsets, [&](auto* o) {
            Release r;
            fits = codes::first_appearance(o, n, d, length(data), limit, c, *first_rows);
        }, Types<int32_t, int64_t>{});
        if (!fits) return std::nullopt;
        const size_t shape[1] = {first_rows->size()};
        return nb::ndarray<nb::numpy, int64_t>(first_rows->data(), 1, shape, owner);
    }, nb::arg("offsets").noconvert(), nb::arg("data").noconvert(), nb::arg("limit"),
       nb::arg("codes").noconvert());
    m.def("remap", [](In codes_, In lookup, Out out) {
        const uint16_t* c = as<uint16_t>(codes_, "codes");
        const uint16_t* l = as<uint16_t>(lookup, "lookup");
        uint16_t* o = as<uint16_t>(out, "out");
        const int64_t n = length(codes_), size = length(lookup);
        if (length(out) != n)
            throw nb::value_error("mpieval._core: remap's out must be as long as codes");
        Release r;
        return codes::remap(c, n, l, size, o);
    }, nb::arg("codes").noconvert(), nb::arg("lookup").noconvert(), nb::arg("out").noconvert());

    // wuauc
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
    m.def("user_sums", [](Out packed, bool overwrite, int row_bits, In pred, In label, In tag,
                          int64_t n_tags, Out sums, Out record, wuauc::Workspace& work) {
        uint64_t* p = as<uint64_t>(packed, "packed");
        const int64_t n = length(packed);
        wuauc::Output out{as<double>(sums, "sums"),
                          record.size() ? as<double>(record, "record") : nullptr, 0};
        dispatch(pred, [&](auto* values) {
            using P = std::remove_pointer_t<decltype(values)>;
            wuauc::Rows<P, uint8_t> in{values, as<uint8_t>(label, "label"),
                                       length(tag) ? as<uint16_t>(tag, "tag") : nullptr, n_tags};
            Release r;
            wuauc::user_sums(p, overwrite, n, row_bits, in, work, out);
        }, Floats{});
        return out.cursor;
    }, nb::arg("packed").noconvert(), nb::arg("overwrite"), nb::arg("row_bits"),
       nb::arg("pred").noconvert(), nb::arg("label").noconvert(), nb::arg("tag").noconvert(),
       nb::arg("n_tags"), nb::arg("sums").noconvert(), nb::arg("record").noconvert(),
       nb::arg("work"));
    m.def("row_sums", [](In pred, In label, In codes, In tag_of_code, Out sums) {
        const uint8_t* y = as<uint8_t>(label, "label");
        const uint16_t* c = as<uint16_t>(codes, "codes");
        const uint16_t* t = as<uint16_t>(tag_of_code, "tag_of_code");
        double* s = as<double>(sums, "sums");
        const int64_t n = length(pred), n_tags = int64_t(sums.shape(0)) - 1;
        dispatch(pred, [&](auto* p) {
            Release r;
            wuauc::row_sums(p, y, c, t, n, n_tags, s);
        }, Floats{});
    }, nb::arg("pred").noconvert(), nb::arg("label").noconvert(), nb::arg("codes").noconvert(),
       nb::arg("tag_of_code").noconvert(), nb::arg("sums").noconvert());
    m.def("paired_diff_sums", [](In groups_a, In groups_b, Out sums) {
        const double* a = as<double>(groups_a, "groups_a");
        const double* b = as<double>(groups_b, "groups_b");
        double* s = as<double>(sums, "sums");
        const int64_t g = length(groups_a), blocks = int64_t(sums.shape(0));
        Release r;
        wuauc::paired_diff_sums(a, b, g, s, blocks);
    }, nb::arg("groups_a").noconvert(), nb::arg("groups_b").noconvert(),
       nb::arg("sums").noconvert());
}
