//===- cpu_fast.h - Fast paths of the CPU backend's data movement -*- C++ -*-===//
//
// Same-result fast paths behind the CPU backend's generic strided loops:
//  - f16 <-> f32 and bf16 <-> f32 conversion of contiguous runs with
//    AVX-512 or F16C/AVX2 (the widest the CPU has, chosen at run time),
//    bit-identical to the scalar conversions of half.h, NaNs included;
//  - strided copies (transposes, permutes, slices) moved as typed rows or
//    cache-sized 2-D tiles instead of element by element through the dtype
//    switch, 4-byte transposes in 8x8 blocks transposed in AVX registers;
//  - images widened straight into oneDNN's channel-blocked layouts
//    (toChannelBlocks), for convolutions on 16-bit operands that run in f32;
//  - reductions whose reduced elements are strided (bias gradients: a column
//    sum over rows) accumulated for a block of outputs at once, walking the
//    reduced elements of every output in the same order as the plain loop, so
//    every output gets the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_FAST_H
#define AMPC_RUNTIME_CPU_CPU_FAST_H

#include "../src/backend.h"

#include <stdint.h>

namespace ampc {
namespace cpufast {

/// The instruction sets of the contiguous conversions, narrowest first.
/// Every one gives the same bits. AVX512BF16 is AVX512 with f32 -> bf16 on
/// the processor's own rounding instruction (vcvtneps2bf16).
enum class ConvertIsa { Scalar, AVX2, AVX512, AVX512BF16 };

/// Whether this CPU can run `isa`'s conversions.
bool convertSupported(ConvertIsa isa);
/// The conversions in use: the widest supported, unless the environment
/// caps it (AMPC_CPU_ISA, cpu_isa.h; AMPC_CPU_CONVERT_ISA=scalar|avx2|avx512,
/// or AMPC_CPU_SCALAR_CONVERT set).
ConvertIsa convertIsa();
const char *convertIsaName(ConvertIsa isa);

/// Whether the vector conversion paths are in use (convertIsa() is not
/// Scalar), and whether AVX2 may be used by the other fast paths.
bool haveF16C();
bool haveAVX2();

/// Contiguous conversions; same bits as f16ToF32 / f32ToF16 / bf16ToF32 /
/// f32ToBf16 element by element.
void f16ToF32N(const uint16_t *in, float *out, int64_t n);
void f32ToF16N(const float *in, uint16_t *out, int64_t n);
void bf16ToF32N(const uint16_t *in, float *out, int64_t n);
void f32ToBf16N(const float *in, uint16_t *out, int64_t n);

/// The same with a given instruction set (it must be supported), for tests
/// and benchmarks that compare the paths.
void f16ToF32With(ConvertIsa isa, const uint16_t *in, float *out, int64_t n);
void f32ToF16With(ConvertIsa isa, const float *in, uint16_t *out, int64_t n);
void bf16ToF32With(ConvertIsa isa, const uint16_t *in, float *out, int64_t n);
void f32ToBf16With(ConvertIsa isa, const float *in, uint16_t *out, int64_t n);

/// Copies the elements of a walk between two buffers of the same element
/// size (operand 0 dst, operand 1 src); returns false (having done nothing)
/// when the element size has no fast path.
bool stridedCopy(void *dst, const void *src, int64_t elemSize, const Walk &w);

/// One image in oneDNN's channel-blocked layout (nC[D]HW8c, nC[D]HW16c, or
/// channels-last nhwc / ndhwc, which is one block of all the channels):
/// dst [ceil(channels / block)][spatial][block] (f32) = src [channels]
/// [spatial] (f32, f16 or bf16, widened exactly), the block's channels past
/// `channels` zero. `block` is 8, 16 or `channels`. The values are src's,
/// so a primitive reading dst computes what it would on src widened and
/// then reordered; this is both in one pass over src (2 bytes read, 4
/// written per 16-bit element, against 2 + 4 + 4 + 4).
void toChannelBlocks(Buf src, int64_t channels, int64_t spatial, int block,
                     float *dst);

/// The same for 16-bit data kept as it is (a bf16 primitive reading bf16):
/// a move of each element, 8x8 blocks transposed in SSE registers.
void toChannelBlocks16(const uint16_t *src, int64_t channels, int64_t spatial,
                       int block, uint16_t *dst);

/// The way back for one image's result: dst [channels][spatial] (f32, f16
/// or bf16) = src + bias[channel] (bias NULL: none), the sum in f32 and
/// rounded once to dst's dtype, as Backend::addChannelBias; src is f32 in
/// the channel-blocked layout of toChannelBlocks (`block` 8, 16 or
/// `channels`), or plain [channels][spatial] (`block` 0).
void fromChannelBlocks(const float *src, int64_t channels, int64_t spatial,
                       int block, const float *bias, Buf dst);

/// Sum or mean of x into y (both f32, f16 or bf16) for the walks of
/// Backend::reduce when the output block path applies; returns false (having
/// done nothing) otherwise. `mean` divides by the reduced count as the plain
/// loop does.
bool reduceColumns(Buf y, Buf x, const Walk &outer, const Walk &inner,
                   bool mean);
/// Every later reduceColumns runs `isa`'s clone of its column loop (it must
/// be supported; tests only, not thread-safe against running kernels).
void useColumnLoopsForTesting(ConvertIsa isa);

} // namespace cpufast
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_FAST_H
