//===- select_ops.h - Scalar terms of where and the BCE losses -----*- C++ -*-===//
//
// Binary variants of the kernel table (no entry points of their own):
// api_jobs.cpp composes `where` and the binary cross-entropy losses from
// them with the backends' binary, reduce and copy primitives, so both
// backends run the same formulas.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_JOBS_OPS_H
#define AMPC_RUNTIME_SRC_JOBS_OPS_H

#include "hd.h"
#include "typed_math.h"

#include <math.h>

namespace ampc {

// `where(c, a, b)` is WhereTrue(c, a) + WhereFalse(c, b): the unselected
// side contributes -0, the neutral element of IEEE addition (x + -0 == x for
// every x, -0, inf and NaN included), so the sum is exactly the selected
// value. The gradient (which == 1) routes dy the same way.
struct WhereTrueFn {
  template <typename T> static AMPC_HD T fwd(T c, T a) { return c != 0.0f ? a : -0.0f; }
  template <typename T> static AMPC_HD T bwd(int which, T c, T, T dy) {
    return which == 1 && c != 0.0f ? dy : 0.0f;
  }
};
struct WhereFalseFn {
  template <typename T> static AMPC_HD T fwd(T c, T b) { return c != 0.0f ? -0.0f : b; }
  template <typename T> static AMPC_HD T bwd(int which, T c, T, T dy) {
    return which == 1 && c == 0.0f ? dy : 0.0f;
  }
};

/// PyTorch's binary_cross_entropy per element: the logs are clamped at -100
/// so p of exactly 0 or 1 gives a finite loss. Gradients (dy already divided
/// by the element count): p as PyTorch's binary_cross_entropy_backward
/// (denominator clamped at 1e-12), the target as its target backward
/// (-logit(p)).
struct BceFn {
  template <typename T> static AMPC_HD T fwd(T p, T y) {
    T lp = mFmax(mLog(p), static_cast<T>(-100));
    T l1p = mFmax(mLog(1.0f - p), static_cast<T>(-100));
    return -(y * lp + (1.0f - y) * l1p);
  }
  template <typename T> static AMPC_HD T bwd(int which, T p, T y, T dy) {
    if (which == 0)
      return dy * (p - y) / mFmax((1.0f - p) * p, static_cast<T>(1e-12f));
    return dy * (mLog(1.0f - p) - mLog(p));
  }
};

/// PyTorch's binary_cross_entropy_with_logits per element, in its stable
/// form: (1 - y) x + m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0).
/// Gradients: x: dy (sigmoid(x) - y); the target: -x dy.
struct BceLogitsFn {
  template <typename T> static AMPC_HD T fwd(T x, T y) {
    T m = mFmax(-x, static_cast<T>(0));
    return (1.0f - y) * x + m + mLog(mExp(-m) + mExp(-x - m));
  }
  template <typename T> static AMPC_HD T bwd(int which, T x, T y, T dy) {
    if (which == 0)
      return dy * (1.0f / (1.0f + mExp(-x)) - y);
    return -x * dy;
  }
};

/// Whether argmax moves from the current best `best` to `v`: a strictly
/// greater value, or the first NaN (ties keep the first index).
template <typename T> AMPC_HD bool argmaxTakes(T v, T best) {
  return best == best && !(v <= best);
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_JOBS_OPS_H
