//===- ampc.cpp - the ampc compiler driver --------------------------------===//
//
// `ampc [compile] INPUT [options]` and `ampc run INPUT [options]`
// (shared/spec/cli.md). Exit codes: 0 success, 1 the input is wrong,
// 2 the command line is wrong, 3 a runtime failure.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Emit/EmitCpp.h"
#include "ampc/Executor/Run.h"
#include "ampc/Frontend/MLIRGen.h"
#include "ampc/Frontend/Parser.h"
#include "ampc/InitAll.h"
#include "ampc/Pipelines/Pipelines.h"
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
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum ExitCode { kSuccess = 0, kInputError = 1, kUsageError = 2 };

enum class EmitKind { MLIR, Report, Dot, Cpp, Json };

cl::OptionCategory ampcCategory("ampc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .tg or .mlir>"),
                               cl::cat(ampcCategory));
cl::opt<std::string> outputFile("o", cl::desc("Write the output to FILE "
                                              "(default: stdout); written "
                                              "atomically, only on success"),
                                cl::value_desc("FILE"), cl::init("-"),
                                cl::cat(ampcCategory));
cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to emit"), cl::init(EmitKind::MLIR),
    cl::values(clEnumValN(EmitKind::MLIR, "mlir", "the IR after the pipeline"),
               clEnumValN(EmitKind::Report, "report",
                          "the AMP report (JSON, one object per graph)"),
               clEnumValN(EmitKind::Cpp, "cpp",
                          "host C++ calling the runtime: FILE (source) and "
                          "FILE's stem + .h (header)"),
               clEnumValN(EmitKind::Dot, "dot",
                          "Graphviz: ops coloured by compute precision, casts "
                          "highlighted"),
               clEnumValN(EmitKind::Json, "json",
                          "the IR as JSON for other tools (docs/json.md); "
                          "with --pipeline=false, the program as written")),
    cl::cat(ampcCategory));
cl::opt<ampc::amp::Mode> ampMode(
    "amp", cl::desc("Automatic mixed precision (default: off)"),
    cl::init(ampc::amp::Mode::Off),
    cl::values(clEnumValN(ampc::amp::Mode::Off, "off", "everything as written"),
               clEnumValN(ampc::amp::Mode::FP16, "fp16", "low = f16"),
               clEnumValN(ampc::amp::Mode::BF16, "bf16", "low = bf16")),
    cl::cat(ampcCategory));
cl::opt<ampc::amp::Policy> ampPolicy(
    "amp-policy", cl::desc("AMP policy (default: fast)"),
    cl::init(ampc::amp::Policy::Fast),
    cl::values(clEnumValN(ampc::amp::Policy::Fast, "fast",
                          "the same contract or stricter, fewer bytes"),
               clEnumValN(ampc::amp::Policy::Reference, "reference",
                          "exactly torch.autocast")),
    cl::cat(ampcCategory));
cl::list<std::string> ampFp32("amp-fp32", cl::CommaSeparated,
                              cl::desc("Ops moved to the fp32 class"),
                              cl::value_desc("OP,OP"), cl::cat(ampcCategory));
cl::list<std::string> ampLower("amp-lower", cl::CommaSeparated,
                               cl::desc("Ops moved to the lower class"),
                               cl::value_desc("OP,OP"), cl::cat(ampcCategory));
cl::list<std::string> ampFollow("amp-follow", cl::CommaSeparated,
                                cl::desc("Ops moved to the follow class"),
                                cl::value_desc("OP,OP"),
                                cl::cat(ampcCategory));
cl::opt<ampc::amp::UnknownOpMode> ampUnknownOps(
    "amp-unknown-ops",
    cl::desc("Ops not in the AMP policy table (default: follow, with a note)"),
    cl::init(ampc::amp::UnknownOpMode::Follow),
    cl::values(clEnumValN(ampc::amp::UnknownOpMode::Follow, "follow",
                          "treat as follow"),
               clEnumValN(ampc::amp::UnknownOpMode::Error, "error",
                          "fail")),
    cl::cat(ampcCategory));
cl::opt<bool> listOps("list-ops",
                      cl::desc("Print every tg op record as JSON (operands, "
                               "keyword attributes, AMP class, kernels) and "
                               "exit"),
                      cl::cat(ampcCategory));
cl::opt<bool> printLocations(
    "locations",
    cl::desc("Print source locations in --emit=mlir (default: true; "
             "--locations=false for bare IR)"),
    cl::init(true), cl::cat(ampcCategory));
cl::opt<bool> runCanonicalizer("canonicalize",
                           cl::desc("Run the canonicalizer (default: true)"),
                               cl::init(true), cl::cat(ampcCategory));

cl::opt<bool> runPipeline(
    "pipeline",
    cl::desc("Run the compilation pipeline (default: true); "
             "--pipeline=false emits the IR as the frontend made it"),
    cl::init(true), cl::cat(ampcCategory));

// Loss scaling (shared/spec/amp.md); checked by ampc::resolveLossScale.
cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("Loss scaling of training steps: dynamic | none | N (a static "
             "scale); default: dynamic with --amp=fp16, none otherwise"),
    cl::value_desc("MODE"), cl::cat(ampcCategory));
cl::opt<double> lossScaleInit("loss-scale-init",
                              cl::desc("Initial dynamic scale (default: "
                                       "65536)"),
                              cl::init(65536.0), cl::cat(ampcCategory));
cl::opt<double> lossScaleGrowth(
    "loss-scale-growth", cl::desc("Scale growth factor, > 1 (default: 2)"),
    cl::init(2.0), cl::cat(ampcCategory));
cl::opt<double> lossScaleBackoff(
    "loss-scale-backoff",
    cl::desc("Scale backoff factor on overflow, in (0, 1) (default: 0.5)"),
    cl::init(0.5), cl::cat(ampcCategory));
cl::opt<int64_t> lossScaleInterval(
    "loss-scale-interval",
    cl::desc("Finite steps before the scale grows (default: 2000)"),
    cl::init(2000), cl::cat(ampcCategory));
cl::opt<int64_t> lossScaleHysteresis(
    "loss-scale-hysteresis",
    cl::desc("Overflowing steps tolerated before backing off (default: 1; "
             "2 is Megatron-LM's)"),
    cl::init(1), cl::cat(ampcCategory));
cl::opt<double> lossScaleMin("loss-scale-min",
                             cl::desc("Minimum scale (default: none)"),
                             cl::init(0.0), cl::cat(ampcCategory));
cl::opt<double> lossScaleMax("loss-scale-max",
                             cl::desc("Maximum scale (default: none)"),
                             cl::init(0.0), cl::cat(ampcCategory));

/// Copies the loss-scale flags into the pipeline options.
void setLossScaleOptions(ampc::PipelineOptions &options) {
  options.amp = ampMode;
  options.lossScale = lossScale;
  options.lossScaleInit = lossScaleInit;
  options.lossScaleGrowth = lossScaleGrowth;
  options.lossScaleBackoff = lossScaleBackoff;
  options.lossScaleInterval = lossScaleInterval;
  options.lossScaleHysteresis = lossScaleHysteresis;
  options.lossScaleMin = lossScaleMin;
  options.lossScaleMax = lossScaleMax;
}

cl::opt<std::string> target("target",
                           cl::desc("--emit=cpp: the runtime backend the code "
                                    "asks for, cpu | cuda (default: cuda)"),
                           cl::init("cuda"), cl::cat(ampcCategory));

// `ampc run` (shared/spec/cli.md, "Run options").
bool runMode = false;
cl::opt<int64_t> runSteps("steps",
                          cl::desc("run: training steps (default: 10); a "
                                   "graph without minimize runs once"),
                          cl::init(10), cl::cat(ampcCategory));
cl::opt<std::string> runDevice("device",
                               cl::desc("run: runtime backend, cpu | cuda "
                                        "(default: cpu)"),
                               cl::init("cpu"), cl::cat(ampcCategory));
cl::opt<uint64_t> runSeed("seed",
                          cl::desc("run: seeds parameter init and synthetic "
                                   "inputs (default: 0)"),
                          cl::init(0), cl::cat(ampcCategory));
cl::list<std::string> runInputs("input",
                                cl::desc("run: feed input NAME from a NumPy "
                                         "file (repeatable)"),
                                cl::value_desc("NAME=FILE.npy"),
                                cl::cat(ampcCategory));
cl::opt<std::string> runLog("log",
                            cl::desc("run: one JSON object per step"),
                            cl::value_desc("FILE.jsonl"),
                            cl::cat(ampcCategory));
cl::opt<std::string> runSave("save",
                             cl::desc("run: write a checkpoint at the end"),
                             cl::value_desc("FILE"), cl::cat(ampcCategory));
cl::opt<std::string> runLoad("load",
                             cl::desc("run: start from a checkpoint"),
                             cl::value_desc("FILE"), cl::cat(ampcCategory));
cl::opt<std::string> runParamsIn(
    "params-in",
    cl::desc("run: initialise every parameter from DIR/NAME.npy (dtype and "
             "shape checked; a missing or extra .npy file is an error)"),
    cl::value_desc("DIR"), cl::cat(ampcCategory));
cl::opt<std::string> runParamsOut(
    "params-out",
    cl::desc("run: write every parameter after the last step to "
             "DIR/NAME.npy (created if missing; files replaced atomically)"),
    cl::value_desc("DIR"), cl::cat(ampcCategory));
cl::opt<std::string> runOutputsOut(
    "outputs-out",
    cl::desc("run: write the last step's outputs to DIR/output_I.npy"),
    cl::value_desc("DIR"), cl::cat(ampcCategory));

/// Prints `FILE:LINE:COL: error: MESSAGE`, then the source line and a caret
/// when the line is short enough to be useful.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(llvm::raw_ostream &os) : os(os) {}

  void addBuffer(StringRef name, StringRef text) { buffers[name] = text; }

  void print(Diagnostic &diag) {
    printOne(diag.getLocation(), diag.getSeverity(), diag.str());
    for (Diagnostic &note : diag.getNotes())
      printOne(note.getLocation(), note.getSeverity(), note.str());
  }

private:
  llvm::raw_ostream &os;
  llvm::StringMap<StringRef> buffers;

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
    if (flc)
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
    StringRef text = it->second;
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
  return !module.getOps<func::FuncOp>().empty();
}
} // namespace

static int compile(MLIRContext &context, DiagnosticPrinter &printer) {
  auto bufferOr = llvm::MemoryBuffer::getFileOrSTDIN(inputFile, /*IsText=*/false,
                                                     /*RequiresNullTerminator=*/true);
  if (std::error_code ec = bufferOr.getError()) {
    llvm::errs() << "ampc: error: cannot read '" << inputFile
                 << "': " << ec.message() << "\n";
    return kInputError;
  }
  std::unique_ptr<llvm::MemoryBuffer> buffer = std::move(*bufferOr);
  StringRef name = inputFile;
  printer.addBuffer(name, buffer->getBuffer());
  mlir::Location fileStart = FileLineColLoc::get(&context, name, 1, 1);

  OwningOpRef<ModuleOp> module;
  StringRef ext = llvm::sys::path::extension(name);
  if (ext == ".mlir") {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(buffer->getBuffer(), name,
                                         /*RequiresNullTerminator=*/true),
        llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return kInputError;
    if (!hasGraph(*module)) {
      emitError(fileStart) << "no graph (func.func) in '" << name << "'";
      return kInputError;
    }
  } else if (ext == ".tg" || name == "-") {
    std::vector<ampc::frontend::Diagnostic> diags;
    auto ast = ampc::frontend::parseModule(buffer->getBuffer(), name, diags);
    if (!ast || !diags.empty()) {
      for (const auto &d : diags)
        emitError(FileLineColLoc::get(
            &context, d.loc.file ? StringRef(*d.loc.file) : name, d.loc.line,
            d.loc.col))
            << d.message;
      if (diags.empty())
        emitError(fileStart) << "cannot parse '" << name << "'";
      return kInputError;
    }
    if (ast->graphs.empty()) {
      emitError(fileStart) << "no graph in '" << name
                           << "' (expected 'graph NAME(...) { ... }')";
      return kInputError;
    }
    module = ampc::frontend::mlirGen(context, *ast);
    if (!module)
      return kInputError;
  } else {
    llvm::errs() << "ampc: error: '" << name
                 << "' is neither a .tg nor a .mlir file\n";
    return kUsageError;
  }

  if (failed(verify(*module)))
    return kInputError;

  PassManager pm(&context);
  ampc::PipelineOptions options;
  options.canonicalize = runCanonicalizer;
  options.amp = ampMode;
  options.ampPolicy = ampPolicy;
  options.ampFp32 = ampFp32;
  options.ampLower = ampLower;
  options.ampFollow = ampFollow;
  options.ampUnknownOps = ampUnknownOps;
  setLossScaleOptions(options);
  options.planBuffers = runMode || emitKind == EmitKind::Report ||
                        emitKind == EmitKind::Cpp;
  if (runPipeline)
    ampc::buildPipeline(pm, options);
  if (failed(pm.run(*module)))
    return kInputError;
  if (runMode) {
    ampc::exec::RunOptions run;
    run.steps = runSteps;
    run.cuda = runDevice == "cuda";
    run.seed = runSeed;
    run.inputs.assign(runInputs.begin(), runInputs.end());
    run.log = runLog;
    run.save = runSave;
    run.load = runLoad;
    run.paramsIn = runParamsIn;
    run.paramsOut = runParamsOut;
    run.outputsOut = runOutputsOut;
    return ampc::exec::runModule(*module, run);
  }

  // Render the whole output first, so a failure never leaves a partial file.
  std::string text;
  llvm::raw_string_ostream os(text);
  switch (emitKind) {
  case EmitKind::MLIR: {
    OpPrintingFlags flags;
    if (printLocations)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    module->print(os, flags);
    break;
  }
  case EmitKind::Report: {
    ampc::report::ReportOptions report;
    report.amp = ampMode == ampc::amp::Mode::FP16   ? "fp16"
                 : ampMode == ampc::amp::Mode::BF16 ? "bf16"
                                                    : "off";
    report.policy =
        ampPolicy == ampc::amp::Policy::Reference ? "reference" : "fast";
    std::string bad;
    report.table = *ampc::amp::buildPolicyTable(ampFp32, ampLower, ampFollow,
                                                bad);
    ampc::report::emitReport(*module, report, os);
    break;
  }
  case EmitKind::Dot:
    ampc::report::emitDot(*module, os);
    break;
  case EmitKind::Json:
    if (failed(ampc::report::emitJson(*module, os)))
      return kInputError;
    break;
  case EmitKind::Cpp: {
    auto funcs = module->getOps<func::FuncOp>();
    FailureOr<ampc::rt::Program> program =
        ampc::rt::lowerToRuntime(*funcs.begin());
    if (failed(program))
      return kInputError;
    std::string stem = outputFile == "-"
                           ? program->name
                           : llvm::sys::path::stem(outputFile).str();
    std::string headerText, sourceText;
    ampc::emit::emitCpp(*program, target == "cuda", stem + ".h", headerText,
                        sourceText);
    if (outputFile == "-") {
      os << "// ===== " << stem << ".h =====\n"
         << headerText << "// ===== " << stem << ".cpp =====\n"
         << sourceText;
      break;
    }
    SmallString<256> headerPath(outputFile.getValue());
    llvm::sys::path::replace_extension(headerPath, ".h");
    if (llvm::Error err = llvm::writeToOutput(
            headerPath, [&](llvm::raw_ostream &out) -> llvm::Error {
              out << headerText;
              return llvm::Error::success();
            })) {
      llvm::errs() << "ampc: error: cannot write '" << headerPath
                   << "': " << llvm::toString(std::move(err)) << "\n";
      return kInputError;
    }
    os << sourceText;
    break;
  }
  }

  if (outputFile == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return kSuccess;
  }
  // writeToOutput goes through a temporary file and a rename: an existing
  // FILE is replaced whole or not at all.
  if (llvm::Error err = llvm::writeToOutput(
          outputFile, [&](llvm::raw_ostream &out) -> llvm::Error {
            out << text;
            return llvm::Error::success();
          })) {
    llvm::errs() << "ampc: error: cannot write '" << outputFile
                 << "': " << llvm::toString(std::move(err)) << "\n";
    return kInputError;
  }
  return kSuccess;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);

  // `ampc compile X` and `ampc X` are the same; `ampc run X` executes.
  std::vector<const char *> args(argv, argv + argc);
  runMode = false;
  if (args.size() > 1 && StringRef(args[1]) == "compile") {
    args.erase(args.begin() + 1);
  } else if (args.size() > 1 && StringRef(args[1]) == "run") {
    args.erase(args.begin() + 1);
    runMode = true;
  }

  cl::HideUnrelatedOptions(ampcCategory);
  std::string errors;
  llvm::raw_string_ostream errStream(errors);
  if (!cl::ParseCommandLineOptions(
          static_cast<int>(args.size()), args.data(),
          "ampc: a mixed-precision graph compiler\n\n"
          "  ampc [compile] INPUT [options]   compile a .tg or .mlir file\n"
          "  ampc run INPUT [options]         compile, then train or run "
          "it on the runtime\n",
          &errStream)) {
    llvm::errs() << errors;
    return kUsageError;
  }
  if (listOps) {
    llvm::outs() << ampc::tg::getOpListJSON();
    return kSuccess;
  }
  if (inputFile.empty()) {
    llvm::errs() << "ampc: error: no input file (see 'ampc --help')\n";
    return kUsageError;
  }
  // Class overrides name ops of the language (`gelu` or `tg.gelu`) or
  // dialect-qualified ops of other dialects.
  auto checkOps = [](const cl::list<std::string> &list, StringRef flag) {
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
  if (!checkOps(ampFp32, "amp-fp32") || !checkOps(ampLower, "amp-lower") ||
      !checkOps(ampFollow, "amp-follow"))
    return kUsageError;
  {
    ampc::PipelineOptions options;
    setLossScaleOptions(options);
    std::string error;
    if (failed(ampc::resolveLossScale(options, error))) {
      llvm::errs() << "ampc: error: " << error << "\n";
      return kUsageError;
    }
    std::string warning = ampc::lossScaleWarning(options);
    if (!warning.empty())
      llvm::errs() << "ampc: warning: " << warning << "\n";
  }
  if (runMode && runDevice != "cpu" && runDevice != "cuda") {
    llvm::errs() << "ampc: error: --device must be 'cpu' or 'cuda', got '"
                 << runDevice << "'\n";
    return kUsageError;
  }
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "ampc: error: --target must be 'cpu' or 'cuda', got '"
                 << target << "'\n";
    return kUsageError;
  }
  if (runMode && !runParamsIn.empty() && !runLoad.empty()) {
    llvm::errs() << "ampc: error: --params-in and --load both set the "
                    "parameters; give one of them\n";
    return kUsageError;
  }
  if (!runMode && (!runParamsIn.empty() || !runParamsOut.empty() ||
                   !runOutputsOut.empty())) {
    llvm::errs() << "ampc: error: --params-in, --params-out and --outputs-out "
                    "are options of 'ampc run'\n";
    return kUsageError;
  }
  if (runMode && runSteps < 1) {
    llvm::errs() << "ampc: error: --steps must be at least 1\n";
    return kUsageError;
  }

  DialectRegistry registry;
  ampc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics are printed by the driver, never with an op dump attached.
  context.printOpOnDiagnostic(false);
  context.printStackTraceOnDiagnostic(false);

  DiagnosticPrinter printer(llvm::errs());
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    printer.print(diag);
    return success();
  });
  return compile(context, printer);
}
