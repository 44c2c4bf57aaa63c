//===- compare_ops.h - Scalar code of the comparison kernels -----*- C++ -*-===//
//
// The elementwise comparisons (`equal` ... `greater_equal`) are binary rows
// of the kernel table whose result is 0 or 1, stored into a bool tensor.
// Operands of any dtype reach them as f32 (as every binary kernel reads), so
// integers beyond 2^24 in magnitude compare at f32 precision. NaN compares
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
    static AMPC_HD float fwd(float a, float b) { return (EXPR) ? 1.0f : 0.0f; }  \
    static AMPC_HD float bwd(int, float, float, float) { return 0.0f; }        \
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
