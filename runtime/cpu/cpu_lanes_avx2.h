//===- cpu_lanes_avx2.h - Eight-lane f32 roundings to bf16 and f16 -*- C++ -*-===//
//
// f32 -> bf16 and f32 -> f16 of eight lanes with half.h's bits (f32ToBf16,
// f32ToF16), NaNs included: the one definition of that arithmetic for
// cpu_fast.cpp's AVX2 converters and cpu_update.cpp's AVX2 optimizer
// loops. For code compiled for AVX2 and F16C only (target attributes),
// run after a CPUID check.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_LANES_AVX2_H
#define AMPC_RUNTIME_CPU_CPU_LANES_AVX2_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace ampc {
namespace avx2lanes {

#define AMPC_LANES8_INLINE                                                     \
  __attribute__((target("avx2,f16c"), always_inline)) inline

/// f32ToBf16 on eight lanes: round to nearest even; a NaN keeps its sign and
/// the top of its payload, quieted.
AMPC_LANES8_INLINE __m128i f32ToBf16(__m256 v) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x40),
                absMask = _mm256_set1_epi32(0x7fffffff),
                inf = _mm256_set1_epi32(0x7f800000);
  __m256i x = _mm256_castps_si256(v), top = _mm256_srli_epi32(x, 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, absMask), inf);
  __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(top, one))),
      16);
  __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(top, quiet), nan);
  // Lanes below 2^16: packed to 16 bits in order.
  return _mm_packus_epi32(_mm256_castsi256_si128(r),
                          _mm256_extracti128_si256(r, 1));
}

/// f32ToF16 on eight lanes: VCVTPS2PH rounds to nearest even as f32ToF16
/// does but keeps the top of a NaN's payload, where f32ToF16 gives every
/// NaN the payload 0x200, so NaN lanes are replaced.
AMPC_LANES8_INLINE __m128i f32ToF16(__m256 v) {
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff),
                inf = _mm256_set1_epi32(0x7f800000);
  __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
  __m256i bits = _mm256_castps_si256(v);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, absMask), inf);
  if (_mm256_testz_si256(nan, nan))
    return h;
  __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 16),
                                  _mm256_set1_epi32(0x8000));
  __m256i q = _mm256_or_si256(sign, _mm256_set1_epi32(0x7e00));
  // The 32-bit lane mask and values narrowed to 16 bits.
  __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan),
                                  _mm256_extracti128_si256(nan, 1));
  __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q),
                                 _mm256_extracti128_si256(q, 1));
  return _mm_blendv_epi8(h, q16, nan16);
}

#undef AMPC_LANES8_INLINE

} // namespace avx2lanes
} // namespace ampc

#endif // x86-64
#endif // AMPC_RUNTIME_CPU_CPU_LANES_AVX2_H
