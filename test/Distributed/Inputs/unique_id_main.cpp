// Communicators made from a unique id (ampc_comm_get_unique_id +
// ampc_comm_create_rank), on the CPU backend.
//
//   mpirun -np 3 unique_id DIR   ids handed over as files in DIR (no MPI
//                                call of the program's own, and no
//                                communicator of the whole job):
//     all three processes in reverse rank order; two communicators over
//     {0,1} and {0,2} made by world rank 0 and joined in that order while
//     world rank 2 asks first (the maker meets a request of the second id
//     while it gathers the first); a one-rank communicator; a duplicate rank
//     that the maker refuses on both members.
//   unique_id --no-mpi           one process, no launcher: one rank works,
//     more need MPI; an id of an MPI job is refused; a CUDA id (where the
//     NCCL module loads) makes a host-less communicator whose host
//     collectives fail saying why; no libmpi is mapped.
// Prints one line per check on world rank 0 (or the one process).
#include "mpi_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {
std::string dir;
int worldRank = 0;
int failures = 0;

void fail(const std::string &what) {
  std::fprintf(stderr, "FAIL: world rank %d: %s\n", worldRank, what.c_str());
  ++failures;
}

/// The id file `name`: written (then renamed, so readers see it whole) by
/// the maker, read by the others once it exists.
void publish(const char *name, const ampc_comm_unique_id &id) {
  std::string path = dir + "/" + name, tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary)
      .write(reinterpret_cast<const char *>(&id), sizeof id);
  std::rename(tmp.c_str(), path.c_str());
}
ampc_comm_unique_id fetch(const char *name) {
  std::string path = dir + "/" + name;
  for (int tries = 0; tries < 3000; ++tries) {
    std::ifstream in(path, std::ios::binary);
    ampc_comm_unique_id id;
    if (in.read(reinterpret_cast<char *>(&id), sizeof id))
      return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "world rank %d: no %s after 30 s\n", worldRank,
               path.c_str());
  std::exit(1);
}
ampc_comm_unique_id makeOrFetch(int maker, const char *name) {
  ampc_comm_unique_id id;
  if (worldRank == maker) {
    check(ampc_comm_get_unique_id(AMPC_BACKEND_CPU, &id), "get_unique_id");
    publish(name, id);
    return id;
  }
  return fetch(name);
}

/// Sum-reduces (rank + 1) * 10 + i over `comm` and checks the closed form,
/// then a broadcast from the last rank; returns the communicator's size.
int exercise(ampc_comm comm, ampc_context ctx, int32_t wantRank,
             int32_t wantSize, const char *what) {
  int32_t rank = -1, size = -1;
  check(ampc_comm_rank(comm, &rank), "rank");
  check(ampc_comm_size(comm, &size), "size");
  if (rank != wantRank || size != wantSize)
    fail(std::string(what) + ": rank " + std::to_string(rank) + " of " +
         std::to_string(size) + ", expected " + std::to_string(wantRank) +
         " of " + std::to_string(wantSize));
  std::vector<float> x(5);
  for (int i = 0; i < 5; ++i)
    x[i] = float((rank + 1) * 10 + i);
  check(ampc_comm_allreduce(comm, ctx, x.data(), AMPC_F32, 5, AMPC_REDUCE_SUM),
        "allreduce");
  for (int i = 0; i < 5; ++i) {
    float want = float(10 * size * (size + 1) / 2 + size * i);
    if (x[i] != want)
      fail(std::string(what) + ": sum[" + std::to_string(i) + "] = " +
           std::to_string(x[i]) + ", expected " + std::to_string(want));
  }
  int32_t tag = rank * 100 + 7;
  check(ampc_comm_broadcast(comm, ctx, &tag, sizeof tag, size - 1),
        "broadcast");
  if (tag != (size - 1) * 100 + 7)
    fail(std::string(what) + ": broadcast gave " + std::to_string(tag));
  check(ampc_comm_barrier(comm), "barrier");
  return size;
}

/// Joins the communicator of `id` as `rank` of `size`, exercises it and
/// destroys it.
void joinAndExercise(const ampc_comm_unique_id &id, ampc_context ctx,
                     int32_t rank, int32_t size, const char *what) {
  ampc_comm comm = nullptr;
  check(ampc_comm_create_rank(rank, size, &id, &comm), what);
  exercise(comm, ctx, rank, size, what);
  check(ampc_comm_destroy(comm), what);
}

/// Makes a CPU id and the one-rank communicator it names, exercises it and
/// destroys it; returns the id.
ampc_comm_unique_id oneRank(ampc_context ctx, const char *what) {
  ampc_comm_unique_id id;
  check(ampc_comm_get_unique_id(AMPC_BACKEND_CPU, &id), "get_unique_id");
  joinAndExercise(id, ctx, 0, 1, what);
  return id;
}

void expectError(ampc_status st, ampc_status want, const char *needle,
                 const char *what) {
  std::string text = ampc_last_error();
  if (st != want || text.find(needle) == std::string::npos)
    fail(std::string(what) + ": got " + ampc_status_string(st) + " (" + text +
         "), expected " + ampc_status_string(want) + " naming '" + needle +
         "'");
}

/// World rank 0 makes the id of file `name`; where `member`, this process
/// asks for `rank` of `size` and must fail with `want` naming `needle`.
void refusedJoin(const char *name, bool member, int32_t rank, int32_t size,
                 ampc_status want, const char *needle, const char *what) {
  ampc_comm_unique_id id = makeOrFetch(0, name);
  if (!member)
    return;
  ampc_comm c = nullptr;
  expectError(ampc_comm_create_rank(rank, size, &id, &c), want, needle, what);
}

int underMpi(ampc_context ctx) {
  const char *env = std::getenv("OMPI_COMM_WORLD_RANK");
  worldRank = env ? std::atoi(env) : 0;

  // All three, in reverse: world rank w is rank 2 - w; world rank 2 makes
  // the id (the maker need not be rank 0).
  ampc_comm_unique_id all = makeOrFetch(2, "all");
  joinAndExercise(all, ctx, 2 - worldRank, 3, "all three");
  if (worldRank == 0)
    std::printf("three ranks in reverse order: sum, broadcast, barrier\n");

  // Two communicators made by world rank 0: A over {0, 1}, B over {0, 2}.
  // World rank 0 joins A then B; world rank 2 asks for B at once and world
  // rank 1 for A late, so rank 0 receives B's request while gathering A.
  ampc_comm_unique_id a = makeOrFetch(0, "a"), b = makeOrFetch(0, "b");
  ampc_comm ca = nullptr, cb = nullptr;
  if (worldRank == 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (worldRank != 2) {
    // A: world rank 0 is rank 1, world rank 1 is rank 0.
    check(ampc_comm_create_rank(1 - worldRank, 2, &a, &ca), "create A");
  }
  if (worldRank != 1)
    check(ampc_comm_create_rank(worldRank / 2, 2, &b, &cb), "create B");
  if (ca)
    exercise(ca, ctx, 1 - worldRank, 2, "A over {0,1}");
  if (cb)
    exercise(cb, ctx, worldRank / 2, 2, "B over {0,2}");
  check(ampc_comm_destroy(ca), "destroy A");
  check(ampc_comm_destroy(cb), "destroy B");
  if (worldRank == 0)
    std::printf("two subsets by one maker, requests crossing: sum, "
                "broadcast, barrier\n");

  // One rank: made and joined by world rank 1 alone.
  if (worldRank == 1)
    oneRank(ctx, "one rank");
  // ... and a process that did not make an id cannot be its only rank.
  refusedJoin("other", worldRank == 2, 0, 1, AMPC_ERROR_INVALID_ARGUMENT,
              "a communicator of one rank is made by the process that made "
              "its id (world rank 0)",
              "one rank, not the maker");
  if (worldRank == 0)
    std::printf("one rank: the maker's own; others refused\n");

  // A duplicate rank: world ranks 0 (the maker) and 1 both ask for rank 0
  // of 2; the maker refuses, and both fail naming the two.
  refusedJoin("dup", worldRank != 2, 0, 2, AMPC_ERROR_DEVICE,
              "rank 0 was asked for by world ranks 0 and 1", "duplicate");
  // A size that differs from the maker's: world rank 1 asks for rank 1 of
  // 3, the maker for rank 0 of 2.
  refusedJoin("sizes", worldRank != 2, worldRank, 2 + worldRank,
              AMPC_ERROR_DEVICE,
              "world rank 1 asked for a communicator of 3 ranks and the "
              "id's maker (world rank 0) for 2",
              "sizes");
  if (worldRank == 0)
    std::printf("duplicate rank, mismatched size: refused on every member\n");

  // A stale id: world rank 1 makes one that names world rank 0 as its maker
  // (as a file left by an earlier run would). World rank 2 asks world rank
  // 0 for it while world rank 0 gathers the members of S, an id of its own:
  // world rank 0 refuses the stranger at once, then world rank 1 joins S.
  ampc_comm_unique_id sid = makeOrFetch(0, "s");
  if (worldRank == 1) {
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    ampc_comm_unique_id fake;
    check(ampc_comm_get_unique_id(AMPC_BACKEND_CPU, &fake), "get stale");
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    publish("stale", fake);
    fetch("stale-refused"); // world rank 2 was answered
  }
  if (worldRank == 2) {
    ampc_comm_unique_id fake = fetch("stale");
    ampc_comm c = nullptr;
    expectError(ampc_comm_create_rank(1, 2, &fake, &c), AMPC_ERROR_DEVICE,
                "world rank 0 made no such id (an id of an earlier run?)",
                "stale id");
    publish("stale-refused", fake);
  } else {
    joinAndExercise(sid, ctx, worldRank, 2, "S after a stale request");
  }
  if (worldRank == 0)
    std::printf("stale id: refused at once, the maker's own join goes on\n");

  // A CUDA id made in the job (where the NCCL module loads) also carries
  // MPI: its communicator's host collectives work on CPU contexts. World
  // rank 1 makes it; an empty file says it could not.
  if (worldRank == 1) {
    ampc_comm_unique_id cid;
    ampc_status st = ampc_comm_get_unique_id(AMPC_BACKEND_CUDA, &cid);
    if (st == AMPC_OK) {
      publish("cuda", cid);
    } else {
      std::ofstream(dir + "/cuda.tmp");
      std::rename((dir + "/cuda.tmp").c_str(), (dir + "/cuda").c_str());
    }
  }
  std::string cudaPath = dir + "/cuda";
  for (int tries = 0; tries < 3000 && !std::ifstream(cudaPath); ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (std::ifstream(cudaPath, std::ios::ate).tellg() > 0) {
    joinAndExercise(fetch("cuda"), ctx, worldRank, 3,
                    "CUDA id in the job, CPU context");
    if (worldRank == 0)
      std::printf("cuda id in the job: host collectives over MPI\n");
  } else if (worldRank == 0) {
    std::printf("cuda id in the job: unavailable\n");
  }

  // Bytes that are not an id; arguments out of range.
  ampc_comm_unique_id zero = {};
  ampc_comm c = nullptr;
  expectError(ampc_comm_create_rank(0, 1, &zero, &c),
              AMPC_ERROR_INVALID_ARGUMENT, "not a unique id", "zero bytes");
  expectError(ampc_comm_create_rank(3, 3, &all, &c),
              AMPC_ERROR_INVALID_ARGUMENT, "rank 3 is not a rank of 3 (0 to 2)",
              "rank 3 of 3");
  expectError(ampc_comm_create_rank(0, 0, &all, &c),
              AMPC_ERROR_INVALID_ARGUMENT, "size 0", "size 0");
  expectError(ampc_comm_create_rank(0, 1, nullptr, &c), AMPC_ERROR_NULL_POINTER,
              "id is NULL", "NULL id");
  expectError(ampc_comm_create_rank(0, 1, &all, nullptr),
              AMPC_ERROR_NULL_POINTER, "comm is NULL", "NULL comm");
  expectError(ampc_comm_get_unique_id(ampc_backend(7), &zero),
              AMPC_ERROR_INVALID_ARGUMENT, "backend 7", "backend 7");
  expectError(ampc_comm_get_unique_id(AMPC_BACKEND_CPU, nullptr),
              AMPC_ERROR_NULL_POINTER, "id is NULL", "NULL out id");
  if (c)
    fail("a failed create set *comm");
  if (worldRank == 0)
    std::printf("bad arguments: located errors\n");
  return failures;
}

bool libmpiMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string text((std::istreambuf_iterator<char>(maps)),
                   std::istreambuf_iterator<char>());
  return text.find("libmpi") != std::string::npos;
}

int withoutMpi(ampc_context ctx) {
  ampc_comm_unique_id id = oneRank(ctx, "one rank, no MPI");
  std::printf("one rank without MPI: sum, broadcast, barrier\n");

  ampc_comm c = nullptr;
  expectError(ampc_comm_create_rank(0, 2, &id, &c),
              AMPC_ERROR_BACKEND_UNAVAILABLE,
              "a communicator of 2 ranks on CPU contexts needs MPI",
              "two CPU ranks without MPI");
  // An id made in an MPI job (as world rank 4) used outside one.
  setenv("OMPI_COMM_WORLD_RANK", "4", 1);
  ampc_comm_unique_id job;
  check(ampc_comm_get_unique_id(AMPC_BACKEND_CPU, &job), "get job id");
  unsetenv("OMPI_COMM_WORLD_RANK");
  expectError(ampc_comm_create_rank(0, 2, &job, &c),
              AMPC_ERROR_INVALID_ARGUMENT,
              "the id was made in an MPI job (by world rank 4), and no MPI "
              "launcher started this process",
              "MPI id outside MPI");
  std::printf("two CPU ranks, or an MPI job's id, without MPI: refused\n");

  ampc_comm_unique_id cudaId;
  ampc_status st = ampc_comm_get_unique_id(AMPC_BACKEND_CUDA, &cudaId);
  if (st == AMPC_ERROR_BACKEND_UNAVAILABLE) {
    std::printf("cuda id: unavailable (%s)\n", ampc_last_error());
  } else {
    check(st, "get cuda id");
    ampc_comm two = nullptr;
    check(ampc_comm_create_rank(1, 2, &cudaId, &two), "create cuda rank 1");
    float x = 1;
    const char *why = "carries collectives on CUDA contexts (NCCL) only";
    expectError(ampc_comm_allreduce(two, ctx, &x, AMPC_F32, 1, AMPC_REDUCE_SUM),
                AMPC_ERROR_DEVICE, why, "host-less allreduce on a CPU context");
    expectError(ampc_comm_barrier(two), AMPC_ERROR_DEVICE, why,
                "host-less barrier");
    int32_t local = -1;
    unsetenv("LOCAL_RANK");
    check(ampc_comm_local_rank(two, &local), "local rank");
    if (local != 1)
      fail("local rank without a launcher: " + std::to_string(local));
    setenv("LOCAL_RANK", "5", 1);
    check(ampc_comm_local_rank(two, &local), "local rank");
    if (local != 5)
      fail("local rank with LOCAL_RANK=5: " + std::to_string(local));
    check(ampc_comm_destroy(two), "destroy cuda");
    std::printf("cuda id: host collectives refused, local rank from "
                "LOCAL_RANK or the rank\n");
  }
  if (libmpiMapped())
    fail("libmpi is mapped");
  else
    std::printf("no libmpi mapped\n");
  return failures;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: unique_id DIR | unique_id --no-mpi\n");
    return 2;
  }
  ampc_context ctx;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context");
  std::string arg = argv[1];
  int bad;
  if (arg == "--no-mpi") {
    bad = withoutMpi(ctx);
  } else {
    dir = arg;
    bad = underMpi(ctx);
  }
  ampc_context_destroy(ctx);
  if (bad)
    return 1;
  if (worldRank == 0)
    std::printf("OK\n");
  return 0;
}
