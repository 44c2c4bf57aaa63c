//===- cuda_shape.cu - Copies, casts and embedding on CUDA ---------------===//
//
// The shape family: every strided copy (reshape, transpose, concat, slice,
// broadcast and cast are copies over a walk; contiguous float conversions
// are specialised by dtype pair) and the embedding lookup and its gradient
// (stable radix sort of the ids, one warp per run of equal ids, sums in token
// order: bit-identical to the CPU backend).
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "cuda_walk.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace ampc {
namespace cuda {
namespace {

size_t eltBytes(ampc_dtype dt) {
  switch (dt) {
  case AMPC_F32:
  case AMPC_I32:
    return 4;
  case AMPC_F16:
  case AMPC_BF16:
    return 2;
  case AMPC_I64:
  case AMPC_F64:
    return 8;
  case AMPC_I16:
    return 2;
  case AMPC_BOOL:
  case AMPC_U8:
  case AMPC_I8:
    return 1;
  }
  return 4;
}

__global__ void copyKernel(Buf dst, Buf src, Walk w, float scale, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t o0, o1, o2;
    walkOffsets(w, i, o0, o1, o2);
    if (scale == 1.0f)
      convertElement(dst.data, dst.dtype, o0, src.data, src.dtype, o1);
    else
      storeF32(dst.data, dst.dtype, o0,
               scale * loadF32(src.data, src.dtype, o1));
  }
}

__global__ void copy32Kernel(Buf dst, Buf src, Walk32 w, float scale,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    int32_t o0, o1, o2;
    walkOffsets32(w, static_cast<uint32_t>(i), o0, o1, o2);
    if (scale == 1.0f)
      convertElement(dst.data, dst.dtype, o0, src.data, src.dtype, o1);
    else
      storeF32(dst.data, dst.dtype, o0,
               scale * loadF32(src.data, src.dtype, o1));
  }
}

/// Contiguous dtype conversion with scale (src and dst one float dtype each).
template <ampc_dtype DD, ampc_dtype SD>
__global__ void convertContigKernel(void *dst, const void *src, float scale,
                                    int64_t n) {
  GRID_STRIDE(i, n) {
    float v = Elt<SD>::load(static_cast<const typename Elt<SD>::T *>(src)[i]);
    static_cast<typename Elt<DD>::T *>(dst)[i] =
        Elt<DD>::store(scale == 1.0f ? v : scale * v);
  }
}

__global__ void embeddingKernel(Buf y, Buf table, Buf ids, int64_t n,
                                int64_t vocab, int64_t dim, uint32_t *word,
                                int32_t site) {
  GRID_STRIDE(i, n * dim) {
    int64_t id = loadIndex(ids.data, ids.dtype, i / dim);
    bool ok = id >= 0 && id < vocab;
    if (!ok && i % dim == 0)
      recordCheck(word, site);
    storeF32(y.data, y.dtype, i,
             ok ? loadF32(table.data, table.dtype, id * dim + i % dim) : 0.0f);
  }
}

// ---------------------------------------------------- embedding backward --

/// keys[i] = ids[i] where valid, else vocab (sorted to the end, skipped);
/// vals[i] = i.
__global__ void embeddingKeysKernel(Buf ids, int64_t n, int64_t vocab,
                                    int64_t *keys, int32_t *vals) {
  GRID_STRIDE(i, n) {
    int64_t id = loadIndex(ids.data, ids.dtype, i);
    keys[i] = id >= 0 && id < vocab ? id : vocab;
    vals[i] = static_cast<int32_t>(i);
  }
}

/// One warp per run of equal sorted ids: sums the run's dy rows in token
/// order (the radix sort is stable) and writes the table row once; in f64
/// when dtable or dy is f64 (the CPU's f64 sums, same order, same bits).
__global__ void embeddingSegmentsKernel(Buf dtable, Buf dy,
                                        const int64_t *keys,
                                        const int32_t *pos, int64_t n,
                                        int64_t vocab, int64_t dim) {
  WARP_LOOP(s, n) {
    int64_t id = keys[s];
    if (id >= vocab || (s > 0 && keys[s - 1] == id))
      continue;
    int64_t e = s + 1;
    while (e < n && keys[e] == id)
      ++e;
    bool f64 = dtable.dtype == AMPC_F64 || dy.dtype == AMPC_F64;
    for (int64_t c = lane; c < dim; c += 32) {
      if (f64) { // f64 sums, in token order as the CPU's
        double acc = 0.0;
        for (int64_t t = s; t < e; ++t)
          acc += loadF64(dy.data, dy.dtype, pos[t] * dim + c);
        storeF64(dtable.data, dtable.dtype, id * dim + c, acc);
        continue;
      }
      float acc = 0.0f;
      for (int64_t t = s; t < e; ++t)
        acc += loadF32(dy.data, dy.dtype, pos[t] * dim + c);
      storeF32(dtable.data, dtable.dtype, id * dim + c, acc);
    }
  }
}

} // namespace

ampc_status CudaBackend::copy(Buf dst, Buf src, const Walk &w0, float scale) {
  ENTER();
  // A scaled copy with an f64 side scales in f64 (cuda_wide.cu); without a
  // scale, convertElement is exact for f64 and integers.
  ampc_status st;
  if (copyScaleWide(dst, src, w0, scale, st))
    return st;
  int64_t n = w0.numel();
  if (n == 0)
    return AMPC_OK;
  Walk w = collapseWalk(w0, 2);
  if (walkContiguous(w, 2)) {
    if (dst.dtype == src.dtype && scale == 1.0f) {
      CUDA_TRY(cudaMemcpyAsync(dst.data, src.data, n * eltBytes(dst.dtype),
                               cudaMemcpyDeviceToDevice, stream_));
      return AMPC_OK;
    }
    if (launchConvert(dst, src, scale, n))
      return AMPC_OK;
  }
  if (walkFits32(w, 2))
    copy32Kernel<<<blocksFor(n), kThreads, 0, stream_>>>(dst, src,
                                                         toWalk32(w), scale,
                                                         n);
  else
    copyKernel<<<blocksFor(n), kThreads, 0, stream_>>>(dst, src, w, scale,
                                                       n);
  LAUNCH_CHECK("copy kernel");
  return AMPC_OK;
}

/// Contiguous float-to-float conversion, specialised by the dtype pair;
/// false (nothing launched) for other pairs.
bool CudaBackend::launchConvert(Buf dst, Buf src, float scale, int64_t n) {
  if (!isFloatDtype(dst.dtype) || !isFloatDtype(src.dtype))
    return false;
#define AMPC_CONV(DD, SD)                                                      \
  if (dst.dtype == DD && src.dtype == SD) {                                    \
    convertContigKernel<DD, SD><<<blocksFor(n), kThreads, 0, stream_>>>(       \
        dst.data, src.data, scale, n);                                         \
    lastLaunch = "convert kernel";                                             \
    return cudaPeekAtLastError() == cudaSuccess;                               \
  }
  AMPC_CONV(AMPC_F32, AMPC_F32)
  AMPC_CONV(AMPC_F32, AMPC_F16)
  AMPC_CONV(AMPC_F32, AMPC_BF16)
  AMPC_CONV(AMPC_F16, AMPC_F32)
  AMPC_CONV(AMPC_F16, AMPC_F16)
  AMPC_CONV(AMPC_F16, AMPC_BF16)
  AMPC_CONV(AMPC_BF16, AMPC_F32)
  AMPC_CONV(AMPC_BF16, AMPC_F16)
  AMPC_CONV(AMPC_BF16, AMPC_BF16)
#undef AMPC_CONV
  return false;
}

ampc_status CudaBackend::embedding(Buf y, Buf table, Buf ids, int64_t n,
                                   int64_t vocab, int64_t dim, int32_t site) {
  ENTER();
  ampc_status st;
  if (embeddingWide(y, table, ids, n, vocab, dim, site, st))
    return st;
  embeddingKernel<<<blocksFor(n * dim), kThreads, 0, stream_>>>(
      y, table, ids, n, vocab, dim, checkWords + AMPC_CHECK_INDEX, site);
  LAUNCH_CHECK("embedding kernel");
  return AMPC_OK;
}

ampc_status CudaBackend::embeddingBwd(Buf dtable, Buf dy, Buf ids, int64_t n,
                                      int64_t vocab, int64_t dim) {
  ENTER();
  // Rows no id touches are zero (all-zero bits in every float dtype).
  CUDA_TRY(cudaMemsetAsync(dtable.data, 0, vocab * dim * eltBytes(dtable.dtype),
                           stream_));
  if (n == 0 || dim == 0)
    return AMPC_OK;
  if (n >= (int64_t(1) << 31))
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "cuda backend: embedding backward over %lld ids (at "
                    "most 2^31 - 1)",
                    static_cast<long long>(n));
  // Sort (id, position) pairs by id: stable, so each run of one id keeps
  // token order and its sum rounds exactly as the CPU backend's does.
  int endBit = 1;
  while (endBit < 63 && (int64_t(1) << endBit) <= vocab)
    ++endBit;
  size_t sortBytes = 0;
  CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      nullptr, sortBytes, static_cast<const int64_t *>(nullptr),
      static_cast<int64_t *>(nullptr), static_cast<const int32_t *>(nullptr),
      static_cast<int32_t *>(nullptr), static_cast<int>(n), 0, endBit,
      stream_));
  size_t pairBytes = n * (2 * sizeof(int64_t) + 2 * sizeof(int32_t));
  pairBytes = (pairBytes + 255) & ~static_cast<size_t>(255);
  Temp t(*this);
  AMPC_TRY(t.alloc(pairBytes + sortBytes + 256));
  int64_t *keys = static_cast<int64_t *>(t.get());
  int64_t *sortedKeys = keys + n;
  int32_t *vals = reinterpret_cast<int32_t *>(sortedKeys + n);
  int32_t *sortedVals = vals + n;
  uintptr_t after = reinterpret_cast<uintptr_t>(t.get()) + pairBytes;
  void *sortTemp = reinterpret_cast<void *>((after + 255) &
                                            ~static_cast<uintptr_t>(255));
  embeddingKeysKernel<<<blocksFor(n), kThreads, 0, stream_>>>(ids, n, vocab,
                                                              keys, vals);
  LAUNCH_CHECK("embedding backward key kernel");
  CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      sortTemp, sortBytes, keys, sortedKeys, vals, sortedVals,
      static_cast<int>(n), 0, endBit, stream_));
  lastLaunch = "embedding backward sort";
  embeddingSegmentsKernel<<<warpBlocks(n), kThreads, 0, stream_>>>(
      dtable, dy, sortedKeys, sortedVals, n, vocab, dim);
  LAUNCH_CHECK("embedding backward kernel");
  return AMPC_OK;
}

} // namespace cuda
} // namespace ampc
