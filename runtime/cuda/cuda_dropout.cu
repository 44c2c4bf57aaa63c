//===- cuda_dropout.cu - Dropout on CUDA ---------------------------------===//
//
// Dropout runs one thread per element with the CPU backend's counter-based
// mask bits (runtime/src/dropout_ops.h), so both backends draw the same
// masks; the step counter it reads advances on the device (counterNext).
//
//===----------------------------------------------------------------------===//
#include "../src/dropout_ops.h"
#include "cuda_backend.h"

namespace ampc {
namespace cuda {
namespace {

__global__ void dropoutKernel(Buf y, Buf x, const int32_t *step,
                              uint64_t seed, uint64_t key, float p,
                              int64_t n, DropoutShard shard) {
  uint64_t stream = dropoutStream(key, static_cast<uint32_t>(*step));
  float scale = 1.0f / (1.0f - p);
  GRID_STRIDE(i, n)
  storeF32(y.data, y.dtype, i,
           loadF32(x.data, x.dtype, i) *
               dropoutFactor(seed, stream, shard.global(i), p, scale));
}

__global__ void counterNextKernel(int32_t *next, const int32_t *counter) {
  *next = *counter + 1;
}

} // namespace

ampc_status CudaBackend::dropout(Buf y, Buf x, const int32_t *step,
                                 uint64_t seed, uint64_t key, float p,
                                 int64_t numel, DropoutShard shard) {
  ENTER();
  AMPC_TRY(refuseWide("dropout", {y, x}));
  dropoutKernel<<<blocksFor(numel), kThreads, 0, stream_>>>(
      y, x, step, seed, key, p, numel, shard);
  LAUNCH_CHECK("dropout kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::counterNext(int32_t *next, const int32_t *counter) {
  ENTER();
  counterNextKernel<<<1, 1, 0, stream_>>>(next, counter);
  LAUNCH_CHECK("counter kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
