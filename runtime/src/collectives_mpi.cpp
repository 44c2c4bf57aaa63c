//===- collectives_mpi.cpp - The runtime's MPI module -----------*- C++ -*-===//
//
// The collectives of MPI_COMM_WORLD on host buffers, behind the plain table
// of collectives_plugin.h. Large buffers are cut into pieces of at most
// INT_MAX elements (MPI counts are int).
//
//===----------------------------------------------------------------------===//
#include "collectives_plugin.h"

// The C API only (Open MPI and MPICH otherwise pull in C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
bool initialisedHere = false;

int report(int rc, const char *what, char *err) {
  if (rc == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::snprintf(err, 256, "%s failed: %.*s", what, len, text);
  return 1;
}

int init(int32_t *rank, int32_t *size, char *err) {
  int flag = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED,
                                 &provided))
      return report(rc, "MPI_Init_thread", err);
    initialisedHere = true;
  }
  // Errors come back as codes (the runtime reports them) instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int r = 0, s = 0;
  if (int rc = MPI_Comm_rank(MPI_COMM_WORLD, &r))
    return report(rc, "MPI_Comm_rank", err);
  if (int rc = MPI_Comm_size(MPI_COMM_WORLD, &s))
    return report(rc, "MPI_Comm_size", err);
  *rank = r;
  *size = s;
  return 0;
}

int finalize(char *err) {
  if (!initialisedHere)
    return 0;
  initialisedHere = false;
  return report(MPI_Finalize(), "MPI_Finalize", err);
}

struct Request {
  std::vector<MPI_Request> parts;
};

int iallreduce(void *buf, int64_t count, int isI32, int op, void **req,
               char *err) {
  auto *r = new Request;
  MPI_Datatype type = isI32 ? MPI_INT32_T : MPI_FLOAT;
  MPI_Op mop = op == 2 ? MPI_MAX : MPI_SUM;
  char *p = static_cast<char *>(buf);
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    MPI_Request one;
    if (int rc = MPI_Iallreduce(MPI_IN_PLACE, p + done * 4, n, type, mop,
                                MPI_COMM_WORLD, &one)) {
      delete r;
      return report(rc, "MPI_Iallreduce", err);
    }
    r->parts.push_back(one);
    done += n;
  }
  *req = r;
  return 0;
}

int wait(void *req, char *err) {
  auto *r = static_cast<Request *>(req);
  int rc = r->parts.empty()
               ? MPI_SUCCESS
               : MPI_Waitall(static_cast<int>(r->parts.size()),
                             r->parts.data(), MPI_STATUSES_IGNORE);
  delete r;
  return report(rc, "MPI_Waitall", err);
}

int test(void *req, int *done, char *err) {
  auto *r = static_cast<Request *>(req);
  int flag = 1;
  // MPI_Testall frees the completed requests (MPI_REQUEST_NULL), so the
  // MPI_Waitall of `wait` returns at once afterwards.
  int rc = r->parts.empty()
               ? MPI_SUCCESS
               : MPI_Testall(static_cast<int>(r->parts.size()),
                             r->parts.data(), &flag, MPI_STATUSES_IGNORE);
  *done = flag;
  return report(rc, "MPI_Testall", err);
}

int bcast(void *buf, int64_t bytes, int32_t root, char *err) {
  char *p = static_cast<char *>(buf);
  for (int64_t done = 0; done < bytes;) {
    int n = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
    if (int rc = MPI_Bcast(p + done, n, MPI_BYTE, root, MPI_COMM_WORLD))
      return report(rc, "MPI_Bcast", err);
    done += n;
  }
  return 0;
}

int barrier(char *err) {
  return report(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", err);
}

void abortJob(int32_t code) { MPI_Abort(MPI_COMM_WORLD, code); }

/// The launcher's word when it gives one (Open MPI, MPICH/Hydra, Slurm),
/// else the rank within an MPI shared-memory split of MPI_COMM_WORLD.
int localRank(int32_t *local, char *err) {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "SLURM_LOCALID"})
    if (const char *v = std::getenv(var); v && *v) {
      *local = static_cast<int32_t>(std::atoi(v));
      return 0;
    }
  MPI_Comm node;
  if (int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                   MPI_INFO_NULL, &node))
    return report(rc, "MPI_Comm_split_type", err);
  int r = 0;
  int rc = MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  if (rc)
    return report(rc, "MPI_Comm_rank", err);
  *local = r;
  return 0;
}
} // namespace

extern "C" __attribute__((visibility("default"))) int
ampc_mpi_plugin_entry(MpiPluginApi *api) {
  api->abi = kMpiPluginAbi;
  api->init = init;
  api->finalize = finalize;
  api->iallreduce = iallreduce;
  api->wait = wait;
  api->test = test;
  api->bcast = bcast;
  api->barrier = barrier;
  api->abort = abortJob;
  api->localRank = localRank;
  return 0;
}
