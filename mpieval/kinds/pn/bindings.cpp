// The bindings of the pn kind's kernels (this folder's *.hpp): its submodule
// mpieval._core.pn, registered by the build (CMakeLists.txt finds this file by its name).
// The conventions are module.cpp's (mpieval/_core/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cstdint>
#include <optional>
#include <stdexcept>

#include "bindings.hpp"
#include "kernels.hpp"

namespace mpieval::bindings {

void bind_pn(nb::module_ m) {
    m.doc() = "The pn kind's kernels: each user's positive, negative and tied pairs (kernels.hpp).";
    m.def("pair_counts_per_user", [](In starts, In pred, In label, Out positive, Out negative,
                                     Out tie, int64_t long_user) {
        const int64_t* s = as<int64_t>(starts, "starts");
        const double* p = as<double>(pred, "pred");
        const double* y = as<double>(label, "label");
        int64_t* pos = as<int64_t>(positive, "positive");
        int64_t* neg = as<int64_t>(negative, "negative");
        int64_t* t = as<int64_t>(tie, "tie");
        const int64_t users = length(starts) - 1;
        Release r;
        pn::pair_counts_per_user(s, users, p, y, pos, neg, t, long_user);
    }, nb::arg("starts").noconvert(), nb::arg("pred").noconvert(), nb::arg("label").noconvert(),
       nb::arg("positive").noconvert(), nb::arg("negative").noconvert(),
       nb::arg("tie").noconvert(), nb::arg("long_user"));
    m.def("grouped", [](Out keys, In order, In pred, In label, std::optional<In> checks,
                        Out out_label, Out starts) {
        const int64_t n = length(keys);
        if (length(order) != n || length(pred) != n || length(label) != n ||
            (checks && length(*checks) != n) || length(out_label) != n ||
            length(starts) != n + 1)
            throw nb::value_error("mpieval._core.pn: grouped takes keys, order, pred, label "
                                  "(and checks) of one length, out_label of it, starts of one "
                                  "more");
        uint64_t* k = as<uint64_t>(keys, "keys");
        const uint32_t* o = as<uint32_t>(order, "order");
        const uint32_t* c = checks ? as<uint32_t>(*checks, "checks") : nullptr;
        double* oy = as<double>(out_label, "out_label");
        int64_t* s = as<int64_t>(starts, "starts");
        bool collision = false;
        int64_t users = 0;
        dispatch(pred, [&](auto* p) {
            dispatch(label, [&](auto* y) {
                Release r;
                for (int64_t i = 0; i < n; ++i)
                    if (o[i] >= uint64_t(n))
                        throw std::out_of_range("mpieval._core.pn: grouped: a row number "
                                                "past the rows");
                users = pn::grouped(k, o, n, p, y, c, oy, s, &collision);
            }, Floats{});
        }, Floats{});
        return nb::make_tuple(users, collision);
    }, nb::arg("keys").noconvert(), nb::arg("order").noconvert(), nb::arg("pred").noconvert(),
       nb::arg("label").noconvert(), nb::arg("checks").noconvert().none(),
       nb::arg("out_label").noconvert(), nb::arg("starts").noconvert());
}

}  // namespace mpieval::bindings
