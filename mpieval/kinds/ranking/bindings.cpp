// The bindings of the ranking kind's kernels (kernels.hpp beside it): its submodule
// mpieval._core.ranking, registered by the build (CMakeLists.txt finds this file by its
// name). The conventions are module.cpp's (mpieval/_core/).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>

#include "bindings.hpp"
#include "kernels.hpp"

namespace mpieval::bindings {

void bind_ranking(nb::module_ m) {
    m.doc() = "The ranking kind's kernels: the A-B correlations of many blocks (kernels.hpp).";
    m.def("correlations", [](In a, In aa, In b, In bb, In dd, In units, Out out) {
        const int64_t n = length(a);
        for (const In* x : {&aa, &b, &bb, &dd, &units})
            if (length(*x) != n || x->ndim() != 1)
                throw nb::value_error("mpieval._core: correlations takes arrays of one length");
        if (length(out) != n || a.ndim() != 1)
            throw nb::value_error("mpieval._core: correlations' out holds one a value");
        const double *pa = as<double>(a, "a"), *paa = as<double>(aa, "aa"),
                     *pb = as<double>(b, "b"), *pbb = as<double>(bb, "bb"),
                     *pdd = as<double>(dd, "dd"), *pu = as<double>(units, "units");
        double* o = as<double>(out, "out");
        Release r;
        ranking::correlations(pa, paa, pb, pbb, pdd, pu, n, o);
    }, nb::arg("a").noconvert(), nb::arg("aa").noconvert(), nb::arg("b").noconvert(),
       nb::arg("bb").noconvert(), nb::arg("dd").noconvert(), nb::arg("units").noconvert(),
       nb::arg("out").noconvert());
}

}  // namespace mpieval::bindings
