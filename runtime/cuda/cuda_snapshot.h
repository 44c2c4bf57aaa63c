//===- cuda_snapshot.h - Copies predicated on a device flag -----*- C++ -*-===//
//
// ampc_copy_if_flag on CUDA (cuda_snapshot.cu): one launch per kMaxRanges
// ranges, the table passed by value, so the host neither waits nor copies
// anything to the device. Every block reads the flag first and returns when
// it is 0.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_SNAPSHOT_H
#define AMPC_RUNTIME_CUDA_SNAPSHOT_H

#include "cuda_internal.h"

namespace ampc {
namespace cuda {

struct CopyChunk {
  static constexpr int kMaxRanges = 64;
  int count;
  void *dst[kMaxRanges];
  const void *src[kMaxRanges];
  int64_t bytes[kMaxRanges];
};

/// Queues the copies of `c` on `s`, made only when *flag != 0; returns
/// cudaGetLastError().
cudaError_t launchCopyIfFlag(cudaStream_t s, const float *flag,
                             const CopyChunk &c);

} // namespace cuda
} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_SNAPSHOT_H
