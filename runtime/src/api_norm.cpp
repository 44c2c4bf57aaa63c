//===- api_norm.cpp - layer, RMS, group and batch norm ---------*- C++ -*-===//
//
// Validation of ampc_layer_norm_*, ampc_rms_norm_*, ampc_group_norm_* and
// ampc_batch_norm_*. Layer and RMS norm run the backend's norm primitive,
// batch norm the shared scalar code of norm_ops.h; group norm is composed
// of the backend's primitives (f32 intermediates, f64 for f64 tensors;
// one rounding per result). The synchronised batch norm of data-parallel
// runs is in api_sync_batch_norm.cpp.
//
//===----------------------------------------------------------------------===//
#include "composed.h"

#include <vector>

using namespace ampc;

namespace {

/// Checks x (N, C, ...) and the [C] tensors; returns the geometry.
ampc_status bnGeometry(const char *fn, const TensorArg &x,
                       std::initializer_list<const TensorArg *> perChannel,
                       Shape &xs, int64_t &n, int64_t &c, int64_t &inner) {
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  if (xs.rank < 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: x must be (N, C, ...) with rank >= 2, got %s", fn,
                    xs.str().c_str());
  n = xs.d[0];
  c = xs.d[1];
  inner = 1;
  for (int i = 2; i < xs.rank; ++i)
    inner *= xs.d[i];
  Shape want;
  want.rank = 1;
  want.d[0] = c;
  for (const TensorArg *t : perChannel)
    AMPC_TRY(parseShaped(fn, *t, kFloatDtype, true, want));
  return AMPC_OK;
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

//===----------------------------------------------------------------------===//
// group_norm
//===----------------------------------------------------------------------===//

struct GroupGeom {
  Shape v3, c3; // x as [N, C, HW]; w, b as [1, C, 1]
  int64_t rows, cols;
};

ampc_status groupGeom(const char *fn, const Shape &xs, const Shape &ws,
                      int64_t groups, GroupGeom &g) {
  if (xs.rank < 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: x must be [N, C, ...], got %s", fn, xs.str().c_str());
  int64_t c = xs.d[1];
  if (groups < 1 || c % groups != 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: %lld channels are not divisible into %lld groups", fn,
                    static_cast<long long>(c), static_cast<long long>(groups));
  Shape want;
  want.rank = 1;
  want.d[0] = c;
  if (ws != want)
    return shapeError(fn, "w", ws, want);
  int64_t hw = 1;
  for (int i = 2; i < xs.rank; ++i)
    hw *= xs.d[i];
  g.v3 = Shape();
  g.v3.rank = 3;
  g.v3.d[0] = xs.d[0];
  g.v3.d[1] = c;
  g.v3.d[2] = hw;
  g.c3 = Shape();
  g.c3.rank = 3;
  g.c3.d[0] = 1;
  g.c3.d[1] = c;
  g.c3.d[2] = 1;
  g.rows = xs.d[0] * groups;
  g.cols = c / groups * hw;
  return AMPC_OK;
}

ampc_status groupNormFwd(const char *fn, ampc_context ctx, const TensorArg &y,
                         const TensorArg &x, const TensorArg &w,
                         const TensorArg &b, int64_t groups, double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape xs, ys, ws, bs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  GroupGeom g;
  AMPC_TRY(groupGeom(fn, xs, ws, groups, g));
  if (bs != ws)
    return shapeError(fn, b.name, bs, ws);
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  int64_t n = xs.numel();
  if (n == 0)
    return AMPC_OK;
  Kit k(*ctx->backend);
  k.wide({&y, &x, &w, &b});
  Buf xh;
  AMPC_TRY(k.f32(n, xh));
  Buf none{nullptr, AMPC_F32};
  AMPC_TRY(k.be.norm(false, xh, x.buf(), none, none, g.rows, g.cols,
                     static_cast<float>(eps)));
  AMPC_TRY(k.bin(BinaryOp::Mul, xh, g.v3, xh, g.v3, w.buf(), g.c3));
  return k.bin(BinaryOp::Add, y.buf(), g.v3, xh, g.v3, b.buf(), g.c3);
}

ampc_status groupNormBwd(const char *fn, ampc_context ctx, const TensorArg &dx,
                         const TensorArg &dw, const TensorArg &db,
                         const TensorArg &dy, const TensorArg &x,
                         const TensorArg &w, int64_t groups, double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dws, dbs, dys, xs, ws;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, false, dxs));
  AMPC_TRY(parseTensor(fn, dw, kFloatDtype, false, dws));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  GroupGeom g;
  AMPC_TRY(groupGeom(fn, xs, ws, groups, g));
  if (dys != xs)
    return shapeError(fn, dy.name, dys, xs);
  if (dx.data && dxs != xs)
    return shapeError(fn, dx.name, dxs, xs);
  if (dw.data && dws != ws)
    return shapeError(fn, dw.name, dws, ws);
  if (db.data && dbs != ws)
    return shapeError(fn, db.name, dbs, ws);
  Kit k(*ctx->backend);
  k.wide({&dx, &dw, &db, &dy, &x, &w});
  int64_t n = xs.numel();
  if (n == 0) {
    if (dw.data)
      AMPC_TRY(k.be.fill(dw.buf(), ws.numel(), 0.0));
    if (db.data)
      AMPC_TRY(k.be.fill(db.buf(), ws.numel(), 0.0));
    return AMPC_OK;
  }
  Buf none{nullptr, AMPC_F32};
  bool spatial[3] = {true, false, true};
  if (dx.data) {
    // The gradient of the normalised x is dy * w; the group statistics'
    // backward is layer norm's over each group's row.
    Buf gx;
    AMPC_TRY(k.f32(n, gx));
    AMPC_TRY(k.bin(BinaryOp::Mul, gx, g.v3, dy.buf(), g.v3, w.buf(), g.c3));
    AMPC_TRY(k.be.normBwd(false, dx.buf(), none, none, gx, x.buf(), none,
                          g.rows, g.cols, static_cast<float>(eps)));
  }
  if (dw.data) {
    Buf xh;
    AMPC_TRY(k.f32(n, xh));
    AMPC_TRY(k.be.norm(false, xh, x.buf(), none, none, g.rows, g.cols,
                       static_cast<float>(eps)));
    AMPC_TRY(k.bin(BinaryOp::Mul, xh, g.v3, xh, g.v3, dy.buf(), g.v3));
    AMPC_TRY(k.reduce(ReduceOp::Sum, dw.buf(), xh, g.v3, spatial));
  }
  if (db.data)
    AMPC_TRY(k.reduce(ReduceOp::Sum, db.buf(), dy.buf(), g.v3, spatial));
  return AMPC_OK;
}

/// Whether a present tensor among `ts` is f64 (the batch-norm entry points
/// then run the backend's f64 code).
bool anyF64(std::initializer_list<TensorArg> ts) {
  for (const TensorArg &t : ts)
    if (t.data && t.dtype == AMPC_F64)
      return true;
  return false;
}

/// The error of an f64 batch norm on a backend without f64 code (both
/// built-in backends have it).
ampc_status noWideBatchNorm(const char *fn, Backend &be) {
  return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                  "%s: f64 batch norm has no kernel on the %s backend yet "
                  "(the CPU backend computes it in f64)",
                  fn, be.kind() == AMPC_BACKEND_CUDA ? "CUDA" : "this");
}
} // namespace

#define T(x) AMPC_TENSOR(x)

extern "C" {

ampc_status ampc_batch_norm_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *b, ampc_dtype b_dtype, const int64_t *b_shape,
    int32_t b_rank, const void *running_mean, ampc_dtype running_mean_dtype,
    const int64_t *running_mean_shape, int32_t running_mean_rank,
    const void *running_var, ampc_dtype running_var_dtype,
    const int64_t *running_var_shape, int32_t running_var_rank,
    int32_t training, double eps) {
  const char *fn = "ampc_batch_norm_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    TensorArg tw = AMPC_TENSOR(w), tb = AMPC_TENSOR(b),
              tm = AMPC_TENSOR(running_mean), tv = AMPC_TENSOR(running_var);
    Shape xs;
    int64_t n, c, inner;
    AMPC_TRY(bnGeometry(fn, AMPC_TENSOR(x), {&tw, &tb, &tm, &tv}, xs, n, c,
                        inner));
    AMPC_TRY(parseShaped(fn, AMPC_TENSOR(y), kFloatDtype, true, xs));
    if (!(eps >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: eps must be >= 0", fn);
    if (training && n * inner < 2)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: training needs more than one value per channel",
                      fn);
    if (xs.numel() == 0)
      return AMPC_OK;
    if (anyF64({AMPC_TENSOR(y), AMPC_TENSOR(x), tw, tb, tm, tv})) {
      ampc_status st = AMPC_OK;
      if (!ctx->backend->batchNormWide(
              AMPC_TENSOR(y).buf(), AMPC_TENSOR(x).buf(), tw.buf(), tb.buf(),
              tm.buf(), tv.buf(), training != 0, n, c, inner, eps, st))
        return noWideBatchNorm(fn, *ctx->backend);
      return st;
    }
    return ctx->backend->batchNorm(AMPC_TENSOR(y).buf(), AMPC_TENSOR(x).buf(),
                                   tw.buf(), tb.buf(), tm.buf(), tv.buf(),
                                   training != 0, n, c, inner,
                                   static_cast<float>(eps));
  });
}

ampc_status ampc_batch_norm_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *db, ampc_dtype db_dtype, const int64_t *db_shape,
    int32_t db_rank, const void *dy, ampc_dtype dy_dtype,
    const int64_t *dy_shape, int32_t dy_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *w, ampc_dtype w_dtype,
    const int64_t *w_shape, int32_t w_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, int32_t training, double eps) {
  const char *fn = "ampc_batch_norm_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    TensorArg tw = AMPC_TENSOR(w), tm = AMPC_TENSOR(running_mean),
              tv = AMPC_TENSOR(running_var);
    Shape xs;
    int64_t n, c, inner;
    AMPC_TRY(bnGeometry(fn, AMPC_TENSOR(x), {&tw, &tm, &tv}, xs, n, c, inner));
    AMPC_TRY(parseShaped(fn, AMPC_TENSOR(dy), kFloatDtype, true, xs));
    AMPC_TRY(parseShaped(fn, AMPC_TENSOR(dx), kFloatDtype, true, xs));
    Shape cs;
    cs.rank = 1;
    cs.d[0] = c;
    AMPC_TRY(parseShaped(fn, AMPC_TENSOR(dw), kFloatDtype, false, cs));
    AMPC_TRY(parseShaped(fn, AMPC_TENSOR(db), kFloatDtype, false, cs));
    if (xs.numel() == 0)
      return AMPC_OK;
    if (anyF64({AMPC_TENSOR(dx), AMPC_TENSOR(dw), AMPC_TENSOR(db),
                AMPC_TENSOR(dy), AMPC_TENSOR(x), tw, tm, tv})) {
      ampc_status st = AMPC_OK;
      if (!ctx->backend->batchNormBwdWide(
              AMPC_TENSOR(dx).buf(), AMPC_TENSOR(dw).buf(),
              AMPC_TENSOR(db).buf(), AMPC_TENSOR(dy).buf(),
              AMPC_TENSOR(x).buf(), tw.buf(), tm.buf(), tv.buf(),
              training != 0, n, c, inner, eps, st))
        return noWideBatchNorm(fn, *ctx->backend);
      return st;
    }
    return ctx->backend->batchNormBwd(
        AMPC_TENSOR(dx).buf(), AMPC_TENSOR(dw).buf(), AMPC_TENSOR(db).buf(),
        AMPC_TENSOR(dy).buf(), AMPC_TENSOR(x).buf(), tw.buf(), tm.buf(),
        tv.buf(), training != 0, n, c, inner, static_cast<float>(eps));
  });
}

ampc_status ampc_batch_norm_update(
    ampc_context ctx, void *new_mean, ampc_dtype new_mean_dtype,
    const int64_t *new_mean_shape, int32_t new_mean_rank, void *new_var,
    ampc_dtype new_var_dtype, const int64_t *new_var_shape,
    int32_t new_var_rank, const void *x, ampc_dtype x_dtype,
    const int64_t *x_shape, int32_t x_rank, const void *running_mean,
    ampc_dtype running_mean_dtype, const int64_t *running_mean_shape,
    int32_t running_mean_rank, const void *running_var,
    ampc_dtype running_var_dtype, const int64_t *running_var_shape,
    int32_t running_var_rank, double momentum) {
  const char *fn = "ampc_batch_norm_update";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    TensorArg nm = AMPC_TENSOR(new_mean), nv = AMPC_TENSOR(new_var),
              tm = AMPC_TENSOR(running_mean), tv = AMPC_TENSOR(running_var);
    Shape xs;
    int64_t n, c, inner;
    AMPC_TRY(bnGeometry(fn, AMPC_TENSOR(x), {&nm, &nv, &tm, &tv}, xs, n, c,
                        inner));
    if (n * inner < 2)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: needs more than one value per channel", fn);
    if (anyF64({nm, nv, AMPC_TENSOR(x), tm, tv})) {
      ampc_status st = AMPC_OK;
      if (!ctx->backend->batchNormUpdateWide(nm.buf(), nv.buf(),
                                             AMPC_TENSOR(x).buf(), tm.buf(),
                                             tv.buf(), n, c, inner, momentum,
                                             st))
        return noWideBatchNorm(fn, *ctx->backend);
      return st;
    }
    return ctx->backend->batchNormUpdate(nm.buf(), nv.buf(),
                                         AMPC_TENSOR(x).buf(), tm.buf(),
                                         tv.buf(), n, c, inner,
                                         static_cast<float>(momentum));
  });
}

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

ampc_status ampc_group_norm_fwd(ampc_context ctx, AMPC_OUT_PARAM(y),
                                AMPC_IN_PARAM(x), AMPC_IN_PARAM(w), AMPC_IN_PARAM(b),
                                int64_t groups, double eps) {
  const char *fn = "ampc_group_norm_fwd";
  return guard(fn, [&] {
    return groupNormFwd(fn, ctx, T(y), T(x), T(w), T(b), groups, eps);
  });
}

ampc_status ampc_group_norm_bwd(ampc_context ctx, AMPC_OUT_PARAM(dx),
                                AMPC_OUT_PARAM(dw), AMPC_OUT_PARAM(db),
                                AMPC_IN_PARAM(dy), AMPC_IN_PARAM(x), AMPC_IN_PARAM(w),
                                int64_t groups, double eps) {
  const char *fn = "ampc_group_norm_bwd";
  return guard(fn, [&] {
    return groupNormBwd(fn, ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w),
                        groups, eps);
  });
}

} // extern "C"

#undef T
