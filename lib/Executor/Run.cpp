//===- Run.cpp - `ampc run` -------------------------------------------------===//

#include "ampc/Executor/Run.h"
#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Executor/Distributed.h"
#include "ampc/Executor/Executor.h"
#include "ampc/Executor/LateStep.h"
#include "ampc/Executor/Npy.h"
#include "ampc/Executor/Schedule.h"
#include "ampc/Executor/Profile.h"
#include "ampc/Executor/Provenance.h"
#include "ampc/Executor/SharedState.h"
#include "ampc/interrupt.h"
#include "ampc/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unistd.h>

using namespace mlir;
using namespace ampc;
using namespace ampc::exec;

namespace {
enum { kOk = 0, kInputError = 1, kUsageError = 2, kRuntimeError = 3 };

/// The MPI job this run is part of, if any: a failing rank ends every rank
/// (none may wait forever in a collective).
World *gWorld = nullptr;

int fail(int code, const std::string &msg) {
  if (gWorld) {
    // One write, so the ranks' lines do not interleave.
    std::string line = "ampc: error: rank " + std::to_string(gWorld->rank()) +
                       ": " + msg + "\n";
    llvm::errs() << line;
    llvm::errs().flush();
    gWorld->abortJob(code);
  }
  // One write: ranks that fail before joining do not interleave either.
  llvm::errs() << "ampc: error: " + msg + "\n";
  return code;
}

/// A run-time error located in the source (`FILE:LINE:COL: error: ...`,
/// from Provenance.h) or a plain one.
int failChecked(int code, const std::string &msg, bool located) {
  if (!located)
    return fail(code, msg);
  llvm::errs() << msg << "\n";
  llvm::errs().flush();
  if (gWorld)
    gWorld->abortJob(code);
  return code;
}

/// The parameter slots of a program, in signature order.
std::vector<size_t> paramSlots(const rt::Program &program) {
  std::vector<size_t> out;
  for (size_t i = 0; i < program.slots.size(); ++i)
    if (program.slots[i].role == rt::Slot::Role::Param)
      out.push_back(i);
  return out;
}

std::string joinPath(const std::string &dir, const std::string &file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

/// The buffer slots of a program (the language's `buffer` state).
std::vector<size_t> bufferSlots(const rt::Program &program) {
  std::vector<size_t> out;
  for (size_t i = 0; i < program.slots.size(); ++i)
    if (program.slots[i].role == rt::Slot::Role::Buffer)
      out.push_back(i);
  return out;
}

/// Reads DIR/NAME.npy for every parameter NAME, and for every buffer NAME
/// whose file is there (a buffer without one keeps its initial value): a
/// parameter's file missing, a .npy file that names no parameter or buffer
/// of the file's graphs, or one of another dtype or shape is an error.
bool readParams(const rt::Program &program, const std::string &dir,
                std::vector<std::pair<size_t, std::vector<char>>> &out,
                std::string &error,
                const std::set<std::string> &otherGraphs = {}) {
  std::vector<size_t> params = paramSlots(program);
  std::vector<size_t> buffers = bufferSlots(program);
  std::string names;
  for (size_t i : params)
    names += (names.empty() ? "" : ", ") + program.slots[i].name;
  if (names.empty())
    names = "none";
  if (!llvm::sys::fs::is_directory(dir)) {
    error = "--params-in: '" + dir + "' is not a directory";
    return false;
  }
  for (size_t i : params) {
    std::string path = joinPath(dir, program.slots[i].name + ".npy");
    if (!llvm::sys::fs::exists(path)) {
      error = "--params-in: '" + path + "' is missing (graph '" + program.name +
              "' has parameters: " + names + ")";
      return false;
    }
  }
  std::error_code ec;
  std::vector<std::string> extra;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef file = llvm::sys::path::filename(it->path());
    if (!file.ends_with(".npy"))
      continue;
    llvm::StringRef stem = file.drop_back(4);
    auto named = [&](size_t i) { return program.slots[i].name == stem; };
    if (llvm::none_of(params, named) && llvm::none_of(buffers, named) &&
        !otherGraphs.count(stem.str()))
      extra.push_back(it->path());
  }
  if (ec) {
    error = "--params-in: cannot read directory '" + dir + "': " + ec.message();
    return false;
  }
  if (!extra.empty()) {
    std::sort(extra.begin(), extra.end());
    error = "--params-in: '" + extra.front() +
            "' is not a parameter of graph '" + program.name +
            "' (its parameters: " + names + ")";
    return false;
  }
  for (size_t i : params) {
    const rt::Slot &slot = program.slots[i];
    std::vector<char> data;
    if (!readNpyAs(joinPath(dir, slot.name + ".npy"),
                   "parameter '" + slot.name + "'", slot.dtype, slot.shape,
                   slot.bytes, data, error))
      return false;
    out.push_back({i, std::move(data)});
  }
  for (size_t i : buffers) {
    const rt::Slot &slot = program.slots[i];
    std::string path = joinPath(dir, slot.name + ".npy");
    if (!llvm::sys::fs::exists(path))
      continue;
    std::vector<char> data;
    if (!readNpyAs(path, "buffer '" + slot.name + "'", slot.dtype, slot.shape,
                   slot.bytes, data, error))
      return false;
    out.push_back({i, std::move(data)});
  }
  return true;
}

/// Creates DIR (and its parents) for an --*-out option.
bool makeDirectory(const std::string &flag, const std::string &dir,
                   std::string &error) {
  if (llvm::sys::fs::exists(dir) && !llvm::sys::fs::is_directory(dir)) {
    error = flag + ": '" + dir + "' exists and is not a directory";
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = flag + ": cannot create directory '" + dir + "': " + ec.message();
    return false;
  }
  return true;
}

/// A number for the summary line.
std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  std::string s = buf;
  if (s == "-nan")
    return "nan";
  return s;
}

/// A number for the log: strict JSON (RFC 8259 has no NaN or Infinity, so
/// non-finite values are the strings "nan", "inf", "-inf").
std::string jnum(double v) {
  if (std::isnan(v))
    return "\"nan\"";
  if (std::isinf(v))
    return v > 0 ? "\"inf\"" : "\"-inf\"";
  return fmt(v);
}

std::string jstr(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// Checks, before anything runs, that FILE can be written: its directory
/// exists and accepts a new file, and FILE is not a directory.
bool checkWritableFile(const std::string &flag, const std::string &path,
                       std::string &error) {
  if (llvm::sys::fs::is_directory(path)) {
    error = flag + ": cannot write '" + path + "': it is a directory";
    return false;
  }
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  if (!llvm::sys::fs::is_directory(dir)) {
    error = flag + ": cannot write '" + path + "': directory '" +
            std::string(dir) + "' does not exist";
    return false;
  }
  llvm::SmallString<256> probe;
  int fd = -1;
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, ".ampc-probe-%%%%%%%%");
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(model, fd, probe)) {
    error = flag + ": cannot write '" + path + "': " + ec.message();
    return false;
  }
  ::close(fd);
  llvm::sys::fs::remove(probe);
  return true;
}

bool checkWritableDir(const std::string &flag, const std::string &dir,
                      std::string &error) {
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, "x.npy");
  return checkWritableFile(flag, std::string(file), error);
}

/// NAME=FILE.npy.
bool splitSpec(const std::string &flag, const std::string &spec,
               std::string &name, std::string &path, std::string &error) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    error = flag + " expects NAME=FILE.npy, got '" + spec + "'";
    return false;
  }
  name = spec.substr(0, eq);
  path = spec.substr(eq + 1);
  return true;
}

/// The input slot `name` of `program`, or an error listing its inputs.
bool findInput(const rt::Program &program, const std::string &flag,
               const std::string &name, size_t &slot, std::string &error) {
  std::string names;
  slot = program.slots.size();
  for (size_t i = 0; i < program.slots.size(); ++i) {
    if (program.slots[i].role != rt::Slot::Role::Input)
      continue;
    names += (names.empty() ? "" : ", ") + program.slots[i].name;
    if (program.slots[i].name == name)
      slot = i;
  }
  if (slot != program.slots.size())
    return true;
  error = flag + ": graph '" + program.name + "' has no input '" + name +
          "' (its inputs: " + (names.empty() ? "none" : names) + ")";
  return false;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A dataset for one input: N samples of the input's per-sample shape.
struct Dataset {
  size_t slot = 0;
  std::string name, path;
  NpyArray array;
  int64_t samples = 0, rowBytes = 0, batch = 0;
};

/// Reads `spec` (NAME=FILE.npy) as a dataset for an input of `program`.
int readDataset(const rt::Program &program, const std::string &flag,
                const std::string &spec, Dataset &ds, std::string &error) {
  if (!splitSpec(flag, spec, ds.name, ds.path, error))
    return kUsageError;
  if (!findInput(program, flag, ds.name, ds.slot, error))
    return kUsageError;
  const rt::Slot &in = program.slots[ds.slot];
  if (!readNpy(ds.path, ds.array, error))
    return kInputError;
  std::string what = "input '" + ds.name + "' from '" + ds.path + "'";
  if (ds.array.descr != npyDescr(in.dtype)) {
    error = flag + ": " + what + ": dtype '" + ds.array.descr +
            "', expected '" + npyDescr(in.dtype) + "'";
    return kInputError;
  }
  std::vector<int64_t> want = in.shape;
  bool ok = !want.empty() && ds.array.shape.size() == want.size() &&
            std::equal(want.begin() + 1, want.end(),
                       ds.array.shape.begin() + 1);
  if (!ok) {
    std::string expected = "[N";
    for (size_t i = 1; i < want.size(); ++i)
      expected += ", " + std::to_string(want[i]);
    expected += "]";
    error = flag + ": " + what + ": shape " + shapeString(ds.array.shape) +
            ", expected " + (want.empty() ? "a batched input" : expected) +
            " (samples along the leading dim)";
    return kInputError;
  }
  ds.samples = ds.array.shape[0];
  ds.batch = want[0];
  ds.rowBytes = ds.batch > 0 ? in.bytes / ds.batch : 0;
  if (static_cast<int64_t>(ds.array.data.size()) != ds.samples * ds.rowBytes) {
    error = flag + ": " + what + ": the data is truncated";
    return kInputError;
  }
  return kOk;
}

/// Every dataset of a set must have the same N, at least one batch.
bool checkSamples(const std::string &flag, const std::vector<Dataset> &sets,
                  std::string &error) {
  for (const Dataset &d : sets) {
    if (d.samples != sets.front().samples) {
      error = flag + ": '" + sets.front().path + "' holds " +
              std::to_string(sets.front().samples) + " samples but '" +
              d.path + "' holds " + std::to_string(d.samples) +
              " (every dataset needs the same number)";
      return false;
    }
    if (d.samples < d.batch) {
      error = flag + ": '" + d.path + "' holds " + std::to_string(d.samples) +
              " samples, fewer than one batch of input '" + d.name + "' (" +
              std::to_string(d.batch) + ")";
      return false;
    }
  }
  return true;
}

/// Writes the batch of samples `order[(first + j) * ranks + rank]`, j = 0
/// .. B-1, into each dataset's input slot: with one rank the samples
/// `order[first .. first + B)`; under W ranks, rank r's share of the W * B
/// samples one process with batch W * B takes (docs/distributed.md).
bool feedBatch(Executor &ex, const std::vector<Dataset> &sets,
               const std::vector<int64_t> &order, int64_t first,
               std::string &error, int64_t ranks = 1, int64_t rank = 0) {
  std::vector<char> host;
  for (const Dataset &d : sets) {
    host.resize(d.batch * d.rowBytes);
    for (int64_t r = 0; r < d.batch; ++r) {
      int64_t sample = order[(first + r) * ranks + rank];
      std::memcpy(host.data() + r * d.rowBytes,
                  d.array.data.data() + sample * d.rowBytes, d.rowBytes);
    }
    if (!ex.writeSlot(d.slot, host.data(), host.size(), error))
      return false;
  }
  return true;
}

/// The command line's checks that need no graph (a name fed twice is a
/// command-line error, whatever the graph).
int validateOptions(ModuleOp module, const RunOptions &options) {
  if (module.getOps<func::FuncOp>().empty() &&
      module.getOps<rt::ProgramOp>().empty())
    return fail(kInputError, "no graph to run");
  std::string error;

  // A name fed twice is a command-line error, whatever the graph.
  {
    std::map<std::string, std::string> seen;
    auto check = [&](const char *flag,
                     const std::vector<std::string> &specs) -> bool {
      for (const std::string &spec : specs) {
        std::string name, path;
        if (!splitSpec(flag, spec, name, path, error))
          return false;
        auto [it, fresh] = seen.insert({name, flag});
        if (!fresh) {
          error = "input '" + name + "' is given twice (" + it->second +
                  " and " + flag + ")";
          return false;
        }
      }
      return true;
    };
    if (!check("--input", options.inputs) || !check("--data", options.data))
      return fail(kUsageError, error);
    seen.clear();
    if (!check("--eval-data", options.evalData))
      return fail(kUsageError, error);
  }
  if (!options.evalData.empty() && options.eval.empty())
    return fail(kUsageError, "--eval-data needs --eval GRAPH");
  if (!options.eval.empty() && options.evalData.empty())
    return fail(kUsageError, "--eval needs --eval-data NAME=FILE.npy");
  if (options.evalEvery > 0 && options.eval.empty())
    return fail(kUsageError, "--eval-every needs --eval GRAPH");
  if (options.epochs > 0 && options.data.empty())
    return fail(kUsageError, "--epochs needs a dataset (--data NAME=FILE.npy)");
  if (options.saveEvery > 0 && options.save.empty())
    return fail(kUsageError, "--save-every needs --save FILE");
  return kOk;
}

/// Lowers the module (unless it is lowered already) and picks the graph
/// run and the --eval graph.
int lowerAndChoose(ModuleOp module, const RunOptions &options,
                   std::vector<rt::Program> &programs,
                   const rt::Program *&chosen,
                   const rt::Program *&evalProgram) {
  // --sync-batchnorm (docs/distributed.md): under W > 1 ranks the training
  // batch norms lower to the synchronised entry points.
  if (options.syncBatchnorm) {
    if (launchedUnderMpi())
      markSyncBatchNorm(module);
    else
      llvm::errs() << "ampc: note: --sync-batchnorm has no effect on one "
                      "process (it applies under mpirun or --nproc with "
                      "more than one rank)\n";
  }
  // The steps as runtime calls (the IR --emit=lowered prints), unless the
  // module is lowered already.
  if (!module.getOps<func::FuncOp>().empty() &&
      failed(ampc::lowerToRuntime(module)))
    return kInputError;
  for (rt::ProgramOp op : module.getOps<rt::ProgramOp>())
    programs.push_back(rt::describeProgram(op));
  auto graphList = [&]() {
    std::string list;
    for (const rt::Program &p : programs)
      list += (list.empty() ? "" : ", ") + p.name;
    return list;
  };
  auto findProgram = [&](const std::string &name) -> const rt::Program * {
    for (const rt::Program &p : programs)
      if (p.name == name)
        return &p;
    return nullptr;
  };
  std::string chooseError, note;
  rt::ProgramOp chosenOp = rt::chooseProgram(module, options.graph, "running",
                                             chooseError, note);
  if (!chosenOp)
    return fail(kUsageError, chooseError);
  // Notes every rank would print alike come from rank 0.
  if (!note.empty() && launcherRank() == 0)
    llvm::errs() << "ampc: note: " << note << "\n";
  chosen = findProgram(chosenOp.getSymName().str());
  const rt::Program &program = *chosen;
  if (options.accumulate > 0 && !program.training)
    return fail(kUsageError, "--accumulate: graph '" + program.name +
                                 "' does not minimize; gradient accumulation "
                                 "needs a training step");
  evalProgram = nullptr;
  if (!options.eval.empty()) {
    evalProgram = findProgram(options.eval);
    if (!evalProgram)
      return fail(kUsageError, "--eval: no graph '" + options.eval +
                                   "' (the file has: " + graphList() + ")");
    if (evalProgram->training)
      return fail(kUsageError, "--eval: graph '" + options.eval +
                                   "' minimizes; an eval graph must not");
    if (evalProgram == &program)
      return fail(kUsageError,
                  "--eval: graph '" + options.eval + "' is the graph run");
  }
  return kOk;
}

/// One `ampc run` of a chosen graph: its phases in the order the run takes
/// them (run() below), the state they share as members. Each phase returns
/// 0 to go on or the exit code (after its message).
class TrainingRun {
public:
  TrainingRun(const RunOptions &givenOptions,
              const std::vector<rt::Program> &programs,
              const rt::Program &program, const rt::Program *evalProgram)
      : givenOptions(givenOptions), options(givenOptions), programs(programs),
        program(program), evalProgram(evalProgram),
        micro(program.accumulate), scaler(bool(program.foundInf)) {}

  int run() {
    using Phase = int (TrainingRun::*)();
    static const Phase kPhases[] = {
        &TrainingRun::joinRanks,        // under mpirun: the ranks agree
        &TrainingRun::readInputs,       // every file read and checked
        &TrainingRun::startExecutors,   // the graph's (and eval graph's)
        &TrainingRun::loadCheckpoint,   // --load
        &TrainingRun::shareAcrossRanks, // rank 0's state everywhere
        &TrainingRun::planSteps,        // how many steps, from where
        &TrainingRun::openLog,          // --log
        &TrainingRun::prepareLoop,      // signals, step reads, replays
        &TrainingRun::stepLoop,         // the steps, saves and evals
        &TrainingRun::finishSteps,      // the last lines and eval
        &TrainingRun::writeOutputs,     // --save, --params-out, ...
    };
    for (Phase phase : kPhases)
      if (int code = (this->*phase)())
        return code;
    return summary();
  }

private:
  int joinRanks();
  int readInputs();
  int startExecutors();
  int loadCheckpoint();
  int shareAcrossRanks();
  int planSteps();
  int openLog();
  int prepareLoop();
  int stepLoop();
  int oneStep(int64_t k);
  int finishSteps();
  int writeOutputs();
  int summary();

  bool onRank0() const { return !world || world->rank() == 0; }
  bool saveCheckpoint(bool checked);
  void logLine(const std::string &line);
  bool scaleOfStep(double &value);
  bool runEval(int64_t epoch);
  void prepareOrder();
  bool overflowOf(uint64_t serial, int64_t shown, bool skipped, double loss,
                  double scale, const rt::CallSource *&overflow,
                  int64_t &microAt);
  void record(int64_t k, int64_t epoch, int64_t shown, double used,
              double loss, bool skipped, const rt::CallSource *overflow);
  bool flushLate(size_t keep);
  bool accumulatedStep();
  /// The epoch's batches; an update needs `micro` of them that are left.
  bool epochEnds() const { return pos.batch + micro > batchesInEpoch; }

  const RunOptions &givenOptions;
  /// The options as this rank applies them (only rank 0 writes files).
  RunOptions options;
  const std::vector<rt::Program> &programs;
  const rt::Program &program;
  const rt::Program *evalProgram;
  /// Gradient accumulation (docs/optimizer.md): K micro-batches per update.
  const int64_t micro;
  std::string error;

  // Ranks.
  std::unique_ptr<World> world;
  bool wantSave = false;
  int64_t ranks = 1, myRank = 0;
  // Inputs.
  std::vector<bool> given;
  std::vector<std::pair<size_t, std::vector<char>>> inputData;
  std::vector<Dataset> datasets;
  std::vector<Dataset> evalSets;
  std::vector<bool> evalGiven;
  std::vector<std::pair<size_t, std::vector<char>>> paramData;
  // Executors and the position in the data.
  std::unique_ptr<Executor> ex;
  std::unique_ptr<Executor> evalEx;
  Position pos;
  // The plan of the steps.
  std::optional<ScheduleInfo> schedule;
  int64_t scheduleCount = 0;
  int64_t perEpoch = 0, batchesInEpoch = 0;
  int64_t steps = 1;
  // The log.
  std::FILE *log = nullptr;
  /// The first failed write's reason; no line is written after it.
  int logErrno = 0;
  size_t logBytes = 0;
  bool tty = false;
  /// A scaler is on when the step checks its gradients (dynamic or static).
  const bool scaler;
  // Eval.
  int64_t lastEvalAt = -1;
  bool evalLocated = false;
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  // The step loop.
  std::optional<Interruption> signals;
  int pendingSave = -1, pendingParams = -1, pendingOutputs = -1;
  int64_t skippedCount = 0, taken = 0;
  double firstLoss = NAN, lastLoss = NAN, scale = 0.0;
  int64_t firstEpoch = 1;
  StepReadPlan plan;
  bool packed = false, late = false;
  bool checkReplay = false;
  int64_t replaysChecked = 0;
  std::function<bool(int64_t)> feedMicro;
  std::optional<LateStep> pending;
  uint64_t syncsInSteps = 0;
  std::chrono::steady_clock::time_point t0;
  int64_t lastOverflowMicro = -1;
  bool hasLoss = false;
  bool lateLocated = false;
  int64_t readsLate = 0, readsAtOnce = 0;
  std::vector<int64_t> microOffsets;
  double microLoss = NAN;
  int jobSignal = 0;
  // The end.
  int interrupted = 0;
  double secs = 0.0;
  // --profile: the first step's sums, and how long it took.
  std::vector<Executor::CallProfile> firstProfile;
  double firstStepSecs = 0.0;
  int printProfile();
};

/// Data parallel: joins the MPI job and checks that every rank runs the
/// same compiled step with the same settings.
int TrainingRun::joinRanks() {
  // Data parallel (docs/distributed.md): started by mpirun with W > 1 ranks.
  if (launchedUnderMpi()) {
    std::string error;
    world = World::join(error);
    if (!world)
      return fail(kRuntimeError, error);
    // On CUDA each rank uses device local_rank % devices; collectives on
    // its context go through NCCL.
    if (options.cuda) {
      int device = 0;
      if (!world->cudaDevice(device, error))
        // Named by rank, one line per rank (every rank fails alike, and
        // mpirun ends the job when one exits non-zero).
        return fail(kRuntimeError,
                    "rank " + std::to_string(world->rank()) + ": " + error);
      Executor::setCudaDevice(device);
    }
    gWorld = world.get();
    char fp[32];
    std::snprintf(fp, sizeof(fp), "%016llx",
                  (unsigned long long)program.fingerprint);
    std::vector<std::pair<std::string, std::string>> fields =
        options.compileSettings;
    fields.insert(
        fields.end(),
        {{"compiled step", fp},
             {"--steps", std::to_string(options.steps)},
             {"--seed", std::to_string(options.seed)},
             {"--input", std::to_string(options.inputs.size()) + " given"},
             {"--load", options.load.empty() ? "no" : "yes"},
             {"--params-in", options.paramsIn.empty() ? "no" : "yes"},
             {"--data", std::to_string(options.data.size()) + " given"},
             {"--epochs", std::to_string(options.epochs)},
             {"--shuffle", options.shuffle ? "true" : "false"},
             {"--save-every", std::to_string(options.saveEvery)},
         {"--sync-batchnorm", options.syncBatchnorm ? "yes" : "no"}});
    if (!world->checkFingerprint(fields, error)) {
      gWorld = nullptr;
      llvm::errs() << "ampc: error: rank " + std::to_string(world->rank()) +
                          ": " + error + "\n";
      return kRuntimeError;
    }
    if (world->rank() != 0) {
      // Only rank 0 writes; every rank still takes part in the replica
      // checksum before each save (saveCheckpoint).
      options.log.clear();
      options.save.clear();
      options.paramsOut.clear();
      options.outputsOut.clear();
      options.profileJson.clear();
    }
  }
  wantSave = !givenOptions.save.empty();
  ranks = world ? world->size() : 1;
  myRank = world ? world->rank() : 0;
  return kOk;
}

/// --input, --data, --eval-data and --params-in files, read and checked,
/// and every output path checked writable, before anything runs.
int TrainingRun::readInputs() {
  // Inputs from files, validated before anything runs.
  given.assign(program.slots.size(), false);
  for (const std::string &spec : options.inputs) {
    std::string name, path;
    size_t slot;
    if (!splitSpec("--input", spec, name, path, error) ||
        !findInput(program, "--input", name, slot, error))
      return fail(kUsageError, error);
    std::vector<char> data;
    const rt::Slot &in = program.slots[slot];
    // Data parallel: a file holding W * B rows for an input of B rows is
    // sharded as --data is: rank r takes rows j * W + r (docs/distributed.md).
    NpyArray whole;
    bool readable = world && !in.shape.empty() && readNpy(path, whole, error);
    if (readable && whole.descr == npyDescr(in.dtype) &&
        whole.shape.size() == in.shape.size() &&
        whole.shape[0] == in.shape[0] * world->size() &&
        std::equal(in.shape.begin() + 1, in.shape.end(),
                   whole.shape.begin() + 1)) {
      int64_t row = in.bytes / in.shape[0], w = world->size();
      data.resize(in.bytes);
      for (int64_t j = 0; j < in.shape[0]; ++j)
        std::memcpy(data.data() + j * row,
                    whole.data.data() + (j * w + world->rank()) * row, row);
    } else if (!readNpyAs(path, "input '" + in.name + "'", in.dtype,
                          in.shape, in.bytes, data, error)) {
      // Under ranks a file of W * B rows is the other shape it takes.
      if (readable && whole.shape.size() == in.shape.size() &&
          whole.shape[0] != in.shape[0])
        error += " (or " + std::to_string(in.shape[0] * world->size()) +
                 " rows, sharded over the " + std::to_string(world->size()) +
                 " ranks)";
      return fail(kInputError, error);
    }
    given[slot] = true;
    inputData.push_back({slot, std::move(data)});
  }
  datasets.resize(options.data.size());
  for (size_t k = 0; k < options.data.size(); ++k) {
    if (int code = readDataset(program, "--data", options.data[k],
                               datasets[k], error))
      return fail(code, error);
    given[datasets[k].slot] = true;
  }
  if (!datasets.empty() && !checkSamples("--data", datasets, error))
    return fail(kInputError, error);
  // Under W ranks an update takes W batches of the dataset.
  if (!datasets.empty() && ranks > 1 &&
      datasets.front().samples < ranks * datasets.front().batch)
    return fail(kInputError,
                "--data: '" + datasets.front().path + "' holds " +
                    std::to_string(datasets.front().samples) +
                    " samples, fewer than one batch of input '" +
                    datasets.front().name + "' (" +
                    std::to_string(datasets.front().batch) + ") on each of " +
                    std::to_string(ranks) + " ranks");
  evalSets.resize(options.evalData.size());
  if (evalProgram) {
    evalGiven.assign(evalProgram->slots.size(), false);
    for (size_t k = 0; k < options.evalData.size(); ++k) {
      if (int code = readDataset(*evalProgram, "--eval-data",
                                 options.evalData[k], evalSets[k], error))
        return fail(code, error);
      evalGiven[evalSets[k].slot] = true;
    }
    if (!checkSamples("--eval-data", evalSets, error))
      return fail(kInputError, error);
  }

  if (!options.paramsIn.empty() &&
      !readParams(program, options.paramsIn, paramData, error,
                  otherGraphState(programs, program)))
    return fail(kInputError, error);
  // Every output path is checked before the first step.
  if ((!options.paramsOut.empty() &&
       (!makeDirectory("--params-out", options.paramsOut, error) ||
        !checkWritableDir("--params-out", options.paramsOut, error))) ||
      (!options.outputsOut.empty() &&
       (!makeDirectory("--outputs-out", options.outputsOut, error) ||
        !checkWritableDir("--outputs-out", options.outputsOut, error))) ||
      (!options.save.empty() &&
       !checkWritableFile("--save", options.save, error)) ||
      (!options.log.empty() &&
       !checkWritableFile("--log", options.log, error)) ||
      (!options.profileJson.empty() &&
       !checkWritableFile("--profile-json", options.profileJson, error)))
    return fail(kInputError, error);
  return kOk;
}

/// The executors of the graph run and of the eval graph, with the inputs
/// and parameters read.
int TrainingRun::startExecutors() {
  ex = Executor::create(program, options.cuda, options.seed, error);
  if (!ex)
    return fail(kRuntimeError, error);
  for (auto &[slot, data] : inputData)
    if (!ex->writeSlot(slot, data.data(), data.size(), error))
      return fail(kRuntimeError, error);
  for (auto &[slot, data] : paramData)
    if (!ex->writeSlot(slot, data.data(), data.size(), error))
      return fail(kRuntimeError, error);
  // O2's model copies follow the masters --params-in wrote.
  if (!paramData.empty() && !ex->refreshModelCopies(error))
    return fail(kRuntimeError, error);
  // Each rank's synthetic batch differs (its own stream of the seed).
  uint64_t inputSeed = options.seed;
  if (world)
    inputSeed += 0x9e3779b97f4a7c15ull * uint64_t(world->rank());
  if (!ex->synthesizeInputs(given, inputSeed, error))
    return fail(kRuntimeError, error);
  if (evalProgram) {
    evalEx = Executor::create(*evalProgram, options.cuda, options.seed, error);
    if (!evalEx || !evalEx->synthesizeInputs(evalGiven, options.seed, error))
      return fail(kRuntimeError, error);
  }
  return kOk;
}

// Checkpoints hold every graph's params and buffers (SharedState.h).
// Under ranks every save is preceded by the replica checksum (all ranks
// take part; `checked` when the caller has just run it), and only rank 0
// writes.
bool TrainingRun::saveCheckpoint(bool checked) {
  if (world && !checked && !world->checkReplicas(*ex, program, error))
    return false;
  if (!onRank0())
    return true;
  std::vector<StateEntry> extra;
  if (!otherGraphEntries(programs, program, evalEx.get(), evalProgram,
                         options.cuda, options.seed, extra, error))
    return false;
  if (!ex->save(options.save, pos, error, extra)) {
    error = "--save: " + error;
    return false;
  }
  return true;
}

/// --load: the state and the position a checkpoint holds.
int TrainingRun::loadCheckpoint() {
  if (!options.load.empty()) {
    std::string note;
    if (!ex->load(options.load, pos, note, error,
                  otherGraphState(programs, program)))
      return fail(kInputError, error);
    // What only the eval graph declares comes from the checkpoint too.
    if (evalProgram && llvm::any_of(otherGraphState(programs, program),
                                    [&](const std::string &name) {
                                      return llvm::any_of(
                                          evalProgram->slots,
                                          [&](const rt::Slot &s) {
                                            return s.name == name;
                                          });
                                    })) {
      Position evalPos;
      std::string evalNote;
      if (!evalEx->load(options.load, evalPos, evalNote, error))
        return fail(kInputError, error);
    }
    if (!note.empty() && launcherRank() == 0)
      llvm::errs() << "ampc: note: --load: " << note << "\n";
  }
  return kOk;
}

/// Under ranks: rank 0's state to every rank, the communicator on the
/// executor's context.
int TrainingRun::shareAcrossRanks() {
  if (!world)
    return kOk;
  if (!world->broadcastState(*ex, program, error) ||
      !world->shareCommunicator(*ex, error))
    return fail(kRuntimeError, error);
  // A step without minimize can still all-reduce returned gradients:
  // attached too, so the summary counts its calls.
  if ((program.training || ex->collectiveCalls() > 0) &&
      !world->attach(*ex, error))
    return fail(kRuntimeError, error);
  return kOk;
}

/// The learning-rate schedule's counter and how many steps this run takes
/// (under ranks: the same on every rank).
int TrainingRun::planSteps() {
  // A learning-rate schedule: the log's "lr" follows its counter on the
  // host (read once here, then advanced by every update not skipped), so
  // logging it costs no device read.
  schedule = findSchedule(program);
  if (schedule && schedule->counterSlot >= 0) {
    std::vector<char> bytes;
    if (!ex->readSlot(schedule->counterSlot, bytes, error))
      return fail(kRuntimeError, error);
    int32_t count = 0;
    std::memcpy(&count, bytes.data(), std::min(bytes.size(), sizeof(count)));
    scheduleCount = count;
  }

  // How many steps this run takes.
  // Under W ranks an epoch has floor(N / (W * B)) batches.
  perEpoch =
      datasets.empty()
          ? 0
          : datasets.front().samples / (ranks * datasets.front().batch);
  // With accumulation an epoch is floor(batches / K) updates of K
  // micro-batches; the remaining batches are dropped, as incomplete batches
  // are. pos.batch counts batches (micro-batches) either way.
  if (micro > 1 && !datasets.empty()) {
    if (perEpoch < micro)
      return fail(kInputError,
                  "--data: an epoch of " + std::to_string(perEpoch) +
                      " batches holds no update of " + std::to_string(micro) +
                      " micro-batches (accumulate = " + std::to_string(micro) +
                      ")");
  }
  // The epoch's batches; an update needs `micro` of them that are left.
  batchesInEpoch = perEpoch;
  if (micro > 1)
    perEpoch = perEpoch / micro * micro;
  if (perEpoch > 0 && epochEnds()) {
    // A checkpoint of a run over a larger dataset: start the next epoch.
    ++pos.epoch;
    pos.batch = 0;
  }
  steps = 1;
  if (program.training) {
    if (options.stepsGiven || datasets.empty()) {
      steps = options.steps;
    } else {
      int64_t epochs = options.epochs > 0 ? options.epochs : 1;
      // (A checkpoint of another K may sit between update boundaries.)
      steps = (epochs - pos.epoch) * (perEpoch / micro) +
              (batchesInEpoch - pos.batch) / micro;
      if (steps <= 0)
        return fail(kInputError,
                    "--epochs " + std::to_string(epochs) + ": checkpoint '" +
                        options.load + "' is at epoch " +
                        std::to_string(pos.epoch) + ", nothing is left to run");
    }
  }

  // Under ranks, what the run's length and data come from must agree too
  // (a --data file of other N, a --load of another position), or a rank
  // would finish its steps while the others wait in a collective.
  if (world) {
    std::vector<std::pair<std::string, std::string>> plan = {
        {"--data samples",
         datasets.empty() ? "none" : std::to_string(datasets.front().samples)},
        {"the starting position (update, epoch, batch)",
         std::to_string(pos.steps) + ", " + std::to_string(pos.epoch) + ", " +
             std::to_string(pos.batch)},
        {"updates to run", std::to_string(steps)}};
    if (!world->checkFingerprint(plan, error)) {
      gWorld = nullptr;
      llvm::errs() << "ampc: error: rank " + std::to_string(world->rank()) +
                          ": " + error + "\n";
      return kRuntimeError;
    }
  }
  return kOk;
}

/// --log, created before the first step.
int TrainingRun::openLog() {
  if (!options.log.empty()) {
    log = std::fopen(options.log.c_str(), "w");
    if (!log) {
      int err = errno;
      return fail(kInputError, "--log: cannot create '" + options.log +
                                   "': " + std::strerror(err));
    }
  }
  return kOk;
}

// The first failed write's reason; no line is written after it.
void TrainingRun::logLine(const std::string &line) {
  if (!log || logErrno)
    return;
  // One write and a flush per line: a reader (or a crash) never sees half
  // of one.
  std::string whole = line + "\n";
  errno = 0;
  if (std::fwrite(whole.data(), 1, whole.size(), log) != whole.size() ||
      std::fflush(log) != 0)
    logErrno = errno ? errno : EIO;
  else
    logBytes += whole.size();
}

/// The loss scale the next step uses.
bool TrainingRun::scaleOfStep(double &value) {
  if (program.scaleSlot < 0) {
    value = program.staticScale;
    return true;
  }
  return ex->readScale(value, error);
}

/// The eval pass: every full batch of the eval set, the mean of each
/// scalar output, one log line.
bool TrainingRun::runEval(int64_t epoch) {
  lastEvalAt = pos.steps;
  if (!evalEx->copySharedFrom(*ex, error))
    return false;
  const Dataset &first = evalSets.front();
  int64_t batches = first.samples / first.batch;
  std::vector<int64_t> order(first.samples);
  for (int64_t i = 0; i < first.samples; ++i)
    order[i] = i;
  std::vector<double> sums(evalProgram->outputs.size(), 0.0);
  std::vector<bool> scalar(evalProgram->outputs.size(), false);
  for (int64_t b = 0; b < batches; ++b) {
    if (!feedBatch(*evalEx, evalSets, order, b * first.batch, error) ||
        !evalEx->step(error))
      return false;
    // Device-side checks (labels, ids): read with the batch's outputs.
    if (!checkIndices(*evalEx, *evalProgram, pos.steps, error,
                      evalLocated))
      return false;
    for (size_t i = 0; i < evalProgram->outputs.size(); ++i) {
      std::vector<double> values;
      if (!evalEx->readOutput(i, values, error))
        return false;
      scalar[i] = values.size() == 1;
      if (scalar[i])
        sums[i] += values[0];
    }
  }
  std::string line = "{\"eval\": " + jstr(evalProgram->name) +
                     ", \"epoch\": " + std::to_string(epoch) +
                     ", \"step\": " + std::to_string(pos.steps) +
                     ", \"samples\": " +
                     std::to_string(batches * first.batch);
  auto graphNames = options.outputNames.find(evalProgram->name);
  for (size_t i = 0; i < evalProgram->outputs.size(); ++i) {
    if (!scalar[i])
      continue;
    int64_t index = evalProgram->outputs[i].index;
    std::string name = "output_" + std::to_string(index);
    if (graphNames != options.outputNames.end() && index >= 0 &&
        index < static_cast<int64_t>(graphNames->second.size()) &&
        !graphNames->second[index].empty())
      name = graphNames->second[index];
    line += ", " + jstr(name) + ": " + jnum(sums[i] / batches);
  }
  logLine(line + "}");
  if (!log || tty) {
    // Without a log, eval results go to stderr.
    llvm::errs() << (tty ? "\n" : "") << "ampc: " << line << "}\n";
  }
  return true;
}

/// The order of this epoch's samples.
void TrainingRun::prepareOrder() {
  if (orderEpoch == pos.epoch)
    return;
  orderEpoch = pos.epoch;
  int64_t n = datasets.front().samples;
  if (options.shuffle) {
    order = epochOrder(options.seed, pos.epoch, n);
  } else {
    order.resize(n);
    for (int64_t i = 0; i < n; ++i)
      order[i] = i;
  }
}

/// What the step loop needs: the signal rule, the plan of the step reads,
/// the overflow report's replay.
int TrainingRun::prepareLoop() {
  tty = isatty(STDERR_FILENO) && onRank0();
  // SIGINT / SIGTERM (ampc/interrupt.h): the running step finishes and what
  // was asked for is written; a signal more than 2 s after the first exits at
  // once, naming the outputs it leaves unwritten (rank 0 names them).
  signals.emplace();
  Interruption::setQuiet(!onRank0());
  pendingSave = wantSave && onRank0()
                        ? Interruption::expect("--save '" + options.save + "'")
                        : -1;
  pendingParams =
      options.paramsOut.empty()
          ? -1
          : Interruption::expect("--params-out '" + options.paramsOut + "'");
  pendingOutputs =
      options.outputsOut.empty()
          ? -1
          : Interruption::expect("--outputs-out '" + options.outputsOut + "'");
  firstEpoch = pos.epoch;
  // Without ranks, a step's scalars (loss, skipped, next scale, index check)
  // come in one asynchronous read (LateStep.h), read one step late: the line
  // of step k is written once step k + 1 is queued. A skipped step is
  // replayed for the overflow report from the device-side snapshot of the
  // state it started from, which the next step does not touch, so the
  // report does not make the reads wait. With ranks every rank reads at
  // once, to reach the loss all-reduce together.
  const char *readsEnv = std::getenv("AMPC_STEP_READS");
  bool atOnce = readsEnv && std::string(readsEnv) == "at-once";
  plan = planStepReads(program, options.overflowReport, bool(world), atOnce);
  packed = plan.packed;
  late = plan.late;
  if (plan.snapshot && !ex->enableSnapshot(error))
    return fail(kRuntimeError, error);
  // Which op overflowed in a skipped step (Provenance.cpp): both paths ask
  // here; with ranks, the ranks agree on the first one.
  // AMPC_CHECK_REPLAY=1: each replay must compute its step's loss bit for
  // bit (the replay is the step), else the run fails.
  checkReplay = std::getenv("AMPC_CHECK_REPLAY") != nullptr;
  if (checkReplay)
    ex->keepReplayOutputs(true);
  // With accumulation (no snapshot) the replay runs at once from the
  // state the skipped update left, micro-batch by micro-batch (`feedMicro`),
  // and `micro` is the micro-batch (from 0) of the op found.
  pending.emplace(program.scaleSlot >= 0);
  if ((options.profile || !options.profileJson.empty()) &&
      !ex->enableProfile(error))
    return fail(kRuntimeError, error);
  t0 = std::chrono::steady_clock::now();
  // The loss is the graph's first output when it is a scalar; a graph
  // whose first output is not one has no loss to log or summarise.
  int64_t firstOutputElements = 0;
  if (!program.outputs.empty()) {
    firstOutputElements = 1;
    for (int64_t d : program.outputs.front().shape)
      firstOutputElements *= d;
  }
  hasLoss = micro > 1 || firstOutputElements == 1;
  feedMicro = [this](int64_t j) -> bool {
    return datasets.empty() || feedBatch(*ex, datasets, order, microOffsets[j],
                                         error, ranks, myRank);
  };
  return kOk;
}

/// Which op overflowed in a skipped step (Provenance.cpp).
bool TrainingRun::overflowOf(uint64_t serial, int64_t shown, bool skipped,
                             double loss, double scale,
                             const rt::CallSource *&overflow,
                             int64_t &microAt) {
  overflow = nullptr;
  microAt = -1;
  if (!skipped || !plan.report)
    return true;
  bool found =
      plan.snapshot
          ? findOverflowFromSnapshot(*ex, program, serial, overflow, error)
          : findOverflow(*ex, program, scale, overflow, error,
                         micro > 1 ? &feedMicro : nullptr, &microAt);
  if (!found || (world && !agreeOnOverflow(*world, program, overflow, error)))
    return false;
  if (checkReplay && !world && !program.outputs.empty()) {
    std::vector<double> again = ex->replayedOutput(0);
    if (again.size() != 1 ||
        !(again[0] == loss || (std::isnan(again[0]) && std::isnan(loss)))) {
      error = "AMPC_CHECK_REPLAY: the replay of step " +
              std::to_string(shown) + " computed the loss " +
              (again.size() == 1 ? fmt(again[0]) : std::string("(none)")) +
              ", the step " + fmt(loss);
      return false;
    }
    ++replaysChecked;
  }
  return true;
}

// Logs step k's line (and the progress line) from its scalars.
void TrainingRun::record(int64_t k, int64_t epoch, int64_t shown, double used,
                         double loss, bool skipped,
                         const rt::CallSource *overflow) {
  // The default group's rate of this update: records come in step order,
  // so scheduleCount counts the updates before step k that were applied.
  double lr = schedule ? schedule->rate(scheduleCount) : 0.0;
  skippedCount += skipped;
  scheduleCount += schedule && !skipped;
  if (k == 0)
    firstLoss = loss;
  lastLoss = loss;
  {
    // A forward-only graph logs its one pass as step 1.
    std::string line = "{\"step\": " + std::to_string(shown);
    if (!datasets.empty())
      line += ", \"epoch\": " + std::to_string(epoch);
    if (hasLoss)
      line += ", \"loss\": " + jnum(loss);
    if (schedule)
      line += ", \"lr\": " + jnum(lr);
    if (scaler)
      line += ", \"loss_scale\": " + jnum(used) +
              ", \"skipped\": " + (skipped ? "true" : "false");
    if (overflow) {
      std::string json = overflowJson(*overflow);
      // With accumulation: which micro-batch of the update (from 1).
      if (micro > 1 && lastOverflowMicro >= 0)
        json.insert(json.size() - 1, ", \"micro_batch\": " +
                                         std::to_string(lastOverflowMicro + 1));
      line += ", \"overflow\": " + json;
    }
    logLine(line + "}");
  }
  if (tty) {
    double secs = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
    std::fprintf(stderr, "\rstep %lld/%lld", (long long)shown,
                 (long long)(shown - k - 1 + steps));
    if (!datasets.empty())
      std::fprintf(stderr, "  epoch %lld", (long long)epoch);
    std::fprintf(stderr, "  loss %.6g", loss);
    if (scaler)
      std::fprintf(stderr, "  scale %g  skipped %lld", used,
                   (long long)skippedCount);
    std::fprintf(stderr, "  %.1f steps/s   ", (k + 1) / std::max(secs, 1e-9));
    std::fflush(stderr);
  }
}

// Writes the lines of all queued reads but the newest `keep`. A failed
// index check (read with the loss) ends the run: checkIndices re-reads the
// sticky word for its diagnostic.
bool TrainingRun::flushLate(size_t keep) {
  for (;;) {
    LateStep::Record r;
    if (!pending->take(*ex, keep, r, error))
      return false;
    if (!r.valid)
      return true;
    // Late: a later step was queued before this step's read was taken.
    ++(pending->queued() > 0 ? readsLate : readsAtOnce);
    if (r.checkSite >= 0 &&
        !checkIndices(*ex, program, r.shown, error, lateLocated))
      return false;
    const rt::CallSource *overflow = nullptr;
    int64_t microAt = -1;
    if (!overflowOf(r.serial, r.shown, r.skipped, r.loss, r.scale, overflow,
                    microAt))
      return false;
    record(r.k, r.epoch, r.shown, r.scale, r.loss, r.skipped, overflow);
  }
}

// Gradient accumulation: one update is K micro-batches, each a batch of
// the data; the log's loss is the mean of their losses. Their offsets in
// the epoch's order are kept for the overflow report's replay.
bool TrainingRun::accumulatedStep() {
  microOffsets.clear();
  double sum = 0.0;
  bool scalarLoss = !program.outputs.empty();
  for (int64_t j = 0; j < micro; ++j) {
    if (!datasets.empty()) {
      prepareOrder();
      microOffsets.push_back(pos.batch * datasets.front().batch);
      if (!feedBatch(*ex, datasets, order, microOffsets.back(), error,
                     ranks, myRank))
        return false;
    }
    if (!ex->microStep(error))
      return false;
    if (scalarLoss) {
      std::vector<double> values;
      if (!ex->readOutput(0, values, error))
        return false;
      scalarLoss = values.size() == 1;
      if (scalarLoss)
        sum += values[0];
    }
    if (!datasets.empty() && j + 1 < micro)
      ++pos.batch;
  }
  microLoss = scalarLoss ? sum / double(micro) : NAN;
  return ex->update(error);
}

// Under ranks a signal stops the job after the step every rank agreed on
// in the loss all-reduce (World::meanOf), never mid-collective.
int TrainingRun::stepLoop() {
  for (int64_t k = 0;
       k < steps && !(world ? jobSignal : Interruption::signal()); ++k)
    if (int code = oneStep(k))
      return code;
  return kOk;
}

/// Step k of the run: its data, the step, its line, and a save or an eval
/// when they are due.
int TrainingRun::oneStep(int64_t k) {
  int64_t epoch = pos.epoch;
  // With accumulation the micro-batches are fed in accumulatedStep.
  if (micro == 1 && !datasets.empty()) {
    prepareOrder();
    if (!feedBatch(*ex, datasets, order, pos.batch * datasets.front().batch,
                   error, ranks, myRank))
      return fail(kRuntimeError, error);
  }
  // Packed reads learn a dynamic scale from the previous step's read.
  if (scaler && (!packed || k == 0 || program.scaleSlot < 0) &&
      !scaleOfStep(scale))
    return fail(kRuntimeError, error);
  uint64_t syncsBefore = ex->hostSyncs();
  if (micro > 1 ? !accumulatedStep() : !ex->step(error))
    return fail(kRuntimeError, error);
  syncsInSteps += ex->hostSyncs() - syncsBefore;
  ++taken;
  // The profile leaves the first step out (warm caches, first touches of
  // memory) when there are more; it is kept for a run of one.
  if (taken == 1 && !ex->profile().empty()) {
    firstProfile = ex->profile();
    ex->resetProfile();
    firstStepSecs = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  }
  if (program.training)
    ++pos.steps;
  if (world && !world->testDivergence(*ex, program, pos.steps, error))
    return fail(kRuntimeError, error);
  bool epochDone = false;
  if (!datasets.empty() && (++pos.batch, epochEnds())) {
    ++pos.epoch;
    pos.batch = 0;
    epochDone = true;
  }
  int64_t shown = program.training ? pos.steps : taken;
  if (packed) {
    if (!pending->queue(*ex, k, epoch, shown, scale, error))
      return fail(kRuntimeError, error);
    if (!flushLate(late ? 1 : 0))
      return failChecked(kRuntimeError, error, lateLocated);
  } else {
    double loss = NAN;
    std::vector<double> values;
    if (micro > 1) {
      loss = microLoss;
    } else if (!program.outputs.empty()) {
      if (!ex->readOutput(0, values, error))
        return fail(kRuntimeError, error);
      if (values.size() == 1)
        loss = values[0];
    }
    jobSignal = Interruption::signal();
    if (world && !world->meanOf(loss, jobSignal, error))
      return fail(kRuntimeError, error);
    // Device-side checks (labels, ids): read with the loss.
    bool located = false;
    if (!checkIndices(*ex, program, shown, error, located))
      return failChecked(kRuntimeError, error, located);
    bool skipped = false;
    if (bool(program.foundInf) && !ex->readSkipped(skipped, error))
      return fail(kRuntimeError, error);
    const rt::CallSource *overflow = nullptr;
    int64_t overflowMicro = -1;
    if (!overflowOf(ex->stepsTaken() - 1, shown, skipped, loss, scale,
                    overflow, overflowMicro))
      return fail(kRuntimeError, error);
    // With ranks the op may come from another rank's replay: no
    // micro-batch then.
    lastOverflowMicro = world ? -1 : overflowMicro;
    record(k, epoch, shown, scale, loss, skipped, overflow);
  }
  bool saveNow = options.saveEvery > 0 && program.training &&
                 pos.steps % options.saveEvery == 0 && k + 1 < steps;
  bool evalNow = evalEx && (epochDone || (options.evalEvery > 0 &&
                                          pos.steps % options.evalEvery == 0));
  // Saving and eval read the state anyway: this step's line comes first.
  if ((saveNow || evalNow) && late && !flushLate(0))
    return failChecked(kRuntimeError, error, lateLocated);
  if (saveNow && !saveCheckpoint(false))
    return fail(kRuntimeError, error);
  // Eval runs on rank 0 alone, over the whole eval set; the other ranks
  // go on to the next step and wait for rank 0 in its first collective.
  if (evalNow && onRank0())
    if (!runEval(epochDone ? epoch : pos.epoch))
      return failChecked(kRuntimeError, error, evalLocated);
  return kOk;
}

/// After the last step: the lines still to write, the reports asked for
/// by environment variables, the last eval, the log closed.
int TrainingRun::finishSteps() {
  if (late && !flushLate(0))
    return failChecked(kRuntimeError, error, lateLocated);
  if (std::getenv("AMPC_REPORT_SYNCS")) {
    llvm::errs() << "ampc: host synchronisations: " << syncsInSteps
                 << " inside " << taken << " steps, " << ex->hostSyncs()
                 << " in the run so far\n";
    if (packed)
      llvm::errs() << "ampc: step reads: " << readsLate
                   << " taken after the next step was queued, " << readsAtOnce
                   << " before\n";
    if (ex->hasSnapshot())
      llvm::errs() << "ampc: overflow-report snapshot: "
                   << ex->snapshotBytes() << " bytes\n";
  }
  if (checkReplay)
    llvm::errs() << "ampc: " << replaysChecked
                 << " replays, each computed its step's loss bit for bit\n";
  interrupted = world ? jobSignal : Interruption::signal();
  // The end of a --steps run (or of an interrupted one) gets an eval too.
  if (evalEx && onRank0() && lastEvalAt != pos.steps && !interrupted &&
      !runEval(pos.batch == 0 && !datasets.empty() ? pos.epoch - 1
                                                   : pos.epoch))
    return failChecked(kRuntimeError, error, evalLocated);
  if (tty)
    std::fprintf(stderr, "\n");
  secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (log) {
    errno = 0;
    if (std::fclose(log) != 0 && !logErrno)
      logErrno = errno ? errno : EIO;
    if (logErrno) {
      // A log that never got a line (a full disk) is not left behind empty.
      if (logBytes == 0 && llvm::sys::fs::is_regular_file(options.log))
        llvm::sys::fs::remove(options.log);
      // Reported now; the checkpoint and the other outputs are still
      // written (or their own failures reported), then the run exits 3.
      llvm::errs() << "ampc: error: --log: cannot write '" + options.log +
                          "': " + std::strerror(logErrno) + "\n";
    }
  }
  return kOk;
}

/// --save, --params-out and --outputs-out.
int TrainingRun::writeOutputs() {
  if (world && !world->checkReplicas(*ex, program, error))
    return fail(kRuntimeError, error);
  if (wantSave && !saveCheckpoint(/*checked=*/bool(world)))
    return fail(kRuntimeError, error);
  Interruption::written(pendingSave);
  if (!options.paramsOut.empty()) {
    std::vector<std::pair<std::string, std::string>> files;
    std::vector<size_t> saved = paramSlots(program);
    for (size_t i : bufferSlots(program))
      saved.push_back(i);
    for (size_t i : saved) {
      const rt::Slot &slot = program.slots[i];
      std::vector<char> bytes;
      if (!ex->readSlot(i, bytes, error))
        return fail(kRuntimeError, error);
      files.push_back(
          {joinPath(options.paramsOut, slot.name + ".npy"),
           encodeNpy(slot.dtype, slot.shape, bytes.data(), bytes.size())});
    }
    // And what only the file's other graphs declare.
    std::vector<StateEntry> extra;
    if (!otherGraphEntries(programs, program, evalEx.get(), evalProgram,
                           options.cuda, options.seed, extra, error))
      return fail(kRuntimeError, "--params-out: " + error);
    for (const StateEntry &e : extra)
      files.push_back(
          {joinPath(options.paramsOut, e.name + ".npy"),
           encodeNpy(e.dtype, e.shape, e.bytes.data(), e.bytes.size())});
    if (!writeFilesAtomically(files, error))
      return fail(kRuntimeError, "--params-out: " + error);
    Interruption::written(pendingParams);
  }
  if (!options.outputsOut.empty() && taken > 0) {
    std::vector<std::pair<std::string, std::string>> files;
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      const rt::Output &o = program.outputs[i];
      std::vector<char> bytes;
      if (!ex->readOutputBytes(i, bytes, error))
        return fail(kRuntimeError, error);
      files.push_back(
          {joinPath(options.outputsOut,
                    "output_" + std::to_string(o.index) + ".npy"),
           encodeNpy(o.dtype, o.shape, bytes.data(), bytes.size())});
    }
    if (!writeFilesAtomically(files, error))
      return fail(kRuntimeError, "--outputs-out: " + error);
    Interruption::written(pendingOutputs);
  }
  return kOk;
}

/// The summary on stdout (rank 0), the exit code.
int TrainingRun::summary() {
  if (logErrno)
    return kRuntimeError;
  if (!onRank0())
    return interrupted ? 128 + interrupted : kOk;
  // A summary on stdout.
  llvm::outs() << program.name << ": " << taken
               << (program.training ? " training steps" : " forward pass");
  if (!datasets.empty() && program.training) {
    int64_t lastEpoch = pos.batch == 0 ? pos.epoch - 1 : pos.epoch;
    llvm::outs() << " (epoch";
    if (lastEpoch > firstEpoch)
      llvm::outs() << "s " << firstEpoch << "-" << lastEpoch;
    else
      llvm::outs() << " " << firstEpoch;
    llvm::outs() << ")";
  }
  if (hasLoss)
    llvm::outs() << ", loss " << fmt(firstLoss) << " -> " << fmt(lastLoss);
  if (scaler) {
    double next = 0.0;
    if (scaleOfStep(next))
      llvm::outs() << ", loss scale " << fmt(next) << ", " << skippedCount
                   << " skipped";
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.1f", taken / std::max(secs, 1e-9));
  llvm::outs() << ", " << rate << " steps/s";
  if (world) {
    char wait[32];
    std::snprintf(wait, sizeof(wait), "%.3f", world->allReduceSeconds());
    llvm::outs() << ", " << world->size() << " ranks, " << wait
                 << " s in gradient all-reduce ("
                 << world->allReduceCount() << " calls)";
    // Of that, the waits, and how many buckets had arrived by their wait
    // (docs/distributed.md, "Progress").
    World::BucketStats b = world->bucketStats();
    std::snprintf(wait, sizeof(wait), "%.3f", b.waitSeconds);
    llvm::outs() << ", " << wait << " s waiting, " << b.doneBeforeWait
                 << " of " << b.waits << " buckets arrived before their wait";
  }
  // The units the GEMMs ran on (docs/runtime.md, "The CPU's GEMM engine").
  char engine[512];
  auto *ctx = static_cast<ampc_context>(ex->context());
  ampc_backend backend;
  if (ctx && ampc_context_backend(ctx, &backend) == AMPC_OK &&
      backend == AMPC_BACKEND_CPU &&
      ampc_context_engine(ctx, engine, sizeof(engine)) == AMPC_OK && *engine)
    llvm::outs() << ", cpu: " << engine;
  llvm::outs() << "\n";
  if (!program.training)
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      std::vector<double> values;
      if (!ex->readOutput(i, values, error))
        return fail(kRuntimeError, error);
      llvm::outs() << "output " << i << ":";
      for (size_t j = 0; j < values.size() && j < 256; ++j)
        llvm::outs() << " " << fmt(values[j]);
      if (values.size() > 256)
        llvm::outs() << " ...";
      llvm::outs() << "\n";
    }
  if (int code = printProfile())
    return code;
  llvm::outs().flush();
  if (interrupted) {
    llvm::errs() << "ampc: note: interrupted by "
                 << (interrupted == SIGINT ? "SIGINT" : "SIGTERM")
                 << " after step " << pos.steps
                 << "; every requested output was written\n";
    return 128 + interrupted;
  }
  return kOk;
}

/// --profile's table after the summary, and the --profile-json file.
int TrainingRun::printProfile() {
  if (ex->profile().empty() || taken == 0)
    return kOk;
  bool many = taken > 1;
  ProfileReport report =
      summarizeProfile(program, many ? ex->profile() : firstProfile,
                       many ? taken - 1 : 1, many,
                       many ? secs - firstStepSecs : firstStepSecs);
  if (options.profile)
    llvm::outs() << profileText(report);
  if (!options.profileJson.empty() &&
      !writeFilesAtomically({{options.profileJson, profileJson(report)}},
                            error, "profile"))
    return fail(kRuntimeError, "--profile-json: " + error);
  return kOk;
}

} // namespace

std::vector<int64_t> ampc::exec::epochOrder(uint64_t seed, int64_t epoch,
                                            int64_t n) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i)
    order[i] = i;
  uint64_t state = seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch));
  auto next = [&]() {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(next() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

int ampc::exec::runModule(ModuleOp module, const RunOptions &options) {
  if (int code = validateOptions(module, options))
    return code;
  std::vector<rt::Program> programs;
  const rt::Program *program = nullptr, *evalProgram = nullptr;
  if (int code =
          lowerAndChoose(module, options, programs, program, evalProgram))
    return code;
  return TrainingRun(options, programs, *program, evalProgram).run();
}
