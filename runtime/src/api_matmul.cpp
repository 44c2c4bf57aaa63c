//===- api_matmul.cpp - GEMM, matmul and linear ----------------*- C++ -*-===//
//
// ampc_gemm (the strided-batched GEMM every GEMM-shaped op lowers to),
// matmul with PyTorch's broadcasting of 1-D and batched operands, and
// linear (x * w^T + bias, with the epilogues): compositions of the
// backend's strided-batched GEMM with copies and reductions.
//
//===----------------------------------------------------------------------===//
#include "composed.h"

using namespace ampc;

namespace {

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

/// ampc_linear_fwd/_bwd: parses x and w of x * w^T and the optional bias
/// (or its gradient) [out]; `want` is the shape of y (and dy).
ampc_status linearShapes(const char *fn, const TensorArg &x, const TensorArg &w,
                         const TensorArg &bias, Shape &xs, Shape &ws, Shape &bs,
                         Shape &want) {
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  if (ws.rank != 2 || xs.rank < 1 || xs.d[xs.rank - 1] != ws.d[1])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: x %s and w %s do not fit x * w^T", fn,
                    xs.str().c_str(), ws.str().c_str());
  AMPC_TRY(checkBias(fn, bias, ws.d[0], bs));
  want = xs;
  want.d[want.rank - 1] = ws.d[0];
  return AMPC_OK;
}

} // namespace

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
    AMPC_TRY(checkGemmLayout(
        fn, "ldc", {batch, m, n, k, stride_a, stride_b, stride_c}, m, n, k,
        trans_a != 0, trans_b != 0, lda, ldb, ldc));
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
    Shape ys, xs, ws, bs, want;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(linearShapes(fn, AMPC_TENSOR(x), AMPC_TENSOR(w), AMPC_TENSOR(bias),
                          xs, ws, bs, want));
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
    Shape dxs, dws, dbs, dys, xs, ws, want;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dx), kFloatDtype, false, dxs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dw), kFloatDtype, false, dws));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dy), kFloatDtype, true, dys));
    AMPC_TRY(linearShapes(fn, AMPC_TENSOR(x), AMPC_TENSOR(w),
                          AMPC_TENSOR(dbias), xs, ws, dbs, want));
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

} // extern "C"
