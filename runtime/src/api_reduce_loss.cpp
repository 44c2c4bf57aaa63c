//===- api_reduce_loss.cpp - fp32-list reductions, norms and losses --------===//
//
// logsumexp, norm, cumsum, group_norm, cosine_similarity and the losses
// l1_loss, smooth_l1_loss, kl_div and nll_loss (PyTorch's fp32 autocast
// list), composed of the backends' primitives (unary, binary, reduce, copy,
// norm, gemm) and the scalar variants of reduce_loss_ops.h, so the CPU and
// CUDA backends run them without code of their own. Intermediates are f32; each result is
// rounded once to its dtype. cumsum and nll_loss copy a table built on the
// host (a triangle of ones, the class indices) to the device on every call;
// on CUDA a copy from pageable host memory first waits for the stream, the
// one place here that waits on the device (a table cached per context would
// remove it; not done yet).
//
//===----------------------------------------------------------------------===//
#include "common.h"

#include <math.h>

#include <vector>

using namespace ampc;

namespace {

/// A shape of rank >= 1 (a scalar is [1]) so every walk has a dim.
Shape atLeast1(Shape s) {
  if (s.rank == 0) {
    s.rank = 1;
    s.d[0] = 1;
  }
  return s;
}

/// A walk over `ys` (operand 0 contiguous) with `as` and `bs` broadcast
/// into it (right-aligned, stride 0 on broadcast dims). Shapes are checked.
Walk broadcastWalk(const Shape &ys0, const Shape &as0, const Shape &bs0) {
  Shape ys = atLeast1(ys0);
  Walk w = contiguousWalk(ys);
  broadcastStrides(as0, ys, w.stride[1]);
  broadcastStrides(bs0, ys, w.stride[2]);
  return w;
}

/// Whether `s` broadcasts into `full`.
bool broadcastsInto(const Shape &s, const Shape &full) {
  if (s.rank > full.rank)
    return false;
  int lead = full.rank - s.rank;
  for (int i = 0; i < s.rank; ++i)
    if (s.d[i] != full.d[i + lead] && s.d[i] != 1)
      return false;
  return true;
}

/// The per-call toolkit: the backend and f32 scratch buffers.
struct Kit {
  Backend &be;
  std::vector<std::unique_ptr<Temp>> temps;
  /// The scratch type of f32() and scalar(): f64 for a call on f64 tensors
  /// (whose primitives then compute in f64; see wide()).
  ampc_dtype scratch = AMPC_F32;
  explicit Kit(Backend &be) : be(be) {}

  /// Scratch in f64 when any of `ts` is f64.
  void wide(std::initializer_list<const TensorArg *> ts) {
    for (const TensorArg *t : ts)
      if (t->data && t->dtype == AMPC_F64)
        scratch = AMPC_F64;
  }
  /// n f32 (f64 when wide) elements of scratch.
  ampc_status f32(int64_t n, Buf &out) {
    temps.push_back(std::make_unique<Temp>(be));
    AMPC_TRY(temps.back()->alloc((n > 0 ? n : 1) * dtypeSize(scratch)));
    out = Buf{temps.back()->get(), scratch};
    return AMPC_OK;
  }
  /// One scratch element holding `v`.
  ampc_status scalar(double v, Buf &out) {
    AMPC_TRY(f32(1, out));
    return be.fill(out, 1, v);
  }
  /// y (shape ys) = op(a broadcast from as, b broadcast from bs).
  ampc_status bin(BinaryOp op, Buf y, const Shape &ys, Buf a, const Shape &as,
                  Buf b, const Shape &bs) {
    if (ys.numel() == 0)
      return AMPC_OK;
    return be.binary(op, y, a, b, broadcastWalk(ys, as, bs));
  }
  /// g (shape ys) = d op / d operand `which` * dy (dy of shape ys).
  ampc_status binBwd(BinaryOp op, int which, Buf g, Buf dy, const Shape &ys,
                     Buf a, const Shape &as, Buf b, const Shape &bs) {
    if (ys.numel() == 0)
      return AMPC_OK;
    return be.binaryBwd(op, which, g, dy, a, b, broadcastWalk(ys, as, bs));
  }
  ampc_status un(UnaryOp op, Buf y, Buf x, int64_t n, float attr = 0.0f) {
    if (n == 0)
      return AMPC_OK;
    UnaryAttrs at{};
    at.v[0] = attr;
    return be.unary(op, at, y, x, n);
  }
  /// dst = scale * src over n contiguous elements (converting dtypes).
  ampc_status copy(Buf dst, Buf src, int64_t n, float scale = 1.0f) {
    if (n == 0)
      return AMPC_OK;
    return be.copy(dst, src, flatWalk(n), scale);
  }
  /// y = reduce of x (shape xs) over the flagged dims.
  ampc_status reduce(ReduceOp op, Buf y, Buf x, const Shape &xs0,
                     const bool *reduced0) {
    Shape xs = atLeast1(xs0);
    bool reduced[kMaxRank];
    for (int i = 0; i < xs.rank; ++i)
      reduced[i] = xs0.rank == 0 ? true : reduced0[i];
    return reduceDims(be, op, y, x, xs, reduced);
  }
  /// y = reduce of all n elements of x.
  ampc_status reduceAll(ReduceOp op, Buf y, Buf x, int64_t n) {
    Shape s;
    s.rank = 1;
    s.d[0] = n;
    bool all[1] = {true};
    return reduceDims(be, op, y, x, s, all);
  }
  /// The f32 copy of a tensor (the tensor itself when it is f32).
  ampc_status asF32(Buf x, int64_t n, Buf &out) {
    if (x.dtype == AMPC_F32) {
      out = x;
      return AMPC_OK;
    }
    AMPC_TRY(f32(n, out));
    return copy(out, x, n);
  }
  /// n f32 values from the host.
  ampc_status upload(const std::vector<float> &host, Buf &out) {
    AMPC_TRY(f32(static_cast<int64_t>(host.size()), out));
    if (host.empty())
      return AMPC_OK;
    return be.copyBytes(out.data, host.data(), host.size() * sizeof(float),
                        AMPC_MEMCPY_HOST_TO_DEVICE);
  }
};

/// Parses and checks the dims of a reduction of rank `rank`: sorted,
/// distinct, in range; an empty list only for a scalar.
ampc_status parseDims(const char *fn, const int64_t *dims, int32_t nDims,
                      int rank, bool *reduced) {
  for (int i = 0; i < kMaxRank; ++i)
    reduced[i] = false;
  if (nDims < 0 || (nDims > 0 && !dims))
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: bad dims", fn);
  if (nDims == 0 && rank > 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: dims must not be empty", fn);
  for (int32_t i = 0; i < nDims; ++i) {
    if (dims[i] < 0 || dims[i] >= rank || (i > 0 && dims[i] <= dims[i - 1]))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: dims must be sorted, distinct and below rank %d",
                      fn, rank);
    reduced[dims[i]] = true;
  }
  return AMPC_OK;
}

/// The shape of a reduction of xs: `keep` has 1 at the reduced dims (the
/// data layout of the result either way), `out` the result's shape.
void reducedShapes(const Shape &xs, const bool *reduced, bool keepdim,
                   Shape &keep, Shape &out) {
  keep = Shape();
  out = Shape();
  for (int i = 0; i < xs.rank; ++i) {
    keep.d[keep.rank++] = reduced[i] ? 1 : xs.d[i];
    if (!reduced[i] || keepdim)
      out.d[out.rank++] = reduced[i] ? 1 : xs.d[i];
  }
}

/// Parses x, the dims, and checks `r` (the result or its gradient) has the
/// reduction's shape.
ampc_status parseReduction(const char *fn, const TensorArg &x,
                           const TensorArg &r, const int64_t *dims,
                           int32_t nDims, int32_t keepdim, Shape &xs,
                           bool *reduced, Shape &keep) {
  Shape rs, out;
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  AMPC_TRY(parseTensor(fn, r, kFloatDtype, true, rs));
  AMPC_TRY(parseDims(fn, dims, nDims, xs.rank, reduced));
  reducedShapes(xs, reduced, keepdim != 0, keep, out);
  if (rs != out)
    return shapeError(fn, r.name, rs, out);
  return AMPC_OK;
}

/// The backward of a reduction: parseReduction of the forward result `y` and
/// of `dy`, and dx of x's shape.
ampc_status parseReductionBwd(const char *fn, const TensorArg &dx,
                              const TensorArg &dy, const TensorArg &x,
                              const TensorArg &y, const int64_t *dims,
                              int32_t nDims, int32_t keepdim, Shape &xs,
                              bool *reduced, Shape &keep) {
  AMPC_TRY(parseReduction(fn, x, y, dims, nDims, keepdim, xs, reduced, keep));
  AMPC_TRY(parseReduction(fn, x, dy, dims, nDims, keepdim, xs, reduced, keep));
  return parseShaped(fn, dx, kFloatDtype, true, xs);
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
    if (!ctx->backend->cumsumWide(y.buf(), x.buf(), outer, s.d[d], inner,
                                  reverse))
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: the cumsum of %s into %s has no kernel on this "
                      "backend yet",
                      fn, dtypeName(x.dtype), dtypeName(y.dtype));
    return AMPC_OK;
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
  float e = static_cast<float>(eps);
  AMPC_TRY(k.bin(BinaryOp::Mul, sq, full, c.an, full, c.an, full));
  AMPC_TRY(k.reduce(ReduceOp::Sum, c.na, sq, full, reduced));
  AMPC_TRY(k.un(UnaryOp::SqrtClampMin, c.na, c.na, m, e));
  AMPC_TRY(k.bin(BinaryOp::Mul, sq, full, c.bn, full, c.bn, full));
  AMPC_TRY(k.reduce(ReduceOp::Sum, c.nb, sq, full, reduced));
  AMPC_TRY(k.un(UnaryOp::SqrtClampMin, c.nb, c.nb, m, e));
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

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The shape a loss of terms of shape `s` gives with `reduction`.
Shape lossShape(const Shape &s, ampc_reduction reduction) {
  return reduction == AMPC_REDUCTION_NONE ? s : Shape();
}

ampc_status checkReduction(const char *fn, ampc_reduction r, const Shape &s) {
  if (r < AMPC_REDUCTION_NONE || r > AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: unknown reduction %d",
                    fn, static_cast<int>(r));
  if (r == AMPC_REDUCTION_BATCHMEAN && s.rank == 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: batchmean needs a batch dim", fn);
  return AMPC_OK;
}

/// The gradient of each term from the loss' gradient: 1 (none, sum), 1/n
/// (mean) or 1/size(0) (batchmean).
float termScale(ampc_reduction r, const Shape &s) {
  if (r == AMPC_REDUCTION_MEAN)
    return static_cast<float>(1.0 / static_cast<double>(s.numel()));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return static_cast<float>(1.0 / static_cast<double>(s.d[0]));
  return 1.0f;
}

/// loss = reduction(terms) with terms f32 of shape s.
ampc_status reduceTerms(Kit &k, Buf loss, Buf terms, const Shape &s,
                        ampc_reduction r, float sign = 1.0f) {
  int64_t n = s.numel();
  if (r == AMPC_REDUCTION_NONE)
    return k.copy(loss, terms, n, sign);
  Buf tot;
  AMPC_TRY(k.f32(1, tot));
  if (n == 0)
    AMPC_TRY(k.be.fill(tot, 1, 0.0));
  else
    AMPC_TRY(k.reduceAll(ReduceOp::Sum, tot, terms, n));
  float scale = r == AMPC_REDUCTION_SUM ? 1.0f : termScale(r, s);
  if (n == 0 && r == AMPC_REDUCTION_MEAN)
    return k.be.fill(loss, 1, NAN);
  return k.copy(loss, tot, 1, sign * scale);
}

/// The kind of per-element term of a pair loss.
struct PairTerm {
  bool binary;  // a binary variant of (a, b); else a unary one of a - b
  BinaryOp bop; // binary
  UnaryOp uop;  // unary of the difference
  float attr;
};

ampc_status pairParse(const char *fn, const TensorArg &a, const TensorArg &b,
                      Shape &as) {
  Shape bs;
  AMPC_TRY(parseTensor(fn, a, kFloatDtype, true, as));
  AMPC_TRY(parseTensor(fn, b, kFloatDtype, true, bs));
  if (as != bs)
    return shapeError(fn, b.name, bs, as);
  return AMPC_OK;
}

ampc_status pairLossFwd(const char *fn, ampc_context ctx, const PairTerm &term,
                        const TensorArg &loss, const TensorArg &a,
                        const TensorArg &b, ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape as, ls;
  AMPC_TRY(pairParse(fn, a, b, as));
  AMPC_TRY(checkReduction(fn, r, as));
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, ls));
  if (ls != lossShape(as, r))
    return shapeError(fn, loss.name, ls, lossShape(as, r));
  Kit k(*ctx->backend);
  int64_t n = as.numel();
  Buf t;
  AMPC_TRY(k.f32(n, t));
  if (term.binary) {
    AMPC_TRY(k.bin(term.bop, t, as, a.buf(), as, b.buf(), as));
  } else {
    AMPC_TRY(k.bin(BinaryOp::Sub, t, as, a.buf(), as, b.buf(), as));
    AMPC_TRY(k.un(term.uop, t, t, n, term.attr));
  }
  return reduceTerms(k, loss.buf(), t, as, r);
}

ampc_status pairLossBwd(const char *fn, ampc_context ctx, const PairTerm &term,
                        const TensorArg &da, const TensorArg &db,
                        const TensorArg &dloss, const TensorArg &a,
                        const TensorArg &b, ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape as, das, dbs, ds;
  AMPC_TRY(pairParse(fn, a, b, as));
  AMPC_TRY(checkReduction(fn, r, as));
  AMPC_TRY(parseTensor(fn, da, kFloatDtype, false, das));
  AMPC_TRY(parseTensor(fn, db, kFloatDtype, false, dbs));
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  if (ds != lossShape(as, r))
    return shapeError(fn, dloss.name, ds, lossShape(as, r));
  if (da.data && das != as)
    return shapeError(fn, da.name, das, as);
  if (db.data && dbs != as)
    return shapeError(fn, db.name, dbs, as);
  int64_t n = as.numel();
  if (n == 0)
    return AMPC_OK;
  Kit k(*ctx->backend);
  Buf g;
  AMPC_TRY(k.f32(n, g));
  AMPC_TRY(broadcastTo(k.be, g, as, dloss.buf(), ds, termScale(r, as)));
  if (term.binary) {
    if (da.data)
      AMPC_TRY(k.binBwd(term.bop, 0, da.buf(), g, as, a.buf(), as, b.buf(),
                        as));
    if (db.data)
      AMPC_TRY(k.binBwd(term.bop, 1, db.buf(), g, as, a.buf(), as, b.buf(),
                        as));
    return AMPC_OK;
  }
  // d a = f'(a - b) * g, d b = -d a.
  Buf d;
  AMPC_TRY(k.f32(n, d));
  AMPC_TRY(k.bin(BinaryOp::Sub, d, as, a.buf(), as, b.buf(), as));
  UnaryAttrs at{};
  at.v[0] = term.attr;
  AMPC_TRY(k.be.unaryBwd(term.uop, at, d, g, d, n));
  if (da.data)
    AMPC_TRY(k.copy(da.buf(), d, n));
  if (db.data)
    AMPC_TRY(k.copy(db.buf(), d, n, -1.0f));
  return AMPC_OK;
}

/// nll_loss' per-element weights W [N, C]: 1 at (i, labels[i]) for the rows
/// whose label is not ignore_index, 0 elsewhere; and the counted rows.
ampc_status nllWeights(const char *fn, Kit &k, const TensorArg &logp,
                       const TensorArg &labels, int64_t ignoreIndex,
                       Shape &ls, Buf &w, Buf &valid, int32_t site = -1) {
  Shape ys;
  AMPC_TRY(parseTensor(fn, logp, kFloatDtype, true, ls));
  AMPC_TRY(parseTensor(fn, labels, kIndexDtype, true, ys));
  if (ls.rank != 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: logp must be [N, C], got %s", fn, ls.str().c_str());
  Shape want;
  want.rank = 1;
  want.d[0] = ls.d[0];
  if (ys != want)
    return shapeError(fn, labels.name, ys, want);
  int64_t rows = ls.d[0], classes = ls.d[1];
  // An out-of-range label that is not ignore_index selects no class (its
  // row counts 0; PyTorch raises an error); with a site, the context's
  // index check word records it (below).
  std::vector<float> iota(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c)
    iota[static_cast<size_t>(c)] = static_cast<float>(c);
  Buf io, ii;
  AMPC_TRY(k.upload(iota, io));
  AMPC_TRY(k.scalar(static_cast<float>(ignoreIndex), ii));
  AMPC_TRY(k.f32(rows * classes, w));
  AMPC_TRY(k.f32(rows, valid));
  Shape col, row;
  col.rank = 2;
  col.d[0] = rows;
  col.d[1] = 1;
  row.rank = 1;
  row.d[0] = classes;
  AMPC_TRY(k.bin(BinaryOp::Equal, w, ls, labels.buf(), col, io, row));
  AMPC_TRY(k.bin(BinaryOp::NotEqual, valid, want, labels.buf(), want, ii,
                 Shape{}));
  if (site >= 0 && rows > 0) {
    // The labels with ignore_index replaced by 0 go through the embedding
    // primitive's range check (ids in [0, C)), which records the site.
    Buf ids, table, picked;
    AMPC_TRY(k.f32(rows, ids));
    ids.dtype = AMPC_I32;
    AMPC_TRY(k.bin(BinaryOp::WhereTrue, ids, want, valid, want, labels.buf(),
                   want));
    AMPC_TRY(k.f32(classes, table));
    AMPC_TRY(k.be.fill(table, classes, 0.0));
    AMPC_TRY(k.f32(rows, picked));
    AMPC_TRY(k.be.embedding(picked, table, ids, rows, classes, 1, site));
  }
  return k.bin(BinaryOp::Mul, w, ls, w, ls, valid, col);
}

ampc_status nllFwd(const char *fn, ampc_context ctx, const TensorArg &loss,
                   const TensorArg &logp, const TensorArg &labels,
                   int64_t ignoreIndex, ampc_reduction r, int32_t site) {
  AMPC_TRY(checkContext(fn, ctx));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: nll_loss has no batchmean reduction", fn);
  Kit k(*ctx->backend);
  Shape ls, os;
  Buf w, valid;
  AMPC_TRY(
      nllWeights(fn, k, logp, labels, ignoreIndex, ls, w, valid, site));
  AMPC_TRY(checkReduction(fn, r, ls));
  Shape rowsShape;
  rowsShape.rank = 1;
  rowsShape.d[0] = ls.d[0];
  AMPC_TRY(parseTensor(fn, loss, kFloatDtype, true, os));
  if (os != lossShape(rowsShape, r))
    return shapeError(fn, loss.name, os, lossShape(rowsShape, r));
  int64_t n = ls.numel(), rows = ls.d[0];
  // logp where W is 1, -0 elsewhere (a -inf of another class adds nothing).
  AMPC_TRY(k.bin(BinaryOp::WhereTrue, w, ls, w, ls, logp.buf(), ls));
  bool cols[2] = {false, true};
  Buf picked;
  AMPC_TRY(k.f32(rows, picked));
  if (rows > 0) {
    if (n == 0)
      AMPC_TRY(k.be.fill(picked, rows, 0.0));
    else
      AMPC_TRY(k.reduce(ReduceOp::Sum, picked, w, ls, cols));
  }
  if (r != AMPC_REDUCTION_MEAN)
    return reduceTerms(k, loss.buf(), picked, rowsShape, r, -1.0f);
  // -sum(picked) / count(valid); NaN when no row counts.
  Buf tot, cnt;
  AMPC_TRY(k.f32(1, tot));
  AMPC_TRY(k.f32(1, cnt));
  if (rows == 0)
    return k.be.fill(loss.buf(), 1, NAN);
  AMPC_TRY(k.reduceAll(ReduceOp::Sum, tot, picked, rows));
  AMPC_TRY(k.reduceAll(ReduceOp::Sum, cnt, valid, rows));
  AMPC_TRY(k.bin(BinaryOp::Div, tot, Shape{}, tot, Shape{}, cnt, Shape{}));
  return k.copy(loss.buf(), tot, 1, -1.0f);
}

ampc_status nllBwd(const char *fn, ampc_context ctx, const TensorArg &dlogp,
                   const TensorArg &dloss, const TensorArg &logp,
                   const TensorArg &labels, int64_t ignoreIndex,
                   ampc_reduction r) {
  AMPC_TRY(checkContext(fn, ctx));
  if (r == AMPC_REDUCTION_BATCHMEAN)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: nll_loss has no batchmean reduction", fn);
  Kit k(*ctx->backend);
  Shape ls, ds, gs;
  Buf w, valid;
  AMPC_TRY(nllWeights(fn, k, logp, labels, ignoreIndex, ls, w, valid));
  AMPC_TRY(checkReduction(fn, r, ls));
  Shape rowsShape;
  rowsShape.rank = 1;
  rowsShape.d[0] = ls.d[0];
  AMPC_TRY(parseTensor(fn, dloss, kFloatDtype, true, ds));
  AMPC_TRY(parseTensor(fn, dlogp, kFloatDtype, true, gs));
  if (ds != lossShape(rowsShape, r))
    return shapeError(fn, dloss.name, ds, lossShape(rowsShape, r));
  if (gs != ls)
    return shapeError(fn, dlogp.name, gs, ls);
  int64_t rows = ls.d[0];
  if (ls.numel() == 0)
    return AMPC_OK;
  // -W * g with g = dy (none: per row; sum) or dy / count (mean).
  Buf g;
  AMPC_TRY(k.f32(rows, g));
  Shape col;
  col.rank = 2;
  col.d[0] = rows;
  col.d[1] = 1;
  if (r == AMPC_REDUCTION_MEAN) {
    Buf cnt;
    AMPC_TRY(k.f32(1, cnt));
    AMPC_TRY(k.reduceAll(ReduceOp::Sum, cnt, valid, rows));
    AMPC_TRY(k.bin(BinaryOp::Div, g, Shape{}, dloss.buf(), Shape{}, cnt,
                   Shape{}));
    AMPC_TRY(k.bin(BinaryOp::Mul, w, ls, w, ls, g, Shape{}));
  } else {
    AMPC_TRY(k.bin(BinaryOp::Mul, w, ls, w, ls, dloss.buf(),
                   r == AMPC_REDUCTION_NONE ? col : Shape{}));
  }
  return k.copy(dlogp.buf(), w, ls.numel(), -1.0f);
}

const PairTerm kL1{false, BinaryOp::Add, UnaryOp::Abs, 0.0f};
PairTerm smoothL1(double beta) {
  return {false, BinaryOp::Add, UnaryOp::SmoothL1, static_cast<float>(beta)};
}
PairTerm klDiv(int32_t logTarget) {
  return {true, logTarget ? BinaryOp::KlDivLog : BinaryOp::KlDiv,
          UnaryOp::Abs, 0.0f};
}

} // namespace

#define AMPC_RL_OUT(t)                                                         \
  void *t, ampc_dtype t##_dtype, const int64_t *t##_shape, int32_t t##_rank
#define AMPC_RL_IN(t)                                                          \
  const void *t, ampc_dtype t##_dtype, const int64_t *t##_shape,               \
      int32_t t##_rank
#define T(x) AMPC_TENSOR(x)

extern "C" {

ampc_status ampc_logsumexp_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                               AMPC_RL_IN(x), const int64_t *dims,
                               int32_t n_dims, int32_t keepdim) {
  const char *fn = "ampc_logsumexp_fwd";
  return guard(fn, [&] {
    return logsumexpFwd(fn, ctx, T(y), T(x), dims, n_dims, keepdim);
  });
}

ampc_status ampc_logsumexp_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                               AMPC_RL_IN(dy), AMPC_RL_IN(x), AMPC_RL_IN(y),
                               const int64_t *dims, int32_t n_dims,
                               int32_t keepdim) {
  const char *fn = "ampc_logsumexp_bwd";
  return guard(fn, [&] {
    return logsumexpBwd(fn, ctx, T(dx), T(dy), T(x), T(y), dims, n_dims,
                        keepdim);
  });
}

ampc_status ampc_norm_fwd(ampc_context ctx, AMPC_RL_OUT(y), AMPC_RL_IN(x),
                          double p, const int64_t *dims, int32_t n_dims,
                          int32_t keepdim) {
  const char *fn = "ampc_norm_fwd";
  return guard(fn, [&] {
    return normFwd(fn, ctx, T(y), T(x), p, dims, n_dims, keepdim);
  });
}

ampc_status ampc_norm_bwd(ampc_context ctx, AMPC_RL_OUT(dx), AMPC_RL_IN(dy),
                          AMPC_RL_IN(x), AMPC_RL_IN(y), double p,
                          const int64_t *dims, int32_t n_dims,
                          int32_t keepdim) {
  const char *fn = "ampc_norm_bwd";
  return guard(fn, [&] {
    return normBwd(fn, ctx, T(dx), T(dy), T(x), T(y), p, dims, n_dims,
                   keepdim);
  });
}

ampc_status ampc_cumsum_fwd(ampc_context ctx, AMPC_RL_OUT(y), AMPC_RL_IN(x),
                            int64_t dim) {
  const char *fn = "ampc_cumsum_fwd";
  return guard(fn, [&] { return cumsumImpl(fn, ctx, T(y), T(x), dim, false); });
}

ampc_status ampc_cumsum_bwd(ampc_context ctx, AMPC_RL_OUT(dx), AMPC_RL_IN(dy),
                            int64_t dim) {
  const char *fn = "ampc_cumsum_bwd";
  return guard(fn,
               [&] { return cumsumImpl(fn, ctx, T(dx), T(dy), dim, true); });
}

ampc_status ampc_group_norm_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                AMPC_RL_IN(x), AMPC_RL_IN(w), AMPC_RL_IN(b),
                                int64_t groups, double eps) {
  const char *fn = "ampc_group_norm_fwd";
  return guard(fn, [&] {
    return groupNormFwd(fn, ctx, T(y), T(x), T(w), T(b), groups, eps);
  });
}

ampc_status ampc_group_norm_bwd(ampc_context ctx, AMPC_RL_OUT(dx),
                                AMPC_RL_OUT(dw), AMPC_RL_OUT(db),
                                AMPC_RL_IN(dy), AMPC_RL_IN(x), AMPC_RL_IN(w),
                                int64_t groups, double eps) {
  const char *fn = "ampc_group_norm_bwd";
  return guard(fn, [&] {
    return groupNormBwd(fn, ctx, T(dx), T(dw), T(db), T(dy), T(x), T(w),
                        groups, eps);
  });
}

ampc_status ampc_cosine_similarity_fwd(ampc_context ctx, AMPC_RL_OUT(y),
                                       AMPC_RL_IN(a), AMPC_RL_IN(b),
                                       int64_t dim, double eps) {
  const char *fn = "ampc_cosine_similarity_fwd";
  return guard(fn,
               [&] { return cosineFwd(fn, ctx, T(y), T(a), T(b), dim, eps); });
}

ampc_status ampc_cosine_similarity_bwd(ampc_context ctx, AMPC_RL_OUT(da),
                                       AMPC_RL_OUT(db), AMPC_RL_IN(dy),
                                       AMPC_RL_IN(a), AMPC_RL_IN(b),
                                       int64_t dim, double eps) {
  const char *fn = "ampc_cosine_similarity_bwd";
  return guard(fn, [&] {
    return cosineBwd(fn, ctx, T(da), T(db), T(dy), T(a), T(b), dim, eps);
  });
}

ampc_status ampc_l1_loss_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                             AMPC_RL_IN(a), AMPC_RL_IN(b),
                             ampc_reduction reduction) {
  const char *fn = "ampc_l1_loss_fwd";
  return guard(fn, [&] {
    return pairLossFwd(fn, ctx, kL1, T(loss), T(a), T(b), reduction);
  });
}

ampc_status ampc_l1_loss_bwd(ampc_context ctx, AMPC_RL_OUT(da),
                             AMPC_RL_OUT(db), AMPC_RL_IN(dloss), AMPC_RL_IN(a),
                             AMPC_RL_IN(b), ampc_reduction reduction) {
  const char *fn = "ampc_l1_loss_bwd";
  return guard(fn, [&] {
    return pairLossBwd(fn, ctx, kL1, T(da), T(db), T(dloss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_smooth_l1_loss_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                                    AMPC_RL_IN(a), AMPC_RL_IN(b), double beta,
                                    ampc_reduction reduction) {
  const char *fn = "ampc_smooth_l1_loss_fwd";
  return guard(fn, [&]() -> ampc_status {
    if (!(beta >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: beta must not be negative", fn);
    return pairLossFwd(fn, ctx, smoothL1(beta), T(loss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_smooth_l1_loss_bwd(ampc_context ctx, AMPC_RL_OUT(da),
                                    AMPC_RL_OUT(db), AMPC_RL_IN(dloss),
                                    AMPC_RL_IN(a), AMPC_RL_IN(b), double beta,
                                    ampc_reduction reduction) {
  const char *fn = "ampc_smooth_l1_loss_bwd";
  return guard(fn, [&]() -> ampc_status {
    if (!(beta >= 0.0))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: beta must not be negative", fn);
    return pairLossBwd(fn, ctx, smoothL1(beta), T(da), T(db), T(dloss), T(a),
                       T(b), reduction);
  });
}

ampc_status ampc_kl_div_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                            AMPC_RL_IN(a), AMPC_RL_IN(b),
                            ampc_reduction reduction, int32_t log_target) {
  const char *fn = "ampc_kl_div_fwd";
  return guard(fn, [&] {
    return pairLossFwd(fn, ctx, klDiv(log_target), T(loss), T(a), T(b),
                       reduction);
  });
}

ampc_status ampc_kl_div_bwd(ampc_context ctx, AMPC_RL_OUT(da), AMPC_RL_OUT(db),
                            AMPC_RL_IN(dloss), AMPC_RL_IN(a), AMPC_RL_IN(b),
                            ampc_reduction reduction, int32_t log_target) {
  const char *fn = "ampc_kl_div_bwd";
  return guard(fn, [&] {
    return pairLossBwd(fn, ctx, klDiv(log_target), T(da), T(db), T(dloss),
                       T(a), T(b), reduction);
  });
}

ampc_status ampc_nll_loss_fwd(ampc_context ctx, AMPC_RL_OUT(loss),
                              AMPC_RL_IN(logp), AMPC_RL_IN(labels),
                              int64_t ignore_index, ampc_reduction reduction,
                              int32_t site) {
  const char *fn = "ampc_nll_loss_fwd";
  return guard(fn, [&] {
    return nllFwd(fn, ctx, T(loss), T(logp), T(labels), ignore_index,
                  reduction, site);
  });
}

ampc_status ampc_nll_loss_bwd(ampc_context ctx, AMPC_RL_OUT(dlogp),
                              AMPC_RL_IN(dloss), AMPC_RL_IN(logp),
                              AMPC_RL_IN(labels), int64_t ignore_index,
                              ampc_reduction reduction) {
  const char *fn = "ampc_nll_loss_bwd";
  return guard(fn, [&] {
    return nllBwd(fn, ctx, T(dlogp), T(dloss), T(logp), T(labels),
                  ignore_index, reduction);
  });
}

} // extern "C"

#undef T
#undef AMPC_RL_OUT
#undef AMPC_RL_IN
