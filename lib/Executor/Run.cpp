//===- Run.cpp - `ampc run` -------------------------------------------------===//

#include "ampc/Executor/Run.h"
#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Executor/Distributed.h"
#include "ampc/Executor/Executor.h"
#include "ampc/Executor/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
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
  llvm::errs() << "ampc: error: " << msg << "\n";
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

/// Reads DIR/NAME.npy for every parameter NAME: a file missing, a .npy file
/// that names no parameter, or one of another dtype or shape is an error.
bool readParams(const rt::Program &program, const std::string &dir,
                std::vector<std::pair<size_t, std::vector<char>>> &out,
                std::string &error) {
  std::vector<size_t> params = paramSlots(program);
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
    if (llvm::none_of(params,
                      [&](size_t i) { return program.slots[i].name == stem; }))
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
  return true;
}

/// Creates DIR (and its parents) for an --*-out option.
bool makeDirectory(const std::string &flag, const std::string &dir,
                   std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = flag + ": cannot create directory '" + dir + "': " + ec.message();
    return false;
  }
  return true;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  std::string s = buf;
  if (s == "inf")
    return "Infinity";
  if (s == "-inf")
    return "-Infinity";
  if (s == "nan" || s == "-nan")
    return "NaN";
  return s;
}
} // namespace

int ampc::exec::runModule(ModuleOp module, const RunOptions &givenOptions) {
  RunOptions options = givenOptions;
  if (module.getOps<func::FuncOp>().empty() &&
      module.getOps<rt::ProgramOp>().empty())
    return fail(kInputError, "no graph to run");
  // The step as runtime calls (the IR --emit=lowered prints), unless the
  // module is lowered already.
  if (!module.getOps<func::FuncOp>().empty() &&
      failed(ampc::lowerToRuntime(module)))
    return kInputError;
  const rt::Program program =
      rt::describeProgram(*module.getOps<rt::ProgramOp>().begin());

  // Data parallel (docs/distributed.md): started by mpirun with W > 1 ranks.
  std::unique_ptr<World> world;
  if (launchedUnderMpi()) {
    if (options.cuda)
      return fail(kUsageError, "data-parallel runs on the cuda backend need "
                               "NCCL collectives, which are not built yet; "
                               "use --device=cpu");
    std::string error;
    world = World::join(error);
    if (!world)
      return fail(kRuntimeError, error);
    gWorld = world.get();
    char fp[32];
    std::snprintf(fp, sizeof(fp), "%016llx",
                  (unsigned long long)program.fingerprint);
    if (!world->checkFingerprint(
            {{"compiled step", fp},
             {"--steps", std::to_string(options.steps)},
             {"--seed", std::to_string(options.seed)},
             {"--input", std::to_string(options.inputs.size()) + " given"},
             {"--load", options.load.empty() ? "no" : "yes"},
             {"--params-in", options.paramsIn.empty() ? "no" : "yes"}},
            error)) {
      gWorld = nullptr;
      llvm::errs() << "ampc: error: rank " + std::to_string(world->rank()) +
                          ": " + error + "\n";
      return kRuntimeError;
    }
    if (world->rank() != 0) {
      options.log.clear();
      options.save.clear();
      options.paramsOut.clear();
      options.outputsOut.clear();
    }
  }
  auto onRank0 = [&] { return !world || world->rank() == 0; };

  // Inputs from files, validated before anything runs.
  std::vector<bool> given(program.slots.size(), false);
  std::vector<std::pair<size_t, std::vector<char>>> inputData;
  for (const std::string &spec : options.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail(kUsageError,
                  "--input expects NAME=FILE.npy, got '" + spec + "'");
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    size_t slot = program.slots.size();
    std::string names;
    for (size_t i = 0; i < program.slots.size(); ++i) {
      if (program.slots[i].role != rt::Slot::Role::Input)
        continue;
      names += (names.empty() ? "" : ", ") + program.slots[i].name;
      if (program.slots[i].name == name)
        slot = i;
    }
    if (slot == program.slots.size())
      return fail(kUsageError, "--input: graph '" + program.name +
                                   "' has no input '" + name +
                                   "' (its inputs: " + names + ")");
    std::vector<char> data;
    std::string error;
    const rt::Slot &in = program.slots[slot];
    // Data parallel: a file holding W * B rows for an input of B rows is
    // sharded as --data is: rank r takes rows j * W + r (docs/distributed.md).
    NpyArray whole;
    if (world && !in.shape.empty() && readNpy(path, whole, error) &&
        whole.descr == npyDescr(in.dtype) &&
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
      return fail(kInputError, error);
    }
    given[slot] = true;
    inputData.push_back({slot, std::move(data)});
  }

  std::string error;
  std::vector<std::pair<size_t, std::vector<char>>> paramData;
  if (!options.paramsIn.empty() &&
      !readParams(program, options.paramsIn, paramData, error))
    return fail(kInputError, error);
  if ((!options.paramsOut.empty() &&
       !makeDirectory("--params-out", options.paramsOut, error)) ||
      (!options.outputsOut.empty() &&
       !makeDirectory("--outputs-out", options.outputsOut, error)))
    return fail(kInputError, error);

  std::unique_ptr<Executor> ex =
      Executor::create(program, options.cuda, options.seed, error);
  if (!ex)
    return fail(kRuntimeError, error);
  for (auto &[slot, data] : inputData)
    if (!ex->writeSlot(slot, data.data(), data.size(), error))
      return fail(kRuntimeError, error);
  for (auto &[slot, data] : paramData)
    if (!ex->writeSlot(slot, data.data(), data.size(), error))
      return fail(kRuntimeError, error);
  // Each rank's synthetic batch differs (its own stream of the seed).
  uint64_t inputSeed = options.seed;
  if (world)
    inputSeed += 0x9e3779b97f4a7c15ull * uint64_t(world->rank());
  if (!ex->synthesizeInputs(given, inputSeed, error))
    return fail(kRuntimeError, error);

  int64_t done = 0;
  if (!options.load.empty() && !ex->load(options.load, done, error))
    return fail(kInputError, error);
  if (world) {
    if (!world->broadcastState(*ex, program, error))
      return fail(kRuntimeError, error);
    if (program.training)
      world->attach(*ex);
  }

  std::unique_ptr<std::ofstream> log;
  if (!options.log.empty()) {
    log = std::make_unique<std::ofstream>(options.log, std::ios::trunc);
    if (!*log)
      return fail(kInputError, "cannot write '" + options.log + "'");
  }
  bool tty = isatty(STDERR_FILENO) && onRank0();
  // A scaler is on when the step checks its gradients (dynamic or static).
  bool scaler = bool(program.foundInf);
  auto scaleOfStep = [&](double &value) {
    if (program.scaleSlot < 0) {
      value = program.staticScale;
      return true;
    }
    return ex->readScale(value, error);
  };
  int64_t steps = program.training ? options.steps : 1;
  int64_t skippedCount = 0;
  double firstLoss = NAN, lastLoss = NAN, scale = 0.0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    if (scaler && !scaleOfStep(scale))
      return fail(kRuntimeError, error);
    if (!ex->step(error))
      return fail(kRuntimeError, error);
    ++done;
    double loss = NAN;
    std::vector<double> values;
    if (!program.outputs.empty()) {
      if (!ex->readOutput(0, values, error))
        return fail(kRuntimeError, error);
      if (values.size() == 1)
        loss = values[0];
    }
    if (world && !world->meanOf(loss, error))
      return fail(kRuntimeError, error);
    bool skipped = false;
    if (bool(program.foundInf) && !ex->readSkipped(skipped, error))
      return fail(kRuntimeError, error);
    skippedCount += skipped;
    if (k == 0)
      firstLoss = loss;
    lastLoss = loss;
    if (log) {
      *log << "{\"step\": " << done << ", \"loss\": " << fmt(loss);
      if (scaler)
        *log << ", \"loss_scale\": " << fmt(scale)
             << ", \"skipped\": " << (skipped ? "true" : "false");
      *log << "}\n";
    }
    if (tty) {
      double secs = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
      std::fprintf(stderr, "\rstep %lld/%lld  loss %.6g", (long long)done,
                   (long long)(done - k - 1 + steps), loss);
      if (scaler)
        std::fprintf(stderr, "  scale %g  skipped %lld", scale,
                     (long long)skippedCount);
      std::fprintf(stderr, "  %.1f steps/s   ", (k + 1) / std::max(secs, 1e-9));
      std::fflush(stderr);
    }
  }
  if (tty)
    std::fprintf(stderr, "\n");
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (log) {
    log->flush();
    if (!*log)
      return fail(kRuntimeError, "cannot write '" + options.log + "'");
  }
  if (world && !world->checkReplicas(*ex, program, error))
    return fail(kRuntimeError, error);
  if (!options.save.empty() && !ex->save(options.save, done, error))
    return fail(kRuntimeError, error);
  if (!options.paramsOut.empty()) {
    std::vector<std::pair<std::string, std::string>> files;
    for (size_t i : paramSlots(program)) {
      const rt::Slot &slot = program.slots[i];
      std::vector<char> bytes;
      if (!ex->readSlot(i, bytes, error))
        return fail(kRuntimeError, error);
      files.push_back(
          {joinPath(options.paramsOut, slot.name + ".npy"),
           encodeNpy(slot.dtype, slot.shape, bytes.data(), bytes.size())});
    }
    if (!writeFilesAtomically(files, error))
      return fail(kRuntimeError, "--params-out: " + error);
  }
  if (!options.outputsOut.empty()) {
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
  }

  if (!onRank0())
    return kOk;
  // A summary on stdout.
  llvm::outs() << program.name << ": " << steps
               << (program.training ? " training steps" : " forward pass")
               << ", loss " << fmt(firstLoss) << " -> " << fmt(lastLoss);
  if (scaler) {
    double next = 0.0;
    if (scaleOfStep(next))
      llvm::outs() << ", loss scale " << fmt(next) << ", " << skippedCount
                   << " skipped";
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.1f", steps / std::max(secs, 1e-9));
  llvm::outs() << ", " << rate << " steps/s";
  if (world) {
    char wait[32];
    std::snprintf(wait, sizeof(wait), "%.3f", world->allReduceSeconds());
    llvm::outs() << ", " << world->size() << " ranks, " << wait
                 << " s in gradient all-reduce";
  }
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
  llvm::outs().flush();
  return kOk;
}
