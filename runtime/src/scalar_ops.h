//===- scalar_ops.h - Per-element formulas shared by the backends -*- C++
//-*-===//
//
// Every elementwise formula (forward, backward, optimizer and loss-scale
// updates) is defined once here and used by the CPU loops and the CUDA
// kernels, so the backends differ only in libm ulps and summation order.
// Optimizer updates are written as separate f32 operations in PyTorch's order;
// both backends are built without floating-point contraction.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_SCALAR_OPS_H
#define AMPC_RUNTIME_SRC_SCALAR_OPS_H

#include "ampc/runtime.h"
#include "hd.h"
#include "typed_math.h"
#include "compare_ops.h"
#include "select_ops.h"

#include <math.h>
#include <stdint.h>

namespace ampc {

/// The float attributes of a unary kernel, in the order of its row in
/// ampc/runtime_kernels.inc (unused entries are 0).
struct UnaryAttrs {
  float v[AMPC_MAX_KERNEL_ATTRS];
};

/// One enumerator per unary row (kernels and variants) of the table.
enum class UnaryOp {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS) OP,
#define AMPC_UNARY_VARIANT(OP) OP,
#include "ampc/runtime_kernels.inc"
};

/// One enumerator per binary row of the table.
enum class BinaryOp {
#define AMPC_BINARY_KERNEL(NAME, OP) OP,
#define AMPC_BINARY_VARIANT(OP) OP,
#include "ampc/runtime_kernels.inc"
};

/// One enumerator per reduction row of the table.
enum class ReduceOp {
#define AMPC_REDUCTION_KERNEL(NAME, OP) OP,
#include "ampc/runtime_kernels.inc"
};

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCoef = 0.044715f;

template <typename T> AMPC_HD T sigmoidF(T x) { return 1.0f / (1.0f + mExp(-x)); }

// The scalar code of each unary row OP of the table: struct OP##Fn with
//   static float fwd(float x, const UnaryAttrs &a);          // f(x)
//   static float bwd(float x, float dy, const UnaryAttrs &a); // dy * f'(x)
// where a.v[i] is the row's i-th attribute. Both backends reach it only
// through unaryForward / unaryBackward below, so a row without its struct
// is a compile error.

// The unary math functions (neg, abs, exp, log, sqrt, rsqrt, log1p, expm1,
// reciprocal) and the activations (relu, gelu, silu, sigmoid, tanh,
// leaky_relu, softplus; prelu's binary terms), each family in its own file.
#include "unary_math_ops.h"
#include "activation_ops.h"

// The scalar code of each binary row OP: struct OP##Fn with
//   static float fwd(float a, float b);
//   static float bwd(int which, float a, float b, float dy); // which: 0 a, 1 b

// The terms of the composed reductions and losses of PyTorch's fp32
// autocast list (logsumexp, norm, cosine_similarity; smooth_l1, kl_div and
// the binary cross-entropies).
#include "reduction_ops.h"
#include "loss_ops.h"

struct AddFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return a + b; }
  template <typename T> static AMPC_HD T bwd(int, T, T, T dy) { return dy; }
};

struct SubFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return a - b; }
  template <typename T> static AMPC_HD T bwd(int which, T, T, T dy) {
    return which == 0 ? dy : -dy;
  }
};

struct MulFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return a * b; }
  template <typename T> static AMPC_HD T bwd(int which, T a, T b, T dy) {
    return which == 0 ? dy * b : dy * a;
  }
};

struct DivFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return a / b; }
  template <typename T> static AMPC_HD T bwd(int which, T a, T b, T dy) {
    return which == 0 ? dy / b : -dy * a / (b * b);
  }
};

/// maximum/minimum's gradient: all of dy to the winner, half each on ties.
template <typename T>
AMPC_HD T extremumBackward(bool isMax, int which, T a, T b,
                               T dy) {
  T mine = which == 0 ? a : b, other = which == 0 ? b : a;
  if (mine == other)
    return dy * 0.5f;
  bool wins = isMax ? mine > other : mine < other;
  return wins ? dy : 0.0f;
}

struct MaximumFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) {
    return (a != a || b != b) ? a + b : (a > b ? a : b);
  }
  template <typename T> static AMPC_HD T bwd(int which, T a, T b, T dy) {
    return extremumBackward(true, which, a, b, dy);
  }
};

struct MinimumFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) {
    return (a != a || b != b) ? a + b : (a < b ? a : b);
  }
  template <typename T> static AMPC_HD T bwd(int which, T a, T b, T dy) {
    return extremumBackward(false, which, a, b, dy);
  }
};

struct PowFn {
  template <typename T> static AMPC_HD T fwd(T a, T b) { return mPow(a, b); }
  template <typename T> static AMPC_HD T bwd(int which, T a, T b, T dy) {
    if (which == 0)
      return b == 0.0f ? 0.0f : dy * b * mPow(a, b - 1.0f);
    return (a == 0.0f && b >= 0.0f) ? 0.0f : dy * mPow(a, b) * mLog(a);
  }
};

/// Whether a binary row is a comparison (a bool result, operands of any
/// dtype): the rows from `equal` on (runtime_kernels.inc keeps them last,
/// after the variants).
AMPC_HD constexpr bool isComparison(BinaryOp op) {
  return static_cast<int>(op) >= static_cast<int>(BinaryOp::Equal);
}

// Dispatch by op, generated from the table (used by the CUDA kernels and the
// GEMM epilogues; the CPU loops instantiate the structs directly).

template <typename T>
AMPC_HD T unaryForward(UnaryOp op, T x, const UnaryAttrs &a) {
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    return OP##Fn::fwd(x, a);
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    return OP##Fn::fwd(x, a);
#include "ampc/runtime_kernels.inc"
  }
  return 0.0f;
}

/// dy * f'(x).
template <typename T>
AMPC_HD T unaryBackward(UnaryOp op, T x, T dy, const UnaryAttrs &a) {
  switch (op) {
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  case UnaryOp::OP:                                                            \
    return OP##Fn::bwd(x, dy, a);
#define AMPC_UNARY_VARIANT(OP)                                                 \
  case UnaryOp::OP:                                                            \
    return OP##Fn::bwd(x, dy, a);
#include "ampc/runtime_kernels.inc"
  }
  return 0.0f;
}

/// A unary op without attributes (the GEMM epilogues).
template <typename T> AMPC_HD T unaryForward(UnaryOp op, T x) {
  return unaryForward(op, x, UnaryAttrs{});
}

template <typename T> AMPC_HD T binaryForward(BinaryOp op, T a, T b) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    return OP##Fn::fwd(a, b);
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    return OP##Fn::fwd(a, b);
#include "ampc/runtime_kernels.inc"
  }
  return 0.0f;
}

/// The gradient reaching operand `which` (0: a, 1: b) from dy.
template <typename T>
AMPC_HD T binaryBackward(BinaryOp op, int which, T a, T b, T dy) {
  switch (op) {
#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  case BinaryOp::OP:                                                           \
    return OP##Fn::bwd(which, a, b, dy);
#define AMPC_BINARY_VARIANT(OP)                                                \
  case BinaryOp::OP:                                                           \
    return OP##Fn::bwd(which, a, b, dy);
#include "ampc/runtime_kernels.inc"
  }
  return 0.0f;
}

AMPC_HD bool isFinite(float v) { return v - v == 0.0f; }

/// The loss-scale update of spec/amp.md on one set of state values.
AMPC_HD void updateScaleState(float &scale, int32_t &growthTracker,
                              int32_t &hysteresisLeft, bool foundInf,
                              float growthFactor, float backoffFactor,
                              int32_t growthInterval, int32_t hysteresis,
                              float minScale, float maxScale) {
  if (foundInf) {
    growthTracker = 0;
    hysteresisLeft -= 1;
    if (hysteresisLeft <= 0) {
      float s = scale * backoffFactor;
      scale = s < minScale ? minScale : s;
    }
    return;
  }
  int32_t successful = growthTracker + 1;
  if (successful == growthInterval) {
    float s = scale * growthFactor;
    if (isFinite(s) && s <= maxScale)
      scale = s;
    growthTracker = 0;
    hysteresisLeft = hysteresis;
  } else {
    growthTracker = successful;
  }
}

/// Scalars of one SGD step, cast to f32 as PyTorch casts Python floats.
struct SgdScalars {
  float lr, momentum, weightDecay;
  bool nesterov, hasMomentum, hasWeightDecay;
  /// A device f32 scalar lr is multiplied by (a schedule's factor), or null.
  const float *lrScale = nullptr;
  /// The hyperparameters as given, for f64 params (torch.optim uses the
  /// Python floats themselves on f64 tensors).
  double lr64 = 0.0, momentum64 = 0.0, weightDecay64 = 0.0;
};

/// torch.optim.SGD (_single_tensor_sgd, dampening 0, zero-initialised
/// buffer, which equals the first-step clone) on one element.
AMPC_HD void sgdElement(float &param, float grad, float *buf,
                        const SgdScalars &s) {
  float d = grad;
  if (s.hasWeightDecay)
    d = d + s.weightDecay * param;
  if (s.hasMomentum) {
    float m = *buf * s.momentum + d;
    *buf = m;
    d = s.nesterov ? d + s.momentum * m : m;
  }
  param = param + -s.lr * d;
}

/// Scalars of one AdamW step, derived on the device from the step count in
/// f64 as Python does, then cast to f32.
struct AdamwScalars {
  float decay;         // 1 - lr * weight_decay
  float oneMinusBeta1; // lerp weight
  float beta2, oneMinusBeta2;
  float negStepSize; // -lr / (1 - beta1^t)
  float bc2Sqrt;     // sqrt(1 - beta2^t)
  float eps;
};

AMPC_HD AdamwScalars adamwScalars(double lr, double beta1, double beta2,
                                  double eps, double weightDecay,
                                  int32_t step) {
  AdamwScalars s;
  s.decay = static_cast<float>(1.0 - lr * weightDecay);
  s.oneMinusBeta1 = static_cast<float>(1.0 - beta1);
  s.beta2 = static_cast<float>(beta2);
  s.oneMinusBeta2 = static_cast<float>(1.0 - beta2);
  double bc1 = 1.0 - pow(beta1, static_cast<double>(step));
  double bc2 = 1.0 - pow(beta2, static_cast<double>(step));
  s.negStepSize = static_cast<float>(-(lr / bc1));
  s.bc2Sqrt = static_cast<float>(sqrt(bc2));
  s.eps = static_cast<float>(eps);
  return s;
}

/// torch.optim.AdamW (_single_tensor_adamw, amsgrad off) on one element:
/// param *= 1 - lr*wd; m.lerp_(g, 1-beta1); v = v*beta2 + (1-beta2)*g*g;
/// param += -step_size * (m / (sqrt(v) / bc2_sqrt + eps)).
AMPC_HD void adamwElement(float &param, float grad, float &m, float &v,
                          const AdamwScalars &s) {
  param = param * s.decay;
  float w = s.oneMinusBeta1;
  m = fabsf(w) < 0.5f ? m + w * (grad - m) : grad - (grad - m) * (1.0f - w);
  v = v * s.beta2 + s.oneMinusBeta2 * grad * grad;
  float denom = sqrtf(v) / s.bc2Sqrt + s.eps;
  param = param + s.negStepSize * (m / denom);
}

/// clip_grad_norm_'s coefficient: min(1, max_norm / (total + 1e-6)).
AMPC_HD float clipCoefficient(float totalNorm, float maxNorm) {
  float coef = maxNorm / (totalNorm + 1e-6f);
  return coef < 1.0f ? coef : 1.0f;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_SCALAR_OPS_H
