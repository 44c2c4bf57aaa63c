//===- InitAll.h - register everything ampc provides ------------*- C++ -*-===//
//
// One place that lists the dialects and passes ampc uses, so `ampc`,
// `ampc-opt` and an embedding compiler register the same set.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_INITALL_H
#define AMPC_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace ampc {

/// Adds the `tg` dialect and the upstream dialects ampc's IR uses
/// (`func`, `arith`) to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every ampc pass and the `ampc-pipeline` pass pipeline with the
/// global registry (for `ampc-opt` and `mlir-opt`-style drivers).
void registerAllPasses();

} // namespace ampc

#endif // AMPC_INITALL_H
