//===- compare_ops.h - Scalar code of the comparison kernels -----*- C++ -*-===//
//
// The elementwise comparisons (`equal` ... `greater_equal`) are binary rows
// of the kernel table whose result is 0 or 1, stored into a bool tensor.
// Operands compare at their promoted type: f32 for the 16-bit floats and
// f32, f64 when either is f64, and exactly as int64 for two integers. NaN compares
// unequal to everything, as in IEEE and PyTorch. They have no gradient (the
// bool result is not differentiable); bwd is never called by the compiler
// and returns 0.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COMPARE_OPS_H
#define AMPC_RUNTIME_SRC_COMPARE_OPS_H

#include "hd.h"

namespace ampc {

#define AMPC_DEFINE_COMPARE_FN(OP, EXPR)                                       \
  struct OP##Fn {                                                              \
    template <typename T> static AMPC_HD T fwd(T a, T b) {                     \
      return (EXPR) ? static_cast<T>(1) : static_cast<T>(0);                   \
    }                                                                          \
    template <typename T> static AMPC_HD T bwd(int, T, T, T) {                 \
      return static_cast<T>(0);                                                \
    }                                                                          \
  };
AMPC_DEFINE_COMPARE_FN(Equal, a == b)
AMPC_DEFINE_COMPARE_FN(NotEqual, a != b)
AMPC_DEFINE_COMPARE_FN(Less, a < b)
AMPC_DEFINE_COMPARE_FN(LessEqual, a <= b)
AMPC_DEFINE_COMPARE_FN(Greater, a > b)
AMPC_DEFINE_COMPARE_FN(GreaterEqual, a >= b)
#undef AMPC_DEFINE_COMPARE_FN

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_COMPARE_OPS_H
