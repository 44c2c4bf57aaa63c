//===- Pipelines.h - the ampc compilation pipeline --------------*- C++ -*-===//
//
// The one function that builds ampc's pass pipeline. `ampc` calls it with
// options from its command line; `ampc-opt` exposes it as `ampc-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_PIPELINES_PIPELINES_H
#define AMPC_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace ampc {

/// Options of the whole pipeline; the `ampc` flags map onto these one to one.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<bool> canonicalize{*this, "canonicalize",
                            llvm::cl::desc("Run the canonicalizer"),
                            llvm::cl::init(true)};
};

/// Appends ampc's pipeline to `pm` (which runs on the module).
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `ampc-pipeline` with the global pass-pipeline registry.
void registerPipelines();

} // namespace ampc

#endif // AMPC_PIPELINES_PIPELINES_H
