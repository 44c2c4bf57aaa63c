//===- ampc.cpp - the ampc compiler driver --------------------------------===//
//
// `ampc [compile] INPUT [options]` and `ampc run INPUT [options]`
// (docs/cli.md). Exit codes: 0 success, 1 the input is wrong,
// 2 the command line is wrong, 3 a runtime failure.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Dialect/RT/RTDialect.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Emit/EmitCpp.h"
#include "ampc/Executor/Distributed.h"
#include "ampc/Executor/Npy.h"
#include "ampc/Executor/Run.h"
#include "ampc/Frontend/MLIRGen.h"
#include "ampc/Frontend/ONNXImport.h"
#include "ampc/Frontend/Parser.h"
#include "ampc/InitAll.h"
#include "ampc/Pipelines/Pipelines.h"
#include "ampc/Pipelines/Target.h"
#include "ampc/Report/Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"

#include <cstring>
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <memory>
#include <cstdlib>
#include <deque>
#include <tuple>
#include <unistd.h>
#include <type_traits>

using namespace mlir;
namespace cl = llvm::cl;
// The names the rows of ampc/Pipelines/PipelineSettings.inc use.
namespace amp = ampc::amp;
using ampc::kCompared;
using ampc::kFieldOnly;
using ampc::kFlag;
using ampc::kPassOption;
using ampc::kShowsDefault;

namespace {
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2, kRuntimeError = 3 };

enum class EmitKind { MLIR, Report, Dot, Cpp, Json, Lowered };

/// The parser of an option that takes one of a fixed set of values: a value
/// outside the set is an error that lists them (`--amp=fp32`).
template <typename T> class ValuesParser : public cl::parser<T> {
public:
  using cl::parser<T>::parser;
  bool parse(cl::Option &option, StringRef argName, StringRef arg, T &value) {
    std::string names;
    for (const auto &v : this->Values) {
      if (v.Name == arg) {
        value = v.V.getValue();
        return false;
      }
      names += (names.empty() ? "" : ", ") + v.Name.str();
    }
    return option.error("'" + arg + "' is not one of " + names);
  }
};

/// Options of the compiler and of `run` alike (the pipeline's).
cl::OptionCategory ampcCategory("ampc options");
/// Options of `ampc [compile]` alone: what to emit and where.
cl::OptionCategory compileCategory("ampc [compile] options");
/// Options of `ampc run` alone.
cl::OptionCategory runCategory("ampc run options");

/// Everything the command line sets: the pipeline's options object, the
/// options of `ampc run` and the driver's own. The flags below bind to these
/// fields (cl::location), so each default is written once, as the field's
/// initializer, and `--help` prints it from there.
struct DriverOptions {
  ampc::PipelineOptions pipeline;
  ampc::exec::RunOptions run;
  /// `ampc run INPUT` rather than `ampc [compile] INPUT`.
  bool runMode = false;
  std::string input;
  std::string output = "-";
  EmitKind emit = EmitKind::MLIR;
  bool locations = true;
  bool runPipeline = true;
  /// `--list-ops`: print the op records and exit.
  bool listOps = false;
  std::string target = "cuda";
  std::string device = "cpu";
  /// `--cuda-arch=sm_XX` and `--cpu-features=LIST` as given.
  std::string cudaArch;
  std::string cpuFeatures;
  /// What the report says of the target and the AMP choice.
  std::string targetName;
  std::string ampReason;
};
DriverOptions opts;

/// `--amp`: the pipeline's modes plus `auto`.
enum class AmpFlag { Off, FP16, BF16, Auto };
AmpFlag ampFlag = AmpFlag::Off;

/// `text` + " (default: VALUE)", VALUE printed from the field a flag binds
/// to as a pipeline setting's is (ampc::helpText).
template <typename T> StringRef withDefault(StringRef text, const T &value) {
  return ampc::helpWithDefault(text, ampc::helpText(value));
}

// The compiler (`ampc [compile]`).
cl::opt<std::string, true> inputFile(cl::Positional,
                                     cl::desc("<input .tg, .mlir or .onnx>"),
                                     cl::location(opts.input),
                                     cl::cat(ampcCategory));
cl::opt<std::string, true>
    outputFile("o",
               cl::desc("Write the output to FILE (default: stdout); "
                        "written atomically, only on success"),
               cl::value_desc("FILE"), cl::location(opts.output),
               cl::cat(compileCategory));
cl::opt<EmitKind, true, ValuesParser<EmitKind>> emitKind(
    "emit", cl::desc("What to emit"), cl::location(opts.emit),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir", "the IR after the pipeline"),
               clEnumValN(EmitKind::Report, "report",
                          "the AMP report (JSON, one object per graph)"),
               clEnumValN(EmitKind::Cpp, "cpp",
                          "host C++ calling the runtime: FILE (source) and "
                          "FILE's stem + .h (header)"),
               clEnumValN(EmitKind::Lowered, "lowered",
                          "the step as runtime calls on planned buffers (the "
                          "rt dialect) that `run` executes and `cpp` prints"),
               clEnumValN(EmitKind::Dot, "dot",
                          "Graphviz: ops coloured by compute precision, casts "
                          "highlighted"),
               clEnumValN(EmitKind::Json, "json",
                          "the IR as JSON for other tools (docs/json.md); "
                          "with --pipeline=false, the program as written")),
    cl::cat(compileCategory));
cl::opt<AmpFlag, true, ValuesParser<AmpFlag>> ampMode(
    "amp",
    cl::desc(withDefault("Automatic mixed precision",
                         ampc::stringifyAMPMode(opts.pipeline.amp))),
    cl::location(ampFlag),
    cl::values(clEnumValN(AmpFlag::Off, "off", "everything as written"),
               clEnumValN(AmpFlag::FP16, "fp16", "low = f16"),
               clEnumValN(AmpFlag::BF16, "bf16", "low = bf16"),
               clEnumValN(AmpFlag::Auto, "auto",
                          "chosen from the target's arithmetic throughput "
                          "(--cuda-arch, the GPU of run --device=cuda, "
                          "--cpu-features or this CPU)")),
    cl::cat(ampcCategory));
cl::opt<std::string, true> cudaArch(
    "cuda-arch",
    cl::desc("The GPU --target=cuda code is for, sm_60 ... sm_120; with "
             "--amp=auto it decides the precision"),
    cl::value_desc("sm_XX"), cl::location(opts.cudaArch),
    cl::cat(compileCategory));
cl::opt<std::string, true> cpuFeatures(
    "cpu-features",
    cl::desc("The processor CPU code is for, as /proc/cpuinfo flag names "
             "(amx_bf16,avx512_bf16,avx512_fp16,f16c); default: this one"),
    cl::value_desc("LIST"), cl::location(opts.cpuFeatures),
    cl::cat(ampcCategory));
// `ampc FILE.onnx`: shapes of the model's dynamic inputs.
std::vector<std::string> onnxInputShapeSpecs;
cl::list<std::string, std::vector<std::string>> onnxInputShape(
    "input-shape",
    cl::desc("An ONNX model's input shape (required for an input with a "
             "dynamic dim; repeatable)"),
    cl::value_desc("NAME=D0xD1x..."), cl::location(onnxInputShapeSpecs),
    cl::cat(ampcCategory));
cl::opt<bool, true>
    listOps("list-ops",
            cl::desc("Print every tg op record as JSON (operands, keyword "
                     "attributes, AMP class, kernels) and exit"),
            cl::location(opts.listOps), cl::cat(ampcCategory));
cl::opt<bool, true>
    printLocations("locations",
                   cl::desc(withDefault("Print source locations in --emit=mlir "
                                        "(--locations=false for bare IR)",
                                        opts.locations)),
                   cl::location(opts.locations), cl::cat(compileCategory));
cl::opt<bool, true> runPipeline(
    "pipeline",
    cl::desc(withDefault("Run the compilation pipeline; --pipeline=false "
                         "emits the IR as the frontend made it",
                         opts.runPipeline)),
    cl::location(opts.runPipeline), cl::cat(ampcCategory));

/// A list setting's flag: comma-separated values, the flag repeatable.
class ListFlag : public cl::list<std::string, std::vector<std::string>> {
public:
  template <typename... Mods>
  ListFlag(const Mods &...mods)
      : cl::list<std::string, std::vector<std::string>>(mods...,
                                                        cl::CommaSeparated) {}
};

/// The flag of a setting that stays unset until given
/// (--keep-batchnorm-fp32): a bool flag that fills in the field.
class OptionalBoolFlag : public cl::opt<bool> {
public:
  template <typename... Mods>
  OptionalBoolFlag(StringRef name, const cl::desc &desc,
                   cl::LocationClass<std::optional<bool>> field,
                   const Mods &...mods)
      : cl::opt<bool>(name, desc, mods...,
                      cl::callback([&value = field.Loc](const bool &given) {
                        value = given;
                      })) {}
};

/// The flag a pipeline setting with `Uses` gets: one bound to its field of
/// opts.pipeline if it has kFlag, else a NoSettingOption.
template <typename T, unsigned Uses>
using FlagOf = std::conditional_t<
    (Uses & ampc::kFlag) == 0, ampc::NoSettingOption,
    std::conditional_t<
        ampc::IsSettingList<T>::value, ListFlag,
        std::conditional_t<std::is_same_v<T, std::optional<bool>>,
                           OptionalBoolFlag,
                           std::conditional_t<std::is_enum_v<T>,
                                              cl::opt<T, true, ValuesParser<T>>,
                                              cl::opt<T, true>>>>>;

/// The flags of the pipeline's settings (ampc/Pipelines/PipelineSettings.inc),
/// one member per setting.
struct PipelineFlags {
#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  FlagOf<TYPE, (USES)> FIELD{                                                  \
      NAME, cl::desc(ampc::settingHelp<(USES)>(HELP, opts.pipeline.FIELD)),    \
      cl::location(opts.pipeline.FIELD), cl::cat(ampcCategory), MODIFIER};
#include "ampc/Pipelines/PipelineSettings.inc"
};
PipelineFlags pipelineFlags;

cl::opt<std::string, true>
    target("target",
           cl::desc(withDefault("--emit=cpp: the runtime backend the code "
                                "asks for, cpu | cuda",
                                opts.target)),
           cl::location(opts.target), cl::cat(compileCategory));

// `ampc run` (docs/cli.md, "ampc run").
cl::opt<int64_t, true>
    runSteps("steps",
             cl::desc(withDefault("run: training steps; a graph without "
                                  "minimize runs once",
                                  opts.run.steps)),
             cl::location(opts.run.steps), cl::cat(runCategory));
cl::opt<std::string, true> runDevice(
    "device",
    cl::desc(withDefault("run: runtime backend, cpu | cuda", opts.device)),
    cl::location(opts.device), cl::cat(runCategory));
cl::opt<uint64_t, true>
    runSeed("seed",
            cl::desc(withDefault("run: seeds parameter init and synthetic "
                                 "inputs",
                                 opts.run.seed)),
            cl::location(opts.run.seed), cl::cat(runCategory));
cl::opt<int> runNproc("nproc",
                      cl::desc("run: data parallel on this machine: runs "
                               "`mpirun -np N ampc run ...` and waits for it "
                               "(docs/distributed.md)"),
                      cl::value_desc("N"), cl::init(0), cl::cat(runCategory));

/// The environment variable `ampc run --nproc N` sets for its ranks: the
/// launching process compiled the program first and printed its notes and
/// warnings, so no rank prints them again (errors still print).
constexpr const char *kNprocCompiledEnv = "AMPC_NPROC_COMPILED";

/// Whether this process prints compile-time notes and warnings: rank 0 of
/// a job, or a single process, unless `--nproc` already printed them.
static bool printsNotes() {
  return ampc::exec::launcherRank() == 0 && !getenv(kNprocCompiledEnv);
}

/// Whether this process compiles the program one rank of several runs:
/// a rank under a launcher, or `ampc run --nproc N` before it starts them.
static bool compilesForRanks() {
  return opts.runMode &&
         (ampc::exec::launchedUnderMpi() ||
          (runNproc > 1 && !ampc::exec::launcherWorldSize()));
}
cl::opt<bool, true> runSyncBatchnorm(
    "sync-batchnorm",
    cl::desc("batch_norm in training takes its statistics over every "
             "rank's batch (run: with W > 1 ranks; compile: the calls use "
             "the context's communicator) (docs/distributed.md)"),
    cl::location(opts.run.syncBatchnorm), cl::cat(ampcCategory));
cl::list<std::string, std::vector<std::string>>
    runInputs("input",
              cl::desc("run: feed input NAME from a NumPy file (repeatable)"),
              cl::value_desc("NAME=FILE.npy"), cl::location(opts.run.inputs),
              cl::cat(runCategory));
cl::opt<std::string, true> runLog("log",
                                  cl::desc("run: one JSON object per step"),
                                  cl::value_desc("FILE.jsonl"),
                                  cl::location(opts.run.log),
                                  cl::cat(runCategory));
cl::opt<std::string, true>
    runSave("save", cl::desc("run: write a checkpoint at the end"),
            cl::value_desc("FILE"), cl::location(opts.run.save),
            cl::cat(runCategory));
cl::opt<std::string, true> runLoad("load",
                                   cl::desc("run: start from a checkpoint"),
                                   cl::value_desc("FILE"),
                                   cl::location(opts.run.load),
                                   cl::cat(runCategory));
cl::opt<std::string, true> runParamsIn(
    "params-in",
    cl::desc("run: initialise every parameter from DIR/NAME.npy (dtype and "
             "shape checked; a missing or extra .npy file is an error)"),
    cl::value_desc("DIR"), cl::location(opts.run.paramsIn),
    cl::cat(runCategory));
cl::opt<std::string, true> runParamsOut(
    "params-out",
    cl::desc("run: write every parameter after the last step to "
             "DIR/NAME.npy (created if missing; files replaced atomically)"),
    cl::value_desc("DIR"), cl::location(opts.run.paramsOut),
    cl::cat(runCategory));
cl::opt<std::string, true> runOutputsOut(
    "outputs-out",
    cl::desc("run: write the last step's outputs to DIR/output_I.npy"),
    cl::value_desc("DIR"), cl::location(opts.run.outputsOut),
    cl::cat(runCategory));

// Training jobs (docs/jobs.md).
cl::list<std::string, std::vector<std::string>> runData(
    "data",
    cl::desc("run: a dataset for input NAME, shape [N, ...] (samples along "
             "the leading dim; repeatable); each step takes the next batch of "
             "the epoch's order"),
    cl::value_desc("NAME=FILE.npy"), cl::location(opts.run.data),
    cl::cat(runCategory));
cl::opt<int64_t, true> runEpochs(
    "epochs",
    cl::desc("run: with --data, train until the end of epoch E (default: 1; "
             "not with --steps)"),
    cl::value_desc("E"), cl::location(opts.run.epochs), cl::cat(runCategory));
cl::opt<bool, true> runShuffle(
    "shuffle",
    cl::desc(withDefault("run: with --data, visit each epoch's samples in an "
                         "order drawn from (seed, epoch)",
                         opts.run.shuffle)),
    cl::location(opts.run.shuffle), cl::cat(runCategory));
cl::opt<std::string, true> runGraph(
    "graph",
    cl::desc("run: the graph to run (default: the first that minimizes, "
             "else the first)"),
    cl::value_desc("NAME"), cl::location(opts.run.graph),
    cl::cat(ampcCategory));
cl::opt<std::string, true> runEval(
    "eval",
    cl::desc("run: after each epoch (and at the end), run GRAPH over "
             "--eval-data with the current params and log the means of its "
             "scalar outputs"),
    cl::value_desc("GRAPH"), cl::location(opts.run.eval), cl::cat(runCategory));
cl::list<std::string, std::vector<std::string>>
    runEvalData("eval-data",
                cl::desc("run: the eval set of an input of the --eval graph "
                         "(repeatable)"),
                cl::value_desc("NAME=FILE.npy"),
                cl::location(opts.run.evalData), cl::cat(runCategory));
cl::opt<int64_t, true>
    runEvalEvery("eval-every", cl::desc("run: also evaluate every K updates"),
                 cl::value_desc("K"), cl::location(opts.run.evalEvery),
                 cl::cat(runCategory));
cl::opt<int64_t, true> runSaveEvery(
    "save-every",
    cl::desc("run: also write the --save checkpoint every K updates"),
    cl::value_desc("K"), cl::location(opts.run.saveEvery),
    cl::cat(runCategory));
cl::opt<int64_t, true> runAccumulate(
    "accumulate",
    cl::desc("run: gradient accumulation, K micro-batches per update "
             "(overrides the optimizer's `accumulate`)"),
    cl::value_desc("K"), cl::location(opts.run.accumulate),
    cl::cat(ampcCategory));
cl::opt<bool, true> runProfile(
    "profile",
    cl::desc("run: time every call of the step; after the summary, print "
             "the time per step by runtime function and by source op, with "
             "the implementations the GEMMs and convolutions ran on (the "
             "first step left out when there are more)"),
    cl::location(opts.run.profile), cl::cat(runCategory));
cl::opt<std::string, true> runProfileJson(
    "profile-json",
    cl::desc("run: profile as --profile does and write every row to FILE "
             "(JSON; replaced atomically)"),
    cl::value_desc("FILE"), cl::location(opts.run.profileJson),
    cl::cat(runCategory));
cl::opt<bool, true> runOverflowReport(
    "overflow-report",
    cl::desc(withDefault("run: on a step the loss scaler skipped, replay it "
                         "with per-op checks and name the first op whose "
                         "result held an inf or NaN (the log's \"overflow\")",
                         opts.run.overflowReport)),
    cl::location(opts.run.overflowReport), cl::cat(runCategory));

/// Prints `FILE:LINE:COL: error: MESSAGE`, then the source line and a caret
/// when the line is short enough to be useful.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(llvm::raw_ostream &os) : os(os) {}

  /// The text of `name` for the snippets under its diagnostics, kept alive
  /// by the printer: passes and the run report on the input long after
  /// it was parsed.
  void addBuffer(StringRef name, std::shared_ptr<llvm::MemoryBuffer> text) {
    buffers[name] = std::move(text);
  }

  void print(Diagnostic &diag) {
    printOne(diag.getLocation(), diag.getSeverity(), diag.str());
    for (Diagnostic &note : diag.getNotes())
      printOne(note.getLocation(), note.getSeverity(), note.str());
  }

private:
  llvm::raw_ostream &os;
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> buffers;

  static StringRef severityName(DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Note:
      return "note";
    case DiagnosticSeverity::Remark:
      return "note";
    }
    return "error";
  }

  void printOne(Location loc, DiagnosticSeverity severity,
                const std::string &message) {
    auto flc = loc->findInstanceOf<FileLineColLoc>();
    if (flc && flc.getLine() == 0)
      // A place without lines: an ONNX node (`FILE.onnx:NODE`) or a file.
      os << flc.getFilename().getValue() << ": ";
    else if (flc)
      os << flc.getFilename().getValue() << ":" << flc.getLine() << ":"
         << flc.getColumn() << ": ";
    else
      os << "ampc: ";
    os << severityName(severity) << ": " << message << "\n";
    if (flc)
      printSnippet(flc);
    os.flush();
  }

  void printSnippet(FileLineColLoc flc) {
    auto it = buffers.find(flc.getFilename().getValue());
    if (it == buffers.end() || flc.getLine() == 0)
      return;
    StringRef text = it->second->getBuffer();
    size_t pos = 0;
    for (unsigned line = 1; line < flc.getLine(); ++line) {
      pos = text.find('\n', pos);
      if (pos == StringRef::npos)
        return;
      ++pos;
    }
    StringRef line = text.substr(pos).split('\n').first.rtrim('\r');
    // Long or binary lines would only flood the terminal.
    if (line.empty() || line.size() > 300 || flc.getColumn() == 0 ||
        flc.getColumn() > line.size() + 1 ||
        llvm::any_of(line, [](char c) {
          return static_cast<unsigned char>(c) < 0x20 && c != '\t';
        }))
      return;
    os << line << "\n";
    for (unsigned i = 1; i < flc.getColumn(); ++i)
      os << (line[i - 1] == '\t' ? '\t' : ' ');
    os << "^\n";
  }
};

bool hasGraph(ModuleOp module) {
  // A graph, or a step lowered already (--emit=lowered output).
  return !module.getOps<func::FuncOp>().empty() ||
         !module.getOps<ampc::rt::ProgramOp>().empty();
}
} // namespace

/// A compared setting's value: a float exact (%.17g), a bool yes or no, a
/// list comma-separated, an enum by its name.
template <typename T> static std::string comparedText(const T &value) {
  if constexpr (std::is_same_v<T, bool>)
    return value ? "yes" : "no";
  else if constexpr (std::is_floating_point_v<T>) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g", value);
    return text;
  } else if constexpr (std::is_integral_v<T>)
    return std::to_string(value);
  else if constexpr (std::is_enum_v<T>)
    return ampc::stringifySetting(value).str();
  else if constexpr (ampc::IsSettingList<T>::value)
    return llvm::join(value, ",");
  else
    return value;
}

/// Appends `--NAME` and the setting's value to `out` if `Uses` has
/// kCompared.
template <unsigned Uses, typename T>
static void addCompared(std::vector<std::pair<std::string, std::string>> &out,
                        StringRef name, const T &value) {
  if constexpr ((Uses & ampc::kCompared) != 0)
    out.push_back({("--" + name).str(), comparedText(value)});
}

/// What the compiled step depends on, as the ranks of a data-parallel run
/// compare it (docs/distributed.md): the program's text and the flags that
/// change what is compiled, in a fixed order (the settings in the order of
/// PipelineSettings.inc).
static std::vector<std::pair<std::string, std::string>> compileSettings() {
  std::vector<std::pair<std::string, std::string>> out;
  char hex[32];
  auto hash = [&](llvm::StringRef text) {
    std::snprintf(hex, sizeof(hex), "%016llx",
                  (unsigned long long)llvm::xxh3_64bits(text));
    return std::string(hex);
  };
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(opts.input);
  out.push_back({"the program (text hash)",
                 buffer ? hash((*buffer)->getBuffer()) : "unreadable"});
  out.push_back({"--device", opts.device});
#define AMPC_SETTING(TYPE, FIELD, DEFAULT, NAME, USES, HELP, MODIFIER)         \
  addCompared<(USES)>(out, NAME, opts.pipeline.FIELD);
#include "ampc/Pipelines/PipelineSettings.inc"
  return out;
}

/// What the AMP report says about the run: the pipeline's AMP options.
static ampc::report::ReportOptions reportOptions() {
  ampc::report::ReportOptions report;
  report.amp = ampc::stringifyAMPMode(opts.pipeline.amp).str();
  report.policy = ampc::stringifyAMPPolicy(opts.pipeline.ampPolicy).str();
  report.optLevel = opts.pipeline.optLevel;
  report.target = opts.targetName;
  report.ampReason = opts.ampReason;
  std::string bad;
  report.table = *ampc::amp::buildPolicyTable(
      opts.pipeline.ampFp32, opts.pipeline.ampLower, opts.pipeline.ampFollow,
      bad);
  return report;
}

/// The processor the step is for, and `--amp` against it: `--amp=auto`
/// chooses (amp.md, "Precision from the target"); an explicit mode that slows
/// the target down or has no hardware support there is obeyed with a
/// warning. Fills opts.pipeline.amp, opts.targetName and opts.ampReason.
/// Returns kSuccess or the exit code of a bad flag or a missing GPU.
static int resolveTarget() {
  auto fail = [](int code, const Twine &message) {
    llvm::errs() << "ampc: error: " << message << "\n";
    return code;
  };
  ampc::Target t;
  std::string error;
  bool archGiven = cudaArch.getNumOccurrences() > 0;
  if (archGiven) {
    std::optional<int> sm = ampc::parseCudaArch(opts.cudaArch, error);
    if (!sm)
      return fail(kUsageError, error);
    t.sm = *sm;
  }
  if (cpuFeatures.getNumOccurrences()) {
    auto features = ampc::parseCpuFeatures(opts.cpuFeatures, error);
    if (!features)
      return fail(kUsageError, error);
    t.cpuFeatures = std::move(*features);
  } else {
    t.cpuFeatures = ampc::hostCpuFeatures();
  }
  bool targetGiven = target.getNumOccurrences() > 0;
  bool cuda;
  bool smKnown = archGiven;
  if (opts.runMode) {
    cuda = opts.device == "cuda";
    if (cuda) {
      // The GPU decides; without one, only --amp=auto needs it now (the run
      // itself reports a missing device).
      std::optional<int> sm = ampc::cudaDeviceComputeCapability(0, error);
      if (!sm && ampFlag == AmpFlag::Auto)
        return fail(kRuntimeError, "--amp=auto --device=cuda: " + error);
      smKnown = sm.has_value();
      t.sm = sm.value_or(0);
    }
  } else {
    if (archGiven && targetGiven && opts.target != "cuda")
      return fail(kUsageError, "--cuda-arch is the GPU of --target=cuda code, "
                               "but --target=" +
                                   opts.target + " was given");
    cuda = archGiven || (opts.target == "cuda" &&
                         (targetGiven || opts.emit == EmitKind::Cpp));
    if (cuda && !archGiven && ampFlag == AmpFlag::Auto)
      return fail(kUsageError,
                  "--amp=auto for --target=cuda code needs the GPU it is "
                  "for: give --cuda-arch=sm_XX (sm_60 ... sm_120)");
  }
  t.kind = cuda ? ampc::Target::Kind::CUDA : ampc::Target::Kind::CPU;
  opts.targetName = cuda && !smKnown ? "cuda" : t.describe();

  if (ampFlag == AmpFlag::Auto) {
    ampc::AmpChoice choice = ampc::chooseAmp(t);
    opts.pipeline.amp = choice.mode;
    opts.ampReason = "--amp=auto: " + choice.reason;
    if (opts.runMode && printsNotes())
      llvm::errs() << "ampc: note: --amp=auto chose "
                   << ampc::stringifyAMPMode(choice.mode) << " for "
                   << opts.targetName << ": " << choice.reason << "\n";
    return kSuccess;
  }
  if (ampMode.getNumOccurrences()) {
    opts.pipeline.amp = ampFlag == AmpFlag::FP16   ? ampc::amp::Mode::FP16
                        : ampFlag == AmpFlag::BF16 ? ampc::amp::Mode::BF16
                                                   : ampc::amp::Mode::Off;
    opts.ampReason = "--amp=" +
                     ampc::stringifyAMPMode(opts.pipeline.amp).str() +
                     " given";
    // Only a processor the step is really for: a CPU compile without
    // --target or --cpu-features is not one.
    bool cpuKnown = opts.runMode || targetGiven ||
                    cpuFeatures.getNumOccurrences() > 0;
    std::string warning = (cuda && smKnown) || (!cuda && cpuKnown)
                              ? ampc::ampWarning(opts.pipeline.amp, t)
                              : std::string();
    if (!warning.empty() && printsNotes())
      llvm::errs() << "ampc: warning: " << warning << "\n";
  } else {
    opts.ampReason = "--amp not given: off";
  }
  return kSuccess;
}

/// Parses a `.mlir` input; it must hold a graph.
static OwningOpRef<ModuleOp> parseMLIRInput(MLIRContext &context,
                                            const llvm::MemoryBuffer &buffer,
                                            StringRef name) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(buffer.getBuffer(), name,
                                       /*RequiresNullTerminator=*/true),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (module && !hasGraph(*module)) {
    emitError(FileLineColLoc::get(&context, name, 1, 1))
        << "no graph (func.func) in '" << name << "'";
    return nullptr;
  }
  return module;
}

/// Parses a `.tg` input (or stdin) and builds its graphs; records the names
/// the graphs return their outputs as (the eval lines of `run`).
static OwningOpRef<ModuleOp> importTGInput(MLIRContext &context,
                                           const llvm::MemoryBuffer &buffer,
                                           StringRef name) {
  mlir::Location fileStart = FileLineColLoc::get(&context, name, 1, 1);
  std::vector<ampc::frontend::Diagnostic> diags;
  auto ast = ampc::frontend::parseModule(buffer.getBuffer(), name, diags);
  if (!ast || !diags.empty()) {
    for (const auto &d : diags)
      emitError(FileLineColLoc::get(&context,
                                    d.loc.file ? StringRef(*d.loc.file) : name,
                                    d.loc.line, d.loc.col))
          << d.message;
    if (diags.empty())
      emitError(fileStart) << "cannot parse '" << name << "'";
    return nullptr;
  }
  if (ast->graphs.empty()) {
    emitError(fileStart) << "no graph in '" << name
                         << "' (expected 'graph NAME(...) { ... }')";
    return nullptr;
  }
  for (const ampc::frontend::GraphAST &graph : ast->graphs)
    for (const auto &stmt : graph.stmts)
      if (auto *ret = dyn_cast<ampc::frontend::ReturnStmtAST>(stmt.get())) {
        std::vector<std::string> &names = opts.run.outputNames[graph.name];
        for (const auto &value : ret->values) {
          auto *n = dyn_cast<ampc::frontend::NameExprAST>(value.get());
          names.push_back(n ? n->name : "");
        }
      }
  return ampc::frontend::mlirGen(context, *ast);
}

/// The shapes `--input-shape NAME=D0xD1x...` gives; prints the error and
/// returns std::nullopt on a bad or repeated one.
static std::optional<std::map<std::string, std::vector<int64_t>>>
onnxInputShapes() {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string &spec : onnxInputShapeSpecs) {
    std::string input;
    std::vector<int64_t> dims;
    if (!ampc::onnx_import::parseInputShape(spec, input, dims)) {
      llvm::errs() << "ampc: error: --input-shape '" << spec
                   << "': expected NAME=D0xD1x... with positive dims\n";
      return std::nullopt;
    }
    // As for --input, a name given twice is a command-line error (the
    // last one used to win silently).
    if (!shapes.emplace(input, dims).second) {
      llvm::errs() << "ampc: error: --input-shape gives input '" << input
                   << "' twice\n";
      return std::nullopt;
    }
  }
  return shapes;
}

/// The values of `ampc run`'s `--input NAME=FILE.npy` files, which it has
/// before it compiles: their shapes fix dynamic dims, and integer inputs (a
/// Reshape's shape, a Slice's starts, ...) are folded at import
/// (docs/onnx.md). A file that cannot be read is left to the run, which
/// reports it.
static std::map<std::string, ampc::onnx_import::InputValue> onnxInputValues() {
  std::map<std::string, ampc::onnx_import::InputValue> inputValues;
  if (!opts.runMode)
    return inputValues;
  for (const std::string &spec : opts.run.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos)
      continue;
    ampc::exec::NpyArray array;
    std::string ignored;
    if (!ampc::exec::readNpy(spec.substr(eq + 1), array, ignored))
      continue;
    ampc::onnx_import::InputValue value;
    value.shape = array.shape;
    int64_t n = 1;
    for (int64_t d : array.shape)
      n *= d;
    // The file's n elements as T, into `out` (no copy from an empty file's
    // data, whose pointer may be null).
    auto decode = [&](auto type, auto &out) {
      using T = decltype(type);
      std::vector<T> v(n);
      if (n > 0)
        std::memcpy(v.data(), array.data.data(), n * sizeof(T));
      out.assign(v.begin(), v.end());
    };
    if (array.descr == "<i8" && array.data.size() == size_t(n) * 8) {
      value.isInteger = true;
      decode(int64_t(), value.ints);
    } else if (array.descr == "<i4" && array.data.size() == size_t(n) * 4) {
      value.isInteger = true;
      decode(int32_t(), value.ints);
    } else if (array.descr == "<f4" && array.data.size() == size_t(n) * 4) {
      value.isFloat = true;
      decode(float(), value.floats);
    }
    inputValues[spec.substr(0, eq)] = std::move(value);
  }
  return inputValues;
}

/// Imports an ONNX model as one inference graph (lib/Frontend/ONNX).
static int importONNXInput(MLIRContext &context, StringRef name,
                           OwningOpRef<ModuleOp> &module) {
  std::optional<std::map<std::string, std::vector<int64_t>>> shapes =
      onnxInputShapes();
  if (!shapes)
    return kUsageError;
  std::map<std::string, ampc::onnx_import::InputValue> inputValues =
      onnxInputValues();
  std::string graphName;
  std::vector<std::string> outputNames;
  module = ampc::onnx_import::importONNXFile(context, name, *shapes, &graphName,
                                             &outputNames, &inputValues);
  if (!module)
    return kInputError;
  opts.run.outputNames[graphName] = outputNames;
  return kSuccess;
}

/// Step 1: the input file as a verified module of graphs, by its extension.
static int importInput(MLIRContext &context, DiagnosticPrinter &printer,
                       OwningOpRef<ModuleOp> &module) {
  auto bufferOr =
      llvm::MemoryBuffer::getFileOrSTDIN(opts.input, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/true);
  if (std::error_code ec = bufferOr.getError()) {
    llvm::errs() << "ampc: error: cannot read '" << opts.input
                 << "': " << ec.message() << "\n";
    return kInputError;
  }
  std::shared_ptr<llvm::MemoryBuffer> buffer = std::move(*bufferOr);
  StringRef name = opts.input;
  printer.addBuffer(name, buffer);

  StringRef ext = llvm::sys::path::extension(name);
  if (ext == ".mlir") {
    module = parseMLIRInput(context, *buffer, name);
  } else if (ext != ".onnx" && !onnxInputShapeSpecs.empty()) {
    llvm::errs() << "ampc: error: --input-shape applies to .onnx inputs\n";
    return kUsageError;
  } else if (ext == ".tg" || name == "-") {
    module = importTGInput(context, *buffer, name);
  } else if (ext == ".onnx") {
    if (int code = importONNXInput(context, name, module); code != kSuccess)
      return code;
  } else {
    llvm::errs() << "ampc: error: '" << name
                 << "' is neither a .tg, a .mlir nor an .onnx file\n";
    return kUsageError;
  }
  if (!module || failed(verify(*module)))
    return kInputError;
  return kSuccess;
}

/// Step 2: the pipeline, as the output needs it. For --emit=report,
/// `history` records every op of the program as the pipeline last saw it.
static int runPasses(ModuleOp module,
                     std::optional<ampc::report::SourceOpHistory> &history) {
  PassManager pm(module.getContext());
  // The stages after buffer planning need it.
  opts.pipeline.planBuffers = opts.runMode || opts.emit == EmitKind::Report ||
                              opts.emit == EmitKind::Cpp ||
                              opts.emit == EmitKind::Lowered;
  // The report describes the program's own ops (each one's AMP decision) and
  // their buffers: transposes are folded into the GEMMs only when asked.
  if (opts.emit == EmitKind::Report &&
      pipelineFlags.foldTransposes.getNumOccurrences() == 0)
    opts.pipeline.foldTransposes = false;
  // `ampc run` as one of W > 1 ranks reduces its gradients (and `--nproc`
  // compiles that program before it starts them).
  if (compilesForRanks()) {
    opts.pipeline.dataParallel = true;
    // Compile-time notes once per job.
    opts.pipeline.dropoutNotes = printsNotes();
  }
  if (opts.runPipeline)
    ampc::buildPipeline(pm, opts.pipeline);
  // The report lists every op of the program, those a pass removes too, as
  // the pipeline last saw them.
  if (opts.emit == EmitKind::Report && !opts.runMode) {
    history.emplace(reportOptions());
    history->snapshot(module);
    pm.addInstrumentation(history->instrumentation());
  }
  if (failed(pm.run(module)))
    return kInputError;
  return kSuccess;
}

/// --emit=cpp: the step `ampc run` would run as host C++, FILE and FILE's
/// stem + .h (both or neither), or both on stdout.
static int emitCppFiles(ModuleOp module, llvm::raw_ostream &os) {
  if (failed(ampc::lowerToRuntime(module)))
    return kInputError;
  // The graph `ampc run` would run.
  std::string chooseError, note;
  ampc::rt::ProgramOp chosen = ampc::rt::chooseProgram(
      module, opts.run.graph, "emitting", chooseError, note);
  if (!chosen) {
    llvm::errs() << "ampc: error: " << chooseError << "\n";
    return kUsageError;
  }
  if (!note.empty())
    llvm::errs() << "ampc: note: " << note << "\n";
  std::optional<ampc::rt::Program> program = ampc::rt::describeProgram(chosen);
  std::string stem = opts.output == "-"
                         ? program->name
                         : llvm::sys::path::stem(opts.output).str();
  std::string headerText, sourceText;
  if (failed(ampc::emit::emitCpp(*program, opts.target == "cuda", stem + ".h",
                                 headerText, sourceText)))
    return kInputError;
  if (opts.output == "-") {
    os << "// ===== " << stem << ".h =====\n"
       << headerText << "// ===== " << stem << ".cpp =====\n"
       << sourceText;
    return kSuccess;
  }
  SmallString<256> headerPath(opts.output);
  llvm::sys::path::replace_extension(headerPath, ".h");
  // Both files or neither (writeFilesAtomically): -o naming a directory
  // fails before the header is touched.
  std::string error;
  if (!ampc::exec::writeFilesAtomically(
          {{opts.output, sourceText}, {headerPath.str().str(), headerText}},
          error)) {
    llvm::errs() << "ampc: error: " << error << "\n";
    return kInputError;
  }
  return kSuccess;
}

/// Writes the rendered output to -o FILE (replaced whole or not at all) or
/// stdout.
static int writeOutput(StringRef text) {
  if (opts.output == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return kSuccess;
  }
  // writeToOutput goes through a temporary file and a rename: an existing
  // FILE is replaced whole or not at all.
  if (llvm::Error err = llvm::writeToOutput(
          opts.output, [&](llvm::raw_ostream &out) -> llvm::Error {
            out << text;
            return llvm::Error::success();
          })) {
    llvm::errs() << "ampc: error: cannot write '" << opts.output
                 << "': " << llvm::toString(std::move(err)) << "\n";
    return kInputError;
  }
  return kSuccess;
}

/// The IR as text, with source locations unless --locations=false.
static void printModule(ModuleOp module, llvm::raw_ostream &os) {
  OpPrintingFlags flags;
  if (opts.locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module.print(os, flags);
}

/// Step 3: the output --emit asks for, rendered whole first, so a failure
/// never leaves a partial file.
static int emitOutput(ModuleOp module, ampc::report::SourceOpHistory *history) {
  // Compiling (--emit=mlir/lowered/cpp), --sync-batchnorm marks the ops
  // whatever the ranks: the emitted step synchronises when its context has a
  // communicator attached (docs/distributed.md).
  if (opts.run.syncBatchnorm)
    ampc::exec::markSyncBatchNorm(module);

  std::string text;
  llvm::raw_string_ostream os(text);
  switch (opts.emit) {
  case EmitKind::MLIR:
    printModule(module, os);
    break;
  case EmitKind::Report:
    ampc::report::emitReport(module, history->options(), os, history);
    break;
  case EmitKind::Dot:
    ampc::report::emitDot(module, os);
    break;
  case EmitKind::Json:
    if (failed(ampc::report::emitJson(module, os)))
      return kInputError;
    break;
  case EmitKind::Lowered:
    if (failed(ampc::lowerToRuntime(module)))
      return kInputError;
    printModule(module, os);
    break;
  case EmitKind::Cpp:
    // Written by emitCppFiles unless on stdout.
    if (int code = emitCppFiles(module, os);
        code != kSuccess || opts.output != "-")
      return code;
    break;
  }
  return writeOutput(text);
}

/// main's arguments, which `--nproc` passes on to its ranks.
static int mainArgc = 0;
static char **mainArgv = nullptr;

static int launchRanks(int argc, char **argv);

/// `ampc [compile]` and `ampc run`, step by step as compilation goes: import
/// the input, run the pipeline, then run the step or emit the output.
static int compile(MLIRContext &context, DiagnosticPrinter &printer) {
  OwningOpRef<ModuleOp> module;
  if (int code = importInput(context, printer, module); code != kSuccess)
    return code;
  std::optional<ampc::report::SourceOpHistory> history;
  if (int code = runPasses(*module, history); code != kSuccess)
    return code;
  // `ampc run --nproc N`: the program compiled, so its errors and warnings
  // were printed once, here; now the ranks run it.
  if (opts.runMode && runNproc > 1 && !ampc::exec::launcherWorldSize())
    return launchRanks(mainArgc, mainArgv);
  if (opts.runMode) {
    opts.run.cuda = opts.device == "cuda";
    if (ampc::exec::launchedUnderMpi())
      opts.run.compileSettings = compileSettings();
    return ampc::exec::runModule(*module, opts.run);
  }
  return emitOutput(*module, history ? &*history : nullptr);
}

/// Parses the command line: `ampc [compile] INPUT` or `ampc run INPUT`, then
/// the options. Returns kSuccess or kUsageError (the errors printed).
static int parseCommandLine(int argc, char **argv) {
  // `ampc compile X` and `ampc X` are the same; `ampc run X` executes.
  std::vector<const char *> args(argv, argv + argc);
  if (args.size() > 1 && StringRef(args[1]) == "compile") {
    args.erase(args.begin() + 1);
  } else if (args.size() > 1 && StringRef(args[1]) == "run") {
    args.erase(args.begin() + 1);
    opts.runMode = true;
  }

  // `--help` lists the options of the command given.
  if (opts.runMode)
    cl::HideUnrelatedOptions({&ampcCategory, &runCategory});
  else
    cl::HideUnrelatedOptions({&ampcCategory, &compileCategory});
  std::string errors;
  llvm::raw_string_ostream errStream(errors);
  if (!cl::ParseCommandLineOptions(
          static_cast<int>(args.size()), args.data(),
          opts.runMode
              ? "ampc run: compile a .tg, .mlir or .onnx file, then train or "
                "run it on the runtime\n\n"
                "  ampc run INPUT [options]\n"
              : "ampc: a mixed-precision graph compiler\n\n"
                "  ampc [compile] INPUT [options]   compile a .tg, .mlir or "
                ".onnx file\n"
                "  ampc run INPUT [options]         compile, then train or "
                "run it on the runtime (`ampc run --help`)\n",
          &errStream)) {
    // A mistyped option is one error: the value after it (`--stpes 5`) is
    // not reported again as a second input.
    bool unknown = StringRef(errors).contains("Unknown command line argument");
    SmallVector<StringRef> lines;
    StringRef(errors).split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (StringRef line : lines)
      if (!unknown || !(line.contains("Too many positional arguments") ||
                        line.contains("Can specify at most")))
        llvm::errs() << line << "\n";
    return kUsageError;
  }
  return kSuccess;
}

/// The flags of one command given to the other, and `--nproc` against the
/// launcher this process may run under.
static int checkCommandFlags() {
  // What only the compiler does is not silently ignored by `run`.
  if (opts.runMode) {
    for (auto [given, flag, instead] :
         {std::tuple{outputFile.getNumOccurrences() > 0, "-o", ""},
          std::tuple{emitKind.getNumOccurrences() > 0, "--emit",
                     "; `ampc INPUT --emit=...` compiles"},
          std::tuple{target.getNumOccurrences() > 0, "--target",
                     "; run picks its backend with --device=cpu|cuda"},
          std::tuple{cudaArch.getNumOccurrences() > 0, "--cuda-arch",
                     "; run --device=cuda reads the GPU's own compute "
                     "capability"}})
      if (given) {
        llvm::errs() << "ampc: error: " << flag
                     << " is an option of the compiler, not of 'ampc run'"
                     << instead << "\n";
        return kUsageError;
      }
  }
  if (runNproc.getNumOccurrences() && (!opts.runMode || runNproc < 1)) {
    llvm::errs() << "ampc: error: --nproc is an option of 'ampc run' and "
                    "must be at least 1\n";
    return kUsageError;
  }
  // Under a launcher already (`mpirun -np S ampc run --nproc N`): the job
  // runs as is when N is S, else the two disagree (mpirun cannot be
  // started from inside an mpirun job).
  if (int size = ampc::exec::launcherWorldSize();
      runNproc.getNumOccurrences() && size > 0 && runNproc != size) {
    llvm::errs() << "ampc: error: --nproc " << runNproc
                 << ": this process is already one of an MPI job of " << size
                 << (size == 1 ? " rank" : " ranks")
                 << " started by a launcher; give --nproc " << size
                 << " or drop it\n";
    return kUsageError;
  }
  return kSuccess;
}

/// `ampc run --nproc N`: runs this same command, less --nproc, under
/// `mpirun -np N` on this machine and returns the job's exit code.
static int launchRanks(int argc, char **argv) {
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun) {
    llvm::errs() << "ampc: error: --nproc " << runNproc
                 << ": no MPI launcher (mpirun) on PATH; install Open MPI "
                    "(openmpi-bin) or start the ranks with your own "
                    "launcher\n";
    return kRuntimeError;
  }
  std::vector<std::string> cmd = {*mpirun, "-np", std::to_string(runNproc)};
  if (geteuid() == 0)
    cmd.push_back("--allow-run-as-root");
  // Up to N ranks on this machine whatever its core count.
  cmd.push_back("--oversubscribe");
  // This process compiled the program and printed its notes: the ranks
  // print only errors.
  setenv(kNprocCompiledEnv, "1", 1);
  cmd.push_back("-x");
  cmd.push_back(kNprocCompiledEnv);
  std::string self =
      llvm::sys::fs::getMainExecutable(argv[0], (void *)&launchRanks);
  cmd.push_back(self.empty() ? argv[0] : self);
  for (int i = 1; i < argc; ++i) {
    StringRef a(argv[i]);
    if (a == "--nproc" || a == "-nproc") {
      ++i;
      continue;
    }
    if (a.starts_with("--nproc=") || a.starts_with("-nproc="))
      continue;
    cmd.push_back(argv[i]);
  }
  llvm::outs().flush();
  std::string error;
  int code = ampc::exec::runLauncher(cmd, error);
  if (!error.empty())
    llvm::errs() << "ampc: error: " << error << "\n";
  return code;
}

/// The pipeline's settings and the target: class overrides, --amp against
/// the target, the opt level, loss scaling, the optimizer and bucket sizes.
static int checkPipelineSettings() {
  // Class overrides name ops of the language (`gelu` or `tg.gelu`) or
  // dialect-qualified ops of other dialects.
  auto checkOps = [](const std::vector<std::string> &list, StringRef flag) {
    for (const std::string &name : list) {
      if (ampc::amp::resolveOpName(name, ampc::amp::PolicyTable::getDefault()))
        continue;
      llvm::errs() << "ampc: error: --" << flag << ": unknown op '" << name
                   << "' (expected an op of the language such as 'gelu' or "
                      "'tg.gelu')\n";
      return false;
    }
    return true;
  };
  if (!checkOps(opts.pipeline.ampFp32, "amp-fp32") ||
      !checkOps(opts.pipeline.ampLower, "amp-lower") ||
      !checkOps(opts.pipeline.ampFollow, "amp-follow"))
    return kUsageError;
  if (int code = resolveTarget(); code != kSuccess)
    return code;
  {
    std::string error;
    ampc::ExplicitSettings explicitly;
    explicitly.amp = ampMode.getNumOccurrences() > 0;
    explicitly.lossScale = pipelineFlags.lossScale.getNumOccurrences() > 0;
    if (failed(ampc::applyOptLevel(opts.pipeline, explicitly, error))) {
      llvm::errs() << "ampc: error: " << error << "\n";
      return kUsageError;
    }
    if (!explicitly.amp && !opts.pipeline.optLevel.empty())
      opts.ampReason = "--opt-level=" + opts.pipeline.optLevel + ": " +
                       ampc::stringifyAMPMode(opts.pipeline.amp).str();
  }
  {
    std::string error;
    if (failed(ampc::resolveLossScale(opts.pipeline, error))) {
      llvm::errs() << "ampc: error: " << error << "\n";
      return kUsageError;
    }
    // Only a scaler the user asked for (an --opt-level preset's is not).
    std::string warning = pipelineFlags.lossScale.getNumOccurrences()
                              ? ampc::lossScaleWarning(opts.pipeline)
                              : std::string();
    if (!warning.empty() && printsNotes())
      llvm::errs() << "ampc: warning: " << warning << "\n";
  }
  if (opts.pipeline.lowUpdate != "nearest" &&
      opts.pipeline.lowUpdate != "stochastic" &&
      opts.pipeline.lowUpdate != "kahan") {
    llvm::errs() << "ampc: error: --low-update must be nearest, stochastic or "
                    "kahan, got '"
                 << opts.pipeline.lowUpdate << "'\n";
    return kUsageError;
  }
  if (opts.pipeline.optimizerStateDtype != "f32" &&
      opts.pipeline.optimizerStateDtype != "bf16") {
    llvm::errs() << "ampc: error: --optimizer-state-dtype must be f32 or "
                    "bf16, got '"
                 << opts.pipeline.optimizerStateDtype << "'\n";
    return kUsageError;
  }
  if (pipelineFlags.bucketCapMb.getNumOccurrences() &&
      !(opts.pipeline.bucketCapMb > 0.0 &&
        std::isfinite(opts.pipeline.bucketCapMb))) {
    llvm::errs() << "ampc: error: --bucket-cap-mb must be a positive number "
                    "(MiB), got "
                 << opts.pipeline.bucketCapMb << "\n";
    return kUsageError;
  }
  return kSuccess;
}

/// The options of the run and of the output.
static int checkRunOptions() {
  if (opts.runMode && opts.device != "cpu" && opts.device != "cuda") {
    llvm::errs() << "ampc: error: --device must be 'cpu' or 'cuda', got '"
                 << opts.device << "'\n";
    return kUsageError;
  }
  if (opts.target != "cpu" && opts.target != "cuda") {
    llvm::errs() << "ampc: error: --target must be 'cpu' or 'cuda', got '"
                 << opts.target << "'\n";
    return kUsageError;
  }
  if (opts.runMode && !opts.run.paramsIn.empty() && !opts.run.load.empty()) {
    llvm::errs() << "ampc: error: --params-in and --load both set the "
                    "parameters; give one of them\n";
    return kUsageError;
  }
  if (!opts.runMode &&
      (!opts.run.paramsIn.empty() || !opts.run.paramsOut.empty() ||
       !opts.run.outputsOut.empty())) {
    llvm::errs() << "ampc: error: --params-in, --params-out and --outputs-out "
                    "are options of 'ampc run'\n";
    return kUsageError;
  }
  if (!opts.runMode && (opts.run.profile || !opts.run.profileJson.empty())) {
    llvm::errs() << "ampc: error: --profile and --profile-json are options "
                    "of 'ampc run'\n";
    return kUsageError;
  }
  if (opts.runMode && opts.run.steps < 1) {
    llvm::errs() << "ampc: error: --steps must be at least 1\n";
    return kUsageError;
  }
  opts.run.stepsGiven = runSteps.getNumOccurrences() > 0;
  if (opts.runMode && opts.run.stepsGiven && runEpochs.getNumOccurrences()) {
    llvm::errs() << "ampc: error: --steps and --epochs both say how long to "
                    "train; give one of them\n";
    return kUsageError;
  }
  if (opts.runMode && runEpochs.getNumOccurrences() && opts.run.epochs < 1) {
    llvm::errs() << "ampc: error: --epochs must be at least 1\n";
    return kUsageError;
  }
  if (runAccumulate.getNumOccurrences()) {
    if (opts.run.accumulate < 1 || opts.run.accumulate > INT32_MAX) {
      llvm::errs() << "ampc: error: --accumulate must be an integer in [1, "
                      "2^31), got "
                   << opts.run.accumulate << "\n";
      return kUsageError;
    }
    opts.pipeline.accumulate = opts.run.accumulate;
  }
  for (auto [flag, given, value] :
       {std::tuple<StringRef, bool, int64_t>{
            "eval-every", runEvalEvery.getNumOccurrences() > 0,
            opts.run.evalEvery},
        {"save-every", runSaveEvery.getNumOccurrences() > 0,
         opts.run.saveEvery}})
    if (given && value < 1) {
      llvm::errs() << "ampc: error: --" << flag << " must be at least 1\n";
      return kUsageError;
    }

  return kSuccess;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  if (int code = parseCommandLine(argc, argv); code != kSuccess)
    return code;
  if (int code = checkCommandFlags(); code != kSuccess)
    return code;
  // `ampc run --nproc N` runs the same command under `mpirun -np N` on
  // this machine once the program compiles (compile()); an MPI job started
  // by any launcher runs as is.
  mainArgc = argc;
  mainArgv = argv;
  if (opts.listOps) {
    llvm::outs() << ampc::tg::getOpListJSON();
    return kSuccess;
  }
  if (opts.input.empty()) {
    llvm::errs() << "ampc: error: no input file (see 'ampc --help')\n";
    return kUsageError;
  }
  if (int code = checkPipelineSettings(); code != kSuccess)
    return code;
  if (int code = checkRunOptions(); code != kSuccess)
    return code;

  DialectRegistry registry;
  ampc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics are printed by the driver, never with an op dump attached.
  context.printOpOnDiagnostic(false);
  context.printStackTraceOnDiagnostic(false);

  DiagnosticPrinter printer(llvm::errs());
  // Under an MPI launcher every rank compiles the same program: warnings and
  // remarks come from rank 0 alone (errors from every rank that has one).
  bool quietRank = !printsNotes();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (!quietRank || diag.getSeverity() == DiagnosticSeverity::Error)
      printer.print(diag);
    return success();
  });
  return compile(context, printer);
}
