// Data-parallel training with the code of `ampc --emit=cpp` (docs/codegen.md,
// docs/distributed.md). Build the step with the all-reduce ops, then this
// program against it and the runtime, and start it under mpirun:
//
//   ampc model.tg --emit=cpp --data-parallel -o model.cpp
//   g++ -std=c++17 -I<runtime include> -DGRAPH=m '-DGRAPH_HEADER="model.h"'
//       model.cpp ddp_train.cpp -L<runtime lib> -lampc_runtime -o train
//   (one command)
//   mpirun -np 2 ./train x.npy labels.npy 20
//
//   train [--device=cpu|cuda] [--save FILE] [--id-file FILE --rank R
//         --world W] INPUT.npy... STEPS
//
// GRAPH is the graph's name; the arguments are the inputs as .npy files (in
// graph order), then the step count. An input file with W times the graph's
// rows is sharded as `ampc run` shards it (rank r takes rows j * W + r), so
// the ranks together train on the batch one process would take whole. Rank 0
// prints the mean loss over the ranks of each step, as `ampc run --log`, and
// with --save writes the checkpoint at the end (NAME_save: parameters,
// optimizer and scaler state).
//
// --device=cuda runs the step on a CUDA context (code emitted with
// --target=cuda): each rank uses the device ampc_comm_cuda_device picks
// (its local rank modulo the visible devices) and the all-reduce goes
// through NCCL. Started without an MPI launcher, the program is one rank on
// ampc_comm_create_self's communicator and needs no MPI library.
//
// --id-file FILE --rank R --world W makes the communicator from a unique id
// instead (ampc_comm_create_rank, docs/distributed.md): rank 0 makes the id
// and writes it to FILE, which must not exist yet; the other ranks read it.
// With --device=cuda the ranks then need no MPI launcher (NCCL carries the
// all-reduce); on the CPU more than one rank needs one.
//
// SIGINT / SIGTERM follow `ampc run`'s rule (docs/jobs.md, "Signals"): the
// ranks agree, in each step's loss all-reduce, to stop after that step;
// rank 0 then writes --save and every rank exits 130 / 143. A second signal
// within 2 s of the first (coreutils `timeout` sends one to the process and
// one to its group) is the same interruption; a later one exits at once,
// after a note naming the checkpoint left unwritten (ampc/interrupt.h, next
// to runtime.h, holds the rule).
#include GRAPH_HEADER

#include <ampc/interrupt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(x) CAT(GRAPH, x)

static bool check(ampc_status st, const char *what) {
  if (st == AMPC_OK)
    return true;
  std::fprintf(stderr, "%s: %s (%s)\n", what, ampc_status_string(st),
               ampc_last_error());
  return false;
}

/// The rows of an .npy file: its bytes after the header and the first
/// dimension of its shape.
static bool readNpy(const char *path, std::string &data, int64_t &rows) {
  FILE *f = std::fopen(path, "rb");
  if (!f)
    return false;
  std::string all;
  char chunk[4096];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    all.append(chunk, got);
  std::fclose(f);
  if (all.size() < 10)
    return false;
  size_t header = 10 + (static_cast<unsigned char>(all[8]) |
                        (static_cast<unsigned char>(all[9]) << 8));
  size_t shape = all.find("'shape': (");
  if (shape == std::string::npos || shape > header)
    return false;
  rows = std::atoll(all.c_str() + shape + 10);
  data = all.substr(header);
  return true;
}

/// The communicator of a unique id handed over as a file: rank 0 makes the
/// id and writes FILE (whole, by a rename), the others wait for it.
static bool joinByFile(const char *path, int32_t rank, int32_t world,
                       ampc_backend backend, ampc_comm *comm) {
  ampc_comm_unique_id id;
  if (rank == 0) {
    if (!check(ampc_comm_get_unique_id(backend, &id), "unique id"))
      return false;
    std::string tmp = std::string(path) + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "wb");
    bool ok = f && std::fwrite(&id, sizeof id, 1, f) == 1;
    if (f)
      ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path) != 0) {
      std::fprintf(stderr, "cannot write the id to %s\n", path);
      return false;
    }
  } else {
    bool got = false;
    for (int tries = 0; tries < 600 && !got; ++tries) { // 60 s
      if (FILE *f = std::fopen(path, "rb")) {
        got = std::fread(&id, sizeof id, 1, f) == 1;
        std::fclose(f);
      }
      if (!got)
        usleep(100000);
    }
    if (!got) {
      std::fprintf(stderr, "rank %d: no id in %s after 60 s\n", int(rank),
                   path);
      return false;
    }
  }
  return check(ampc_comm_create_rank(rank, world, &id, comm), "communicator");
}

/// Whether an MPI launcher (mpirun, mpiexec, srun) started this process.
static bool underLauncher() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (std::getenv(var))
      return true;
  return false;
}

int main(int argc, char **argv) {
  ampc_backend backend = AMPC_BACKEND_CPU;
  const char *savePath = nullptr, *idFile = nullptr;
  int32_t idRank = -1, idWorld = -1;
  int arg = 1;
  for (; arg < argc && std::strncmp(argv[arg], "--", 2) == 0; ++arg) {
    if (std::strcmp(argv[arg], "--device=cpu") == 0) {
      backend = AMPC_BACKEND_CPU;
    } else if (std::strcmp(argv[arg], "--device=cuda") == 0) {
      backend = AMPC_BACKEND_CUDA;
    } else if (std::strcmp(argv[arg], "--save") == 0 && arg + 1 < argc) {
      savePath = argv[++arg];
    } else if (std::strcmp(argv[arg], "--id-file") == 0 && arg + 1 < argc) {
      idFile = argv[++arg];
    } else if (std::strcmp(argv[arg], "--rank") == 0 && arg + 1 < argc) {
      idRank = std::atoi(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--world") == 0 && arg + 1 < argc) {
      idWorld = std::atoi(argv[++arg]);
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", argv[0], argv[arg]);
      return 2;
    }
  }
  int32_t n = FN(num_inputs)();
  bool byId = idFile || idRank >= 0 || idWorld >= 0;
  if (argc - arg != n + 1 ||
      (byId && (!idFile || idWorld < 1 || idRank < 0 || idRank >= idWorld))) {
    std::fprintf(stderr,
                 "usage: %s [--device=cpu|cuda] [--save FILE] [--id-file "
                 "FILE --rank R --world W (0 <= R < W)] INPUT.npy... STEPS "
                 "(%d inputs)\n",
                 argv[0], int(n));
    return 2;
  }
  char **files = argv + arg;
  // One communicator for the job, attached to the context the step runs
  // on: the step's gradient all-reduce ops use it.
  ampc_comm comm;
  if (byId ? !joinByFile(idFile, idRank, idWorld, backend, &comm)
           : !check(underLauncher() ? ampc_comm_create_mpi(&comm)
                                    : ampc_comm_create_self(&comm),
                    "communicator"))
    return 1;
  int32_t rank = 0, world = 1, device = 0;
  ampc_comm_rank(comm, &rank);
  ampc_comm_size(comm, &world);
  if (backend == AMPC_BACKEND_CUDA &&
      !check(ampc_comm_cuda_device(comm, &device), "cuda device"))
    return 1;
  ampc_context ctx;
  if (!check(ampc_context_create(backend, device, &ctx), "context") ||
      !check(ampc_context_set_comm(ctx, comm), "attach"))
    return 1;
  // Every rank initialises from the same seed: the replicas start equal.
  FN(state) *state = nullptr;
  if (!check(FN(create)(ctx, 0, &state), "create"))
    return 1;
  std::vector<void *> inputs(n);
  for (int32_t i = 0; i < n; ++i) {
    std::string data;
    int64_t rows = 0;
    if (!readNpy(files[i], data, rows) || rows < 1) {
      std::fprintf(stderr, "%s: not a .npy file\n", files[i]);
      return 1;
    }
    int64_t bytes = FN(input_bytes)(i);
    std::string mine;
    if (static_cast<int64_t>(data.size()) == bytes) {
      mine = data; // the same on every rank
    } else if (static_cast<int64_t>(data.size()) == bytes * world &&
               rows % world == 0) {
      int64_t rowBytes = static_cast<int64_t>(data.size()) / rows;
      for (int64_t j = 0; j < rows / world; ++j)
        mine.append(data, (j * world + rank) * rowBytes, rowBytes);
    } else {
      std::fprintf(stderr,
                   "%s: %lld bytes, input %d takes %lld (or %d times "
                   "that, sharded)\n",
                   files[i], (long long)data.size(), int(i), (long long)bytes,
                   int(world));
      return 1;
    }
    if (!check(ampc_malloc(ctx, bytes, &inputs[i]), "malloc") ||
        !check(ampc_memcpy(ctx, inputs[i], mine.data(), bytes,
                           AMPC_MEMCPY_HOST_TO_DEVICE),
               "memcpy"))
      return 1;
  }
  int steps = std::atoi(files[n]);
  // The rule of `ampc run` (ampc/interrupt.h); rank 0 names the checkpoint
  // a later signal leaves unwritten.
  ampc::Interruption signals;
  ampc::Interruption::setQuiet(rank != 0);
  int pendingSave =
      savePath && rank == 0
          ? ampc::Interruption::expect(std::string("--save '") + savePath + "'")
          : -1;
  // The loss and the signal word {loss, pending signal} are summed in the
  // context's memory (on a CUDA context the collectives take device
  // buffers), then read: the loss sum over the world size is the mean, and
  // the word says whether any rank has a SIGTERM (1024) or SIGINT (1).
  void *reduced = nullptr;
  if (!check(ampc_malloc(ctx, 2 * sizeof(float), &reduced), "malloc"))
    return 1;
  int stopBy = 0, k = 0;
  while (k < steps && !stopBy) {
    ++k;
    if (!check(FN(step)(state, inputs.data()), "step"))
      return 1;
    float sums[2];
    int pending = ampc::Interruption::signal();
    float word = pending == SIGTERM ? 1024.0f : pending ? 1.0f : 0.0f;
    if (!check(ampc_memcpy(ctx, reduced, FN(output)(state, 0), sizeof(float),
                           AMPC_MEMCPY_DEVICE_TO_DEVICE),
               "copy") ||
        !check(ampc_memcpy(ctx, static_cast<float *>(reduced) + 1, &word,
                           sizeof(float), AMPC_MEMCPY_HOST_TO_DEVICE),
               "copy") ||
        !check(ampc_comm_allreduce(comm, ctx, reduced, AMPC_F32, 2,
                                   AMPC_REDUCE_SUM),
               "mean loss") ||
        !check(ampc_memcpy(ctx, sums, reduced, sizeof(sums),
                           AMPC_MEMCPY_DEVICE_TO_HOST),
               "read"))
      return 1;
    float loss = sums[0] / static_cast<float>(world);
    stopBy = sums[1] >= 1024.0f ? SIGTERM : sums[1] > 0.0f ? SIGINT : 0;
    if (rank == 0) {
      std::printf("{\"step\": %d, \"loss\": %.9g}\n", k, loss);
      std::fflush(stdout);
    }
  }
  // Only rank 0 writes; the replicas are equal.
  if (savePath && rank == 0 && !check(FN(save)(state, savePath), "save"))
    return 1;
  ampc::Interruption::written(pendingSave);
  if (stopBy && rank == 0)
    std::fprintf(stderr,
                 "ampc: note: interrupted by %s after step %d; every "
                 "requested output was written\n",
                 stopBy == SIGINT ? "SIGINT" : "SIGTERM", k);
  ampc_free(ctx, reduced);
  for (void *p : inputs)
    ampc_free(ctx, p);
  FN(destroy)(state);
  ampc_context_destroy(ctx);
  ampc_comm_destroy(comm);
  return stopBy ? 128 + stopBy : 0;
}
