// What every binding file shares (module.cpp, the shared submodules; each kind's
// mpieval/kinds/<kind>/bindings.cpp, its submodule mpieval._core.<kind>): the array types,
// the dispatch on an array's dtype, and the making of a submodule.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

namespace mpieval::bindings {

namespace nb = nanobind;

// Inputs are read-only, outputs written in place; both C-contiguous numpy arrays (the
// Python wrappers make them so).
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

// The new submodule core.<name>; two of one name (a kind named as a shared submodule) would
// be one module, so the second is refused and the import fails.
inline nb::module_ submodule(nb::module_ core, const char* name) {
    if (nb::hasattr(core, name))
        throw nb::import_error(
            (std::string("mpieval._core: two submodules named ") + name).c_str());
    return core.def_submodule(name);
}

}  // namespace mpieval::bindings
