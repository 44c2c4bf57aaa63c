//===- Pipelines.h - the ampc compilation pipeline --------------*- C++ -*-===//
//
// The one function that builds ampc's pass pipeline and the one options
// object it reads. `ampc` calls it with the options its command line set;
// `ampc-opt` exposes it as `ampc-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_PIPELINES_PIPELINES_H
#define AMPC_PIPELINES_PIPELINES_H

#include "ampc/Transforms/AMPPolicy.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ampc {

/// Every setting of ampc's compilation pipeline, each with its default: the
/// one options object. The `ampc` driver binds its flags to the fields of one
/// of these, the textual `ampc-pipeline{...}` options (PipelinePassOptions)
/// take their defaults from it, and an embedding compiler fills one in and
/// calls buildPipeline. A setting that is also a pass option takes its
/// default from that pass's options (Passes.td), so no default is written
/// twice.
struct PipelineOptions {
  /// Run the canonicalizer at the end.
  bool canonicalize = true;

  // Automatic mixed precision (docs/amp.md).
  /// off, or the 16-bit type values are lowered to.
  amp::Mode amp = amp::Mode::Off;
  /// fast (casts fused after the reference rewriting) or reference (exactly
  /// torch.autocast).
  amp::Policy ampPolicy = AutoMixedPrecisionOptions().policy;
  /// Ops moved to the fp32, lower and follow classes (names as
  /// amp::resolveOpName takes them; later lists win).
  std::vector<std::string> ampFp32, ampLower, ampFollow;
  /// Ops in no class: follow (with a remark) or an error.
  amp::UnknownOpMode ampUnknownOps = AutoMixedPrecisionOptions().unknownOps;

  // Loss scaling (docs/amp.md, "Loss scaling"); resolveLossScale checks them.
  /// dynamic | none | N (a static scale); empty: dynamic with amp=fp16,
  /// none otherwise.
  std::string lossScale;
  double lossScaleInit = LossScalingOptions().init;
  double lossScaleGrowth = LossScalingOptions().growthFactor;
  double lossScaleBackoff = LossScalingOptions().backoffFactor;
  int64_t lossScaleInterval = LossScalingOptions().growthInterval;
  int64_t lossScaleHysteresis = LossScalingOptions().hysteresis;
  /// 0: no bound.
  double lossScaleMin = LossScalingOptions().minScale;
  double lossScaleMax = LossScalingOptions().maxScale;

  /// Gradient accumulation: micro-batches per update; > 0 overrides every
  /// `minimize`'s `accumulate` (`ampc run --accumulate K`), 0 keeps them.
  int64_t accumulate = 0;

  /// Updates of 16-bit params (docs/optimizer.md): how the optimizer writes
  /// a param stored only in 16 bits (nearest | stochastic | kahan), and the
  /// dtype of momentum / Adam moments (f32 | bf16).
  std::string lowUpdate = "nearest";
  std::string optimizerStateDtype = "f32";

  /// Run ampc-buffer-planning last (what lowering to runtime calls needs).
  bool planBuffers = false;
  /// With planBuffers: fold transposes into the GEMMs first
  /// (ampc-fold-transposes).
  bool foldTransposes = true;

  // Data-parallel training (docs/distributed.md): ampc-data-parallel after
  // the optimizer expansion, before loss scaling.
  bool dataParallel = false;
  double bucketCapMb = DataParallelOptions().bucketCapMb;
  bool allreduceFp32 = DataParallelOptions().allreduceFp32;
  bool delayAllreduce = DataParallelOptions().delayAllreduce;
  /// With dataParallel, ampc-dropout-sample-layout notes each dropout whose
  /// mask cannot follow one process (false on all MPI ranks but rank 0).
  bool dropoutNotes = true;

  // Apex-style opt levels (docs/optimizer.md, "Opt levels"); applyOptLevel
  // sets the fields above from the preset.
  /// "" (none given), "O0", "O1", "O2" or "O3".
  std::string optLevel;
  /// Apex's keep_batchnorm_fp32 (only with O2/O3); unset when not given.
  std::optional<bool> keepBatchnormFp32;
  /// O2: f32 master params with low model copies the optimizer writes
  /// (ampc-model-copies after loss scaling).
  bool modelCopies = false;
  /// O3: params read only in low are stored in low (ampc-low-params after
  /// the mixed-precision rewriting).
  bool lowParams = false;
};

/// Which preset fields the user set explicitly (they win over the preset).
struct ExplicitSettings {
  bool amp = false;
  bool lossScale = false;
};

/// Applies `options.optLevel` to the AMP and loss-scale fields that
/// `explicitly` does not mark as given. On a bad or unsupported level
/// returns failure and sets `error` to a one-line message naming the flag.
mlir::LogicalResult applyOptLevel(PipelineOptions &options,
                                  const ExplicitSettings &explicitly,
                                  std::string &error);

/// "off", "fp16", "bf16".
llvm::StringRef stringifyAMPMode(amp::Mode mode);
/// "fast", "reference".
llvm::StringRef stringifyAMPPolicy(amp::Policy policy);

/// The textual options of the registered `ampc-pipeline`
/// (`ampc-opt --pass-pipeline='builtin.module(ampc-pipeline{amp=fp16})'`):
/// one option per PipelineOptions field, its default taken from there.
struct PipelinePassOptions
    : public mlir::PassPipelineOptions<PipelinePassOptions> {
  PipelinePassOptions();

  Option<bool> canonicalize{*this, "canonicalize",
                            llvm::cl::desc("Run the canonicalizer")};
  Option<amp::Mode> amp{
      *this, "amp", llvm::cl::desc("Automatic mixed precision: off|fp16|bf16"),
      llvm::cl::values(clEnumValN(amp::Mode::Off, "off", "as written"),
                       clEnumValN(amp::Mode::FP16, "fp16", "low = f16"),
                       clEnumValN(amp::Mode::BF16, "bf16", "low = bf16"))};
  Option<amp::Policy> ampPolicy{
      *this, "amp-policy", llvm::cl::desc("AMP policy: fast|reference"),
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
      llvm::cl::values(
          clEnumValN(amp::UnknownOpMode::Follow, "follow", "with a remark"),
          clEnumValN(amp::UnknownOpMode::Error, "error", "fail"))};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("dynamic | none | N (a static scale); default: dynamic "
                     "with amp=fp16, none otherwise")};
  Option<double> lossScaleInit{*this, "loss-scale-init",
                               llvm::cl::desc("Initial dynamic scale")};
  Option<double> lossScaleGrowth{*this, "loss-scale-growth",
                                 llvm::cl::desc("Growth factor (> 1)")};
  Option<double> lossScaleBackoff{*this, "loss-scale-backoff",
                                  llvm::cl::desc("Backoff factor in (0, 1)")};
  Option<int64_t> lossScaleInterval{
      *this, "loss-scale-interval",
      llvm::cl::desc("Finite steps before the scale grows")};
  Option<int64_t> lossScaleHysteresis{
      *this, "loss-scale-hysteresis",
      llvm::cl::desc("Overflowing steps tolerated before backing off")};
  Option<double> lossScaleMin{*this, "loss-scale-min",
                              llvm::cl::desc("Minimum scale (0: none)")};
  Option<double> lossScaleMax{*this, "loss-scale-max",
                              llvm::cl::desc("Maximum scale (0: none)")};
  Option<bool> planBuffers{
      *this, "plan-buffers",
      llvm::cl::desc("Run ampc-buffer-planning last (ampc run, --emit=cpp, "
                     "--emit=report)")};
  Option<bool> foldTransposes{
      *this, "fold-transposes",
      llvm::cl::desc("With plan-buffers: fold transposes into the GEMMs "
                     "(ampc-fold-transposes)")};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Bucketed gradient all-reduce (ampc-data-parallel)")};
  Option<double> bucketCapMb{*this, "bucket-cap-mb",
                             llvm::cl::desc("MiB of gradients per bucket")};
  Option<bool> allreduceFp32{
      *this, "allreduce-fp32",
      llvm::cl::desc("Reduce 16-bit gradients in f32")};
  Option<bool> delayAllreduce{
      *this, "delay-allreduce",
      llvm::cl::desc("Start every bucket after the backward")};

  /// The options object these textual options describe.
  PipelineOptions get() const;
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
