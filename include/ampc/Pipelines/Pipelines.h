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
#include <type_traits>
#include <vector>

namespace ampc {

/// Where a pipeline setting appears besides its PipelineOptions field: the
/// USES column of PipelineSettings.inc, an OR of these bits.
enum SettingUse : unsigned {
  /// Only the field (code sets it).
  kFieldOnly = 0,
  /// An `ampc` flag --NAME bound to the field.
  kFlag = 1u << 0,
  /// A textual option of `ampc-pipeline{NAME=...}` (PipelinePassOptions).
  kPassOption = 1u << 1,
  /// One of the settings the ranks of a data-parallel run compare.
  kCompared = 1u << 2,
  /// The help ends in " (default: VALUE)".
  kShowsDefault = 1u << 3,
};

/// Every setting of ampc's compilation pipeline, each with its default: the
/// one options object, with one field per row of PipelineSettings.inc. The
/// `ampc` driver binds its flags to the fields of one of these, the textual
/// `ampc-pipeline{...}` options (PipelinePassOptions) take their defaults
/// from it, and an embedding compiler fills one in and calls buildPipeline.
/// PipelineSettings.inc documents each field.
struct PipelineOptions {
#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  TYPE FIELD = DEFAULT;
#include "ampc/Pipelines/PipelineSettings.inc"
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

/// The name of an enum setting's value ("follow", "fp16"), as --help and
/// the compared settings print it.
inline llvm::StringRef stringifySetting(amp::Mode mode) {
  return stringifyAMPMode(mode);
}
inline llvm::StringRef stringifySetting(amp::Policy policy) {
  return stringifyAMPPolicy(policy);
}
llvm::StringRef stringifySetting(amp::UnknownOpMode mode);

/// "%g" of `value`.
std::string formatHelpDouble(double value);

/// A value as the help of a flag or an option shows its default: true or
/// false, a float as %g, an enum by its name.
template <typename T> std::string helpText(const T &value) {
  if constexpr (std::is_same_v<T, bool>)
    return value ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>)
    return formatHelpDouble(value);
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(value);
  else if constexpr (std::is_enum_v<T>)
    return stringifySetting(value).str();
  else
    return llvm::StringRef(value).str();
}
/// `help` + " (default: VALUE)". The string lives as long as the program
/// (llvm::cl keeps a StringRef to its description).
llvm::StringRef helpWithDefault(llvm::StringRef help, const std::string &value);

/// The help of a setting's flag or option: with " (default: VALUE)" when
/// `Uses` has kShowsDefault.
template <unsigned Uses, typename T>
llvm::StringRef settingHelp(llvm::StringRef help, const T &defaultValue) {
  if constexpr ((Uses & kShowsDefault) != 0)
    return helpWithDefault(help, helpText(defaultValue));
  else
    return help;
}

/// Stands for the flag or option of a setting that has none: it takes the
/// arguments the real one would and does nothing.
struct NoSettingOption {
  template <typename... Args> NoSettingOption(Args &&...) {}
};

template <typename T> struct IsSettingList : std::false_type {};
template <> struct IsSettingList<std::vector<std::string>> : std::true_type {};

/// The textual options of the registered `ampc-pipeline`
/// (`ampc-opt --pass-pipeline='builtin.module(ampc-pipeline{amp=fp16})'`):
/// one option per PipelineSettings.inc row with kPassOption, its name, help
/// and values those of the row, its default the PipelineOptions field's.
struct PipelinePassOptions
    : public mlir::PassPipelineOptions<PipelinePassOptions> {
  PipelinePassOptions();

  /// The member a setting with `Uses` gets: an option (a list option for a
  /// list) if it has kPassOption, else a NoSettingOption.
  template <typename T, unsigned Uses>
  using OptionOf = std::conditional_t<
      (Uses & kPassOption) == 0, NoSettingOption,
      std::conditional_t<IsSettingList<T>::value, ListOption<std::string>,
                         Option<T>>>;

#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  OptionOf<TYPE, (USES)> FIELD{                                                \
      *this, NAME,                                                             \
      llvm::cl::desc(settingHelp<(USES)>(HELP, PipelineOptions().FIELD)),      \
      MODIFIER};
#include "ampc/Pipelines/PipelineSettings.inc"

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
