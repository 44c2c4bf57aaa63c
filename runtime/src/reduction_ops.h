//===- reduction_ops.h - Terms of the composed reductions ------*- C++ -*-===//
//
// Unary and binary variants of the kernel table (no entry points of their
// own) that runtime/src/api_reduction.cpp composes logsumexp, norm and
// cosine_similarity from (the losses' terms: loss_ops.h). Included by
// scalar_ops.h inside namespace ampc, so the CPU loops and the CUDA kernels
// share the formulas.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_REDUCTION_OPS_H
#define AMPC_RUNTIME_SRC_REDUCTION_OPS_H

/// sgn(x): -1, 0 or 1 (0 for NaN).
template <typename T> AMPC_HD T signOf(T x) {
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}

/// logsumexp's shift: the maximum, or 0 where it is infinite (or NaN), as
/// PyTorch's logsumexp masks it. Not differentiated.
struct FiniteOrZeroFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return x - x == 0.0f ? x : 0.0f;
  }
  template <typename T> static AMPC_HD T bwd(T, T, const UnaryAttrs &) { return 0.0f; }
};

/// A norm clamped below: max(sqrt(x), v[0]) (cosine_similarity's norms of
/// the summed squares). Not differentiated.
struct SqrtClampMinFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &a) {
    T n = mSqrt(x);
    return n < a.v[0] ? a.v[0] : n;
  }
  template <typename T> static AMPC_HD T bwd(T, T, const UnaryAttrs &) { return 0.0f; }
};

/// a / b, 0 where b is 0 (the norms' masked_fill_(norm == 0, 0)).
struct SafeDivFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) {
    return b == 0.0f ? 0.0f : a / b;
  }
  template <typename T> static AMPC_HD T bwd(int, T, T, T) { return 0.0f; }
};

/// sgn(a) * b.
struct SignMulFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return signOf(a) * b; }
  template <typename T> static AMPC_HD T bwd(int, T, T, T) { return 0.0f; }
};

/// The inf-norm's argmax mask: 1 where |a| equals the maximum b or a is NaN.
struct MaxAbsMaskFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) {
    return (mFabs(a) == b || a != a) ? 1.0f : 0.0f;
  }
  template <typename T> static AMPC_HD T bwd(int, T, T, T) { return 0.0f; }
};

#endif // AMPC_RUNTIME_SRC_REDUCTION_OPS_H
