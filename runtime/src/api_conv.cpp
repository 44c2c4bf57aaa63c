//===- api_conv.cpp - conv2d and the convolution core ----------*- C++ -*-===//
//
// The convolution core of every conv entry point (conv_nd.h): the geometry
// checks, im2col + GEMM on both backends, the CPU's direct kernels and
// shifted GEMMs, oneDNN through the backend, and conv2d's entry points.
// conv1d, conv3d and the transposed convolutions are in api_conv_nd.cpp.
//
//===----------------------------------------------------------------------===//
#include "composed.h"
#include "conv_nd.h"


#include "../cpu/cpu_directconv.h"
#include "../cpu/cpu_pool.h"

#include <stdlib.h>
#include <string.h>

using namespace ampc;

namespace {
/// The geometry of a convolution over a.spatial dims (1 to 3) of x [N, C,
/// spatial...] with w [O, C/groups, k...], as a 3-D one (missing leading
/// spatial dims of size 1), checking every attribute and y's shape.
ampc_status convGeom(const char *fn, const Shape &xs, const Shape &ws,
                     const Shape &ys, const ConvAttrs &a, ConvGeom &g) {
  int r = a.spatial;
  if (r < 1 || r > 3 || xs.rank != r + 2 || ws.rank != r + 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: x must be [N, C, %d spatial dims] and w [O, C/groups, "
                    "%d kernel dims], got %s and %s",
                    fn, r, r, xs.str().c_str(), ws.str().c_str());
  for (int i = 0; i < r; ++i)
    if (a.stride[i] <= 0 || a.padding[i] < 0 || a.dilation[i] <= 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: stride, dilation and groups must be > 0, padding "
                      ">= 0",
                      fn);
  int64_t groups = a.groups;
  if (groups <= 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: stride, dilation and groups must be > 0, padding "
                    ">= 0",
                    fn);
  if (xs.d[1] % groups || ws.d[0] % groups || ws.d[1] * groups != xs.d[1])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: channels of x %s and w %s do not fit groups=%lld", fn,
                    xs.str().c_str(), ws.str().c_str(),
                    static_cast<long long>(groups));
  // (D, H, W) values, the missing leading ones trivial.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1},
          st[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  for (int i = 0; i < r; ++i) {
    int j = 3 - r + i;
    in[j] = xs.d[2 + i];
    k[j] = ws.d[2 + i];
    st[j] = a.stride[i];
    pad[j] = a.padding[i];
    dil[j] = a.dilation[i];
    int64_t extent = dil[j] * (k[j] - 1) + 1;
    int64_t span = in[j] + 2 * pad[j] - extent;
    if (span < 0)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: kernel larger than the padded input", fn);
    out[j] = span / st[j] + 1;
  }
  g = ConvGeom{ws.d[1], in[1],  in[2],  k[1],   k[2],   out[1], out[2],
               st[1],   st[2],  pad[1], pad[2], dil[1], dil[2]};
  g.d = in[0];
  g.kd = k[0];
  g.od = out[0];
  g.sd = st[0];
  g.pd = pad[0];
  g.dd = dil[0];
  Shape want = xs;
  want.d[1] = ws.d[0];
  for (int i = 0; i < r; ++i)
    want.d[2 + i] = out[3 - r + i];
  if (ys != want)
    return shapeError(fn, "the convolution output", ys, want);
  return AMPC_OK;
}

/// Whether im2col would copy the image unchanged (a 1x1x1 kernel, stride 1,
/// no padding): then the image is the column matrix.
bool isPointwise(const ConvGeom &g) {
  return g.kd == 1 && g.kh == 1 && g.kw == 1 && g.sd == 1 && g.sh == 1 &&
         g.sw == 1 && g.pd == 0 && g.ph == 0 && g.pw == 0;
}

/// Stride-1 2-D convolutions on the CPU run as kh * kw GEMMs over shifted
/// views of a zero-padded f32 image (see ShiftedGemms) instead of im2col +
/// one GEMM: nothing the size of the column matrix is written. Not for bf16
/// images and weights when bf16 GEMMs run on AMX (cpuBf16GemmsOnAmx): the
/// padded image is f32, and bf16 columns feed the bf16 units.
bool useShiftedGemms(Backend &be, const ConvGeom &g, ampc_dtype x,
                     ampc_dtype w) {
  if (x == AMPC_BF16 && w == AMPC_BF16 && be.kind() == AMPC_BACKEND_CPU &&
      cpuBf16GemmsOnAmx())
    return false;
  // Depth must be trivial: one plane, no depth padding (a 3-D convolution
  // of depth 1 with depth padding has od > 1). Each tap's GEMM has k = C:
  // with fewer than 8 channels (an RGB stem) im2col's single GEMM is faster
  // (measured on the CNN example, C = 1).
  return be.kind() == AMPC_BACKEND_CPU && g.d == 1 && g.kd == 1 && g.od == 1 &&
         g.pd == 0 && g.sh == 1 && g.sw == 1 && g.kh * g.kw > 1 && g.oh > 0 &&
         g.ow > 0 && g.channels >= 8;
}

/// A stride-1 2-D convolution in the padded image's width. With xpad the
/// image zero-padded to [C, hp, wp], output pixel (oy, ox) is "wide" column
/// q = oy * wp + ox, q < n = (oh - 1) * wp + ow, and
///   wide[o, q] = sum over taps (ky, kx), then over c, of
///     w[o, c, ky, kx] * xpad[c * plane + ky * dh * wp + kx * dw + q]:
/// for each kernel tap a GEMM of w's tap [O, C] (repacked) with a view of
/// xpad (rows c at stride plane, n contiguous columns). The wide columns
/// with ox >= ow are not outputs. The backward passes use the same views:
/// dx's padded image gets, tap by tap, w_tap^T * dy (dy widened with zeros
/// in the non-output columns) added at the tap's offset (C's rows at stride
/// plane), and dw's tap [O, C] += dy_wide * view^T.
struct ShiftedGemms {
  int64_t hp, wp, plane, n, taps;
  explicit ShiftedGemms(const ConvGeom &g)
      : hp(g.h + 2 * g.ph), wp(g.w + 2 * g.pw), plane(hp * wp),
        n((g.oh - 1) * wp + g.ow), taps(g.kh * g.kw) {}

  int64_t tapOffset(const ConvGeom &g, int64_t t) const {
    return (t / g.kw) * g.dh * wp + (t % g.kw) * g.dw;
  }
  static Walk walk3(int64_t d0, int64_t d1, int64_t d2, const int64_t *s0,
                    const int64_t *s1) {
    Walk w;
    w.rank = 3;
    w.shape[0] = d0;
    w.shape[1] = d1;
    w.shape[2] = d2;
    for (int k = 0; k < 3; ++k) {
      w.stride[0][k] = s0[k];
      w.stride[1][k] = s1[k];
    }
    return w;
  }
  /// dst = src over n contiguous elements, converting (the backends' fast
  /// contiguous path; strided copies that convert go element by element).
  static ampc_status convertRun(Backend &be, Buf dst, Buf src, int64_t n) {
    return be.copy(dst, src, flatWalk(n), 1.0f);
  }
  /// The interior of xpad [C, hp, wp] (f32, border already zero) = x; an
  /// f16/bf16 x is widened into `scratch` (f32 [C, h, w]) first.
  ampc_status pad(Backend &be, Buf xpad, Buf x, const ConvGeom &g,
                  Buf scratch) const {
    int64_t d[3] = {plane, wp, 1}, s[3] = {g.h * g.w, g.w, 1};
    if (x.dtype != AMPC_F32) {
      AMPC_TRY(convertRun(be, scratch, x, g.channels * g.h * g.w));
      x = scratch;
    }
    return be.copy(offsetBuf(xpad, g.ph * wp + g.pw), x,
                   walk3(g.channels, g.h, g.w, d, s), 1.0f);
  }
  /// x [C, h, w] (x's dtype, rounded once) = the interior of xpad (f32),
  /// through `scratch` (f32 [C, h, w]) when x is not f32.
  ampc_status unpad(Backend &be, Buf x, Buf xpad, const ConvGeom &g,
                    Buf scratch) const {
    int64_t d[3] = {g.h * g.w, g.w, 1}, s[3] = {plane, wp, 1};
    Buf to = x.dtype == AMPC_F32 ? x : scratch;
    AMPC_TRY(be.copy(to, offsetBuf(xpad, g.ph * wp + g.pw),
                     walk3(g.channels, g.h, g.w, d, s), 1.0f));
    if (x.dtype != AMPC_F32)
      return convertRun(be, x, scratch, g.channels * g.h * g.w);
    return AMPC_OK;
  }
  /// wide [rows, n] (f32) = y [rows, oh, ow] at the output columns (the
  /// other columns are left as they are: zero); an f16/bf16 y is widened
  /// into `scratch` (f32 [rows, oh, ow]) first.
  ampc_status expand(Backend &be, Buf wide, Buf y, int64_t rows,
                     const ConvGeom &g, Buf scratch) const {
    int64_t d[3] = {n, wp, 1}, s[3] = {g.oh * g.ow, g.ow, 1};
    if (y.dtype != AMPC_F32) {
      AMPC_TRY(convertRun(be, scratch, y, rows * g.oh * g.ow));
      y = scratch;
    }
    return be.copy(wide, y, walk3(rows, g.oh, g.ow, d, s), 1.0f);
  }
  /// y [rows, oh, ow] = the output columns of wide [rows, n] (f32).
  ampc_status compact(Backend &be, Buf y, Buf wide, int64_t rows,
                      const ConvGeom &g) const {
    int64_t d[3] = {g.oh * g.ow, g.ow, 1}, s[3] = {n, wp, 1};
    return be.copy(y, wide, walk3(rows, g.oh, g.ow, d, s), 1.0f);
  }
  /// taps [groups * taps, og, C] (f32) from w [groups * og, C, kh, kw], or
  /// back (toW) into w's layout and dtype.
  ampc_status repack(Backend &be, Buf tapsBuf, Buf w, int64_t groups,
                     int64_t og, const ConvGeom &g, bool toW) const {
    int64_t c = g.channels;
    // taps index: ((gi * taps + t) * og + oo) * c + ci, w's index:
    // ((gi * og + oo) * c + ci) * taps + t; walked over (gi, oo, ci, t).
    Walk wk;
    wk.rank = 4;
    wk.shape[0] = groups;
    wk.shape[1] = og;
    wk.shape[2] = c;
    wk.shape[3] = taps;
    int64_t tapS[4] = {taps * og * c, c, 1, og * c};
    int64_t wS[4] = {og * c * taps, c * taps, taps, 1};
    for (int k = 0; k < 4; ++k) {
      wk.stride[0][k] = toW ? wS[k] : tapS[k];
      wk.stride[1][k] = toW ? tapS[k] : wS[k];
    }
    return toW ? be.copy(w, tapsBuf, wk, 1.0f) : be.copy(tapsBuf, w, wk, 1.0f);
  }
};

/// One tap's GEMM on strided views (row-major, leading dims given).
GemmDesc tapGemm(Buf c, int64_t ldc, Buf a, int64_t lda, bool transA, Buf b,
                 int64_t ldb, bool transB, int64_t m, int64_t n, int64_t k,
                 float beta) {
  GemmDesc d = makeGemm(c, a, b, m, n, k, transA, transB);
  d.lda = lda;
  d.ldb = ldb;
  d.ldc = ldc;
  d.beta = beta;
  return d;
}

/// 2-D convolutions on the CPU other than pointwise ones (1x1, stride 1, no
/// padding: one GEMM on the image) run on the direct kernels of
/// runtime/cpu/cpu_directconv (any stride, padding, dilation and groups),
/// which compute in f32; bf16 ones (image and weight) run as im2col + bf16
/// GEMMs instead where the CPU's GEMM engine runs bf16 on AMX
/// (cpuBf16GemmsOnAmx). AMPC_CPU_CONV=gemm in
/// the environment keeps every convolution on the GEMM paths,
/// AMPC_CPU_CONV=direct every one it can on the direct kernels.
bool useDirect(Backend &be, const ConvGeom &g, ampc_dtype x, ampc_dtype w) {
  static const int mode = [] {
    const char *e = getenv("AMPC_CPU_CONV");
    return e && !strcmp(e, "gemm") ? 1 : e && !strcmp(e, "direct") ? 2 : 0;
  }();
  bool can = be.kind() == AMPC_BACKEND_CPU && g.d == 1 && g.kd == 1 &&
             g.od == 1 && g.pd == 0 && g.oh > 0 && g.ow > 0 &&
             g.channels > 0 && g.kh > 0 && g.kw > 0 && !isPointwise(g);
  if (!can || mode == 1)
    return false;
  if (mode == 0 && x == AMPC_BF16 && w == AMPC_BF16 && cpuBf16GemmsOnAmx())
    return false;
  return true;
}

cpudirect::Geom directGeom(const ConvGeom &g, int64_t og) {
  return cpudirect::Geom{g.channels, og,   g.h,  g.w,  g.kh, g.kw, g.oh,
                         g.ow,       g.sh, g.sw, g.ph, g.pw, g.dh, g.dw};
}

/// src as f32: itself when it is f32, else widened into `tmp` (n elements).
ampc_status asF32(Backend &be, Buf src, int64_t n, Temp &tmp,
                  const float *&out) {
  if (src.dtype == AMPC_F32) {
    out = static_cast<const float *>(src.data);
    return AMPC_OK;
  }
  if (!tmp.get())
    AMPC_TRY(tmp.alloc(n * sizeof(float)));
  AMPC_TRY(ShiftedGemms::convertRun(be, Buf{tmp.get(), AMPC_F32}, src, n));
  out = tmp.f32();
  return AMPC_OK;
}

cpudirect::Dt directDt(ampc_dtype dt) {
  return dt == AMPC_F16    ? cpudirect::Dt::F16
         : dt == AMPC_BF16 ? cpudirect::Dt::BF16
                           : cpudirect::Dt::F32;
}

const char *elemAt(Buf b, int64_t elems) {
  return static_cast<const char *>(b.data) + elems * dtypeSize(b.dtype);
}

/// convForward on the direct kernels (useDirect): y = conv + bias, image by
/// image and group by group, the bias added to each finished chain and y
/// rounded once to its dtype (16-bit images are widened as they are packed).
ampc_status convForwardDirect(Backend &be, const TensorArg &y,
                              const TensorArg &x, const TensorArg &w,
                              const TensorArg &bias, const ConvGeom &g,
                              int64_t n, int64_t groups, int64_t o) {
  if (be.planning()) // the direct kernels have no primitives to make
    return AMPC_OK;
  int64_t og = o / groups, gimg = g.imageSize(), hw = g.columns();
  int64_t ckk = g.rows();
  cpudirect::Isa isa = cpudirect::defaultIsa();
  be.noteEngine(std::string("direct:") + cpudirect::isaName(isa));
  Temp wt(be), bt(be);
  const float *wf = nullptr, *bf = nullptr;
  AMPC_TRY(asF32(be, w.buf(), o * ckk, wt, wf));
  if (bias.data)
    AMPC_TRY(asF32(be, bias.buf(), o, bt, bf));
  std::vector<cpudirect::Forward> plans;
  plans.reserve(static_cast<size_t>(groups));
  for (int64_t gi = 0; gi < groups; ++gi)
    plans.emplace_back(directGeom(g, og), wf + gi * og * ckk, isa);
  // One item per (image, group) on the CPU pool: each writes its own rows
  // of y with the same code whatever thread runs it (same bits at every
  // thread count); the scratch is the running thread's own.
  cpupool::parallelFor(n * groups, [&](int64_t item) {
    int64_t i = item / groups, gi = item % groups;
    const cpudirect::Forward &f = plans[gi];
    thread_local std::vector<float> packedT, workT;
    if (packedT.size() < f.packedFloats())
      packedT.resize(f.packedFloats());
    if (workT.size() < f.workFloats())
      workT.resize(f.workFloats());
    f.pack(elemAt(x.buf(), (i * groups + gi) * gimg), directDt(x.dtype),
           packedT.data());
    f.run(packedT.data(), workT.data(),
          const_cast<char *>(elemAt(y.buf(), (i * o + gi * og) * hw)),
          directDt(y.dtype), bf ? bf + gi * og : nullptr, 0, f.blocks());
  });
  return AMPC_OK;
}

/// convBackward's dx and dw on the direct kernels (useDirect); dw chains
/// through the images in order.
ampc_status convBackwardDirect(Backend &be, const TensorArg &dx,
                               const TensorArg &dw, const TensorArg &dbias,
                               Buf dyb, Buf xb, Buf wb, const ConvGeom &g,
                               int64_t n, int64_t groups, int64_t o) {
  if (be.planning()) // the direct kernels have no primitives to make
    return AMPC_OK;
  int64_t og = o / groups, gimg = g.imageSize(), hw = g.columns();
  int64_t ckk = g.rows();
  bool wantDx = dx.data != nullptr, wantDw = dw.data != nullptr;
  // The bias gradient: the sum over (image, pixel) in f64 in that order (the
  // bits of reduceDims), while each image's dy is at hand.
  bool wantDb = dbias.data != nullptr;
  std::vector<double> dbAcc(wantDb ? static_cast<size_t>(o) : 0, 0.0);
  cpudirect::Isa isa = cpudirect::defaultIsa();
  be.noteEngine(std::string("direct:") + cpudirect::isaName(isa));
  cpudirect::Geom dg = directGeom(g, og);
  Temp wt(be), dwt(be), packedW(be), acc(be);
  std::vector<cpudirect::BackwardData> bds;
  std::vector<cpudirect::BackwardWeight> bws;
  if (wantDx) {
    const float *wf = nullptr;
    AMPC_TRY(asF32(be, wb, o * ckk, wt, wf));
    bds.reserve(static_cast<size_t>(groups));
    for (int64_t gi = 0; gi < groups; ++gi)
      bds.emplace_back(dg, wf + gi * og * ckk, isa);
  }
  size_t accN = 0;
  if (wantDw) {
    bws.emplace_back(dg, isa);
    accN = bws[0].accFloats();
    AMPC_TRY(acc.alloc(groups * accN * sizeof(float)));
    std::fill(acc.f32(), acc.f32() + groups * accN, 0.0f);
  }
  // dx: one item per (image, group) on the CPU pool, each writing its own
  // rows of dx (same bits at every thread count).
  if (wantDx)
    cpupool::parallelFor(n * groups, [&](int64_t item) {
      int64_t i = item / groups, gi = item % groups;
      const cpudirect::BackwardData &bd = bds[gi];
      thread_local std::vector<float> packedT, workT;
      if (packedT.size() < bd.packedFloats())
        packedT.resize(bd.packedFloats());
      if (workT.size() < bd.workFloats())
        workT.resize(bd.workFloats());
      bd.pack(elemAt(dyb, (i * o + gi * og) * hw), directDt(dyb.dtype),
              packedT.data());
      bd.run(packedT.data(), workT.data(),
             const_cast<char *>(elemAt(dx.buf(), (i * groups + gi) * gimg)),
             directDt(dx.dtype), 0, bd.blocks());
    });
  // dw and dbias chain through the images in order. Images go in chunks
  // (as many as about 256 KiB of packed images and widened dy hold, so that
  // the chunk stays in the L2 cache while every block reads it; at least
  // two, so that packing has an item per thread of a 2-core machine): the
  // chunk's images are widened and packed as items on the pool, then each
  // item -- an output-channel block of dw of one group, or eight bias rows
  // -- walks the chunk's images in order, so every element's chain is the
  // one of a single thread (same bits at every thread count). On the
  // ResNet of bench/models a 64 MiB chunk (all 32 images) ran the f32 step
  // at one thread about 10% slower than this.
  if (wantDw || wantDb) {
    size_t packedN = wantDw ? bws[0].packedFloats() : 0;
    size_t perImage = groups * packedN +
                      (dyb.dtype == AMPC_F32 ? 0 : static_cast<size_t>(o * hw));
    const size_t budget = (256u << 10) / sizeof(float);
    int64_t chunk = std::max<int64_t>(
        2, static_cast<int64_t>(budget / std::max<size_t>(perImage, 1)));
    chunk = std::min(chunk, n);
    if (wantDw)
      AMPC_TRY(packedW.alloc(chunk * groups * packedN * sizeof(float)));
    for (int64_t i0 = 0; i0 < n; i0 += chunk) {
      int64_t k = std::min(chunk, n - i0);
      // Read as f32: a 16-bit dy is widened once here, on the pool.
      const float *dyf = nullptr;
      Temp dyChunk(be);
      AMPC_TRY(asF32(be, Buf{const_cast<char *>(elemAt(dyb, i0 * o * hw)),
                             dyb.dtype},
                     k * o * hw, dyChunk, dyf));
      auto dyOf = [&](int64_t ii, int64_t gi) {
        return dyf + (ii * o + gi * og) * hw;
      };
      if (wantDw) {
        const cpudirect::BackwardWeight &bw = bws[0];
        cpupool::parallelFor(k * groups, [&](int64_t item) {
          int64_t ii = item / groups, gi = item % groups;
          bw.pack(elemAt(xb, ((i0 + ii) * groups + gi) * gimg),
                  directDt(xb.dtype), packedW.f32() + item * packedN);
        });
        int64_t blocks = bw.blocks();
        cpupool::parallelFor(groups * blocks, [&](int64_t item) {
          int64_t gi = item / blocks, blk = item % blocks;
          float *accG = acc.f32() + gi * accN;
          for (int64_t ii = 0; ii < k; ++ii)
            bw.accumulate(packedW.f32() + (ii * groups + gi) * packedN,
                          dyOf(ii, gi), accG, blk, blk + 1);
        });
      }
      if (wantDb) {
        int64_t rowBlocks = (og + 7) / 8;
        cpupool::parallelFor(groups * rowBlocks, [&](int64_t item) {
          int64_t gi = item / rowBlocks, r0 = item % rowBlocks * 8;
          int64_t rows = std::min<int64_t>(8, og - r0);
          for (int64_t ii = 0; ii < k; ++ii)
            cpudirect::addRowSums(dbAcc.data() + gi * og + r0,
                                  dyOf(ii, gi) + r0 * hw, rows, hw);
        });
      }
    }
  }
  if (wantDb) {
    // Rounded to f32, then to dbias's dtype, as reduceDims stores its sums.
    Temp dbt(be);
    AMPC_TRY(dbt.alloc(o * sizeof(float)));
    for (int64_t k = 0; k < o; ++k)
      dbt.f32()[k] = static_cast<float>(dbAcc[k]);
    AMPC_TRY(
        ShiftedGemms::convertRun(be, dbias.buf(), Buf{dbt.get(), AMPC_F32}, o));
  }
  if (wantDw) {
    bool directW = dw.dtype == AMPC_F32;
    if (!directW)
      AMPC_TRY(dwt.alloc(o * ckk * sizeof(float)));
    float *to =
        directW ? static_cast<float *>(const_cast<void *>(dw.data)) : dwt.f32();
    for (int64_t gi = 0; gi < groups; ++gi)
      bws[0].finish(acc.f32() + gi * accN, to + gi * og * ckk);
    if (!directW)
      AMPC_TRY(ShiftedGemms::convertRun(be, dw.buf(), Buf{dwt.get(), AMPC_F32},
                                        o * ckk));
  }
  return AMPC_OK;
}

/// convBackward's dx and dw for a stride-1 2-D convolution
/// (useShiftedGemms).
ampc_status convBackwardShifted(Backend &be, const TensorArg &dx,
                                const TensorArg &dw, Buf dyb, Buf xb, Buf wb,
                                const ConvGeom &g, int64_t n, int64_t groups,
                                int64_t o) {
  ShiftedGemms sg(g);
  int64_t og = o / groups, c = g.channels, hw = g.columns();
  int64_t gimg = g.imageSize(), chw = groups * gimg;
  int64_t padded = c * sg.plane, tapsN = groups * sg.taps * og * c;
  bool wantDx = dx.data != nullptr, wantDw = dw.data != nullptr;
  Temp dyw(be), xpad(be), dxpad(be), tapsW(be), tapsDw(be), scr(be);
  // f32 scratch for widening x / dy and narrowing dx (non-f32 dtypes).
  int64_t scrN = std::max(gimg, og * hw);
  AMPC_TRY(scr.alloc(scrN * sizeof(float)));
  Buf sb{scr.get(), AMPC_F32};
  Buf dywb{nullptr, AMPC_F32}, xp{nullptr, AMPC_F32}, dxp{nullptr, AMPC_F32};
  Buf tw{nullptr, AMPC_F32}, tdw{nullptr, AMPC_F32};
  AMPC_TRY(dyw.alloc(og * sg.n * sizeof(float)));
  dywb.data = dyw.get();
  AMPC_TRY(be.fill(dywb, og * sg.n, 0.0));
  AMPC_TRY(xpad.alloc(padded * sizeof(float)));
  xp.data = xpad.get();
  AMPC_TRY(be.fill(xp, padded, 0.0));
  if (wantDx) {
    AMPC_TRY(dxpad.alloc(padded * sizeof(float)));
    dxp.data = dxpad.get();
    AMPC_TRY(tapsW.alloc(tapsN * sizeof(float)));
    tw.data = tapsW.get();
    AMPC_TRY(sg.repack(be, tw, wb, groups, og, g, false));
  }
  if (wantDw) {
    AMPC_TRY(tapsDw.alloc(tapsN * sizeof(float)));
    tdw.data = tapsDw.get();
    AMPC_TRY(be.fill(tdw, tapsN, 0.0));
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t gi = 0; gi < groups; ++gi) {
      AMPC_TRY(sg.expand(be, dywb, offsetBuf(dyb, (i * o + gi * og) * hw), og,
                         g, sb));
      if (wantDw) {
        // dw_tap[og, C] += dy_wide[og, n] * view_tap[C, n]^T, per image in
        // image order.
        AMPC_TRY(sg.pad(be, xp, offsetBuf(xb, i * chw + gi * gimg), g, sb));
        for (int64_t t = 0; t < sg.taps; ++t)
          AMPC_TRY(be.gemm(tapGemm(offsetBuf(tdw, (gi * sg.taps + t) * og * c),
                                   c, dywb, sg.n, false,
                                   offsetBuf(xp, sg.tapOffset(g, t)), sg.plane,
                                   true, og, c, sg.n, 1.0f)));
      }
      if (wantDx) {
        // The padded dx = w_tap[og, C]^T * dy_wide[og, n] at each tap's
        // offset (rows at stride plane), added in tap order: the first tap
        // (offset 0) sets [0, n) of every channel, the rest start at zero.
        for (int64_t ci = 0; ci < c && sg.n < sg.plane; ++ci)
          AMPC_TRY(
              be.setBytes(static_cast<float *>(dxp.data) + ci * sg.plane + sg.n,
                          0, (sg.plane - sg.n) * sizeof(float)));
        for (int64_t t = 0; t < sg.taps; ++t)
          AMPC_TRY(be.gemm(tapGemm(offsetBuf(dxp, sg.tapOffset(g, t)), sg.plane,
                                   offsetBuf(tw, (gi * sg.taps + t) * og * c),
                                   c, true, dywb, sg.n, false, c, sg.n, og,
                                   t == 0 ? 0.0f : 1.0f)));
        AMPC_TRY(
            sg.unpad(be, offsetBuf(dx.buf(), i * chw + gi * gimg), dxp, g, sb));
      }
    }
  if (wantDw)
    AMPC_TRY(sg.repack(be, tdw, dw.buf(), groups, og, g, true));
  return AMPC_OK;
}

/// Whether a tensor of the call is f64: then the whole pass computes in
/// f64 on the backend's convWide (the f32 engines above never see it).
bool anyF64(std::initializer_list<const TensorArg *> ts) {
  for (const TensorArg *t : ts)
    if (t->data && t->dtype == AMPC_F64)
      return true;
  return false;
}

ampc_status convWide(const char *fn, Backend &be, const ConvWideCall &c) {
  if (be.planning()) // the f64 convolutions have no primitives to make
    return AMPC_OK;
  ampc_status st = AMPC_OK;
  if (!be.convWide(c, st))
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: f64 convolutions have no kernel on the %s backend "
                    "yet; cast to f32 first",
                    fn, be.kind() == AMPC_BACKEND_CUDA ? "CUDA" : "this");
  return st;
}

} // namespace

namespace ampc {

ampc_status convForward(const char *fn, ampc_context ctx, const TensorArg &y,
                        const TensorArg &x, const TensorArg &w,
                        const TensorArg &bias, const ConvAttrs &a) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs, ws, bs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  ConvGeom g;
  AMPC_TRY(convGeom(fn, xs, ws, ys, a, g));
  AMPC_TRY(checkBias(fn, bias, ws.d[0], bs));
  if (ys.numel() == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  int64_t groups = a.groups;
  int64_t n = xs.d[0], c = xs.d[1], o = ws.d[0], og = o / groups;
  int64_t ckk = g.rows(), hw = g.columns(), img = g.imageSize();
  if (anyF64({&y, &x, &w, &bias}))
    return convWide(fn, be,
                    ConvWideCall{ConvCall::Forward, g, n, groups, o, x.buf(),
                                 w.buf(), y.buf(), bias.buf()});
  if (og > 0 && ckk > 0) {
    // The backend's own convolution engine (the CPU's oneDNN), into f32,
    // then biased and rounded once as below.
    Temp acc(be);
    float *out = static_cast<float *>(const_cast<void *>(y.data));
    if (y.dtype != AMPC_F32) {
      AMPC_TRY(acc.alloc(ys.numel() * sizeof(float)));
      out = acc.f32();
    }
    ConvCall call{ConvCall::Forward, g, n, groups, o, x.buf(), w.buf(), out};
    if (y.dtype != AMPC_F32) {
      call.final = y.buf();
      call.bias = bias.buf();
    }
    ampc_status st = AMPC_OK;
    if (be.convolve(call, st)) {
      AMPC_TRY(st);
      if (call.final.data)
        return AMPC_OK; // biased and rounded by the engine
      Buf ob{out, AMPC_F32};
      if (bias.data)
        return be.addChannelBias(y.buf(), ob, bias.buf(), n, o, hw);
      if (y.dtype != AMPC_F32)
        return sumToShape(be, y.buf(), ys, ob, ys);
      return AMPC_OK;
    }
  }
  if (useDirect(be, g, x.dtype, w.dtype) && og > 0)
    return convForwardDirect(be, y, x, w, bias, g, n, groups, o);
  // GEMM results land in f32 (y itself when it is f32) so the bias is added
  // before the single rounding to y's dtype.
  Temp acc(be), col(be);
  bool direct = y.dtype == AMPC_F32;
  Buf out{const_cast<void *>(y.data), AMPC_F32};
  if (!direct) {
    AMPC_TRY(acc.alloc(ys.numel() * sizeof(float)));
    out = Buf{acc.get(), AMPC_F32};
  }
  bool shifted = useShiftedGemms(be, g, x.dtype, w.dtype) && og > 0;
  ShiftedGemms sg(g);
  Temp xpad(be), wide(be), taps(be), scr(be);
  Buf xp{nullptr, AMPC_F32}, wd{nullptr, AMPC_F32}, tw{nullptr, AMPC_F32};
  if (shifted) {
    AMPC_TRY(xpad.alloc(g.channels * sg.plane * sizeof(float)));
    xp.data = xpad.get();
    AMPC_TRY(be.fill(xp, g.channels * sg.plane, 0.0));
    AMPC_TRY(wide.alloc(og * sg.n * sizeof(float)));
    wd.data = wide.get();
    AMPC_TRY(taps.alloc(groups * sg.taps * og * g.channels * sizeof(float)));
    tw.data = taps.get();
    AMPC_TRY(sg.repack(be, tw, w.buf(), groups, og, g, false));
    if (x.dtype != AMPC_F32)
      AMPC_TRY(scr.alloc(img * sizeof(float)));
  } else {
    AMPC_TRY(col.alloc(ckk * hw * dtypeSize(x.dtype)));
  }
  Buf colb{col.get(), x.dtype};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      Buf xg = offsetBuf(x.buf(), i * c * (img / g.channels) + gi * img);
      Buf yg = offsetBuf(out, (i * o + gi * og) * hw);
      Buf wg = offsetBuf(w.buf(), gi * og * ckk);
      if (shifted) {
        // wide[og, n] = sum over taps of w_tap[og, C] * view_tap[C, n].
        AMPC_TRY(sg.pad(be, xp, xg, g, Buf{scr.get(), AMPC_F32}));
        for (int64_t t = 0; t < sg.taps; ++t)
          AMPC_TRY(be.gemm(tapGemm(
              wd, sg.n, offsetBuf(tw, (gi * sg.taps + t) * og * g.channels),
              g.channels, false, offsetBuf(xp, sg.tapOffset(g, t)), sg.plane,
              false, og, sg.n, g.channels, t == 0 ? 0.0f : 1.0f)));
        AMPC_TRY(sg.compact(be, yg, wd, og, g));
        continue;
      }
      // A pointwise convolution's columns are the image itself.
      Buf cols = isPointwise(g) ? xg : colb;
      if (ckk > 0 && !isPointwise(g))
        AMPC_TRY(be.im2col(colb, xg, g));
      GemmDesc d = makeGemm(yg, wg, cols, og, hw, ckk, false, false);
      if (ckk == 0)
        AMPC_TRY(be.fill(d.c, og * hw, 0.0));
      else
        AMPC_TRY(be.gemm(d));
    }
    // An f32 output gets its bias image by image, while it is in cache.
    if (bias.data && direct) {
      Buf yi = offsetBuf(out, i * o * hw);
      AMPC_TRY(be.addChannelBias(yi, yi, bias.buf(), 1, o, hw));
    }
  }
  if (bias.data && !direct)
    return be.addChannelBias(y.buf(), out, bias.buf(), n, o, hw);
  if (!direct)
    return sumToShape(be, y.buf(), ys, out, ys);
  return AMPC_OK;
}

ampc_status convBackward(const char *fn, ampc_context ctx,
                         const TensorArg &dx, const TensorArg &dw,
                         const TensorArg &dbias, const TensorArg &dy,
                         const TensorArg &x, const TensorArg &w,
                         const ConvAttrs &a) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dws, dbs, dys, xs, ws;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, false, dxs));
  AMPC_TRY(parseTensor(fn, dw, kFloatDtype, false, dws));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  ConvGeom g;
  AMPC_TRY(convGeom(fn, xs, ws, dys, a, g));
  AMPC_TRY(checkBias(fn, dbias, ws.d[0], dbs));
  if (dx.data && dxs != xs)
    return shapeError(fn, "dx", dxs, xs);
  if (dw.data && dws != ws)
    return shapeError(fn, "dw", dws, ws);
  Backend &be = *ctx->backend;
  int64_t groups = a.groups;
  int64_t n = xs.d[0], c = xs.d[1], o = ws.d[0], og = o / groups;
  int64_t ckk = g.rows(), hw = g.columns(), gimg = g.imageSize();
  int64_t chw = c * (gimg / g.channels);
  Buf dyb = dy.buf(), xb = x.buf(), wb = w.buf();
  if (anyF64({&dx, &dw, &dbias, &dy, &x, &w})) {
    if (dx.data && xs.numel())
      AMPC_TRY(convWide(fn, be,
                        ConvWideCall{ConvCall::BackwardData, g, n, groups, o,
                                     dyb, wb, dx.buf()}));
    Buf dwb = ws.numel() ? dw.buf() : Buf{nullptr, AMPC_F64};
    Buf dbb = o ? dbias.buf() : Buf{nullptr, AMPC_F64};
    if (dwb.data || dbb.data)
      return convWide(fn, be,
                      ConvWideCall{ConvCall::BackwardWeights, g, n, groups, o,
                                   xb, dyb, dwb, dbb});
    return AMPC_OK;
  }
  if (og > 0 && xs.numel() && hw > 0 && ckk > 0) {
    // dx and dw on the backend's own convolution engine (the CPU's oneDNN)
    // where it takes them, into f32 rounded once; what it does not take
    // (and the bias gradient) then runs on the generic paths below.
    // A pass's call: its f32 result into d itself, or into `acc` (then
    // rounded once into d: by the engine for dx, by finish() for dw).
    auto callFor = [&](ConvCall::Pass pass, const TensorArg &d,
                       const Shape &ds, Buf a, Buf b, Temp &acc,
                       ConvCall &call) {
      float *out = static_cast<float *>(const_cast<void *>(d.data));
      if (d.dtype != AMPC_F32) {
        AMPC_TRY(acc.alloc(ds.numel() * sizeof(float)));
        out = acc.f32();
      }
      call = ConvCall{pass, g, n, groups, o, a, b, out};
      if (d.dtype != AMPC_F32 && pass == ConvCall::BackwardData)
        call.final = d.buf();
      return AMPC_OK;
    };
    auto finish = [&](const ConvCall &call, const TensorArg &d,
                      const Shape &ds) {
      if (d.dtype != AMPC_F32 && !call.final.data)
        return sumToShape(be, d.buf(), ds, Buf{call.out, AMPC_F32}, ds);
      return AMPC_OK;
    };
    auto engine = [&](ConvCall::Pass pass, const TensorArg &d,
                      const Shape &ds, Buf a, Buf b, bool &done) {
      Temp acc(be);
      ConvCall call{};
      AMPC_TRY(callFor(pass, d, ds, a, b, acc, call));
      ampc_status st = AMPC_OK;
      if (!(done = be.convolve(call, st)))
        return AMPC_OK;
      AMPC_TRY(st);
      return finish(call, d, ds);
    };
    bool doneDx = false, doneDw = false;
    if (dx.data && dw.data && ws.numel()) {
      // Both on the engine together where it shares their output gradient.
      Temp accX(be), accW(be);
      ConvCall cx{}, cw{};
      AMPC_TRY(callFor(ConvCall::BackwardData, dx, dxs, dyb, wb, accX, cx));
      AMPC_TRY(callFor(ConvCall::BackwardWeights, dw, dws, xb, dyb, accW, cw));
      ampc_status st = AMPC_OK;
      if (be.convolveBackward(cx, cw, st)) {
        AMPC_TRY(st);
        AMPC_TRY(finish(cx, dx, dxs));
        AMPC_TRY(finish(cw, dw, dws));
        doneDx = doneDw = true;
      }
    }
    if (dx.data && !doneDx)
      AMPC_TRY(engine(ConvCall::BackwardData, dx, dxs, dyb, wb, doneDx));
    if (dw.data && ws.numel() && !doneDw)
      AMPC_TRY(engine(ConvCall::BackwardWeights, dw, dws, xb, dyb, doneDw));
    if (doneDx || doneDw) {
      TensorArg none{};
      return convBackward(fn, ctx, doneDx ? none : dx, doneDw ? none : dw,
                          dbias, dy, x, w, a);
    }
  }
  bool direct = useDirect(be, g, x.dtype, w.dtype) && og > 0 && xs.numel() &&
                (dx.data || (dw.data && ws.numel()));
  if (direct)
    return convBackwardDirect(be, dx, ws.numel() ? dw : TensorArg{},
                              o ? dbias : TensorArg{}, dyb, xb, wb, g, n,
                              groups, o);
  if (dbias.data && o) {
    Shape flat;
    flat.rank = 3;
    flat.d[0] = n;
    flat.d[1] = o;
    flat.d[2] = hw;
    bool reduced[kMaxRank] = {true, false, true};
    AMPC_TRY(reduceDims(be, ReduceOp::Sum, dbias.buf(), dyb, flat, reduced));
  }
  if (useShiftedGemms(be, g, x.dtype, w.dtype) && og > 0 && xs.numel() &&
      (dx.data || (dw.data && ws.numel())))
    return convBackwardShifted(be, dx, ws.numel() ? dw : TensorArg{}, dyb, xb,
                               wb, g, n, groups, o);
  if (dx.data && xs.numel()) {
    // An f32 dx is accumulated in place, image by image; other dtypes go
    // through an f32 image rounded once.
    bool directDx = dx.dtype == AMPC_F32;
    Temp dcol(be), dimg(be);
    AMPC_TRY(dcol.alloc(ckk * hw * sizeof(float)));
    if (!directDx)
      AMPC_TRY(dimg.alloc(chw * sizeof(float)));
    Shape img;
    img.rank = 1;
    img.d[0] = chw;
    for (int64_t i = 0; i < n; ++i) {
      float *imgAcc =
          directDx ? static_cast<float *>(const_cast<void *>(dx.data)) + i * chw
                   : dimg.f32();
      AMPC_TRY(be.fill(Buf{imgAcc, AMPC_F32}, chw, 0.0));
      for (int64_t gi = 0; gi < groups && hw > 0 && og > 0; ++gi) {
        // dcol[ckk, hw] = w_g[og, ckk]^T * dy_g[og, hw]
        GemmDesc d = makeGemm(
            Buf{dcol.get(), AMPC_F32}, offsetBuf(wb, gi * og * ckk),
            offsetBuf(dyb, (i * o + gi * og) * hw), ckk, hw, og, true, false);
        AMPC_TRY(be.gemm(d));
        AMPC_TRY(be.col2im(imgAcc + gi * gimg, dcol.f32(), g));
      }
      if (!directDx)
        AMPC_TRY(sumToShape(be, offsetBuf(dx.buf(), i * chw), img,
                            Buf{dimg.get(), AMPC_F32}, img));
    }
  }
  if (dw.data && ws.numel()) {
    Temp col(be), acc(be);
    bool direct = dw.dtype == AMPC_F32;
    Buf out{const_cast<void *>(dw.data), AMPC_F32};
    if (!direct) {
      AMPC_TRY(acc.alloc(ws.numel() * sizeof(float)));
      out = Buf{acc.get(), AMPC_F32};
    }
    AMPC_TRY(be.fill(out, ws.numel(), 0.0));
    AMPC_TRY(col.alloc(ckk * hw * dtypeSize(x.dtype)));
    Buf colb{col.get(), x.dtype};
    for (int64_t i = 0; i < n && hw > 0; ++i) {
      for (int64_t gi = 0; gi < groups; ++gi) {
        Buf xg = offsetBuf(xb, i * chw + gi * gimg);
        if (!isPointwise(g))
          AMPC_TRY(be.im2col(colb, xg, g));
        // dw_g[og, ckk] += dy_g[og, hw] * col[ckk, hw]^T
        GemmDesc d =
            makeGemm(offsetBuf(out, gi * og * ckk),
                     offsetBuf(dyb, (i * o + gi * og) * hw),
                     isPointwise(g) ? xg : colb, og, ckk, hw, false, true);
        d.beta = 1.0f;
        AMPC_TRY(be.gemm(d));
      }
    }
    if (!direct)
      AMPC_TRY(sumToShape(be, dw.buf(), ws, out, ws));
  }
  return AMPC_OK;
}

} // namespace ampc

extern "C" {

ampc_status
ampc_conv2d_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                const int64_t *y_shape, int32_t y_rank, const void *x,
                ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
                const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
                int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
                const int64_t *bias_shape, int32_t bias_rank, int64_t stride_h,
                int64_t stride_w, int64_t pad_h, int64_t pad_w,
                int64_t dilation_h, int64_t dilation_w, int64_t groups) {
  const char *fn = "ampc_conv2d_fwd";
  const int64_t stride[2] = {stride_h, stride_w}, pad[2] = {pad_h, pad_w},
                dil[2] = {dilation_h, dilation_w};
  return guard(fn, [&] {
    return convForward(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), AMPC_TENSOR(w),
                       AMPC_TENSOR(bias), ConvAttrs{2, stride, pad, dil, groups});
  });
}

ampc_status ampc_conv2d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
    int64_t dilation_h, int64_t dilation_w, int64_t groups) {
  const char *fn = "ampc_conv2d_bwd";
  const int64_t stride[2] = {stride_h, stride_w}, pad[2] = {pad_h, pad_w},
                dil[2] = {dilation_h, dilation_w};
  return guard(fn, [&] {
    return convBackward(fn, ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dw),
                        AMPC_TENSOR(dbias), AMPC_TENSOR(dy), AMPC_TENSOR(x),
                        AMPC_TENSOR(w), ConvAttrs{2, stride, pad, dil, groups});
  });
}

} // extern "C"
