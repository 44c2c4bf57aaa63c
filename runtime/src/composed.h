//===- composed.h - Helpers of the entry points composed of primitives -*- C++ -*-===//
//
// The entry points of the reductions, norms, losses, selection, matmul and
// convolution families are compositions of the backend's primitives
// (unary, binary, reduce, copy, gemm) rather than kernels of their own;
// these are the pieces they share: walks over broadcast shapes, the per-call
// toolkit `Kit` with its f32 scratch, the checks of a reduction's dims, a
// GEMM description, and the argument lists of the composed entry points.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_COMPOSED_H
#define AMPC_RUNTIME_SRC_COMPOSED_H

#include "common.h"

#include <initializer_list>
#include <memory>
#include <vector>

namespace ampc {

/// A shape of rank >= 1 (a scalar is [1]) so every walk has a dim.
inline Shape atLeast1(Shape s) {
  if (s.rank == 0) {
    s.rank = 1;
    s.d[0] = 1;
  }
  return s;
}

/// A walk over `ys` (operand 0 contiguous) with `as` and `bs` broadcast
/// into it (right-aligned, stride 0 on broadcast dims). Shapes are checked.
inline Walk broadcastWalk(const Shape &ys0, const Shape &as0, const Shape &bs0) {
  Shape ys = atLeast1(ys0);
  Walk w = contiguousWalk(ys);
  broadcastStrides(as0, ys, w.stride[1]);
  broadcastStrides(bs0, ys, w.stride[2]);
  return w;
}

/// Whether `s` broadcasts into `full`.
inline bool broadcastsInto(const Shape &s, const Shape &full) {
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
  /// n f32 values from the host (widened to f64 when wide).
  ampc_status upload(const std::vector<float> &host, Buf &out) {
    AMPC_TRY(f32(static_cast<int64_t>(host.size()), out));
    if (host.empty())
      return AMPC_OK;
    if (scratch == AMPC_F64) {
      std::vector<double> wide(host.begin(), host.end());
      return be.copyBytes(out.data, wide.data(), wide.size() * sizeof(double),
                          AMPC_MEMCPY_HOST_TO_DEVICE);
    }
    return be.copyBytes(out.data, host.data(), host.size() * sizeof(float),
                        AMPC_MEMCPY_HOST_TO_DEVICE);
  }
};

/// Parses and checks the dims of a reduction of rank `rank`: sorted,
/// distinct, in range; an empty list only for a scalar.
inline ampc_status parseDims(const char *fn, const int64_t *dims, int32_t nDims,
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
inline void reducedShapes(const Shape &xs, const bool *reduced, bool keepdim,
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
inline ampc_status parseReduction(const char *fn, const TensorArg &x,
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
inline ampc_status parseReductionBwd(const char *fn, const TensorArg &dx,
                              const TensorArg &dy, const TensorArg &x,
                              const TensorArg &y, const int64_t *dims,
                              int32_t nDims, int32_t keepdim, Shape &xs,
                              bool *reduced, Shape &keep) {
  AMPC_TRY(parseReduction(fn, x, y, dims, nDims, keepdim, xs, reduced, keep));
  AMPC_TRY(parseReduction(fn, x, dy, dims, nDims, keepdim, xs, reduced, keep));
  return parseShaped(fn, dx, kFloatDtype, true, xs);
}

/// A walk over `s` with all three operands contiguous.
inline Walk denseWalk(const Shape &s) {
  Walk w = contiguousWalk(s);
  for (int i = 0; i < s.rank; ++i)
    w.stride[2][i] = w.stride[0][i];
  return w;
}

inline GemmDesc makeGemm(Buf c, Buf a, Buf b, int64_t m, int64_t n, int64_t k,
                  bool transA, bool transB) {
  GemmDesc d;
  d.c = c;
  d.a = a;
  d.b = b;
  d.m = m;
  d.n = n;
  d.k = k;
  d.transA = transA;
  d.transB = transB;
  d.lda = transA ? m : k;
  d.ldb = transB ? k : n;
  d.ldc = n;
  return d;
}

inline ampc_status checkBias(const char *fn, const TensorArg &bias, int64_t n,
                      Shape &bs) {
  AMPC_TRY(parseTensor(fn, bias, kFloatDtype, false, bs));
  if (bias.data && (bs.rank != 1 || bs.d[0] != n)) {
    Shape want;
    want.rank = 1;
    want.d[0] = n;
    return shapeError(fn, bias.name, bs, want);
  }
  return AMPC_OK;
}

} // namespace ampc

/// The parameter list of a tensor argument of a composed entry point: an
/// output (writable) or an input.
#define AMPC_OUT_PARAM(t)                                                      \
  void *t, ampc_dtype t##_dtype, const int64_t *t##_shape, int32_t t##_rank
#define AMPC_IN_PARAM(t)                                                       \
  const void *t, ampc_dtype t##_dtype, const int64_t *t##_shape,               \
      int32_t t##_rank

#endif // AMPC_RUNTIME_SRC_COMPOSED_H
