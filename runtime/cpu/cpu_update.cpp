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

#include <type_traits>

namespace ampc {
namespace cpuupdate {
namespace {

// A param, gradient or model copy element is a float (f32) or a uint16_t
// (bf16: f16 never reaches these loops).
AMPC_ALWAYS_INLINE inline float widen(float v) { return v; }
AMPC_ALWAYS_INLINE inline float widen(uint16_t h) { return bf16ToF32(h); }
AMPC_ALWAYS_INLINE inline void narrow(float &to, float v) { to = v; }
AMPC_ALWAYS_INLINE inline void narrow(uint16_t &to, float v) {
  to = f32ToBf16(v);
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

/// The loops of one instruction set.
struct UpdateLoops {
  void (*sgd)(Buf, Buf, float *, Buf, int64_t, const SgdScalars &);
  void (*adamw)(Buf, Buf, float *, float *, Buf, int64_t,
                const AdamwScalars &);
  bool (*anyNonfinite)(Buf, int64_t);
  bool (*unscale)(Buf, int64_t, float);
  void (*addSquares)(Buf, int64_t, double *);
};

#define AMPC_UPDATE_LOOP_CLONES(SUFFIX, TARGET)                                \
  TARGET AMPC_FLATTEN void sgd##SUFFIX(Buf p, Buf g, float *buf, Buf model,   \
                                       int64_t n, const SgdScalars &s) {      \
    withTypes(p, g, model, SgdCall{buf, n, s});                                \
  }                                                                            \
  TARGET AMPC_FLATTEN void adamw##SUFFIX(Buf p, Buf g, float *m, float *v,    \
                                         Buf model, int64_t n,                \
                                         const AdamwScalars &s) {             \
    withTypes(p, g, model, AdamwCall{m, v, n, s});                             \
  }                                                                            \
  TARGET AMPC_FLATTEN bool anyNonfinite##SUFFIX(Buf p, int64_t n) {           \
    return anyNonfiniteLoop(p, n);                                             \
  }                                                                            \
  TARGET AMPC_FLATTEN bool unscale##SUFFIX(Buf p, int64_t n, float inv) {     \
    return unscaleLoop(p, n, inv);                                             \
  }                                                                            \
  TARGET AMPC_FLATTEN void addSquares##SUFFIX(Buf p, int64_t n,                \
                                              double *lanes) {                 \
    addSquaresLoop(p, n, lanes);                                               \
  }                                                                            \
  const UpdateLoops updateLoops##SUFFIX = {                                    \
      sgd##SUFFIX, adamw##SUFFIX, anyNonfinite##SUFFIX, unscale##SUFFIX,       \
      addSquares##SUFFIX};

AMPC_EACH_CLONE(AMPC_UPDATE_LOOP_CLONES)
AMPC_CLONE_SET(UpdateLoops, updateLoops, updateClones)

const UpdateLoops &updateLoops() { return updateClones().get(); }

} // namespace

bool fused(ampc_dtype p, ampc_dtype g, bool hasModel, ampc_dtype model) {
  auto wide = [](ampc_dtype t) { return t == AMPC_F32 || t == AMPC_BF16; };
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
