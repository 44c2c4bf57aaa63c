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
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return -x; }
  template <typename T> static AMPC_HD T bwd(T, T dy, const UnaryAttrs &) { return -dy; }
};

struct AbsFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mFabs(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  }
};

struct ExpFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mExp(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return dy * mExp(x);
  }
};

struct LogFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mLog(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return dy / x;
  }
};

struct SqrtFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mSqrt(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return dy * 0.5f / mSqrt(x);
  }
};

struct RsqrtFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) {
    return 1.0f / mSqrt(x);
  }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T r = 1.0f / mSqrt(x);
    return dy * -0.5f * r * r * r;
  }
};

struct Log1pFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mLog1p(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return dy / (1.0f + x);
  }
};

struct Expm1Fn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return mExpm1(x); }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    return dy * mExp(x);
  }
};

struct ReciprocalFn {
  template <typename T> static AMPC_HD T fwd(T x, const UnaryAttrs &) { return 1.0f / x; }
  template <typename T> static AMPC_HD T bwd(T x, T dy, const UnaryAttrs &) {
    T y = 1.0f / x;
    return -dy * y * y;
  }
};

#endif // AMPC_RUNTIME_SRC_UNARY_MATH_OPS_H
