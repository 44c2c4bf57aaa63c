//===- collectives_mpi.cpp - The runtime's MPI module -----------*- C++ -*-===//
//
// The collectives of MPI_COMM_WORLD, or of a communicator over some of its
// processes, on host buffers, behind the plain table of
// collectives_plugin.h. Large buffers are cut into pieces of at most INT_MAX
// elements (MPI counts are int).
//
//===----------------------------------------------------------------------===//
#include "collectives_plugin.h"

// The C API only (Open MPI and MPICH otherwise pull in C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
/// Handles of init and join not yet released.
int liveHandles = 0;
/// An MPI call failed: other ranks may wait on this one, so MPI_Finalize,
/// which waits for every rank, must not run at exit.
bool broken = false;

/// MPI, once finalised, cannot be initialised again, so when this module
/// initialises it, it finalises it at exit, not when the last communicator
/// goes: a program may make and destroy communicators any number of times.
/// Only after an orderly end, every communicator destroyed and no MPI call
/// failed: MPI_Finalize waits for every rank, and a rank that exits holding
/// a communicator or after a failure must leave MPI unfinalised, which MPI
/// launchers take as a failure of the job and end the other ranks.
void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && liveHandles == 0 && !broken)
    MPI_Finalize();
}

int report(int rc, const char *what, char *err) {
  if (rc == MPI_SUCCESS)
    return 0;
  broken = true;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::snprintf(err, 256, "%s failed: %.*s", what, len, text);
  return 1;
}

int fail(char *err, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(err, 256, fmt, args);
  va_end(args);
  return 1;
}

MPI_Comm &handle(void *comm) { return *static_cast<MPI_Comm *>(comm); }

int ensureInit(char *err) {
  int flag = 0;
  MPI_Initialized(&flag);
  if (!flag) {
    int provided = 0;
    if (int rc =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided))
      return report(rc, "MPI_Init_thread", err);
    std::atexit(finalizeAtExit);
  }
  // Errors come back as codes (the runtime reports them) instead of aborting.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return 0;
}

int init(void **comm, int32_t *rank, int32_t *size, char *err) {
  if (ensureInit(err))
    return 1;
  int r = 0, s = 0;
  if (int rc = MPI_Comm_rank(MPI_COMM_WORLD, &r))
    return report(rc, "MPI_Comm_rank", err);
  if (int rc = MPI_Comm_size(MPI_COMM_WORLD, &s))
    return report(rc, "MPI_Comm_size", err);
  *comm = new MPI_Comm(MPI_COMM_WORLD);
  ++liveHandles;
  *rank = r;
  *size = s;
  return 0;
}

// The join of a communicator named by a unique id (ampc_comm_create_rank).
// Tags of MPI_COMM_WORLD's point-to-point traffic that only this uses.
constexpr int kJoinTag = 0x5a31, kReplyTag = 0x5a32, kGroupTag = 0x5a33;

struct JoinRequest {
  uint64_t nonce;
  int32_t rank, size;
};

/// The maker's answer: status 0 and the world rank of every rank, or
/// status 1 and why.
struct JoinReplyHead {
  uint64_t nonce;
  int32_t status, size;
  char why[256];
};

/// Requests that reached the maker while it joined another communicator.
struct Stashed {
  JoinRequest request;
  int source;
};
std::vector<Stashed> stash;

/// Answers a request for an id this process never made (one of an earlier
/// run, say) with a refusal, so that member fails instead of waiting.
int refuseStale(const JoinRequest &q, int source, int me, char *err) {
  JoinReplyHead head = {};
  head.nonce = q.nonce;
  head.status = 1;
  std::snprintf(head.why, sizeof head.why,
                "world rank %d made no such id (an id of an earlier run?)", me);
  return report(
      MPI_Send(&head, sizeof head, MPI_BYTE, source, kReplyTag, MPI_COMM_WORLD),
      "MPI_Send", err);
}

/// The maker's side: gathers the other members' requests, checks them and
/// answers each; `worldRanks` receives the world rank of every rank.
int gatherJoins(uint64_t nonce, const uint64_t *made, int32_t madeCount,
                int32_t rank, int32_t size, int me,
                std::vector<int> &worldRanks, char *err) {
  worldRanks.assign(size, -1);
  worldRanks[rank] = me;
  std::vector<int> sources;
  char why[256] = "";
  auto take = [&](const JoinRequest &q, int source) {
    sources.push_back(source);
    if (*why)
      return;
    if (q.size != size)
      std::snprintf(why, sizeof why,
                    "world rank %d asked for a communicator of %d ranks and "
                    "the id's maker (world rank %d) for %d",
                    source, int(q.size), me, int(size));
    else if (q.rank < 0 || q.rank >= size)
      std::snprintf(why, sizeof why, "world rank %d asked for rank %d of %d",
                    source, int(q.rank), int(size));
    else if (worldRanks[q.rank] != -1)
      std::snprintf(why, sizeof why,
                    "rank %d was asked for by world ranks %d and %d",
                    int(q.rank), worldRanks[q.rank], source);
    else
      worldRanks[q.rank] = source;
  };
  for (size_t i = 0; i < stash.size();)
    if (stash[i].request.nonce == nonce && sources.size() + 1 < size_t(size)) {
      take(stash[i].request, stash[i].source);
      stash.erase(stash.begin() + i);
    } else {
      ++i;
    }
  while (sources.size() + 1 < size_t(size)) {
    JoinRequest q;
    MPI_Status st;
    if (int rc = MPI_Recv(&q, sizeof q, MPI_BYTE, MPI_ANY_SOURCE, kJoinTag,
                          MPI_COMM_WORLD, &st))
      return report(rc, "MPI_Recv", err);
    if (q.nonce == nonce)
      take(q, st.MPI_SOURCE);
    else if (std::find(made, made + madeCount, q.nonce) != made + madeCount)
      stash.push_back({q, st.MPI_SOURCE});
    else if (refuseStale(q, st.MPI_SOURCE, me, err))
      return 1;
  }
  std::vector<char> reply(sizeof(JoinReplyHead) + sizeof(int) * size);
  JoinReplyHead head = {};
  head.nonce = nonce;
  head.status = *why ? 1 : 0;
  head.size = size;
  std::snprintf(head.why, sizeof head.why, "%s", why);
  std::memcpy(reply.data(), &head, sizeof head);
  std::memcpy(reply.data() + sizeof head, worldRanks.data(),
              sizeof(int) * size);
  for (int source : sources)
    if (int rc = MPI_Send(reply.data(), int(reply.size()), MPI_BYTE, source,
                          kReplyTag, MPI_COMM_WORLD))
      return report(rc, "MPI_Send", err);
  if (*why)
    return fail(err, "%s", why);
  return 0;
}

/// A member's side: sends its request to the maker and reads the answer.
int askMaker(int32_t maker, uint64_t nonce, int32_t rank, int32_t size,
             std::vector<int> &worldRanks, char *err) {
  JoinRequest q = {nonce, rank, size};
  if (int rc =
          MPI_Send(&q, sizeof q, MPI_BYTE, maker, kJoinTag, MPI_COMM_WORLD))
    return report(rc, "MPI_Send", err);
  MPI_Status st;
  if (int rc = MPI_Probe(maker, kReplyTag, MPI_COMM_WORLD, &st))
    return report(rc, "MPI_Probe", err);
  int bytes = 0;
  MPI_Get_count(&st, MPI_BYTE, &bytes);
  std::vector<char> reply(std::max<int>(bytes, sizeof(JoinReplyHead)));
  if (int rc = MPI_Recv(reply.data(), bytes, MPI_BYTE, maker, kReplyTag,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE))
    return report(rc, "MPI_Recv", err);
  JoinReplyHead head;
  std::memcpy(&head, reply.data(), sizeof head);
  head.why[sizeof head.why - 1] = 0;
  if (head.nonce != nonce)
    return fail(err,
                "the id's maker (world rank %d) answered for another "
                "communicator: processes must create their communicators in "
                "the same order",
                int(maker));
  if (head.status)
    return fail(err, "the id's maker (world rank %d) refused: %s", int(maker),
                head.why);
  worldRanks.resize(size);
  std::memcpy(worldRanks.data(), reply.data() + sizeof head,
              sizeof(int) * size);
  return 0;
}

int join(int32_t maker, uint64_t nonce, const uint64_t *made, int32_t madeCount,
         int32_t rank, int32_t size, void **comm, char *err) {
  bool isMaker = std::find(made, made + madeCount, nonce) != made + madeCount;
  if (ensureInit(err))
    return 1;
  int me = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (maker < 0 || maker >= world)
    return fail(err,
                "the id names world rank %d as its maker, and this MPI job "
                "has %d ranks (an id of another job?)",
                int(maker), world);
  if (isMaker && me != maker)
    return fail(err,
                "this process made the id as world rank %d but is "
                "world rank %d of MPI_COMM_WORLD",
                int(maker), me);
  if (!isMaker && me == maker)
    return fail(err,
                "the id names this process (world rank %d) as its "
                "maker, and this process did not make it (an id of "
                "another job?)",
                me);
  if (size > world)
    return fail(err, "a communicator of %d ranks in an MPI job of %d",
                int(size), world);
  std::vector<int> worldRanks;
  if (isMaker
          ? gatherJoins(nonce, made, madeCount, rank, size, me, worldRanks, err)
          : askMaker(maker, nonce, rank, size, worldRanks, err))
    return 1;
  MPI_Group worldGroup, group;
  MPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
  int rc = MPI_Group_incl(worldGroup, size, worldRanks.data(), &group);
  MPI_Group_free(&worldGroup);
  if (rc)
    return report(rc, "MPI_Group_incl", err);
  MPI_Comm members = MPI_COMM_NULL;
  rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, kGroupTag, &members);
  MPI_Group_free(&group);
  if (rc)
    return report(rc, "MPI_Comm_create_group", err);
  MPI_Comm_set_errhandler(members, MPI_ERRORS_RETURN);
  *comm = new MPI_Comm(members);
  ++liveHandles;
  return 0;
}

int release(void *comm, char *err) {
  int rc = MPI_SUCCESS;
  if (handle(comm) != MPI_COMM_WORLD)
    rc = MPI_Comm_free(&handle(comm));
  delete static_cast<MPI_Comm *>(comm);
  --liveHandles;
  return report(rc, "MPI_Comm_free", err);
}

struct Request {
  std::vector<MPI_Request> parts;
};

int iallreduce(void *comm, void *buf, int64_t count, int kind, int op,
               void **req, char *err) {
  auto *r = new Request;
  MPI_Datatype type = kind == 1 ? MPI_INT32_T
                      : kind == 2 ? MPI_DOUBLE
                                  : MPI_FLOAT;
  int64_t elem = kind == 2 ? 8 : 4;
  MPI_Op mop = op == 2 ? MPI_MAX : MPI_SUM;
  char *p = static_cast<char *>(buf);
  for (int64_t done = 0; done < count;) {
    int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    MPI_Request one;
    if (int rc = MPI_Iallreduce(MPI_IN_PLACE, p + done * elem, n, type, mop,
                                handle(comm), &one)) {
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
  int rc = r->parts.empty() ? MPI_SUCCESS
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
               : MPI_Testall(static_cast<int>(r->parts.size()), r->parts.data(),
                             &flag, MPI_STATUSES_IGNORE);
  *done = flag;
  return report(rc, "MPI_Testall", err);
}

int bcast(void *comm, void *buf, int64_t bytes, int32_t root, char *err) {
  char *p = static_cast<char *>(buf);
  for (int64_t done = 0; done < bytes;) {
    int n = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
    if (int rc = MPI_Bcast(p + done, n, MPI_BYTE, root, handle(comm)))
      return report(rc, "MPI_Bcast", err);
    done += n;
  }
  return 0;
}

int barrier(void *comm, char *err) {
  return report(MPI_Barrier(handle(comm)), "MPI_Barrier", err);
}

void abortJob(int32_t code) { MPI_Abort(MPI_COMM_WORLD, code); }

/// The launcher's word when it gives one (Open MPI, MPICH/Hydra, Slurm),
/// else the rank within an MPI shared-memory split of the communicator.
int localRank(void *comm, int32_t *local, char *err) {
  if (launcherInt({AMPC_LOCAL_RANK_VARS}, local))
    return 0;
  MPI_Comm node;
  if (int rc = MPI_Comm_split_type(handle(comm), MPI_COMM_TYPE_SHARED, 0,
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
  api->join = join;
  api->release = release;
  api->iallreduce = iallreduce;
  api->wait = wait;
  api->test = test;
  api->bcast = bcast;
  api->barrier = barrier;
  api->abort = abortJob;
  api->localRank = localRank;
  return 0;
}
