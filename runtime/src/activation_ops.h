//===- activation_ops.h - Formulas of the activation functions --*- C++ -*-===//
//
// Per-element code of relu, gelu (exact and tanh), silu, sigmoid, tanh,
// leaky_relu and softplus (unary rows of ampc/runtime_kernels.inc), and the
// terms of prelu (the AMPC_BINARY_VARIANT(Prelu) row) as PyTorch's
// _prelu_kernel and its backward compute them. Included by scalar_ops.h
// inside namespace ampc, so the CPU loops and the CUDA kernels share it.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_ACTIVATION_OPS_H
#define AMPC_RUNTIME_SRC_ACTIVATION_OPS_H

struct ReluFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return x > 0.0f ? x : (x != x ? x : 0.0f);
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return x > 0.0f ? dy : 0.0f;
  }
};

struct GeluFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return 0.5f * x * (1.0f + mErf(x * kSqrt1_2));
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T cdf = 0.5f * (1.0f + mErf(x * kSqrt1_2));
    T pdf = kInvSqrt2Pi * mExp(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};

struct GeluTanhFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return 0.5f * x *
           (1.0f + mTanh(kSqrt2OverPi * (x + kGeluCoef * x * x * x)));
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T inner = kSqrt2OverPi * (x + kGeluCoef * x * x * x);
    T t = mTanh(inner);
    T dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoef * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
  }
};

struct SiluFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return x * sigmoidF(x);
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T s = sigmoidF(x);
    return dy * s * (1.0f + x * (1.0f - s));
  }
};

struct SigmoidFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return sigmoidF(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T s = sigmoidF(x);
    return dy * s * (1.0f - s);
  }
};

struct TanhFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mTanh(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T t = mTanh(x);
    return dy * (1.0f - t * t);
  }
};

/// v[0]: negative_slope. As PyTorch: the gradient at 0 is the slope.
struct LeakyReluFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &a) {
    return x > 0.0f ? x : x * a.v[0];
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &a) {
    return x > 0.0f ? dy : dy * a.v[0];
  }
};

/// v[0]: beta, v[1]: threshold. As PyTorch: x itself (gradient dy) where
/// beta * x > threshold.
struct SoftplusFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &a) {
    T bx = x * a.v[0];
    return bx > a.v[1] ? x : mLog1p(mExp(bx)) / a.v[0];
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &a) {
    T bx = x * a.v[0];
    if (bx > a.v[1])
      return dy;
    T z = mExp(bx);
    return dy * z / (z + 1.0f);
  }
};

// prelu (a binary row): a is the input x, b the slope w (broadcast per
// channel).
struct PreluFn {
  template <typename T> static AMPC_HD T fwd(T x, T w) { return x > 0.0f ? x : w * x; }
  template <typename T> static AMPC_HD T bwd(int which, T x, T w, T dy) {
    if (which == 0)
      return x > 0.0f ? dy : w * dy;
    return x > 0.0f ? 0.0f : x * dy;
  }
};

#endif // AMPC_RUNTIME_SRC_ACTIVATION_OPS_H
