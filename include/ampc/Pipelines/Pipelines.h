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

  // Loss scaling (shared/spec/amp.md, "Loss scaling").
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("dynamic | none | N (a static scale); default: dynamic "
                     "with amp=fp16, none otherwise"),
      llvm::cl::init("")};
  Option<double> lossScaleInit{*this, "loss-scale-init",
                               llvm::cl::desc("Initial dynamic scale"),
                               llvm::cl::init(65536.0)};
  Option<double> lossScaleGrowth{*this, "loss-scale-growth",
                                 llvm::cl::desc("Growth factor (> 1)"),
                                 llvm::cl::init(2.0)};
  Option<double> lossScaleBackoff{*this, "loss-scale-backoff",
                                  llvm::cl::desc("Backoff factor in (0, 1)"),
                                  llvm::cl::init(0.5)};
  Option<int64_t> lossScaleInterval{
      *this, "loss-scale-interval",
      llvm::cl::desc("Finite steps before the scale grows"),
      llvm::cl::init(2000)};
  Option<int64_t> lossScaleHysteresis{
      *this, "loss-scale-hysteresis",
      llvm::cl::desc("Overflowing steps tolerated before backing off"),
      llvm::cl::init(1)};
  Option<double> lossScaleMin{*this, "loss-scale-min",
                              llvm::cl::desc("Minimum scale (0: none)"),
                              llvm::cl::init(0.0)};
  Option<double> lossScaleMax{*this, "loss-scale-max",
                              llvm::cl::desc("Maximum scale (0: none)"),
                              llvm::cl::init(0.0)};

  // Buffer planning (the last step before lowering to runtime calls).
  Option<bool> planBuffers{
      *this, "plan-buffers",
      llvm::cl::desc("Run ampc-buffer-planning last (ampc run, --emit=cpp, "
                     "--emit=report)"),
      llvm::cl::init(false)};
};

/// The loss scaling a pipeline applies: `mode` is "dynamic", "static" or
/// "none"; `scale` is the static scale.
struct LossScaleChoice {
  std::string mode;
  double scale = 0.0;
};

/// Resolves `loss-scale` against `amp` (dynamic with fp16, none otherwise)
/// and checks every loss-scale option; on a bad value returns failure and
/// sets `error` to a one-line message naming the option.
mlir::FailureOr<LossScaleChoice>
resolveLossScale(const PipelineOptions &options, std::string &error);

/// The warning `ampc` prints when a scaler is asked for with amp=bf16 (it
/// is applied anyway), or an empty string.
std::string lossScaleWarning(const PipelineOptions &options);

/// Appends ampc's pipeline to `pm` (which runs on the module).
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `ampc-pipeline` with the global pass-pipeline registry.
void registerPipelines();

} // namespace ampc

#endif // AMPC_PIPELINES_PIPELINES_H
