//===- Run.h - `ampc run`: execute a compiled module ---------------*- C++ -*-===//
#ifndef AMPC_EXECUTOR_RUN_H
#define AMPC_EXECUTOR_RUN_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ampc::exec {

/// The options of `ampc run` (docs/cli.md), each with its default; the
/// driver binds its flags to the fields of one of these.
struct RunOptions {
  int64_t steps = 10;
  bool cuda = false;
  uint64_t seed = 0;
  std::vector<std::string> inputs; ///< NAME=FILE.npy
  std::string log, save, load;
  /// Directories of NAME.npy files: every parameter read before the first
  /// step, every parameter written after the last; each output of the last
  /// step written as output_I.npy.
  std::string paramsIn, paramsOut, outputsOut;
};

/// Lowers the module's (first) graph, planned by the pipeline, and executes
/// it. Returns the process exit code (0, 1 bad input file, 2 bad option,
/// 3 runtime failure); messages go to stderr.
int runModule(mlir::ModuleOp module, const RunOptions &options);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_RUN_H
