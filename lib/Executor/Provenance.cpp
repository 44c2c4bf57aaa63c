//===- Provenance.cpp - failed checks and overflows, named by source op ---===//
//
// Device-side checks record a site number in a word of the runtime context
// (ampc_check_read, docs/runtime.md "Check words"); the lowering numbers the
// sites and says, in each call's `rt.source`, which source op a call comes
// from. A step whose update the loss scaler skipped left its parameters and
// optimizer state as they were, so the overflow is found by running the step
// again, up to the gradients' check, with a non-finite check queued after
// every call of a source op: no check runs on a step that was not skipped,
// and the replay waits for the device once, at its end.
//
//===----------------------------------------------------------------------===//

#include "ampc/Executor/Provenance.h"
#include "ampc/Executor/Distributed.h"

#include "ampc/runtime.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace ampc;
using namespace ampc::exec;

namespace {
std::string lastError(const char *what, ampc_status st) {
  std::string e = ampc_last_error();
  return std::string(what) + " failed: " + ampc_status_string(st) +
         (e.empty() ? "" : " (" + e + ")");
}

std::string quoted(const std::string &s) {
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

/// A float tensor a probe checks: where its pointer is among the call's
/// arguments, its dtype and element count.
struct Probe {
  size_t source; ///< index into program.sources (the probe's site)
  size_t arg;
  int32_t dtype;
  int64_t numel;
};

/// The probes of the step's calls, by call index.
std::vector<std::vector<Probe>> probesOf(const rt::Program &program) {
  std::vector<rt::CallOp> calls;
  for (auto call : program.op.getStep().getBody().front().getOps<rt::CallOp>())
    calls.push_back(call);
  std::vector<std::vector<Probe>> probes(calls.size());
  for (auto [k, s] : llvm::enumerate(program.sources)) {
    ArrayAttr args = calls[s.call].getArgs();
    for (int64_t pos : s.results) {
      if (pos + 2 >= static_cast<int64_t>(args.size()))
        continue;
      auto dtype = dyn_cast<rt::DtypeAttr>(args[pos + 1]);
      auto shape = dyn_cast<DenseI64ArrayAttr>(args[pos + 2]);
      if (!dtype || !shape || dtype.getValue() > AMPC_BF16)
        continue;
      int64_t numel = 1;
      for (int64_t d : shape.asArrayRef())
        numel *= d;
      probes[s.call].push_back(
          {k, static_cast<size_t>(pos), dtype.getValue(), numel});
    }
  }
  return probes;
}
} // namespace

bool ampc::exec::checkIndices(Executor &ex, const rt::Program &program,
                              int64_t step, std::string &error, bool &located) {
  located = false;
  // A program without checking kernels has nothing to read.
  if (llvm::none_of(program.sources,
                    [](const rt::CallSource &s) { return s.site >= 0; }))
    return true;
  auto ctx = static_cast<ampc_context>(ex.context());
  int32_t site = -1;
  ampc_status st = ampc_check_read(ctx, AMPC_CHECK_INDEX, 0, &site);
  if (st != AMPC_OK) {
    error = lastError("reading the check word", st);
    return false;
  }
  if (site < 0)
    return true;
  const rt::CallSource *s = program.sourceOfSite(site);
  if (!s) {
    error = "step " + std::to_string(step) +
            ": an index was out of range "
            "in a kernel with check site " +
            std::to_string(site);
    return false;
  }
  std::string what = s->index.empty() ? "an index" : "'" + s->index + "'";
  located = !s->loc.empty();
  error = (located ? s->loc + ": error: " : std::string()) + "step " +
          std::to_string(step) + ": " + s->op + ": " + what +
          " holds a value outside [0, " + std::to_string(s->range) + ")";
  if (s->op == "cross_entropy")
    error += " (a class label; -100 is ignored)";
  return false;
}

bool ampc::exec::findOverflow(Executor &ex, const rt::Program &program,
                              double scale, const rt::CallSource *&found,
                              std::string &error,
                              const std::function<bool(int64_t)> *feedMicro,
                              int64_t *microFound) {
  found = nullptr;
  if (microFound)
    *microFound = -1;
  auto ctx = static_cast<ampc_context>(ex.context());
  // The state the replay may touch (a step's forward can update state, e.g.
  // batch_norm's running statistics in buffers), and the scale the step used: the scaler has backed
  // off since.
  std::vector<std::pair<size_t, std::vector<char>>> saved;
  for (size_t i = 0; i < program.numArgs; ++i) {
    rt::Slot::Role role = program.slots[i].role;
    if (role != rt::Slot::Role::Param && role != rt::Slot::Role::State &&
        role != rt::Slot::Role::Buffer)
      continue;
    saved.push_back({i, {}});
    if (!ex.readSlot(i, saved.back().second, error))
      return false;
  }
  if (program.scaleSlot >= 0) {
    float f = static_cast<float>(scale);
    if (!ex.writeSlot(program.scaleSlot, &f, sizeof(f), error))
      return false;
  }
  int32_t site = -1;
  ampc_status st = ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site);
  std::vector<std::vector<Probe>> probes = probesOf(program);
  bool ok = st == AMPC_OK;
  if (!ok)
    error = lastError("clearing the check word", st);
  // Gradient accumulation: each micro-batch of the update in turn, up to
  // the update, until one holds a non-finite value.
  bool accumulated = program.accumulate > 1 && feedMicro;
  auto probe = [&](size_t call) {
    for (const Probe &p : probes[call]) {
      ampc_status s = ampc_check_nonfinite(
          ctx, ex.callPointer(call, p.arg),
          static_cast<ampc_dtype>(p.dtype), p.numel,
          static_cast<int32_t>(p.source));
      if (s != AMPC_OK) {
        error = lastError("ampc_check_nonfinite", s);
        return false;
      }
    }
    return true;
  };
  for (int64_t j = 0; ok && j < (accumulated ? program.accumulate : 1); ++j) {
    if (accumulated && !(*feedMicro)(j)) {
      ok = false;
      break;
    }
    ok = ex.replay(accumulated ? program.updateCall : program.checkCall, probe,
                   error);
    if (ok) {
      st = ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site);
      if (st != AMPC_OK) {
        error = lastError("reading the check word", st);
        ok = false;
      }
    }
    if (ok && site >= 0) {
      if (microFound && accumulated)
        *microFound = j;
      break;
    }
  }
  // Whatever happened, the state is put back as the skipped step left it.
  for (auto &[slot, bytes] : saved) {
    std::string restoreError;
    if (!ex.writeSlot(slot, bytes.data(), bytes.size(), restoreError) && ok) {
      error = restoreError;
      ok = false;
    }
  }
  if (ok && site >= 0 && site < static_cast<int32_t>(program.sources.size()))
    found = &program.sources[site];
  return ok;
}

bool ampc::exec::findOverflowFromSnapshot(Executor &ex,
                                          const rt::Program &program,
                                          uint64_t serial,
                                          const rt::CallSource *&found,
                                          std::string &error) {
  found = nullptr;
  auto ctx = static_cast<ampc_context>(ex.context());
  // The snapshot holds the state and the loss scale the step started from;
  // the replay reads and writes it in place of the live slots, so nothing
  // is saved or restored here.
  int32_t site = -1;
  ampc_status st = ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site);
  if (st != AMPC_OK) {
    error = lastError("clearing the check word", st);
    return false;
  }
  std::vector<std::vector<Probe>> probes = probesOf(program);
  if (!ex.replaySnapshot(
          serial, program.checkCall,
          [&](size_t call) {
            for (const Probe &p : probes[call]) {
              ampc_status s = ampc_check_nonfinite(
                  ctx, ex.callPointer(call, p.arg),
                  static_cast<ampc_dtype>(p.dtype), p.numel,
                  static_cast<int32_t>(p.source));
              if (s != AMPC_OK) {
                error = lastError("ampc_check_nonfinite", s);
                return false;
              }
            }
            return true;
          },
          error))
    return false;
  st = ampc_check_read(ctx, AMPC_CHECK_NONFINITE, 1, &site);
  if (st != AMPC_OK) {
    error = lastError("reading the check word", st);
    return false;
  }
  if (site >= 0 && site < static_cast<int32_t>(program.sources.size()))
    found = &program.sources[site];
  return true;
}

bool ampc::exec::agreeOnOverflow(World &world, const rt::Program &program,
                                 const rt::CallSource *&found,
                                 std::string &error) {
  int64_t mine = found ? found - program.sources.data() : -1;
  int64_t first = -1;
  // Each rank's index in turn, through the mean (exact for these sizes).
  for (int r = 0; r < world.size(); ++r) {
    double v = world.rank() == r ? static_cast<double>(mine) : 0.0;
    if (!world.meanOf(v, error))
      return false;
    int64_t theirs = std::llround(v * world.size());
    if (theirs >= 0 && (first < 0 || theirs < first))
      first = theirs;
  }
  // A skipped step where no rank's own op held a non-finite value: the sum
  // over the ranks overflowed (a 16-bit bucket's rounding, or finite
  // 16-bit parts whose sum is not): the all-reduce's wait is the first op
  // whose result held it (docs/distributed.md).
  if (first < 0)
    for (const rt::CallSource &s : program.sources)
      if (s.op == "grad_allreduce_wait") {
        first = &s - program.sources.data();
        break;
      }
  found = first >= 0 && first < static_cast<int64_t>(program.sources.size())
              ? &program.sources[first]
              : nullptr;
  return true;
}

std::string ampc::exec::overflowJson(const rt::CallSource &s) {
  return "{\"op\": " + quoted(s.op) +
         ", \"name\": " + (s.name.empty() ? "null" : quoted(s.name)) +
         ", \"loc\": " + (s.loc.empty() ? "null" : quoted(s.loc)) +
         ", \"pass\": " + (s.backward ? "\"backward\"" : "\"forward\"") + "}";
}
