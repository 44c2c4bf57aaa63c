//===- cpu_vmath.cpp - Vector expf, erff and tanhf with libm's bits ----===//
//
// See cpu_vmath.h. The vector code is compiled for AVX2 + FMA and for
// AVX-512 with target attributes and only called after the CPUID check and
// the self-checks.
//
//===----------------------------------------------------------------------===//
#include "cpu_vmath.h"

#include "cpu_isa.h"

#include <atomic>
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
/// y with the lanes set in `bits` replaced by libm's fn of x's lanes.
__attribute__((target("avx2,fma"))) inline __m256
libmLanes(__m256 x, __m256 y, int bits, float (*fn)(float)) {
  alignas(32) float xs[8], ys[8];
  _mm256_store_ps(xs, x);
  _mm256_store_ps(ys, y);
  for (int l = 0; l < 8; ++l)
    if (bits & (1 << l))
      ys[l] = fn(xs[l]);
  return _mm256_load_ps(ys);
}

float libmExp(float x) { return expf(x); }
float libmErf(float x) { return erff(x); }
float libmTanh(float x) { return tanhf(x); }

/// y[0, n) = V(x) eight lanes at a time, the tail by libm's S.
template <__m256 (*V)(__m256), float (*S)(float)>
__attribute__((target("avx2,fma"))) inline void overRun(const float *x,
                                                        float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, V(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i)
    y[i] = S(x[i]);
}


// 2^(i/32) as doubles (correctly rounded), each less i << 47 so that adding
// k << 47 for k = i (mod 32) puts k / 32's integer part in the exponent.
alignas(64) const uint64_t kExp2Tab[32] = {
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

// expf's constants (as bits of doubles): 32/ln2, 1.5 * 2^52 (adding it
// rounds to an integer), and the cubic's coefficients.
constexpr uint64_t kExpInvLn2N = 0x40471547652b82feull;
constexpr uint64_t kExpShift = 0x4338000000000000ull;
constexpr uint64_t kExpC0 = 0x3ebc6af84b912394ull;
constexpr uint64_t kExpC1 = 0x3f2ebfce50fac4f3ull;
constexpr uint64_t kExpC2 = 0x3f962e42ff0c52d6ull;
// libm's special path: the top 12 bits of |x| at or above those of 88.0f
// (0x42b), or NaN.
constexpr int kExpAbsTopMin = 0x42a;
// Below log(2^-150) (and -inf) libm returns +0.
constexpr float kExpUnderflow = -0x1.9fe368p6f;

/// The table entries kExp2Tab[k mod 32] of four lanes' k, by four scalar
/// loads: on the AMD EPYC (Zen 3) of bench/README.md's thirteenth run,
/// expAVX2 took 22% less time than with one vpgatherqq (the same entries,
/// so the same bits).
__attribute__((target("avx2,fma"))) inline __m256i exp2TabLanes(__m256i k) {
  __m256i i = _mm256_and_si256(k, _mm256_set1_epi64x(31));
  __m128i lo = _mm256_castsi256_si128(i), hi = _mm256_extracti128_si256(i, 1);
  auto at = [](long long j) {
    return static_cast<long long>(kExp2Tab[j]);
  };
  return _mm256_set_epi64x(at(_mm_extract_epi64(hi, 1)),
                           at(_mm_cvtsi128_si64(hi)),
                           at(_mm_extract_epi64(lo, 1)),
                           at(_mm_cvtsi128_si64(lo)));
}

/// exp of four lanes, the steps of libm's expf in double: k = round(x *
/// 32/ln2) by adding 1.5 * 2^52 (one FMA), r = x * 32/ln2 - k (one FMA),
/// 2^(r/32) ~ 1 + c2 r + (c1 + c0 r) r^2 (three FMAs), times the table
/// entry scaled by 2^(k div 32).
__attribute__((target("avx2,fma"))) inline __m128 exp4(__m128 x) {
  const __m256d invLn2N = _mm256_set1_pd(fromBits(kExpInvLn2N));
  const __m256d shift = _mm256_set1_pd(fromBits(kExpShift));
  const __m256d c0 = _mm256_set1_pd(fromBits(kExpC0));
  const __m256d c1 = _mm256_set1_pd(fromBits(kExpC1));
  const __m256d c2 = _mm256_set1_pd(fromBits(kExpC2));
  const __m256d one = _mm256_set1_pd(1.0);
  __m256d xd = _mm256_cvtps_pd(x);
  __m256d kds = _mm256_fmadd_pd(invLn2N, xd, shift);
  __m256i ki = _mm256_castpd_si256(kds);
  __m256d kd = _mm256_sub_pd(kds, shift);
  __m256d r = _mm256_fmsub_pd(invLn2N, xd, kd);
  __m256i t = _mm256_add_epi64(exp2TabLanes(ki), _mm256_slli_epi64(ki, 47));
  __m256d s = _mm256_castsi256_pd(t);
  __m256d z = _mm256_fmadd_pd(r, c0, c1);
  __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, c2, one);
  y = _mm256_fmadd_pd(z, r2, y);
  y = _mm256_mul_pd(y, s);
  return _mm256_cvtpd_ps(y);
}

/// exp of eight lanes with libm's bits (its special-case lanes by libm).
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 xv) {
  const __m256i absTopMin = _mm256_set1_epi32(kExpAbsTopMin);
  const __m256i topMask = _mm256_set1_epi32(0x7ff);
  const __m256 uflow = _mm256_set1_ps(kExpUnderflow);
  __m256i top =
      _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(xv), 20), topMask);
  __m256i special = _mm256_cmpgt_epi32(top, absTopMin);
  __m128 lo = exp4(_mm256_castps256_ps128(xv));
  __m128 hi = exp4(_mm256_extractf128_ps(xv, 1));
  __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
  if (_mm256_testz_si256(special, special))
    return r;
  __m256 zero = _mm256_cmp_ps(xv, uflow, _CMP_LT_OQ);
  r = _mm256_andnot_ps(zero, r);
  __m256i rest = _mm256_andnot_si256(_mm256_castps_si256(zero), special);
  int bits = _mm256_movemask_ps(_mm256_castsi256_ps(rest));
  if (!bits)
    return r;
  return libmLanes(xv, r, bits, libmExp);
}

__attribute__((target("avx2,fma"), noinline)) void
expAVX2(const float *x, float *y, int64_t n) {
  overRun<exp8, libmExp>(x, y, n);
}

float f(uint32_t u) {
  float v;
  memcpy(&v, &u, 4);
  return v;
}

// The eight-lane f32 operations erff and tanhf are written in.
#define AMPC_VM __attribute__((target("avx2,fma")))
AMPC_VM inline __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
AMPC_VM inline __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
AMPC_VM inline __m256 sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
AMPC_VM inline __m256 dvd(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
AMPC_VM inline __m256 c(float v) { return _mm256_set1_ps(v); }
AMPC_VM inline __m256 pick(__m256 m, __m256 yes, __m256 no) {
  return _mm256_blendv_ps(no, yes, m);
}
AMPC_VM inline __m256 asF(__m256i v) { return _mm256_castsi256_ps(v); }
AMPC_VM inline __m256i asI(__m256 v) { return _mm256_castps_si256(v); }
AMPC_VM inline __m256i ic(int32_t v) { return _mm256_set1_epi32(v); }

// erff's coefficients, as libm's f32 erff (fdlibm) has them: P/Q on
// |x| < 0.84375, on [0.84375, 1.25) about erx, and R/S on [1.25, 1/0.35)
// and [1/0.35, 6).
const float kErfPp[] = {f(0xb7c756b1), f(0xbbbd1489), f(0xbce9528f),
                        f(0xbea66beb), f(0x3e0375d4)};
const float kErfQq[] = {f(0xb684e21a), f(0x390aee49), f(0x3ba68116),
                        f(0x3d852a63), f(0x3ecbbbce), 1.0f};
const float kErfPa[] = {f(0xbb0df9c0), f(0x3d1151b3), f(0xbde31cc2),
                        f(0x3ea2fe54), f(0xbebe9208), f(0x3ed46805),
                        f(0xbb1acdc6)};
const float kErfQa[] = {f(0x3c445aa3), f(0x3c5f6e13), f(0x3e013307),
                        f(0x3d931ae7), f(0x3f0a5785), f(0x3dd9f331),
                        1.0f};
const float kErfRa[] = {f(0xc11d077e), f(0xc2a2932b), f(0xc3389ae7),
                        f(0xc322658c), f(0xc2798057), f(0xc128f022),
                        f(0xbf31a0b7), f(0xbc21a093)};
const float kErfSa[] = {f(0xbd777f97), f(0x40d23f7c), f(0x42d9451f),
                        f(0x43d6810b), f(0x442158c9), f(0x43d9486f),
                        f(0x4309a863), f(0x419d35ce), 1.0f};
const float kErfRb[] = {f(0xc3f1c275), f(0xc480230b), f(0xc41f6441),
                        f(0xc320a2ea), f(0xc18e104b), f(0xbf4c9dd4),
                        f(0xbc21a092)};
const float kErfSb[] = {f(0xc1b38712), f(0x43ed43a7), f(0x451f90ce),
                        f(0x4547fdbb), f(0x44c01759), f(0x43a2e571),
                        f(0x41f2b459), 1.0f};
const float kErfErx = f(0x3f58560b);
// fdlibm's expm1f: the rational correction's coefficients Q1-Q5.
const float kExpm1Q[5] = {-3.3333335072e-02f, 1.5873016091e-03f,
                          -7.9365076090e-05f, 4.0082177293e-06f,
                          -2.0109921195e-07f};

/// erff and tanhf eight lanes at a time: cpu_vmath_lanes.inc over AVX2's
/// lanes (the f32 operations above, masks as all-ones lanes).
namespace lanes8 {
#define AMPC_LANES AMPC_VM inline
using F = __m256;
using I = __m256i;
using M = __m256;
AMPC_LANES I andI(I a, I b) { return _mm256_and_si256(a, b); }
AMPC_LANES F xorF(F a, F b) { return _mm256_xor_ps(a, b); }
AMPC_LANES I addI(I a, I b) { return _mm256_add_epi32(a, b); }
AMPC_LANES I subI(I a, I b) { return _mm256_sub_epi32(a, b); }
AMPC_LANES I shl23(I a) { return _mm256_slli_epi32(a, 23); }
AMPC_LANES I srlvI(I a, I n) { return _mm256_srlv_epi32(a, n); }
AMPC_LANES I truncI(F a) { return _mm256_cvttps_epi32(a); }
AMPC_LANES F toF(I a) { return _mm256_cvtepi32_ps(a); }
AMPC_LANES M lessI(I a, I b) { return asF(_mm256_cmpgt_epi32(b, a)); }
AMPC_LANES M eqI(I a, I b) { return asF(_mm256_cmpeq_epi32(a, b)); }
AMPC_LANES M lessF(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
AMPC_LANES M andNot(M a, M b) { return _mm256_andnot_ps(a, b); }
AMPC_LANES M andM(M a, M b) { return _mm256_and_ps(a, b); }
AMPC_LANES M orM(M a, M b) { return _mm256_or_ps(a, b); }
AMPC_LANES M notM(M a) { return xorF(a, asF(ic(-1))); }
AMPC_LANES bool any(M m) { return _mm256_movemask_ps(m) != 0; }
AMPC_LANES I pickI(M m, I yes, I no) {
  return _mm256_blendv_epi8(no, yes, asI(m));
}
AMPC_LANES I keepI(M m, I k) { return andI(k, asI(m)); }
AMPC_LANES F expV(F x) { return exp8(x); }
AMPC_LANES F libmV(F x, F y, M m, float (*fn)(float)) {
  int bits = _mm256_movemask_ps(m);
  return bits ? libmLanes(x, y, bits, fn) : y;
}
#include "cpu_vmath_lanes.inc"
#undef AMPC_LANES
} // namespace lanes8

AMPC_VM __attribute__((noinline)) void erfAVX2(const float *x, float *y,
                                               int64_t n) {
  overRun<lanes8::erfV, libmErf>(x, y, n);
}

AMPC_VM __attribute__((noinline)) void tanhAVX2(const float *x, float *y,
                                                int64_t n) {
  overRun<lanes8::tanhV, libmTanh>(x, y, n);
}
#undef AMPC_VM

// The sixteen-lane code (AVX-512): expf, then erff and tanhf.
// GCC 12's AVX-512 headers start several unmasked forms from a
// self-initialised "undefined" vector, which -Wmaybe-uninitialized reports
// where they are inlined; the value is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define AMPC_VM512 __attribute__((target("avx512f,avx2,fma")))
/// y with the lanes set in `bits` replaced by libm's fn of x's lanes.
AMPC_VM512 inline __m512 libmLanes16(__m512 x, __m512 y, unsigned bits,
                                     float (*fn)(float)) {
  alignas(64) float xs[16], ys[16];
  _mm512_store_ps(xs, x);
  _mm512_store_ps(ys, y);
  for (int l = 0; l < 16; ++l)
    if (bits & (1u << l))
      ys[l] = fn(xs[l]);
  return _mm512_load_ps(ys);
}

/// exp4's steps on eight doubles, with the table entry taken by two-source
/// permutes from the table held in four registers (k's low five bits pick
/// it) instead of a gather: the same operations, so the same bits.
AMPC_VM512 inline __m512d exp8d(__m512d xd, const __m512d tab[4]) {
  const __m512d invLn2N = _mm512_set1_pd(fromBits(kExpInvLn2N));
  const __m512d shift = _mm512_set1_pd(fromBits(kExpShift));
  __m512d kds = _mm512_fmadd_pd(invLn2N, xd, shift);
  __m512i ki = _mm512_castpd_si512(kds);
  __m512d kd = _mm512_sub_pd(kds, shift);
  __m512d r = _mm512_fmsub_pd(invLn2N, xd, kd);
  __m512d lo = _mm512_permutex2var_pd(tab[0], ki, tab[1]);
  __m512d hi = _mm512_permutex2var_pd(tab[2], ki, tab[3]);
  __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
  __m512i t = _mm512_castpd_si512(_mm512_mask_blend_pd(upper, lo, hi));
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
  __m512d s = _mm512_castsi512_pd(t);
  __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(fromBits(kExpC0)),
                              _mm512_set1_pd(fromBits(kExpC1)));
  __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y =
      _mm512_fmadd_pd(r, _mm512_set1_pd(fromBits(kExpC2)), _mm512_set1_pd(1.0));
  y = _mm512_fmadd_pd(z, r2, y);
  return _mm512_mul_pd(y, s);
}

/// kExp2Tab in four registers, as exp8d reads it.
AMPC_VM512 inline void loadExp2Tab(__m512d tab[4]) {
  const double *t = reinterpret_cast<const double *>(kExp2Tab);
  for (int i = 0; i < 4; ++i)
    tab[i] = _mm512_loadu_pd(t + 8 * i);
}

/// exp of sixteen lanes with libm's bits, as exp8.
AMPC_VM512 inline __m512 exp16(__m512 xv, const __m512d tab[4]) {
  __m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(xv), 20),
                                 _mm512_set1_epi32(0x7ff));
  __mmask16 special =
      _mm512_cmpgt_epi32_mask(top, _mm512_set1_epi32(kExpAbsTopMin));
  __m512d xlo = _mm512_cvtps_pd(_mm512_castps512_ps256(xv));
  __m512d xhi = _mm512_cvtps_pd(
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xv), 1)));
  __m256 lo = _mm512_cvtpd_ps(exp8d(xlo, tab));
  __m256 hi = _mm512_cvtpd_ps(exp8d(xhi, tab));
  __m512 r = _mm512_castpd_ps(_mm512_insertf64x4(
      _mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
  if (!special)
    return r;
  __mmask16 zero =
      _mm512_cmp_ps_mask(xv, _mm512_set1_ps(kExpUnderflow), _CMP_LT_OQ);
  r = _mm512_maskz_mov_ps(static_cast<__mmask16>(~zero), r);
  unsigned rest = special & ~zero & 0xffffu;
  if (!rest)
    return r;
  return libmLanes16(xv, r, rest, libmExp);
}

/// expAVX2 sixteen lanes at a time; the tail is one masked vector (its
/// unused lanes read as 0, which takes no special path).
AMPC_VM512 __attribute__((noinline)) void expAVX512(const float *x, float *y,
                                                    int64_t n) {
  __m512d tab[4];
  loadExp2Tab(tab);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i), tab));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m,
                          exp16(_mm512_maskz_loadu_ps(m, x + i), tab));
  }
}

/// erff and tanhf sixteen lanes at a time: cpu_vmath_lanes.inc over
/// AVX-512's lanes (masks in mask registers), with exp16 for erff's expf.
namespace lanes16 {
#define AMPC_LANES AMPC_VM512 inline
using F = __m512;
using I = __m512i;
using M = __mmask16;
AMPC_LANES F c(float v) { return _mm512_set1_ps(v); }
AMPC_LANES I ic(int32_t v) { return _mm512_set1_epi32(v); }
AMPC_LANES F mul(F a, F b) { return _mm512_mul_ps(a, b); }
AMPC_LANES F add(F a, F b) { return _mm512_add_ps(a, b); }
AMPC_LANES F sub(F a, F b) { return _mm512_sub_ps(a, b); }
AMPC_LANES F dvd(F a, F b) { return _mm512_div_ps(a, b); }
AMPC_LANES I asI(F v) { return _mm512_castps_si512(v); }
AMPC_LANES F asF(I v) { return _mm512_castsi512_ps(v); }
AMPC_LANES I andI(I a, I b) { return _mm512_and_si512(a, b); }
AMPC_LANES F xorF(F a, F b) { return asF(_mm512_xor_si512(asI(a), asI(b))); }
AMPC_LANES I addI(I a, I b) { return _mm512_add_epi32(a, b); }
AMPC_LANES I subI(I a, I b) { return _mm512_sub_epi32(a, b); }
AMPC_LANES I shl23(I a) { return _mm512_slli_epi32(a, 23); }
AMPC_LANES I srlvI(I a, I n) { return _mm512_srlv_epi32(a, n); }
AMPC_LANES I truncI(F a) { return _mm512_cvttps_epi32(a); }
AMPC_LANES F toF(I a) { return _mm512_cvtepi32_ps(a); }
AMPC_LANES M lessI(I a, I b) { return _mm512_cmplt_epi32_mask(a, b); }
AMPC_LANES M eqI(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
AMPC_LANES M lessF(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
AMPC_LANES M andNot(M a, M b) { return static_cast<M>(~a & b); }
AMPC_LANES M andM(M a, M b) { return static_cast<M>(a & b); }
AMPC_LANES M orM(M a, M b) { return static_cast<M>(a | b); }
AMPC_LANES M notM(M a) { return static_cast<M>(~a); }
AMPC_LANES bool any(M m) { return m != 0; }
AMPC_LANES F pick(M m, F yes, F no) { return _mm512_mask_blend_ps(m, no, yes); }
AMPC_LANES I pickI(M m, I yes, I no) {
  return _mm512_mask_blend_epi32(m, no, yes);
}
AMPC_LANES I keepI(M m, I k) { return _mm512_maskz_mov_epi32(m, k); }
AMPC_LANES F expV(F x) {
  __m512d tab[4];
  loadExp2Tab(tab);
  return exp16(x, tab);
}
AMPC_LANES F libmV(F x, F y, M m, float (*fn)(float)) {
  return m ? libmLanes16(x, y, m, fn) : y;
}
#include "cpu_vmath_lanes.inc"
#undef AMPC_LANES
} // namespace lanes16

/// y[0, n) = V(x) sixteen lanes at a time; the tail is one masked vector,
/// its unused lanes read as 0.5 (which takes no libm path in erff or tanhf).
template <__m512 (*V)(__m512)>
AMPC_VM512 inline void overRun16(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, V(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 xv = _mm512_mask_loadu_ps(_mm512_set1_ps(0.5f), m, x + i);
    _mm512_mask_storeu_ps(y + i, m, V(xv));
  }
}

AMPC_VM512 __attribute__((noinline)) void erfAVX512(const float *x, float *y,
                                                    int64_t n) {
  overRun16<lanes16::erfV>(x, y, n);
}

AMPC_VM512 __attribute__((noinline)) void tanhAVX512(const float *x, float *y,
                                                     int64_t n) {
  overRun16<lanes16::tanhV>(x, y, n);
}
#undef AMPC_VM512
#pragma GCC diagnostic pop

uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/// Whether a vector path gives libm's bits on a spread of inputs: every
/// exponent and sign with varied mantissas, [lo, hi] (where the function's
/// rounding-sensitive work is) densely, and the special values.
bool agrees(void (*vec)(const float *, float *, int64_t), float (*ref)(float),
            float lo, float hi) {
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
    in[i] = lo + (hi - lo) * static_cast<float>(i - kN / 2) / (kN / 2);
  in[0] = INFINITY;
  in[1] = -INFINITY;
  in[2] = NAN;
  in[3] = 0.0f;
  in[4] = -0.0f;
  volatile int64_t n = kN; // keeps GCC from cloning the loop for a constant
  vec(in, out, n);
  for (int i = 0; i < kN; ++i)
    if (bitsOf(out[i]) != bitsOf(ref(in[i])))
      return false;
  return true;
}

/// Whether the vector code of `level` (Avx2: eight lanes, Avx512: sixteen)
/// may run: AMPC_CPU_SCALAR_MATH unset, the processor has AVX2 and FMA (the
/// code of both widths uses them), and it runs `level` with AMPC_CPU_ISA
/// allowing it.
bool vectorAllowed(cpuisa::Isa level) {
  if (getenv("AMPC_CPU_SCALAR_MATH"))
    return false;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         cpuisa::usable(level);
}
#endif

using ArrayFn = void (*)(const float *, float *, int64_t);

/// expN's, erfN's and tanhN's code at one vector width (null: libm per
/// element).
struct Width {
  int lanes;
  ArrayFn exp, erf, tanh;
};

const Width kLibm = {1, nullptr, nullptr, nullptr};

#if AMPC_VMATH_X86
/// A width's code where it may run and agrees with libm here, each
/// function on its own (erff only where the width's expf, which it calls,
/// agrees too); the width is used only where its expf agrees.
Width checked(int lanes, bool allowed, ArrayFn exp, ArrayFn erf, ArrayFn tanh) {
  Width w = {lanes, nullptr, nullptr, nullptr};
  if (!allowed || !agrees(exp, libmExp, -104.0f, 89.0f))
    return w;
  w.exp = exp;
  if (agrees(erf, libmErf, -7.0f, 7.0f))
    w.erf = erf;
  if (agrees(tanh, libmTanh, -12.0f, 12.0f))
    w.tanh = tanh;
  return w;
}

/// AMPC_CPU_ISA below avx2 rules the eight-lane code out (and so any).
const Width &avx2Width() {
  static const Width w =
      checked(8, vectorAllowed(cpuisa::Isa::Avx2), expAVX2, erfAVX2, tanhAVX2);
  return w;
}

/// AMPC_CPU_ISA below avx512_core rules the sixteen-lane code out.
const Width &avx512Width() {
  static const Width w =
      checked(16, vectorAllowed(cpuisa::Isa::Avx512), expAVX512, erfAVX512,
              tanhAVX512);
  return w;
}
#endif

/// The width in use: the widest whose expf agrees.
std::atomic<const Width *> &widthInUse() {
  static std::atomic<const Width *> w{[]() -> const Width * {
#if AMPC_VMATH_X86
    if (avx512Width().exp)
      return &avx512Width();
    if (avx2Width().exp)
      return &avx2Width();
#endif
    return &kLibm;
  }()};
  return w;
}

const Width &inUse() { return *widthInUse().load(std::memory_order_relaxed); }

} // namespace

bool vectorExp() { return inUse().exp != nullptr; }

bool vectorErf() { return inUse().erf != nullptr; }

bool vectorTanh() { return inUse().tanh != nullptr; }

int vectorLanes() { return inUse().lanes; }

bool useVectorLanes(int lanes) {
  const Width *w = nullptr;
  if (lanes == 1)
    w = &kLibm;
#if AMPC_VMATH_X86
  if (lanes == 8)
    w = &avx2Width();
  if (lanes == 16)
    w = &avx512Width();
#endif
  if (!w || (lanes > 1 && !w->exp))
    return false;
  widthInUse().store(w, std::memory_order_relaxed);
  return true;
}

void tanhN(const float *x, float *y, int64_t n) {
  if (ArrayFn fn = inUse().tanh)
    return fn(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = tanhf(x[i]);
}

void expN(const float *x, float *y, int64_t n) {
  if (ArrayFn fn = inUse().exp)
    return fn(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = expf(x[i]);
}

void erfN(const float *x, float *y, int64_t n) {
  if (ArrayFn fn = inUse().erf)
    return fn(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = erff(x[i]);
}

} // namespace cpukern
} // namespace ampc
