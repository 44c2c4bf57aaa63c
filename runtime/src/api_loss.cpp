//===- api_nn.cpp - Reductions, normalisation, pooling, losses
//-------------===//
#include "common.h"

using namespace ampc;

namespace {

/// Flags the reduced dims and checks y's shape.
ampc_status reductionShape(const char *fn, const Shape &xs, const Shape &ys,
                           const int64_t *dims, int32_t nDims, int32_t keepdim,
                           bool *reduced, Shape &keptShape) {
  for (int i = 0; i < kMaxRank; ++i)
    reduced[i] = nDims == 0;
  if (nDims < 0 || (nDims > 0 && !dims))
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: bad dims list", fn);
  for (int32_t i = 0; i < nDims; ++i) {
    int d;
    AMPC_TRY(normaliseDim(fn, dims[i], xs.rank, d));
    if (reduced[d])
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: dim %d repeated", fn,
                      d);
    reduced[d] = true;
  }
  Shape want;
  keptShape = xs;
  for (int i = 0; i < xs.rank; ++i) {
    if (reduced[i])
      keptShape.d[i] = 1;
    if (keepdim || !reduced[i])
      want.d[want.rank++] = reduced[i] ? 1 : xs.d[i];
  }
  if (ys != want)
    return shapeError(fn, "the reduction output", ys, want);
  return AMPC_OK;
}

ampc_status reductionFwd(const char *fn, ReduceOp op, ampc_context ctx,
                         const TensorArg &y, const TensorArg &x,
                         const int64_t *dims, int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs, kept;
  // Sum and max also take integer tensors (exact; a sum's result is i64).
  DtypeClass cls = op == ReduceOp::Mean ? kFloatDtype : kAnyDtype;
  AMPC_TRY(parseTensor(fn, y, cls, true, ys));
  AMPC_TRY(parseTensor(fn, x, cls, true, xs));
  bool reduced[kMaxRank];
  AMPC_TRY(reductionShape(fn, xs, ys, dims, nDims, keepdim, reduced, kept));
  if (ys.numel() == 0)
    return AMPC_OK;
  if (xs.numel() == 0 && op == ReduceOp::Max)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: max of an empty tensor",
                    fn);
  return reduceDims(*ctx->backend, op, y.buf(), x.buf(), xs, reduced);
}

ampc_status reductionBwd(const char *fn, ReduceOp op, ampc_context ctx,
                         const TensorArg &dx, const TensorArg &dy,
                         const TensorArg &x, const TensorArg &y,
                         const int64_t *dims, int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  bool needSaved = op == ReduceOp::Max;
  Shape dxs, dys, xs, ys, kept;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, true, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, needSaved, xs));
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, needSaved, ys));
  bool reduced[kMaxRank];
  AMPC_TRY(reductionShape(fn, dxs, dys, dims, nDims, keepdim, reduced, kept));
  if (needSaved && (xs != dxs || ys != dys))
    return shapeError(fn, "x or y", xs != dxs ? xs : ys, xs != dxs ? dxs : dys);
  if (dxs.numel() == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  if (op == ReduceOp::Max) {
    Walk outer, inner;
    reduceWalks(dxs, reduced, outer, inner);
    return be.reduceMaxBwd(dx.buf(), dy.buf(), x.buf(), y.buf(), outer, inner);
  }
  if (op == ReduceOp::Mean && dx.dtype == AMPC_F64) {
    // f64: the broadcast gradient divided by the count (autograd's
    // grad.expand(...) / n), not times an f32 reciprocal.
    AMPC_TRY(broadcastTo(be, dx.buf(), dxs, dy.buf(), kept, 1.0f));
    Temp count(be);
    AMPC_TRY(count.alloc(sizeof(double)));
    Buf n{count.get(), AMPC_F64};
    AMPC_TRY(be.fill(n, 1,
                     static_cast<double>(dxs.numel()) /
                         static_cast<double>(dys.numel())));
    Walk w = contiguousWalk(dxs);
    for (int i = 0; i < w.rank; ++i)
      w.stride[2][i] = 0;
    return be.binary(BinaryOp::Div, dx.buf(), dx.buf(), n, w);
  }
  float scale = 1.0f;
  if (op == ReduceOp::Mean)
    scale = static_cast<float>(static_cast<double>(dys.numel()) /
                               static_cast<double>(dxs.numel()));
  return broadcastTo(be, dx.buf(), dxs, dy.buf(), kept, scale);
}

/// outer x dim x inner around `dim`.
ampc_status splitAt(const char *fn, const Shape &s, int64_t dim, int64_t &outer,
                    int64_t &size, int64_t &inner) {
  int d;
  AMPC_TRY(normaliseDim(fn, dim, s.rank == 0 ? 1 : s.rank, d));
  outer = inner = 1;
  size = s.rank == 0 ? 1 : s.d[d];
  for (int i = 0; i < d; ++i)
    outer *= s.d[i];
  for (int i = d + 1; i < s.rank; ++i)
    inner *= s.d[i];
  return AMPC_OK;
}

ampc_status softmaxFwd(const char *fn, bool log, ampc_context ctx,
                       const TensorArg &y, const TensorArg &x, int64_t dim) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  int64_t outer, size, inner;
  AMPC_TRY(splitAt(fn, xs, dim, outer, size, inner));
  if (xs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->softmax(log, y.buf(), x.buf(), outer, size, inner);
}

ampc_status softmaxBwd(const char *fn, bool log, ampc_context ctx,
                       const TensorArg &dx, const TensorArg &dy,
                       const TensorArg &y, int64_t dim) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dys, ys;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, true, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  if (dys != ys || dxs != ys)
    return shapeError(fn, dys != ys ? dy.name : dx.name, dys != ys ? dys : dxs,
                      ys);
  int64_t outer, size, inner;
  AMPC_TRY(splitAt(fn, ys, dim, outer, size, inner));
  if (ys.numel() == 0)
    return AMPC_OK;
  return ctx->backend->softmaxBwd(log, dx.buf(), dy.buf(), y.buf(), outer, size,
                                  inner);
}

/// Checks x [..., C] against an optional per-feature tensor of shape [C].
ampc_status featureShape(const char *fn, const TensorArg &t, const Shape &xs,
                         Shape &ts) {
  AMPC_TRY(parseTensor(fn, t, kFloatDtype, false, ts));
  if (!t.data)
    return AMPC_OK;
  Shape want;
  want.rank = 1;
  want.d[0] = xs.d[xs.rank - 1];
  if (ts != want)
    return shapeError(fn, t.name, ts, want);
  return AMPC_OK;
}

ampc_status normFwd(const char *fn, bool rms, ampc_context ctx,
                    const TensorArg &y, const TensorArg &x, const TensorArg &w,
                    const TensorArg &b, double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs, ws, bs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  if (xs.rank == 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: x must have rank >= 1", fn);
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  AMPC_TRY(featureShape(fn, w, xs, ws));
  AMPC_TRY(featureShape(fn, b, xs, bs));
  if (!(eps >= 0))
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: eps must be >= 0", fn);
  int64_t cols = xs.d[xs.rank - 1];
  if (xs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->norm(rms, y.buf(), x.buf(), w.buf(), b.buf(),
                            xs.numel() / cols, cols, static_cast<float>(eps));
}

ampc_status normBwd(const char *fn, bool rms, ampc_context ctx,
                    const TensorArg &dx, const TensorArg &dw,
                    const TensorArg &db, const TensorArg &dy,
                    const TensorArg &x, const TensorArg &w, double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dys, xs, ws, dws, dbs;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, false, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  if (xs.rank == 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: x must have rank >= 1", fn);
  if (dys != xs)
    return shapeError(fn, dy.name, dys, xs);
  if (dx.data && dxs != xs)
    return shapeError(fn, dx.name, dxs, xs);
  AMPC_TRY(featureShape(fn, w, xs, ws));
  AMPC_TRY(featureShape(fn, dw, xs, dws));
  AMPC_TRY(featureShape(fn, db, xs, dbs));
  int64_t cols = xs.d[xs.rank - 1];
  if (cols == 0)
    return AMPC_OK;
  return ctx->backend->normBwd(rms, dx.buf(), dw.buf(), db.buf(), dy.buf(),
                               x.buf(), w.buf(), xs.numel() / cols, cols,
                               static_cast<float>(eps));
}

ampc_status poolGeom(const char *fn, bool isMax, const Shape &xs,
                     const Shape &ys, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, int64_t ph, int64_t pw, PoolGeom &g) {
  if (xs.rank != 4)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: x must be NCHW, got %s", fn,
                    xs.str().c_str());
  if (kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || ph < 0 || pw < 0 ||
      2 * ph > kh || 2 * pw > kw)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: bad kernel/stride/padding (kernel > 0, stride > 0, "
                    "0 <= padding <= kernel / 2)",
                    fn);
  g = PoolGeom{
      xs.d[0] * xs.d[1], xs.d[2], xs.d[3], 0, 0, kh, kw, sh, sw, ph, pw, isMax};
  int64_t oh = (xs.d[2] + 2 * ph - kh), ow = (xs.d[3] + 2 * pw - kw);
  if (oh < 0 || ow < 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: kernel larger than the padded input", fn);
  g.oh = oh / sh + 1;
  g.ow = ow / sw + 1;
  Shape want = xs;
  want.d[2] = g.oh;
  want.d[3] = g.ow;
  if (ys != want)
    return shapeError(fn, "the pooled tensor", ys, want);
  return AMPC_OK;
}

ampc_status poolFwd(const char *fn, bool isMax, ampc_context ctx,
                    const TensorArg &y, const TensorArg &x, int64_t kh,
                    int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                    int64_t pw) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  PoolGeom g;
  AMPC_TRY(poolGeom(fn, isMax, xs, ys, kh, kw, sh, sw, ph, pw, g));
  if (ys.numel() == 0)
    return AMPC_OK;
  return ctx->backend->pool(y.buf(), x.buf(), g);
}

ampc_status poolBwd(const char *fn, bool isMax, ampc_context ctx,
                    const TensorArg &dx, const TensorArg &dy,
                    const TensorArg &x, int64_t kh, int64_t kw, int64_t sh,
                    int64_t sw, int64_t ph, int64_t pw) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dys, xs;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, true, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, isMax, xs));
  if (x.data && xs != dxs)
    return shapeError(fn, x.name, xs, dxs);
  PoolGeom g;
  AMPC_TRY(poolGeom(fn, isMax, dxs, dys, kh, kw, sh, sw, ph, pw, g));
  if (dxs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->poolBwd(dx.buf(), dy.buf(), x.buf(), g);
}

ampc_status scalarShape(const char *fn, const TensorArg &t, const Shape &s) {
  if (s.numel() != 1)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: '%s' must be a scalar, got %s", fn, t.name,
                    s.str().c_str());
  return AMPC_OK;
}

ampc_status crossEntropyShapes(const char *fn, const Shape &ls,
                               const Shape &labs) {
  if (ls.rank != 2 || labs.rank != 1 || labs.d[0] != ls.d[0])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: logits must be [N, C] and labels [N], got %s and %s",
                    fn, ls.str().c_str(), labs.str().c_str());
  return AMPC_OK;
}

} // namespace

#define AMPC_REDUCTION_KERNEL(NAME, OP)                                        \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, const int64_t *dims,             \
      int32_t n_dims, int32_t keepdim) {                                       \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return reductionFwd("ampc_" #NAME "_fwd", ReduceOp::OP, ctx,             \
                          AMPC_TENSOR(y), AMPC_TENSOR(x), dims, n_dims,        \
                          keepdim);                                            \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank, const void *y, ampc_dtype y_dtype,                       \
      const int64_t *y_shape, int32_t y_rank, const int64_t *dims,             \
      int32_t n_dims, int32_t keepdim) {                                       \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return reductionBwd("ampc_" #NAME "_bwd", ReduceOp::OP, ctx,             \
                          AMPC_TENSOR(dx), AMPC_TENSOR(dy), AMPC_TENSOR(x),    \
                          AMPC_TENSOR(y), dims, n_dims, keepdim);              \
    });                                                                        \
  }

#define AMPC_SOFTMAX_KERNEL(NAME, LOG)                                         \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, int64_t dim) {                   \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return softmaxFwd("ampc_" #NAME "_fwd", LOG, ctx, AMPC_TENSOR(y),        \
                        AMPC_TENSOR(x), dim);                                  \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *y, ampc_dtype y_dtype, const int64_t *y_shape,               \
      int32_t y_rank, int64_t dim) {                                           \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return softmaxBwd("ampc_" #NAME "_bwd", LOG, ctx, AMPC_TENSOR(dx),       \
                        AMPC_TENSOR(dy), AMPC_TENSOR(y), dim);                 \
    });                                                                        \
  }

#define AMPC_POOL_KERNEL(NAME, IS_MAX)                                         \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, int64_t kernel_h,                \
      int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h,     \
      int64_t pad_w) {                                                         \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return poolFwd("ampc_" #NAME "_fwd", IS_MAX, ctx, AMPC_TENSOR(y),        \
                     AMPC_TENSOR(x), kernel_h, kernel_w, stride_h, stride_w,   \
                     pad_h, pad_w);                                            \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,    \
      int64_t stride_w, int64_t pad_h, int64_t pad_w) {                        \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return poolBwd("ampc_" #NAME "_bwd", IS_MAX, ctx, AMPC_TENSOR(dx),       \
                     AMPC_TENSOR(dy), AMPC_TENSOR(x), kernel_h, kernel_w,      \
                     stride_h, stride_w, pad_h, pad_w);                        \
    });                                                                        \
  }

extern "C" {

#include "ampc/runtime_kernels.inc"

ampc_status
ampc_layer_norm_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                    const int64_t *y_shape, int32_t y_rank, const void *x,
                    ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
                    const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
                    int32_t w_rank, const void *b, ampc_dtype b_dtype,
                    const int64_t *b_shape, int32_t b_rank, double eps) {
  return guard("ampc_layer_norm_fwd", [&] {
    return normFwd("ampc_layer_norm_fwd", false, ctx, AMPC_TENSOR(y),
                   AMPC_TENSOR(x), AMPC_TENSOR(w), AMPC_TENSOR(b), eps);
  });
}

ampc_status ampc_layer_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, double eps) {
  return guard("ampc_layer_norm_bwd", [&] {
    return normBwd("ampc_layer_norm_bwd", false, ctx, AMPC_TENSOR(dx),
                   AMPC_TENSOR(dw), AMPC_TENSOR(db), AMPC_TENSOR(dy),
                   AMPC_TENSOR(x), AMPC_TENSOR(w), eps);
  });
}

ampc_status ampc_rms_norm_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                              const int64_t *y_shape, int32_t y_rank,
                              const void *x, ampc_dtype x_dtype,
                              const int64_t *x_shape, int32_t x_rank,
                              const void *w, ampc_dtype w_dtype,
                              const int64_t *w_shape, int32_t w_rank,
                              double eps) {
  return guard("ampc_rms_norm_fwd", [&] {
    const void *b = nullptr;
    ampc_dtype b_dtype = AMPC_F32;
    const int64_t *b_shape = nullptr;
    int32_t b_rank = 0;
    return normFwd("ampc_rms_norm_fwd", true, ctx, AMPC_TENSOR(y),
                   AMPC_TENSOR(x), AMPC_TENSOR(w), AMPC_TENSOR(b), eps);
  });
}

ampc_status ampc_rms_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, double eps) {
  return guard("ampc_rms_norm_bwd", [&] {
    void *db = nullptr;
    ampc_dtype db_dtype = AMPC_F32;
    const int64_t *db_shape = nullptr;
    int32_t db_rank = 0;
    return normBwd("ampc_rms_norm_bwd", true, ctx, AMPC_TENSOR(dx),
                   AMPC_TENSOR(dw), AMPC_TENSOR(db), AMPC_TENSOR(dy),
                   AMPC_TENSOR(x), AMPC_TENSOR(w), eps);
  });
}

ampc_status
ampc_cross_entropy_fwd(ampc_context ctx, void *loss, ampc_dtype loss_dtype,
                       const int64_t *loss_shape, int32_t loss_rank,
                       const void *logits, ampc_dtype logits_dtype,
                       const int64_t *logits_shape, int32_t logits_rank,
                       const void *labels, ampc_dtype labels_dtype,
                       const int64_t *labels_shape, int32_t labels_rank,
                       int32_t site) {
  const char *fn = "ampc_cross_entropy_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ls, lgs, labs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(loss), kFloatDtype, true, ls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(logits), kFloatDtype, true, lgs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(labels), kIndexDtype, true, labs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(loss), ls));
    AMPC_TRY(crossEntropyShapes(fn, lgs, labs));
    return ctx->backend->crossEntropy(
        AMPC_TENSOR(loss).buf(), AMPC_TENSOR(logits).buf(),
        AMPC_TENSOR(labels).buf(), lgs.d[0], lgs.d[1], site < 0 ? -1 : site);
  });
}

ampc_status ampc_cross_entropy_bwd(
    ampc_context ctx, void *dlogits, ampc_dtype dlogits_dtype,
    const int64_t *dlogits_shape, int32_t dlogits_rank, const void *dloss,
    ampc_dtype dloss_dtype, const int64_t *dloss_shape, int32_t dloss_rank,
    const void *logits, ampc_dtype logits_dtype, const int64_t *logits_shape,
    int32_t logits_rank, const void *labels, ampc_dtype labels_dtype,
    const int64_t *labels_shape, int32_t labels_rank) {
  const char *fn = "ampc_cross_entropy_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape dls, ds, lgs, labs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dlogits), kFloatDtype, true, dls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dloss), kFloatDtype, true, ds));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(logits), kFloatDtype, true, lgs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(labels), kIndexDtype, true, labs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(dloss), ds));
    AMPC_TRY(crossEntropyShapes(fn, lgs, labs));
    if (dls != lgs)
      return shapeError(fn, "dlogits", dls, lgs);
    if (lgs.numel() == 0)
      return AMPC_OK;
    return ctx->backend->crossEntropyBwd(
        AMPC_TENSOR(dlogits).buf(), AMPC_TENSOR(dloss).buf(),
        AMPC_TENSOR(logits).buf(), AMPC_TENSOR(labels).buf(), lgs.d[0],
        lgs.d[1]);
  });
}

ampc_status ampc_mse_loss_fwd(ampc_context ctx, void *loss,
                              ampc_dtype loss_dtype, const int64_t *loss_shape,
                              int32_t loss_rank, const void *a,
                              ampc_dtype a_dtype, const int64_t *a_shape,
                              int32_t a_rank, const void *b, ampc_dtype b_dtype,
                              const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_mse_loss_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ls, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(loss), kFloatDtype, true, ls));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(loss), ls));
    if (as != bs)
      return shapeError(fn, "b", bs, as);
    return ctx->backend->mse(AMPC_TENSOR(loss).buf(), AMPC_TENSOR(a).buf(),
                             AMPC_TENSOR(b).buf(), as.numel());
  });
}

ampc_status ampc_mse_loss_bwd(
    ampc_context ctx, void *da, ampc_dtype da_dtype, const int64_t *da_shape,
    int32_t da_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dloss, ampc_dtype dloss_dtype,
    const int64_t *dloss_shape, int32_t dloss_rank, const void *a,
    ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank, const void *b,
    ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_mse_loss_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape das, dbs, ds, as, bs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(da), kFloatDtype, false, das));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(db), kFloatDtype, false, dbs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dloss), kFloatDtype, true, ds));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(a), kFloatDtype, true, as));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(b), kFloatDtype, true, bs));
    AMPC_TRY(scalarShape(fn, AMPC_TENSOR(dloss), ds));
    if (as != bs)
      return shapeError(fn, "b", bs, as);
    if ((da && das != as) || (db && dbs != as))
      return shapeError(fn, da && das != as ? "da" : "db",
                        da && das != as ? das : dbs, as);
    if (as.numel() == 0)
      return AMPC_OK;
    return ctx->backend->mseBwd(Buf{da, da_dtype}, Buf{db, db_dtype},
                                AMPC_TENSOR(dloss).buf(), AMPC_TENSOR(a).buf(),
                                AMPC_TENSOR(b).buf(), as.numel());
  });
}

} // extern "C"
