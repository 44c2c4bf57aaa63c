//===- cpu_directconv.cpp - Direct 2-D convolutions of the CPU backend ----===//
//
// See cpu_directconv.h. Each path computes, for every output element, the
// same chain of fused multiply-adds (_mm512_fmadd_ps / _mm256_fmadd_ps /
// fmaf, all one rounding per term) in the same order; the paths differ only
// in how many elements they advance at once.
//
//===----------------------------------------------------------------------===//
#include "cpu_directconv.h"
#include "cpu_isa.h"

#include "cpu_conv.h"
#include "cpu_fast.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ampc {
namespace cpudirect {
namespace {

/// Output channels per block of the forward and backward-x kernels.
constexpr int64_t kOB = 8;
/// Widest column tile of any path (AVX-512: 3 vectors of 16); wide rows are
/// rounded up to it and packed buffers end in kSlack zero floats, so a tile
/// past the last column reads and writes inside the buffers.
constexpr int64_t kTile = 48;
constexpr int64_t kSlack = 64;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

bool detect(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
  case Isa::Scalar:
    return true;
  case Isa::AVX2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case Isa::AVX512:
    return __builtin_cpu_supports("avx512f");
  }
  return false;
}

const bool kHave[3] = {true, detect(Isa::AVX2), detect(Isa::AVX512)};

Isa pickDefault() {
  // AMPC_CPU_ISA (cpu_isa.h) caps every kernel family of the backend.
  bool avx512 = kHave[2] && cpuisa::usable(cpuisa::Isa::Avx512);
  bool avx2 = kHave[1] && cpuisa::usable(cpuisa::Isa::Avx2);
  Isa best = avx512 ? Isa::AVX512 : (avx2 ? Isa::AVX2 : Isa::Scalar);
  const char *env = getenv("AMPC_CPU_CONV_ISA");
  if (!env)
    return best;
  Isa want = best;
  if (!strcmp(env, "scalar"))
    want = Isa::Scalar;
  else if (!strcmp(env, "avx2"))
    want = Isa::AVX2;
  else if (!strcmp(env, "avx512"))
    want = Isa::AVX512;
  return static_cast<int>(want) <= static_cast<int>(best) ? want : best;
}

//===----------------------------------------------------------------------===//
// The correlation core of the forward and backward-x kernels:
//   out[r, q] = chain over ci in [0, nci), then t in [0, nt), of
//               wpk[(ci * nt + t) * 8 + r] * in[ci * inStride + off[t] + q]
// for the 8 rows r of one block and every column q < nq (tiles past nq are
// computed into the slack).
//===----------------------------------------------------------------------===//

struct Corr {
  const float *in;
  int64_t inStride, nci;
  const int64_t *off;
  int64_t nt;
  const float *wpk; // this block's [nci][nt][8]
  float *out;       // [8][outStride]
  int64_t outStride, nq;
};

void corrScalar(const Corr &k) {
  for (int64_t r = 0; r < kOB; ++r)
    for (int64_t q = 0; q < k.nq; ++q) {
      float acc = 0.0f;
      for (int64_t ci = 0; ci < k.nci; ++ci) {
        const float *in = k.in + ci * k.inStride + q;
        const float *wv = k.wpk + ci * k.nt * kOB + r;
        for (int64_t t = 0; t < k.nt; ++t)
          acc = std::fmaf(wv[t * kOB], in[k.off[t]], acc);
      }
      k.out[r * k.outStride + q] = acc;
    }
}

__attribute__((target("avx2,fma"))) void corrAVX2(const Corr &k) {
  for (int64_t q0 = 0; q0 < k.nq; q0 += 8) {
    __m256 acc[kOB];
    for (int r = 0; r < kOB; ++r)
      acc[r] = _mm256_setzero_ps();
    for (int64_t ci = 0; ci < k.nci; ++ci) {
      const float *in = k.in + ci * k.inStride + q0;
      const float *wv = k.wpk + ci * k.nt * kOB;
      for (int64_t t = 0; t < k.nt; ++t, wv += kOB) {
        __m256 x = _mm256_loadu_ps(in + k.off[t]);
        for (int r = 0; r < kOB; ++r)
          acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(wv + r), x, acc[r]);
      }
    }
    for (int r = 0; r < kOB; ++r)
      _mm256_storeu_ps(k.out + r * k.outStride + q0, acc[r]);
  }
}

template <int NV>
__attribute__((target("avx512f"))) void corrTile512(const Corr &k, int64_t q0) {
  __m512 acc[kOB][NV];
  for (int r = 0; r < kOB; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_setzero_ps();
  for (int64_t ci = 0; ci < k.nci; ++ci) {
    const float *in = k.in + ci * k.inStride + q0;
    const float *wv = k.wpk + ci * k.nt * kOB;
    for (int64_t t = 0; t < k.nt; ++t, wv += kOB) {
      const float *p = in + k.off[t];
      __m512 x[NV];
      for (int v = 0; v < NV; ++v)
        x[v] = _mm512_loadu_ps(p + 16 * v);
      for (int r = 0; r < kOB; ++r) {
        __m512 b = _mm512_set1_ps(wv[r]);
        for (int v = 0; v < NV; ++v)
          acc[r][v] = _mm512_fmadd_ps(b, x[v], acc[r][v]);
      }
    }
  }
  for (int r = 0; r < kOB; ++r)
    for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(k.out + r * k.outStride + q0 + 16 * v, acc[r][v]);
}

__attribute__((target("avx512f"))) void corrAVX512(const Corr &k) {
  int64_t q0 = 0;
  for (; q0 + 48 <= k.nq; q0 += 48)
    corrTile512<3>(k, q0);
  // The last columns: the narrowest tile that covers them.
  if (k.nq - q0 > 32)
    corrTile512<3>(k, q0);
  else if (k.nq - q0 > 16)
    corrTile512<2>(k, q0);
  else if (k.nq - q0 > 0)
    corrTile512<1>(k, q0);
}

void corr(const Corr &k, Isa isa) {
  if (isa == Isa::AVX512)
    corrAVX512(k);
  else if (isa == Isa::AVX2)
    corrAVX2(k);
  else
    corrScalar(k);
}

//===----------------------------------------------------------------------===//
// The backward-weight core: for one block of OBW output channels, a group of
// TG taps and one vector of channels,
//   acc[r][t][c] = chain over (oy, ox) of dy_r[oy, ox] * xT[(off[t] + oy * wj
//                  + ox) * cp + c]
// continuing from the accumulator's value.
//===----------------------------------------------------------------------===//

struct WTile {
  const float *xT; // at the channel vector
  int64_t cp;
  const int64_t *off;     // TG tap offsets (positions)
  const float *const *dy; // OBW rows [oh * ow]
  int64_t oh, ow, wj;
  float *acc; // at (first row, first tap, channel vector)
  int64_t accRow, accTap;
};

void wtileScalar(const WTile &k, int tg, int obw, int lanes) {
  for (int r = 0; r < obw; ++r)
    for (int t = 0; t < tg; ++t)
      for (int c = 0; c < lanes; ++c) {
        float a = k.acc[r * k.accRow + t * k.accTap + c];
        for (int64_t oy = 0; oy < k.oh; ++oy)
          for (int64_t ox = 0; ox < k.ow; ++ox)
            a = std::fmaf(k.dy[r][oy * k.ow + ox],
                          k.xT[(k.off[t] + oy * k.wj + ox) * k.cp + c], a);
        k.acc[r * k.accRow + t * k.accTap + c] = a;
      }
}

template <int TG, int OBW>
__attribute__((target("avx2,fma"))) void wtileAVX2(const WTile &k) {
  __m256 a[OBW][TG];
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < TG; ++t)
      a[r][t] = _mm256_loadu_ps(k.acc + r * k.accRow + t * k.accTap);
  for (int64_t oy = 0; oy < k.oh; ++oy)
    for (int64_t ox = 0; ox < k.ow; ++ox) {
      int64_t pos = oy * k.wj + ox, pix = oy * k.ow + ox;
      __m256 d[OBW];
      for (int r = 0; r < OBW; ++r)
        d[r] = _mm256_broadcast_ss(k.dy[r] + pix);
      for (int t = 0; t < TG; ++t) {
        __m256 x = _mm256_loadu_ps(k.xT + (k.off[t] + pos) * k.cp);
        for (int r = 0; r < OBW; ++r)
          a[r][t] = _mm256_fmadd_ps(d[r], x, a[r][t]);
      }
    }
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < TG; ++t)
      _mm256_storeu_ps(k.acc + r * k.accRow + t * k.accTap, a[r][t]);
}

template <int TG, int OBW>
__attribute__((target("avx512f"))) void wtileAVX512(const WTile &k) {
  __m512 a[OBW][TG];
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < TG; ++t)
      a[r][t] = _mm512_loadu_ps(k.acc + r * k.accRow + t * k.accTap);
  for (int64_t oy = 0; oy < k.oh; ++oy)
    for (int64_t ox = 0; ox < k.ow; ++ox) {
      int64_t pos = oy * k.wj + ox, pix = oy * k.ow + ox;
      __m512 d[OBW];
      for (int r = 0; r < OBW; ++r)
        d[r] = _mm512_set1_ps(k.dy[r][pix]);
      for (int t = 0; t < TG; ++t) {
        __m512 x = _mm512_loadu_ps(k.xT + (k.off[t] + pos) * k.cp);
        for (int r = 0; r < OBW; ++r)
          a[r][t] = _mm512_fmadd_ps(d[r], x, a[r][t]);
      }
    }
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < TG; ++t)
      _mm512_storeu_ps(k.acc + r * k.accRow + t * k.accTap, a[r][t]);
}

/// wtileAVX512<9, OBW> for a 3x3 kernel whose column taps reuse each
/// other's vectors from pixel to pixel. Slide 1 (stride and dilation 1 along
/// the width: off[3 ky + kx] = off[3 ky] + kx): tap kx at pixel ox reads what
/// tap kx + 1 read at ox - 1, one new load per kernel row and pixel. Slide 2
/// (stride 2, dilation 1: taps 0 and 2 in one column phase, off[3 ky + 2] =
/// off[3 ky] + 1): tap 0 at ox reads what tap 2 read at ox - 1, two new
/// loads. The same terms in the same order as wtileAVX512.
template <int OBW, int Slide>
__attribute__((target("avx512f"))) void wtile3x3AVX512(const WTile &k) {
  __m512 a[OBW][9];
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < 9; ++t)
      a[r][t] = _mm512_loadu_ps(k.acc + r * k.accRow + t * k.accTap);
  const int64_t cp = k.cp;
  for (int64_t oy = 0; oy < k.oh; ++oy) {
    const float *row[3][3];
    __m512 x[3][3];
    for (int ky = 0; ky < 3; ++ky) {
      for (int kx = 0; kx < 3; ++kx)
        row[ky][kx] = k.xT + (k.off[3 * ky + kx] + oy * k.wj) * cp;
      x[ky][0] = _mm512_loadu_ps(row[ky][0]);
      if (Slide == 1)
        x[ky][1] = _mm512_loadu_ps(row[ky][1]);
    }
    const float *dyRow[OBW];
    for (int r = 0; r < OBW; ++r)
      dyRow[r] = k.dy[r] + oy * k.ow;
    for (int64_t ox = 0; ox < k.ow; ++ox) {
      for (int ky = 0; ky < 3; ++ky) {
        if (Slide == 2)
          x[ky][1] = _mm512_loadu_ps(row[ky][1] + ox * cp);
        x[ky][2] = _mm512_loadu_ps(row[ky][2] + ox * cp);
      }
      for (int r = 0; r < OBW; ++r) {
        __m512 d = _mm512_set1_ps(dyRow[r][ox]);
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx)
            a[r][3 * ky + kx] =
                _mm512_fmadd_ps(d, x[ky][kx], a[r][3 * ky + kx]);
      }
      for (int ky = 0; ky < 3; ++ky) {
        if (Slide == 1) {
          x[ky][0] = x[ky][1];
          x[ky][1] = x[ky][2];
        } else {
          x[ky][0] = x[ky][2];
        }
      }
    }
  }
  for (int r = 0; r < OBW; ++r)
    for (int t = 0; t < 9; ++t)
      _mm512_storeu_ps(k.acc + r * k.accRow + t * k.accTap, a[r][t]);
}

/// Output channels per backward-weight block: as many accumulators as the
/// registers hold (AVX-512 32 registers, AVX2 16) for a group of tg taps.
int obwFor(Isa isa, int64_t tg) {
  if (isa == Isa::AVX512)
    return tg >= 4 ? 2 : 8;
  if (isa == Isa::AVX2)
    return tg >= 4 ? 1 : 4;
  return 1;
}

#define AMPC_WTILE_CASES(FN, OBW)                                              \
  switch (tg) {                                                                \
  case 1:                                                                      \
    return FN<1, OBW>(k);                                                      \
  case 2:                                                                      \
    return FN<2, OBW>(k);                                                      \
  case 3:                                                                      \
    return FN<3, OBW>(k);                                                      \
  case 4:                                                                      \
    return FN<4, OBW>(k);                                                      \
  case 5:                                                                      \
    return FN<5, OBW>(k);                                                      \
  case 6:                                                                      \
    return FN<6, OBW>(k);                                                      \
  case 7:                                                                      \
    return FN<7, OBW>(k);                                                      \
  case 8:                                                                      \
    return FN<8, OBW>(k);                                                      \
  default:                                                                     \
    return FN<9, OBW>(k);                                                      \
  }

void wtile(const WTile &k, Isa isa, int tg, int obw, int slide) {
  if (isa == Isa::AVX512 && slide == 1 && tg == 9 && obw == 2)
    return wtile3x3AVX512<2, 1>(k);
  if (isa == Isa::AVX512 && slide == 2 && tg == 9 && obw == 2)
    return wtile3x3AVX512<2, 2>(k);
  if (isa == Isa::AVX512) {
    if (obw == 2) {
      AMPC_WTILE_CASES(wtileAVX512, 2)
    }
    AMPC_WTILE_CASES(wtileAVX512, 8)
  }
  if (isa == Isa::AVX2) {
    if (obw == 1) {
      AMPC_WTILE_CASES(wtileAVX2, 1)
    }
    AMPC_WTILE_CASES(wtileAVX2, 4)
  }
  wtileScalar(k, tg, obw, 16);
}

#undef AMPC_WTILE_CASES

/// dst[j] = src[first + j * step] for j in [0, n), zero where that index is
/// outside [0, limit). One row of a stride phase.
inline void phaseRow(float *dst, const float *src, int64_t first, int64_t step,
                     int64_t n, int64_t limit) {
  // The j whose index lies in [0, limit): [lo, hi).
  int64_t lo = first >= 0 ? 0 : (-first + step - 1) / step;
  int64_t hi = limit - first <= 0 ? 0 : (limit - first + step - 1) / step;
  lo = std::min(lo, n);
  hi = std::max(lo, std::min(hi, n));
  std::fill(dst, dst + lo, 0.0f);
  if (step == 1)
    cpuconv::copyShort(dst + lo, src + first + lo, (hi - lo) * sizeof(float));
  else
    for (int64_t j = lo; j < hi; ++j)
      dst[j] = src[first + j * step];
  std::fill(dst + hi, dst + n, 0.0f);
}

/// The stride phases (row phase * sw + column phase) that some tap reads, in
/// increasing order, and each tap's offset in the packed image: phase slot
/// * hi * wj + row shift * wj + column shift.
void tapPhases(const Geom &g, int64_t hi, int64_t wj,
               std::vector<int64_t> &used, std::vector<int64_t> &offs) {
  std::vector<int64_t> slot(static_cast<size_t>(g.sh * g.sw), -1);
  for (int64_t ky = 0; ky < g.kh; ++ky)
    for (int64_t kx = 0; kx < g.kw; ++kx)
      slot[(ky * g.dh % g.sh) * g.sw + kx * g.dw % g.sw] = 0;
  used.clear();
  for (int64_t p = 0; p < g.sh * g.sw; ++p)
    if (slot[p] == 0) {
      slot[p] = static_cast<int64_t>(used.size());
      used.push_back(p);
    }
  offs.clear();
  for (int64_t ky = 0; ky < g.kh; ++ky)
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      int64_t ry = ky * g.dh, rx = kx * g.dw;
      offs.push_back((slot[(ry % g.sh) * g.sw + rx % g.sw] * hi + ry / g.sh) *
                         wj +
                     rx / g.sw);
    }
}

size_t dtSize(Dt dt) { return dt == Dt::F32 ? 4 : 2; }

/// dst[0, n) = src (dt) widened to f32.
void loadRow(float *dst, const void *src, Dt dt, int64_t n) {
  if (dt == Dt::F32)
    cpuconv::copyShort(dst, src, n * sizeof(float));
  else if (dt == Dt::F16)
    cpufast::f16ToF32N(static_cast<const uint16_t *>(src), dst, n);
  else
    cpufast::bf16ToF32N(static_cast<const uint16_t *>(src), dst, n);
}

/// dst (dt) = src[0, n) rounded once.
void storeRow(void *dst, Dt dt, const float *src, int64_t n) {
  if (dt == Dt::F32)
    cpuconv::copyShort(dst, src, n * sizeof(float));
  else if (dt == Dt::F16)
    cpufast::f32ToF16N(src, static_cast<uint16_t *>(dst), n);
  else
    cpufast::f32ToBf16N(src, static_cast<uint16_t *>(dst), n);
}

/// src (n elements of dt) as f32: src itself, or widened into a buffer of
/// the calling thread (valid until its next call).
const float *planeF32(const void *src, Dt dt, int64_t n) {
  if (dt == Dt::F32)
    return static_cast<const float *>(src);
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(n))
    buf.resize(static_cast<size_t>(n));
  loadRow(buf.data(), src, dt, n);
  return buf.data();
}

/// A row buffer of the calling thread.
float *rowBuffer(int64_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(n))
    buf.resize(static_cast<size_t>(n));
  return buf.data();
}

} // namespace

bool supported(Isa isa) { return kHave[static_cast<int>(isa)]; }

Isa defaultIsa() {
  static const Isa isa = pickDefault();
  return isa;
}

const char *isaName(Isa isa) {
  switch (isa) {
  case Isa::Scalar:
    return "scalar";
  case Isa::AVX2:
    return "avx2";
  case Isa::AVX512:
    return "avx512";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

Forward::Forward(const Geom &geom, const float *w, Isa i) : g(geom), isa(i) {
  int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  hi = ceilDiv(hp, g.sh);
  wj = ceilDiv(wp, g.sw);
  tapPhases(g, hi, wj, used, offs);
  plane = static_cast<int64_t>(used.size()) * hi * wj;
  nq = (g.oh - 1) * wj + g.ow;
  ws = roundUp(nq, kTile);
  nBlocks = ceilDiv(g.o, kOB);
  packedN = static_cast<size_t>(g.c * plane + kSlack);
  workN = static_cast<size_t>(kOB * ws);
  int64_t taps = g.kh * g.kw;
  wpk.assign(static_cast<size_t>(nBlocks * g.c * taps * kOB), 0.0f);
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < taps; ++t)
        wpk[((o / kOB * g.c + c) * taps + t) * kOB + o % kOB] =
            w[(o * g.c + c) * taps + t];
}

void Forward::pack(const void *x, Dt xdt, float *packed) const {
  int64_t hw = g.h * g.w;
  for (int64_t c = 0; c < g.c; ++c) {
    const float *xc =
        planeF32(static_cast<const char *>(x) + c * hw * dtSize(xdt), xdt, hw);
    for (size_t u = 0; u < used.size(); ++u) {
      int64_t py = used[u] / g.sw, px = used[u] % g.sw;
      for (int64_t i = 0; i < hi; ++i) {
        float *dst = packed + c * plane + (u * hi + i) * wj;
        int64_t row = g.sh * i + py - g.ph;
        if (row < 0 || row >= g.h) {
          std::fill(dst, dst + wj, 0.0f);
          continue;
        }
        phaseRow(dst, xc + row * g.w, px - g.pw, g.sw, wj, g.w);
      }
    }
  }
  std::fill(packed + g.c * plane, packed + packedN, 0.0f);
}

void Forward::run(const float *packed, float *work, void *y, Dt ydt,
                  const float *bias, int64_t b0, int64_t b1) const {
  int64_t taps = g.kh * g.kw, ohw = g.oh * g.ow;
  // A 16-bit y: each output channel's plane is assembled in f32 and
  // rounded in one run (the convolutions' rows are short).
  float *yPlane = ydt == Dt::F32 ? nullptr : rowBuffer(ohw);
  for (int64_t b = b0; b < b1; ++b) {
    Corr k{packed,      plane   , g.c,
           offs.data(), taps,     wpk.data() + b * g.c * taps * kOB,
           work,        ws,       nq};
    corr(k, isa);
    for (int64_t r = 0; r < kOB && b * kOB + r < g.o; ++r) {
      int64_t o = b * kOB + r;
      const float *src = work + r * ws;
      char *dst = static_cast<char *>(y) + o * ohw * dtSize(ydt);
      float *out = yPlane ? yPlane : reinterpret_cast<float *>(dst);
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const float *from = src + oy * wj;
        float *to = out + oy * g.ow;
        if (bias) {
          float bv = bias[o];
          for (int64_t ox = 0; ox < g.ow; ++ox)
            to[ox] = from[ox] + bv;
        } else {
          cpuconv::copyShort(to, from, g.ow * sizeof(float));
        }
      }
      if (yPlane)
        storeRow(dst, ydt, yPlane, ohw);
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward-x: dx's padded coordinates (u, v) = (iy + ph, ix + pw) split into
// phases (u % sh, v % sw) of size ha x wb; phase (py, px) gathers the taps
// with (ky * dh) % sh == py and (kx * dw) % sw == px, each reading the padded
// dy (rows oy + my, columns ox + mx) at a shift.
//===----------------------------------------------------------------------===//

BackwardData::BackwardData(const Geom &geom, const float *w, Isa i)
    : g(geom), isa(i) {
  int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  ha = ceilDiv(hp, g.sh);
  wb = ceilDiv(wp, g.sw);
  my = (g.kh - 1) * g.dh / g.sh;
  mx = (g.kw - 1) * g.dw / g.sw;
  rd = ha + my;
  wdp = wb + mx;
  plane = rd * wdp;
  nq = (ha - 1) * wdp + wb;
  ws = roundUp(nq, kTile);
  nBlocks = ceilDiv(g.c, kOB);
  packedN = static_cast<size_t>(g.o * plane + kSlack);
  workN = static_cast<size_t>(g.sh * g.sw * kOB * ws);
  int64_t taps = g.kh * g.kw;
  phases.resize(static_cast<size_t>(g.sh * g.sw));
  for (int64_t py = 0; py < g.sh; ++py)
    for (int64_t px = 0; px < g.sw; ++px) {
      Phase &ph = phases[py * g.sw + px];
      std::vector<int64_t> tapIds;
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t ry = ky * g.dh, rx = kx * g.dw;
          if (ry % g.sh != py || rx % g.sw != px)
            continue;
          tapIds.push_back(ky * g.kw + kx);
          ph.offs.push_back((my - ry / g.sh) * wdp + (mx - rx / g.sw));
        }
      int64_t nt = static_cast<int64_t>(tapIds.size());
      ph.wpk.assign(static_cast<size_t>(nBlocks * g.o * nt * kOB), 0.0f);
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t o = 0; o < g.o; ++o)
          for (int64_t t = 0; t < nt; ++t)
            ph.wpk[((c / kOB * g.o + o) * nt + t) * kOB + c % kOB] =
                w[(o * g.c + c) * taps + tapIds[t]];
    }
}

void BackwardData::pack(const void *dy, Dt dydt, float *packed) const {
  std::fill(packed, packed + packedN, 0.0f);
  // A 16-bit dy is widened in one run, then placed row by row.
  const float *src = planeF32(dy, dydt, g.o * g.oh * g.ow);
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      cpuconv::copyShort(packed + o * plane + (oy + my) * wdp + mx,
                         src + (o * g.oh + oy) * g.ow, g.ow * sizeof(float));
}

void BackwardData::run(const float *packed, float *work, void *dx, Dt dxdt,
                       int64_t b0, int64_t b1) const {
  int64_t nph = g.sh * g.sw, hw = g.h * g.w;
  // A 16-bit dx: each channel's plane is assembled in f32 and rounded in
  // one run.
  float *xPlane = dxdt == Dt::F32 ? nullptr : rowBuffer(hw);
  for (int64_t b = b0; b < b1; ++b) {
    for (int64_t p = 0; p < nph; ++p) {
      const Phase &ph = phases[p];
      int64_t nt = static_cast<int64_t>(ph.offs.size());
      float *out = work + p * kOB * ws;
      if (nt == 0)
        continue; // No tap reaches this phase: its pixels are zero.
      Corr k{packed, plane,
             g.o,    ph.offs.data(),
             nt,     ph.wpk.data() + b * g.o * nt * kOB,
             out,    ws,
             nq};
      corr(k, isa);
    }
    for (int64_t r = 0; r < kOB && b * kOB + r < g.c; ++r) {
      int64_t c = b * kOB + r;
      char *dst = static_cast<char *>(dx) + c * hw * dtSize(dxdt);
      float *out = xPlane ? xPlane : reinterpret_cast<float *>(dst);
      for (int64_t iy = 0; iy < g.h; ++iy) {
        int64_t u = iy + g.ph, py = u % g.sh, a = u / g.sh;
        float *to = out + iy * g.w;
        if (g.sw == 1 && !phases[py].offs.empty()) {
          cpuconv::copyShort(to, work + (py * kOB + r) * ws + a * wdp + g.pw,
                             g.w * sizeof(float));
          continue;
        }
        // Column phase px holds the ix = sw * b + px - pw.
        for (int64_t px = 0; px < g.sw; ++px) {
          bool none = phases[py * g.sw + px].offs.empty();
          const float *src = work + ((py * g.sw + px) * kOB + r) * ws + a * wdp;
          int64_t b = px >= g.pw ? 0 : (g.pw - px + g.sw - 1) / g.sw;
          for (int64_t ix = g.sw * b + px - g.pw; ix < g.w; ix += g.sw, ++b)
            to[ix] = none ? 0.0f : src[b];
        }
      }
      if (xPlane)
        storeRow(dst, dxdt, xPlane, hw);
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward-w
//===----------------------------------------------------------------------===//

BackwardWeight::BackwardWeight(const Geom &geom, Isa i) : g(geom), isa(i) {
  int64_t hp = g.h + 2 * g.ph, wp = g.w + 2 * g.pw;
  hi = ceilDiv(hp, g.sh);
  wj = ceilDiv(wp, g.sw);
  tapPhases(g, hi, wj, used, offs);
  plane = static_cast<int64_t>(used.size()) * hi * wj;
  // Few channels (an RGB stem): the lanes are (c, kx) pairs instead of
  // channels, the taps the kernel rows. A tap's offset is then a row part
  // plus a column part, which holds when every stride phase is packed
  // (phase slot = row phase * sw + column phase).
  expand = g.kw > 1 && g.c * g.kw <= 16 &&
           static_cast<int64_t>(used.size()) == g.sh * g.sw;
  if (expand) {
    offs.clear();
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      int64_t ry = ky * g.dh;
      offs.push_back(((ry % g.sh) * g.sw * hi + ry / g.sh) * wj);
    }
    for (int64_t kx = 0; kx < g.kw; ++kx) {
      int64_t rx = kx * g.dw;
      offX.push_back((rx % g.sw) * hi * wj + rx / g.sw);
    }
  }
  cp = roundUp(expand ? g.c * g.kw : g.c, 16);
  taps = expand ? g.kh : g.kh * g.kw;
  tg = std::min<int64_t>(taps, 9);
  obw = obwFor(isa, tg);
  nBlocks = ceilDiv(g.o, obw);
  packedN = static_cast<size_t>(plane * cp);
  accN = static_cast<size_t>(nBlocks * obw * taps * cp);
  zeros.assign(static_cast<size_t>(g.oh * g.ow), 0.0f);
}

void BackwardWeight::pack(const void *x, Dt xdt, float *packed) const {
  int64_t hw = g.h * g.w;
  if (expand) {
    std::fill(packed, packed + packedN, 0.0f);
    // The forward's planar packing of each channel, then lane (c, kx) at
    // position pos = the channel's value at pos + offX[kx].
    thread_local std::vector<float> planar;
    planar.resize(static_cast<size_t>(plane));
    for (int64_t c = 0; c < g.c; ++c) {
      const float *xc = planeF32(
          static_cast<const char *>(x) + c * hw * dtSize(xdt), xdt, hw);
      for (size_t u = 0; u < used.size(); ++u) {
        int64_t py = used[u] / g.sw, px = used[u] % g.sw;
        for (int64_t i = 0; i < hi; ++i) {
          float *dst = planar.data() + (u * hi + i) * wj;
          int64_t row = g.sh * i + py - g.ph;
          if (row < 0 || row >= g.h)
            std::fill(dst, dst + wj, 0.0f);
          else
            phaseRow(dst, xc + row * g.w, px - g.pw, g.sw, wj, g.w);
        }
      }
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        int64_t lane = c * g.kw + kx, n = plane - offX[kx];
        const float *src = planar.data() + offX[kx];
        for (int64_t pos = 0; pos < n; ++pos)
          packed[pos * cp + lane] = src[pos];
      }
    }
    return;
  }
  // Positions outside the image, and lanes past the channels, are zero;
  // the rest is written once, channel by channel (the rows of up to 16
  // channels are read side by side).
  const int64_t step = g.sw;
  for (size_t u = 0; u < used.size(); ++u) {
    int64_t py = used[u] / g.sw, px = used[u] % g.sw;
    int64_t first = px - g.pw;
    // Columns col = sw * j + first inside the image: j in [lo, jh).
    int64_t lo = first >= 0 ? 0 : (-first + step - 1) / step;
    int64_t jh = g.w - first <= 0 ? 0 : (g.w - first + step - 1) / step;
    jh = std::max(lo, std::min(jh, wj));
    for (int64_t i = 0; i < hi; ++i) {
      float *dst = packed + (u * hi + i) * wj * cp;
      int64_t row = g.sh * i + py - g.ph;
      if (row < 0 || row >= g.h) {
        std::fill(dst, dst + wj * cp, 0.0f);
        continue;
      }
      std::fill(dst, dst + lo * cp, 0.0f);
      std::fill(dst + jh * cp, dst + wj * cp, 0.0f);
      if (cp > g.c)
        for (int64_t j = lo; j < jh; ++j)
          std::fill(dst + j * cp + g.c, dst + (j + 1) * cp, 0.0f);
    }
  }
  std::vector<const float *> planes(static_cast<size_t>(g.c));
  for (int64_t c = 0; c < g.c; ++c)
    planes[c] =
        xdt == Dt::F32 ? static_cast<const float *>(x) + c * hw : nullptr;
  if (xdt != Dt::F32) {
    thread_local std::vector<float> wide;
    wide.resize(static_cast<size_t>(g.c * hw));
    loadRow(wide.data(), x, xdt, g.c * hw);
    for (int64_t c = 0; c < g.c; ++c)
      planes[c] = wide.data() + c * hw;
  }
  for (size_t u = 0; u < used.size(); ++u) {
    int64_t py = used[u] / g.sw, px = used[u] % g.sw;
    int64_t first = px - g.pw;
    int64_t lo = first >= 0 ? 0 : (-first + step - 1) / step;
    int64_t jh = g.w - first <= 0 ? 0 : (g.w - first + step - 1) / step;
    jh = std::max(lo, std::min(jh, wj));
    for (int64_t i = 0; i < hi; ++i) {
      int64_t row = g.sh * i + py - g.ph;
      if (row < 0 || row >= g.h)
        continue;
      float *dst = packed + (u * hi + i) * wj * cp;
      int64_t off = row * g.w + first;
      for (int64_t c0 = 0; c0 < g.c; c0 += 16) {
        int64_t nc = std::min<int64_t>(16, g.c - c0);
        const float *src[16];
        for (int64_t c = 0; c < nc; ++c)
          src[c] = planes[c0 + c] + off;
        for (int64_t j = lo; j < jh; ++j) {
          float *d = dst + j * cp + c0;
          for (int64_t c = 0; c < nc; ++c)
            d[c] = src[c][j * step];
        }
      }
    }
  }
}

void BackwardWeight::accumulate(const float *packed, const float *dy,
                                float *acc, int64_t b0, int64_t b1) const {
  int64_t ohw = g.oh * g.ow, lanes = isa == Isa::AVX2 ? 8 : 16;
  // Whether a 3x3 kernel's column taps slide (wtile3x3AVX512).
  int slide = 0;
  if (!expand && g.kh == 3 && g.kw == 3) {
    bool s1 = true, s2 = true;
    for (int ky = 0; ky < 3; ++ky) {
      const int64_t *o = offs.data() + 3 * ky;
      s1 = s1 && o[1] == o[0] + 1 && o[2] == o[0] + 2;
      s2 = s2 && o[2] == o[0] + 1;
    }
    slide = s1 ? 1 : (s2 ? 2 : 0);
  }
  const float *rows[8];
  for (int64_t b = b0; b < b1; ++b) {
    for (int r = 0; r < obw; ++r) {
      int64_t o = b * obw + r;
      rows[r] = o < g.o ? dy + o * ohw : zeros.data();
    }
    for (int64_t t0 = 0; t0 < taps; t0 += tg) {
      int n = static_cast<int>(std::min(tg, taps - t0));
      for (int64_t c0 = 0; c0 < cp; c0 += lanes) {
        WTile k{packed + c0,
                cp,
                offs.data() + t0,
                rows,
                g.oh,
                g.ow,
                wj,
                acc + (b * obw * taps + t0) * cp + c0,
                taps * cp,
                cp};
        wtile(k, isa, n, obw, slide);
      }
    }
  }
}

void BackwardWeight::finish(const float *acc, float *dw) const {
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t ky = 0; ky < g.kh; ++ky)
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t t = expand ? ky : ky * g.kw + kx;
          int64_t lane = expand ? c * g.kw + kx : c;
          dw[((o * g.c + c) * g.kh + ky) * g.kw + kx] =
              acc[(o * taps + t) * cp + lane];
        }
}

void addRowSums(double *acc, const float *dy, int64_t rows, int64_t n) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    double a[8];
    const float *p[8];
    for (int b = 0; b < 8; ++b) {
      a[b] = acc[r + b];
      p[b] = dy + (r + b) * n;
    }
    for (int64_t j = 0; j < n; ++j)
      for (int b = 0; b < 8; ++b)
        a[b] += p[b][j];
    for (int b = 0; b < 8; ++b)
      acc[r + b] = a[b];
  }
  for (; r < rows; ++r) {
    double a = acc[r];
    const float *p = dy + r * n;
    for (int64_t j = 0; j < n; ++j)
      a += p[j];
    acc[r] = a;
  }
}

} // namespace cpudirect
} // namespace ampc
