//===- OptLevels.cpp - Apex-style opt level presets -------------*- C++ -*-===//
//
// `--opt-level=O0..O3`: presets of the AMP and loss-scale settings, as
// Apex's `amp.initialize(opt_level=...)` (docs/optimizer.md, "Opt levels").
// Explicit flags override the preset's fields.
//
//===----------------------------------------------------------------------===//

#include "ampc/Pipelines/Pipelines.h"

using namespace mlir;

LogicalResult ampc::applyOptLevel(PipelineOptions &options,
                                  const ExplicitSettings &explicitly,
                                  std::string &error) {
  const std::string &level = options.optLevel;
  if (level.empty()) {
    if (options.keepBatchnormFp32) {
      error = "--keep-batchnorm-fp32 needs --opt-level=O2 or O3";
      return failure();
    }
    return success();
  }
  if (level == "O0") {
    // fp32 model, no patching, loss scale 1.
    if (!explicitly.amp)
      options.amp = amp::Mode::Off;
    if (!explicitly.lossScale)
      options.lossScale = "none";
  } else if (level == "O1") {
    // Per-op casts (the op classes), dynamic loss scale: the scale's default
    // resolution gives dynamic with fp16 and none with an explicit bf16.
    if (!explicitly.amp)
      options.amp = amp::Mode::FP16;
  } else if (level == "O2" || level == "O3") {
    error = "--opt-level=" + level +
            " is not supported yet (low model copies with f32 masters and "
            "all-low compute are not built); use O0 or O1";
    return failure();
  } else {
    error = "--opt-level must be O0, O1, O2 or O3, got '" + level + "'";
    return failure();
  }
  if (options.keepBatchnormFp32) {
    error = "--keep-batchnorm-fp32 applies to --opt-level=O2 and O3 only, "
            "not " + level;
    return failure();
  }
  return success();
}
