//===- Report.cpp - the AMP report (--emit=report) ------------------------===//
//
// The JSON described in docs/amp.md ("The report"), one object per graph. Written by hand
// rather than with llvm::json so that the layout is one op per line and
// floats keep their `.0` (65536.0, as the spec shows them).
//
//===----------------------------------------------------------------------===//

#include "ampc/Report/Report.h"

#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace ampc;
using namespace ampc::report;

namespace {

/// JSON string literal.
std::string quote(StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

/// The shortest decimal that reads back as `value`, always with a fraction
/// or exponent (65536.0, 0.5, 1e-08 -> 1e-08).
std::string formatDouble(double value) {
  if (!std::isfinite(value))
    return "null";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text(buf);
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

std::string typeName(Type t) {
  if (!t)
    return "null";
  return quote(tg::elementTypeName(getElementTypeOrSelf(t)));
}

std::string quoteOrNull(const std::optional<std::string> &s) {
  return s ? quote(*s) : "null";
}

std::string classOf(Operation *op, const amp::PolicyTable &table) {
  if (isa<tg::CastOp>(op))
    return "\"explicit\"";
  std::optional<amp::OpClass> cls = table.lookup(op->getName().getStringRef());
  return quote(amp::stringifyOpClass(cls.value_or(amp::OpClass::Follow)));
}

/// The less precise of two float types (f32 holds every f16 and bf16; between
/// f16 and bf16 the later conversion decides).
Type narrower(Type earlier, Type later) {
  if (earlier == later || earlier.isF32())
    return later;
  if (later.isF32())
    return earlier;
  return later;
}

/// The precision of the values `v` carries: its element type, except that a
/// widening cast or store keeps the precision of what it widened (an f16
/// value cast to f32 reads as f16). GEMMs store their f32 accumulator, so a
/// GEMM computing in f16 and storing f32 carries f32.
Type effectiveType(Value v) {
  Type t = getElementTypeOrSelf(v.getType());
  Operation *def = v.getDefiningOp();
  if (!tg::isFloatElement(t) || !def)
    return t;
  if (auto cast = dyn_cast<tg::CastOp>(def)) {
    Type source = effectiveType(cast.getInput());
    return tg::isFloatElement(source) ? narrower(source, t) : t;
  }
  if (!isa_and_nonnull<tg::TGDialect>(def->getDialect()) ||
      amp::isGemmLike(def->getName().getStringRef()))
    return t;
  Type compute = tg::getComputeType(def);
  return compute && tg::isFloatElement(compute) ? narrower(compute, t) : t;
}

int64_t bytesOf(Type element) {
  return std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8);
}

void emitLossScale(DictionaryAttr dict, llvm::raw_ostream &os) {
  os << "{";
  bool first = true;
  auto emitEntry = [&](StringRef key, Attribute value) {
    os << (first ? "" : ", ") << quote(key) << ": ";
    first = false;
    if (auto s = dyn_cast<StringAttr>(value))
      os << quote(s.getValue());
    else if (auto f = dyn_cast<FloatAttr>(value))
      os << formatDouble(f.getValueAsDouble());
    else if (auto i = dyn_cast<IntegerAttr>(value))
      os << i.getValue().getSExtValue();
    else if (auto b = dyn_cast<BoolAttr>(value))
      os << (b.getValue() ? "true" : "false");
    else
      os << "null";
  };
  // The order of cli.md; anything else after it, alphabetically.
  static const char *order[] = {"mode",          "init",           "scale",
                                "growth_factor", "backoff_factor", "growth_interval",
                                "hysteresis",    "min_scale",      "max_scale"};
  for (const char *key : order)
    if (Attribute value = dict.get(key))
      emitEntry(key, value);
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(order, entry.getName().getValue()))
      emitEntry(entry.getName().getValue(), entry.getValue());
  os << "}";
}

/// The report's fields of one source op (the text between its braces).
std::string opFields(Operation *op, const ReportOptions &options) {
  bool off = options.amp == "off";
  std::string text;
  llvm::raw_string_ostream os(text);
  StringRef opName = op->getName().stripDialect();
  os << "\"name\": " << quoteOrNull(sourceName(op->getLoc()))
     << ", \"op\": " << quote(opName)
     << ", \"loc\": " << quoteOrNull(sourceLocation(op->getLoc()))
     << ", \"class\": " << classOf(op, options.table)
     << ", \"compute\": " << typeName(tg::getComputeType(op))
     << ", \"result\": "
     << typeName(op->getNumResults() ? op->getResult(0).getType() : Type());
  os << ", \"inputs\": [";
  llvm::interleave(
      op->getOperandTypes(), os, [&](Type t) { os << typeName(t); }, ", ");
  // What the op computes with: the operand's precision, converted on load
  // to the compute type when that is narrower.
  os << "], \"reads\": [";
  Type compute = tg::getComputeType(op);
  llvm::interleave(
      op->getOperands(), os,
      [&](Value v) {
        Type t = effectiveType(v);
        if (tg::isFloatElement(t) && compute && tg::isFloatElement(compute))
          t = narrower(t, compute);
        os << typeName(t);
      },
      ", ");
  os << "]";
  if (auto pin = op->getAttrOfType<TypeAttr>(tg::TGDialect::kPinAttrName))
    os << ", \"pin\": " << typeName(pin.getValue());
  if (auto region =
          op->getAttrOfType<StringAttr>(tg::TGDialect::kRegionAttrName))
    os << ", \"region\": " << quote(region.getValue());
  // Where ampc deliberately departs from torch.autocast, the report says so.
  if (!off && isa<tg::BinaryCrossEntropyOp>(op))
    os << ", \"note\": \"torch.autocast refuses binary_cross_entropy; "
          "ampc computes it in f32\"";
  return text;
}

/// What matches an op across the pipeline: its source location and variable.
std::string opKey(Operation *op) {
  Location loc = op->getLoc();
  return sourceLocation(loc).value_or("?") + "|" +
         sourceName(loc).value_or("");
}

/// The graph's source ops in order.
SmallVector<Operation *> sourceOps(Operation *graph) {
  SmallVector<Operation *> ops;
  graph->walk([&](Operation *op) {
    if (isSourceOp(op))
      ops.push_back(op);
  });
  return ops;
}

/// For each op, the entry it is now: the first entry with its key that an
/// earlier op has not taken; entries.size() for none (an op a pass made).
SmallVector<size_t> matchEntries(const std::vector<SourceOpHistory::Entry> &entries,
                                 ArrayRef<Operation *> ops) {
  llvm::StringMap<SmallVector<size_t>> byKey;
  for (size_t i = 0; i < entries.size(); ++i)
    byKey[entries[i].key].push_back(i);
  llvm::StringMap<size_t> next;
  SmallVector<size_t> place(ops.size(), entries.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    auto it = byKey.find(opKey(ops[i]));
    if (it == byKey.end())
      continue;
    size_t &n = next[it->getKey()];
    if (n < it->second.size())
      place[i] = it->second[n++];
  }
  return place;
}

void emitGraph(func::FuncOp func, const ReportOptions &options,
               llvm::raw_ostream &os, StringRef indent,
               const SourceOpHistory *history) {
  bool off = options.amp == "off";
  os << indent << "{\n";
  os << indent << "  \"graph\": " << quote(func.getSymName()) << ", \"amp\": "
     << quote(options.amp)
     << ", \"policy\": " << (off ? "null" : quote(options.policy));
  if (!options.optLevel.empty())
    os << ", \"opt_level\": " << quote(options.optLevel);
  if (!options.target.empty())
    os << ", \"target\": " << quote(options.target);
  if (!options.ampReason.empty())
    os << ", \"amp_reason\": " << quote(options.ampReason);
  os << ",\n";
  os << indent << "  \"ops\": [";
  bool first = true;
  SmallVector<Operation *> present = sourceOps(func);
  const std::vector<SourceOpHistory::Entry> *removedFrom =
      history ? history->entries(func.getSymName()) : nullptr;
  size_t known = removedFrom ? removedFrom->size() : 0;
  // The entries no op still there took are the ops a pass removed.
  SmallVector<size_t> place = removedFrom
                                  ? matchEntries(*removedFrom, present)
                                  : SmallVector<size_t>(present.size(), 0);
  std::vector<bool> taken(known, false);
  for (size_t p : place)
    if (p < known)
      taken[p] = true;
  auto emitEntry = [&](const std::string &fields) {
    os << (first ? "\n" : ",\n") << indent << "    {" << fields << "}";
    first = false;
  };
  // Removed ops go where the program had them: before the first op still
  // there that came after them.
  size_t removedUpTo = 0;
  auto emitRemovedBefore = [&](size_t limit) {
    for (; removedUpTo < limit; ++removedUpTo)
      if (!taken[removedUpTo])
        emitEntry((*removedFrom)[removedUpTo].text + ", \"removed\": true");
  };
  for (size_t i = 0; i < present.size(); ++i) {
    if (removedFrom && place[i] < known)
      emitRemovedBefore(place[i]);
    emitEntry(opFields(present[i], options));
  }
  emitRemovedBefore(known);
  os << (first ? "],\n" : ("\n" + indent + "  ],\n").str());
  CastTraffic casts = measureCasts(func);
  os << indent << "  \"casts\": {\"count\": " << casts.count
     << ", \"bytes\": " << casts.bytes << "}";
  if (auto scale = func->getAttrOfType<DictionaryAttr>(
          tg::TGDialect::kLossScaleAttrName)) {
    os << ",\n" << indent << "  \"loss_scale\": ";
    emitLossScale(scale, os);
  }
  // Each param's master copy (what the optimizer updates) and the copy the
  // forward reads: under O2 the low model copy (the state argument with
  // `tg.model_of`), else the master itself.
  os << ",\n" << indent << "  \"params\": [";
  bool firstParam = true;
  llvm::StringMap<std::string> modelTypes;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto of = func.getArgAttrOfType<StringAttr>(
            i, tg::TGDialect::kModelOfAttrName))
      modelTypes[of.getValue()] = typeName(func.getArgument(i).getType());
  // The training state one element of a param costs (docs/optimizer.md
  // "Updates of 16-bit params"): the param (its master), its model copy,
  // its optimizer state and its compensation buffer; gradients (and their
  // accumulators) are not counted.
  auto bytesOf = [](Type t) -> int64_t {
    Type e = getElementTypeOrSelf(t);
    return e.isIntOrFloat() ? (e.getIntOrFloatBitWidth() + 7) / 8 : 0;
  };
  llvm::StringMap<int64_t> stateBytes;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto state =
        func.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kStateAttrName);
    if (!state)
      continue;
    auto [owner, suffix] = state.getValue().rsplit('.');
    if (suffix == "momentum_buffer" || suffix == "exp_avg" ||
        suffix == "exp_avg_sq" || suffix == "model" || suffix == "kahan_comp")
      stateBytes[owner] += bytesOf(func.getArgument(i).getType());
  }
  // How the step's update writes each param: its op's `low_update` where
  // the update writes 16-bit values for it (a 16-bit param, or 16-bit
  // momentum / moments); a param and state of f32 or f64 are written in
  // their own type whatever the mode ("nearest").
  DenseMap<Value, StringRef> updateOf;
  auto is16 = [](Value v) {
    return tg::isLowFloatElement(getElementTypeOrSelf(v.getType()));
  };
  func.walk([&](Operation *op) {
    ValueRange params, state;
    if (auto sgd = dyn_cast<tg::SgdUpdateOp>(op)) {
      params = sgd.getParams();
      state = sgd.getMomentumBuffers();
    } else if (auto adamw = dyn_cast<tg::AdamWUpdateOp>(op)) {
      params = adamw.getParams();
      state = adamw.getExpAvgs();
    } else {
      return;
    }
    auto mode = op->getAttrOfType<StringAttr>("low_update");
    for (auto [i, p] : llvm::enumerate(params)) {
      bool writes16 = is16(p) || (i < state.size() && is16(state[i]));
      updateOf[p] = mode && writes16 ? mode.getValue() : StringRef("nearest");
    }
  });
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto name =
        func.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kParamAttrName);
    if (!name)
      continue;
    std::string type = typeName(func.getArgument(i).getType());
    auto model = modelTypes.find(name.getValue());
    auto update = updateOf.find(func.getArgument(i));
    int64_t bytes = bytesOf(func.getArgument(i).getType()) +
                    stateBytes.lookup(name.getValue());
    os << (firstParam ? "" : ", ") << "{\"name\": " << quote(name.getValue())
       << ", \"master\": " << type << ", \"model\": "
       << (model == modelTypes.end() ? type : model->getValue())
       << ", \"update\": "
       << quote(update == updateOf.end() ? StringRef("none")
                                         : update->second)
       << ", \"bytes_per_element\": " << bytes << "}";
    firstParam = false;
  }
  os << "]";
  // Buffer planning (ampc-buffer-planning): the arena against one buffer per
  // intermediate value.
  if (auto arena =
          func->getAttrOfType<IntegerAttr>(tg::TGDialect::kArenaSizeAttrName)) {
    auto sum = func->getAttrOfType<IntegerAttr>(
        tg::TGDialect::kIntermediateBytesAttrName);
    os << ",\n" << indent << "  \"memory\": {\"arena_bytes\": "
       << arena.getInt() << ", \"intermediate_bytes\": "
       << (sum ? sum.getInt() : 0) << "}";
  }
  os << "\n" << indent << "}";
}

} // namespace

std::optional<std::string> ampc::report::sourceLocation(Location loc) {
  auto flc = loc->findInstanceOf<FileLineColLoc>();
  if (!flc)
    return std::nullopt;
  // Line 0: a place without lines, such as an ONNX node (`FILE.onnx:NODE`).
  if (flc.getLine() == 0)
    return flc.getFilename().getValue().str();
  return (flc.getFilename().getValue() + ":" + Twine(flc.getLine()) + ":" +
          Twine(flc.getColumn()))
      .str();
}

std::optional<std::string> ampc::report::sourceName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue().str();
  return std::nullopt;
}

bool ampc::report::isSourceOp(Operation *op) {
  if (!isa_and_nonnull<tg::TGDialect>(op->getDialect()) || isa<tg::ConstantOp>(op))
    return false;
  // Ops a pass made carry their role (tg.role).
  return !getRole(op);
}

CastTraffic ampc::report::measureCasts(Operation *graph) {
  CastTraffic traffic;
  graph->walk([&](tg::CastOp cast) {
    auto in = cast.getInput().getType();
    auto out = cast.getType();
    ++traffic.count;
    traffic.bytes += out.getNumElements() * (bytesOf(in.getElementType()) +
                                             bytesOf(out.getElementType()));
  });
  return traffic;
}

ampc::report::SourceOpHistory::SourceOpHistory(ReportOptions options)
    : opts(std::move(options)) {}

void ampc::report::SourceOpHistory::snapshotGraph(Operation *func) {
  auto graph = dyn_cast<func::FuncOp>(func);
  if (!graph)
    return;
  auto found = graphs.find(graph.getSymName());
  if (found == graphs.end()) {
    std::vector<Entry> &entries = graphs[graph.getSymName()];
    // `minimize` and `grad` are statements that autodiff expands, not ops
    // that a pass removes.
    for (Operation *op : sourceOps(graph))
      if (!isa<tg::MinimizeOp, tg::GradOp>(op))
        entries.push_back({opKey(op), opFields(op, opts)});
    return;
  }
  // Later snapshots: each op still there updates the first entry of its
  // key it has not updated yet (ops a pass made match nothing).
  std::vector<Entry> &entries = found->second;
  SmallVector<Operation *> ops = sourceOps(graph);
  SmallVector<size_t> place = matchEntries(entries, ops);
  for (size_t i = 0; i < ops.size(); ++i)
    if (place[i] < entries.size())
      entries[place[i]].text = opFields(ops[i], opts);
}

void ampc::report::SourceOpHistory::snapshot(Operation *op) {
  std::lock_guard<std::mutex> guard(lock);
  if (auto module = dyn_cast<ModuleOp>(op)) {
    for (auto graph : module.getOps<func::FuncOp>())
      snapshotGraph(graph);
    return;
  }
  snapshotGraph(op);
}

const std::vector<SourceOpHistory::Entry> *
ampc::report::SourceOpHistory::entries(StringRef graph) const {
  auto found = graphs.find(graph);
  return found == graphs.end() ? nullptr : &found->second;
}

namespace {
struct SnapshotBeforePass : PassInstrumentation {
  explicit SnapshotBeforePass(SourceOpHistory &history) : history(history) {}
  void runBeforePass(Pass *, Operation *op) override { history.snapshot(op); }
  SourceOpHistory &history;
};
} // namespace

std::unique_ptr<PassInstrumentation>
ampc::report::SourceOpHistory::instrumentation() {
  return std::make_unique<SnapshotBeforePass>(*this);
}

void ampc::report::emitReport(ModuleOp module, const ReportOptions &options,
                              llvm::raw_ostream &os,
                              const SourceOpHistory *history) {
  SmallVector<func::FuncOp> graphs(module.getOps<func::FuncOp>());
  if (graphs.size() == 1) {
    emitGraph(graphs.front(), options, os, "", history);
    os << "\n";
    return;
  }
  os << "[\n";
  llvm::interleave(
      graphs, os,
      [&](func::FuncOp f) { emitGraph(f, options, os, "  ", history); },
      ",\n");
  os << "\n]\n";
}
