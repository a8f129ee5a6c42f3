// A row's logloss, shared by the kinds that report it (auc, wuauc): the pred clipped to
// [PRED_CLIP, 1 - PRED_CLIP] with Python's min and max, then the C library's log.
#pragma once

#include <cmath>
#include <cstdint>

namespace mpieval {

constexpr double PRED_CLIP = 1e-15;

// Python's min and max of two floats: the first unless the second is strictly beyond it.
inline double py_max(double a, double b) { return b > a ? b : a; }
inline double py_min(double a, double b) { return b < a ? b : a; }

inline double clip(double p) { return py_min(py_max(p, PRED_CLIP), 1.0 - PRED_CLIP); }

// A row's logloss for a 0/1 label.
inline double binary_logloss(double p, int64_t y) {
    const double q = clip(p);
    return -std::log(y == 1 ? q : 1.0 - q);
}

}  // namespace mpieval
