//===- cuda_device.cuh - Launch and device helpers of the CUDA backend -*- CUDA -*-===//
//
// The one copy of the launch geometry, the grid-stride and warp-per-row
// loops and the warp reductions, included by every CUDA translation unit:
// the kernel families (cuda_backend.h; compiled with fused multiply-add) and
// cuda_exact.cu (the kernels that must round every operation like the CPU,
// compiled without).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_DEVICE_CUH
#define AMPC_RUNTIME_CUDA_DEVICE_CUH

#include "cuda_internal.h"

#include <type_traits>

namespace ampc {
namespace cuda {

constexpr int kThreads = 256;

inline int blocksFor(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 * 4 ? (b > 0 ? b : 1) : 65535 * 4);
}

#define GRID_STRIDE(i, n)                                                      \
  for (int64_t i =                                                             \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

/// Warp w of the grid takes rows w, w + warps, ...; `lane` is its lane.
#define WARP_LOOP(r, rows)                                                     \
  int lane = threadIdx.x & 31;                                                 \
  int64_t warp_ =                                                              \
      (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;      \
  int64_t warps_ = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;       \
  for (int64_t r = warp_; r < (rows); r += warps_)

/// Blocks for one warp per row.
inline int warpBlocks(int64_t rows) { return blocksFor(rows * 32); }

/// Rows held in registers (fused norm and softmax rows):
constexpr int kRowRegs = 32; // values per lane: rows up to 1024 wide

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double warpSumD(double v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// The fused row kernels (softmax, norms) take their float dtypes as
/// template values: in a fully unrolled row loop, loadF32's run-time dtype
/// switch cost about 250 registers a thread and most of the bandwidth
/// (softmax at 0.08x PyTorch's speed on an H100). kAnyDtype reads the
/// Buf's own dtype at run time, for the dtypes without an instantiation.
/// The arithmetic is the same either way, so the bits are too.
constexpr int kAnyDtype = -1;

template <int D>
__device__ __forceinline__ float loadAs(const Buf &b, int64_t i) {
  return loadF32(b.data, D == kAnyDtype ? b.dtype : static_cast<ampc_dtype>(D),
                 i);
}

template <int D>
__device__ __forceinline__ void storeAs(const Buf &b, int64_t i, float v) {
  storeF32(b.data, D == kAnyDtype ? b.dtype : static_cast<ampc_dtype>(D), i,
           v);
}

/// Calls f(std::integral_constant<int, D>()) with D the template value for
/// `dt`: itself for f32, f16 and bf16, kAnyDtype for the rest.
template <class F> void withRowDtype(ampc_dtype dt, F &&f) {
  switch (dt) {
  case AMPC_F32:
    f(std::integral_constant<int, AMPC_F32>());
    return;
  case AMPC_F16:
    f(std::integral_constant<int, AMPC_F16>());
    return;
  case AMPC_BF16:
    f(std::integral_constant<int, AMPC_BF16>());
    return;
  default:
    f(std::integral_constant<int, kAnyDtype>());
  }
}

__device__ __forceinline__ bool deviceFlag(Buf f) {
  if (!f.data)
    return false;
  return f.dtype == AMPC_I32 ? *static_cast<const int32_t *>(f.data) != 0
                             : *static_cast<const float *>(f.data) != 0.0f;
}

/// Records `site` (>= 0) in a check word: the smallest site wins.
__device__ inline void recordCheck(uint32_t *word, int32_t site) {
  if (site >= 0)
    atomicMin(reinterpret_cast<unsigned int *>(word),
              static_cast<unsigned int>(site));
}

} // namespace cuda
} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_DEVICE_CUH
