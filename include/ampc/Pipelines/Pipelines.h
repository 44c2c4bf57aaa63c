//===- Pipelines.h - the ampc compilation pipeline --------------*- C++ -*-===//
//
// The one function that builds ampc's pass pipeline. `ampc` calls it with
// options from its command line; `ampc-opt` exposes it as `ampc-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_PIPELINES_PIPELINES_H
#define AMPC_PIPELINES_PIPELINES_H

#include "ampc/Transforms/AMPPolicy.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace ampc {

/// Options of the whole pipeline; the `ampc` flags map onto these one to one.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<bool> canonicalize{*this, "canonicalize",
                            llvm::cl::desc("Run the canonicalizer"),
                            llvm::cl::init(true)};

  // Automatic mixed precision (shared/spec/amp.md).
  Option<amp::Mode> amp{
      *this, "amp", llvm::cl::desc("Automatic mixed precision: off|fp16|bf16"),
      llvm::cl::init(amp::Mode::Off),
      llvm::cl::values(clEnumValN(amp::Mode::Off, "off", "as written"),
                       clEnumValN(amp::Mode::FP16, "fp16", "low = f16"),
                       clEnumValN(amp::Mode::BF16, "bf16", "low = bf16"))};
  Option<amp::Policy> ampPolicy{
      *this, "amp-policy", llvm::cl::desc("AMP policy: fast|reference"),
      llvm::cl::init(amp::Policy::Fast),
      llvm::cl::values(
          clEnumValN(amp::Policy::Fast, "fast", "casts fused (default)"),
          clEnumValN(amp::Policy::Reference, "reference",
                     "exactly torch.autocast"))};
  ListOption<std::string> ampFp32{
      *this, "amp-fp32", llvm::cl::desc("Ops moved to the fp32 class")};
  ListOption<std::string> ampLower{
      *this, "amp-lower", llvm::cl::desc("Ops moved to the lower class")};
  ListOption<std::string> ampFollow{
      *this, "amp-follow", llvm::cl::desc("Ops moved to the follow class")};
  Option<amp::UnknownOpMode> ampUnknownOps{
      *this, "amp-unknown-ops",
      llvm::cl::desc("Ops not in the AMP table: follow (remark) | error"),
      llvm::cl::init(amp::UnknownOpMode::Follow),
      llvm::cl::values(
          clEnumValN(amp::UnknownOpMode::Follow, "follow", "with a remark"),
          clEnumValN(amp::UnknownOpMode::Error, "error", "fail"))};
};

/// Appends ampc's pipeline to `pm` (which runs on the module).
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `ampc-pipeline` with the global pass-pipeline registry.
void registerPipelines();

} // namespace ampc

#endif // AMPC_PIPELINES_PIPELINES_H
