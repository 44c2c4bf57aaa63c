//===- api_seed.cpp - Kernels of the autocast-list ops ----------*- C++ -*-===//
//
// Entry points of the ops added from PyTorch's autocast lists that are not
// table-generated elementwise kernels: conv_transpose2d, through the
// backward-data path of conv2d (GEMM + col2im on both backends).
//
//===----------------------------------------------------------------------===//
#include "common.h"

using namespace ampc;

extern "C" {

ampc_status ampc_conv_transpose2d_fwd(
    ampc_context ctx, void *y, ampc_dtype y_dtype, const int64_t *y_shape,
    int32_t y_rank, const void *x, ampc_dtype x_dtype, const int64_t *x_shape,
    int32_t x_rank, const void *w, ampc_dtype w_dtype, const int64_t *w_shape,
    int32_t w_rank, const void *bias, ampc_dtype bias_dtype,
    const int64_t *bias_shape, int32_t bias_rank, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
    int64_t dilation_w, int64_t groups) {
  const char *fn = "ampc_conv_transpose2d_fwd";
  return guard(fn, [&]() -> ampc_status {
    AMPC_TRY(checkContext(fn, ctx));
    if (y_rank != 4 || !y_shape)
      return setError(AMPC_ERROR_SHAPE_MISMATCH,
                      "%s: y must be [N, C_out, HO, WO]", fn);
    int64_t numel = 1;
    for (int i = 0; i < 4; ++i)
      numel *= y_shape[i];
    if (numel == 0)
      return AMPC_OK;
    Backend &be = *ctx->backend;
    // y = conv2d's input gradient for "output gradient" x, accumulated in
    // f32; the bias is added before the one rounding to y's dtype. The
    // conv2d "input" is only a shape here (its values are not read when no
    // weight gradient is asked for).
    Temp acc(be);
    void *out = y;
    if (y_dtype != AMPC_F32) {
      AMPC_TRY(acc.alloc(numel * sizeof(float)));
      out = acc.get();
    }
    AMPC_TRY(ampc_conv2d_bwd(ctx, out, AMPC_F32, y_shape, y_rank, nullptr,
                             AMPC_F32, nullptr, 0, nullptr, AMPC_F32, nullptr,
                             0, x, x_dtype, x_shape, x_rank, out, AMPC_F32,
                             y_shape, y_rank, w, w_dtype, w_shape, w_rank,
                             stride_h, stride_w, pad_h, pad_w, dilation_h,
                             dilation_w, groups));
    if (bias) {
      if (bias_rank != 1 || !bias_shape || bias_shape[0] != y_shape[1])
        return setError(AMPC_ERROR_SHAPE_MISMATCH,
                        "%s: bias must be [C_out] = [%lld]", fn,
                        static_cast<long long>(y_shape[1]));
      const int64_t bshape[3] = {bias_shape[0], 1, 1};
      return ampc_add_fwd(ctx, y, y_dtype, y_shape, y_rank, out, AMPC_F32,
                          y_shape, y_rank, bias, bias_dtype, bshape, 3);
    }
    if (out != y)
      return ampc_cast_fwd(ctx, y, y_dtype, y_shape, y_rank, out, AMPC_F32,
                           y_shape, y_rank);
    return AMPC_OK;
  });
}

} // extern "C"
