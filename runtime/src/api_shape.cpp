//===- api_shape.cpp - Casts and shape ops
//---------------------------------===//
#include "common.h"

using namespace ampc;

namespace {

/// Float<->float, or identical dtypes, may meet in a shape op.
ampc_status checkCopyDtypes(const char *fn, ampc_dtype dst, ampc_dtype src) {
  if (dst == src || (isFloatDtype(dst) && isFloatDtype(src)))
    return AMPC_OK;
  return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                  "%s: cannot move %s data into a %s tensor (use ampc_cast)",
                  fn, dtypeName(src), dtypeName(dst));
}

ampc_status flatCopy(Backend &be, Buf dst, Buf src, int64_t n) {
  if (n == 0 || (dst.data == src.data && dst.dtype == src.dtype))
    return AMPC_OK;
  return be.copy(dst, src, flatWalk(n), 1.0f);
}

ampc_status castImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                     const TensorArg &x, bool sameDtypeClass) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  AMPC_TRY(parseTensor(fn, y, kAnyDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kAnyDtype, true, xs));
  if (ys.numel() != xs.numel())
    return shapeError(fn, y.name, ys, xs);
  if (sameDtypeClass)
    AMPC_TRY(checkCopyDtypes(fn, y.dtype, x.dtype));
  return flatCopy(*ctx->backend, y.buf(), x.buf(), ys.numel());
}

/// Resolves the permutation of transpose (n == 0: swap the last two dims).
ampc_status resolvePerm(const char *fn, const int64_t *perm, int32_t n,
                        int rank, int *out) {
  if (n == 0) {
    if (rank < 2)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: transpose without perm needs rank >= 2, got %d", fn,
                      rank);
    for (int i = 0; i < rank; ++i)
      out[i] = i;
    out[rank - 2] = rank - 1;
    out[rank - 1] = rank - 2;
    return AMPC_OK;
  }
  if (!perm)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: perm is NULL", fn);
  if (n != rank)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: perm has %d entries for rank %d", fn, n, rank);
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank; ++i) {
    int d;
    AMPC_TRY(normaliseDim(fn, perm[i], rank, d));
    if (seen[d])
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: perm repeats dim %d",
                      fn, d);
    seen[d] = true;
    out[i] = d;
  }
  return AMPC_OK;
}

/// y = x.permute(perm) (forward) or x = y.permute(inverse) (backward); `src`
/// and `dst` are named by role: `out` has x's dims permuted.
ampc_status transposeImpl(const char *fn, ampc_context ctx,
                          const TensorArg &out, const TensorArg &in,
                          const int64_t *perm, int32_t nPerm, bool backward) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape os, is;
  AMPC_TRY(parseTensor(fn, out, kAnyDtype, true, os));
  AMPC_TRY(parseTensor(fn, in, kAnyDtype, true, is));
  AMPC_TRY(checkCopyDtypes(fn, out.dtype, in.dtype));
  // Forward: out = y (permuted), in = x. Backward: out = dx, in = dy.
  const Shape &xs = backward ? os : is, &ys = backward ? is : os;
  if (xs.rank != ys.rank)
    return shapeError(fn, out.name, os, is);
  int p[kMaxRank];
  AMPC_TRY(resolvePerm(fn, perm, nPerm, xs.rank, p));
  Shape want = xs;
  for (int i = 0; i < xs.rank; ++i)
    want.d[i] = xs.d[p[i]];
  if (want != ys)
    return shapeError(fn, backward ? in.name : out.name, ys, want);
  int64_t xstr[kMaxRank], ystr[kMaxRank];
  contiguousStrides(xs, xstr);
  contiguousStrides(ys, ystr);
  Walk w; // over y's dims
  w.rank = ys.rank;
  for (int i = 0; i < ys.rank; ++i) {
    w.shape[i] = ys.d[i];
    w.stride[backward ? 1 : 0][i] = ystr[i];
    w.stride[backward ? 0 : 1][i] = xstr[p[i]];
  }
  if (ys.numel() == 0)
    return AMPC_OK;
  return ctx->backend->copy(out.buf(), in.buf(), w, 1.0f);
}

/// Python slice bounds on a dim of `size`.
void resolveSlice(int64_t size, int64_t &start, int64_t &end) {
  auto clamp = [size](int64_t v) {
    if (v < 0)
      v += size;
    return v < 0 ? 0 : (v > size ? size : v);
  };
  start = clamp(start);
  end = clamp(end);
  if (end < start)
    end = start;
}

/// Copies between a whole tensor `part` and the region of `whole` starting
/// at `offset` along `dim` (toWhole: part -> whole).
ampc_status copyRegion(Backend &be, Buf whole, const Shape &ws, Buf part,
                       const Shape &ps, int dim, int64_t offset, bool toWhole) {
  if (ps.numel() == 0)
    return AMPC_OK;
  int64_t wstr[kMaxRank], pstr[kMaxRank];
  contiguousStrides(ws, wstr);
  contiguousStrides(ps, pstr);
  Walk w;
  w.rank = ps.rank;
  for (int i = 0; i < ps.rank; ++i) {
    w.shape[i] = ps.d[i];
    w.stride[toWhole ? 0 : 1][i] = wstr[i];
    w.stride[toWhole ? 1 : 0][i] = pstr[i];
  }
  Buf region = offsetBuf(whole, offset * wstr[dim]);
  return toWhole ? be.copy(region, part, w, 1.0f)
                 : be.copy(part, region, w, 1.0f);
}

ampc_status concatImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                       void *const *xs, const ampc_dtype *dtypes,
                       const int64_t *const *shapes, int32_t count, int64_t dim,
                       bool backward) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys;
  AMPC_TRY(parseTensor(fn, y, kAnyDtype, true, ys));
  if (count <= 0 || !xs || !dtypes || !shapes)
    return setError(count <= 0 ? AMPC_ERROR_INVALID_ARGUMENT
                               : AMPC_ERROR_NULL_POINTER,
                    "%s: needs count > 0 and non-NULL lists", fn);
  int d;
  AMPC_TRY(normaliseDim(fn, dim, ys.rank, d));
  int64_t total = 0;
  std::unique_ptr<Shape[]> parts(new Shape[count]);
  for (int32_t i = 0; i < count; ++i) {
    TensorArg t{backward ? "dxs[i]" : "xs[i]", xs[i], dtypes[i], shapes[i],
                ys.rank};
    AMPC_TRY(parseTensor(fn, t, kAnyDtype, !backward, parts[i]));
    if (!shapes[i])
      return setError(AMPC_ERROR_NULL_POINTER, "%s: shape %d is NULL", fn, i);
    // torch.cat promotes: each operand is converted into the output's
    // dtype as ampc_cast converts (integers exactly, wrapping where the
    // output is narrower; an integer into a float rounds once), and the
    // backward converts the gradient's pieces back into each operand's.
    Shape want = ys;
    want.d[d] = parts[i].d[d];
    if (parts[i] != want)
      return shapeError(fn, "a concat operand", parts[i], want);
    total += parts[i].d[d];
  }
  if (total != ys.d[d])
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: operands add up to %lld along dim %d, output has %lld",
                    fn, static_cast<long long>(total), d,
                    static_cast<long long>(ys.d[d]));
  int64_t offset = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (xs[i])
      AMPC_TRY(copyRegion(*ctx->backend, y.buf(), ys, Buf{xs[i], dtypes[i]},
                          parts[i], d, offset, !backward));
    offset += parts[i].d[d];
  }
  return AMPC_OK;
}

ampc_status sliceImpl(const char *fn, ampc_context ctx, const TensorArg &whole,
                      const TensorArg &part, int64_t dim, int64_t start,
                      int64_t end, bool backward) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ws, ps;
  AMPC_TRY(parseTensor(fn, whole, kAnyDtype, true, ws));
  AMPC_TRY(parseTensor(fn, part, kAnyDtype, true, ps));
  AMPC_TRY(backward ? checkCopyDtypes(fn, whole.dtype, part.dtype)
                    : checkCopyDtypes(fn, part.dtype, whole.dtype));
  int d;
  AMPC_TRY(normaliseDim(fn, dim, ws.rank, d));
  resolveSlice(ws.d[d], start, end);
  Shape want = ws;
  want.d[d] = end - start;
  if (ps != want)
    return shapeError(fn, part.name, ps, want);
  Backend &be = *ctx->backend;
  if (backward && ws.numel())
    AMPC_TRY(be.fill(whole.buf(), ws.numel(), 0.0));
  return copyRegion(be, whole.buf(), ws, part.buf(), ps, d, start, backward);
}

/// The checks of an op that moves x's elements into y of x's shape (flip,
/// roll): the context, both tensors, dtypes a copy may move; x's shape.
ampc_status parseMove(const char *fn, ampc_context ctx, const TensorArg &y,
                      const TensorArg &x, Shape &xs) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys;
  AMPC_TRY(parseTensor(fn, y, kAnyDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kAnyDtype, true, xs));
  AMPC_TRY(checkCopyDtypes(fn, y.dtype, x.dtype));
  if (ys != xs)
    return shapeError(fn, y.name, ys, xs);
  return AMPC_OK;
}

/// y = x reversed along `dims`: one strided copy that reads x backwards
/// along them (negative strides from x's last element there), so both
/// backends run it with their copy kernels.
ampc_status flipImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                     const TensorArg &x, const int64_t *dims, int32_t nDims) {
  Shape xs;
  AMPC_TRY(parseMove(fn, ctx, y, x, xs));
  if (nDims < 0 || (nDims > 0 && !dims))
    return setError(AMPC_ERROR_NULL_POINTER, "%s: dims is NULL", fn);
  bool flipped[kMaxRank] = {};
  for (int32_t i = 0; i < nDims; ++i) {
    int d;
    AMPC_TRY(normaliseDim(fn, dims[i], xs.rank, d));
    if (flipped[d])
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: dims repeats dim %d",
                      fn, d);
    flipped[d] = true;
  }
  int64_t n = xs.numel();
  if (n == 0)
    return AMPC_OK;
  if (xs.rank == 0)
    return ctx->backend->copy(y.buf(), x.buf(), flatWalk(1), 1.0f);
  int64_t str[kMaxRank];
  contiguousStrides(xs, str);
  Walk w;
  w.rank = xs.rank;
  int64_t last = 0; // x's element that y's first one reads
  for (int i = 0; i < xs.rank; ++i) {
    w.shape[i] = xs.d[i];
    w.stride[0][i] = str[i];
    w.stride[1][i] = flipped[i] ? -str[i] : str[i];
    if (flipped[i])
      last += (xs.d[i] - 1) * str[i];
  }
  return ctx->backend->copy(y.buf(), offsetBuf(x.buf(), last), w, 1.0f);
}

/// `v` modulo `n` (> 0), in [0, n).
int64_t wrapIndex(int64_t v, int64_t n) {
  int64_t r = v % n;
  return r < 0 ? r + n : r;
}

/// y = torch.roll(x, shifts, dims) (no dims: x flattened). Along a dim
/// rolled by s, y[s:] = x[:size - s] and y[:s] = x[size - s:], so the result
/// is at most 2^k box copies for k rolled dims, each a strided copy of the
/// backends.
ampc_status rollImpl(const char *fn, ampc_context ctx, const TensorArg &y,
                     const TensorArg &x, const int64_t *shifts,
                     int32_t nShifts, const int64_t *dims, int32_t nDims) {
  Shape xs;
  AMPC_TRY(parseMove(fn, ctx, y, x, xs));
  if (!shifts || (nDims > 0 && !dims))
    return setError(AMPC_ERROR_NULL_POINTER, "%s: shifts or dims is NULL", fn);
  if (nDims < 0 || (nDims == 0 ? nShifts != 1 : nShifts != nDims))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: %d shifts for %d dims (one shift without dims)", fn,
                    nShifts, nDims);
  int64_t n = xs.numel();
  if (n == 0)
    return AMPC_OK;
  Shape v = xs; // the view rolled: x, or x flattened
  int64_t shift[kMaxRank] = {};
  if (nDims == 0) {
    v.rank = 1;
    v.d[0] = n;
    shift[0] = wrapIndex(shifts[0], n);
  }
  for (int32_t i = 0; i < nDims; ++i) {
    int d;
    AMPC_TRY(normaliseDim(fn, dims[i], xs.rank, d));
    shift[d] = wrapIndex(shift[d] + wrapIndex(shifts[i], xs.d[d]), xs.d[d]);
  }
  int64_t str[kMaxRank];
  contiguousStrides(v, str);
  int rolled[kMaxRank], k = 0;
  for (int d = 0; d < v.rank; ++d)
    if (shift[d] != 0)
      rolled[k++] = d;
  for (int part = 0; part < (1 << k); ++part) {
    Walk w;
    w.rank = v.rank;
    for (int d = 0; d < v.rank; ++d) {
      w.shape[d] = v.d[d];
      w.stride[0][d] = w.stride[1][d] = str[d];
    }
    int64_t yoff = 0, xoff = 0;
    for (int b = 0; b < k; ++b) {
      int d = rolled[b];
      int64_t s = shift[d], size = v.d[d];
      if ((part >> b) & 1) { // y[:s] = x[size - s:]
        w.shape[d] = s;
        xoff += (size - s) * str[d];
      } else { // y[s:] = x[:size - s]
        w.shape[d] = size - s;
        yoff += s * str[d];
      }
    }
    AMPC_TRY(ctx->backend->copy(offsetBuf(y.buf(), yoff),
                                offsetBuf(x.buf(), xoff), w, 1.0f));
  }
  return AMPC_OK;
}

ampc_status embeddingShapes(const char *fn, const Shape &ys, const Shape &ts,
                            const Shape &is) {
  if (ts.rank != 2)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: table must be [V, D], got %s", fn, ts.str().c_str());
  if (is.rank + 1 > kMaxRank)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: ids rank too large", fn);
  Shape want = is;
  want.d[want.rank++] = ts.d[1];
  if (ys != want)
    return shapeError(fn, "the embedding output", ys, want);
  return AMPC_OK;
}

} // namespace

extern "C" {

ampc_status ampc_cast_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                          const int64_t *y_shape, int32_t y_rank, const void *x,
                          ampc_dtype x_dtype, const int64_t *x_shape,
                          int32_t x_rank) {
  return guard("ampc_cast_fwd", [&] {
    return castImpl("ampc_cast_fwd", ctx, AMPC_TENSOR(y), AMPC_TENSOR(x),
                    false);
  });
}

ampc_status ampc_cast_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                          const int64_t *dx_shape, int32_t dx_rank,
                          const void *dy, ampc_dtype dy_dtype,
                          const int64_t *dy_shape, int32_t dy_rank) {
  return guard("ampc_cast_bwd", [&] {
    return castImpl("ampc_cast_bwd", ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dy),
                    false);
  });
}

ampc_status ampc_reshape_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                             const int64_t *y_shape, int32_t y_rank,
                             const void *x, ampc_dtype x_dtype,
                             const int64_t *x_shape, int32_t x_rank) {
  return guard("ampc_reshape_fwd", [&] {
    return castImpl("ampc_reshape_fwd", ctx, AMPC_TENSOR(y), AMPC_TENSOR(x),
                    true);
  });
}

ampc_status ampc_reshape_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                             const int64_t *dx_shape, int32_t dx_rank,
                             const void *dy, ampc_dtype dy_dtype,
                             const int64_t *dy_shape, int32_t dy_rank) {
  return guard("ampc_reshape_bwd", [&] {
    return castImpl("ampc_reshape_bwd", ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dy),
                    true);
  });
}

ampc_status ampc_transpose_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                               const int64_t *y_shape, int32_t y_rank,
                               const void *x, ampc_dtype x_dtype,
                               const int64_t *x_shape, int32_t x_rank,
                               const int64_t *perm, int32_t n_perm) {
  return guard("ampc_transpose_fwd", [&] {
    return transposeImpl("ampc_transpose_fwd", ctx, AMPC_TENSOR(y),
                         AMPC_TENSOR(x), perm, n_perm, false);
  });
}

ampc_status ampc_transpose_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                               const int64_t *dx_shape, int32_t dx_rank,
                               const void *dy, ampc_dtype dy_dtype,
                               const int64_t *dy_shape, int32_t dy_rank,
                               const int64_t *perm, int32_t n_perm) {
  return guard("ampc_transpose_bwd", [&] {
    return transposeImpl("ampc_transpose_bwd", ctx, AMPC_TENSOR(dx),
                         AMPC_TENSOR(dy), perm, n_perm, true);
  });
}

ampc_status ampc_concat_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                            const int64_t *y_shape, int32_t y_rank,
                            const void *const *xs, const ampc_dtype *x_dtypes,
                            const int64_t *const *x_shapes, int32_t count,
                            int64_t dim) {
  return guard("ampc_concat_fwd", [&] {
    return concatImpl("ampc_concat_fwd", ctx, AMPC_TENSOR(y),
                      const_cast<void *const *>(xs), x_dtypes, x_shapes, count,
                      dim, false);
  });
}

ampc_status ampc_concat_bwd(ampc_context ctx, void *const *dxs,
                            const ampc_dtype *dx_dtypes,
                            const int64_t *const *dx_shapes, int32_t count,
                            const void *dy, ampc_dtype dy_dtype,
                            const int64_t *dy_shape, int32_t dy_rank,
                            int64_t dim) {
  return guard("ampc_concat_bwd", [&] {
    return concatImpl("ampc_concat_bwd", ctx, AMPC_TENSOR(dy), dxs, dx_dtypes,
                      dx_shapes, count, dim, true);
  });
}

ampc_status ampc_slice_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                           const int64_t *y_shape, int32_t y_rank,
                           const void *x, ampc_dtype x_dtype,
                           const int64_t *x_shape, int32_t x_rank, int64_t dim,
                           int64_t start, int64_t end) {
  return guard("ampc_slice_fwd", [&] {
    return sliceImpl("ampc_slice_fwd", ctx, AMPC_TENSOR(x), AMPC_TENSOR(y), dim,
                     start, end, false);
  });
}

ampc_status ampc_slice_bwd(ampc_context ctx, void *dx, ampc_dtype dx_dtype,
                           const int64_t *dx_shape, int32_t dx_rank,
                           const void *dy, ampc_dtype dy_dtype,
                           const int64_t *dy_shape, int32_t dy_rank,
                           int64_t dim, int64_t start, int64_t end) {
  return guard("ampc_slice_bwd", [&] {
    return sliceImpl("ampc_slice_bwd", ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dy),
                     dim, start, end, true);
  });
}

ampc_status ampc_flip_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                          const int64_t *y_shape, int32_t y_rank,
                          const void *x, ampc_dtype x_dtype,
                          const int64_t *x_shape, int32_t x_rank,
                          const int64_t *dims, int32_t n_dims) {
  return guard("ampc_flip_fwd", [&] {
    return flipImpl("ampc_flip_fwd", ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), dims,
                    n_dims);
  });
}

ampc_status ampc_roll_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                          const int64_t *y_shape, int32_t y_rank,
                          const void *x, ampc_dtype x_dtype,
                          const int64_t *x_shape, int32_t x_rank,
                          const int64_t *shifts, int32_t n_shifts,
                          const int64_t *dims, int32_t n_dims) {
  return guard("ampc_roll_fwd", [&] {
    return rollImpl("ampc_roll_fwd", ctx, AMPC_TENSOR(y), AMPC_TENSOR(x),
                    shifts, n_shifts, dims, n_dims);
  });
}

ampc_status ampc_embedding_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                               const int64_t *y_shape, int32_t y_rank,
                               const void *table, ampc_dtype table_dtype,
                               const int64_t *table_shape, int32_t table_rank,
                               const void *ids, ampc_dtype ids_dtype,
                               const int64_t *ids_shape, int32_t ids_rank,
                               int32_t site) {
  const char *fn = "ampc_embedding_fwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ys, ts, is;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(y), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(table), kFloatDtype, true, ts));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(ids), kIndexDtype, true, is));
    AMPC_TRY(embeddingShapes(fn, ys, ts, is));
    if (ys.numel() == 0)
      return AMPC_OK;
    return ctx->backend->embedding(Buf{y, y_dtype}, AMPC_TENSOR(table).buf(),
                                   AMPC_TENSOR(ids).buf(), is.numel(), ts.d[0],
                                   ts.d[1], site < 0 ? -1 : site);
  });
}

ampc_status ampc_embedding_bwd(ampc_context ctx, void *dtable,
                               ampc_dtype dtable_dtype,
                               const int64_t *dtable_shape, int32_t dtable_rank,
                               const void *dy, ampc_dtype dy_dtype,
                               const int64_t *dy_shape, int32_t dy_rank,
                               const void *ids, ampc_dtype ids_dtype,
                               const int64_t *ids_shape, int32_t ids_rank) {
  const char *fn = "ampc_embedding_bwd";
  return guard(fn, [&] {
    AMPC_TRY(checkContext(fn, ctx));
    Shape ts, ys, is;
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dtable), kFloatDtype, true, ts));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(dy), kFloatDtype, true, ys));
    AMPC_TRY(parseTensor(fn, AMPC_TENSOR(ids), kIndexDtype, true, is));
    AMPC_TRY(embeddingShapes(fn, ys, ts, is));
    if (ts.numel() == 0)
      return AMPC_OK;
    return ctx->backend->embeddingBwd(
        Buf{dtable, dtable_dtype}, AMPC_TENSOR(dy).buf(),
        AMPC_TENSOR(ids).buf(), is.numel(), ts.d[0], ts.d[1]);
  });
}

} // extern "C"
