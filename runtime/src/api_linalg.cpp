//===- api_linalg.cpp - GEMM, matmul, linear, conv2d
//-----------------------===//
//
// Every op here is a composition of the backend's strided-batched GEMM with
// copies and reductions; convolutions are im2col + GEMM on both backends.
//
//===----------------------------------------------------------------------===//
#include "conv_nd.h"

using namespace ampc;

namespace {

GemmDesc makeGemm(Buf c, Buf a, Buf b, int64_t m, int64_t n, int64_t k,
                  bool transA, bool transB) {
  GemmDesc d;
  d.c = c;
  d.a = a;
  d.b = b;
  d.bias = Buf{nullptr, AMPC_F32};
  d.batch = 1;
  d.m = m;
  d.n = n;
  d.k = k;
  d.transA = transA;
  d.transB = transB;
  d.lda = transA ? m : k;
  d.ldb = transB ? k : n;
  d.ldc = n;
  d.strideA = d.strideB = d.strideC = 0;
  d.alpha = 1.0f;
  d.beta = 0.0f;
  d.epilogue = AMPC_EPILOGUE_NONE;
  return d;
}

Buf offsetBuf(Buf b, int64_t elems) {
  return Buf{static_cast<char *>(b.data) + elems * dtypeSize(b.dtype), b.dtype};
}

/// Shapes of a matmul after PyTorch's promotion of 1-D operands.
struct MatmulPlan {
  Shape outBatch, aBatch, bBatch;
  int64_t m, n, k;
};

ampc_status planMatmul(const char *fn, const Shape &as, const Shape &bs,
                       const Shape &ys, MatmulPlan &p) {
  if (as.rank == 0 || bs.rank == 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: matmul operands must have rank >= 1", fn);
  bool aVec = as.rank == 1, bVec = bs.rank == 1;
  p.m = aVec ? 1 : as.d[as.rank - 2];
  int64_t ka = as.d[as.rank - 1];
  int64_t kb = bVec ? bs.d[0] : bs.d[bs.rank - 2];
  p.n = bVec ? 1 : bs.d[bs.rank - 1];
  if (ka != kb)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: inner dims differ: %s @ %s",
                    fn, as.str().c_str(), bs.str().c_str());
  p.k = ka;
  p.aBatch.rank = aVec ? 0 : as.rank - 2;
  p.bBatch.rank = bVec ? 0 : bs.rank - 2;
  for (int i = 0; i < p.aBatch.rank; ++i)
    p.aBatch.d[i] = as.d[i];
  for (int i = 0; i < p.bBatch.rank; ++i)
    p.bBatch.d[i] = bs.d[i];
  Shape &ob = p.outBatch;
  ob.rank = p.aBatch.rank > p.bBatch.rank ? p.aBatch.rank : p.bBatch.rank;
  for (int i = 0; i < ob.rank; ++i) {
    int ia = i - (ob.rank - p.aBatch.rank), ib = i - (ob.rank - p.bBatch.rank);
    int64_t da = ia >= 0 ? p.aBatch.d[ia] : 1,
            db = ib >= 0 ? p.bBatch.d[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: batch dims of %s and %s do not broadcast", fn,
                      as.str().c_str(), bs.str().c_str());
    ob.d[i] = da == 1 ? db : da;
  }
  Shape want = ob;
  if (!aVec)
    want.d[want.rank++] = p.m;
  if (!bVec)
    want.d[want.rank++] = p.n;
  if (want.rank > kMaxRank || ys != want)
    return shapeError(fn, "the matmul output", ys, want);
  return AMPC_OK;
}

/// Matrix-index strides of `batch` broadcast against `out` (0: broadcast).
void batchStrides(const Shape &batch, const Shape &out, int64_t *st) {
  int64_t s = 1;
  int lead = out.rank - batch.rank;
  for (int i = out.rank - 1; i >= 0; --i) {
    bool present = i >= lead && batch.d[i - lead] == out.d[i];
    st[i] = present ? s : 0;
    if (i >= lead)
      s *= batch.d[i - lead];
  }
}

/// Runs d (one matrix each) over every batch index of `out`, C contiguous per
/// batch (d.strideC); A and B follow their own (broadcast) batch shapes.
ampc_status runBatched(Backend &be, GemmDesc d, const Shape &out,
                       const Shape &aBatch, int64_t aMat, const Shape &bBatch,
                       int64_t bMat) {
  int64_t total = out.numel();
  if (total == 0 || d.m == 0 || d.n == 0)
    return AMPC_OK;
  int64_t na = aBatch.numel(), nb = bBatch.numel();
  bool aSimple = na == 1 || na == total, bSimple = nb == 1 || nb == total;
  if (aSimple && bSimple) {
    d.batch = total;
    d.strideA = na == 1 ? 0 : aMat;
    d.strideB = nb == 1 ? 0 : bMat;
    return be.gemm(d);
  }
  int64_t sa[kMaxRank], sb[kMaxRank];
  batchStrides(aBatch, out, sa);
  batchStrides(bBatch, out, sb);
  GemmDesc one = d;
  one.batch = 1;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int j = out.rank - 1; j >= 0; --j) {
      int64_t idx = rem % out.d[j];
      rem /= out.d[j];
      ia += idx * sa[j];
      ib += idx * sb[j];
    }
    one.a = offsetBuf(d.a, ia * aMat);
    one.b = offsetBuf(d.b, ib * bMat);
    one.c = offsetBuf(d.c, i * d.strideC);
    AMPC_TRY(be.gemm(one));
  }
  return AMPC_OK;
}

/// Appends two dims to a batch shape.
Shape withMatrix(const Shape &batch, int64_t r, int64_t c) {
  Shape s = batch;
  s.d[s.rank++] = r;
  s.d[s.rank++] = c;
  return s;
}

/// Computes a GEMM-shaped gradient over the full output batch and sums it
/// into `grad` (whose batch is `gradBatch`), through an f32 scratch buffer
/// when batch dims were broadcast.
ampc_status gradGemm(Backend &be, Buf grad, const Shape &gradBatch, GemmDesc d,
                     const Shape &out, const Shape &aBatch, int64_t aMat,
                     const Shape &bBatch, int64_t bMat) {
  int64_t cMat = d.m * d.n;
  d.strideC = cMat;
  if (gradBatch.numel() == out.numel()) {
    d.c = grad;
    return runBatched(be, d, out, aBatch, aMat, bBatch, bMat);
  }
  Temp full(be);
  AMPC_TRY(full.alloc(out.numel() * cMat * sizeof(float)));
  d.c = Buf{full.get(), AMPC_F32};
  AMPC_TRY(runBatched(be, d, out, aBatch, aMat, bBatch, bMat));
  return sumToShape(be, grad, withMatrix(gradBatch, d.m, d.n),
                    Buf{full.get(), AMPC_F32}, withMatrix(out, d.m, d.n));
}

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

/// Stride-1 2-D convolutions on the CPU take their columns as shifted runs
/// of a zero-padded image ("padded rows", see PaddedRows) instead of
/// im2col's one short run per output row.
bool usePaddedRows(Backend &be, const ConvGeom &g) {
  return be.kind() == AMPC_BACKEND_CPU && g.d == 1 && g.kd == 1 &&
         g.sh == 1 && g.sw == 1 && g.kh * g.kw > 1 && g.oh > 0 && g.ow > 0;
}

/// The columns of a stride-1 2-D convolution computed in the padded image's
/// width: with xpad the image zero-padded to [C, hp, wp], column q of row
/// (c, ky, kx) is xpad[c][ky * dh * wp + kx * dw + q] for q < n =
/// (oh - 1) * wp + ow, one contiguous run per row. Output pixel (oy, ox) is
/// column oy * wp + ox; the columns with ox >= ow are not outputs (each
/// reads a valid, unused element). Every output column holds exactly the
/// values of im2col's column oy * ow + ox.
struct PaddedRows {
  int64_t hp, wp, plane, n;
  explicit PaddedRows(const ConvGeom &g)
      : hp(g.h + 2 * g.ph), wp(g.w + 2 * g.pw), plane(hp * wp),
        n((g.oh - 1) * wp + g.ow) {}

  /// Copies image x [C, h, w] into the interior of xpad (whose border is
  /// already zero).
  ampc_status pad(Backend &be, Buf xpad, Buf x, const ConvGeom &g) const {
    Walk w;
    w.rank = 3;
    w.shape[0] = g.channels;
    w.shape[1] = g.h;
    w.shape[2] = g.w;
    w.stride[0][0] = plane;
    w.stride[0][1] = wp;
    w.stride[0][2] = 1;
    w.stride[1][0] = g.h * g.w;
    w.stride[1][1] = g.w;
    w.stride[1][2] = 1;
    return be.copy(offsetBuf(xpad, g.ph * wp + g.pw), x, w, 1.0f);
  }
  /// col [C * kh * kw, n] from xpad.
  ampc_status columns(Backend &be, Buf col, Buf xpad,
                      const ConvGeom &g) const {
    Walk w;
    w.rank = 4;
    w.shape[0] = g.channels;
    w.shape[1] = g.kh;
    w.shape[2] = g.kw;
    w.shape[3] = n;
    w.stride[0][0] = g.kh * g.kw * n;
    w.stride[0][1] = g.kw * n;
    w.stride[0][2] = n;
    w.stride[0][3] = 1;
    w.stride[1][0] = plane;
    w.stride[1][1] = g.dh * wp;
    w.stride[1][2] = g.dw;
    w.stride[1][3] = 1;
    return be.copy(col, xpad, w, 1.0f);
  }
  /// y [rows, oh, ow] (f32) = the output columns of wide [rows, n] (f32).
  ampc_status compact(Backend &be, Buf y, Buf wide, int64_t rows,
                      const ConvGeom &g) const {
    Walk w;
    w.rank = 3;
    w.shape[0] = rows;
    w.shape[1] = g.oh;
    w.shape[2] = g.ow;
    w.stride[0][0] = g.oh * g.ow;
    w.stride[0][1] = g.ow;
    w.stride[0][2] = 1;
    w.stride[1][0] = n;
    w.stride[1][1] = wp;
    w.stride[1][2] = 1;
    return be.copy(y, wide, w, 1.0f);
  }
};

ampc_status checkBias(const char *fn, const TensorArg &bias, int64_t n,
                      Shape &bs) {
  AMPC_TRY(parseTensor(fn, bias, kFloatDtype, false, bs));
  if (bias.data && (bs.rank != 1 || bs.d[0] != n)) {
    Shape want;
    want.rank = 1;
    want.d[0] = n;
    return shapeError(fn, bias.name, bs, want);
  }
  return AMPC_OK;
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
  // GEMM results land in f32 (y itself when it is f32) so the bias is added
  // before the single rounding to y's dtype.
  Temp acc(be), col(be);
  bool direct = y.dtype == AMPC_F32;
  Buf out{const_cast<void *>(y.data), AMPC_F32};
  if (!direct) {
    AMPC_TRY(acc.alloc(ys.numel() * sizeof(float)));
    out = Buf{acc.get(), AMPC_F32};
  }
  bool padded = usePaddedRows(be, g) && ckk > 0;
  PaddedRows pr(g);
  Temp xpad(be), wide(be);
  if (padded) {
    AMPC_TRY(xpad.alloc(g.channels * pr.plane * dtypeSize(x.dtype)));
    AMPC_TRY(be.fill(Buf{xpad.get(), x.dtype}, g.channels * pr.plane, 0.0));
    AMPC_TRY(wide.alloc(og * pr.n * sizeof(float)));
  }
  AMPC_TRY(col.alloc(ckk * (padded ? pr.n : hw) * dtypeSize(x.dtype)));
  Buf colb{col.get(), x.dtype};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      Buf xg = offsetBuf(x.buf(), i * c * (img / g.channels) + gi * img);
      Buf yg = offsetBuf(out, (i * o + gi * og) * hw);
      Buf wg = offsetBuf(w.buf(), gi * og * ckk);
      if (padded) {
        // The same GEMM over the wide columns, then the output columns.
        Buf xp{xpad.get(), x.dtype}, wd{wide.get(), AMPC_F32};
        AMPC_TRY(pr.pad(be, xp, xg, g));
        AMPC_TRY(pr.columns(be, colb, xp, g));
        AMPC_TRY(
            be.gemm(makeGemm(wd, wg, colb, og, pr.n, ckk, false, false)));
        AMPC_TRY(pr.compact(be, yg, wd, og, g));
        continue;
      }
      if (ckk > 0)
        AMPC_TRY(be.im2col(colb, xg, g));
      GemmDesc d = makeGemm(yg, wg, colb, og, hw, ckk, false, false);
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
  if (dbias.data && o) {
    Shape flat;
    flat.rank = 3;
    flat.d[0] = n;
    flat.d[1] = o;
    flat.d[2] = hw;
    bool reduced[kMaxRank] = {true, false, true};
    AMPC_TRY(reduceDims(be, ReduceOp::Sum, dbias.buf(), dyb, flat, reduced));
  }
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
      float *imgAcc = directDx ? static_cast<float *>(const_cast<void *>(dx.data)) + i * chw
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
        AMPC_TRY(be.im2col(colb, offsetBuf(xb, i * chw + gi * gimg), g));
        // dw_g[og, ckk] += dy_g[og, hw] * col[ckk, hw]^T
        GemmDesc d = makeGemm(offsetBuf(out, gi * og * ckk),
                              offsetBuf(dyb, (i * o + gi * og) * hw), colb, og,
                              ckk, hw, false, true);
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

ampc_status ampc_gemm(ampc_context ctx, void *c, ampc_dtype c_dtype,
                      const void *a, ampc_dtype a_dtype, const void *b,
                      ampc_dtype b_dtype, const void *bias,
                      ampc_dtype bias_dtype, int64_t batch, int64_t m,
                      int64_t n, int64_t k, int32_t trans_a, int32_t trans_b,
                      int64_t lda, int64_t ldb, int64_t ldc, int64_t stride_a,
                      int64_t stride_b, int64_t stride_c, float alpha,
                      float beta, ampc_epilogue epilogue) {
  const char *fn = "ampc_gemm";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (!c || !a || !b)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                      !c ? "c" : (!a ? "a" : "b"));
    ampc_dtype dts[4] = {c_dtype, a_dtype, b_dtype,
                         bias ? bias_dtype : AMPC_F32};
    for (ampc_dtype dt : dts)
      if (!isValidDtype(dt) || !isFloatDtype(dt))
        return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                        "%s: operands must be f32, f16 or bf16 (got %d)", fn,
                        static_cast<int>(dt));
    if (batch < 0 || m < 0 || n < 0 || k < 0 || stride_a < 0 || stride_b < 0 ||
        stride_c < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: negative size or stride", fn);
    if (lda < (trans_a ? m : k) || ldb < (trans_b ? k : n) || ldc < n ||
        lda < 1 || ldb < 1 || ldc < 1)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: leading dimension too small (lda %lld, ldb %lld, "
                      "ldc %lld for m %lld n %lld k %lld)",
                      fn, static_cast<long long>(lda),
                      static_cast<long long>(ldb), static_cast<long long>(ldc),
                      static_cast<long long>(m), static_cast<long long>(n),
                      static_cast<long long>(k));
    if (epilogue < AMPC_EPILOGUE_NONE || epilogue > AMPC_EPILOGUE_GELU_TANH)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: unknown epilogue %d",
                      fn, static_cast<int>(epilogue));
    if (batch == 0 || m == 0 || n == 0)
      return AMPC_OK;
    GemmDesc d;
    d.c = Buf{c, c_dtype};
    d.a = Buf{const_cast<void *>(a), a_dtype};
    d.b = Buf{const_cast<void *>(b), b_dtype};
    d.bias = Buf{const_cast<void *>(bias), bias_dtype};
    d.batch = batch;
    d.m = m;
    d.n = n;
    d.k = k;
    d.transA = trans_a != 0;
    d.transB = trans_b != 0;
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldc;
    d.strideA = stride_a;
    d.strideB = stride_b;
    d.strideC = stride_c;
    d.alpha = alpha;
    d.beta = beta;
    d.epilogue = epilogue;
    return ctx->backend->gemm(d);
  });
}

ampc_status ampc_matmul_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                            const int64_t *y_shape, int32_t y_rank,
                            const void *a, ampc_dtype a_dtype,
                            const int64_t *a_shape, int32_t a_rank,
                            const void *b, ampc_dtype b_dtype,
                            const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_matmul_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    MatmulPlan p;
    AMPC_TRY(planMatmul(fn, as, bs, ys, p));
    Backend &be = *ctx->backend;
    GemmDesc d = makeGemm(Buf{y, y_dtype}, AMPC_TENSOR(a).buf(),
                          AMPC_TENSOR(b).buf(), p.m, p.n, p.k, false, false);
    // A batch of row blocks against one shared B is one tall GEMM.
    if (p.bBatch.numel() == 1 && p.aBatch.numel() == p.outBatch.numel()) {
      d.m = p.m * p.outBatch.numel();
      if (d.m == 0 || d.n == 0)
        return AMPC_OK;
      return be.gemm(d);
    }
    d.strideC = p.m * p.n;
    return runBatched(be, d, p.outBatch, p.aBatch, p.m * p.k, p.bBatch,
                      p.k * p.n);
  });
}

ampc_status ampc_matmul_bwd(ampc_context ctx, void *da, ampc_dtype da_dtype,
                            const int64_t *da_shape, int32_t da_rank, void *db,
                            ampc_dtype db_dtype, const int64_t *db_shape,
                            int32_t db_rank, const void *dy,
                            ampc_dtype dy_dtype, const int64_t *dy_shape,
                            int32_t dy_rank, const void *a, ampc_dtype a_dtype,
                            const int64_t *a_shape, int32_t a_rank,
                            const void *b, ampc_dtype b_dtype,
                            const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_matmul_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape das, dbs, dys, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(da), kFloatDtype, false, das));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(db), kFloatDtype, false, dbs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dy), kFloatDtype, true, dys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    MatmulPlan p;
    AMPC_TRY(planMatmul(fn, as, bs, dys, p));
    if (da && das != as)
      return shapeError(fn, "da", das, as);
    if (db && dbs != bs)
      return shapeError(fn, "db", dbs, bs);
    Backend &be = *ctx->backend;
    Buf dyb = AMPC_TENSOR(dy).buf(), ab = AMPC_TENSOR(a).buf(),
        bb = AMPC_TENSOR(b).buf();
    Shape dyBatch = p.outBatch; // dy's batch always equals the output's
    if (da && as.numel()) {
      if (p.k > 0 && (p.m == 0 || p.n == 0 || p.outBatch.numel() == 0)) {
        AMPC_TRY(be.fill(Buf{da, da_dtype}, as.numel(), 0.0));
      } else if (p.k > 0) {
        // da[m, k] = dy[m, n] * b[k, n]^T
        GemmDesc d = makeGemm(Buf{nullptr, AMPC_F32}, dyb, bb, p.m, p.k, p.n,
                              false, true);
        AMPC_TRY(gradGemm(be, Buf{da, da_dtype}, p.aBatch, d, p.outBatch,
                          dyBatch, p.m * p.n, p.bBatch, p.k * p.n));
      }
    }
    if (db && bs.numel()) {
      if (p.m == 0 || p.n == 0 || p.outBatch.numel() == 0) {
        AMPC_TRY(be.fill(Buf{db, db_dtype}, bs.numel(), 0.0));
      } else if (p.bBatch.numel() == 1 &&
                 p.aBatch.numel() == p.outBatch.numel()) {
        // One shared b: db = a_flat^T * dy_flat over all rows at once.
        int64_t rows = p.m * p.outBatch.numel();
        GemmDesc d =
            makeGemm(Buf{db, db_dtype}, ab, dyb, p.k, p.n, rows, true, false);
        AMPC_TRY(be.gemm(d));
      } else {
        // db[k, n] = a[m, k]^T * dy[m, n]
        GemmDesc d = makeGemm(Buf{nullptr, AMPC_F32}, ab, dyb, p.k, p.n, p.m,
                              true, false);
        AMPC_TRY(gradGemm(be, Buf{db, db_dtype}, p.bBatch, d, p.outBatch,
                          p.aBatch, p.m * p.k, dyBatch, p.m * p.n));
      }
    }
    return AMPC_OK;
  });
}

ampc_status ampc_linear_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, ampc_epilogue epilogue) {
  const char *fn = "ampc_linear_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, xs, ws, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(x), kFloatDtype, true, xs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(w), kFloatDtype, true, ws));
    if (ws.rank != 2 || xs.rank < 1 || xs.d[xs.rank - 1] != ws.d[1])
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: x %s and w %s do not fit x * w^T", fn,
                      xs.str().c_str(), ws.str().c_str());
    AMPC_TRY(checkBias(fn, AMPC_TENSOR(bias), ws.d[0], bs));
    Shape want = xs;
    want.d[want.rank - 1] = ws.d[0];
    if (ys != want)
      return shapeError(fn, "y", ys, want);
    if (epilogue < AMPC_EPILOGUE_NONE || epilogue > AMPC_EPILOGUE_GELU_TANH)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: unknown epilogue %d",
                      fn, static_cast<int>(epilogue));
    int64_t in = ws.d[1], out = ws.d[0], rows = in ? xs.numel() / in : 0;
    if (in == 0)
      rows = ys.numel() / (out ? out : 1);
    if (rows == 0 || out == 0)
      return AMPC_OK;
    GemmDesc d = makeGemm(Buf{y, y_dtype}, AMPC_TENSOR(x).buf(),
                          AMPC_TENSOR(w).buf(), rows, out, in, false, true);
    d.bias = AMPC_TENSOR(bias).buf();
    d.epilogue = epilogue;
    return ctx->backend->gemm(d);
  });
}

ampc_status ampc_linear_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank) {
  const char *fn = "ampc_linear_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape dxs, dws, dbs, dys, xs, ws;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dx), kFloatDtype, false, dxs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dw), kFloatDtype, false, dws));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dy), kFloatDtype, true, dys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(x), kFloatDtype, true, xs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(w), kFloatDtype, true, ws));
    if (ws.rank != 2 || xs.rank < 1 || xs.d[xs.rank - 1] != ws.d[1])
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: x %s and w %s do not fit x * w^T", fn,
                      xs.str().c_str(), ws.str().c_str());
    AMPC_TRY(checkBias(fn, AMPC_TENSOR(dbias), ws.d[0], dbs));
    Shape want = xs;
    want.d[want.rank - 1] = ws.d[0];
    if (dys != want)
      return shapeError(fn, "dy", dys, want);
    if (dx && dxs != xs)
      return shapeError(fn, "dx", dxs, xs);
    if (dw && dws != ws)
      return shapeError(fn, "dw", dws, ws);
    Backend &be = *ctx->backend;
    int64_t in = ws.d[1], out = ws.d[0];
    int64_t rows = 1;
    for (int i = 0; i + 1 < xs.rank; ++i)
      rows *= xs.d[i];
    Buf dyb = AMPC_TENSOR(dy).buf();
    if (dx && xs.numel()) {
      if (out == 0)
        AMPC_TRY(be.fill(Buf{dx, dx_dtype}, xs.numel(), 0.0));
      else
        AMPC_TRY(be.gemm(makeGemm(Buf{dx, dx_dtype}, dyb, AMPC_TENSOR(w).buf(),
                                  rows, in, out, false, false)));
    }
    if (dw && ws.numel()) {
      if (rows == 0)
        AMPC_TRY(be.fill(Buf{dw, dw_dtype}, ws.numel(), 0.0));
      else
        AMPC_TRY(be.gemm(makeGemm(Buf{dw, dw_dtype}, dyb, AMPC_TENSOR(x).buf(),
                                  out, in, rows, true, false)));
    }
    if (dbias && out) {
      Shape flat;
      flat.rank = 2;
      flat.d[0] = rows;
      flat.d[1] = out;
      bool reduced[kMaxRank] = {true, false};
      AMPC_TRY(reduceDims(be, ReduceOp::Sum, Buf{dbias, dbias_dtype}, dyb, flat,
                          reduced));
    }
    return AMPC_OK;
  });
}

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
