//===- cpu_pooling.cpp - Vector rows of the CPU backend's 2-D pooling -----===//
//
// See cpu_pooling.h. Compiled for AVX-512 with target attributes and called
// only after a CPUID check (vectorRows()).
//
//===----------------------------------------------------------------------===//
#include "cpu_pooling.h"

#include <stdlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AMPC_POOL_X86 1
#include <immintrin.h>
#endif

namespace ampc {
namespace cpupooling {

bool vectorRows() {
#if AMPC_POOL_X86
  static const bool have = getenv("AMPC_CPU_SCALAR_POOL") == nullptr &&
                           __builtin_cpu_supports("avx512f");
  return have;
#else
  return false;
#endif
}

#if AMPC_POOL_X86
namespace {

#define AMPC_AVX512_POOL __attribute__((target("avx512f")))

/// Offsets of the n windows' first elements, and the lane mask.
AMPC_AVX512_POOL inline __m512i firstOffsets(const RowWindows &r, int64_t ox0,
                                             int n, __mmask16 &mask) {
  mask = static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1);
  __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   13, 14, 15);
  __m512i base = _mm512_set1_epi32(static_cast<int32_t>(r.row0 * r.w + ox0 * r.sw));
  return _mm512_add_epi32(base,
                          _mm512_mullo_epi32(lane, _mm512_set1_epi32(
                                                       static_cast<int32_t>(r.sw))));
}

} // namespace

AMPC_AVX512_POOL void maxRowAVX512(const RowWindows &r, int64_t ox0, int n,
                                   int32_t *idx, float *val) {
  __mmask16 m;
  __m512i first = firstOffsets(r, ox0, n, m);
  __m512i best = first;
  __m512 bv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, first, r.plane, 4);
  for (int64_t ky = 0; ky < r.kh; ++ky)
    for (int64_t kx = ky == 0 ? 1 : 0; kx < r.kw; ++kx) {
      __m512i off = _mm512_add_epi32(
          first, _mm512_set1_epi32(static_cast<int32_t>(ky * r.w + kx)));
      __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, off, r.plane, 4);
      // The element loop's test: v > best, or v is a NaN and best is not.
      __mmask16 take = _mm512_cmp_ps_mask(v, bv, _CMP_GT_OQ) |
                       (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) &
                        _mm512_cmp_ps_mask(bv, bv, _CMP_ORD_Q));
      bv = _mm512_mask_mov_ps(bv, take, v);
      best = _mm512_mask_mov_epi32(best, take, off);
    }
  _mm512_mask_storeu_ps(val, m, bv);
  if (idx)
    _mm512_mask_storeu_epi32(idx, m, best);
}

AMPC_AVX512_POOL void avgRowAVX512(const RowWindows &r, int64_t ox0, int n,
                                   float div, float *val) {
  __mmask16 m;
  __m512i first = firstOffsets(r, ox0, n, m);
  __m512 s = _mm512_setzero_ps();
  for (int64_t ky = 0; ky < r.kh; ++ky)
    for (int64_t kx = 0; kx < r.kw; ++kx) {
      __m512i off = _mm512_add_epi32(
          first, _mm512_set1_epi32(static_cast<int32_t>(ky * r.w + kx)));
      s = _mm512_add_ps(
          s, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, off, r.plane, 4));
    }
  _mm512_mask_storeu_ps(val, m, _mm512_div_ps(s, _mm512_set1_ps(div)));
}
#undef AMPC_AVX512_POOL
#endif

void maxRow(const RowWindows &r, int64_t ox0, int n, int32_t *idx,
            float *val) {
#if AMPC_POOL_X86
  maxRowAVX512(r, ox0, n, idx, val);
#else
  (void)r, (void)ox0, (void)n, (void)idx, (void)val;
  abort(); // vectorRows() is false: never called.
#endif
}

void avgRow(const RowWindows &r, int64_t ox0, int n, float div, float *val) {
#if AMPC_POOL_X86
  avgRowAVX512(r, ox0, n, div, val);
#else
  (void)r, (void)ox0, (void)n, (void)div, (void)val;
  abort();
#endif
}

} // namespace cpupooling
} // namespace ampc
