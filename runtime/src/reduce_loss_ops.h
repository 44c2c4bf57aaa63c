//===- reduce_loss_ops.h - Terms of the fp32-list reductions, losses -*- C++ -*-===//
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
AMPC_HD float signOf(float x) {
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}

/// logsumexp's shift: the maximum, or 0 where it is infinite (or NaN), as
/// PyTorch's logsumexp masks it. Not differentiated.
struct FiniteOrZeroFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return x - x == 0.0f ? x : 0.0f;
  }
  static AMPC_HD float bwd(float, float, const UnaryAttrs &) { return 0.0f; }
};

/// F.smooth_l1_loss's term of d = a - b with beta = v[0] (beta 0: |d|).
struct SmoothL1Fn {
  static AMPC_HD float fwd(float d, const UnaryAttrs &a) {
    float beta = a.v[0], m = fabsf(d);
    return m < beta ? 0.5f * d * d / beta : m - 0.5f * beta;
  }
  static AMPC_HD float bwd(float d, float dy, const UnaryAttrs &a) {
    float beta = a.v[0];
    return fabsf(d) < beta ? dy * d / beta : dy * signOf(d);
  }
};

/// A norm clamped below: max(sqrt(x), v[0]) (cosine_similarity's norms of
/// the summed squares). Not differentiated.
struct SqrtClampMinFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &a) {
    float n = sqrtf(x);
    return n < a.v[0] ? a.v[0] : n;
  }
  static AMPC_HD float bwd(float, float, const UnaryAttrs &) { return 0.0f; }
};

/// F.kl_div's term of the log-probability x and the target t:
/// xlogy(t, t) - t * x (xlogy(0, 0) = 0). Gradients as PyTorch's autograd:
/// x: -t dy; t: (log t + 1 - x) dy, NaN at t = 0 (xlogy's derivative).
struct KlDivFn {
  static AMPC_HD float fwd(float x, float t) {
    float xlogy = t == 0.0f ? 0.0f : t * logf(t);
    return xlogy - t * x;
  }
  static AMPC_HD float bwd(int which, float x, float t, float dy) {
    if (which == 0)
      return -t * dy;
    return t == 0.0f ? NAN : dy * (logf(t) + 1.0f - x);
  }
};

/// The same with a log-probability target: exp(t) * (t - x).
struct KlDivLogFn {
  static AMPC_HD float fwd(float x, float t) { return expf(t) * (t - x); }
  static AMPC_HD float bwd(int which, float x, float t, float dy) {
    if (which == 0)
      return -expf(t) * dy;
    return dy * expf(t) * (t - x + 1.0f);
  }
};

/// a / b, 0 where b is 0 (the norms' masked_fill_(norm == 0, 0)).
struct SafeDivFn {
  static AMPC_HD float fwd(float a, float b) {
    return b == 0.0f ? 0.0f : a / b;
  }
  static AMPC_HD float bwd(int, float, float, float) { return 0.0f; }
};

/// sgn(a) * b.
struct SignMulFn {
  static AMPC_HD float fwd(float a, float b) { return signOf(a) * b; }
  static AMPC_HD float bwd(int, float, float, float) { return 0.0f; }
};

/// The inf-norm's argmax mask: 1 where |a| equals the maximum b or a is NaN.
struct MaxAbsMaskFn {
  static AMPC_HD float fwd(float a, float b) {
    return (fabsf(a) == b || a != a) ? 1.0f : 0.0f;
  }
  static AMPC_HD float bwd(int, float, float, float) { return 0.0f; }
};

#endif // AMPC_RUNTIME_SRC_REDUCE_LOSS_OPS_H
