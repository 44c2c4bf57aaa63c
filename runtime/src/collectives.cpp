//===- collectives.cpp - Communicators and collectives ----------*- C++ -*-===//
//
// The ampc_comm_* entry points. MPI lives in a separate module loaded on
// the first ampc_comm_create_mpi (collectives_plugin.h), so nothing else of
// the runtime maps libmpi. 16-bit buffers are widened to f32 for the
// reduction and rounded once when the request completes. Collectives on
// CUDA contexts go to NCCL (collectives_cuda.cpp); ampc_comm_create_self's
// one-rank communicator uses the no-op host table below.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include "collectives_impl.h"
#include "common.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

using namespace ampc;

namespace {
struct LoadedMpi {
  bool ok = false;
  std::string error;
  MpiPluginApi api = {};
};

LoadedMpi loadMpi() {
  LoadedMpi l;
  const char *env = getenv("AMPC_RUNTIME_MPI_LIBRARY");
  std::string path =
      env && *env ? std::string(env) : runtimeDirectory() + kMpiPluginFile;
  // RTLD_GLOBAL: Open MPI loads its own components, which need libmpi's
  // symbols.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    l.error = "collectives: cannot load " + path + " (" +
              (why ? why : "unknown error") +
              "); is Open MPI installed (libopenmpi3)?";
    return l;
  }
  auto entry =
      reinterpret_cast<MpiPluginEntry>(dlsym(handle, AMPC_MPI_PLUGIN_ENTRY_NAME));
  if (!entry || entry(&l.api) != 0 || l.api.abi != kMpiPluginAbi) {
    l.error = "collectives: " + path + " does not match this ampc runtime";
    return l;
  }
  l.ok = true;
  return l;
}

const LoadedMpi &mpi() {
  static LoadedMpi loaded = loadMpi();
  return loaded;
}

ampc_status checkContext(ampc_context ctx, const char *fn) {
  if (!ctx)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: context is NULL", fn);
  return AMPC_OK;
}

bool onCuda(ampc_context ctx) {
  return ctx->backend->kind() == AMPC_BACKEND_CUDA;
}

// The host side of a one-rank communicator: nothing to exchange.
int selfInit(int32_t *rank, int32_t *size, char *) {
  *rank = 0;
  *size = 1;
  return 0;
}
int selfFinalize(char *) { return 0; }
int selfIallreduce(void *, int64_t, int, int, void **req, char *) {
  *req = nullptr;
  return 0;
}
int selfWait(void *, char *) { return 0; }
int selfTest(void *, int *done, char *) {
  *done = 1;
  return 0;
}
int selfBcast(void *, int64_t, int32_t, char *) { return 0; }
int selfBarrier(char *) { return 0; }
void selfAbort(int32_t code) { std::_Exit(code); }
int selfLocalRank(int32_t *local, char *) {
  *local = 0;
  return 0;
}
const MpiPluginApi kSelfApi = {
    kMpiPluginAbi, selfInit,    selfFinalize, selfIallreduce, selfWait,
    selfTest,      selfBcast,   selfBarrier,  selfAbort,      selfLocalRank};

ampc_status pluginError(const char *fn, const char *err) {
  return setError(AMPC_ERROR_DEVICE, "%s: %s", fn, err);
}
} // namespace

extern "C" {

AMPC_API ampc_status ampc_comm_create_mpi(ampc_comm *comm) {
  return guard("ampc_comm_create_mpi", [&]() -> ampc_status {
    if (!comm)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_comm_create_mpi: comm is NULL");
    const LoadedMpi &l = mpi();
    if (!l.ok)
      return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s", l.error.c_str());
    auto c = std::make_unique<ampc_comm_impl>();
    c->api = &l.api;
    char err[256] = "";
    if (l.api.init(&c->rank, &c->size, err))
      return pluginError("ampc_comm_create_mpi", err);
    *comm = c.release();
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_comm_create_self(ampc_comm *comm) {
  return guard("ampc_comm_create_self", [&]() -> ampc_status {
    if (!comm)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_comm_create_self: comm is NULL");
    auto c = std::make_unique<ampc_comm_impl>();
    c->api = &kSelfApi;
    *comm = c.release();
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_comm_destroy(ampc_comm comm) {
  if (!comm)
    return AMPC_OK;
  // NCCL first: its communicator was set up over the host transport.
  ampc_status nst = ncclRelease(comm);
  char err[256] = "";
  int rc = comm->api->finalize(err);
  delete comm;
  if (nst != AMPC_OK)
    return nst;
  return rc ? pluginError("ampc_comm_destroy", err) : AMPC_OK;
}

AMPC_API ampc_status ampc_comm_local_rank(ampc_comm comm, int32_t *local) {
  if (!comm || !local)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_local_rank: %s is NULL",
                    comm ? "local_rank" : "comm");
  char err[256] = "";
  if (comm->api->localRank(local, err))
    return pluginError("ampc_comm_local_rank", err);
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_cuda_device(ampc_comm comm, int32_t *device) {
  return guard("ampc_comm_cuda_device", [&]() -> ampc_status {
    if (!comm || !device)
      return setError(AMPC_ERROR_NULL_POINTER,
                      "ampc_comm_cuda_device: %s is NULL",
                      comm ? "device" : "comm");
    int32_t local = 0, count = 0;
    AMPC_TRY(ampc_comm_local_rank(comm, &local));
    AMPC_TRY(ncclDeviceCount(&count));
    if (count <= 0)
      return setError(AMPC_ERROR_BACKEND_UNAVAILABLE,
                      "ampc_comm_cuda_device: no CUDA device is visible");
    *device = local % count;
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_comm_rank(ampc_comm comm, int32_t *rank) {
  if (!comm || !rank)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_rank: %s is NULL",
                    comm ? "rank" : "comm");
  *rank = comm->rank;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_size(ampc_comm comm, int32_t *size) {
  if (!comm || !size)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_size: %s is NULL",
                    comm ? "size" : "comm");
  *size = comm->size;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_allreduce_async(ampc_comm comm,
                                               ampc_context ctx, void *buf,
                                               ampc_dtype dtype, int64_t count,
                                               ampc_reduce_op op,
                                               ampc_request *request) {
  const char *fn = "ampc_comm_allreduce_async";
  return guard(fn, [&]() -> ampc_status {
    if (!comm || !request || (!buf && count > 0))
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                      !comm ? "comm" : !request ? "request" : "buf");
    AMPC_TRY(checkContext(ctx, fn));
    if (dtype != AMPC_F32 && dtype != AMPC_F16 && dtype != AMPC_BF16 &&
        dtype != AMPC_I32)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: dtype %d (f32, f16, bf16 or i32 expected)", fn,
                      int(dtype));
    if (op != AMPC_REDUCE_SUM && op != AMPC_REDUCE_MEAN &&
        op != AMPC_REDUCE_MAX)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: reduce op %d", fn,
                      int(op));
    if (count < 0)
      return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: count %lld is negative",
                      fn, (long long)count);
    if (onCuda(ctx))
      return ncclAllreduceAsync(comm, ctx, buf, dtype, count, op, request);
    auto r = std::make_unique<ampc_request_impl>();
    r->comm = comm;
    r->buf = buf;
    r->dtype = dtype;
    r->count = count;
    r->op = op;
    void *data = buf;
    if (dtype == AMPC_F16 || dtype == AMPC_BF16) {
      r->wide.resize(count);
      for (int64_t i = 0; i < count; ++i)
        r->wide[i] = loadF32(buf, dtype, i);
      data = r->wide.data();
    }
    char err[256] = "";
    if (comm->api->iallreduce(data, count, dtype == AMPC_I32,
                              op == AMPC_REDUCE_MAX ? 2 : 0, &r->mpi, err))
      return pluginError(fn, err);
    *request = r.release();
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_comm_test(ampc_request request, int32_t *done) {
  const char *fn = "ampc_comm_test";
  if (!request || !done)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                    request ? "done" : "request");
  // A CUDA context's all-reduce runs on its communication stream with no
  // host progress; its wait never blocks the host.
  if (request->nccl || request->complete) {
    *done = 1;
    return AMPC_OK;
  }
  int flag = 0;
  char err[256] = "";
  if (request->comm->api->test(request->mpi, &flag, err))
    return pluginError(fn, err);
  request->complete = flag != 0;
  *done = flag ? 1 : 0;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_wait(ampc_request request) {
  const char *fn = "ampc_comm_wait";
  if (!request)
    return setError(AMPC_ERROR_NULL_POINTER, "%s: request is NULL", fn);
  if (request->nccl)
    return ncclWait(request);
  std::unique_ptr<ampc_request_impl> r(request);
  char err[256] = "";
  if (r->comm->api->wait(r->mpi, err))
    return pluginError(fn, err);
  float inv = 1.0f / static_cast<float>(r->comm->size);
  bool mean = r->op == AMPC_REDUCE_MEAN;
  switch (r->dtype) {
  case AMPC_F32:
    if (mean) {
      float *p = static_cast<float *>(r->buf);
      float w = static_cast<float>(r->comm->size);
      for (int64_t i = 0; i < r->count; ++i)
        p[i] = p[i] / w;
    }
    break;
  case AMPC_I32:
    if (mean) {
      int32_t *p = static_cast<int32_t *>(r->buf);
      for (int64_t i = 0; i < r->count; ++i)
        p[i] /= r->comm->size;
    }
    break;
  default:
    for (int64_t i = 0; i < r->count; ++i)
      storeF32(r->buf, r->dtype, i, mean ? r->wide[i] * inv : r->wide[i]);
    break;
  }
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_allreduce(ampc_comm comm, ampc_context ctx,
                                         void *buf, ampc_dtype dtype,
                                         int64_t count, ampc_reduce_op op) {
  ampc_request r = nullptr;
  AMPC_TRY(ampc_comm_allreduce_async(comm, ctx, buf, dtype, count, op, &r));
  return ampc_comm_wait(r);
}

AMPC_API ampc_status ampc_comm_broadcast(ampc_comm comm, ampc_context ctx,
                                         void *buf, int64_t bytes,
                                         int32_t root) {
  const char *fn = "ampc_comm_broadcast";
  if (!comm || (!buf && bytes > 0))
    return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                    comm ? "buf" : "comm");
  AMPC_TRY(checkContext(ctx, fn));
  if (bytes < 0)
    return setError(AMPC_ERROR_INVALID_ARGUMENT, "%s: bytes %lld is negative",
                    fn, (long long)bytes);
  if (root < 0 || root >= comm->size)
    return setError(AMPC_ERROR_INVALID_ARGUMENT,
                    "%s: root %d is not a rank of the communicator (0 to %d)",
                    fn, int(root), int(comm->size) - 1);
  if (onCuda(ctx))
    return ncclBroadcast(comm, ctx, buf, bytes, root);
  char err[256] = "";
  if (comm->api->bcast(buf, bytes, root, err))
    return pluginError(fn, err);
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_barrier(ampc_comm comm) {
  if (!comm)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_barrier: comm is NULL");
  char err[256] = "";
  if (comm->api->barrier(err))
    return pluginError("ampc_comm_barrier", err);
  return AMPC_OK;
}

AMPC_API ampc_status ampc_context_set_comm(ampc_context ctx, ampc_comm comm) {
  if (!ctx)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_context_set_comm: ctx is NULL");
  ctx->comm = comm;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_context_get_comm(ampc_context ctx, ampc_comm *comm) {
  if (!ctx || !comm)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_context_get_comm: %s is NULL",
                    ctx ? "comm" : "ctx");
  *comm = ctx->comm;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_abort(ampc_comm comm, int32_t code) {
  if (!comm)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_abort: comm is NULL");
  comm->api->abort(code);
  std::_Exit(code); // not reached: MPI_Abort ends the process
}

} // extern "C"
