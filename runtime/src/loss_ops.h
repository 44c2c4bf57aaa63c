//===- loss_ops.h - Per-element terms of the losses -----------*- C++ -*-===//
//
// Binary and unary variants of the kernel table (no entry points of their
// own) that runtime/src/api_loss.cpp composes smooth_l1_loss, kl_div and
// the binary cross-entropy losses from, with the backends' unary, binary,
// reduce and copy primitives. Included by scalar_ops.h inside namespace
// ampc (after reduction_ops.h, whose signOf it uses), so the CPU loops and
// the CUDA kernels share the formulas.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_LOSS_OPS_H
#define AMPC_RUNTIME_SRC_LOSS_OPS_H

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
      return dy * (p - y) / mFmax((1.0f - p) * p, static_cast<T>(1e-12));
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

#endif // AMPC_RUNTIME_SRC_LOSS_OPS_H
