//===- api_jobs.cpp - where and the binary cross-entropy losses ------------===//
//
// Composed from the backends' primitives (binary, binaryBwd, reduce, copy)
// and the scalar variants of select_ops.h, so the CPU and CUDA backends run
// them without code of their own. Nothing here waits on the device.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {

/// A walk over `s` with all three operands contiguous.
Walk denseWalk(const Shape &s) {
  Walk w = contiguousWalk(s);
  for (int i = 0; i < s.rank; ++i)
    w.stride[2][i] = w.stride[0][i];
  return w;
}

/// Strides of `s` broadcast against `full` (0 on broadcast dims); fails when
/// `s` does not broadcast to `full`.
ampc_status broadcastInto(const char *fn, const char *what, const Shape &s,
                          const Shape &full, int64_t *out) {
  if (s.rank > full.rank)
    return shapeError(fn, what, s, full);
  int64_t st[kMaxRank];
  contiguousStrides(s, st);
  int lead = full.rank - s.rank;
  for (int i = 0; i < full.rank; ++i) {
    if (i < lead) {
      out[i] = 0;
      continue;
    }
    int64_t d = s.d[i - lead];
    if (d != full.d[i] && d != 1)
      return shapeError(fn, what, s, full);
    out[i] = d != full.d[i] ? 0 : st[i - lead];
  }
  return AMPC_OK;
}

ampc_status whereImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                      const TensorArg &c, const TensorArg &a,
                      const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, cs, as, bs;
  AMPC_TRY(parseTensor(fn, y, kAnyDtype, true, ys));
  AMPC_TRY(parseTensor(fn, c, kAnyDtype, true, cs));
  AMPC_TRY(parseTensor(fn, a, kAnyDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kAnyDtype, true, bs));
  Walk taken = contiguousWalk(ys), other = contiguousWalk(ys);
  AMPC_TRY(broadcastInto(fn, "c", cs, ys, taken.stride[1]));
  AMPC_TRY(broadcastInto(fn, "a", as, ys, taken.stride[2]));
  AMPC_TRY(broadcastInto(fn, "b", bs, ys, other.stride[2]));
  for (int i = 0; i < ys.rank; ++i)
    other.stride[1][i] = taken.stride[1][i];
  int64_t n = ys.numel();
  if (n == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  // The two halves in f32, or in y's own type for an integer or f64 y (so
  // no integer passes through f32).
  ampc_dtype half = isIntegerDtype(y.dtype) || y.dtype == AMPC_F64
                        ? y.dtype
                        : AMPC_F32;
  Temp t1(be), t2(be);
  AMPC_TRY(t1.alloc(n * dtypeSize(half)));
  AMPC_TRY(t2.alloc(n * dtypeSize(half)));
  Buf b1{t1.get(), half}, b2{t2.get(), half};
  AMPC_TRY(be.binary(BinaryOp::WhereTrue, b1, c.buf(), a.buf(), taken));
  AMPC_TRY(be.binary(BinaryOp::WhereFalse, b2, c.buf(), b.buf(), other));
  return be.binary(BinaryOp::Add, y.buf(), b1, b2, denseWalk(ys));
}

/// loss = mean(term(a, b)) over a and b of one shape.
ampc_status lossFwd(const char *fn, BinaryOp term, ampc_context ctx,
                    const TensorArg &loss, const TensorArg &a,
                    const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ls, as, bs;
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, ls));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (ls.rank != 0)
    return shapeError(fn, loss.name, ls, Shape{});
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  Backend &be = *ctx->backend;
  int64_t n = as.numel();
  Temp t(be);
  AMPC_TRY(t.alloc(n * sizeof(float)));
  Buf terms{t.get(), AMPC_F32};
  if (n > 0)
    AMPC_TRY(be.binary(term, terms, a.buf(), b.buf(), denseWalk(as)));
  bool reduced[kMaxRank];
  for (int i = 0; i < kMaxRank; ++i)
    reduced[i] = true;
  return reduceDims(be, ReduceOp::Mean, loss.buf(), terms, as, reduced);
}

/// da, db (either may be null) of mean(term(a, b)) from the scalar dloss.
ampc_status lossBwd(const char *fn, BinaryOp term, ampc_context ctx,
                    const TensorArg &da, const TensorArg &db,
                    const TensorArg &dloss, const TensorArg &a,
                    const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape das, dbs, ds, as, bs;
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (ds.rank != 0)
    return shapeError(fn, dloss.name, ds, Shape{});
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != as)
    return shapeError(fn, db.name, dbs, as);
  int64_t n = as.numel();
  if (n == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  // dloss / n at every element: the mean's gradient, on the device.
  Temp t(be);
  AMPC_TRY(t.alloc(n * sizeof(float)));
  Buf g{t.get(), AMPC_F32};
  AMPC_TRY(broadcastTo(be, g, as, dloss.buf(), Shape{},
                       static_cast<float>(1.0 / static_cast<double>(n))));
  Walk w = denseWalk(as);
  if (da.data)
    AMPC_TRY(be.binaryBwd(term, 0, da.buf(), g, a.buf(), b.buf(), w));
  if (db.data)
    AMPC_TRY(be.binaryBwd(term, 1, db.buf(), g, a.buf(), b.buf(), w));
  return AMPC_OK;
}

} // namespace

extern "C" {

ampc_status ampc_where_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                           const int64_t *y_shape, int32_t y_rank,
                           const void *c, ampc_dtype c_dtype,
                           const int64_t *c_shape, int32_t c_rank,
                           const void *a, ampc_dtype a_dtype,
                           const int64_t *a_shape, int32_t a_rank,
                           const void *b, ampc_dtype b_dtype,
                           const int64_t *b_shape, int32_t b_rank) {
  const char *fn = "ampc_where_fwd";
  return guard(fn, [&] {
    return whereImpl(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(c), AMPC_TENSOR(a),
                     AMPC_TENSOR(b));
  });
}

ampc_status ampc_argmax_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                            const int64_t *y_shape, int32_t y_rank,
                            const void *x, ampc_dtype x_dtype,
                            const int64_t *x_shape, int32_t x_rank,
                            int64_t dim, int32_t keepdim) {
  const char *fn = "ampc_argmax_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, xs;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kAnyDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(x), kAnyDtype, true, xs));
    if (y_dtype != AMPC_I32)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: the result must be i32", fn);
    int d = 0;
    AMPC_TRY(normaliseDim(fn, dim, xs.rank, d));
    Shape want;
    for (int i = 0; i < xs.rank; ++i) {
      if (i == d && !keepdim)
        continue;
      want.d[want.rank++] = i == d ? 1 : xs.d[i];
    }
    if (ys != want)
      return shapeError(fn, "y", ys, want);
    if (xs.d[d] == 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: argmax over an empty dim", fn);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i)
      outer *= xs.d[i];
    for (int i = d + 1; i < xs.rank; ++i)
      inner *= xs.d[i];
    if (outer * inner == 0)
      return AMPC_OK;
    return ctx->backend->argmax(AMPC_TENSOR(y).buf(), AMPC_TENSOR(x).buf(),
                                outer, xs.d[d], inner);
  });
}

#define AMPC_JOBS_LOSS(NAME, TERM)                                             \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *loss, ampc_dtype loss_dtype,                     \
      const int64_t *loss_shape, int32_t loss_rank, const void *a,             \
      ampc_dtype a_dtype, const int64_t *a_shape, int32_t a_rank,              \
      const void *b, ampc_dtype b_dtype, const int64_t *b_shape,               \
      int32_t b_rank) {                                                        \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return lossFwd("ampc_" #NAME "_fwd", BinaryOp::TERM, ctx,                \
                     AMPC_TENSOR(loss), AMPC_TENSOR(a), AMPC_TENSOR(b));       \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *da, ampc_dtype da_dtype,                         \
      const int64_t *da_shape, int32_t da_rank, void *db, ampc_dtype db_dtype, \
      const int64_t *db_shape, int32_t db_rank, const void *dloss,             \
      ampc_dtype dloss_dtype, const int64_t *dloss_shape, int32_t dloss_rank,  \
      const void *a, ampc_dtype a_dtype, const int64_t *a_shape,               \
      int32_t a_rank, const void *b, ampc_dtype b_dtype,                       \
      const int64_t *b_shape, int32_t b_rank) {                                \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return lossBwd("ampc_" #NAME "_bwd", BinaryOp::TERM, ctx,                \
                     AMPC_TENSOR(da), AMPC_TENSOR(db), AMPC_TENSOR(dloss),     \
                     AMPC_TENSOR(a), AMPC_TENSOR(b));                          \
    });                                                                        \
  }

AMPC_JOBS_LOSS(binary_cross_entropy, Bce)
AMPC_JOBS_LOSS(binary_cross_entropy_with_logits, BceLogits)
#undef AMPC_JOBS_LOSS

} // extern "C"
