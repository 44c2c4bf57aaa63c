//===- cuda_backend.cu - The CUDA backend's context ----------------------===//
//
// The CUDA backend's context (cuda_backend.h): the stream, device and
// page-locked memory, copies to and from the host, asynchronous reads,
// stream-ordered scratch, predicated copies, and the plugin's entry points
// (cuda_internal.h). The kernels live with their families in cuda_*.cu.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "cuda_snapshot.h"

#include <string.h>

namespace ampc {
namespace cuda {
namespace {

// ------------------------------------------------------ asynchronous reads --

/// The pieces of one ampc_read_async, packed in order into `out`.
struct ReadPieces {
  const void *src[Backend::kReadPieces];
  uint32_t bytes[Backend::kReadPieces];
  int count;
};

/// One block: byte i of the packed read comes from the piece covering it.
__global__ void gatherReadKernel(ReadPieces p, uint8_t *out) {
  uint32_t at = 0;
  for (int k = 0; k < p.count; ++k) {
    for (uint32_t i = threadIdx.x; i < p.bytes[k]; i += blockDim.x)
      out[at + i] = static_cast<const uint8_t *>(p.src[k])[i];
    at += p.bytes[k];
  }
}

} // namespace

CudaBackend::~CudaBackend() {
  if (stream_) {
    enter();
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t &e : readEvents)
      if (e)
        cudaEventDestroy(e);
    if (readStage)
      cudaFree(readStage);
    for (UploadSlot &u : uploads) {
      if (u.done)
        cudaEventDestroy(u.done);
      if (u.host)
        cudaFreeHost(u.host);
    }
    cudaStreamDestroy(stream_);
  }
}

ampc_status CudaBackend::init() {
  CUDA_TRY(cudaSetDevice(device));
  CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // Stream-ordered scratch needs memory pools; where the device or driver
  // has none, scratch falls back to cudaMalloc / synchronised cudaFree.
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported,
                             device) != cudaSuccess)
    pools = 0;
  cudaGetLastError();
  usePool = pools != 0 && !getenv("AMPC_CUDA_NO_POOL");
  if (usePool) {
    cudaMemPool_t pool;
    CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
    // Keep freed scratch in the pool across synchronisations instead of
    // returning it to the driver every time (the default threshold is 0).
    uint64_t keep = UINT64_MAX;
    CUDA_TRY(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  // Asynchronous reads: a device staging area and one event per slot,
  // made here so no read allocates (cudaMalloc may wait for the device).
  CUDA_TRY(cudaMalloc(&readStage, kReadBytes));
  for (cudaEvent_t &e : readEvents)
    CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return lt.init(stream_);
}

/// Makes this context's device current on the calling thread (every entry
/// point: contexts on other devices, or other threads, may have changed it).
ampc_status CudaBackend::enter() {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != device)
    CUDA_TRY(cudaSetDevice(device));
  return AMPC_OK;
}

/// The error of a call that waits for queued work: a fault of an earlier
/// kernel surfaces here, so the message names the last launch as well.
ampc_status CudaBackend::asyncFail(cudaError_t err, const char *what) {
  if (err == cudaErrorIllegalAddress || err == cudaErrorLaunchFailure ||
      err == cudaErrorAssert || err == cudaErrorIllegalInstruction ||
      err == cudaErrorMisalignedAddress || err == cudaErrorHardwareStackError)
    return setError(AMPC_ERROR_DEVICE,
                    "cuda backend: %s: a kernel queued earlier failed "
                    "asynchronously (%s; last launched: %s); the CUDA "
                    "context can no longer be used",
                    what, cudaGetErrorString(err), lastLaunch);
  return cudaFail(err, what);
}

/// LAUNCH_CHECK as a value, for launches followed by cleanup.
ampc_status CudaBackend::launchStatus(const char *what) {
  lastLaunch = what;
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? AMPC_OK : cudaFail(err, what);
}

ampc_status CudaBackend::alloc(size_t bytes, void **ptr) {
  ENTER();
  cudaError_t err = cudaMalloc(ptr, bytes);
  if (err == cudaErrorMemoryAllocation)
    return setError(AMPC_ERROR_OUT_OF_MEMORY,
                    "cuda backend: cannot allocate %zu bytes", bytes);
  return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMalloc");
}

ampc_status CudaBackend::release(void *ptr) {
  ENTER();
  // Work queued on the stream may still use the memory.
  cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess)
    return asyncFail(err, "cudaStreamSynchronize (before cudaFree)");
  CUDA_TRY(cudaFree(ptr));
  return AMPC_OK;
}

ampc_status CudaBackend::copyBytes(void *dst, const void *src, size_t bytes,
                                   ampc_memcpy_kind kind) {
  ENTER();
  static const cudaMemcpyKind kinds[] = {
      cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
      cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
  if (kind == AMPC_MEMCPY_HOST_TO_DEVICE && bytes <= kUploadMaxBytes &&
      isPageable(src))
    return stagedUpload(dst, src, bytes);
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kinds[kind], stream_));
  if (kind == AMPC_MEMCPY_DEVICE_TO_HOST || kind == AMPC_MEMCPY_HOST_TO_HOST) {
    cudaError_t err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess)
      return asyncFail(err, "cudaStreamSynchronize (after a copy)");
  }
  return AMPC_OK;
}

/// Whether `p` is ordinary (not page-locked, not device) host memory.
bool CudaBackend::isPageable(const void *p) {
  cudaPointerAttributes a;
  cudaError_t err = cudaPointerGetAttributes(&a, p);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeUnregistered;
}

/// A host-to-device copy from pageable memory (a batch an `ampc run` loop
/// assembled in a std::vector): cudaMemcpyAsync from pageable memory may
/// wait for the stream, so the host would wait for the previous step.
/// The bytes go into one of kUploadSlots page-locked buffers instead, and
/// from there asynchronously; a buffer is reused once the event recorded
/// after its last copy has passed (with kUploadSlots uploads in between,
/// normally long ago: a wait is counted as a host synchronisation).
ampc_status CudaBackend::stagedUpload(void *dst, const void *src,
                                      size_t bytes) {
  UploadSlot &u = uploads[nextUpload++ % kUploadSlots];
  if (u.busy) {
    cudaError_t q = cudaEventQuery(u.done);
    if (q == cudaErrorNotReady) {
      ++hostSyncs;
      q = cudaEventSynchronize(u.done);
    }
    if (q != cudaSuccess)
      return asyncFail(q, "cudaEventSynchronize (reusing upload staging)");
    u.busy = false;
  }
  if (u.capacity < bytes) {
    if (u.host)
      CUDA_TRY(cudaFreeHost(u.host));
    u.host = nullptr;
    u.capacity = 0;
    CUDA_TRY(cudaMallocHost(&u.host, bytes ? bytes : 1));
    u.capacity = bytes;
  }
  if (!u.done)
    CUDA_TRY(cudaEventCreateWithFlags(&u.done, cudaEventDisableTiming));
  memcpy(u.host, src, bytes);
  CUDA_TRY(cudaMemcpyAsync(dst, u.host, bytes, cudaMemcpyHostToDevice,
                           stream_));
  CUDA_TRY(cudaEventRecord(u.done, stream_));
  u.busy = true;
  return AMPC_OK;
}

ampc_status CudaBackend::setBytes(void *ptr, int value, size_t bytes) {
  ENTER();
  CUDA_TRY(cudaMemsetAsync(ptr, value, bytes, stream_));
  return AMPC_OK;
}

ampc_status CudaBackend::synchronize() {
  ENTER();
  cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess)
    return asyncFail(err, "cudaStreamSynchronize");
  return AMPC_OK;
}

ampc_status CudaBackend::hostAlloc(size_t bytes, void **ptr) {
  ENTER();
  cudaError_t err = cudaMallocHost(ptr, bytes ? bytes : 1);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return AMPC_ERROR_OUT_OF_MEMORY;
  }
  return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMallocHost");
}

ampc_status CudaBackend::hostFree(void *ptr) {
  ENTER();
  // A queued read may still write into it.
  cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess)
    return asyncFail(err, "cudaStreamSynchronize (before cudaFreeHost)");
  CUDA_TRY(cudaFreeHost(ptr));
  return AMPC_OK;
}

/// One transfer: a single piece is copied directly; several are packed on
/// the device into the staging area first (one tiny kernel), so the host
/// side is always one cudaMemcpyAsync into page-locked memory and an
/// event. Nothing here waits.
ampc_status CudaBackend::readAsync(void *dst, const void *const *srcs,
                                   const size_t *bytes, int count,
                                   uint64_t ticket) {
  ENTER();
  const void *from = srcs[0];
  size_t total = bytes[0];
  if (count > 1) {
    ReadPieces p{};
    total = 0;
    for (int i = 0; i < count; ++i) {
      p.src[i] = srcs[i];
      p.bytes[i] = static_cast<uint32_t>(bytes[i]);
      total += bytes[i];
    }
    p.count = count;
    gatherReadKernel<<<1, 64, 0, stream_>>>(p,
                                            static_cast<uint8_t *>(readStage));
    LAUNCH_CHECK("read gather kernel");
    from = readStage;
  }
  CUDA_TRY(cudaMemcpyAsync(dst, from, total, cudaMemcpyDeviceToHost, stream_));
  CUDA_TRY(cudaEventRecord(readEvents[ticket % kReadSlots], stream_));
  return AMPC_OK;
}

ampc_status CudaBackend::readWait(uint64_t ticket) {
  ENTER();
  cudaError_t err = cudaEventSynchronize(readEvents[ticket % kReadSlots]);
  if (err != cudaSuccess)
    return asyncFail(err, "cudaEventSynchronize (waiting for a read)");
  return AMPC_OK;
}

ampc_status CudaBackend::tempAlloc(size_t bytes, void **ptr) {
  ENTER();
  cudaError_t err = usePool ? cudaMallocAsync(ptr, bytes, stream_)
                            : cudaMalloc(ptr, bytes);
  if (err == cudaErrorMemoryAllocation)
    return setError(AMPC_ERROR_OUT_OF_MEMORY,
                    "cuda backend: cannot allocate %zu scratch bytes", bytes);
  return err == cudaSuccess ? AMPC_OK : cudaFail(err, "cudaMallocAsync");
}

void CudaBackend::tempFree(void *ptr) {
  if (enter() != AMPC_OK)
    return;
  if (usePool) {
    cudaFreeAsync(ptr, stream_);
  } else {
    ++hostSyncs;
    cudaStreamSynchronize(stream_); // queued work may still use it
    cudaFree(ptr);
  }
}

// ampc_copy_if_flag (cuda_snapshot.cu): one launch per 64 ranges.
ampc_status CudaBackend::copyIfFlag(const float *flag, int count,
                                    void *const *dsts, const void *const *srcs,
                                    const int64_t *bytes) {
  ENTER();
  for (int i = 0; i < count;) {
    cuda::CopyChunk c{};
    for (; i < count && c.count < cuda::CopyChunk::kMaxRanges; ++i) {
      if (bytes[i] <= 0)
        continue;
      c.dst[c.count] = dsts[i];
      c.src[c.count] = srcs[i];
      c.bytes[c.count] = bytes[i];
      ++c.count;
    }
    if (c.count == 0)
      continue;
    cudaError_t err = cuda::launchCopyIfFlag(stream_, flag, c);
    lastLaunch = "predicated copy kernel";
    if (err != cudaSuccess)
      return cudaFail(err, "predicated copy kernel");
  }
  return AMPC_OK;
}

} // namespace cuda

bool cudaPluginAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Backend *cudaPluginCreate(int device, ampc_status *status) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    *status = setError(
        AMPC_ERROR_NO_DEVICE, "cuda backend: no usable CUDA device (%s)",
        err != cudaSuccess ? cudaGetErrorString(err) : "no devices found");
    cudaGetLastError(); // clear the sticky-free error state
    return nullptr;
  }
  if (device < 0 || device >= count) {
    *status = setError(AMPC_ERROR_NO_DEVICE,
                       "cuda backend: device %d requested, %d present", device,
                       count);
    return nullptr;
  }
  auto *be = new cuda::CudaBackend(device);
  *status = be->init();
  if (*status != AMPC_OK) {
    delete be;
    return nullptr;
  }
  return be;
}

} // namespace ampc
