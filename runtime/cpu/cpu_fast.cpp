//===- cpu_fast.cpp - Fast paths of the CPU backend's data movement -------===//
//
// See cpu_fast.h. The vector code is compiled for its instruction set with
// target attributes and only called after a CPUID check, so the library still
// runs on x86-64 machines without F16C / AVX2 (and builds elsewhere).
//
//===----------------------------------------------------------------------===//
#include "cpu_fast.h"
#include "cpu_clones.h"
#include "cpu_conv.h"
#include "cpu_isa.h"
#include "cpu_lanes_avx2.h"
#include "cpu_pool.h"

#include "../src/half.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AMPC_CPU_X86 1
#include <immintrin.h>
#endif

namespace ampc {
namespace cpufast {
namespace {

bool scalarForced() {
  static const bool forced = getenv("AMPC_CPU_SCALAR_CONVERT") != nullptr;
  return forced;
}

#if AMPC_CPU_X86
__attribute__((target("avx,f16c"))) void f16ToF32F16C(const uint16_t *in,
                                                       float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i)
    out[i] = f16ToF32(in[i]);
}

__attribute__((target("avx2,f16c"))) void f32ToF16F16C(const float *in,
                                                        uint16_t *out,
                                                        int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     avx2lanes::f32ToF16(_mm256_loadu_ps(in + i)));
  for (; i < n; ++i)
    out[i] = f32ToF16(in[i]);
}

__attribute__((target("avx2"))) void bf16ToF32AVX2(const uint16_t *in,
                                                   float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(w));
  }
  for (; i < n; ++i)
    out[i] = bf16ToF32(in[i]);
}

__attribute__((target("avx2,f16c"))) void f32ToBf16AVX2(const float *in,
                                                         uint16_t *out,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     avx2lanes::f32ToBf16(_mm256_loadu_ps(in + i)));
  for (; i < n; ++i)
    out[i] = f32ToBf16(in[i]);
}

// The AVX-512 forms: the same instructions and integer arithmetic as the
// AVX2 forms above, sixteen lanes at a time, and the tail (under 16
// elements) as one masked vector instead of a scalar loop, which matters
// for the convolutions' short rows (16 and 32 elements).
// GCC 12's AVX-512 headers start the unmasked integer forms from a
// self-initialised "undefined" vector, which -Wmaybe-uninitialized reports
// where they are inlined; the value is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define AMPC_AVX512_CONVERT                                                    \
  __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

AMPC_AVX512_CONVERT inline __mmask16 tailMask(int64_t left) {
  return static_cast<__mmask16>((1u << left) - 1);
}

AMPC_AVX512_CONVERT void f16ToF32AVX512(const uint16_t *in, float *out,
                                        int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i));
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  if (i < n) {
    __mmask16 m = tailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, in + i)));
  }
}

/// Sixteen (or the masked) lanes of f32ToF16: VCVTPS2PH, with NaN lanes
/// given the scalar conversion's sign | 0x7e00.
AMPC_AVX512_CONVERT inline __m256i f32ToF16x16(__m512 v) {
  __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (nan) {
    __m512i bits = _mm512_castps_si512(v);
    __m512i q = _mm512_or_si512(
        _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x8000)),
        _mm512_set1_epi32(0x7e00));
    h = _mm256_mask_blend_epi16(nan, h, _mm512_cvtepi32_epi16(q));
  }
  return h;
}

AMPC_AVX512_CONVERT void f32ToF16AVX512(const float *in, uint16_t *out,
                                        int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        f32ToF16x16(_mm512_loadu_ps(in + i)));
  if (i < n) {
    __mmask16 m = tailMask(n - i);
    _mm256_mask_storeu_epi16(out + i, m,
                             f32ToF16x16(_mm512_maskz_loadu_ps(m, in + i)));
  }
}

AMPC_AVX512_CONVERT void bf16ToF32AVX512(const uint16_t *in, float *out,
                                         int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i));
    _mm512_storeu_si512(out + i,
                        _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  if (i < n) {
    __mmask16 m = tailMask(n - i);
    __m256i h = _mm256_maskz_loadu_epi16(m, in + i);
    _mm512_mask_storeu_epi32(out + i, m,
                             _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

/// Sixteen lanes of f32ToBf16 (the AVX2 form's arithmetic).
AMPC_AVX512_CONVERT inline __m256i f32ToBf16x16(__m512i x) {
  const __m512i absMask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, absMask), inf);
  __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(
          x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                              _mm512_and_si512(_mm512_srli_epi32(x, 16),
                                               _mm512_set1_epi32(1)))),
      16);
  __m512i nanv =
      _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
  // Values are < 2^16: the truncating narrow keeps them.
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, nanv));
}

AMPC_AVX512_CONVERT void f32ToBf16AVX512(const float *in, uint16_t *out,
                                         int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        f32ToBf16x16(_mm512_loadu_si512(in + i)));
  if (i < n) {
    __mmask16 m = tailMask(n - i);
    _mm256_mask_storeu_epi16(out + i, m,
                             f32ToBf16x16(_mm512_maskz_loadu_epi32(m, in + i)));
  }
}

// f32 -> bf16 with AVX512-BF16's VCVTNEPS2BF16: round to nearest even, and
// a NaN quietened to its top 16 bits | 0x40, as f32ToBf16. It differs on
// one class of inputs: it takes subnormal f32 inputs as zero (DAZ, whatever
// MXCSR says), where f32ToBf16 rounds them to bf16 subnormals; those lanes
// (rare: |x| < 2^-126) are redone with the integer arithmetic, so the result
// is f32ToBf16's bit for bit (test_cpu_fast.cpp checks subnormals, NaN
// payloads and every rounding case).
#define AMPC_AVX512BF16_CONVERT                                                \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,f16c")))

AMPC_AVX512BF16_CONVERT inline __m256i f32ToBf16x16Native(__m512i x) {
  __m256i r = reinterpret_cast<__m256i>(
      _mm512_cvtneps_pbh(_mm512_castsi512_ps(x)));
  __m512i a = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  // 0 < |x| < 2^-126, as unsigned |x| - 1 < 0x7fffff.
  __mmask16 sub = _mm512_cmplt_epu32_mask(
      _mm512_sub_epi32(a, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fffff));
  if (sub)
    r = _mm256_mask_blend_epi16(sub, r, f32ToBf16x16(x));
  return r;
}

AMPC_AVX512BF16_CONVERT void f32ToBf16AVX512BF16(const float *in,
                                                 uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        f32ToBf16x16Native(_mm512_loadu_si512(in + i)));
  if (i < n) {
    __mmask16 m = tailMask(n - i);
    _mm256_mask_storeu_epi16(
        out + i, m, f32ToBf16x16Native(_mm512_maskz_loadu_epi32(m, in + i)));
  }
}
#undef AMPC_AVX512BF16_CONVERT
#undef AMPC_AVX512_CONVERT
#pragma GCC diagnostic pop
#endif

void f16ToF32Scalar(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f16ToF32(in[i]);
}
void f32ToF16Scalar(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32ToF16(in[i]);
}
void bf16ToF32Scalar(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16ToF32(in[i]);
}
void f32ToBf16Scalar(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32ToBf16(in[i]);
}

/// One instruction set's four conversions.
struct Converters {
  void (*f16ToF32)(const uint16_t *, float *, int64_t);
  void (*f32ToF16)(const float *, uint16_t *, int64_t);
  void (*bf16ToF32)(const uint16_t *, float *, int64_t);
  void (*f32ToBf16)(const float *, uint16_t *, int64_t);
};

const Converters &convertersFor(ConvertIsa isa) {
  static const Converters scalar{f16ToF32Scalar, f32ToF16Scalar,
                                 bf16ToF32Scalar, f32ToBf16Scalar};
#if AMPC_CPU_X86
  static const Converters avx2{f16ToF32F16C, f32ToF16F16C, bf16ToF32AVX2,
                               f32ToBf16AVX2};
  static const Converters avx512{f16ToF32AVX512, f32ToF16AVX512,
                                 bf16ToF32AVX512, f32ToBf16AVX512};
  static const Converters avx512bf16{f16ToF32AVX512, f32ToF16AVX512,
                                     bf16ToF32AVX512, f32ToBf16AVX512BF16};
  if (isa == ConvertIsa::AVX512BF16)
    return avx512bf16;
  if (isa == ConvertIsa::AVX512)
    return avx512;
  if (isa == ConvertIsa::AVX2)
    return avx2;
#endif
  return scalar;
}

/// The default instruction set's conversions, chosen once at load.
const Converters &active() {
  static const Converters &c = convertersFor(convertIsa());
  return c;
}

} // namespace

bool convertSupported(ConvertIsa isa) {
#if AMPC_CPU_X86
  __builtin_cpu_init();
  switch (isa) {
  case ConvertIsa::Scalar:
    return true;
  case ConvertIsa::AVX2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  case ConvertIsa::AVX512:
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c");
  case ConvertIsa::AVX512BF16:
    return convertSupported(ConvertIsa::AVX512) &&
           static_cast<int>(cpuisa::hardware()) >=
               static_cast<int>(cpuisa::Isa::Avx512Bf16);
  }
  return false;
#else
  return isa == ConvertIsa::Scalar;
#endif
}

ConvertIsa convertIsa() {
  static const ConvertIsa isa = [] {
    if (scalarForced())
      return ConvertIsa::Scalar;
    // AMPC_CPU_CONVERT_ISA=scalar|avx2 caps the choice (for testing the
    // narrower paths on a wider machine); the widest supported one is used.
    ConvertIsa cap = ConvertIsa::AVX512BF16;
    if (const char *e = getenv("AMPC_CPU_CONVERT_ISA")) {
      if (strcmp(e, "scalar") == 0)
        cap = ConvertIsa::Scalar;
      else if (strcmp(e, "avx2") == 0)
        cap = ConvertIsa::AVX2;
      else if (strcmp(e, "avx512") == 0)
        cap = ConvertIsa::AVX512;
    }
    // AMPC_CPU_ISA caps every kernel family.
    auto allowed = [](ConvertIsa i) {
      switch (i) {
      case ConvertIsa::AVX512BF16:
        return cpuisa::usable(cpuisa::Isa::Avx512Bf16);
      case ConvertIsa::AVX512:
        return cpuisa::usable(cpuisa::Isa::Avx512);
      case ConvertIsa::AVX2:
        return static_cast<int>(cpuisa::cap()) >=
               static_cast<int>(cpuisa::Isa::Avx2);
      case ConvertIsa::Scalar:
        return true;
      }
      return false;
    };
    for (ConvertIsa i :
         {ConvertIsa::AVX512BF16, ConvertIsa::AVX512, ConvertIsa::AVX2})
      if (static_cast<int>(i) <= static_cast<int>(cap) &&
          convertSupported(i) && allowed(i))
        return i;
    return ConvertIsa::Scalar;
  }();
  return isa;
}

const char *convertIsaName(ConvertIsa isa) {
  switch (isa) {
  case ConvertIsa::Scalar:
    return "scalar";
  case ConvertIsa::AVX2:
    return "avx2";
  case ConvertIsa::AVX512:
    return "avx512";
  case ConvertIsa::AVX512BF16:
    return "avx512_bf16";
  }
  return "?";
}

bool haveF16C() { return convertIsa() != ConvertIsa::Scalar; }

bool haveAVX2() {
#if AMPC_CPU_X86
  static const bool have = !scalarForced() && __builtin_cpu_supports("avx2") &&
                           static_cast<int>(cpuisa::cap()) >=
                               static_cast<int>(cpuisa::Isa::Avx2);
  return have;
#else
  return false;
#endif
}

void f16ToF32N(const uint16_t *in, float *out, int64_t n) {
  active().f16ToF32(in, out, n);
}
void f32ToF16N(const float *in, uint16_t *out, int64_t n) {
  active().f32ToF16(in, out, n);
}
void bf16ToF32N(const uint16_t *in, float *out, int64_t n) {
  active().bf16ToF32(in, out, n);
}
void f32ToBf16N(const float *in, uint16_t *out, int64_t n) {
  active().f32ToBf16(in, out, n);
}

void f16ToF32With(ConvertIsa isa, const uint16_t *in, float *out, int64_t n) {
  convertersFor(isa).f16ToF32(in, out, n);
}
void f32ToF16With(ConvertIsa isa, const float *in, uint16_t *out, int64_t n) {
  convertersFor(isa).f32ToF16(in, out, n);
}
void bf16ToF32With(ConvertIsa isa, const uint16_t *in, float *out, int64_t n) {
  convertersFor(isa).bf16ToF32(in, out, n);
}
void f32ToBf16With(ConvertIsa isa, const float *in, uint16_t *out, int64_t n) {
  convertersFor(isa).f32ToBf16(in, out, n);
}

namespace {

#if AMPC_CPU_X86
/// dst[i * td + j] = src[i + j * ss] for i, j < 8: eight rows of src read
/// as vectors and transposed in registers (moves only, so the bits are
/// the elements').
__attribute__((target("avx"))) inline void
transpose8x8(uint32_t *dst, int64_t td, const uint32_t *src, int64_t ss) {
  const float *s = reinterpret_cast<const float *>(src);
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss),
         r2 = _mm256_loadu_ps(s + 2 * ss), r3 = _mm256_loadu_ps(s + 3 * ss),
         r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss),
         r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
         t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
         t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44),
         u1 = _mm256_shuffle_ps(t0, t2, 0xee),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44),
         u3 = _mm256_shuffle_ps(t1, t3, 0xee),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44),
         u5 = _mm256_shuffle_ps(t4, t6, 0xee),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44),
         u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  float *d = reinterpret_cast<float *>(dst);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + td, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * td, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * td, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * td, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * td, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * td, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * td, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/// The 8x8 blocks of [i0, i8) x [j0, j8) (multiples of 8).
__attribute__((target("avx"))) void
transposeBlocks(uint32_t *dst, int64_t td, const uint32_t *src, int64_t ss,
                int64_t i0, int64_t i8, int64_t j0, int64_t j8) {
  for (int64_t i = i0; i < i8; i += 8)
    for (int64_t j = j0; j < j8; j += 8)
      transpose8x8(dst + i * td + j, td, src + i + j * ss, ss);
}

/// The same for 2-byte elements (SSE2, part of x86-64): dst[i * td + j] =
/// src[i + j * ss] for i, j < 8.
inline void transpose8x8u16(uint16_t *dst, int64_t td, const uint16_t *src,
                            int64_t ss) {
  auto load = [&](int64_t j) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + j * ss));
  };
  __m128i r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3),
          r4 = load(4), r5 = load(5), r6 = load(6), r7 = load(7);
  // Pairs of rows interleaved, then pairs of pairs, then halves: column i
  // of the 8 rows ends up in one register.
  __m128i t0 = _mm_unpacklo_epi16(r0, r1), t1 = _mm_unpackhi_epi16(r0, r1),
          t2 = _mm_unpacklo_epi16(r2, r3), t3 = _mm_unpackhi_epi16(r2, r3),
          t4 = _mm_unpacklo_epi16(r4, r5), t5 = _mm_unpackhi_epi16(r4, r5),
          t6 = _mm_unpacklo_epi16(r6, r7), t7 = _mm_unpackhi_epi16(r6, r7);
  __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2),
          u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3),
          u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6),
          u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
  auto store = [&](int64_t i, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i * td), v);
  };
  store(0, _mm_unpacklo_epi64(u0, u4));
  store(1, _mm_unpackhi_epi64(u0, u4));
  store(2, _mm_unpacklo_epi64(u1, u5));
  store(3, _mm_unpackhi_epi64(u1, u5));
  store(4, _mm_unpacklo_epi64(u2, u6));
  store(5, _mm_unpackhi_epi64(u2, u6));
  store(6, _mm_unpacklo_epi64(u3, u7));
  store(7, _mm_unpackhi_epi64(u3, u7));
}

void transposeBlocks16(uint16_t *dst, int64_t td, const uint16_t *src,
                       int64_t ss, int64_t i0, int64_t i8, int64_t j0,
                       int64_t j8) {
  for (int64_t i = i0; i < i8; i += 8)
    for (int64_t j = j0; j < j8; j += 8)
      transpose8x8u16(dst + i * td + j, td, src + i + j * ss, ss);
}
#endif

/// dst[i * td + j] = src[i + j * ss] over [0, ni) x [0, nj): the 8x8
/// register blocks, then the edges element by element.
template <typename T>
void transposeRect(T *dst, int64_t td, const T *src, int64_t ss, int64_t ni,
                   int64_t nj) {
  int64_t i8 = 0, j8 = 0;
#if AMPC_CPU_X86
  if constexpr (sizeof(T) == 2) {
    i8 = ni / 8 * 8, j8 = nj / 8 * 8;
    transposeBlocks16(reinterpret_cast<uint16_t *>(dst), td,
                      reinterpret_cast<const uint16_t *>(src), ss, 0, i8, 0,
                      j8);
  } else if (haveAVX2()) {
    static_assert(sizeof(T) == 4, "2- or 4-byte elements");
    i8 = ni / 8 * 8, j8 = nj / 8 * 8;
    transposeBlocks(reinterpret_cast<uint32_t *>(dst), td,
                    reinterpret_cast<const uint32_t *>(src), ss, 0, i8, 0, j8);
  }
#endif
  for (int64_t i = 0; i < i8; ++i)
    for (int64_t j = j8; j < nj; ++j)
      dst[i * td + j] = src[i + j * ss];
  for (int64_t i = i8; i < ni; ++i)
    for (int64_t j = 0; j < nj; ++j)
      dst[i * td + j] = src[i + j * ss];
}

/// One [i0, i1) x [j0, j1) tile of a transpose-like copy; 4-byte elements
/// with dst contiguous in j and src contiguous in i go through 8x8
/// register transposes.
template <typename T>
void copyTile(T *__restrict dst, const T *__restrict src, int64_t i0,
              int64_t i1, int64_t j0, int64_t j1, int64_t td, int64_t sd,
              int64_t ts, int64_t ss) {
#if AMPC_CPU_X86
  if constexpr (sizeof(T) == 2) {
    if (sd == 1 && ts == 1) {
      transposeRect(dst + i0 * td + j0, td, src + i0 + j0 * ss, ss, i1 - i0,
                    j1 - j0);
      return;
    }
  }
  if constexpr (sizeof(T) == 4) {
    if (sd == 1 && ts == 1 && haveAVX2()) {
      int64_t i8 = i0 + (i1 - i0) / 8 * 8, j8 = j0 + (j1 - j0) / 8 * 8;
      transposeBlocks(reinterpret_cast<uint32_t *>(dst), td,
                      reinterpret_cast<const uint32_t *>(src), ss, i0, i8, j0,
                      j8);
      // The right edge, then the bottom edge.
      for (int64_t i = i0; i < i8; ++i)
        for (int64_t j = j8; j < j1; ++j)
          dst[i * td + j] = src[i + j * ss];
      for (int64_t i = i8; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j)
          dst[i * td + j] = src[i + j * ss];
      return;
    }
  }
#endif
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j)
      dst[i * td + j * sd] = src[i * ts + j * ss];
}

/// Operands 0 and 1's offsets at index r of the dims [0, end) of w other
/// than `skip` (row-major, the last of them fastest), with idx set to the
/// index.
void walkOffsets(const Walk &w, int end, int skip, int64_t r, int64_t *idx,
                 int64_t &o0, int64_t &o1) {
  o0 = o1 = 0;
  for (int d = end - 1; d >= 0; --d) {
    if (d == skip) {
      idx[d] = 0;
      continue;
    }
    idx[d] = r % w.shape[d];
    r /= w.shape[d];
    o0 += idx[d] * w.stride[0][d];
    o1 += idx[d] * w.stride[1][d];
  }
}

// Elements per pool item of a copy.
constexpr int64_t kCopyItem = 2 * cpupool::kItemElements;

template <typename T>
void copyRows(T *__restrict dst, const T *__restrict src, const Walk &w) {
  int last = w.rank - 1;
  int64_t len = w.shape[last];
  int64_t sd = w.stride[0][last], ss = w.stride[1][last];
  // Tile the last dim against the dim where src is contiguous, so a
  // transpose reads and writes whole cache lines.
  int tile = -1;
  if (ss != 1) {
    for (int d = last - 1; d >= 0; --d)
      if (w.stride[1][d] == 1 && w.shape[d] > 1) {
        tile = d;
        break;
      }
  }
  int64_t rows = 1;
  for (int d = 0; d < last; ++d)
    rows *= w.shape[d];
  if (tile < 0) {
    // Threads: fixed groups of rows.
    int64_t perItem =
        std::max<int64_t>(1, kCopyItem / std::max<int64_t>(len, 1));
    cpupool::forChunks(rows, perItem, [&](int64_t r0, int64_t r1) {
      int64_t idx[kMaxRank] = {};
      int64_t o0, o1;
      walkOffsets(w, last, -1, r0, idx, o0, o1);
      for (int64_t r = r0; r < r1; ++r) {
        if (sd == 1 && ss == 1 && len * sizeof(T) <= 512)
          cpuconv::copyShort(dst + o0, src + o1, len * sizeof(T)); // (cpugemm)
        else if (sd == 1 && ss == 1)
          memcpy(dst + o0, src + o1, len * sizeof(T));
        else
          for (int64_t j = 0; j < len; ++j)
            dst[o0 + j * sd] = src[o1 + j * ss];
        for (int d = last - 1; d >= 0; --d) {
          if (++idx[d] < w.shape[d]) {
            o0 += w.stride[0][d];
            o1 += w.stride[1][d];
            break;
          }
          o0 -= w.stride[0][d] * (w.shape[d] - 1);
          o1 -= w.stride[1][d] * (w.shape[d] - 1);
          idx[d] = 0;
        }
      }
    });
    return;
  }
  // Walk every dim but `tile` and `last`; move [tile x last] in 32x32 blocks.
  constexpr int64_t B = 32;
  int64_t tn = w.shape[tile];
  int64_t td = w.stride[0][tile], ts = w.stride[1][tile];
  int64_t outer = rows / tn;
  // Threads: items of whole (outer index, B rows of the tile dim) strips.
  int64_t strips = (tn + B - 1) / B;
  int64_t perItem =
      std::max<int64_t>(1, kCopyItem / std::max<int64_t>(B * len, 1));
  cpupool::forChunks(outer * strips, perItem, [&](int64_t s0, int64_t s1) {
    int64_t at[kMaxRank];
    for (int64_t s = s0; s < s1; ++s) {
      int64_t r = s / strips, i0 = s % strips * B;
      int64_t o0, o1;
      walkOffsets(w, last, tile, r, at, o0, o1);
      int64_t i1 = i0 + B < tn ? i0 + B : tn;
      for (int64_t j0 = 0; j0 < len; j0 += B) {
        int64_t j1 = j0 + B < len ? j0 + B : len;
        copyTile(dst + o0, src + o1, i0, i1, j0, j1, td, sd, ts, ss);
      }
    }
  });
}

} // namespace

bool stridedCopy(void *dst, const void *src, int64_t elemSize, const Walk &w) {
  if (w.rank == 0 || w.numel() == 0)
    return false;
  switch (elemSize) {
  case 4:
    copyRows(static_cast<uint32_t *>(dst), static_cast<const uint32_t *>(src),
             w);
    return true;
  case 2:
    copyRows(static_cast<uint16_t *>(dst), static_cast<const uint16_t *>(src),
             w);
    return true;
  case 8:
    copyRows(static_cast<uint64_t *>(dst), static_cast<const uint64_t *>(src),
             w);
    return true;
  case 1:
    copyRows(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), w);
    return true;
  default:
    return false;
  }
}

namespace {

bool isFloat(ampc_dtype dt) {
  return dt == AMPC_F32 || dt == AMPC_F16 || dt == AMPC_BF16;
}

void loadRow(Buf b, int64_t off, int64_t n, float *out) {
  if (b.dtype == AMPC_F32)
    memcpy(out, static_cast<const float *>(b.data) + off, n * sizeof(float));
  else if (b.dtype == AMPC_F16)
    f16ToF32N(static_cast<const uint16_t *>(b.data) + off, out, n);
  else
    bf16ToF32N(static_cast<const uint16_t *>(b.data) + off, out, n);
}

void storeRow(Buf b, int64_t off, int64_t n, const float *in) {
  if (b.dtype == AMPC_F32)
    memcpy(static_cast<float *>(b.data) + off, in, n * sizeof(float));
  else if (b.dtype == AMPC_F16)
    f32ToF16N(in, static_cast<uint16_t *>(b.data) + off, n);
  else
    f32ToBf16N(in, static_cast<uint16_t *>(b.data) + off, n);
}

} // namespace

void toChannelBlocks(Buf src, int64_t channels, int64_t spatial, int block,
                     float *dst) {
  // A tile of `kTile` positions of up to 16 of the block's channels is
  // widened into rows of `tile` (L1-sized), then transposed into dst's
  // [position][block] order, 8x8 at a time in AVX registers where the CPU
  // has AVX2.
  constexpr int64_t kTile = 256;
  thread_local float tile[16 * kTile];
  int64_t blocks = (channels + block - 1) / block;
  for (int64_t cb = 0; cb < blocks; ++cb)
    for (int64_t g0 = 0; g0 < block; g0 += 16) {
      int64_t c0 = cb * block + g0, gs = std::min<int64_t>(16, block - g0);
      for (int64_t s0 = 0; s0 < spatial; s0 += kTile) {
        int64_t ts = std::min(kTile, spatial - s0);
        for (int64_t c = 0; c < gs; ++c) {
          if (c0 + c < channels)
            loadRow(src, (c0 + c) * spatial + s0, ts, tile + c * kTile);
          else
            std::fill(tile + c * kTile, tile + c * kTile + ts, 0.0f);
        }
        transposeRect(dst + (cb * spatial + s0) * block + g0, block, tile,
                      kTile, ts, gs);
      }
    }
}

void toChannelBlocks16(const uint16_t *src, int64_t channels, int64_t spatial,
                       int block, uint16_t *dst) {
  // Straight from src's rows: each 8x8 block of (position, channel) is one
  // register transpose, the edges element by element.
  int64_t blocks = (channels + block - 1) / block;
  for (int64_t cb = 0; cb < blocks; ++cb) {
    int64_t c0 = cb * block, nc = std::min<int64_t>(block, channels - c0);
    uint16_t *out = dst + cb * spatial * block;
    transposeRect(out, block, src + c0 * spatial, spatial, spatial, nc);
    for (int64_t s = 0; s < spatial && nc < block; ++s)
      std::fill(out + s * block + nc, out + (s + 1) * block, uint16_t(0));
  }
}

void fromChannelBlocks(const float *src, int64_t channels, int64_t spatial,
                       int block, const float *bias, Buf dst) {
  // A tile of `kTile` positions of up to 16 of a block's channels is
  // transposed into rows of `tile` (8x8 in AVX registers where the CPU has
  // AVX2), biased, and stored row by row with the vector conversions.
  constexpr int64_t kTile = 256;
  thread_local float tile[16 * kTile];
  int64_t nc = 0;
  for (int64_t c0 = 0; c0 < channels; c0 += nc) {
    // Up to 16 channels [c0, c0 + nc) of one block.
    nc = std::min<int64_t>(16, channels - c0);
    if (block)
      nc = std::min<int64_t>(nc, block - c0 % block);
    for (int64_t s0 = 0; s0 < spatial; s0 += kTile) {
      int64_t ts = std::min(kTile, spatial - s0);
      const float *row = tile;
      int64_t ld = kTile;
      if (block) {
        const float *in =
            src + (c0 / block * spatial + s0) * block + c0 % block;
        transposeRect(tile, kTile, in, block, nc, ts);
      } else if (bias) {
        for (int64_t c = 0; c < nc; ++c)
          std::copy(src + (c0 + c) * spatial + s0,
                    src + (c0 + c) * spatial + s0 + ts, tile + c * kTile);
      } else {
        row = src + c0 * spatial + s0; // stored as it is
        ld = spatial;
      }
      for (int64_t c = 0; c < nc; ++c) {
        if (bias) { // (then the rows are tile's)
          float b = bias[c0 + c], *t = tile + c * kTile;
          for (int64_t s = 0; s < ts; ++s)
            t[s] += b;
        }
        storeRow(dst, (c0 + c) * spatial + s0, ts, row + c * ld);
      }
    }
  }
}

namespace {

/// One reduced position's step of a block of column sums: acc[c] += x[c]
/// in f64, each column on its own, so every width gives the same bits.
AMPC_ALWAYS_INLINE inline void
addColumnsLoop(const float *__restrict x, double *__restrict acc, int64_t n) {
  for (int64_t c = 0; c < n; ++c)
    acc[c] += x[c];
}

/// The column sums' loop per instruction set (cpu_clones.h).
struct ColumnLoops {
  void (*add)(const float *, double *, int64_t);
};

#define AMPC_COLUMN_LOOP_CLONES(SUFFIX, TARGET)                                \
  TARGET AMPC_FLATTEN void addColumns##SUFFIX(const float *x, double *acc,     \
                                              int64_t n) {                     \
    addColumnsLoop(x, acc, n);                                                 \
  }                                                                            \
  const ColumnLoops columnLoops##SUFFIX = {addColumns##SUFFIX};

AMPC_EACH_CLONE(AMPC_COLUMN_LOOP_CLONES)
AMPC_CLONE_SET(ColumnLoops, columnLoops, columnClones)

} // namespace

void useColumnLoopsForTesting(ConvertIsa isa) { columnClones().use(isa); }

bool reduceColumns(Buf yb, Buf xb, const Walk &outer, const Walk &inner,
                   bool mean) {
  if (!isFloat(yb.dtype) || !isFloat(xb.dtype))
    return false;
  // Applies when the reduced elements are strided (innermost inner stride
  // != 1) and the outputs are x-contiguous in their innermost dim: then a
  // block of adjacent outputs reads adjacent x elements at every reduced
  // position.
  if (inner.rank == 0 || outer.rank == 0)
    return false;
  int oLast = outer.rank - 1;
  if (inner.stride[1][inner.rank - 1] == 1 || outer.stride[1][oLast] != 1 ||
      outer.stride[0][oLast] != 1)
    return false;
  int64_t cols = outer.shape[oLast];
  int64_t count = inner.numel();
  if (cols < 2 || count == 0)
    return false;
  std::vector<int64_t> innerOff(static_cast<size_t>(count));
  {
    int64_t idx[kMaxRank] = {};
    int64_t o = 0;
    for (int64_t i = 0; i < count; ++i) {
      innerOff[i] = o;
      for (int d = inner.rank - 1; d >= 0; --d) {
        if (++idx[d] < inner.shape[d]) {
          o += inner.stride[1][d];
          break;
        }
        o -= inner.stride[1][d] * (inner.shape[d] - 1);
        idx[d] = 0;
      }
    }
  }
  constexpr int64_t B = 256;
  int64_t outerRows = outer.numel() / cols;
  int64_t blocks = (cols + B - 1) / B;
  // Threads: one block of B adjacent outputs per item (each output's sum
  // in the same order wherever it runs); small reductions stay on one.
  bool serial = outerRows * cols * count <= cpupool::kItemElements;
  auto block = [&](int64_t item) {
    double acc[B];
    float row[B], res[B];
    int64_t r = item / blocks, c0 = item % blocks * B;
    int64_t yo = 0, xo = 0;
    for (int d = oLast - 1; d >= 0; --d) {
      int64_t i = r % outer.shape[d];
      r /= outer.shape[d];
      yo += i * outer.stride[0][d];
      xo += i * outer.stride[1][d];
    }
    {
      int64_t nb = cols - c0 < B ? cols - c0 : B;
      for (int64_t c = 0; c < nb; ++c)
        acc[c] = 0.0;
      const ColumnLoops &loops = columnClones().get();
      for (int64_t i = 0; i < count; ++i) {
        if (xb.dtype == AMPC_F32) {
          loops.add(static_cast<const float *>(xb.data) + xo + c0 + innerOff[i],
                    acc, nb);
        } else {
          loadRow(xb, xo + c0 + innerOff[i], nb, row);
          loops.add(row, acc, nb);
        }
      }
      for (int64_t c = 0; c < nb; ++c) {
        double v = acc[c];
        if (mean)
          v /= static_cast<double>(count);
        res[c] = static_cast<float>(v);
      }
      storeRow(yb, yo + c0, nb, res);
    }
  };
  if (serial)
    for (int64_t i = 0; i < outerRows * blocks; ++i)
      block(i);
  else
    cpupool::parallelFor(outerRows * blocks, block);
  return true;
}

} // namespace cpufast
} // namespace ampc
