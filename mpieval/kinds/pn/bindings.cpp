// The bindings of the pn kind's kernels (this folder's *.hpp): its submodule
// mpieval._core.pn, registered by the build (CMakeLists.txt finds this file by its name).
// The conventions are module.cpp's (mpieval/_core/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>

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
}

}  // namespace mpieval::bindings
