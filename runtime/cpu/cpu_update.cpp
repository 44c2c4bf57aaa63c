//===- cpu_update.cpp - The optimizer's and loss scaler's CPU loops -------===//
//
// See cpu_update.h. This file is compiled with -fno-math-errno, so that
// the compiler vectorises adamwElement's sqrtf (correctly rounded either
// way; only errno, which nothing reads, differs).
//
//===----------------------------------------------------------------------===//
#include "cpu_update.h"

#include "../src/half.h"
#include "cpu_clones.h"
#include "cpu_lanes_avx2.h"

#include <math.h>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ampc {
namespace cpuupdate {
namespace {

// A param, gradient or model copy element is a float (f32), a uint16_t
// (bf16) or a Half (f16: params and gradients without a model copy, in the
// AVX2 clone only; see fused()).
struct Half {
  uint16_t bits;
};
AMPC_ALWAYS_INLINE inline float widen(float v) { return v; }
AMPC_ALWAYS_INLINE inline float widen(uint16_t h) { return bf16ToF32(h); }
AMPC_ALWAYS_INLINE inline float widen(Half h) { return f16ToF32(h.bits); }
AMPC_ALWAYS_INLINE inline void narrow(float &to, float v) { to = v; }
AMPC_ALWAYS_INLINE inline void narrow(uint16_t &to, float v) {
  to = f32ToBf16(v);
}
AMPC_ALWAYS_INLINE inline void narrow(Half &to, float v) {
  to.bits = f32ToF16(v);
}

#define AMPC_UPDATE_LOOP AMPC_ALWAYS_INLINE inline

// The arrays of one call never overlap (restrict), so the compiler need
// not check at run time before it vectorises.
template <typename P, typename G, bool Model, bool Momentum>
AMPC_UPDATE_LOOP void sgdRun(P *__restrict p, const G *__restrict g,
                             float *__restrict buf, uint16_t *__restrict model,
                             int64_t n, const SgdScalars &scalars) {
  const SgdScalars s = scalars;
  for (int64_t i = 0; i < n; ++i) {
    float v = widen(p[i]);
    sgdElement(v, widen(g[i]), Momentum ? buf + i : nullptr, s);
    narrow(p[i], v);
    if (Model)
      model[i] = f32ToBf16(v);
  }
}

template <typename P, typename G, bool Model>
AMPC_UPDATE_LOOP void adamwRun(P *__restrict p, const G *__restrict g,
                               float *__restrict m, float *__restrict v,
                               uint16_t *__restrict model, int64_t n,
                               const AdamwScalars &scalars) {
  const AdamwScalars s = scalars;
  for (int64_t i = 0; i < n; ++i) {
    float pv = widen(p[i]);
    adamwElement(pv, widen(g[i]), m[i], v[i], s);
    narrow(p[i], pv);
    if (Model)
      model[i] = f32ToBf16(pv);
  }
}

/// Runs `run.template go<P, G, Model>(p, g, model)` with the element types
/// of the dtypes (fused() has accepted them).
template <typename Run>
AMPC_UPDATE_LOOP void withTypes(Buf p, Buf g, Buf model, const Run &run) {
  auto *model16 = static_cast<uint16_t *>(model.data);
  auto byGrad = [&](auto *pp) {
    using P = std::remove_pointer_t<decltype(pp)>;
    if (g.dtype == AMPC_F32) {
      auto *gp = static_cast<const float *>(g.data);
      if (model16)
        run.template go<P, float, true>(pp, gp, model16);
      else
        run.template go<P, float, false>(pp, gp, model16);
    } else {
      auto *gp = static_cast<const uint16_t *>(g.data);
      if (model16)
        run.template go<P, uint16_t, true>(pp, gp, model16);
      else
        run.template go<P, uint16_t, false>(pp, gp, model16);
    }
  };
  if (p.dtype == AMPC_F32)
    byGrad(static_cast<float *>(p.data));
  else
    byGrad(static_cast<uint16_t *>(p.data));
}

struct SgdCall {
  float *buf;
  int64_t n;
  const SgdScalars &s;
  template <typename P, typename G, bool Model>
  AMPC_UPDATE_LOOP void go(P *p, const G *g, uint16_t *model) const {
    if (buf)
      sgdRun<P, G, Model, true>(p, g, buf, model, n, s);
    else
      sgdRun<P, G, Model, false>(p, g, buf, model, n, s);
  }
};

struct AdamwCall {
  float *m, *v;
  int64_t n;
  const AdamwScalars &s;
  template <typename P, typename G, bool Model>
  AMPC_UPDATE_LOOP void go(P *p, const G *g, uint16_t *model) const {
    adamwRun<P, G, Model>(p, g, m, v, model, n, s);
  }
};

#if AMPC_CPU_CLONES
// The AVX2 clone's loops for 16-bit params, gradients and model copies
// (bf16, and f16 ones with F16C's conversions), eight lanes at a time with
// intrinsics. GCC 12 vectorises sgdRun and adamwRun for bf16 too, but its
// rounding and 32-to-16-bit packing made the bf16 SGD step take three
// times the f32 one (BM_CpuSgd, 2^18 elements, one thread on a Zen 3: 128
// against 43 us) and was the main reason O3 trained slower than O1 there
// (bench/README.md, fourteenth run). These are the
// element code's operations in its order, each rounded (-ffp-contract=off
// keeps the products and sums apart), and the conversions' eight-lane
// roundings (cpu_lanes_avx2.h): the same bits. f32-only
// calls keep the compiler's loops, which were as fast. The other clones
// leave f16 data to the caller, which widens it into f32 scratch
// (fused()).
namespace avx2 {
#define AMPC_AVX2_INLINE AMPC_AVX2_TARGET AMPC_ALWAYS_INLINE inline

AMPC_AVX2_INLINE __m256 load8(const float *p) { return _mm256_loadu_ps(p); }
AMPC_AVX2_INLINE __m256 load8(const uint16_t *p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
AMPC_AVX2_INLINE __m256 load8(const Half *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
AMPC_AVX2_INLINE void store8(float *p, __m256 v) { _mm256_storeu_ps(p, v); }
AMPC_AVX2_INLINE void store8(Half *p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p), avx2lanes::f32ToF16(v));
}
AMPC_AVX2_INLINE void store8(uint16_t *p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p), avx2lanes::f32ToBf16(v));
}

/// sgdRun: sgdElement on eight lanes, the tail by the element loop.
template <typename P, typename G, bool Model, bool Momentum>
AMPC_AVX2_INLINE void sgdRun(P *__restrict p, const G *__restrict g,
                             float *__restrict buf, uint16_t *__restrict model,
                             int64_t n, const SgdScalars &scalars) {
  const SgdScalars s = scalars;
  const __m256 wd = _mm256_set1_ps(s.weightDecay),
               mom = _mm256_set1_ps(s.momentum),
               negLr = _mm256_set1_ps(-s.lr);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = load8(p + i), d = load8(g + i);
    if (s.hasWeightDecay)
      d = _mm256_add_ps(d, _mm256_mul_ps(wd, v));
    if (Momentum && s.hasMomentum) {
      __m256 m = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(buf + i), mom), d);
      _mm256_storeu_ps(buf + i, m);
      d = s.nesterov ? _mm256_add_ps(d, _mm256_mul_ps(mom, m)) : m;
    }
    v = _mm256_add_ps(v, _mm256_mul_ps(negLr, d));
    store8(p + i, v);
    if (Model)
      store8(model + i, v);
  }
  cpuupdate::sgdRun<P, G, Model, Momentum>(p + i, g + i,
                                           Momentum ? buf + i : buf,
                                           Model ? model + i : model, n - i, s);
}

/// adamwRun: adamwElement on eight lanes, the tail by the element loop.
template <typename P, typename G, bool Model>
AMPC_AVX2_INLINE void adamwRun(P *__restrict p, const G *__restrict g,
                               float *__restrict m, float *__restrict v,
                               uint16_t *__restrict model, int64_t n,
                               const AdamwScalars &scalars) {
  const AdamwScalars s = scalars;
  const bool lerp = fabsf(s.oneMinusBeta1) < 0.5f;
  const __m256 decay = _mm256_set1_ps(s.decay),
               w = _mm256_set1_ps(s.oneMinusBeta1),
               oneMinusW = _mm256_set1_ps(1.0f - s.oneMinusBeta1),
               beta2 = _mm256_set1_ps(s.beta2),
               oneMinusBeta2 = _mm256_set1_ps(s.oneMinusBeta2),
               negStep = _mm256_set1_ps(s.negStepSize),
               bc2Sqrt = _mm256_set1_ps(s.bc2Sqrt), eps = _mm256_set1_ps(s.eps);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pv = _mm256_mul_ps(load8(p + i), decay), grad = load8(g + i);
    __m256 mv = _mm256_loadu_ps(m + i), diff = _mm256_sub_ps(grad, mv);
    mv = lerp ? _mm256_add_ps(mv, _mm256_mul_ps(w, diff))
              : _mm256_sub_ps(grad, _mm256_mul_ps(diff, oneMinusW));
    __m256 vv = _mm256_add_ps(
        _mm256_mul_ps(_mm256_loadu_ps(v + i), beta2),
        _mm256_mul_ps(_mm256_mul_ps(oneMinusBeta2, grad), grad));
    __m256 denom =
        _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vv), bc2Sqrt), eps);
    pv = _mm256_add_ps(pv, _mm256_mul_ps(negStep, _mm256_div_ps(mv, denom)));
    _mm256_storeu_ps(m + i, mv);
    _mm256_storeu_ps(v + i, vv);
    store8(p + i, pv);
    if (Model)
      store8(model + i, pv);
  }
  cpuupdate::adamwRun<P, G, Model>(p + i, g + i, m + i, v + i,
                                   Model ? model + i : model, n - i, s);
}

struct SgdCall {
  float *buf;
  int64_t n;
  const SgdScalars &s;
  template <typename P, typename G, bool Model>
  AMPC_AVX2_INLINE void go(P *p, const G *g, uint16_t *model) const {
    if (std::is_same<P, float>::value && std::is_same<G, float>::value &&
        !Model)
      cpuupdate::SgdCall{buf, n, s}.go<P, G, Model>(p, g, model);
    else if (buf)
      avx2::sgdRun<P, G, Model, true>(p, g, buf, model, n, s);
    else
      avx2::sgdRun<P, G, Model, false>(p, g, buf, model, n, s);
  }
};

struct AdamwCall {
  float *m, *v;
  int64_t n;
  const AdamwScalars &s;
  template <typename P, typename G, bool Model>
  AMPC_AVX2_INLINE void go(P *p, const G *g, uint16_t *model) const {
    if (std::is_same<P, float>::value && std::is_same<G, float>::value &&
        !Model)
      cpuupdate::adamwRun<P, G, Model>(p, g, m, v, model, n, s);
    else
      avx2::adamwRun<P, G, Model>(p, g, m, v, model, n, s);
  }
};

/// withTypes under the AVX2 target: GCC inlines these loops only into
/// functions of that target, which withTypes' lambda is not.
template <typename Run>
AMPC_AVX2_INLINE void withTypes(Buf p, Buf g, Buf model, const Run &run) {
  if (p.dtype == AMPC_F16 || g.dtype == AMPC_F16) {
    // f16 with f16 or f32, no model copy (fused()).
    auto *pHalf = static_cast<Half *>(p.data);
    auto *gHalf = static_cast<const Half *>(g.data);
    if (p.dtype == AMPC_F16 && g.dtype == AMPC_F16)
      run.template go<Half, Half, false>(pHalf, gHalf, nullptr);
    else if (p.dtype == AMPC_F16)
      run.template go<Half, float, false>(
          pHalf, static_cast<const float *>(g.data), nullptr);
    else
      run.template go<float, Half, false>(static_cast<float *>(p.data), gHalf,
                                          nullptr);
    return;
  }
  auto *model16 = static_cast<uint16_t *>(model.data);
  auto *p32 = static_cast<float *>(p.data);
  auto *p16 = static_cast<uint16_t *>(p.data);
  auto *g32 = static_cast<const float *>(g.data);
  auto *g16 = static_cast<const uint16_t *>(g.data);
  bool pWide = p.dtype == AMPC_F32, gWide = g.dtype == AMPC_F32;
  if (pWide && gWide)
    model16 ? run.template go<float, float, true>(p32, g32, model16)
            : run.template go<float, float, false>(p32, g32, model16);
  else if (pWide)
    model16 ? run.template go<float, uint16_t, true>(p32, g16, model16)
            : run.template go<float, uint16_t, false>(p32, g16, model16);
  else if (gWide)
    model16 ? run.template go<uint16_t, float, true>(p16, g32, model16)
            : run.template go<uint16_t, float, false>(p16, g32, model16);
  else
    model16 ? run.template go<uint16_t, uint16_t, true>(p16, g16, model16)
            : run.template go<uint16_t, uint16_t, false>(p16, g16, model16);
}
constexpr bool kF16 = true;
#undef AMPC_AVX2_INLINE
} // namespace avx2
#endif // AMPC_CPU_CLONES

/// Whether any of the n patterns, sign bit cleared, is at least `limit`
/// (the all-ones exponent): a max, which the compiler vectorises.
template <typename T>
AMPC_UPDATE_LOOP bool anyAtLeast(const T *__restrict p, int64_t n, T absMask,
                                 T limit) {
  T top = 0;
  for (int64_t i = 0; i < n; ++i) {
    T a = static_cast<T>(p[i] & absMask);
    top = a > top ? a : top;
  }
  return top >= limit;
}

AMPC_UPDATE_LOOP bool anyNonfiniteLoop(Buf p, int64_t n) {
  if (p.dtype == AMPC_F32)
    return anyAtLeast(static_cast<const uint32_t *>(p.data), n, 0x7fffffffu,
                      0x7f800000u);
  return anyAtLeast(static_cast<const uint16_t *>(p.data), n,
                    uint16_t(0x7fff),
                    uint16_t(p.dtype == AMPC_F16 ? 0x7c00 : 0x7f80));
}

/// The check on each value before its multiply, then the multiply (and for
/// bf16 the rounding back).
template <typename T>
AMPC_UPDATE_LOOP bool unscaleRun(T *__restrict p, int64_t n, float inv) {
  uint32_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = widen(p[i]);
    uint32_t a = floatBits(v) & 0x7fffffffu;
    top = a > top ? a : top;
    narrow(p[i], v * inv);
  }
  return top >= 0x7f800000u;
}

AMPC_UPDATE_LOOP bool unscaleLoop(Buf p, int64_t n, float inv) {
  if (p.dtype == AMPC_F32)
    return unscaleRun(static_cast<float *>(p.data), n, inv);
  return unscaleRun(static_cast<uint16_t *>(p.data), n, inv);
}

#if AMPC_CPU_CLONES
namespace avx2 {
/// unscaleLoop in the AVX2 clone: bf16 eight lanes at a time, the same
/// check on each value before its multiply and the same rounding (f32
/// keeps the compiler's loop, which was as fast).
AMPC_AVX2_TARGET AMPC_ALWAYS_INLINE inline bool unscaleLoop(Buf p, int64_t n,
                                                           float inv) {
  if (p.dtype != AMPC_BF16)
    return cpuupdate::unscaleLoop(p, n, inv);
  auto *h = static_cast<uint16_t *>(p.data);
  const __m256 factor = _mm256_set1_ps(inv);
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  __m256i top = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = load8(h + i);
    top = _mm256_max_epu32(
        top, _mm256_and_si256(_mm256_castps_si256(v), absMask));
    store8(h + i, _mm256_mul_ps(v, factor));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), top);
  bool found = cpuupdate::unscaleRun(h + i, n - i, inv);
  for (uint32_t lane : lanes)
    found |= lane >= 0x7f800000u;
  return found;
}
} // namespace avx2
#endif // AMPC_CPU_CLONES

AMPC_ALWAYS_INLINE inline double widenF64(float v) { return v; }
AMPC_ALWAYS_INLINE inline double widenF64(uint16_t h) { return bf16ToF32(h); }
AMPC_ALWAYS_INLINE inline double widenF64(double v) { return v; }

/// Sixteen independent f64 chains, one per lane, kept in registers: the
/// compiler vectorises the lane loop (2 zmm, 4 ymm or 8 xmm) and the lanes
/// are the same adds whatever the width. Only the last partial group
/// leaves lanes untouched.
template <typename T>
AMPC_UPDATE_LOOP void addSquaresRun(const T *__restrict p, int64_t n,
                                    double *__restrict lanes) {
  double s[kSquareLanes];
  for (int j = 0; j < kSquareLanes; ++j)
    s[j] = lanes[j];
  int64_t i = 0;
  for (; i + kSquareLanes <= n; i += kSquareLanes)
    for (int j = 0; j < kSquareLanes; ++j) {
      double v = widenF64(p[i + j]);
      s[j] += v * v;
    }
  for (int j = 0; i + j < n; ++j) {
    double v = widenF64(p[i + j]);
    s[j] += v * v;
  }
  for (int j = 0; j < kSquareLanes; ++j)
    lanes[j] = s[j];
}

AMPC_UPDATE_LOOP void addSquaresLoop(Buf p, int64_t n, double *lanes) {
  if (p.dtype == AMPC_F32)
    addSquaresRun(static_cast<const float *>(p.data), n, lanes);
  else if (p.dtype == AMPC_F64)
    addSquaresRun(static_cast<const double *>(p.data), n, lanes);
  else
    addSquaresRun(static_cast<const uint16_t *>(p.data), n, lanes);
}

// Each clone's type dispatch and SGD, AdamW and unscale loops: the element
// loops, hand-written ones for AVX2 (above).
namespace generic {
using cpuupdate::AdamwCall;
using cpuupdate::SgdCall;
using cpuupdate::unscaleLoop;
using cpuupdate::withTypes;
constexpr bool kF16 = false;
} // namespace generic
namespace cloneBase = generic;
#if AMPC_CPU_CLONES
namespace cloneAVX2 = avx2;
namespace cloneAVX512 = generic;
#endif

/// The loops of one instruction set.
struct UpdateLoops {
  void (*sgd)(Buf, Buf, float *, Buf, int64_t, const SgdScalars &);
  void (*adamw)(Buf, Buf, float *, float *, Buf, int64_t,
                const AdamwScalars &);
  bool (*anyNonfinite)(Buf, int64_t);
  bool (*unscale)(Buf, int64_t, float);
  void (*addSquares)(Buf, int64_t, double *);
  /// Whether sgd and adamw take f16 params and gradients (fused()).
  bool f16;
};

#define AMPC_UPDATE_LOOP_CLONES(SUFFIX, TARGET)                                \
  TARGET AMPC_FLATTEN void sgd##SUFFIX(Buf p, Buf g, float *buf, Buf model,   \
                                       int64_t n, const SgdScalars &s) {      \
    clone##SUFFIX::withTypes(p, g, model, clone##SUFFIX::SgdCall{buf, n, s});  \
  }                                                                            \
  TARGET AMPC_FLATTEN void adamw##SUFFIX(Buf p, Buf g, float *m, float *v,    \
                                         Buf model, int64_t n,                \
                                         const AdamwScalars &s) {             \
    clone##SUFFIX::withTypes(p, g, model,                                      \
                             clone##SUFFIX::AdamwCall{m, v, n, s});           \
  }                                                                            \
  TARGET AMPC_FLATTEN bool anyNonfinite##SUFFIX(Buf p, int64_t n) {           \
    return anyNonfiniteLoop(p, n);                                             \
  }                                                                            \
  TARGET AMPC_FLATTEN bool unscale##SUFFIX(Buf p, int64_t n, float inv) {     \
    return clone##SUFFIX::unscaleLoop(p, n, inv);                              \
  }                                                                            \
  TARGET AMPC_FLATTEN void addSquares##SUFFIX(Buf p, int64_t n,                \
                                              double *lanes) {                 \
    addSquaresLoop(p, n, lanes);                                               \
  }                                                                            \
  const UpdateLoops updateLoops##SUFFIX = {                                    \
      sgd##SUFFIX,        adamw##SUFFIX,      anyNonfinite##SUFFIX,            \
      unscale##SUFFIX,    addSquares##SUFFIX, clone##SUFFIX::kF16};

AMPC_EACH_CLONE(AMPC_UPDATE_LOOP_CLONES)
AMPC_CLONE_SET(UpdateLoops, updateLoops, updateClones)

const UpdateLoops &updateLoops() { return updateClones().get(); }

} // namespace

bool fused(ampc_dtype p, ampc_dtype g, bool hasModel, ampc_dtype model) {
  auto wide = [](ampc_dtype t) { return t == AMPC_F32 || t == AMPC_BF16; };
  auto half = [](ampc_dtype t) { return t == AMPC_F32 || t == AMPC_F16; };
  if (p == AMPC_F16 || g == AMPC_F16)
    return half(p) && half(g) && !hasModel && updateLoops().f16;
  return wide(p) && wide(g) && (!hasModel || model == AMPC_BF16);
}

void sgd(Buf p, Buf g, float *buf, Buf model, int64_t n,
         const SgdScalars &s) {
  updateLoops().sgd(p, g, buf, model, n, s);
}

void adamw(Buf p, Buf g, float *m, float *v, Buf model, int64_t n,
           const AdamwScalars &s) {
  updateLoops().adamw(p, g, m, v, model, n, s);
}

bool anyNonfinite(Buf p, int64_t n) {
  return updateLoops().anyNonfinite(p, n);
}

bool unscale(Buf p, int64_t n, float inv) {
  return updateLoops().unscale(p, n, inv);
}

void addSquares(Buf p, int64_t n, double *lanes) {
  updateLoops().addSquares(p, n, lanes);
}

void useUpdateLoopsForTesting(cpufast::ConvertIsa isa) {
  updateClones().use(isa);
}

} // namespace cpuupdate
} // namespace ampc
