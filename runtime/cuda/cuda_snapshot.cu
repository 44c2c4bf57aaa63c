//===- cuda_snapshot.cu - Copies predicated on a device flag --------------===//
//
// The grid walks every range of the chunk with a grid stride: 16-byte words
// where both ends of a range are 16-byte aligned (state from ampc_malloc is
// 256-byte aligned), single bytes for the rest. A block whose flag reads 0
// returns before touching anything else, so a step that was not skipped
// costs one launch of the smallest useful grid's worth of flag reads.
//
//===----------------------------------------------------------------------===//
#include "cuda_snapshot.h"

#include <stdint.h>

namespace ampc {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;

__global__ void copyIfFlagKernel(const float *flag, CopyChunk c) {
  if (*flag == 0.0f)
    return;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int t = 0; t < c.count; ++t) {
    const int64_t n = c.bytes[t];
    const uint8_t *src = static_cast<const uint8_t *>(c.src[t]);
    uint8_t *dst = static_cast<uint8_t *>(c.dst[t]);
    int64_t words = 0;
    if (((reinterpret_cast<uintptr_t>(src) |
          reinterpret_cast<uintptr_t>(dst)) & 15) == 0) {
      words = n / 16;
      const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
      uint4 *d4 = reinterpret_cast<uint4 *>(dst);
      for (int64_t i = first; i < words; i += stride)
        d4[i] = s4[i];
    }
    for (int64_t i = words * 16 + first; i < n; i += stride)
      dst[i] = src[i];
  }
}

} // namespace

cudaError_t launchCopyIfFlag(cudaStream_t s, const float *flag,
                             const CopyChunk &c) {
  int64_t total = 0;
  for (int t = 0; t < c.count; ++t)
    total += c.bytes[t];
  // One thread per 16 bytes of the whole chunk, up to kMaxBlocks blocks.
  int64_t blocks = (total / 16 + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > kMaxBlocks)
    blocks = kMaxBlocks;
  copyIfFlagKernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(flag,
                                                                      c);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace ampc
