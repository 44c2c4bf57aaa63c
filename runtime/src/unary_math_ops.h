//===- unary_math_ops.h - Formulas of the unary math functions --*- C++ -*-===//
//
// Per-element code of neg, abs, exp, log, sqrt, rsqrt, log1p, expm1 and
// reciprocal (their AMPC_UNARY_KERNEL rows of ampc/runtime_kernels.inc).
// Included by scalar_ops.h inside namespace ampc, so the CPU loops and the
// CUDA kernels share it like every other formula.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_UNARY_MATH_OPS_H
#define AMPC_RUNTIME_SRC_UNARY_MATH_OPS_H

struct NegFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return -x; }
  static AMPC_HD float bwd(float, float dy, const UnaryAttrs &) { return -dy; }
};

struct AbsFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return fabsf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  }
};

struct ExpFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return expf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return dy * expf(x);
  }
};

struct LogFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return logf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return dy / x;
  }
};

struct SqrtFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return sqrtf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return dy * 0.5f / sqrtf(x);
  }
};

struct RsqrtFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) {
    return 1.0f / sqrtf(x);
  }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float r = 1.0f / sqrtf(x);
    return dy * -0.5f * r * r * r;
  }
};

struct Log1pFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return log1pf(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return dy / (1.0f + x);
  }
};

struct Expm1Fn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return expm1f(x); }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    return dy * expf(x);
  }
};

struct ReciprocalFn {
  static AMPC_HD float fwd(float x, const UnaryAttrs &) { return 1.0f / x; }
  static AMPC_HD float bwd(float x, float dy, const UnaryAttrs &) {
    float y = 1.0f / x;
    return -dy * y * y;
  }
};

#endif // AMPC_RUNTIME_SRC_UNARY_MATH_OPS_H
