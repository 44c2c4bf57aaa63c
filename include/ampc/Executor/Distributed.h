//===- Distributed.h - `ampc run` across MPI ranks ---------------*- C++ -*-===//
//
// Data-parallel training (docs/distributed.md): the world of an `ampc run`
// launched by mpirun, rank 0's state broadcast, the gradient all-reduce,
// the mean loss, the start-up fingerprint and the replica checksum.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_DISTRIBUTED_H
#define AMPC_EXECUTOR_DISTRIBUTED_H

#include "ampc/Dialect/RT/ProgramInfo.h"
#include "ampc/Executor/Executor.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ampc::exec {

/// True when this process was started by an MPI launcher with more than
/// one rank (Open MPI's or PMI's environment), without loading MPI.
bool launchedUnderMpi();

/// The number of ranks of the MPI job this process was started in by a
/// launcher (1 for `mpirun -np 1`), or 0 when no launcher started it.
int launcherWorldSize();

/// This process's rank in the MPI job a launcher started (0 without one):
/// notes and warnings that every rank would print alike are printed by rank
/// 0 alone.
int launcherRank();

/// `ampc run --nproc N`: runs `cmd` (an mpirun command line) as a child, in
/// a process group of its own, and waits for it. SIGINT and SIGTERM follow
/// the rule of ampc/interrupt.h: the first one (and a later one) is delivered to
/// each rank, a repeat within 2 s is not. Returns the exit code `ampc`
/// exits with: mpirun's, or 128 + the signal when this process was
/// signalled and the job ended non-zero (cli.md: 130 / 143), or 3 with
/// `error` set when mpirun cannot be started.
int runLauncher(const std::vector<std::string> &cmd, std::string &error);

/// --sync-batchnorm: marks every training `batch_norm`, `batch_norm_grad`
/// and `batch_norm_update` of the module's graphs `sync`, so they lower to
/// the synchronised entry points. Returns how many ops it marked.
unsigned markSyncBatchNorm(mlir::ModuleOp module);

class World {
public:
  ~World();
  /// Joins the MPI job. Null (and `error`) when the collectives cannot be
  /// loaded.
  static std::unique_ptr<World> join(std::string &error);
  int rank() const { return rankId; }
  /// The CUDA device of this rank: local rank % visible devices (false and
  /// `error` when the NCCL module, libnccl or a device is missing).
  bool cudaDevice(int &device, std::string &error);
  int size() const { return worldSize; }

  /// Compares `fields` (name, value) with rank 0's; on any difference every
  /// rank returns false with `error` naming the first field that differs.
  bool checkFingerprint(
      const std::vector<std::pair<std::string, std::string>> &fields,
      std::string &error);
  /// Copies every parameter and state slot of rank 0 to every rank.
  bool broadcastState(Executor &ex, const rt::Program &program,
                      std::string &error);
  /// Attaches the communicator to the executor's context, so the step's
  /// gradient all-reduce ops (ampc-data-parallel) reduce over the ranks;
  /// false (and `error`) when the step has none.
  bool attach(Executor &ex, std::string &error);
  /// Attaches this job's communicator to the executor's runtime context
  /// without requiring gradient all-reduce ops (eval executors: their
  /// synchronised batch norms, if any, use it).
  bool shareCommunicator(Executor &ex, std::string &error);
  /// A test hook (docs/distributed.md, "Testing the checks"): when
  /// AMPC_TEST_DIVERGE=RANK:STEP names this rank and `step`, changes the
  /// first element of the first parameter so the replicas differ.
  bool testDivergence(Executor &ex, const rt::Program &program, int64_t step,
                      std::string &error);
  /// The mean of `value` over the ranks, in the same all-reduce as the
  /// ranks' pending signals: `signal` is this rank's (0, SIGINT or SIGTERM)
  /// on entry and the job's on return (SIGTERM when any rank has one, else
  /// SIGINT when any has that, else 0), so every rank stops after the same
  /// step (docs/distributed.md, "Signals").
  bool meanOf(double &value, int &signal, std::string &error);
  /// The mean of `value` over the ranks (no signals).
  bool meanOf(double &value, std::string &error) {
    int none = 0;
    return meanOf(value, none, error);
  }
  /// Compares a checksum of every parameter across the ranks; a mismatch
  /// names the first parameter that differs.
  bool checkReplicas(Executor &ex, const rt::Program &program,
                     std::string &error);
  /// Seconds spent in gradient all-reduces so far.
  double allReduceSeconds() const;
  /// How many times the gradients were all-reduced (once per update, also
  /// with gradient accumulation).
  int64_t allReduceCount() const;
  /// The runtime's counters of the gradient buckets (ampc_grad_allreduce_
  /// stats): waits, waits that found the transfer complete, seconds inside
  /// the waits, progress tests.
  struct BucketStats {
    int64_t waits = 0, doneBeforeWait = 0, tests = 0;
    double waitSeconds = 0;
  };
  BucketStats bucketStats() const;
  /// Ends the whole job with `code` (a rank failed).
  [[noreturn]] void abortJob(int code);

private:
  World() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
  int rankId = 0, worldSize = 1;
  Executor *attached = nullptr;
};

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_DISTRIBUTED_H
