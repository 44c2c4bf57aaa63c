//===- api_conv_nd.cpp - 1-D and 3-D convolutions, transposed ones -*- C++ -*-===//
//
// Entry points of conv1d, conv3d, conv_transpose1d, conv_transpose2d and
// conv_transpose3d (PyTorch's fp16 autocast list) on the convolution core
// of conv2d (conv_nd.h: im2col + GEMM on both backends, a 1-D convolution a
// 2-D one of height 1, a 3-D one with ConvGeom's depth). A transposed
// convolution is the input gradient of the convolution with the same
// weight from the result's shape to the input's (GEMM + col2im).
//
//===----------------------------------------------------------------------===//
#include "conv_nd.h"

using namespace ampc;

namespace {

/// y = conv_transpose(x, w) + bias over a.spatial dims: the input gradient
/// of the convolution with weight w for "output gradient" x, accumulated in
/// f32 (in f64 when a tensor is f64); the bias is added before the one
/// rounding to y's dtype. y's shape carries the output padding.
ampc_status convTransposeForward(const char *fn, ampc_context ctx,
                                 const TensorArg &y, const TensorArg &x,
                                 const TensorArg &w, const TensorArg &bias,
                                 const ConvAttrs &a) {
  AMPC_TRY(checkContext(fn, ctx));
  int rank = a.spatial + 2;
  if (y.rank != rank || !y.shape)
    return setError(AMPC_ERROR_SHAPE_MISMATCH,
                    "%s: y must be [N, C_out, %d spatial dims]", fn, a.spatial);
  int64_t numel = 1;
  for (int i = 0; i < rank; ++i)
    numel *= y.shape[i];
  if (numel == 0)
    return AMPC_OK;
  Backend &be = *ctx->backend;
  // f32 accumulation, f64 when a tensor is f64 (the convolution's f64 pass).
  ampc_dtype accDt = AMPC_F32;
  for (const TensorArg *t : {&y, &x, &w, &bias})
    if (t->data && t->dtype == AMPC_F64)
      accDt = AMPC_F64;
  Temp acc(be);
  void *out = const_cast<void *>(y.data);
  if (y.dtype != accDt) {
    AMPC_TRY(acc.alloc(numel * dtypeSize(accDt)));
    out = acc.get();
  }
  // The convolution's "input" is only a shape here (its values are not read
  // when no weight gradient is asked for).
  TensorArg dxArg{"y", out, accDt, y.shape, y.rank};
  TensorArg none{"dw", nullptr, AMPC_F32, nullptr, 0};
  TensorArg noBias{"dbias", nullptr, AMPC_F32, nullptr, 0};
  TensorArg dyArg{"x", x.data, x.dtype, x.shape, x.rank};
  AMPC_TRY(convBackward(fn, ctx, dxArg, none, noBias, dyArg, dxArg, w, a));
  if (bias.data) {
    if (bias.rank != 1 || !bias.shape || bias.shape[0] != y.shape[1])
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: bias must be [C_out] = [%lld]", fn,
                      static_cast<long long>(y.shape[1]));
    int64_t bshape[4] = {bias.shape[0], 1, 1, 1};
    return ampc_add_fwd(ctx, const_cast<void *>(y.data), y.dtype, y.shape,
                        y.rank, out, accDt, y.shape, y.rank, bias.data,
                        bias.dtype, bshape, a.spatial + 1);
  }
  if (out != y.data)
    return ampc_cast_fwd(ctx, const_cast<void *>(y.data), y.dtype, y.shape,
                         y.rank, out, accDt, y.shape, y.rank);
  return AMPC_OK;
}

} // namespace

extern "C" {

ampc_status ampc_conv1d_fwd(ampc_context ctx, void *y, ampc_dtype y_dtype,
                            const int64_t *y_shape, int32_t y_rank,
                            const void *x, ampc_dtype x_dtype,
                            const int64_t *x_shape, int32_t x_rank,
                            const void *w, ampc_dtype w_dtype,
                            const int64_t *w_shape, int32_t w_rank,
                            const void *bias, ampc_dtype bias_dtype,
                            const int64_t *bias_shape, int32_t bias_rank,
                            int64_t stride, int64_t padding, int64_t dilation,
                            int64_t groups) {
  const char *fn = "ampc_conv1d_fwd";
  return guard(fn, [&] {
    return convForward(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), AMPC_TENSOR(w),
                       AMPC_TENSOR(bias),
                       ConvAttrs{1, &stride, &padding, &dilation, groups});
  });
}

ampc_status ampc_conv1d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
  const char *fn = "ampc_conv1d_bwd";
  return guard(fn, [&] {
    return convBackward(fn, ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dw),
                        AMPC_TENSOR(dbias), AMPC_TENSOR(dy), AMPC_TENSOR(x),
                        AMPC_TENSOR(w),
                        ConvAttrs{1, &stride, &padding, &dilation, groups});
  });
}

ampc_status ampc_conv3d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_d,
    int64_t stride_h, int64_t stride_w, int64_t pad_d, int64_t pad_h,
    int64_t pad_w, int64_t dilation_d, int64_t dilation_h, int64_t dilation_w,
    int64_t groups) {
  const char *fn = "ampc_conv3d_fwd";
  const int64_t stride[3] = {stride_d, stride_h, stride_w},
                pad[3] = {pad_d, pad_h, pad_w},
                dil[3] = {dilation_d, dilation_h, dilation_w};
  return guard(fn, [&] {
    return convForward(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), AMPC_TENSOR(w),
                       AMPC_TENSOR(bias), ConvAttrs{3, stride, pad, dil, groups});
  });
}

ampc_status ampc_conv3d_bwd(
    ampc_context ctx, void *dx, ampc_dtype dx_dtype, const int64_t *dx_shape,
    int32_t dx_rank, void *dw, ampc_dtype dw_dtype, const int64_t *dw_shape,
    int32_t dw_rank, void *dbias, ampc_dtype dbias_dtype,
    const int64_t *dbias_shape, int32_t dbias_rank, const void *dy,
    ampc_dtype dy_dtype, const int64_t *dy_shape, int32_t dy_rank,
    const void *x, ampc_dtype x_dtype, const int64_t *x_shape, int32_t x_rank,
    const void *w, ampc_dtype w_dtype, const int64_t *w_shape, int32_t w_rank,
    int64_t stride_d, int64_t stride_h, int64_t stride_w, int64_t pad_d,
    int64_t pad_h, int64_t pad_w, int64_t dilation_d, int64_t dilation_h,
    int64_t dilation_w, int64_t groups) {
  const char *fn = "ampc_conv3d_bwd";
  const int64_t stride[3] = {stride_d, stride_h, stride_w},
                pad[3] = {pad_d, pad_h, pad_w},
                dil[3] = {dilation_d, dilation_h, dilation_w};
  return guard(fn, [&] {
    return convBackward(fn, ctx, AMPC_TENSOR(dx), AMPC_TENSOR(dw),
                        AMPC_TENSOR(dbias), AMPC_TENSOR(dy), AMPC_TENSOR(x),
                        AMPC_TENSOR(w), ConvAttrs{3, stride, pad, dil, groups});
  });
}

ampc_status ampc_conv_transpose1d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride,
    int64_t padding, int64_t dilation, int64_t groups) {
  const char *fn = "ampc_conv_transpose1d_fwd";
  return guard(fn, [&] {
    return convTransposeForward(
        fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x), AMPC_TENSOR(w),
        AMPC_TENSOR(bias), ConvAttrs{1, &stride, &padding, &dilation, groups});
  });
}

ampc_status ampc_conv_transpose2d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
    int64_t dilation_w, int64_t groups) {
  const char *fn = "ampc_conv_transpose2d_fwd";
  const int64_t stride[2] = {stride_h, stride_w}, pad[2] = {pad_h, pad_w},
                dil[2] = {dilation_h, dilation_w};
  return guard(fn, [&] {
    return convTransposeForward(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x),
                                AMPC_TENSOR(w), AMPC_TENSOR(bias),
                                ConvAttrs{2, stride, pad, dil, groups});
  });
}

ampc_status ampc_conv_transpose3d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_d,
    int64_t stride_h, int64_t stride_w, int64_t pad_d, int64_t pad_h,
    int64_t pad_w, int64_t dilation_d, int64_t dilation_h, int64_t dilation_w,
    int64_t groups) {
  const char *fn = "ampc_conv_transpose3d_fwd";
  const int64_t stride[3] = {stride_d, stride_h, stride_w},
                pad[3] = {pad_d, pad_h, pad_w},
                dil[3] = {dilation_d, dilation_h, dilation_w};
  return guard(fn, [&] {
    return convTransposeForward(fn, ctx, AMPC_TENSOR(y), AMPC_TENSOR(x),
                                AMPC_TENSOR(w), AMPC_TENSOR(bias),
                                ConvAttrs{3, stride, pad, dil, groups});
  });
}

} // extern "C"
