//===- api_select.cpp - where and argmax -----------------------*- C++ -*-===//
//
// Selection: `where` picks each element from one of two tensors (composed
// of the backend's binary primitive and the scalar terms of select_ops.h),
// argmax the index of a dim's first maximum. Nothing here waits on the
// device.
//
//===----------------------------------------------------------------------===//
#include "composed.h"

using namespace ampc;

namespace {

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

} // extern "C"
