//===- dropout_ops.h - The dropout mask, per element ----------*- C++ -*-===//
//
// The scalar code of ampc_dropout_fwd and ampc_dropout_ranked_fwd, shared
// by the CPU loops and the CUDA kernels (compiled by both, see hd.h). The
// mask is a pure function of (seed, key, step, element index), the index
// mapped by DropoutShard under data-parallel ranks: the same bits on every
// backend.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_DROPOUT_OPS_H
#define AMPC_RUNTIME_SRC_DROPOUT_OPS_H

#include "hd.h"
#include "philox.h"

#include <stdint.h>

namespace ampc {

/// The high counter word of dropout op `key` at step `step`: the top bit
/// keeps dropout streams apart from the initialisers' (whose high word is
/// the argument index).
AMPC_HD uint64_t dropoutStream(uint64_t key, uint32_t step) {
  return (uint64_t(1) << 63) | (key << 32) | step;
}

/// The four draws elements 4 * (i / 4) to 4 * (i / 4) + 3 take their
/// factors from.
AMPC_HD Philox4 dropoutDraws(uint64_t seed, uint64_t stream, int64_t i) {
  return philox4x32_10(static_cast<uint64_t>(i) >> 2, stream, seed);
}

/// Element i's factor from its four draws r: 0 (dropped) or scale.
AMPC_HD float dropoutFactorOf(const Philox4 &r, int64_t i, float p,
                              float scale) {
  double u = uniformFromBits(r.v[i & 3]);
  return u >= static_cast<double>(p) ? scale : 0.0f;
}

/// The factor element i is multiplied by: 0 (dropped) or 1 / (1 - p).
AMPC_HD float dropoutFactor(uint64_t seed, uint64_t stream, int64_t i,
                            float p, float scale) {
  return dropoutFactorOf(dropoutDraws(seed, stream, i), i, p, scale);
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_DROPOUT_OPS_H
