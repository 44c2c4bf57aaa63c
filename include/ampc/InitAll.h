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

/// Adds the `tg` and `rt` dialects and the upstream dialects whose ops ampc's passes
/// accept next to `tg` ops (`func`, `arith`, `math`, `linalg`, `tensor`,
/// `scf`) to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every ampc pass (`ampc-auto-mixed-precision`, ...,
/// `ampc-convert-tg-to-rt`) and the
/// `ampc-pipeline` pass pipeline with MLIR's global registry, for
/// `mlir-opt`-style drivers and textual pipelines (`parsePassPipeline`).
void registerAllPasses();

} // namespace ampc

#endif // AMPC_INITALL_H
