//===- conv_nd.h - the convolution core of every conv entry ------*- C++ -*-===//
//
// The im2col + GEMM convolution of 1, 2 or 3 spatial dims that the conv1d,
// conv2d, conv3d and conv_transpose* entry points share
// (runtime/src/api_conv.cpp): a 1-D convolution is a 2-D one of height 1,
// a 2-D one a 3-D one of depth 1 (ConvGeom's depth fields).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_CONV_ND_H
#define AMPC_RUNTIME_SRC_CONV_ND_H

#include "common.h"

namespace ampc {

/// The attributes of a convolution over `spatial` (1 to 3) dims, one value
/// per spatial dim in order.
struct ConvAttrs {
  int spatial;
  const int64_t *stride, *padding, *dilation;
  int64_t groups;
};

/// y = conv(x, w) + bias: x [N, C, spatial...], w [O, C/groups, k...], bias
/// [O] or absent, y [N, O, out...]; accumulated in f32, rounded once (a
/// call with an f64 tensor computes in f64: Backend::convWide).
ampc_status convForward(const char *fn, ampc_context ctx, const TensorArg &y,
                        const TensorArg &x, const TensorArg &w,
                        const TensorArg &bias, const ConvAttrs &a);

/// The gradients of convForward with respect to x, w and bias (each may be
/// absent); dy has y's shape. dx alone does not read x's values.
ampc_status convBackward(const char *fn, ampc_context ctx,
                         const TensorArg &dx, const TensorArg &dw,
                         const TensorArg &dbias, const TensorArg &dy,
                         const TensorArg &x, const TensorArg &w,
                         const ConvAttrs &a);

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_CONV_ND_H
