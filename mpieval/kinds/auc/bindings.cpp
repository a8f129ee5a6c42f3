// The bindings of the auc kind's kernels (this folder's *.hpp): its submodule
// mpieval._core.auc, registered by the build (CMakeLists.txt finds this file by its name).
// The conventions are module.cpp's (mpieval/_core/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "delong.hpp"
#include "kernels.hpp"

namespace mpieval::bindings {

void bind_auc(nb::module_ m) {
    m.doc() = "The auc kind's kernels: a batch's table, bucket error, the ROC and "
              "calibration curves, DeLong's sweep, the paired spread (kernels.hpp, delong.hpp).";
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
    m.def("moments_binary", [](In pred, In label, Out moments, int64_t cece, int64_t cey,
                               int64_t fourth, int64_t uppp) {
        double* acc = as<double>(moments, "moments");
        const int64_t fields[4] = {cece, cey, fourth, uppp};
        const int64_t rows = int64_t(moments.shape(0)), n = length(pred);
        for (int64_t field : fields)
            if (field < 0 || field >= rows) throw std::out_of_range("moments: no such field");
        dispatch(pred, [&](auto* p) {
            dispatch(label, [&](auto* y) {
                Release r;
                auc::moments_binary(p, y, n, acc, fields);
            }, Labels{});
        }, Floats{});
    }, nb::arg("pred").noconvert(), nb::arg("label").noconvert(),
       nb::arg("moments").noconvert(), nb::arg("cece"), nb::arg("cey"), nb::arg("fourth"),
       nb::arg("uppp"));
    m.def("accumulate_slices", [](Out tables, In pred, In label, In codes, Out sums,
                                  Out moments, int64_t v, int64_t cece, int64_t cey,
                                  int64_t fourth, int64_t uppp, std::optional<Out> whole_table,
                                  std::optional<Out> whole_sums,
                                  std::optional<Out> whole_moments) {
        if (tables.ndim() != 3 || tables.shape(1) != 2)
            throw std::invalid_argument("accumulate_slices: tables of shape (slices, 2, size)");
        const int64_t slices = int64_t(tables.shape(0)), size = int64_t(tables.shape(2));
        const int64_t n = length(pred);
        if (codes.ndim() != 2 || int64_t(codes.shape(1)) != n || length(label) != n)
            throw std::invalid_argument("accumulate_slices: codes of shape (columns, rows)");
        const int64_t dims = int64_t(codes.shape(0));
        if (sums.ndim() != 3 || int64_t(sums.shape(0)) != slices ||
            int64_t(sums.shape(1)) != auc::N_SUMS || int64_t(sums.shape(2)) != exact::DIGITS ||
            moments.ndim() != 3 || int64_t(moments.shape(0)) != slices ||
            int64_t(moments.shape(2)) != exact::DIGITS)
            throw std::invalid_argument("accumulate_slices: sums and moments of each slice");
        const int64_t rows = int64_t(moments.shape(1));
        for (int64_t field : {v, cece, cey, fourth, uppp})
            if (field < 0 || field >= rows) throw std::out_of_range("moments: no such field");
        const auc::SliceTargets to{as<double>(sums, "sums"), as<double>(moments, "moments"),
                                   auc::N_SUMS * exact::DIGITS, rows * exact::DIGITS,
                                   v, cece, cey, fourth, uppp};
        const int32_t* c = as<int32_t>(codes, "codes");
        for (int64_t i = 0; i < dims * n; ++i)
            if (c[i] < 0 || c[i] >= slices)
                throw std::out_of_range("accumulate_slices: a code out of the slices");
        // the metric's own table, sums and moments: all three or none
        std::optional<auc::WholeTargets> whole;
        if (whole_table || whole_sums || whole_moments) {
            if (!(whole_table && whole_sums && whole_moments) || dims < 1)
                throw std::invalid_argument(
                    "accumulate_slices: the whole's table, sums and moments, and a slice "
                    "column");
            if (whole_table->ndim() != 2 || whole_table->shape(0) != 2 ||
                whole_sums->ndim() != 2 || int64_t(whole_sums->shape(0)) != auc::N_SUMS ||
                int64_t(whole_sums->shape(1)) != exact::DIGITS || whole_moments->ndim() != 2 ||
                int64_t(whole_moments->shape(0)) != rows ||
                int64_t(whole_moments->shape(1)) != exact::DIGITS)
                throw std::invalid_argument(
                    "accumulate_slices: the whole's table (2, size), sums and moments as a "
                    "slice's");
            whole = auc::WholeTargets{
                as<double>(*whole_table, "whole_table"), int64_t(whole_table->shape(1)),
                auc::SliceTargets{as<double>(*whole_sums, "whole_sums"),
                                  as<double>(*whole_moments, "whole_moments"), 0, 0, v, cece,
                                  cey, fourth, uppp},
                0};
        }
        auc::WholeTargets* w = whole ? &*whole : nullptr;
        dispatch(tables, [&](auto* t) {
            dispatch(pred, [&](auto* p) {
                dispatch(label, [&](auto* y) {
                    Release r;
                    auc::accumulate_slices(t, size, slices, p, y, n, c, dims, to, w);
                }, Labels{});
            }, Floats{});
        }, Types<double, uint32_t>{});
    }, nb::arg("tables").noconvert(), nb::arg("pred").noconvert(),
       nb::arg("label").noconvert(), nb::arg("codes").noconvert(),
       nb::arg("sums").noconvert(), nb::arg("moments").noconvert(), nb::arg("v"),
       nb::arg("cece"), nb::arg("cey"), nb::arg("fourth"), nb::arg("uppp"),
       nb::arg("whole_table").noconvert() = nb::none(),
       nb::arg("whole_sums").noconvert() = nb::none(),
       nb::arg("whole_moments").noconvert() = nb::none());
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

    m.def("calibration_error", [](In bins, int64_t count) {
        const double* b = as<double>(bins, "bins");
        if (bins.ndim() != 2 || bins.shape(1) != 3 || count < 1)
            throw nb::value_error("mpieval._core: calibration_error takes bins of shape "
                                  "(n, 3) and a count of groups");
        const int64_t n = int64_t(bins.shape(0));
        Release r;
        return auc::calibration_error(b, n, count);
    }, nb::arg("bins").noconvert(), nb::arg("count"));
    m.def("calibration_spread", [](In filled, In negatives, In positives, int64_t size,
                                   int64_t points, int64_t count, double total, double v_all,
                                   double f1, double f0, Out group, Out gap_sum,
                                   Out stderrs) {
        const int64_t* f = as<int64_t>(filled, "filled");
        const double* neg = as<double>(negatives, "negatives");
        const double* pos = as<double>(positives, "positives");
        int64_t* g = as<int64_t>(group, "group");
        double* gaps = as<double>(gap_sum, "gap_sum");
        double* se = as<double>(stderrs, "stderrs");
        const int64_t n = length(filled);
        if (length(negatives) != n || length(positives) != n || length(group) != n ||
            points < 1 || count < 1 || length(gap_sum) < count || length(stderrs) < count)
            throw nb::value_error("mpieval._core: calibration_spread takes a weight and a group "
                                  "a filled bucket, and room for count groups");
        Release r;
        return auc::calibration_spread(f, neg, pos, n, size, points, count, total, v_all, f1,
                                       f0, g, gaps, se);
    }, nb::arg("filled").noconvert(), nb::arg("negatives").noconvert(),
       nb::arg("positives").noconvert(), nb::arg("size"), nb::arg("points"), nb::arg("count"),
       nb::arg("total"), nb::arg("v_all"), nb::arg("f1"), nb::arg("f0"),
       nb::arg("group").noconvert(), nb::arg("gap_sum").noconvert(),
       nb::arg("stderrs").noconvert());

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
}

}  // namespace mpieval::bindings
