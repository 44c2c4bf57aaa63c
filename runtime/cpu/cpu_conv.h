//===- cpu_conv.h - Convolution helpers of the CPU backend -------*- C++
//-*-===//
//
// Same-result fast paths for the CPU backend's convolution support:
//  - short runs copied inline (im2col rows are a few dozen elements: a libc
//    memcpy call per row cost more than the copy);
//  - the per-channel bias of a convolution added to an f32 output in place,
//    one image at a time while it is still in cache (the same f32 additions
//    as the generic broadcast add, so the same bits).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_CONV_H
#define AMPC_RUNTIME_CPU_CPU_CONV_H

#include <stddef.h>
#include <stdint.h>

namespace ampc {
namespace cpuconv {

/// Copies `bytes` bytes from src to dst (not overlapping) without calling
/// memcpy; meant for runs of up to a few hundred bytes.
void copyShort(void *dst, const void *src, size_t bytes);

/// y[o, c, i] = src[o, c, i] + bias[c] over contiguous [outer, channels,
/// inner] f32 arrays (y may be src).
void addChannelBiasF32(float *y, const float *src, const float *bias,
                       int64_t outer, int64_t channels, int64_t inner);

} // namespace cpuconv
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_CONV_H
