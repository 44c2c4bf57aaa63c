//===- low_update.h - Writing optimizer results into 16-bit state -*- C++ -*-===//
//
// How an optimizer's f32 result reaches a tensor stored in f16 or bf16
// (docs/optimizer.md "Updates of 16-bit params"): round to nearest even,
// stochastic rounding with random bits from Philox4x32-10, or a Kahan
// compensation buffer. Shared by the CPU and CUDA backends, so both write
// the same bits.
//
// The random word of element i of tensor `param` (the param's index in the
// step's update, param_base added), for stream s (0: the param, 1: the
// momentum buffer or exp_avg, 2: exp_avg_sq) at update `counter` (the
// optimizer's update count after this update: AdamW's step, SGD's
// `sgd.counter`) is lane i % 4 of
//   philox4x32_10(counter = (i / 4, 2^62 + s * 2^60 + param * 2^32 +
//                            counter), key = seed).
// Bit 63 clear keeps these streams apart from dropout's (bit 63 set).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_LOW_UPDATE_H
#define AMPC_RUNTIME_SRC_LOW_UPDATE_H

#include "half.h"
#include "hd.h"
#include "philox.h"

#include <stdint.h>

namespace ampc {

/// The modes of ampc_low_update.
enum : int32_t { kLowNearest = 0, kLowStochastic = 1, kLowKahan = 2 };

/// Streams of one update's random words.
enum : int32_t { kLowStreamParam = 0, kLowStreamState1 = 1, kLowStreamState2 = 2 };

/// The Philox counter's high word of one (stream, param, update).
AMPC_HD uint64_t lowUpdateCounterHi(int32_t stream, int64_t param,
                                    uint32_t counter) {
  return (uint64_t(1) << 62) | (static_cast<uint64_t>(stream & 3) << 60) |
         ((static_cast<uint64_t>(param) & 0x0fffffffull) << 32) | counter;
}

/// The random word of element i (lane i % 4 of its block).
AMPC_HD uint32_t lowUpdateWord(uint64_t seed, uint64_t counterHi, int64_t i) {
  Philox4 r = philox4x32_10(static_cast<uint64_t>(i) >> 2, counterHi, seed);
  return r.v[i & 3];
}

/// The words of elements [first, first + n) into out: one Philox block per
/// four elements.
AMPC_HD void lowUpdateWords(uint64_t seed, uint64_t counterHi, int64_t first,
                            int64_t n, uint32_t *out) {
  int64_t i = first, end = first + n;
  while (i < end) {
    Philox4 r = philox4x32_10(static_cast<uint64_t>(i) >> 2, counterHi, seed);
    for (int lane = static_cast<int>(i & 3); lane < 4 && i < end; ++lane, ++i)
      out[i - first] = r.v[lane];
  }
}

/// f32 -> bfloat16, stochastically: away from zero (in magnitude) when the
/// low 16 bits of r are below the 16 bits the conversion discards, else
/// toward zero; so P(away) = discarded / 65536 exactly and E = v. NaN and
/// inf are converted as by round to nearest (inf has nothing to discard).
AMPC_HD uint16_t f32ToBf16Stochastic(float f, uint32_t r) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) >= 0x7f800000u)
    return f32ToBf16(f);
  uint32_t low = x & 0xffffu;
  uint32_t t = x >> 16;
  if ((r & 0xffffu) < low)
    t += 1; // one ulp away from zero; the largest finite goes to inf
  return static_cast<uint16_t>(t);
}

/// f32 -> binary16, stochastically: with k the bits the conversion
/// discards (13 for normal results, 14 to 24 and more for subnormal ones)
/// and d their value, away from zero when r (32 bits) scaled to k bits is
/// below d: P(away) = d / 2^k exactly for k <= 32 (every |v| >= 2^-33).
/// Values past the largest finite f16 (65504) by a whole ulp or more, NaN
/// and inf go as round to nearest does.
AMPC_HD uint16_t f16StochasticFromBits(uint32_t x, uint32_t r) {
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x47800000u) // >= 65536, inf, NaN
    return f32ToF16(bitsFloat(x));
  uint32_t q, rem, shift;
  if (abs >= 0x38800000u) { // normal result (>= 2^-14)
    uint32_t h = abs - 0x38000000u;
    q = h >> 13;
    rem = h & 0x1fffu;
    shift = 13;
  } else {
    uint32_t e = abs >> 23;
    uint32_t mant = e ? (abs & 0x7fffffu) | 0x800000u : (abs & 0x7fffffu);
    // abs = mant * 2^(max(e,1) - 150); units of 2^-24: shift = 126 - e.
    shift = 126 - (e ? e : 1);
    if (shift >= 32) {
      q = 0;
      // Only the top 32 of the discarded bits take part.
      rem = shift - 32 >= 32 ? 0u : mant >> (shift - 32);
      shift = 32;
    } else {
      q = mant >> shift;
      rem = mant & ((1u << shift) - 1u);
    }
  }
  uint64_t scaled = static_cast<uint64_t>(rem) << (32 - shift);
  if (static_cast<uint64_t>(r) < scaled)
    ++q; // may carry into the next binade (or into inf), which encodes right
  return static_cast<uint16_t>(sign | q);
}

AMPC_HD uint16_t f32ToF16Stochastic(float f, uint32_t r) {
  return f16StochasticFromBits(floatBits(f), r);
}

/// Element i of a 16-bit (or f32) tensor written with rounding `mode`:
/// stochastic rounding draws word `r`; anything else rounds to nearest.
AMPC_HD void storeRounded(void *p, ampc_dtype dt, int64_t i, float v,
                          bool stochastic, uint32_t r) {
  if (stochastic && dt == AMPC_BF16)
    static_cast<uint16_t *>(p)[i] = f32ToBf16Stochastic(v, r);
  else if (stochastic && dt == AMPC_F16)
    static_cast<uint16_t *>(p)[i] = f32ToF16Stochastic(v, r);
  else
    storeF32(p, dt, i, v);
}

/// One update's rounding of its 16-bit results.
struct LowKey {
  int32_t mode = kLowNearest;
  uint64_t seed = 0;
  uint32_t counter = 0;
  int64_t param = 0; // the param's index, param_base added
};

/// Writes the optimizer's f32 result v for element i of a param of dtype dt.
/// kahan with a compensation buffer `comp` (the param's dtype): the sum
/// y = v + comp[i] is rounded to nearest, and comp[i] = y - p (rounded to
/// nearest) keeps what the write lost, for the next update.
AMPC_HD void writeParamElement(void *p, ampc_dtype dt, void *comp, int64_t i,
                               float v, const LowKey &k) {
  if (dt == AMPC_F32) {
    static_cast<float *>(p)[i] = v;
    return;
  }
  if (k.mode == kLowKahan && comp) {
    float y = v + loadF32(comp, dt, i);
    storeF32(p, dt, i, y);
    storeF32(comp, dt, i, y - loadF32(p, dt, i));
    return;
  }
  if (k.mode == kLowStochastic) {
    uint32_t r = lowUpdateWord(
        k.seed, lowUpdateCounterHi(kLowStreamParam, k.param, k.counter), i);
    storeRounded(p, dt, i, v, true, r);
    return;
  }
  storeF32(p, dt, i, v);
}

/// Writes optimizer state (momentum, Adam moments) element i: stochastic
/// rounding under `stochastic` mode for 16-bit state, round to nearest
/// otherwise (kahan compensates params only).
AMPC_HD void writeStateElement(void *p, ampc_dtype dt, int64_t i, float v,
                               int32_t stream, const LowKey &k) {
  if (dt == AMPC_F32) {
    static_cast<float *>(p)[i] = v;
    return;
  }
  if (k.mode == kLowStochastic) {
    uint32_t r = lowUpdateWord(
        k.seed, lowUpdateCounterHi(stream, k.param, k.counter), i);
    storeRounded(p, dt, i, v, true, r);
    return;
  }
  storeF32(p, dt, i, v);
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_LOW_UPDATE_H
