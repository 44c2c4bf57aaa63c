//===- collectives_nccl.cu - The runtime's NCCL module ----------*- C++ -*-===//
//
// libampc_runtime_nccl.so: the collectives of CUDA contexts over NCCL, behind
// the plain table of src/collectives_nccl_plugin.h. It links NCCL and the
// CUDA runtime and none of the runtime's sources except the header-only
// scalar conversions of src/half.h, the same functions the CPU collective
// uses, so both round 16-bit results identically.
//
// Numerics (the CPU path of src/collectives.cpp, step for step):
//   - f16/bf16 are widened to an f32 scratch buffer, reduced in f32 (ncclSum
//     or ncclMax on ncclFloat32) and rounded once into the buffer, multiplied
//     by 1.0f / W first for MEAN. NCCL's native 16-bit sum is not used: it
//     rounds to 16 bits after every partial sum.
//   - f32 MEAN is the f32 sum divided by float(W); i32 MEAN truncates.
//   - f64 is summed (or maximised) in f64 on ncclFloat64; MEAN is that f64
//     sum divided by double(W), in f64.
//   Over one or two ranks the sum has one order (a + b = b + a), so the
//   results equal the CPU collective's bit for bit; over three or more ranks
//   NCCL and MPI may add in different orders.
//
// Errors: NCCL reports a failed collective through ncclCommGetAsyncError,
// not through the stream. Every call first checks it, and every host wait
// polls it (src/poll_wait.h) instead of blocking in cudaEventSynchronize;
// on an error (or after AMPC_NCCL_TIMEOUT_S seconds, when set) the
// communicator is aborted and the call fails with NCCL's message, so a
// failed collective is an error instead of a hang.
//
//===----------------------------------------------------------------------===//
#include "../src/collectives_nccl_plugin.h"
#include "../src/half.h"
#include "../src/poll_wait.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {
using ampc::loadF32;
using ampc::storeF32;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

int blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < kMaxBlocks ? b : kMaxBlocks);
}

__global__ void widenKernel(float *wide, const void *buf, ampc_dtype dt,
                            int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    wide[i] = loadF32(buf, dt, i);
}

/// 16-bit results: buf = round(mean ? wide * inv : wide).
__global__ void narrowKernel(void *buf, ampc_dtype dt, const float *wide,
                             int64_t n, bool mean, float inv) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF32(buf, dt, i, mean ? wide[i] * inv : wide[i]);
}

__global__ void meanF32Kernel(float *p, int64_t n, float w) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = p[i] / w;
}

__global__ void meanF64Kernel(double *p, int64_t n, double w) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = p[i] / w;
}

__global__ void meanI32Kernel(int32_t *p, int64_t n, int32_t w) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] /= w;
}

struct State {
  ncclComm_t comm = nullptr;
  bool aborted = false; ///< after an asynchronous error: comm is gone
  int32_t device = 0, rank = 0, size = 1;
  cudaStream_t stream = nullptr; ///< the communication stream
  bool usePool = false;
  std::vector<cudaEvent_t> events; ///< free events
};

struct Request {
  cudaEvent_t done = nullptr;
  void *scratch = nullptr; ///< without pools: freed at wait
};

int cudaReport(cudaError_t rc, const char *what, char *err) {
  if (rc == cudaSuccess)
    return 0;
  cudaGetLastError();
  std::snprintf(err, 256, "NCCL collectives: %s failed: %s", what,
                cudaGetErrorString(rc));
  return 2;
}

int ncclReport(ncclResult_t rc, const char *what, ncclComm_t comm, char *err) {
  if (rc == ncclSuccess)
    return 0;
  const char *last = ncclGetLastError(comm);
  std::snprintf(err, 256, "NCCL (libnccl.so.2): %s failed: %s%s%s", what,
                ncclGetErrorString(rc), last && *last ? ": " : "",
                last ? last : "");
  return 1;
}

#define CUDA_OR_RETURN(expr)                                                   \
  do {                                                                         \
    if (int rc_ = cudaReport((expr), #expr, err))                              \
      return rc_;                                                              \
  } while (0)

/// Aborts the communicator after an asynchronous error or a timeout; later
/// calls fail at once.
int abortComm(State &s, const char *why, ncclResult_t rc, char *err) {
  const char *last = ncclGetLastError(s.comm);
  std::snprintf(err, 256,
                "NCCL (libnccl.so.2): %s (%s%s%s); the communicator was "
                "aborted",
                why, ncclGetErrorString(rc), last && *last ? ": " : "",
                last ? last : "");
  ncclCommAbort(s.comm);
  s.comm = nullptr;
  s.aborted = true;
  return 1;
}

/// The communicator's asynchronous error, or 0 (checked at every call).
int checkAsync(State &s, char *err) {
  if (s.aborted) {
    std::snprintf(err, 256, "NCCL (libnccl.so.2): the communicator was "
                            "aborted after an earlier asynchronous error");
    return 1;
  }
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(s.comm, &async) != ncclSuccess)
    return 0;
  if (async != ncclSuccess && async != ncclInProgress)
    return abortComm(s, "a collective failed asynchronously", async, err);
  return 0;
}

/// Waits on the host until `ready` (0: not yet, 1: done, <0: failed) while
/// watching the communicator's asynchronous error.
template <class Ready>
int hostWait(State &s, Ready ready, const char *what, char *err) {
  ncclResult_t async = ncclSuccess;
  const char *limit = getenv("AMPC_NCCL_TIMEOUT_S");
  double timeout = limit ? atof(limit) : 0.0;
  cudaError_t last = cudaSuccess;
  auto now = [] {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  ampc::PollEnd end = ampc::pollUntilDone(
      [&] {
        last = ready();
        if (last == cudaErrorNotReady) {
          cudaGetLastError();
          return 0;
        }
        return last == cudaSuccess ? 1 : -1;
      },
      [&] {
        return ncclCommGetAsyncError(s.comm, &async) == ncclSuccess &&
               async != ncclSuccess && async != ncclInProgress;
      },
      now, [] { std::this_thread::sleep_for(std::chrono::microseconds(50)); },
      timeout);
  switch (end) {
  case ampc::PollEnd::Done:
    return 0;
  case ampc::PollEnd::Failed:
    return cudaReport(last, what, err);
  case ampc::PollEnd::AsyncError:
    return abortComm(s, "a collective failed asynchronously", async, err);
  case ampc::PollEnd::TimedOut:
    return abortComm(s, "a collective did not finish within "
                        "AMPC_NCCL_TIMEOUT_S seconds",
                     ncclSuccess, err);
  }
  return 0;
}

int takeEvent(State &s, cudaEvent_t *e, char *err) {
  if (!s.events.empty()) {
    *e = s.events.back();
    s.events.pop_back();
    return 0;
  }
  CUDA_OR_RETURN(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  return 0;
}

/// The communication stream waits for everything queued on `ctxStream`.
int follow(State &s, cudaStream_t ctxStream, char *err) {
  cudaEvent_t ready;
  if (int rc = takeEvent(s, &ready, err))
    return rc;
  // The wait captures the event's state when queued: it can be reused.
  s.events.push_back(ready);
  CUDA_OR_RETURN(cudaEventRecord(ready, ctxStream));
  CUDA_OR_RETURN(cudaStreamWaitEvent(s.stream, ready, 0));
  return 0;
}

int version(int32_t *code, char *err) {
  int v = 0;
  if (int rc = ncclReport(ncclGetVersion(&v), "ncclGetVersion", nullptr, err))
    return rc;
  *code = v;
  return 0;
}

int deviceCount(int32_t *count, char *err) {
  int n = 0;
  if (int rc = cudaReport(cudaGetDeviceCount(&n), "cudaGetDeviceCount", err))
    return rc;
  *count = n;
  return 0;
}

int streamDevice(void *stream, int32_t *device, char *err) {
  int d = 0;
  if (int rc =
          cudaReport(cudaStreamGetDevice(static_cast<cudaStream_t>(stream), &d),
                     "cudaStreamGetDevice", err))
    return rc;
  *device = d;
  return 0;
}

int uniqueId(void *id, char *err) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "ncclUniqueId size");
  ncclUniqueId u;
  if (int rc = ncclReport(ncclGetUniqueId(&u), "ncclGetUniqueId", nullptr, err))
    return rc;
  std::memcpy(id, &u, sizeof(u));
  return 0;
}

int create(int32_t device, int32_t rank, int32_t size, const void *id,
           void **state, char *err) {
  auto *s = new State;
  s->device = device;
  s->rank = rank;
  s->size = size;
  auto fail = [&](int rc) {
    if (s->stream)
      cudaStreamDestroy(s->stream);
    delete s;
    return rc;
  };
  if (int rc = cudaReport(cudaSetDevice(device), "cudaSetDevice", err))
    return fail(rc);
  if (int rc = cudaReport(
          cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags", err))
    return fail(rc);
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) !=
      cudaSuccess)
    pools = 0;
  cudaGetLastError();
  s->usePool = pools != 0 && !getenv("AMPC_CUDA_NO_POOL");
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof(u));
  if (int rc = ncclReport(ncclCommInitRank(&s->comm, size, u, rank),
                          "ncclCommInitRank", nullptr, err))
    return fail(rc);
  *state = s;
  return 0;
}

int destroy(void *state, char *err) {
  auto *s = static_cast<State *>(state);
  int rc = cudaReport(cudaSetDevice(s->device), "cudaSetDevice", err);
  if (!rc && !s->aborted)
    rc = hostWait(
        *s, [&] { return cudaStreamQuery(s->stream); },
        "cudaStreamQuery (communication stream)", err);
  if (s->comm) {
    ncclResult_t r = rc ? ncclCommAbort(s->comm) : ncclCommDestroy(s->comm);
    if (int e = ncclReport(r, "ncclCommDestroy", nullptr, err))
      rc = rc ? rc : e;
  }
  for (cudaEvent_t e : s->events)
    cudaEventDestroy(e);
  cudaStreamDestroy(s->stream);
  delete s;
  return rc;
}

int allreduce(void *state, void *stream, void *buf, int32_t dtype,
              int64_t count, int32_t op, void **req, char *err) {
  State &s = *static_cast<State *>(state);
  auto ctxStream = static_cast<cudaStream_t>(stream);
  auto dt = static_cast<ampc_dtype>(dtype);
  CUDA_OR_RETURN(cudaSetDevice(s.device));
  if (int rc = checkAsync(s, err))
    return rc;
  if (int rc = follow(s, ctxStream, err))
    return rc;
  auto r = new Request;
  auto fail = [&](int rc) {
    if (r->done)
      s.events.push_back(r->done);
    delete r;
    return rc;
  };
  bool wide16 = dt == AMPC_F16 || dt == AMPC_BF16;
  bool mean = op == 1;
  if (count > 0) {
    void *data = buf;
    if (wide16) {
      size_t bytes = size_t(count) * sizeof(float);
      if (int rc = cudaReport(
              s.usePool ? cudaMallocAsync(&r->scratch, bytes, s.stream)
                        : cudaMalloc(&r->scratch, bytes),
              "allocating the f32 scratch of a 16-bit all-reduce", err))
        return fail(rc);
      widenKernel<<<blocksFor(count), kThreads, 0, s.stream>>>(
          static_cast<float *>(r->scratch), buf, dt, count);
      if (int rc = cudaReport(cudaGetLastError(), "the widening kernel", err))
        return fail(rc);
      data = r->scratch;
    }
    ncclDataType_t type = dt == AMPC_I32   ? ncclInt32
                          : dt == AMPC_F64 ? ncclFloat64
                                           : ncclFloat32;
    ncclRedOp_t nop = op == 2 ? ncclMax : ncclSum;
    if (int rc = ncclReport(ncclAllReduce(data, data, size_t(count), type, nop,
                                          s.comm, s.stream),
                            "ncclAllReduce", s.comm, err))
      return fail(rc);
    if (wide16) {
      narrowKernel<<<blocksFor(count), kThreads, 0, s.stream>>>(
          buf, dt, static_cast<const float *>(r->scratch), count, mean,
          1.0f / static_cast<float>(s.size));
    } else if (mean && dt == AMPC_F32) {
      meanF32Kernel<<<blocksFor(count), kThreads, 0, s.stream>>>(
          static_cast<float *>(buf), count, static_cast<float>(s.size));
    } else if (mean && dt == AMPC_F64) {
      meanF64Kernel<<<blocksFor(count), kThreads, 0, s.stream>>>(
          static_cast<double *>(buf), count, static_cast<double>(s.size));
    } else if (mean) {
      meanI32Kernel<<<blocksFor(count), kThreads, 0, s.stream>>>(
          static_cast<int32_t *>(buf), count, s.size);
    }
    if (int rc = cudaReport(cudaGetLastError(), "the finishing kernel", err))
      return fail(rc);
    if (r->scratch && s.usePool) {
      if (int rc = cudaReport(cudaFreeAsync(r->scratch, s.stream),
                              "cudaFreeAsync", err))
        return fail(rc);
      r->scratch = nullptr;
    }
  }
  if (int rc = takeEvent(s, &r->done, err))
    return fail(rc);
  if (int rc = cudaReport(cudaEventRecord(r->done, s.stream), "cudaEventRecord",
                          err))
    return fail(rc);
  *req = r;
  return 0;
}

int wait(void *state, void *stream, void *req, char *err) {
  State &s = *static_cast<State *>(state);
  auto *r = static_cast<Request *>(req);
  int rc = cudaReport(cudaSetDevice(s.device), "cudaSetDevice", err);
  if (!rc)
    rc = checkAsync(s, err);
  if (!rc)
    rc = cudaReport(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), r->done, 0),
        "cudaStreamWaitEvent", err);
  if (r->scratch) {
    // Without stream-ordered allocation the scratch can only be freed once
    // the all-reduce has finished: the one case that waits on the host.
    if (!rc)
      rc = hostWait(
          s, [&] { return cudaEventQuery(r->done); },
          "cudaEventQuery (16-bit all-reduce)", err);
    if (!rc)
      cudaFree(r->scratch); // after an abort it may still be in use: kept
  }
  s.events.push_back(r->done);
  delete r;
  return rc;
}

int bcast(void *state, void *stream, void *buf, int64_t bytes, int32_t root,
          char *err) {
  State &s = *static_cast<State *>(state);
  auto ctxStream = static_cast<cudaStream_t>(stream);
  CUDA_OR_RETURN(cudaSetDevice(s.device));
  if (int rc = checkAsync(s, err))
    return rc;
  if (bytes == 0)
    return 0;
  if (int rc = follow(s, ctxStream, err))
    return rc;
  if (int rc = ncclReport(ncclBroadcast(buf, buf, size_t(bytes), ncclUint8,
                                        root, s.comm, s.stream),
                          "ncclBroadcast", s.comm, err))
    return rc;
  cudaEvent_t done;
  if (int rc = takeEvent(s, &done, err))
    return rc;
  s.events.push_back(done);
  CUDA_OR_RETURN(cudaEventRecord(done, s.stream));
  CUDA_OR_RETURN(cudaStreamWaitEvent(ctxStream, done, 0));
  return 0;
}
} // namespace

extern "C" __attribute__((visibility("default"))) int
ampc_nccl_plugin_entry(NcclPluginApi *api) {
  api->abi = kNcclPluginAbi;
  api->version = version;
  api->deviceCount = deviceCount;
  api->streamDevice = streamDevice;
  api->uniqueId = uniqueId;
  api->create = create;
  api->destroy = destroy;
  api->allreduce = allreduce;
  api->wait = wait;
  api->bcast = bcast;
  return 0;
}
