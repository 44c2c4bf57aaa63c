//===- cuda_walk.cuh - Walks and element access of the CUDA kernels -===//
//
// How the kernels of several families reach their elements: strided walks
// (one index to the offsets of up to three operands), collapsed on the host
// (adjacent dims merged, 32-bit offsets when every offset fits), and the
// storage of one float dtype for contiguous kernels with vector loads.
// Included by cuda_shape.cu, cuda_elementwise.cu, cuda_reduction.cu and
// cuda_linalg.cu.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CUDA_WALK_CUH
#define AMPC_RUNTIME_CUDA_WALK_CUH

#include "cuda_device.cuh"

namespace ampc {
namespace cuda {

/// The offsets of element i of a walk in its three operands.
__device__ __forceinline__ void
walkOffsets(const Walk &w, int64_t i, int64_t &o0, int64_t &o1, int64_t &o2) {
  o0 = o1 = o2 = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    int64_t idx = i % w.shape[d];
    i /= w.shape[d];
    o0 += idx * w.stride[0][d];
    o1 += idx * w.stride[1][d];
    o2 += idx * w.stride[2][d];
  }
}

// ------------------------------------------------------- collapsed walks --

/// Drops size-1 dims and merges dim d into d+1 where every one of the first
/// `ops` operands is contiguous across the pair.
inline Walk collapseWalk(const Walk &w, int ops) {
  Walk out;
  for (int d = 0; d < w.rank; ++d) {
    if (w.shape[d] == 1)
      continue;
    if (out.rank > 0) {
      int p = out.rank - 1;
      bool merge = true;
      for (int k = 0; k < ops; ++k)
        merge &= out.stride[k][p] == w.stride[k][d] * w.shape[d];
      if (merge) {
        out.shape[p] *= w.shape[d];
        for (int k = 0; k < ops; ++k)
          out.stride[k][p] = w.stride[k][d];
        continue;
      }
    }
    out.shape[out.rank] = w.shape[d];
    for (int k = 0; k < 3; ++k)
      out.stride[k][out.rank] = k < ops ? w.stride[k][d] : 0;
    ++out.rank;
  }
  if (out.rank == 0) { // a single element
    out.rank = 1;
    out.shape[0] = w.numel() == 0 ? 0 : 1;
    for (int k = 0; k < 3; ++k)
      out.stride[k][0] = 1;
  }
  return out;
}

/// Whether the first `ops` operands of a collapsed walk are all contiguous.
inline bool walkContiguous(const Walk &w, int ops) {
  if (w.rank != 1)
    return false;
  for (int k = 0; k < ops; ++k)
    if (w.stride[k][0] != 1)
      return false;
  return true;
}

/// Whether every index and offset of the walk fits in 32 bits.
inline bool walkFits32(const Walk &w, int ops) {
  if (w.numel() >= (int64_t(1) << 31))
    return false;
  for (int k = 0; k < ops; ++k) {
    int64_t span = 0;
    for (int d = 0; d < w.rank; ++d)
      span += (w.shape[d] - 1) * (w.stride[k][d] < 0 ? -w.stride[k][d]
                                                     : w.stride[k][d]);
    if (span >= (int64_t(1) << 31))
      return false;
  }
  return true;
}

/// The walk in 32-bit form: unsigned divisions are far cheaper than 64-bit.
struct Walk32 {
  int rank;
  uint32_t shape[kMaxRank];
  int32_t stride[3][kMaxRank];
};

inline Walk32 toWalk32(const Walk &w) {
  Walk32 o{};
  o.rank = w.rank;
  for (int d = 0; d < w.rank; ++d) {
    o.shape[d] = static_cast<uint32_t>(w.shape[d]);
    for (int k = 0; k < 3; ++k)
      o.stride[k][d] = static_cast<int32_t>(w.stride[k][d]);
  }
  return o;
}

__device__ __forceinline__ void walkOffsets32(const Walk32 &w, uint32_t i,
                                              int32_t &o0, int32_t &o1,
                                              int32_t &o2) {
  o0 = o1 = o2 = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    uint32_t s = w.shape[d];
    uint32_t q = i / s, idx = i - q * s;
    i = q;
    o0 += static_cast<int32_t>(idx) * w.stride[0][d];
    o1 += static_cast<int32_t>(idx) * w.stride[1][d];
    o2 += static_cast<int32_t>(idx) * w.stride[2][d];
  }
}

// ------------------------------------- contiguous, dtype-specialised, vec4 --

/// Storage of one float dtype: T is the element, V four of them.
template <ampc_dtype DT> struct Elt;
template <> struct Elt<AMPC_F32> {
  using T = float;
  using V = float4;
  static __device__ __forceinline__ float load(T v) { return v; }
  static __device__ __forceinline__ T store(float v) { return v; }
  static __device__ __forceinline__ void split(const V &v, float *f) {
    f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
  }
  static __device__ __forceinline__ V join(const float *f) {
    return make_float4(f[0], f[1], f[2], f[3]);
  }
};
template <ampc_dtype DT> struct EltHalf {
  using T = uint16_t;
  using V = uint2;
  static __device__ __forceinline__ float load(T v) {
    return DT == AMPC_F16 ? f16ToF32(v) : bf16ToF32(v);
  }
  static __device__ __forceinline__ T store(float v) {
    return DT == AMPC_F16 ? f32ToF16(v) : f32ToBf16(v);
  }
  static __device__ __forceinline__ void split(const V &v, float *f) {
    f[0] = load(static_cast<T>(v.x & 0xffffu));
    f[1] = load(static_cast<T>(v.x >> 16));
    f[2] = load(static_cast<T>(v.y & 0xffffu));
    f[3] = load(static_cast<T>(v.y >> 16));
  }
  static __device__ __forceinline__ V join(const float *f) {
    V v;
    v.x = static_cast<uint32_t>(store(f[0])) |
          (static_cast<uint32_t>(store(f[1])) << 16);
    v.y = static_cast<uint32_t>(store(f[2])) |
          (static_cast<uint32_t>(store(f[3])) << 16);
    return v;
  }
};
template <> struct Elt<AMPC_F16> : EltHalf<AMPC_F16> {};
template <> struct Elt<AMPC_BF16> : EltHalf<AMPC_BF16> {};

inline bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}
inline bool aligned8(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 7u) == 0;
}

} // namespace cuda
} // namespace ampc

#endif // AMPC_RUNTIME_CUDA_WALK_CUH
