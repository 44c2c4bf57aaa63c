//===- Run.h - `ampc run`: execute a compiled module ---------------*- C++ -*-===//
#ifndef AMPC_EXECUTOR_RUN_H
#define AMPC_EXECUTOR_RUN_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ampc::exec {

/// The options of `ampc run` (docs/cli.md, docs/jobs.md), each with its
/// default; the driver binds its flags to the fields of one of these.
struct RunOptions {
  int64_t steps = 10;
  /// Whether --steps was given (with --data, the default is one epoch).
  bool stepsGiven = false;
  bool cuda = false;
  uint64_t seed = 0;
  std::vector<std::string> inputs; ///< NAME=FILE.npy, one batch reused
  std::vector<std::string> data;   ///< NAME=FILE.npy, a dataset [N, ...]
  int64_t epochs = 0;              ///< 0: not given
  bool shuffle = true;
  /// The graph to run (default: the first that minimizes, else the first).
  std::string graph;
  /// A graph run over --eval-data after each epoch / every evalEvery updates.
  std::string eval;
  std::vector<std::string> evalData;
  int64_t evalEvery = 0;
  /// Also write --save every this many updates (0: only at the end).
  int64_t saveEvery = 0;
  /// Under W > 1 ranks, training batch norms reduce their statistics over
  /// the ranks (docs/distributed.md); on one process a note, no effect.
  bool syncBatchnorm = false;
  /// --accumulate K (0: not given); the compiler applied it, the runner
  /// refuses it on a graph that does not minimize.
  int64_t accumulate = 0;
  /// On a skipped step, name the op that overflowed (docs/jobs.md).
  bool overflowReport = true;
  std::string log, save, load;
  /// Directories of NAME.npy files: every parameter read before the first
  /// step, every parameter written after the last; each output of the last
  /// step written as output_I.npy.
  std::string paramsIn, paramsOut, outputsOut;
  /// --profile: time every call of the step and print the sums by runtime
  /// function and by source op after the summary; --profile-json FILE:
  /// write them there too (docs/cli.md, "Profiles").
  bool profile = false;
  std::string profileJson;
  /// Per graph, the name each output is returned as ("" when the returned
  /// expression is not a name); the driver fills it from the source.
  std::map<std::string, std::vector<std::string>> outputNames;
  /// Under W > 1 ranks, the settings the compiled step depends on, as
  /// (flag, value) pairs the driver fills (the program's text hash, --amp,
  /// --loss-scale*, ...): the ranks compare them before the compiled step's
  /// fingerprint, so a mismatch names the flag rather than a hash.
  std::vector<std::pair<std::string, std::string>> compileSettings;
};

/// The order in which epoch `epoch` (from 1) visits `n` samples when
/// shuffling: a Fisher-Yates shuffle driven by SplitMix64 seeded from
/// (seed, epoch); docs/jobs.md defines it so other tools can reproduce it.
std::vector<int64_t> epochOrder(uint64_t seed, int64_t epoch, int64_t n);

/// Lowers the module's graphs, planned by the pipeline, and executes one
/// of them. Returns the process exit code (0, 1 bad input file, 2 bad
/// option, 3 runtime failure, 130/143 interrupted by SIGINT/SIGTERM after
/// writing every output); messages go to stderr.
int runModule(mlir::ModuleOp module, const RunOptions &options);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_RUN_H
