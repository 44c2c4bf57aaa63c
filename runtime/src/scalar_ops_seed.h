//===- scalar_ops_seed.h - Formulas of the autocast-list ops -----*- C++ -*-===//
//
// Per-element code of the unary ops added from PyTorch's autocast lists
// (log1p, expm1, reciprocal): the rows of "Ops of PyTorch's autocast lists"
// in ampc/runtime_kernels.inc. Included by scalar_ops.h inside namespace
// ampc, so the CPU loops and the CUDA kernels share it like every other
// formula.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_SCALAR_OPS_SEED_H
#define AMPC_RUNTIME_SRC_SCALAR_OPS_SEED_H

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

#endif // AMPC_RUNTIME_SRC_SCALAR_OPS_SEED_H
