//===- select_ops.h - Scalar code of where and argmax ----------*- C++ -*-===//
//
// Binary variants of the kernel table (no entry points of their own):
// api_select.cpp composes `where` from them with the backends' binary
// primitive, so both backends run the same formulas; and argmax's rule for
// ties and NaN, shared by both backends' argmax loops.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_SELECT_OPS_H
#define AMPC_RUNTIME_SRC_SELECT_OPS_H

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

/// Whether argmax moves from the current best `best` to `v`: a strictly
/// greater value, or the first NaN (ties keep the first index).
template <typename T> AMPC_HD bool argmaxTakes(T v, T best) {
  return best == best && !(v <= best);
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_SELECT_OPS_H
