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
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return x > 0.0f ? x : (x != x ? x : 0.0f);
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return x > 0.0f ? dy : 0.0f;
  }
};

struct GeluFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return 0.5f * x * (1.0f + erff(x * kSqrt1_2));
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float cdf = 0.5f * (1.0f + erff(x * kSqrt1_2));
    float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};

struct GeluTanhFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return 0.5f * x *
           (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCoef * x * x * x)));
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float inner = kSqrt2OverPi * (x + kGeluCoef * x * x * x);
    float t = tanhf(inner);
    float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoef * x * x);
    return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
  }
};

struct SiluFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return x * sigmoidF(x);
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float s = sigmoidF(x);
    return dy * s * (1.0f + x * (1.0f - s));
  }
};

struct SigmoidFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return sigmoidF(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float s = sigmoidF(x);
    return dy * s * (1.0f - s);
  }
};

struct TanhFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return tanhf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float t = tanhf(x);
    return dy * (1.0f - t * t);
  }
};

/// v[0]: negative_slope. As PyTorch: the gradient at 0 is the slope.
struct LeakyReluFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &a) {
    return x > 0.0f ? x : x * a.v[0];
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &a) {
    return x > 0.0f ? dy : dy * a.v[0];
  }
};

/// v[0]: beta, v[1]: threshold. As PyTorch: x itself (gradient dy) where
/// beta * x > threshold.
struct SoftplusFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &a) {
    float bx = x * a.v[0];
    return bx > a.v[1] ? x : log1pf(expf(bx)) / a.v[0];
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &a) {
    float bx = x * a.v[0];
    if (bx > a.v[1])
      return dy;
    float z = expf(bx);
    return dy * z / (z + 1.0f);
  }
};

// prelu (a binary row): a is the input x, b the slope w (broadcast per
// channel).
struct PreluFn {
  static AMPC_HD float fwd(float x, float w) { return x > 0.0f ? x : w * x; }
  static AMPC_HD float bwd(int which, float x, float w, float dy) {
    if (which == 0)
      return x > 0.0f ? dy : w * dy;
    return x > 0.0f ? 0.0f : x * dy;
  }
};

#endif // AMPC_RUNTIME_SRC_ACTIVATION_OPS_H
