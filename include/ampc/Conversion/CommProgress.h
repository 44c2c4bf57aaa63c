//===- CommProgress.h - MPI progress calls in a lowered step -----*- C++ -*-===//
//
// MPI moves a non-blocking all-reduce mostly inside MPI calls, so a lowered
// data-parallel step calls the runtime's progress entry between its other
// calls while a gradient bucket is in flight (docs/distributed.md,
// "Progress"). One lowering, two consumers: `ampc run` and the C++ emitter
// both make these calls.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_CONVERSION_COMMPROGRESS_H
#define AMPC_CONVERSION_COMMPROGRESS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/StringRef.h"

namespace ampc {

/// Inserts `rt.call "<progressCallee>"(#rt.context)` after every call of
/// `step` that runs while at least one bucket is in flight: after an
/// `ampc_grad_allreduce_start` and before the `ampc_grad_allreduce_wait` of
/// the same bucket. The start and wait calls themselves get none. Returns
/// the number of calls inserted (0 for a step without the all-reduce).
unsigned insertCommProgress(mlir::Block &step, llvm::StringRef progressCallee);

} // namespace ampc

#endif // AMPC_CONVERSION_COMMPROGRESS_H
