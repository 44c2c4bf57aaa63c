//===- collectives_cuda.cpp - Collectives on CUDA contexts ------*- C++ -*-===//
//
// The CUDA side of ampc_comm_*: NCCL, through libampc_runtime_nccl.so, which
// the runtime loads the first time a collective runs on a CUDA context (or
// ampc_comm_cuda_device is asked), so no other program maps libnccl.
//
// An ampc communicator gets its NCCL communicator lazily, in its first
// collective on a CUDA context: rank 0 makes the NCCL unique id and the
// communicator's host transport (MPI, or nothing on one rank) broadcasts it
// (a communicator of ampc_comm_create_rank with a CUDA id has it already);
// every rank then joins on the device of its context. That first collective
// is collective anyway, so every rank reaches the creation together.
//
//===----------------------------------------------------------------------===//
#include "collectives_impl.h"
#include "collectives_nccl_plugin.h"
#include "common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <string>

using namespace ampc;

namespace {
struct LoadedNccl {
  bool ok = false;
  std::string error;
  NcclPluginApi api = {};
};

LoadedNccl loadNccl() {
  LoadedNccl l;
#ifndef AMPC_RUNTIME_WITH_NCCL
  l.error = "collectives on CUDA contexts need NCCL, and this ampc runtime "
            "was built without its NCCL module (libampc_runtime_nccl.so: "
            "nccl.h or libnccl was not found at build time)";
  return l;
#else
  const char *env = getenv("AMPC_RUNTIME_NCCL_LIBRARY");
  std::string path =
      env && *env ? std::string(env) : runtimeDirectory() + kNcclPluginFile;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    l.error = "collectives: cannot load " + path + " (" +
              (why ? why : "unknown error") +
              "); NCCL (libnccl.so.2) ships with the CUDA toolkit";
    return l;
  }
  auto entry = reinterpret_cast<NcclPluginEntry>(
      dlsym(handle, AMPC_NCCL_PLUGIN_ENTRY_NAME));
  if (!entry || entry(&l.api) != 0 || l.api.abi != kNcclPluginAbi) {
    l.error = "collectives: " + path + " does not match this ampc runtime";
    return l;
  }
  l.ok = true; // stays loaded: communicators may outlive any caller
  return l;
#endif
}

const LoadedNccl &nccl() {
  static std::once_flag once;
  static LoadedNccl loaded;
  std::call_once(once, [] { loaded = loadNccl(); });
  return loaded;
}

/// The module's code: 1 NCCL (unavailable), 2 CUDA (device).
ampc_status moduleError(int rc, const char *fn, const char *err) {
  return setError(rc == 2 ? AMPC_ERROR_DEVICE : AMPC_ERROR_BACKEND_UNAVAILABLE,
                  "%s: %s", fn, err);
}

/// Gives `comm` its NCCL communicator on the device of `ctx` (first use) or
/// checks that `ctx` is on the device it has.
ampc_status ensureNccl(ampc_comm comm, ampc_context ctx, const char *fn) {
  const LoadedNccl &l = nccl();
  if (!l.ok)
    return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s: %s", fn,
                    l.error.c_str());
  char err[256] = "";
  int32_t device = 0;
  if (int rc = l.api.streamDevice(ctx->backend->stream(), &device, err))
    return moduleError(rc, fn, err);
  if (comm->nccl) {
    if (device != comm->ncclDevice)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: the communicator's NCCL side is on CUDA device %d "
                      "and this context on device %d (one device per rank)",
                      fn, int(comm->ncclDevice), int(device));
    return AMPC_OK;
  }
  static_assert(sizeof(comm->ncclId) == kNcclIdBytes, "NCCL id size");
  // Rank 0's id and whether it could make one, so that a failure there
  // fails every rank instead of leaving them waiting in ncclCommInitRank.
  // A communicator of a unique id made for CUDA has its NCCL id already.
  unsigned char id[kNcclIdBytes + 1] = {};
  if (comm->hasNcclId) {
    std::memcpy(id, comm->ncclId, kNcclIdBytes);
    id[kNcclIdBytes] = 1;
  } else if (comm->rank == 0) {
    if (int rc = l.api.uniqueId(id, err))
      std::snprintf(reinterpret_cast<char *>(id), kNcclIdBytes, "%d%s", rc,
                    err);
    else
      id[kNcclIdBytes] = 1;
  }
  char herr[256] = "";
  if (!comm->hasNcclId && comm->api->bcast(comm->host, id, sizeof(id), 0, herr))
    return setError(AMPC_ERROR_DEVICE, "%s: broadcasting the NCCL id: %s", fn,
                    herr);
  if (!id[kNcclIdBytes]) {
    const char *text = reinterpret_cast<const char *>(id);
    return moduleError(text[0] == '2' ? 2 : 1, fn,
                       comm->rank == 0 ? text + 1
                                       : "rank 0 could not make an NCCL id");
  }
  void *state = nullptr;
  if (int rc = l.api.create(device, comm->rank, comm->size, id, &state, err))
    return moduleError(rc, fn, err);
  comm->nccl = state;
  comm->ncclDevice = device;
  return AMPC_OK;
}
} // namespace

ampc_status ampc::ncclAllreduceAsync(ampc_comm comm, ampc_context ctx,
                                     void *buf, ampc_dtype dtype, int64_t count,
                                     ampc_reduce_op op, ampc_request *request) {
  const char *fn = "ampc_comm_allreduce_async";
  AMPC_TRY(ensureNccl(comm, ctx, fn));
  auto r = std::make_unique<ampc_request_impl>();
  r->comm = comm;
  r->buf = buf;
  r->dtype = dtype;
  r->count = count;
  r->op = op;
  r->stream = ctx->backend->stream();
  char err[256] = "";
  if (int rc = nccl().api.allreduce(comm->nccl, r->stream, buf, int32_t(dtype),
                                    count, int32_t(op), &r->nccl, err))
    return moduleError(rc, fn, err);
  *request = r.release();
  return AMPC_OK;
}

ampc_status ampc::ncclWait(ampc_request request) {
  std::unique_ptr<ampc_request_impl> r(request);
  char err[256] = "";
  if (int rc = nccl().api.wait(r->comm->nccl, r->stream, r->nccl, err))
    return moduleError(rc, "ampc_comm_wait", err);
  return AMPC_OK;
}

ampc_status ampc::ncclBroadcast(ampc_comm comm, ampc_context ctx, void *buf,
                                int64_t bytes, int32_t root) {
  const char *fn = "ampc_comm_broadcast";
  AMPC_TRY(ensureNccl(comm, ctx, fn));
  char err[256] = "";
  if (int rc = nccl().api.bcast(comm->nccl, ctx->backend->stream(), buf, bytes,
                                root, err))
    return moduleError(rc, fn, err);
  return AMPC_OK;
}

ampc_status ampc::ncclRelease(ampc_comm comm) {
  if (!comm->nccl)
    return AMPC_OK;
  char err[256] = "";
  int rc = nccl().api.destroy(comm->nccl, err);
  comm->nccl = nullptr;
  return rc ? moduleError(rc, "ampc_comm_destroy", err) : AMPC_OK;
}

ampc_status ampc::ncclMakeUniqueId(void *id, const char *fn) {
  const LoadedNccl &l = nccl();
  if (!l.ok)
    return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s: %s", fn,
                    l.error.c_str());
  char err[256] = "";
  if (int rc = l.api.uniqueId(id, err))
    return moduleError(rc, fn, err);
  return AMPC_OK;
}

ampc_status ampc::ncclDeviceCount(int32_t *count) {
  const char *fn = "ampc_comm_cuda_device";
  const LoadedNccl &l = nccl();
  if (!l.ok)
    return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s: %s", fn,
                    l.error.c_str());
  char err[256] = "";
  if (l.api.deviceCount(count, err))
    return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s: %s", fn, err);
  return AMPC_OK;
}
