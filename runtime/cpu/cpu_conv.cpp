//===- cpu_conv.cpp - Convolution helpers of the CPU backend --------------===//
//
// See cpu_conv.h. The vector paths are chosen at run time (AVX when the CPU
// has it, SSE2 otherwise); every path moves or adds the same values, so the
// results do not depend on the path.
//
//===----------------------------------------------------------------------===//
#include "cpu_conv.h"

#include <immintrin.h>

namespace ampc {
namespace cpuconv {
namespace {

bool detectAVX() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx");
}

const bool kHaveAVX = detectAVX();

__attribute__((target("avx"))) void copyShortAVX(char *d, const char *s,
                                                 size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i *>(d + i),
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + i)));
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i)));
  for (; i < n; ++i)
    d[i] = s[i];
}

void copyShortSSE(char *d, const char *s, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i)));
  for (; i < n; ++i)
    d[i] = s[i];
}

__attribute__((target("avx"))) void addBiasRowAVX(float *y, const float *x,
                                                  float b, int64_t n) {
  __m256 vb = _mm256_set1_ps(b);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(x + i), vb));
  for (; i < n; ++i)
    y[i] = x[i] + b;
}

void addBiasRowSSE(float *y, const float *x, float b, int64_t n) {
  __m128 vb = _mm_set1_ps(b);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(x + i), vb));
  for (; i < n; ++i)
    y[i] = x[i] + b;
}

} // namespace

void copyShort(void *dst, const void *src, size_t bytes) {
  if (kHaveAVX)
    copyShortAVX(static_cast<char *>(dst), static_cast<const char *>(src),
                 bytes);
  else
    copyShortSSE(static_cast<char *>(dst), static_cast<const char *>(src),
                 bytes);
}

void addChannelBiasF32(float *y, const float *src, const float *bias,
                       int64_t outer, int64_t channels, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t at = (o * channels + c) * inner;
      if (kHaveAVX)
        addBiasRowAVX(y + at, src + at, bias[c], inner);
      else
        addBiasRowSSE(y + at, src + at, bias[c], inner);
    }
}

} // namespace cpuconv
} // namespace ampc
