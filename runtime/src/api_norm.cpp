//===- api_norm_dropout.cpp - batch norm and dropout entry points ---------===//
//
// Validation of ampc_batch_norm_*, ampc_dropout_fwd, ampc_dropout_ranked_fwd
// (the mask of data-parallel ranks: the communicator attached to the
// context gives the rank and the world) and ampc_counter_next; the backends
// run the shared scalar code of norm_ops.h.
//
//===----------------------------------------------------------------------===//
#include "common.h"

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

/// ampc_dropout_fwd and ampc_dropout_ranked_fwd: `sampleElems` 0 is the
/// former (every element draws its own index's mask).
ampc_status dropoutCall(const char *fn, ampc_context ctx, const TensorArg &ty,
                        const TensorArg &tx, const void *step, uint64_t seed,
                        double p, int64_t key, int64_t sampleElems) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  AMPC_TRY(parseTensor(fn, ty, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, tx, kFloatDtype, true, xs));
  if (ys != xs)
    return shapeError(fn, "y", ys, xs);
  if (!step)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: step is NULL", fn);
  if (!(p >= 0.0 && p < 1.0))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: p must be in [0, 1), got %g", fn, p);
  if (key < 0 || key >= (int64_t(1) << 31))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: key must be in [0, 2^31)", fn);
  int64_t numel = xs.numel();
  if (sampleElems < 0 || (sampleElems > 0 && numel % sampleElems != 0))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: sample_elems must be 0 or divide the %lld elements "
                    "of x, got %lld",
                    fn, static_cast<long long>(numel),
                    static_cast<long long>(sampleElems));
  if (numel == 0)
    return AMPC_OK;
  DropoutShard shard;
  if (sampleElems > 0 && ctx->comm) {
    int32_t rank = 0, size = 1;
    AMPC_TRY(ampc_comm_rank(ctx->comm, &rank));
    AMPC_TRY(ampc_comm_size(ctx->comm, &size));
    if (size > 1)
      shard = DropoutShard{size, rank, sampleElems};
  }
  return ctx->backend->dropout(ty.buf(), tx.buf(),
                               static_cast<const int32_t *>(step), seed,
                               static_cast<uint64_t>(key),
                               static_cast<float>(p), numel, shard);
}

} // namespace

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
    return ctx->backend->batchNormUpdate(nm.buf(), nv.buf(),
                                         AMPC_TENSOR(x).buf(), tm.buf(),
                                         tv.buf(), n, c, inner,
                                         static_cast<float>(momentum));
  });
}

ampc_status ampc_dropout_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                             const int64_t *y_shape, int32_t y_rank,
                             const void *x, ampc_dtype x_dtype,
                             const int64_t *x_shape, int32_t x_rank,
                             const void *step, uint64_t seed, double p,
                             int64_t key) {
  const char *fn = "ampc_dropout_fwd";
  return guard(fn, [&] {
    return dropoutCall(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), step, seed, p,
                       key, 0);
  });
}

ampc_status ampc_dropout_ranked_fwd(ampc_context ctx, void *y,
                                    ampc_dtype y_dtype, const int64_t *y_shape,
                                    int32_t y_rank, const void *x,
                                    ampc_dtype x_dtype, const int64_t *x_shape,
                                    int32_t x_rank, const void *step,
                                    uint64_t seed, double p, int64_t key,
                                    int64_t sample_elems) {
  const char *fn = "ampc_dropout_ranked_fwd";
  return guard(fn, [&] {
    return dropoutCall(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), step, seed, p,
                       key, sample_elems);
  });
}

ampc_status ampc_counter_next(ampc_context ctx, void *next,
                              const void *counter) {
  const char *fn = "ampc_counter_next";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    if (!next || !counter)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: a NULL counter", fn);
    return ctx->backend->counterNext(static_cast<int32_t *>(next),
                                     static_cast<const int32_t *>(counter));
  });
}

} // extern "C"
