//===- api_elementwise.cpp - Unary and broadcasting binary ops --*- C++ -*-===//
//
// Entry points of the elementwise rows of ampc/runtime_kernels.inc, gelu,
// and prelu (the broadcasting binary primitive with its weight viewed as
// [C, 1, ...]).
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {

ampc_status unaryFwdImpl(const char *fn, UnaryOp op, const UnaryAttrs &attrs,
                         ampc_context ctx, const TensorArg &y,
                         const TensorArg &x) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  // neg and abs also compute on integers (exact, wrapping).
  DtypeClass cls =
      op == UnaryOp::Neg || op == UnaryOp::Abs ? kAnyDtype : kFloatDtype;
  AMPC_TRY(parseTensor(fn, y, cls, true, ys));
  AMPC_TRY(parseTensor(fn, x, cls, true, xs));
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  if (xs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->unary(op, attrs, y.buf(), x.buf(), xs.numel());
}

ampc_status unaryBwdImpl(const char *fn, UnaryOp op, const UnaryAttrs &attrs,
                         ampc_context ctx, const TensorArg &dx,
                         const TensorArg &dy, const TensorArg &x) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dys, xs;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, true, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  if (dys != xs)
    return shapeError(fn, dy.name, dys, xs);
  if (dxs != xs)
    return shapeError(fn, dx.name, dxs, xs);
  if (xs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->unaryBwd(op, attrs, dx.buf(), dy.buf(), x.buf(),
                                xs.numel());
}

/// NumPy broadcast of a and b; fails unless it equals `out`.
ampc_status broadcastShapes(const char *fn, const Shape &a, const Shape &b,
                            const Shape &out) {
  Shape r;
  r.rank = a.rank > b.rank ? a.rank : b.rank;
  for (int i = 0; i < r.rank; ++i) {
    int ia = i - (r.rank - a.rank), ib = i - (r.rank - b.rank);
    int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: shapes %s and %s do not broadcast", fn,
                      a.str().c_str(), b.str().c_str());
    r.d[i] = da == 1 ? db : da;
  }
  if (r != out)
    return shapeError(fn, "the output", out, r);
  return AMPC_OK;
}

Walk binaryWalk(const Shape &out, const Shape &a, const Shape &b) {
  Walk w = contiguousWalk(out);
  broadcastStrides(a, out, w.stride[1]);
  broadcastStrides(b, out, w.stride[2]);
  return w;
}

ampc_status binaryFwdImpl(const char *fn, BinaryOp op, ampc_context ctx,
                          const TensorArg &y, const TensorArg &a,
                          const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, as, bs;
  // Comparisons read any dtype and write bool; add, sub, mul, pow, maximum
  // and minimum also compute on integers (exact, wrapping in the result's
  // width).
  bool intOk = isComparison(op) || op == BinaryOp::Add ||
               op == BinaryOp::Sub || op == BinaryOp::Mul ||
               op == BinaryOp::Pow || op == BinaryOp::Maximum ||
               op == BinaryOp::Minimum;
  DtypeClass in = intOk ? kAnyDtype : kFloatDtype;
  AMPC_TRY(parseTensor(fn, y, in, true, ys));
  AMPC_TRY(parseTensor(fn, a, in, true, as));
  AMPC_TRY(parseTensor(fn, b, in, true, bs));
  if (isComparison(op) && y.dtype != AMPC_BOOL)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: the result must be bool (a comparison)", fn);
  AMPC_TRY(broadcastShapes(fn, as, bs, ys));
  if (ys.numel() == 0)
    return AMPC_OK;
  return ctx->backend->binary(op, y.buf(), a.buf(), b.buf(),
                              binaryWalk(ys, as, bs));
}

ampc_status binaryBwdImpl(const char *fn, BinaryOp op, ampc_context ctx,
                          const TensorArg &da, const TensorArg &db,
                          const TensorArg &dy, const TensorArg &a,
                          const TensorArg &b) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape das, dbs, dys, as, bs;
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  AMPC_TRY(broadcastShapes(fn, as, bs, dys));
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != bs)
    return shapeError(fn, db.name, dbs, bs);
  Backend &be = *ctx->backend;
  Walk w = binaryWalk(dys, as, bs);
  const TensorArg *grads[2] = {&da, &db};
  const Shape *shapes[2] = {&as, &bs};
  for (int which = 0; which < 2; ++which) {
    const TensorArg &g = *grads[which];
    if (!g.data || shapes[which]->numel() == 0)
      continue;
    if (dys.numel() == 0) { // broadcast from an empty output: zeros
      AMPC_TRY(be.fill(g.buf(), shapes[which]->numel(), 0.0));
      continue;
    }
    if (*shapes[which] == dys) {
      AMPC_TRY(be.binaryBwd(op, which, g.buf(), dy.buf(), a.buf(), b.buf(), w));
      continue;
    }
    // The per-element gradient in f32 (f64 for an f64 gradient), then
    // summed to the operand's shape.
    Temp full(be);
    Buf fullBuf{nullptr, g.dtype == AMPC_F64 ? AMPC_F64 : AMPC_F32};
    AMPC_TRY(full.alloc(dys.numel() * dtypeSize(fullBuf.dtype)));
    fullBuf.data = full.get();
    AMPC_TRY(be.binaryBwd(op, which, fullBuf, dy.buf(), a.buf(), b.buf(), w));
    AMPC_TRY(sumToShape(be, g.buf(), *shapes[which], fullBuf, dys));
  }
  return AMPC_OK;
}

/// x's shape and the view of prelu's weight that broadcasts against it:
/// [1] for one slope, [C, 1, ...] (rank x.rank - 1) for one per channel.
ampc_status preluShapes(const char *fn, const TensorArg &x, const TensorArg &w,
                        Shape &xs, Shape &view) {
  Shape ws;
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, w, kFloatDtype, true, ws));
  if (ws.rank != 1)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: w must be [1] or [C], got %s",
                    fn, ws.str().c_str());
  if (ws.d[0] == 1) {
    view = ws;
    return AMPC_OK;
  }
  if (xs.rank < 2 || xs.d[1] != ws.d[0])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: w %s must have one slope per channel (dim 1) of x %s",
                    fn, ws.str().c_str(), xs.str().c_str());
  view.rank = xs.rank - 1;
  view.d[0] = ws.d[0];
  for (int i = 1; i < view.rank; ++i)
    view.d[i] = 1;
  return AMPC_OK;
}

/// The walk of prelu over x's shape: operands 0 and 1 contiguous, the
/// weight view broadcast as operand 2.
Walk preluWalk(const Shape &xs, const Shape &view) {
  Walk walk = contiguousWalk(xs);
  broadcastStrides(view, xs, walk.stride[2]);
  return walk;
}

} // namespace

// The entry points of the table's unary rows; a row's attributes arrive as
// its trailing float parameters and reach the scalar code as UnaryAttrs.
#define AMPC_UNARY_KERNEL(NAME, OP, N, ATTRS)                                  \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape,                                                  \
      int32_t x_rank AMPC_KERNEL_ATTR_PARAMS(N, ATTRS)) {                      \
    UnaryAttrs attrs = {{AMPC_KERNEL_ATTR_VALUES(N, ATTRS)}};                  \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return unaryFwdImpl("ampc_" #NAME "_fwd", UnaryOp::OP, attrs, ctx,       \
                          AMPC_TENSOR(y), AMPC_TENSOR(x));                     \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank AMPC_KERNEL_ATTR_PARAMS(N, ATTRS)) {                      \
    UnaryAttrs attrs = {{AMPC_KERNEL_ATTR_VALUES(N, ATTRS)}};                  \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return unaryBwdImpl("ampc_" #NAME "_bwd", UnaryOp::OP, attrs, ctx,       \
                          AMPC_TENSOR(dx), AMPC_TENSOR(dy), AMPC_TENSOR(x));   \
    });                                                                        \
  }

#define AMPC_BINARY_KERNEL(NAME, OP)                                           \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *a, ampc_dtype a_dtype,                       \
      const int64_t *a_shape, int32_t a_rank, const void *b,                   \
      ampc_dtype b_dtype, const int64_t *b_shape, int32_t b_rank) {            \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return binaryFwdImpl("ampc_" #NAME "_fwd", BinaryOp::OP, ctx,            \
                           AMPC_TENSOR(y), AMPC_TENSOR(a), AMPC_TENSOR(b));    \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *da, ampc_dtype da_dtype,                         \
      const int64_t *da_shape, int32_t da_rank, void *db, ampc_dtype db_dtype, \
      const int64_t *db_shape, int32_t db_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *a, ampc_dtype a_dtype, const int64_t *a_shape,               \
      int32_t a_rank, const void *b, ampc_dtype b_dtype,                       \
      const int64_t *b_shape, int32_t b_rank) {                                \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return binaryBwdImpl("ampc_" #NAME "_bwd", BinaryOp::OP, ctx,            \
                           AMPC_TENSOR(da), AMPC_TENSOR(db), AMPC_TENSOR(dy),  \
                           AMPC_TENSOR(a), AMPC_TENSOR(b));                    \
    });                                                                        \
  }

extern "C" {

#include "ampc/runtime_kernels.inc"

static ampc_status geluKind(const char *fn, ampc_gelu_approximate a,
                            UnaryOp &op) {
  if (a != AMPC_GELU_NONE && a != AMPC_GELU_TANH)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: unknown approximate mode %d", fn, static_cast<int>(a));
  op = a == AMPC_GELU_TANH ? UnaryOp::GeluTanh : UnaryOp::Gelu;
  return AMPC_OK;
}

ampc_status ampc_gelu_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                          const int64_t *y_shape, int32_t y_rank, const void *x,
                          ampc_dtype x_dtype, const int64_t *x_shape,
                          int32_t x_rank, ampc_gelu_approximate approximate) {
  return guard("ampc_gelu_fwd", [&] {
    UnaryOp op = UnaryOp::Gelu;
    AMPC_TRY(geluKind("ampc_gelu_fwd", approximate, op));
    return unaryFwdImpl("ampc_gelu_fwd", op, UnaryAttrs{}, ctx, AMPC_TENSOR(y),
                        AMPC_TENSOR(x));
  });
}

ampc_status ampc_gelu_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                          const int64_t *dx_shape, int32_t dx_rank,
                          const void *dy, ampc_dtype dy_dtype,
                          const int64_t *dy_shape, int32_t dy_rank,
                          const void *x, ampc_dtype x_dtype,
                          const int64_t *x_shape, int32_t x_rank,
                          ampc_gelu_approximate approximate) {
  return guard("ampc_gelu_bwd", [&] {
    UnaryOp op = UnaryOp::Gelu;
    AMPC_TRY(geluKind("ampc_gelu_bwd", approximate, op));
    return unaryBwdImpl("ampc_gelu_bwd", op, UnaryAttrs{}, ctx, AMPC_TENSOR(dx),
                        AMPC_TENSOR(dy), AMPC_TENSOR(x));
  });
}

ampc_status ampc_prelu_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                           const int64_t *y_shape, int32_t y_rank,
                           const void *x, ampc_dtype x_dtype,
                           const int64_t *x_shape, int32_t x_rank,
                           const void *w, ampc_dtype w_dtype,
                           const int64_t *w_shape, int32_t w_rank) {
  const char *fn = "ampc_prelu_fwd";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, xs, view;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(preluShapes(fn, AMPC_TENSOR(x), AMPC_TENSOR(w), xs, view));
    if (ys != xs)
      return shapeError(fn, "y", ys, xs);
    if (xs.numel() == 0)
      return AMPC_OK;
    return ctx->backend->binary(BinaryOp::Prelu, AMPC_TENSOR(y).buf(),
                                AMPC_TENSOR(x).buf(), AMPC_TENSOR(w).buf(),
                                preluWalk(xs, view));
  });
}

ampc_status ampc_prelu_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                           const int64_t *dx_shape, int32_t dx_rank, void *dw,
                           ampc_dtype dw_dtype, const int64_t *dw_shape,
                           int32_t dw_rank, const void *dy,
                           ampc_dtype dy_dtype, const int64_t *dy_shape,
                           int32_t dy_rank, const void *x, ampc_dtype x_dtype,
                           const int64_t *x_shape, int32_t x_rank,
                           const void *w, ampc_dtype w_dtype,
                           const int64_t *w_shape, int32_t w_rank) {
  const char *fn = "ampc_prelu_bwd";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    Shape dxs, dws, dys, xs, view;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dx), kFloatDtype, false, dxs));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dw), kFloatDtype, false, dws));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dy), kFloatDtype, true, dys));
    AMPC_TRY(preluShapes(fn, AMPC_TENSOR(x), AMPC_TENSOR(w), xs, view));
    if (dys != xs)
      return shapeError(fn, "dy", dys, xs);
    if (dx && dxs != xs)
      return shapeError(fn, "dx", dxs, xs);
    Shape ws;
    ws.rank = 1;
    ws.d[0] = view.d[0];
    if (dw && dws != ws)
      return shapeError(fn, "dw", dws, ws);
    Backend &be = *ctx->backend;
    Buf dyb = AMPC_TENSOR(dy).buf(), xb = AMPC_TENSOR(x).buf(),
        wb = AMPC_TENSOR(w).buf();
    int64_t numel = xs.numel();
    if (numel == 0) {
      if (dw)
        AMPC_TRY(be.fill(Buf{dw, dw_dtype}, ws.numel(), 0.0));
      return AMPC_OK;
    }
    Walk walk = preluWalk(xs, view);
    if (dx)
      AMPC_TRY(be.binaryBwd(BinaryOp::Prelu, 0, Buf{dx, dx_dtype}, dyb, xb, wb,
                            walk));
    if (dw) {
      // Per element in f32 (f64 when any operand is f64), then summed over
      // every dim but the channel's.
      ampc_dtype acc = dw_dtype == AMPC_F64 || dy_dtype == AMPC_F64 ||
                               x_dtype == AMPC_F64 || w_dtype == AMPC_F64
                           ? AMPC_F64
                           : AMPC_F32;
      Temp full(be);
      AMPC_TRY(full.alloc(numel * dtypeSize(acc)));
      AMPC_TRY(be.binaryBwd(BinaryOp::Prelu, 1, Buf{full.get(), acc}, dyb, xb,
                            wb, walk));
      AMPC_TRY(
          sumToShape(be, Buf{dw, dw_dtype}, view, Buf{full.get(), acc}, xs));
    }
    return AMPC_OK;
  });
}

} // extern "C"
