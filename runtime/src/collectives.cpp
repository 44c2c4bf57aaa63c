//===- collectives.cpp - Communicators and collectives ----------*- C++ -*-===//
//
// The ampc_comm_* entry points. MPI lives in a separate module loaded on
// the first communicator that needs it (collectives_plugin.h), so nothing
// else of the runtime maps libmpi. 16-bit buffers are widened to f32 for the
// reduction and rounded once when the request completes. Collectives on
// CUDA contexts go to NCCL (collectives_cuda.cpp); ampc_comm_create_self's
// one-rank communicator uses the no-op host table below.
//
// A unique id (ampc_comm_get_unique_id) is a nonce, the maker's rank in
// MPI_COMM_WORLD when an MPI launcher started it, and for CUDA an NCCL
// unique id. ampc_comm_create_rank joins over MPI when the id has a world
// rank (the MPI module's join), and otherwise has no host transport: one
// rank, or NCCL only.
//
//===----------------------------------------------------------------------===//
#include "ampc/runtime.h"

#include "collectives_impl.h"
#include "common.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <random>
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
  auto entry = reinterpret_cast<MpiPluginEntry>(
      dlsym(handle, AMPC_MPI_PLUGIN_ENTRY_NAME));
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
int selfInit(void **comm, int32_t *rank, int32_t *size, char *) {
  *comm = nullptr;
  *rank = 0;
  *size = 1;
  return 0;
}
int selfJoin(int32_t, uint64_t, const uint64_t *, int32_t, int32_t, int32_t,
             void **comm, char *) {
  *comm = nullptr;
  return 0;
}
int selfRelease(void *, char *) { return 0; }
int selfIallreduce(void *, void *, int64_t, int, int, void **req, char *) {
  *req = nullptr;
  return 0;
}
int selfWait(void *, char *) { return 0; }
int selfTest(void *, int *done, char *) {
  *done = 1;
  return 0;
}
int selfBcast(void *, void *, int64_t, int32_t, char *) { return 0; }
int selfBarrier(void *, char *) { return 0; }
void selfAbort(int32_t code) { std::_Exit(code); }
int selfLocalRank(void *, int32_t *local, char *) {
  *local = 0;
  return 0;
}
const MpiPluginApi kSelfApi = {kMpiPluginAbi, selfInit,       selfJoin,
                               selfRelease,   selfIallreduce, selfWait,
                               selfTest,      selfBcast,      selfBarrier,
                               selfAbort,     selfLocalRank};

// The host side of a communicator of several ranks with no host transport:
// one of a unique id made for CUDA outside an MPI job. Its collectives on
// CUDA contexts go through NCCL; what needs the host fails, saying why.
int noHost(char *err) {
  std::snprintf(err, 256,
                "this communicator was made from a unique id made outside an "
                "MPI job: it carries collectives on CUDA contexts (NCCL) only; "
                "host collectives (a CPU context, a barrier) need the "
                "processes started by an MPI launcher");
  return 1;
}
int noHostIallreduce(void *, void *, int64_t, int, int, void **, char *err) {
  return noHost(err);
}
int noHostBcast(void *, void *, int64_t, int32_t, char *err) {
  return noHost(err);
}
int noHostBarrier(void *, char *err) { return noHost(err); }
int noHostTest(void *, int *, char *err) { return noHost(err); }
/// The launcher's word (MPI launchers, Slurm, torchrun's LOCAL_RANK); the
/// caller falls back on the communicator rank.
int noHostLocalRank(void *, int32_t *local, char *) {
  if (!launcherInt({AMPC_LOCAL_RANK_VARS, "LOCAL_RANK"}, local))
    *local = -1;
  return 0;
}
const MpiPluginApi kNoHostApi = {kMpiPluginAbi, selfInit,         selfJoin,
                                 selfRelease,   noHostIallreduce, selfWait,
                                 noHostTest,    noHostBcast,      noHostBarrier,
                                 selfAbort,     noHostLocalRank};

// The bytes of an ampc_comm_unique_id.
constexpr char kIdMagic[8] = {'a', 'm', 'p', 'c', 'u', 'i', 'd', '1'};
enum : uint32_t { kIdHasMpi = 1, kIdHasNccl = 2 };
struct UniqueId {
  char magic[8];
  uint64_t nonce;
  int32_t backend;
  uint32_t flags;
  /// The maker's rank in MPI_COMM_WORLD (kIdHasMpi).
  int32_t maker;
  int32_t reserved;
  unsigned char nccl[128];
};
static_assert(sizeof(UniqueId) <= AMPC_COMM_UNIQUE_ID_BYTES, "id size");

/// The nonces of the ids this process made: the maker of an id is the
/// process that finds its nonce here.
std::mutex madeMutex;
std::vector<uint64_t> madeHere;

/// Whether an MPI launcher started this process, and its world rank then.
bool launcherRank(int32_t *rank) {
  return launcherInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, rank);
}

uint64_t freshNonce() {
  std::random_device device;
  uint64_t nonce = 0;
  while (nonce == 0)
    nonce =
        (uint64_t(device()) << 32) ^ device() ^
        uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return nonce;
}

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
    if (l.api.init(&c->host, &c->rank, &c->size, err))
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

AMPC_API ampc_status ampc_comm_get_unique_id(ampc_backend backend,
                                             ampc_comm_unique_id *id) {
  const char *fn = "ampc_comm_get_unique_id";
  return guard(fn, [&]() -> ampc_status {
    if (!id)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: id is NULL", fn);
    if (backend != AMPC_BACKEND_CPU && backend != AMPC_BACKEND_CUDA)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: backend %d (AMPC_BACKEND_CPU or AMPC_BACKEND_CUDA "
                      "expected)",
                      fn, int(backend));
    UniqueId u = {};
    std::memcpy(u.magic, kIdMagic, sizeof u.magic);
    u.nonce = freshNonce();
    u.backend = int32_t(backend);
    if (launcherRank(&u.maker))
      u.flags |= kIdHasMpi;
    if (backend == AMPC_BACKEND_CUDA) {
      AMPC_TRY(ncclMakeUniqueId(u.nccl, fn));
      u.flags |= kIdHasNccl;
    }
    {
      std::lock_guard<std::mutex> lock(madeMutex);
      madeHere.push_back(u.nonce);
    }
    std::memset(id, 0, sizeof *id);
    std::memcpy(id->internal, &u, sizeof u);
    return AMPC_OK;
  });
}

AMPC_API ampc_status ampc_comm_create_rank(int32_t rank, int32_t size,
                                           const ampc_comm_unique_id *id,
                                           ampc_comm *comm) {
  const char *fn = "ampc_comm_create_rank";
  return guard(fn, [&]() -> ampc_status {
    if (!id || !comm)
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                      id ? "comm" : "id");
    UniqueId u;
    std::memcpy(&u, id->internal, sizeof u);
    if (std::memcmp(u.magic, kIdMagic, sizeof u.magic) != 0 ||
        (u.backend != AMPC_BACKEND_CPU && u.backend != AMPC_BACKEND_CUDA))
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: id is not a unique id of ampc_comm_get_unique_id",
                      fn);
    if (size < 1)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: size %d (1 or more ranks expected)", fn, int(size));
    if (rank < 0 || rank >= size)
      return setError(AMPC_ERROR_INVALID_ARGUMENT,
                      "%s: rank %d is not a rank of %d (0 to %d)", fn,
                      int(rank), int(size), int(size) - 1);
    std::vector<uint64_t> made;
    {
      std::lock_guard<std::mutex> lock(madeMutex);
      made = madeHere;
    }
    bool isMaker = std::find(made.begin(), made.end(), u.nonce) != made.end();
    auto c = std::make_unique<ampc_comm_impl>();
    c->rank = rank;
    c->size = size;
    if (u.flags & kIdHasNccl) {
      c->hasNcclId = true;
      std::memcpy(c->ncclId, u.nccl, sizeof c->ncclId);
    }
    char err[256] = "";
    if (u.flags & kIdHasMpi) {
      int32_t mine = 0;
      if (!launcherRank(&mine))
        return setError(AMPC_ERROR_INVALID_ARGUMENT,
                        "%s: the id was made in an MPI job (by world rank "
                        "%d), and no MPI launcher started this process",
                        fn, int(u.maker));
      if (size == 1 && !isMaker)
        return setError(AMPC_ERROR_INVALID_ARGUMENT,
                        "%s: a communicator of one rank is made by the "
                        "process that made its id (world rank %d)",
                        fn, int(u.maker));
      const LoadedMpi &l = mpi();
      if (!l.ok)
        return setError(AMPC_ERROR_BACKEND_UNAVAILABLE, "%s: %s", fn,
                        l.error.c_str());
      c->api = &l.api;
      if (l.api.join(u.maker, u.nonce, made.data(), int32_t(made.size()), rank,
                     size, &c->host, err))
        return pluginError(fn, err);
    } else if (size == 1) {
      c->api = &kSelfApi;
    } else if (u.backend == AMPC_BACKEND_CUDA) {
      c->api = &kNoHostApi;
    } else {
      return setError(AMPC_ERROR_BACKEND_UNAVAILABLE,
                      "%s: a communicator of %d ranks on CPU contexts needs "
                      "MPI, and this id was made outside an MPI job (start "
                      "the processes with mpirun)",
                      fn, int(size));
    }
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
  int rc = comm->api->release(comm->host, err);
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
  if (comm->api->localRank(comm->host, local, err))
    return pluginError("ampc_comm_local_rank", err);
  if (*local < 0) // no launcher said: the communicator rank
    *local = comm->rank;
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

AMPC_API ampc_status ampc_comm_allreduce_async(ampc_comm comm, ampc_context ctx,
                                               void *buf, ampc_dtype dtype,
                                               int64_t count, ampc_reduce_op op,
                                               ampc_request *request) {
  const char *fn = "ampc_comm_allreduce_async";
  return guard(fn, [&]() -> ampc_status {
    if (!comm || !request || (!buf && count > 0))
      return setError(AMPC_ERROR_NULL_POINTER, "%s: %s is NULL", fn,
                      !comm      ? "comm"
                      : !request ? "request"
                                 : "buf");
    AMPC_TRY(checkContext(ctx, fn));
    if (dtype != AMPC_F32 && dtype != AMPC_F16 && dtype != AMPC_BF16 &&
        dtype != AMPC_I32 && dtype != AMPC_F64)
      return setError(AMPC_ERROR_UNSUPPORTED_DTYPE,
                      "%s: dtype %d (f64, f32, f16, bf16 or i32 expected)", fn,
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
    if (comm->api->iallreduce(comm->host, data, count,
                              dtype == AMPC_I32 ? 1 : dtype == AMPC_F64 ? 2 : 0,
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
  case AMPC_F64:
    if (mean) {
      double *p = static_cast<double *>(r->buf);
      double w = static_cast<double>(r->comm->size);
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
  if (comm->api->bcast(comm->host, buf, bytes, root, err))
    return pluginError(fn, err);
  return AMPC_OK;
}

AMPC_API ampc_status ampc_comm_barrier(ampc_comm comm) {
  if (!comm)
    return setError(AMPC_ERROR_NULL_POINTER, "ampc_comm_barrier: comm is NULL");
  char err[256] = "";
  if (comm->api->barrier(comm->host, err))
    return pluginError("ampc_comm_barrier", err);
  return AMPC_OK;
}

AMPC_API ampc_status ampc_context_set_comm(ampc_context ctx, ampc_comm comm) {
  if (!ctx)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_context_set_comm: ctx is NULL");
  ctx->comm = comm;
  return AMPC_OK;
}

AMPC_API ampc_status ampc_context_get_comm(ampc_context ctx, ampc_comm *comm) {
  if (!ctx || !comm)
    return setError(AMPC_ERROR_NULL_POINTER,
                    "ampc_context_get_comm: %s is NULL", ctx ? "comm" : "ctx");
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
