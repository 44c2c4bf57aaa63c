//===- api_pool.cpp - max_pool2d and avg_pool2d ----------------*- C++ -*-===//
//
// The pooling entry points (rows AMPC_POOL_KERNEL of the kernel table):
// the geometry checks, then the backend's pool and poolBwd.
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

namespace {

ampc_status poolGeom(const char *fn, bool isMax, const Shape &xs,
                     const Shape &ys, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, int64_t ph, int64_t pw, PoolGeom &g) {
  if (xs.rank != 4)
    return setError(AMPC_ERROR_SHAPE_MISMATCH, "%s: x must be NCHW, got %s", fn,
                    xs.str().c_str());
  if (kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || ph < 0 || pw < 0 ||
      2 * ph > kh || 2 * pw > kw)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: bad kernel/stride/padding (kernel > 0, stride > 0, "
                    "0 <= padding <= kernel / 2)",
                    fn);
  g = PoolGeom{
      xs.d[0] * xs.d[1], xs.d[2], xs.d[3], 0, 0, kh, kw, sh, sw, ph, pw, isMax};
  int64_t oh = (xs.d[2] + 2 * ph - kh), ow = (xs.d[3] + 2 * pw - kw);
  if (oh < 0 || ow < 0)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: kernel larger than the padded input", fn);
  g.oh = oh / sh + 1;
  g.ow = ow / sw + 1;
  Shape want = xs;
  want.d[2] = g.oh;
  want.d[3] = g.ow;
  if (ys != want)
    return shapeError(fn, "the pooled tensor", ys, want);
  return AMPC_OK;
}

ampc_status poolFwd(const char *fn, bool isMax, ampc_context ctx,
                    const TensorArg &y, const TensorArg &x, int64_t kh,
                    int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                    int64_t pw) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape ys, xs;
  AMPC_TRY(parseTensor(fn, y, kFloatDtype, true, ys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, true, xs));
  PoolGeom g;
  AMPC_TRY(poolGeom(fn, isMax, xs, ys, kh, kw, sh, sw, ph, pw, g));
  if (ys.numel() == 0)
    return AMPC_OK;
  return ctx->backend->pool(y.buf(), x.buf(), g);
}

ampc_status poolBwd(const char *fn, bool isMax, ampc_context ctx,
                    const TensorArg &dx, const TensorArg &dy,
                    const TensorArg &x, int64_t kh, int64_t kw, int64_t sh,
                    int64_t sw, int64_t ph, int64_t pw) {
  AMPC_TRY(checkContext(fn, ctx));
  Shape dxs, dys, xs;
  AMPC_TRY(parseTensor(fn, dx, kFloatDtype, true, dxs));
  AMPC_TRY(parseTensor(fn, dy, kFloatDtype, true, dys));
  AMPC_TRY(parseTensor(fn, x, kFloatDtype, isMax, xs));
  if (x.data && xs != dxs)
    return shapeError(fn, x.name, xs, dxs);
  PoolGeom g;
  AMPC_TRY(poolGeom(fn, isMax, dxs, dys, kh, kw, sh, sw, ph, pw, g));
  if (dxs.numel() == 0)
    return AMPC_OK;
  return ctx->backend->poolBwd(dx.buf(), dy.buf(), x.buf(), g);
}
} // namespace

#define AMPC_POOL_KERNEL(NAME, IS_MAX)                                         \
  ampc_status ampc_##NAME##_fwd(                                               \
      ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,   \
      int32_t y_rank, const void *x, ampc_dtype x_dtype,                       \
      const int64_t *x_shape, int32_t x_rank, int64_t kernel_h,                \
      int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad_h,     \
      int64_t pad_w) {                                                         \
    return guard("ampc_" #NAME "_fwd", [&] {                                   \
      return poolFwd("ampc_" #NAME "_fwd", IS_MAX, ctx, AMPC_TENSOR(y),        \
                     AMPC_TENSOR(x), kernel_h, kernel_w, stride_h, stride_w,   \
                     pad_h, pad_w);                                            \
    });                                                                        \
  }                                                                            \
  ampc_status ampc_##NAME##_bwd(                                               \
      ampc_context ctx, void *dx, ampc_dtype dx_dtype,                         \
      const int64_t *dx_shape, int32_t dx_rank, const void *dy,                \
      ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,           \
      const void *x, ampc_dtype x_dtype, const int64_t *x_shape,               \
      int32_t x_rank, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,    \
      int64_t stride_w, int64_t pad_h, int64_t pad_w) {                        \
    return guard("ampc_" #NAME "_bwd", [&] {                                   \
      return poolBwd("ampc_" #NAME "_bwd", IS_MAX, ctx, AMPC_TENSOR(dx),       \
                     AMPC_TENSOR(dy), AMPC_TENSOR(x), kernel_h, kernel_w,      \
                     stride_h, stride_w, pad_h, pad_w);                        \
    });                                                                        \
  }

extern "C" {

#include "ampc/runtime_kernels.inc"

} // extern "C"
