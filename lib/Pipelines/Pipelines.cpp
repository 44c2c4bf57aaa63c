//===- Pipelines.cpp - the ampc compilation pipeline ----------------------===//

#include "ampc/Pipelines/Pipelines.h"

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <mutex>

using namespace mlir;

/// `%g` of a double, for option messages (`0.5`, `1e+10`).
static std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

StringRef ampc::stringifyAMPMode(amp::Mode mode) {
  switch (mode) {
  case amp::Mode::Off:
    return "off";
  case amp::Mode::FP16:
    return "fp16";
  case amp::Mode::BF16:
    return "bf16";
  }
  return "off";
}

StringRef ampc::stringifyAMPPolicy(amp::Policy policy) {
  return policy == amp::Policy::Reference ? "reference" : "fast";
}

StringRef ampc::stringifySetting(amp::UnknownOpMode mode) {
  return mode == amp::UnknownOpMode::Error ? "error" : "follow";
}

std::string ampc::formatHelpDouble(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

StringRef ampc::helpWithDefault(StringRef help, const std::string &value) {
  static std::deque<std::string> storage;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  storage.push_back((help + " (default: " + value + ")").str());
  return storage.back();
}

namespace {
/// A pass option takes its default from the PipelineOptions field (a list
/// option starts empty, as every list setting does).
template <unsigned Uses, typename Option, typename T>
void setDefault(Option &option, const T &value) {
  if constexpr ((Uses & ampc::kPassOption) != 0 &&
                !ampc::IsSettingList<T>::value)
    option.setInitialValue(value);
}

/// The PipelineOptions field of a setting from its pass option; a setting
/// without one keeps its default.
template <unsigned Uses, typename T, typename Option>
void readOption(T &field, const Option &option) {
  if constexpr ((Uses & ampc::kPassOption) == 0)
    return;
  else if constexpr (ampc::IsSettingList<T>::value)
    field.assign(option.begin(), option.end());
  else
    field = option;
}
} // namespace

ampc::PipelinePassOptions::PipelinePassOptions() {
  const PipelineOptions defaults;
#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  setDefault<(USES)>(FIELD, defaults.FIELD);
#include "ampc/Pipelines/PipelineSettings.inc"
}

ampc::PipelineOptions ampc::PipelinePassOptions::get() const {
  PipelineOptions options;
#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  readOption<(USES)>(options.FIELD, FIELD);
#include "ampc/Pipelines/PipelineSettings.inc"
  return options;
}

/// The scaler's state and factors are f32 at run time: a value beyond f32's
/// range would be an infinite scale (every step skipped), a positive one
/// below its smallest subnormal a zero scale.
static bool outsideF32(double v) {
  return v != 0.0 && (std::fabs(v) > std::numeric_limits<float>::max() ||
                      static_cast<float>(v) == 0.0f);
}

FailureOr<ampc::LossScaleChoice>
ampc::resolveLossScale(const PipelineOptions &options, std::string &error) {
  LossScaleChoice choice;
  StringRef requested = options.lossScale;
  if (requested.empty())
    choice.mode = options.amp == amp::Mode::FP16 ? "dynamic" : "none";
  else if (requested == "dynamic" || requested == "none")
    choice.mode = requested.str();
  else if (!requested.getAsDouble(choice.scale) && choice.scale > 0.0 &&
           std::isfinite(choice.scale))
    choice.mode = "static";
  else {
    error = "--loss-scale must be 'dynamic', 'none' or a positive number, "
            "got '" +
            requested.str() + "'";
    return failure();
  }
  auto fail = [&](const Twine &msg) {
    error = msg.str();
    return failure();
  };
  double init = options.lossScaleInit, growth = options.lossScaleGrowth,
         backoff = options.lossScaleBackoff, lo = options.lossScaleMin,
         hi = options.lossScaleMax;
  if (!(init > 0.0) || !std::isfinite(init))
    return fail("--loss-scale-init must be a positive number, got " +
                num(init));
  if (!(growth > 1.0) || !std::isfinite(growth))
    return fail("--loss-scale-growth must be a number > 1, got " +
                num(growth));
  if (!(backoff > 0.0 && backoff < 1.0))
    return fail("--loss-scale-backoff must be in (0, 1), got " +
                num(backoff));
  if (options.lossScaleInterval < 1 || options.lossScaleInterval > INT32_MAX)
    return fail("--loss-scale-interval must be an integer in [1, 2^31), got " +
                Twine(options.lossScaleInterval));
  if (options.lossScaleHysteresis < 1 ||
      options.lossScaleHysteresis > INT32_MAX)
    return fail(
        "--loss-scale-hysteresis must be an integer in [1, 2^31), got " +
        Twine(options.lossScaleHysteresis));
  if (!(lo >= 0.0) || !std::isfinite(lo))
    return fail("--loss-scale-min must be a number >= 0, got " + num(lo));
  if (!(hi >= 0.0) || !std::isfinite(hi))
    return fail("--loss-scale-max must be a number >= 0, got " + num(hi));
  for (auto [flag, value] : {std::pair<StringRef, double>{"--loss-scale",
                                                          choice.scale},
                             {"--loss-scale-init", init},
                             {"--loss-scale-growth", growth},
                             {"--loss-scale-min", lo},
                             {"--loss-scale-max", hi}})
    if (outsideF32(value))
      return fail(flag + " " + num(value) +
                  " is outside f32's range (the scaler computes in f32: "
                  "from 1.4e-45 to 3.4e+38)");
  if (lo > 0.0 && hi > 0.0 && lo > hi)
    return fail("--loss-scale-min " + num(lo) +
                " exceeds --loss-scale-max " + num(hi));
  return choice;
}

std::string ampc::lossScaleWarning(const PipelineOptions &options) {
  StringRef requested = options.lossScale;
  if (options.amp != amp::Mode::BF16 || requested.empty() ||
      requested == "none")
    return "";
  return "--loss-scale=" + requested.str() +
         " is unneeded with --amp=bf16 (bf16 has the exponent range of f32, "
         "so gradients do not underflow); applying it as asked";
}

void ampc::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  // The order matters:
  //  1. automatic mixed precision (the reference rewriting) on the program as
  //     written, before autodiff: the backward graph is then built at the
  //     forward's mixed types, which is exactly what autograd does under
  //     torch.autocast (the gradient of an f16 value is f16, the gradient of
  //     an inserted cast is the cast back, backward GEMMs run in low precision
  //     and backward softmax/norm/loss ops in f32 because their forward ops
  //     did; pins reach the backward ops the same way);
  //  2. autodiff (tg.grad), then the optimizer expansion (tg.minimize: its
  //     backward graph and updates);
  //  3. loss scaling after both: it must see the final types (the gradients
  //     it unscales and checks are the values the optimizer reads, after the
  //     casts back to the parameter types);
  //  4. the fast policy's cast fusions, which see the whole step;
  //  5. canonicalization (dead backward results, folded casts).
  bool ampOn = options.amp != amp::Mode::Off;
  {
    // The reference rewriting here; the fast policy's fusions run after loss
    // scaling, as `ampc-cast-optimization`, so they also see its casts.
    // Under --amp=off it rewrites only the ops of autocast regions (a graph
    // without one is left untouched).
    AutoMixedPrecisionOptions ampOptions;
    ampOptions.outsideRegions = ampOn;
    ampOptions.lowType = options.amp == amp::Mode::BF16 ? amp::LowType::BF16
                                                         : amp::LowType::F16;
    ampOptions.policy = amp::Policy::Reference;
    ampOptions.fp32Ops.assign(options.ampFp32.begin(), options.ampFp32.end());
    ampOptions.lowerOps.assign(options.ampLower.begin(),
                               options.ampLower.end());
    ampOptions.followOps.assign(options.ampFollow.begin(),
                                options.ampFollow.end());
    ampOptions.unknownOps = options.ampUnknownOps;
    pm.addNestedPass<func::FuncOp>(createAutoMixedPrecision(ampOptions));
    // O3: parameters read only in low are stored in low, before autodiff
    // gives them gradients.
    if (ampOn && options.lowParams)
      pm.addNestedPass<func::FuncOp>(createLowParams());
  }
  pm.addNestedPass<func::FuncOp>(createAutodiff());
  {
    OptimizerExpansionOptions expansion;
    expansion.accumulate = options.accumulate;
    expansion.lowUpdate = options.lowUpdate;
    expansion.stateDtype = options.optimizerStateDtype;
    pm.addNestedPass<func::FuncOp>(createOptimizerExpansion(expansion));
  }
  // Data parallel: the gradient all-reduce before loss scaling, so the check
  // reads the reduced gradients on every rank.
  if (options.dataParallel) {
    DataParallelOptions dpOptions;
    dpOptions.bucketCapMb = options.bucketCapMb;
    // The first bucket is small (1 MiB), never larger than the others.
    dpOptions.firstBucketMb =
        std::min(dpOptions.firstBucketMb, options.bucketCapMb);
    dpOptions.allreduceFp32 = options.allreduceFp32;
    dpOptions.delayAllreduce = options.delayAllreduce;
    pm.addNestedPass<func::FuncOp>(createDataParallel(dpOptions));
    // Where each dropout input's samples lie, so the ranks draw the masks
    // of one process with the whole batch (docs/distributed.md).
    DropoutSampleLayoutOptions dropoutOptions;
    dropoutOptions.notes = options.dropoutNotes;
    pm.addNestedPass<func::FuncOp>(createDropoutSampleLayout(dropoutOptions));
  }
  {
    std::string error;
    FailureOr<LossScaleChoice> choice = resolveLossScale(options, error);
    LossScalingOptions lossOptions;
    // A bad option reaches the pass as is: it reports it when it runs.
    lossOptions.mode = succeeded(choice) ? choice->mode : options.lossScale;
    lossOptions.init = succeeded(choice) && choice->mode == "static"
                           ? choice->scale
                           : options.lossScaleInit;
    lossOptions.growthFactor = options.lossScaleGrowth;
    lossOptions.backoffFactor = options.lossScaleBackoff;
    lossOptions.growthInterval = options.lossScaleInterval;
    lossOptions.hysteresis = options.lossScaleHysteresis;
    lossOptions.minScale = options.lossScaleMin;
    lossOptions.maxScale = options.lossScaleMax;
    if (lossOptions.mode != "none") {
      pm.addNestedPass<func::FuncOp>(createLossScaling(lossOptions));
    } else if (options.lossScale.empty()) {
      // No scaler by default outside --amp=fp16, but a step with an
      // autocast(fp16) region gets the one --amp=fp16 gives.
      lossOptions.mode = "dynamic";
      lossOptions.onlyFP16Regions = true;
      pm.addNestedPass<func::FuncOp>(createLossScaling(lossOptions));
    }
  }
  // O2: the forward's casts of the f32 masters become low model copies the
  // optimizer writes (after loss scaling, so the updates are predicated).
  if (ampOn && options.modelCopies)
    pm.addNestedPass<func::FuncOp>(createModelCopies());
  // (Under --amp=off the only casts it rewrites are those of autocast
  // regions.)
  if (options.ampPolicy == amp::Policy::Fast)
    pm.addNestedPass<func::FuncOp>(createCastOptimization());
  // Data parallel with 16-bit values: widened 16-bit gradients travel in 16
  // bits, so the ranks overflow where one process does (docs/distributed.md).
  if (ampOn && options.dataParallel)
    pm.addNestedPass<func::FuncOp>(createDataParallelNarrow());
  if (options.canonicalize)
    pm.addPass(createCanonicalizerPass());
  // 6. buffer planning, on the final program, after the transposes that
  // feed GEMMs became strides (no buffers for them).
  if (options.planBuffers) {
    if (options.foldTransposes)
      pm.addNestedPass<func::FuncOp>(createFoldTransposes());
    pm.addNestedPass<func::FuncOp>(createBufferPlanning());
  }
}

void ampc::registerPipelines() {
  PassPipelineRegistration<PipelinePassOptions>(
      "ampc-pipeline", "The ampc compilation pipeline (what `ampc` runs)",
      [](OpPassManager &pm, const PipelinePassOptions &options) {
        buildPipeline(pm, options.get());
      });
}
