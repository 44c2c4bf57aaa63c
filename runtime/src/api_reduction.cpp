//===- api_reduction.cpp - Reductions over dims ----------------*- C++ -*-===//
//
// sum, mean and max over a list of dims, softmax and log_softmax,
// logsumexp, norm, cumsum and cosine_similarity, forward and backward.
// sum/mean/max and the softmaxes run the backend's reduce and softmax
// primitives; logsumexp, norm, cumsum and cosine_similarity (PyTorch's fp32
// autocast list) are composed of the backend's primitives (unary, binary,
// reduce, copy, gemm) and the scalar variants of reduction_ops.h, so the
// CPU and CUDA backends run them without code of their own; their
// intermediates are f32 (f64 for f64 tensors: Kit::wide) and each result is
// rounded once to its dtype.
// cumsum copies a table built on the host (a triangle of ones) to the
// device on every call; on CUDA a copy from pageable host memory first
// waits for the stream (a table cached per context would remove it; not
// done yet).
//
//===----------------------------------------------------------------------===//
#include "composed.h"

#include <math.h>

#include <vector>

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

//===----------------------------------------------------------------------===//
// logsumexp, norm
//===----------------------------------------------------------------------===//

ampc_status logsumexpFwd(const char *fn, ampc_context ctx, const TensorArg &y,
                         const TensorArg &x, const int64_t *dims,
                         int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape xs, ks;
  bool reduced[kMaxRank];
  AMPC_TRY(parseReduction(fn, x, y, dims, nDims, keepdim, xs, reduced, ks));
  Kit k(*ctx->backend);
  k.wide({&x, &y});
  int64_t n = xs.numel(), m = ks.numel();
  if (m == 0)
    return AMPC_OK;
  if (n == 0)
    return k.be.fill(y.buf(), m, -INFINITY);
  Buf mx, sh, s;
  AMPC_TRY(k.f32(m, mx));
  AMPC_TRY(k.f32(n, sh));
  AMPC_TRY(k.f32(m, s));
  // m = amax, 0 where infinite; y = log(sum(exp(x - m))) + m.
  AMPC_TRY(k.reduce(ReduceOp::Max, mx, x.buf(), xs, reduced));
  AMPC_TRY(k.un(UnaryOp::FiniteOrZero, mx, mx, m));
  AMPC_TRY(k.bin(BinaryOp::Sub, sh, xs, x.buf(), xs, mx, ks));
  AMPC_TRY(k.un(UnaryOp::Exp, sh, sh, n));
  AMPC_TRY(k.reduce(ReduceOp::Sum, s, sh, xs, reduced));
  AMPC_TRY(k.un(UnaryOp::Log, s, s, m));
  return k.bin(BinaryOp::Add, y.buf(), ks, s, ks, mx, ks);
}

ampc_status logsumexpBwd(const char *fn, ampc_context ctx, const TensorArg &dx,
                         const TensorArg &dy, const TensorArg &x,
                         const TensorArg &y, const int64_t *dims,
                         int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape xs, ks;
  bool reduced[kMaxRank];
  AMPC_TRY(parseReductionBwd(fn, dx, dy, x, y, dims, nDims, keepdim, xs,
                             reduced, ks));
  Kit k(*ctx->backend);
  k.wide({&dx, &dy, &x, &y});
  int64_t n = xs.numel();
  if (n == 0)
    return AMPC_OK;
  Buf t;
  AMPC_TRY(k.f32(n, t));
  AMPC_TRY(k.bin(BinaryOp::Sub, t, xs, x.buf(), xs, y.buf(), ks));
  AMPC_TRY(k.un(UnaryOp::Exp, t, t, n));
  return k.bin(BinaryOp::Mul, dx.buf(), xs, t, xs, dy.buf(), ks);
}

ampc_status checkP(const char *fn, double p) {
  if (!(p >= 1.0))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: p must be >= 1 or inf, got %g", fn, p);
  return AMPC_OK;
}

ampc_status normFwd(const char *fn, ampc_context ctx, const TensorArg &y,
                    const TensorArg &x, double p, const int64_t *dims,
                    int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  AMPC_TRY(checkP(fn, p));
  Shape xs, ks;
  bool reduced[kMaxRank];
  AMPC_TRY(parseReduction(fn, x, y, dims, nDims, keepdim, xs, reduced, ks));
  Kit k(*ctx->backend);
  k.wide({&x, &y});
  int64_t n = xs.numel(), m = ks.numel();
  if (m == 0)
    return AMPC_OK;
  if (n == 0)
    return k.be.fill(y.buf(), m, 0.0);
  Buf a, s;
  AMPC_TRY(k.f32(n, a));
  AMPC_TRY(k.un(UnaryOp::Abs, a, x.buf(), n));
  if (isinf(p))
    return k.reduce(ReduceOp::Max, y.buf(), a, xs, reduced);
  if (p == 1.0)
    return k.reduce(ReduceOp::Sum, y.buf(), a, xs, reduced);
  AMPC_TRY(k.f32(m, s));
  if (p == 2.0) {
    AMPC_TRY(k.bin(BinaryOp::Mul, a, xs, a, xs, a, xs));
    AMPC_TRY(k.reduce(ReduceOp::Sum, s, a, xs, reduced));
    return k.un(UnaryOp::Sqrt, y.buf(), s, m);
  }
  Buf pb, ipb;
  // In f32 as PyTorch's float kernels take p; exact for f64 tensors.
  bool f64 = k.scratch == AMPC_F64;
  AMPC_TRY(k.scalar(f64 ? p : static_cast<float>(p), pb));
  AMPC_TRY(k.scalar(f64 ? 1.0 / p : static_cast<float>(1.0 / p), ipb));
  AMPC_TRY(k.bin(BinaryOp::Pow, a, xs, a, xs, pb, Shape{}));
  AMPC_TRY(k.reduce(ReduceOp::Sum, s, a, xs, reduced));
  return k.bin(BinaryOp::Pow, y.buf(), ks, s, ks, ipb, Shape{});
}

ampc_status normBwd(const char *fn, ampc_context ctx, const TensorArg &dx,
                    const TensorArg &dy, const TensorArg &x,
                    const TensorArg &y, double p, const int64_t *dims,
                    int32_t nDims, int32_t keepdim) {
  AMPC_TRY(checkContext(fn, ctx));
  AMPC_TRY(checkP(fn, p));
  Shape xs, ks;
  bool reduced[kMaxRank];
  AMPC_TRY(parseReductionBwd(fn, dx, dy, x, y, dims, nDims, keepdim, xs,
                             reduced, ks));
  Kit k(*ctx->backend);
  k.wide({&dx, &dy, &x, &y});
  int64_t n = xs.numel(), m = ks.numel();
  if (n == 0)
    return AMPC_OK;
  Buf g;
  AMPC_TRY(k.f32(m, g));
  if (p == 1.0) // dy * sgn(x)
    return k.bin(BinaryOp::SignMul, dx.buf(), xs, x.buf(), xs, dy.buf(), ks);
  if (p == 2.0) { // x * (dy / y), 0 where y == 0
    AMPC_TRY(k.bin(BinaryOp::SafeDiv, g, ks, dy.buf(), ks, y.buf(), ks));
    return k.bin(BinaryOp::Mul, dx.buf(), xs, x.buf(), xs, g, ks);
  }
  Buf t;
  AMPC_TRY(k.f32(n, t));
  if (isinf(p)) {
    // sgn(x) * (dy / count) * mask, mask: |x| == y (or NaN).
    Buf cnt;
    AMPC_TRY(k.f32(m, cnt));
    AMPC_TRY(k.bin(BinaryOp::MaxAbsMask, t, xs, x.buf(), xs, y.buf(), ks));
    AMPC_TRY(k.reduce(ReduceOp::Sum, cnt, t, xs, reduced));
    AMPC_TRY(k.bin(BinaryOp::Div, g, ks, dy.buf(), ks, cnt, ks));
    AMPC_TRY(k.bin(BinaryOp::Mul, t, xs, t, xs, g, ks));
    return k.bin(BinaryOp::SignMul, dx.buf(), xs, x.buf(), xs, t, xs);
  }
  // sgn(x) |x|^(p-1) * (dy / y^(p-1)), 0 where y == 0.
  Buf q, yq;
  AMPC_TRY(k.scalar(k.scratch == AMPC_F64 ? p - 1.0
                                           : static_cast<float>(p - 1.0),
                    q));
  AMPC_TRY(k.f32(m, yq));
  AMPC_TRY(k.un(UnaryOp::Abs, t, x.buf(), n));
  AMPC_TRY(k.bin(BinaryOp::Pow, t, xs, t, xs, q, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::SignMul, t, xs, x.buf(), xs, t, xs));
  AMPC_TRY(k.bin(BinaryOp::Pow, yq, ks, y.buf(), ks, q, Shape{}));
  AMPC_TRY(k.bin(BinaryOp::SafeDiv, g, ks, dy.buf(), ks, yq, ks));
  return k.bin(BinaryOp::Mul, dx.buf(), xs, t, xs, g, ks);
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

/// y = T x along `dim` with T the [L, L] lower-triangular matrix of ones
/// (`reverse`: its transpose, the reversed cumulative sum), one batched GEMM
/// with f32 accumulation over the [outer, L, inner] view. f64 tensors and
/// the forward of an integer or bool x (into an i64 y, as torch.cumsum) are
/// the backend's cumsumWide: a running sum in f64, or exact in int64.
ampc_status cumsumImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                       const TensorArg &x, int64_t dim, bool reverse) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape xs, ys;
  bool intX = x.data && (isIntegerDtype(x.dtype) || x.dtype == AMPC_BOOL);
  // Integers have no gradient: the backward takes floats only.
  DtypeClass xcls = intX && !reverse ? kAnyDtype : kFloatDtype;
  AMPC_TRY(parseTensor(fn, x, xcls, true, xs));
  AMPC_TRY(parseTensor(fn, y, intX ? kAnyDtype : kFloatDtype, true, ys));
  if (intX && y.dtype != AMPC_I64)
    return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                    "%s: tensor '%s' must be i64 (the cumsum of %s '%s'), "
                    "got %s",
                    fn, y.name, dtypeName(x.dtype), x.name,
                    dtypeName(y.dtype));
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  if (intX || x.dtype == AMPC_F64 || y.dtype == AMPC_F64) {
    Shape s = atLeast1(xs);
    int d = 0;
    AMPC_TRY(normaliseDim(fn, dim, s.rank, d));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i)
      outer *= s.d[i];
    for (int i = d + 1; i < s.rank; ++i)
      inner *= s.d[i];
    if (s.numel() == 0)
      return AMPC_OK;
    ampc_status st = AMPC_OK;
    if (!ctx->backend->cumsumWide(y.buf(), x.buf(), outer, s.d[d], inner,
                                  reverse, st))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: the cumsum of %s into %s has no kernel on this "
                      "backend yet",
                      fn, dtypeName(x.dtype), dtypeName(y.dtype));
    return st;
  }
  Shape s = atLeast1(xs);
  int d = 0;
  AMPC_TRY(normaliseDim(fn, dim, s.rank, d));
  int64_t n = s.numel();
  if (n == 0)
    return AMPC_OK;
  int64_t outer = 1, len = s.d[d], inner = 1;
  for (int i = 0; i < d; ++i)
    outer *= s.d[i];
  for (int i = d + 1; i < s.rank; ++i)
    inner *= s.d[i];
  Kit k(*ctx->backend);
  std::vector<float> tri(static_cast<size_t>(len * len), 0.0f);
  for (int64_t i = 0; i < len; ++i)
    for (int64_t j = 0; j <= i; ++j)
      tri[static_cast<size_t>(i * len + j)] = 1.0f;
  Buf t, xf;
  AMPC_TRY(k.upload(tri, t));
  AMPC_TRY(k.asF32(x.buf(), n, xf));
  return ampc_gemm(ctx, const_cast<void *>(y.data), y.dtype,
                   t.data, AMPC_F32, xf.data, AMPC_F32, nullptr, AMPC_F32,
                   outer, len, inner, len, reverse ? 1 : 0, 0, len, inner,
                   inner, 0, len * inner, len * inner, 1.0f, 0.0f,
                   AMPC_EPILOGUE_NONE);
}

//===----------------------------------------------------------------------===//
// cosine_similarity
//===----------------------------------------------------------------------===//

/// The forward pass' values, f32 over the broadcast shape `full`: the
/// normalised operands an, bn, their clamped norms na, nb and the result y
/// (over `keep`, 1 at dim).
struct CosineParts {
  Shape full, keep, out;
  Buf an, bn, na, nb, y;
};

ampc_status cosineParts(const char *fn, Kit &k, const TensorArg &a,
                        const TensorArg &b, int64_t dim, double eps,
                        CosineParts &c) {
  Shape as, bs;
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  // The broadcast shape, of a's rank.
  Shape full = as;
  if (bs.rank > as.rank)
    return shapeError(fn, b.name, bs, as);
  for (int i = 0; i < bs.rank; ++i) {
    int j = as.rank - bs.rank + i;
    if (full.d[j] == 1)
      full.d[j] = bs.d[i];
  }
  if (!broadcastsInto(as, full) || !broadcastsInto(bs, full))
    return shapeError(fn, b.name, bs, as);
  int d = 0;
  AMPC_TRY(normaliseDim(fn, dim, full.rank, d));
  bool reduced[kMaxRank] = {};
  reduced[d] = true;
  reducedShapes(full, reduced, false, c.keep, c.out);
  c.full = full;
  int64_t n = full.numel(), m = c.keep.numel();
  AMPC_TRY(k.f32(n, c.an));
  AMPC_TRY(k.f32(n, c.bn));
  AMPC_TRY(k.f32(m, c.na));
  AMPC_TRY(k.f32(m, c.nb));
  AMPC_TRY(k.f32(m, c.y));
  Buf sq;
  AMPC_TRY(k.f32(n, sq));
  if (n == 0)
    return AMPC_OK;
  AMPC_TRY(broadcastTo(k.be, c.an, full, a.buf(), as, 1.0f));
  AMPC_TRY(broadcastTo(k.be, c.bn, full, b.buf(), bs, 1.0f));
  // The norms clamped below at eps: in f32 as PyTorch's float kernels take
  // it; f64 scratch takes eps exactly (a Maximum with an f64 scalar, as the
  // unary attribute is an f32).
  float e = static_cast<float>(eps);
  Buf eb{nullptr, AMPC_F32};
  if (k.scratch == AMPC_F64)
    AMPC_TRY(k.scalar(eps, eb));
  Buf norms[2] = {c.na, c.nb}, units[2] = {c.an, c.bn};
  for (int i = 0; i < 2; ++i) {
    AMPC_TRY(k.bin(BinaryOp::Mul, sq, full, units[i], full, units[i], full));
    AMPC_TRY(k.reduce(ReduceOp::Sum, norms[i], sq, full, reduced));
    if (eb.data) {
      AMPC_TRY(k.un(UnaryOp::Sqrt, norms[i], norms[i], m));
      AMPC_TRY(k.bin(BinaryOp::Maximum, norms[i], c.keep, norms[i], c.keep,
                     eb, Shape{}));
    } else {
      AMPC_TRY(k.un(UnaryOp::SqrtClampMin, norms[i], norms[i], m, e));
    }
  }
  AMPC_TRY(k.bin(BinaryOp::Div, c.an, full, c.an, full, c.na, c.keep));
  AMPC_TRY(k.bin(BinaryOp::Div, c.bn, full, c.bn, full, c.nb, c.keep));
  AMPC_TRY(k.bin(BinaryOp::Mul, sq, full, c.an, full, c.bn, full));
  return k.reduce(ReduceOp::Sum, c.y, sq, full, reduced);
}

ampc_status cosineFwd(const char *fn, ampc_context ctx, const TensorArg &y,
                      const TensorArg &a, const TensorArg &b, int64_t dim,
                      double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Kit k(*ctx->backend);
  k.wide({&y, &a, &b});
  CosineParts c;
  AMPC_TRY(cosineParts(fn, k, a, b, dim, eps, c));
  Shape ys;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  if (ys != c.out)
    return shapeError(fn, y.name, ys, c.out);
  return k.copy(y.buf(), c.y, ys.numel());
}

ampc_status cosineBwd(const char *fn, ampc_context ctx, const TensorArg &da,
                      const TensorArg &db, const TensorArg &dy,
                      const TensorArg &a, const TensorArg &b, int64_t dim,
                      double eps) {
  AMPC_TRY(checkContext(fn, ctx));
  Kit k(*ctx->backend);
  k.wide({&da, &db, &dy, &a, &b});
  CosineParts c;
  AMPC_TRY(cosineParts(fn, k, a, b, dim, eps, c));
  Shape dys, das, dbs, as, bs;
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (dys != c.out)
    return shapeError(fn, dy.name, dys, c.out);
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != bs)
    return shapeError(fn, db.name, dbs, bs);
  int64_t n = c.full.numel(), m = c.keep.numel();
  if (n == 0)
    return AMPC_OK;
  Buf g, t;
  AMPC_TRY(k.f32(m, g));
  AMPC_TRY(k.f32(n, t));
  // d self = dy / n_self * (other_n - y * self_n), summed to self's shape.
  struct Side {
    const TensorArg &d;
    const Shape &s;
    Buf self, other, norm;
  } sides[2] = {{da, as, c.an, c.bn, c.na}, {db, bs, c.bn, c.an, c.nb}};
  for (const Side &sd : sides) {
    if (!sd.d.data)
      continue;
    AMPC_TRY(k.bin(BinaryOp::Div, g, c.keep, dy.buf(), c.keep, sd.norm,
                   c.keep));
    AMPC_TRY(k.bin(BinaryOp::Mul, t, c.full, sd.self, c.full, c.y, c.keep));
    AMPC_TRY(k.bin(BinaryOp::Sub, t, c.full, sd.other, c.full, t, c.full));
    AMPC_TRY(k.bin(BinaryOp::Mul, t, c.full, t, c.full, g, c.keep));
    AMPC_TRY(sumToShape(k.be, sd.d.buf(), sd.s, t, c.full));
  }
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

#define T(x) AMPC_TENSOR(x)

extern "C" {

#include "ampc/runtime_kernels.inc"

ampc_status ampc_logsumexp_fwd(ampc_context ctx, AMPC_OUT_PARAM(y),
                               AMPC_IN_PARAM(x), const int64_t *dims,
                               int32_t n_dims, int32_t keepdim) {
  const char *fn = "ampc_logsumexp_fwd";
  return guard(fn, [&] {
    return logsumexpFwd(fn, ctx, T(y), T(x), dims, n_dims, keepdim);
  });
}

ampc_status ampc_logsumexp_bwd(ampc_context ctx, AMPC_OUT_PARAM(dx),
                               AMPC_IN_PARAM(dy), AMPC_IN_PARAM(x), AMPC_IN_PARAM(y),
                               const int64_t *dims, int32_t n_dims,
                               int32_t keepdim) {
  const char *fn = "ampc_logsumexp_bwd";
  return guard(fn, [&] {
    return logsumexpBwd(fn, ctx, T(dx), T(dy), T(x), T(y), dims, n_dims,
                        keepdim);
  });
}

ampc_status ampc_norm_fwd(ampc_context ctx, AMPC_OUT_PARAM(y), AMPC_IN_PARAM(x),
                          double p, const int64_t *dims, int32_t n_dims,
                          int32_t keepdim) {
  const char *fn = "ampc_norm_fwd";
  return guard(fn, [&] {
    return normFwd(fn, ctx, T(y), T(x), p, dims, n_dims, keepdim);
  });
}

ampc_status ampc_norm_bwd(ampc_context ctx, AMPC_OUT_PARAM(dx), AMPC_IN_PARAM(dy),
                          AMPC_IN_PARAM(x), AMPC_IN_PARAM(y), double p,
                          const int64_t *dims, int32_t n_dims,
                          int32_t keepdim) {
  const char *fn = "ampc_norm_bwd";
  return guard(fn, [&] {
    return normBwd(fn, ctx, T(dx), T(dy), T(x), T(y), p, dims, n_dims,
                   keepdim);
  });
}

ampc_status ampc_cumsum_fwd(ampc_context ctx, AMPC_OUT_PARAM(y), AMPC_IN_PARAM(x),
                            int64_t dim) {
  const char *fn = "ampc_cumsum_fwd";
  return guard(fn, [&] { return cumsumImpl(fn, ctx, T(y), T(x), dim, false); });
}

ampc_status ampc_cumsum_bwd(ampc_context ctx, AMPC_OUT_PARAM(dx), AMPC_IN_PARAM(dy),
                            int64_t dim) {
  const char *fn = "ampc_cumsum_bwd";
  return guard(fn,
               [&] { return cumsumImpl(fn, ctx, T(dx), T(dy), dim, true); });
}

ampc_status ampc_cosine_similarity_fwd(ampc_context ctx, AMPC_OUT_PARAM(y),
                                       AMPC_IN_PARAM(a), AMPC_IN_PARAM(b),
                                       int64_t dim, double eps) {
  const char *fn = "ampc_cosine_similarity_fwd";
  return guard(fn,
               [&] { return cosineFwd(fn, ctx, T(y), T(a), T(b), dim, eps); });
}

ampc_status ampc_cosine_similarity_bwd(ampc_context ctx, AMPC_OUT_PARAM(da),
                                       AMPC_OUT_PARAM(db), AMPC_IN_PARAM(dy),
                                       AMPC_IN_PARAM(a), AMPC_IN_PARAM(b),
                                       int64_t dim, double eps) {
  const char *fn = "ampc_cosine_similarity_bwd";
  return guard(fn, [&] {
    return cosineBwd(fn, ctx, T(da), T(db), T(dy), T(a), T(b), dim, eps);
  });
}

} // extern "C"

#undef T
