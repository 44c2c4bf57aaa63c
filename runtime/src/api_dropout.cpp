//===- api_dropout.cpp - dropout and the step counter ----------*- C++ -*-===//
//
// Validation of ampc_dropout_fwd, ampc_dropout_ranked_fwd (the mask of
// data-parallel ranks: the communicator attached to the context gives the
// rank and the world) and ampc_counter_next; the backends run the shared
// scalar code of dropout_ops.h.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {

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
  if (ty.dtype == AMPC_F64 || tx.dtype == AMPC_F64) {
    // f64: the f32 kernel's mask, the scale computed in f64 from p.
    ampc_status st = AMPC_OK;
    if (!ctx->backend->dropoutWide(ty.buf(), tx.buf(),
                                   static_cast<const int32_t *>(step), seed,
                                   static_cast<uint64_t>(key),
                                   static_cast<float>(p), p, numel, shard, st))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: dropout of %s into %s has no kernel on the %s "
                      "backend yet (f64 dropout runs on the CPU backend)",
                      fn, dtypeName(tx.dtype), dtypeName(ty.dtype),
                      ctx->backend->kind() == AMPC_BACKEND_CUDA ? "CUDA"
                                                                 : "this");
    return st;
  }
  return ctx->backend->dropout(ty.buf(), tx.buf(),
                               static_cast<const int32_t *>(step), seed,
                               static_cast<uint64_t>(key),
                               static_cast<float>(p), numel, shard);
}

} // namespace

extern "C" {

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
