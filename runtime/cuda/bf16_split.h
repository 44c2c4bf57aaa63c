//===- bf16_split.h - Exact splits of f16 / f32 values into bf16 parts -*- C++ -*-===//
//
// A mixed-dtype GEMM (one f16/bf16 operand, the other f32, or f16 with
// bf16) runs on bf16 tensor cores as a few bf16 GEMMs over parts of each
// operand: v = p0 + p1 + p2 where p0 is v's top 16 bits (sign, exponent and
// 7 mantissa bits: truncation, so no overflow to inf), p1 the top 16 bits
// of v - p0, p2 what remains. Each difference is exact in f32, so the parts
// are exact: 1 part for bf16, 2 for f16 (11 significant bits), 3 for f32
// (24), for every finite v with |v| >= 2^-102 (below that the last part can
// lose bits to bf16 subnormals). inf goes whole into p0, NaN as a quiet NaN.
//
// Shared by the CUDA kernel and the CPU test that checks the exactness.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_BF16_SPLIT_H
#define AMPC_RUNTIME_CUDA_BF16_SPLIT_H

#include "../src/half.h"

namespace ampc {

/// The bf16 parts an operand of dtype dt needs (1, 2 or 3).
AMPC_HD int bf16Parts(ampc_dtype dt) {
  return dt == AMPC_BF16 ? 1 : dt == AMPC_F16 ? 2 : 3;
}

/// Splits v into `n` bf16 parts (bit patterns) whose f32 sum is v.
AMPC_HD void bf16Split(float v, int n, uint16_t *parts) {
  uint32_t x = floatBits(v);
  bool special = (x & 0x7f800000u) == 0x7f800000u;
  float rest = v;
  for (int k = 0; k < n; ++k) {
    uint16_t p = special && k > 0
                     ? 0
                     : static_cast<uint16_t>(floatBits(rest) >> 16);
    // A NaN whose payload is all in the low bits must not become inf.
    if (k == 0 && special && (x & 0x007fffffu))
      p |= 0x40u;
    parts[k] = p;
    if (!special)
      rest = rest - bf16ToF32(p); // exact: p is rest's leading bits
  }
}

} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_BF16_SPLIT_H
