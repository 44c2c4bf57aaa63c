//===- Run.cpp - `ampc run` -------------------------------------------------===//

#include "ampc/Executor/Run.h"
#include "ampc/Executor/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

using namespace mlir;
using namespace ampc;
using namespace ampc::exec;

namespace {
enum { kOk = 0, kInputError = 1, kUsageError = 2, kRuntimeError = 3 };

int fail(int code, const std::string &msg) {
  llvm::errs() << "ampc: error: " << msg << "\n";
  return code;
}

const char *npyDescr(int32_t dtype) {
  switch (dtype) {
  case 0:
    return "<f4";
  case 1:
    return "<f2";
  case 3:
    return "<i4";
  case 4:
    return "<i8";
  case 5:
    return "|b1";
  }
  return "";
}

/// Reads a C-order .npy file; checks dtype and shape against the slot.
bool readNpy(const std::string &path, const rt::Slot &slot,
             std::vector<char> &data, std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot read '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  size_t headerLen, start;
  if (s[6] == 1) {
    headerLen = static_cast<uint8_t>(s[8]) | (static_cast<uint8_t>(s[9]) << 8);
    start = 10;
  } else {
    if (s.size() < 12) {
      error = "'" + path + "' is truncated";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<uint8_t>(s[8 + i]))
                   << (8 * i);
    start = 12;
  }
  if (start + headerLen > s.size()) {
    error = "'" + path + "' is truncated";
    return false;
  }
  std::string header = s.substr(start, headerLen);
  std::smatch m;
  std::string descr, shapeText;
  if (std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'")))
    descr = m[1];
  if (std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    shapeText = m[1];
  if (header.find("'fortran_order': True") != std::string::npos) {
    error = "'" + path + "' is in Fortran order (save a C-order array)";
    return false;
  }
  std::vector<int64_t> shape;
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shapeText.begin(), shapeText.end(), num);
       it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  auto shapeStr = [](const std::vector<int64_t> &v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i)
      r += (i ? ", " : "") + std::to_string(v[i]);
    return r + "]";
  };
  std::string want = npyDescr(slot.dtype);
  if (descr != want) {
    error = "input '" + slot.name + "' from '" + path + "': dtype '" + descr +
            "', expected '" + (want.empty() ? "bf16 (no NumPy dtype)" : want) +
            "'";
    return false;
  }
  if (shape != slot.shape) {
    error = "input '" + slot.name + "' from '" + path + "': shape " +
            shapeStr(shape) + ", expected " + shapeStr(slot.shape);
    return false;
  }
  size_t at = start + headerLen;
  if (s.size() - at != static_cast<size_t>(slot.bytes)) {
    error = "'" + path + "' holds " + std::to_string(s.size() - at) +
            " data bytes, expected " + std::to_string(slot.bytes);
    return false;
  }
  data.assign(s.begin() + at, s.end());
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

int ampc::exec::runModule(ModuleOp module, const RunOptions &options) {
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return fail(kInputError, "no graph to run");
  func::FuncOp func = *funcs.begin();
  FailureOr<rt::Program> lowered = rt::lowerToRuntime(func);
  if (failed(lowered))
    return kInputError;
  const rt::Program &program = *lowered;

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
    if (!readNpy(path, program.slots[slot], data, error))
      return fail(kInputError, error);
    given[slot] = true;
    inputData.push_back({slot, std::move(data)});
  }

  std::string error;
  std::unique_ptr<Executor> ex =
      Executor::create(program, options.cuda, options.seed, error);
  if (!ex)
    return fail(kRuntimeError, error);
  for (auto &[slot, data] : inputData)
    if (!ex->setInput(slot, data.data(), data.size(), error))
      return fail(kRuntimeError, error);
  if (!ex->synthesizeInputs(given, options.seed, error))
    return fail(kRuntimeError, error);

  int64_t done = 0;
  if (!options.load.empty() && !ex->load(options.load, done, error))
    return fail(kInputError, error);

  std::unique_ptr<std::ofstream> log;
  if (!options.log.empty()) {
    log = std::make_unique<std::ofstream>(options.log, std::ios::trunc);
    if (!*log)
      return fail(kInputError, "cannot write '" + options.log + "'");
  }
  bool tty = isatty(STDERR_FILENO);
  bool scaler = program.scaleSlot >= 0;
  int64_t steps = program.training ? options.steps : 1;
  int64_t skippedCount = 0;
  double firstLoss = NAN, lastLoss = NAN, scale = 0.0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    if (scaler && !ex->readScale(scale, error))
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
    bool skipped = false;
    if (program.hasFoundInf && !ex->readSkipped(skipped, error))
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
  if (!options.save.empty() && !ex->save(options.save, done, error))
    return fail(kRuntimeError, error);

  // A summary on stdout.
  llvm::outs() << program.name << ": " << steps
               << (program.training ? " training steps" : " forward pass")
               << ", loss " << fmt(firstLoss) << " -> " << fmt(lastLoss);
  if (scaler) {
    double next = 0.0;
    if (ex->readScale(next, error))
      llvm::outs() << ", loss scale " << fmt(next) << ", " << skippedCount
                   << " skipped";
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.1f", steps / std::max(secs, 1e-9));
  llvm::outs() << ", " << rate << " steps/s\n";
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
