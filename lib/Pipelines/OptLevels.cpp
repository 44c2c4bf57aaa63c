//===- OptLevels.cpp - Apex-style opt level presets -------------*- C++ -*-===//
//
// `--opt-level=O0..O3`: presets of the AMP and loss-scale settings, as
// Apex's `amp.initialize(opt_level=...)` (docs/optimizer.md, "Opt levels").
// Explicit flags override the preset's fields.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Pipelines/Pipelines.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace {

/// Whether `info` is a forward op of the language that computes on floats
/// (the ops the all-low presets move to the lower class). Ops the compiler
/// makes (gradients, optimizer, loss scaling) are placed by their passes.
bool isLanguageOp(const ampc::tg::OpInfo &info) {
  return !info.training && !info.language.empty();
}

/// Moves every language op to the lower class except the names in `keep`
/// (to fp32) and the ops the user classified explicitly, whose class wins.
void applyAllLow(ampc::PipelineOptions &options,
                 llvm::ArrayRef<llvm::StringRef> keep) {
  llvm::StringSet<> userNamed;
  auto note = [&](const std::vector<std::string> &list) {
    for (const std::string &name : list) {
      llvm::StringRef n = name;
      userNamed.insert(n.starts_with("tg.") ? n.str() : ("tg." + n).str());
    }
  };
  note(options.ampFp32);
  note(options.ampLower);
  note(options.ampFollow);
  std::vector<std::string> fp32, lower;
  for (const ampc::tg::OpInfo &info : ampc::tg::getOpInfos()) {
    if (!isLanguageOp(info) || userNamed.contains(info.name))
      continue;
    if (llvm::is_contained(keep, info.name))
      fp32.push_back(info.name.str());
    else if (info.ampClass != "lower")
      lower.push_back(info.name.str());
  }
  // The preset's lists first: the user's entries (later) never conflict.
  fp32.insert(fp32.end(), options.ampFp32.begin(), options.ampFp32.end());
  lower.insert(lower.end(), options.ampLower.begin(), options.ampLower.end());
  options.ampFp32 = std::move(fp32);
  options.ampLower = std::move(lower);
}

} // namespace

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
  } else if (level == "O2") {
    // Every float op in low except batch_norm and the losses; f32 masters
    // with low model copies the optimizer writes; dynamic loss scale (the
    // default resolution, as for O1). keep_batchnorm_fp32 is Apex's O2
    // default (true); false moves batch_norm to low as well.
    if (!explicitly.amp)
      options.amp = amp::Mode::FP16;
    if (options.amp == amp::Mode::Off) {
      error = "--opt-level=O2 computes in a 16-bit type: it cannot be "
              "combined with --amp=off";
      return failure();
    }
    // The ops whose record says `o2KeptF32`: batch_norm (Apex keeps batch
    // norm in fp32) and the losses (Apex computes them outside the model, on
    // its f32 output).
    SmallVector<StringRef> keep;
    for (const tg::OpInfo &info : tg::getOpInfos())
      if (info.o2KeptF32 && (info.name != "tg.batch_norm" ||
                             options.keepBatchnormFp32.value_or(true)))
        keep.push_back(info.name);
    applyAllLow(options, keep);
    options.modelCopies = true;
    return success();
  } else if (level == "O3") {
    // Every float op in low (batch_norm too unless keep_batchnorm_fp32,
    // whose Apex default for O3 is false), params stored in low only, a
    // static scale of 1.0.
    if (!explicitly.amp)
      options.amp = amp::Mode::FP16;
    if (options.amp == amp::Mode::Off) {
      error = "--opt-level=O3 computes in a 16-bit type: it cannot be "
              "combined with --amp=off";
      return failure();
    }
    if (!explicitly.lossScale)
      options.lossScale = "1";
    SmallVector<StringRef> keep;
    if (options.keepBatchnormFp32.value_or(false) &&
        tg::lookupOpInfo("tg.batch_norm"))
      keep.push_back("tg.batch_norm");
    applyAllLow(options, keep);
    options.lowParams = true;
    return success();
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
