//===- scalar_ops_seed2.h - prelu's per-element code -------------*- C++ -*-===//
//
// The per-element terms of prelu (the AMPC_BINARY_VARIANT(Prelu) row of
// ampc/runtime_kernels.inc), as PyTorch's _prelu_kernel and its backward
// compute them. Included by scalar_ops.h inside namespace ampc, so the CPU
// loops and the CUDA kernels share it.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_SCALAR_OPS_SEED2_H
#define AMPC_RUNTIME_SRC_SCALAR_OPS_SEED2_H

// a is the input x, b the slope w (broadcast per channel).
struct PreluFn {
  static AMPC_HD float fwd(float x, float w) { return x > 0.0f ? x : w * x; }
  static AMPC_HD float bwd(int which, float x, float w, float dy) {
    if (which == 0)
      return x > 0.0f ? dy : w * dy;
    return x > 0.0f ? 0.0f : x * dy;
  }
};

#endif // AMPC_RUNTIME_SRC_SCALAR_OPS_SEED2_H
