//===- half.h - f16 / bf16 conversions by bit manipulation ------*- C++ -*-===//
//
// IEEE round-to-nearest-even conversions between f32 and the 16-bit formats,
// written on the bit patterns so that every compiler and both backends give
// the same bits: subnormals are exact, overflow goes to inf, NaN stays NaN
// (quiet, sign kept).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_HALF_H
#define AMPC_RUNTIME_SRC_HALF_H

#include "ampc/runtime.h"
#include "hd.h"

#include <stdint.h>
#include <string.h>

namespace ampc {

AMPC_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

AMPC_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

/// f32 -> binary16, round to nearest even.
AMPC_HD uint16_t f32ToF16(float f) {
#if defined(__CUDA_ARCH__)
  // On the GPU the conversion instruction: it rounds to nearest even as the
  // code below does, overflow to inf and subnormal results included, in
  // one instruction instead of about twenty. NaNs, which it would turn into
  // its own canonical NaN, take the code below (tested on every f16 and a
  // dense sweep of f32 patterns: Cuda.CastsAreBitIdentical).
  if ((floatBits(f) & 0x7fffffffu) <= 0x7f800000u) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
#endif
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) // inf or NaN
    return static_cast<uint16_t>(sign |
                                 (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) // >= 65520 rounds past the largest finite (65504)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x38800000u) {         // normal result (>= 2^-14)
    uint32_t h = abs - 0x38000000u; // rebias exponent 127 -> 15
    h += 0xfffu + ((h >> 13) & 1u);
    return static_cast<uint16_t>(sign | (h >> 13));
  }
  // Subnormal result: units of 2^-24. abs = mant * 2^(e - 150).
  uint32_t e = abs >> 23;
  if (e < 102) // value < 2^-25: rounds to zero
    return static_cast<uint16_t>(sign);
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - e; // in [14, 24]
  uint32_t q = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u)))
    ++q; // may carry into the smallest normal, which is the right encoding
  return static_cast<uint16_t>(sign | q);
}

/// binary16 -> f32 (exact).
AMPC_HD float f16ToF32(uint16_t h) {
#if defined(__CUDA_ARCH__)
  // The instruction is exact too, subnormals included; a NaN keeps its
  // payload only in the code below.
  if ((h & 0x7c00u) != 0x7c00u || !(h & 0x3ffu)) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
    return f;
  }
#endif
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f) // inf, NaN (quietened, payload kept)
    return bitsFloat(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  if (e == 0) {
    if (m == 0)
      return bitsFloat(sign);
    int32_t exp = 1;
    while (!(m & 0x400u)) {
      m <<= 1;
      --exp;
    }
    m &= 0x3ffu;
    return bitsFloat(sign | (static_cast<uint32_t>(exp + 112) << 23) |
                     (m << 13));
  }
  return bitsFloat(sign | ((e + 112) << 23) | (m << 13));
}

/// f32 -> bfloat16, round to nearest even.
AMPC_HD uint16_t f32ToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep sign and payload, quiet
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/// bfloat16 -> f32 (exact).
AMPC_HD float bf16ToF32(uint16_t h) {
  return bitsFloat(static_cast<uint32_t>(h) << 16);
}

/// The floats whose kernels compute in f32 (f64 has kernels of its own).
AMPC_HD bool isFloatDtype(ampc_dtype dt) {
  return dt == AMPC_F32 || dt == AMPC_F16 || dt == AMPC_BF16;
}

/// The integer types (bool is not one): their arithmetic is exact in their
/// width, computed in int64 and wrapped (two's complement) on store.
AMPC_HD bool isIntegerDtype(ampc_dtype dt) {
  return dt == AMPC_I32 || dt == AMPC_I64 || dt == AMPC_U8 || dt == AMPC_I8 ||
         dt == AMPC_I16;
}

/// Reads an integer or bool element exactly as int64 (0 for a float).
AMPC_HD int64_t loadInt(const void *p, ampc_dtype dt, int64_t i) {
  switch (dt) {
  case AMPC_I32:
    return static_cast<const int32_t *>(p)[i];
  case AMPC_I64:
    return static_cast<const int64_t *>(p)[i];
  case AMPC_U8:
    return static_cast<const uint8_t *>(p)[i];
  case AMPC_I8:
    return static_cast<const int8_t *>(p)[i];
  case AMPC_I16:
    return static_cast<const int16_t *>(p)[i];
  case AMPC_BOOL:
    return static_cast<const uint8_t *>(p)[i] != 0;
  default:
    return 0;
  }
}

/// Writes v to an integer or bool element: the low bits of its two's
/// complement for an integer (wrap-around, as PyTorch), v != 0 for bool.
AMPC_HD void storeInt(void *p, ampc_dtype dt, int64_t i, int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  switch (dt) {
  case AMPC_I32:
    static_cast<uint32_t *>(p)[i] = static_cast<uint32_t>(u);
    return;
  case AMPC_I64:
    static_cast<uint64_t *>(p)[i] = u;
    return;
  case AMPC_U8:
  case AMPC_I8:
    static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(u);
    return;
  case AMPC_I16:
    static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(u);
    return;
  case AMPC_BOOL:
    static_cast<uint8_t *>(p)[i] = v != 0;
    return;
  default:
    return;
  }
}

/// A float's value truncated toward zero to int64 (PyTorch's float ->
/// integer cast, which then keeps the low bits); NaN and values outside the
/// int64 range give INT64_MIN, as x86's conversion does.
AMPC_HD int64_t truncToInt(double v) {
  if (!(v > -9223372036854775808.0 - 1.0 && v < 9223372036854775808.0))
    return static_cast<int64_t>(static_cast<uint64_t>(1) << 63);
  return static_cast<int64_t>(v);
}

/// Reads element i of a tensor of dtype dt as f32.
AMPC_HD float loadF32(const void *p, ampc_dtype dt, int64_t i) {
  switch (dt) {
  case AMPC_F32:
    return static_cast<const float *>(p)[i];
  case AMPC_F16:
    return f16ToF32(static_cast<const uint16_t *>(p)[i]);
  case AMPC_BF16:
    return bf16ToF32(static_cast<const uint16_t *>(p)[i]);
  case AMPC_I32:
    return static_cast<float>(static_cast<const int32_t *>(p)[i]);
  case AMPC_I64:
    return static_cast<float>(static_cast<const int64_t *>(p)[i]);
  case AMPC_BOOL:
    return static_cast<const uint8_t *>(p)[i] ? 1.0f : 0.0f;
  case AMPC_F64:
    return static_cast<float>(static_cast<const double *>(p)[i]);
  case AMPC_U8:
  case AMPC_I8:
  case AMPC_I16:
    return static_cast<float>(loadInt(p, dt, i));
  }
  return 0.0f;
}

/// Writes v (rounded to nearest even for 16-bit floats) to element i.
AMPC_HD void storeF32(void *p, ampc_dtype dt, int64_t i, float v) {
  switch (dt) {
  case AMPC_F32:
    static_cast<float *>(p)[i] = v;
    return;
  case AMPC_F16:
    static_cast<uint16_t *>(p)[i] = f32ToF16(v);
    return;
  case AMPC_BF16:
    static_cast<uint16_t *>(p)[i] = f32ToBf16(v);
    return;
  case AMPC_I32:
    static_cast<int32_t *>(p)[i] = static_cast<int32_t>(v);
    return;
  case AMPC_I64:
    static_cast<int64_t *>(p)[i] = static_cast<int64_t>(v);
    return;
  case AMPC_BOOL:
    static_cast<uint8_t *>(p)[i] = v != 0.0f;
    return;
  case AMPC_F64:
    static_cast<double *>(p)[i] = v;
    return;
  case AMPC_U8:
  case AMPC_I8:
  case AMPC_I16:
    storeInt(p, dt, i, truncToInt(v));
    return;
  }
}

/// Reads element i of any dtype as f64 (exact but for i64 beyond 2^53, which
/// rounds to nearest as PyTorch's cast does).
AMPC_HD double loadF64(const void *p, ampc_dtype dt, int64_t i) {
  if (dt == AMPC_F64)
    return static_cast<const double *>(p)[i];
  if (isFloatDtype(dt))
    return loadF32(p, dt, i);
  return static_cast<double>(loadInt(p, dt, i));
}

/// Writes v to element i: f64 as is, the 16-bit floats through f32 (as
/// PyTorch's c10::Half(double)), integers truncated toward zero and wrapped.
AMPC_HD void storeF64(void *p, ampc_dtype dt, int64_t i, double v) {
  if (dt == AMPC_F64)
    static_cast<double *>(p)[i] = v;
  else if (isFloatDtype(dt))
    storeF32(p, dt, i, static_cast<float>(v));
  else if (dt == AMPC_BOOL)
    storeInt(p, dt, i, v != 0.0);
  else
    storeInt(p, dt, i, truncToInt(v));
}

/// Reads an integer element (ids, labels) as int64.
AMPC_HD int64_t loadIndex(const void *p, ampc_dtype dt, int64_t i) {
  return dt == AMPC_I64
             ? static_cast<const int64_t *>(p)[i]
             : (dt == AMPC_I32 ? static_cast<int64_t>(
                                     static_cast<const int32_t *>(p)[i])
                               : loadInt(p, dt, i));
}

/// Copies element si of src to element di of dst, converting dtypes. Integer
/// to integer copies are exact (no trip through f32).
AMPC_HD void convertElement(void *dst, ampc_dtype ddt, int64_t di,
                            const void *src, ampc_dtype sdt, int64_t si) {
  if (ddt == sdt) {
    switch (ddt) {
    case AMPC_F32:
    case AMPC_I32:
      static_cast<uint32_t *>(dst)[di] = static_cast<const uint32_t *>(src)[si];
      return;
    case AMPC_F16:
    case AMPC_BF16:
    case AMPC_I16:
      static_cast<uint16_t *>(dst)[di] = static_cast<const uint16_t *>(src)[si];
      return;
    case AMPC_I64:
    case AMPC_F64:
      static_cast<uint64_t *>(dst)[di] = static_cast<const uint64_t *>(src)[si];
      return;
    case AMPC_BOOL:
    case AMPC_U8:
    case AMPC_I8:
      static_cast<uint8_t *>(dst)[di] = static_cast<const uint8_t *>(src)[si];
      return;
    }
  }
  bool srcFloat = isFloatDtype(sdt) || sdt == AMPC_F64;
  bool dstFloat = isFloatDtype(ddt) || ddt == AMPC_F64;
  if (!srcFloat && !dstFloat) {
    storeInt(dst, ddt, di, loadInt(src, sdt, si));
    return;
  }
  // An integer to a float rounds once (int64 -> f32 directly, as PyTorch);
  // f64 on either side goes through f64.
  if (ddt == AMPC_F64 || sdt == AMPC_F64 || !srcFloat) {
    if (!srcFloat && ddt != AMPC_F64)
      storeF32(dst, ddt, di, static_cast<float>(loadInt(src, sdt, si)));
    else
      storeF64(dst, ddt, di, loadF64(src, sdt, si));
    return;
  }
  storeF32(dst, ddt, di, loadF32(src, sdt, si));
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_HALF_H
