//===- reduction_ops.h - Terms of the fp32-list reductions, losses -*- C++ -*-===//
//
// Unary and binary variants of the kernel table (no entry points of their
// own) that runtime/src/api_reduce_loss.cpp composes logsumexp, norm,
// cosine_similarity and the smooth L1 and KL-divergence losses from. Included
// by scalar_ops.h inside namespace ampc, so the CPU loops and the CUDA
// kernels share the formulas.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_REDUCE_LOSS_OPS_H
#define AMPC_RUNTIME_SRC_REDUCE_LOSS_OPS_H

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

/// F.smooth_l1_loss's term of d = a - b with beta = v[0] (beta 0: |d|).
struct SmoothL1Fn {
  template <typename T> static AMPC_HD T fwd(T d, const UnaryAttrs &a) {
    T beta = a.v[0], m = mFabs(d);
    return m < beta ? 0.5f * d * d / beta : m - 0.5f * beta;
  }
  template <typename T> static AMPC_HD T bwd(T d, T dy, const UnaryAttrs &a) {
    T beta = a.v[0];
    return mFabs(d) < beta ? dy * d / beta : dy * signOf(d);
  }
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

/// F.kl_div's term of the log-probability x and the target t:
/// xlogy(t, t) - t * x (xlogy(0, 0) = 0). Gradients as PyTorch's autograd:
/// x: -t dy; t: (log t + 1 - x) dy, NaN at t = 0 (xlogy's derivative).
struct KlDivFn {
  template <typename T> static AMPC_HD T fwd(T x, T t) {
    T xlogy = t == 0.0f ? 0.0f : t * mLog(t);
    return xlogy - t * x;
  }
  template <typename T> static AMPC_HD T bwd(int which, T x, T t, T dy) {
    if (which == 0)
      return -t * dy;
    return t == 0.0f ? NAN : dy * (mLog(t) + 1.0f - x);
  }
};

/// The same with a log-probability target: exp(t) * (t - x).
struct KlDivLogFn {
  template <typename T> static AMPC_HD T fwd(T x, T t) { return mExp(t) * (t - x); }
  template <typename T> static AMPC_HD T bwd(int which, T x, T t, T dy) {
    if (which == 0)
      return -mExp(t) * dy;
    return dy * mExp(t) * (t - x + 1.0f);
  }
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

#endif // AMPC_RUNTIME_SRC_REDUCE_LOSS_OPS_H
