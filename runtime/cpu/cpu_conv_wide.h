//===- cpu_conv_wide.h - f64 convolutions of the CPU backend ----*- C++ -*-===//
//
// The CPU backend's convolution passes for calls with an f64 tensor
// (Backend::convWide): oneDNN and the direct kernels compute in f32 only,
// so these run as im2col / col2im in f64 and OpenBLAS dgemm, accumulating
// in f64, for 1-, 2- and 3-D geometries with any stride, padding,
// dilation and groups.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_CONV_WIDE_H
#define AMPC_RUNTIME_CPU_CPU_CONV_WIDE_H

#include "../src/backend.h"

namespace ampc {
namespace cpuwide {

/// Runs the pass `c` in f64. Its work is split into items fixed by the
/// problem's shape (an image and group for the forward and the input
/// gradient, a group and block of output channels for the weight
/// gradient, which sums the images in order), so the result has the same
/// bits at every thread count. Returns AMPC_OK or an allocation failure.
ampc_status conv(const ConvWideCall &c);

} // namespace cpuwide
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_CONV_WIDE_H
