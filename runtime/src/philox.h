//===- philox.h - Philox4x32-10 counter-based generator ---------*- C++ -*-===//
//
// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11).
// Element i of an init call uses counter (i / 4, offset) and lane i % 4, so
// every backend and every work split yields the same stream.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_PHILOX_H
#define AMPC_RUNTIME_SRC_PHILOX_H

#include "hd.h"

#include <math.h>
#include <stdint.h>

namespace ampc {

struct Philox4 {
  uint32_t v[4];
};

AMPC_HD void mulhilo(uint32_t a, uint32_t b, uint32_t &hi, uint32_t &lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

/// Philox4x32 with 10 rounds.
AMPC_HD Philox4 philox4x32_10(uint64_t counterLo, uint64_t counterHi,
                              uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counterLo),
           c1 = static_cast<uint32_t>(counterLo >> 32),
           c2 = static_cast<uint32_t>(counterHi),
           c3 = static_cast<uint32_t>(counterHi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key),
           k1 = static_cast<uint32_t>(key >> 32);
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  Philox4 out = {{c0, c1, c2, c3}};
  return out;
}

/// Uniform in [0, 1) with 24 random bits (exact in f32).
AMPC_HD double uniformFromBits(uint32_t x) {
  return static_cast<double>(x >> 8) * (1.0 / 16777216.0);
}

/// Element i of a uniform(low, high) stream.
AMPC_HD double philoxUniform(uint64_t seed, uint64_t offset, int64_t i,
                             double low, double high) {
  Philox4 r = philox4x32_10(static_cast<uint64_t>(i) >> 2, offset, seed);
  return low + (high - low) * uniformFromBits(r.v[i & 3]);
}

/// Element i of a normal(mean, std) stream: Box-Muller in f64 on the lane
/// pairs (0, 1) and (2, 3) of one Philox block.
AMPC_HD double philoxNormal(uint64_t seed, uint64_t offset, int64_t i,
                            double mean, double std) {
  Philox4 r = philox4x32_10(static_cast<uint64_t>(i) >> 2, offset, seed);
  int lane = static_cast<int>(i & 3);
  int pair = lane & ~1;
  // u1 in (0, 1] so the log is finite; u2 in [0, 1).
  double u1 = (static_cast<double>(r.v[pair]) + 1.0) * (1.0 / 4294967296.0);
  double u2 = static_cast<double>(r.v[pair + 1]) * (1.0 / 4294967296.0);
  double radius = sqrt(-2.0 * log(u1));
  double angle = 6.283185307179586476925 * u2;
  double z = (lane & 1) ? radius * sin(angle) : radius * cos(angle);
  return mean + std * z;
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_PHILOX_H
