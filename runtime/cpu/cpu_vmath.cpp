//===- cpu_vmath.cpp - Vector expf with libm's bits -----------------------===//
//
// See cpu_vmath.h. The vector code is compiled for AVX2 + FMA with a target
// attribute and only called after the CPUID check and the self-check.
//
//===----------------------------------------------------------------------===//
#include "cpu_vmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AMPC_VMATH_X86 1
#include <immintrin.h>
#endif

namespace ampc {
namespace cpukern {
namespace {

#if AMPC_VMATH_X86
// 2^(i/32) as doubles (correctly rounded), each less i << 47 so that adding
// k << 47 for k = i (mod 32) puts k / 32's integer part in the exponent.
alignas(32) const uint64_t kExp2Tab[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full,
    0x3fef9301d0125b51ull, 0x3fef72b83c7d517bull, 0x3fef54873168b9aaull,
    0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull, 0x3fef06fe0a31b715ull,
    0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull,
    0x3feea47eb03a5585ull, 0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull,
    0x3feea11473eb0187ull, 0x3feea589994cce13ull, 0x3feeace5422aa0dbull,
    0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull,
    0x3fef3720dcef9069ull, 0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full,
    0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull};

double fromBits(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/// exp of four lanes, the steps of libm's expf in double: k = round(x *
/// 32/ln2) by adding 1.5 * 2^52 (one FMA), r = x * 32/ln2 - k (one FMA),
/// 2^(r/32) ~ 1 + c2 r + (c1 + c0 r) r^2 (three FMAs), times the table
/// entry scaled by 2^(k div 32).
__attribute__((target("avx2,fma"))) inline __m128 exp4(__m128 x) {
  const __m256d invLn2N = _mm256_set1_pd(fromBits(0x40471547652b82feull));
  const __m256d shift = _mm256_set1_pd(fromBits(0x4338000000000000ull));
  const __m256d c0 = _mm256_set1_pd(fromBits(0x3ebc6af84b912394ull));
  const __m256d c1 = _mm256_set1_pd(fromBits(0x3f2ebfce50fac4f3ull));
  const __m256d c2 = _mm256_set1_pd(fromBits(0x3f962e42ff0c52d6ull));
  const __m256d one = _mm256_set1_pd(1.0);
  __m256d xd = _mm256_cvtps_pd(x);
  __m256d kds = _mm256_fmadd_pd(invLn2N, xd, shift);
  __m256i ki = _mm256_castpd_si256(kds);
  __m256d kd = _mm256_sub_pd(kds, shift);
  __m256d r = _mm256_fmsub_pd(invLn2N, xd, kd);
  __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  __m256i t = _mm256_i64gather_epi64(
      reinterpret_cast<const long long *>(kExp2Tab), idx, 8);
  t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
  __m256d s = _mm256_castsi256_pd(t);
  __m256d z = _mm256_fmadd_pd(r, c0, c1);
  __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, c2, one);
  y = _mm256_fmadd_pd(z, r2, y);
  y = _mm256_mul_pd(y, s);
  return _mm256_cvtpd_ps(y);
}

__attribute__((target("avx2,fma"), noinline)) void expAVX2(const float *x,
                                                           float *y,
                                                 int64_t n) {
  // libm's special path: the top 12 bits of |x| >= those of 88.0f, or NaN.
  const __m256i absTopMin = _mm256_set1_epi32(0x42a);
  const __m256i topMask = _mm256_set1_epi32(0x7ff);
  // Below log(2^-150) (and -inf) libm returns +0.
  const __m256 uflow = _mm256_set1_ps(-0x1.9fe368p6f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 xv = _mm256_loadu_ps(x + i);
    __m256i top = _mm256_and_si256(
        _mm256_srli_epi32(_mm256_castps_si256(xv), 20), topMask);
    __m256i special = _mm256_cmpgt_epi32(top, absTopMin);
    __m128 lo = exp4(_mm256_castps256_ps128(xv));
    __m128 hi = exp4(_mm256_extractf128_ps(xv, 1));
    __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
    if (!_mm256_testz_si256(special, special)) {
      __m256 zero = _mm256_cmp_ps(xv, uflow, _CMP_LT_OQ);
      r = _mm256_andnot_ps(zero, r);
      __m256i rest =
          _mm256_andnot_si256(_mm256_castps_si256(zero), special);
      int bits = _mm256_movemask_ps(_mm256_castsi256_ps(rest));
      float xs[8];
      _mm256_storeu_ps(xs, xv);
      _mm256_storeu_ps(y + i, r);
      for (int l = 0; l < 8; ++l)
        if (bits & (1 << l))
          y[i + l] = expf(xs[l]);
      continue;
    }
    _mm256_storeu_ps(y + i, r);
  }
  for (; i < n; ++i)
    y[i] = expf(x[i]);
}

uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/// Whether the vector path gives libm's bits on a spread of inputs: every
/// exponent and sign with varied mantissas, the rounding-sensitive range of
/// [-104, 89] densely, and the special values.
bool selfCheck() {
  constexpr int kN = 1 << 17;
  static float in[kN], out[kN];
  uint32_t h = 0x9e3779b9u;
  for (int i = 0; i < kN / 2; ++i) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    uint32_t u = (static_cast<uint32_t>(i) << 17) ^ (h & 0x1ffffu);
    memcpy(&in[i], &u, 4);
  }
  for (int i = kN / 2; i < kN; ++i)
    in[i] = -104.0f + 193.0f * static_cast<float>(i - kN / 2) / (kN / 2);
  in[0] = INFINITY;
  in[1] = -INFINITY;
  in[2] = NAN;
  in[3] = 0.0f;
  in[4] = -0.0f;
  volatile int64_t n = kN; // keeps GCC from cloning expAVX2 for a constant
  expAVX2(in, out, n);
  for (int i = 0; i < kN; ++i)
    if (bitsOf(out[i]) != bitsOf(expf(in[i])))
      return false;
  return true;
}
#endif

bool decide() {
#if AMPC_VMATH_X86
  if (getenv("AMPC_CPU_SCALAR_MATH"))
    return false;
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    return false;
  return selfCheck();
#else
  return false;
#endif
}

} // namespace

bool vectorExp() {
  static const bool use = decide();
  return use;
}

void expN(const float *x, float *y, int64_t n) {
#if AMPC_VMATH_X86
  if (vectorExp())
    return expAVX2(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i)
    y[i] = expf(x[i]);
}

} // namespace cpukern
} // namespace ampc
