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
    m.doc() = "The ranking kind's kernels: every group's values, and the A-B correlations of many blocks (kernels.hpp).";
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
    m.def("group_starts", [](In key, In block, Out starts) {
        const int64_t n = length(key);
        if (length(block) != n || length(starts) != n + 1)
            throw nb::value_error("mpieval._core: group_starts takes n keys and blocks, n + 1 starts");
        const uint64_t* k = as<uint64_t>(key, "key");
        const int64_t* b = as<int64_t>(block, "block");
        int64_t* s = as<int64_t>(starts, "starts");
        Release r;
        return ranking::group_starts(k, b, n, s);
    }, nb::arg("key").noconvert(), nb::arg("block").noconvert(), nb::arg("starts").noconvert());
    m.def("group_values", [](In starts, In pred, In gain, In label, In discount, In cutoffs,
                             Out ndcg, Out ndcg_at, Out recall_at, Out ap_at, Out relevant_rows,
                             Out first_group, Out first_at, Out first_rows, Out first_relevant) {
        const int64_t groups = length(starts) - 1, n = length(pred), cuts = length(cutoffs);
        const int64_t* s = as<int64_t>(starts, "starts");
        if (groups < 0 || length(gain) != n || length(label) != n ||
                (groups > 0 && (s[0] != 0 || s[groups] != n)))
            throw nb::value_error("mpieval._core: group_values takes the groups of n rows");
        for (int64_t g = 0; g < groups; ++g)
            if (s[g + 1] <= s[g] || s[g + 1] - s[g] > length(discount))
                throw nb::value_error("mpieval._core: group_values: a group's rows or discounts");
        for (const Out* x : {&ndcg, &relevant_rows, &first_at, &first_rows, &first_relevant,
                             &first_group})
            if (length(*x) != groups)
                throw nb::value_error("mpieval._core: group_values' outputs hold one a group");
        for (const Out* x : {&ndcg_at, &recall_at, &ap_at})
            if (int64_t(x->size()) != cuts * groups)
                throw nb::value_error("mpieval._core: group_values' outputs hold one a cutoff and group");
        const double *g = as<double>(gain, "gain"), *y = as<double>(label, "label"),
                     *d = as<double>(discount, "discount");
        const int64_t* k = as<int64_t>(cutoffs, "cutoffs");
        const ranking::GroupValues o{
            as<double>(ndcg, "ndcg"), as<double>(ndcg_at, "ndcg_at"),
            as<double>(recall_at, "recall_at"), as<double>(ap_at, "ap_at"),
            as<double>(relevant_rows, "relevant_rows"), as<int64_t>(first_group, "first_group"),
            as<int64_t>(first_at, "first_at"), as<int64_t>(first_rows, "first_rows"),
            as<double>(first_relevant, "first_relevant")};
        int64_t valid = 0;
        dispatch(pred, [&](auto* p) {
            Release r;
            valid = ranking::group_values(s, groups, p, g, y, d, k, cuts, n, o);
        }, Floats{});
        return valid;
    }, nb::arg("starts").noconvert(), nb::arg("pred").noconvert(), nb::arg("gain").noconvert(),
       nb::arg("label").noconvert(), nb::arg("discount").noconvert(),
       nb::arg("cutoffs").noconvert(), nb::arg("ndcg").noconvert(),
       nb::arg("ndcg_at").noconvert(), nb::arg("recall_at").noconvert(),
       nb::arg("ap_at").noconvert(), nb::arg("relevant_rows").noconvert(),
       nb::arg("first_group").noconvert(), nb::arg("first_at").noconvert(),
       nb::arg("first_rows").noconvert(), nb::arg("first_relevant").noconvert());
}

}  // namespace mpieval::bindings
