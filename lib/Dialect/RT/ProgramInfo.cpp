//===- ProgramInfo.cpp - what consumers of an rt.program read --------------===//

#include "ampc/Dialect/RT/ProgramInfo.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace ampc::rt;

int64_t ampc::rt::tensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  Type elt = shaped.getElementType();
  int64_t width = elt.isInteger(1) ? 8 : elt.getIntOrFloatBitWidth();
  return shaped.getNumElements() * (width / 8);
}

int32_t ampc::rt::dtypeOf(Type type) {
  return DtypeAttr::get(type.getContext(), getElementTypeOrSelf(type))
      .getValue();
}

static std::vector<int64_t> shapeOf(Type type) {
  auto shape = cast<ShapedType>(type).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

ProgramOp ampc::rt::chooseProgram(ModuleOp module, llvm::StringRef graph,
                                  llvm::StringRef verb, std::string &error,
                                  std::string &note) {
  std::vector<ProgramOp> programs(module.getOps<ProgramOp>().begin(),
                                  module.getOps<ProgramOp>().end());
  std::string names;
  for (ProgramOp p : programs)
    names += (names.empty() ? "" : ", ") + p.getSymName().str();
  if (!graph.empty()) {
    for (ProgramOp p : programs)
      if (p.getSymName() == graph)
        return p;
    error = "--graph: no graph '" + graph.str() + "' (the file has: " + names +
            ")";
    return nullptr;
  }
  if (programs.empty()) {
    error = "the file holds no graph";
    return nullptr;
  }
  ProgramOp chosen;
  for (ProgramOp p : programs)
    if (!chosen && p.getTraining())
      chosen = p;
  if (!chosen)
    chosen = programs.front();
  if (programs.size() > 1)
    note = "the file holds " + std::to_string(programs.size()) + " graphs (" +
           names + "); " + verb.str() + " '" + chosen.getSymName().str() +
           "' (" +
           (chosen.getTraining() ? "the first that minimizes" : "the first") +
           "); choose one with --graph";
  return chosen;
}

Program ampc::rt::describeProgram(ProgramOp op) {
  Program p;
  p.op = op;
  p.name = op.getSymName().str();
  p.arenaSize = op.getArenaSize();
  p.intermediateBytes = op.getIntermediateBytes();
  p.fingerprint = static_cast<uint64_t>(op.getFingerprint());
  p.training = op.getTraining();
  if (auto s = op.getStaticLossScale())
    p.staticScale = s->convertToDouble();
  if (auto k = op->getAttrOfType<IntegerAttr>(RTDialect::kAccumulateAttrName))
    p.accumulate = std::max<int64_t>(1, k.getInt());
  for (SlotOp slot : op.getSlots()) {
    Slot s;
    switch (slot.getRole()) {
    case SlotRole::input:
      s.role = Slot::Role::Input;
      break;
    case SlotRole::param:
      s.role = Slot::Role::Param;
      break;
    case SlotRole::state:
      s.role = Slot::Role::State;
      break;
    case SlotRole::buffer:
      s.role = Slot::Role::Buffer;
      break;
    }
    s.name = slot.getSymName().str();
    s.dtype = dtypeOf(slot.getType());
    s.shape = shapeOf(slot.getType());
    s.bytes = tensorBytes(slot.getType());
    if (auto r = slot.getIntRange())
      s.intRange = *r;
    if (auto scale = op.getLossScaleAttr();
        scale && scale.getValue() == slot.getSymName())
      p.scaleSlot = p.slots.size();
    p.slots.push_back(std::move(s));
  }
  p.numArgs = p.slots.size();
  // Constants of the initialisers (parameters' values from a file) and of
  // the step, all written when the program is created.
  auto ops = llvm::concat<Operation>(op.getInit().getBody().front(),
                                     op.getStep().getBody().front());
  for (Operation &o : ops) {
    if (auto c = dyn_cast<ConstantOp>(o)) {
      Slot s;
      s.role = Slot::Role::Constant;
      s.name = "const" + std::to_string(p.slots.size());
      s.dtype = dtypeOf(c.getValue().getType());
      s.shape = shapeOf(c.getValue().getType());
      s.bytes = tensorBytes(c.getValue().getType());
      s.value = c.getValue();
      p.constants.push_back(c);
      p.slots.push_back(std::move(s));
    } else if (auto out = dyn_cast<OutputOp>(o)) {
      Output r;
      r.index = out.getIndex();
      r.buffer = out.getBuffer();
      r.dtype = dtypeOf(out.getType());
      r.shape = shapeOf(out.getType());
      r.bytes = tensorBytes(out.getType());
      p.outputs.push_back(std::move(r));
    } else if (auto f = dyn_cast<FoundInfOp>(o)) {
      p.foundInf = f.getFlag();
    }
  }
  std::stable_sort(p.outputs.begin(), p.outputs.end(),
                   [](const Output &a, const Output &b) {
                     return a.index < b.index;
                   });
  describeSources(op.getStep().getBody().front(), p);
  return p;
}

/// The first FILE:LINE:COL inside `loc`.
static FileLineColLoc fileLoc(Location loc) {
  FileLineColLoc found;
  loc->walk([&](Location l) {
    if (auto flc = dyn_cast<FileLineColLoc>(l)) {
      found = flc;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// The first variable name inside `loc`.
static std::string nameIn(Location loc) {
  std::string found;
  loc->walk([&](Location l) {
    if (auto n = dyn_cast<NameLoc>(l)) {
      found = n.getName().getValue().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

void ampc::rt::describeSources(Block &step, Program &p) {
  // Calls a pass made (backward ops, AMP casts) carry the location of the
  // source op they come from, which names them: the forward calls of
  // source ops say which op each location belongs to.
  llvm::DenseMap<Attribute, std::string> opAt;
  size_t index = 0;
  p.checkCall = 0;
  bool checkSeen = false;
  bool accumulateSeen = false;
  for (Operation &o : step) {
    auto call = dyn_cast<CallOp>(o);
    if (!call)
      continue;
    size_t k = index++;
    if (!checkSeen && call.getCallee() == "ampc_check_finite_unscale") {
      p.checkCall = k;
      checkSeen = true;
    }
    // Gradient accumulation: the update starts after the accumulation.
    if (!accumulateSeen && call.getCallee() == "ampc_grad_accumulate") {
      p.updateCall = k + 1;
      accumulateSeen = true;
    }
    auto source =
        call->getAttrOfType<DictionaryAttr>(RTDialect::kSourceAttrName);
    if (!source)
      continue;
    CallSource s;
    s.call = k;
    if (auto op = source.getAs<StringAttr>("op"))
      s.op = op.getValue().str();
    if (auto pass = source.getAs<StringAttr>("pass"))
      s.backward = pass.getValue() == "backward";
    if (auto site = source.getAs<IntegerAttr>("site"))
      s.site = static_cast<int32_t>(site.getInt());
    if (auto index = source.getAs<StringAttr>("index"))
      s.index = index.getValue().str();
    if (auto range = source.getAs<IntegerAttr>("range"))
      s.range = range.getInt();
    if (auto results = source.getAs<DenseI64ArrayAttr>("results"))
      s.results.assign(results.asArrayRef().begin(),
                       results.asArrayRef().end());
    FileLineColLoc flc = fileLoc(call.getLoc());
    if (flc) {
      s.loc = (flc.getFilename().getValue() + ":" + Twine(flc.getLine()) +
               ":" + Twine(flc.getColumn()))
                  .str();
      if (!s.backward && s.op != "cast")
        opAt.try_emplace(flc, s.op);
    }
    s.name = nameIn(call.getLoc());
    p.sources.push_back(std::move(s));
  }
  if (!checkSeen)
    p.checkCall = index;
  if (!accumulateSeen)
    p.updateCall = index;
  // Name backward calls and casts by the source op at their location.
  index = 0;
  size_t next = 0;
  for (Operation &o : step) {
    auto call = dyn_cast<CallOp>(o);
    if (!call)
      continue;
    size_t k = index++;
    if (next >= p.sources.size() || p.sources[next].call != k)
      continue;
    CallSource &s = p.sources[next++];
    if (!s.backward && s.op != "cast")
      continue;
    FileLineColLoc flc = fileLoc(call.getLoc());
    auto it = flc ? opAt.find(flc) : opAt.end();
    if (it != opAt.end())
      s.op = it->second;
    else if (StringRef(s.op).ends_with("_grad"))
      s.op = StringRef(s.op).drop_back(5).str();
  }
}

std::vector<uint8_t> ampc::rt::constantBytes(ElementsAttr value) {
  auto attr = cast<DenseElementsAttr>(value);
  std::vector<uint8_t> bytes;
  auto push = [&](const APInt &bits, unsigned width) {
    uint64_t v = bits.getZExtValue();
    for (unsigned b = 0; b < width / 8; ++b)
      bytes.push_back(static_cast<uint8_t>(v >> (8 * b)));
  };
  Type elt = attr.getElementType();
  int64_t n = attr.getNumElements();
  bool splat = attr.isSplat();
  int64_t values = splat ? 1 : n;
  if (auto ft = dyn_cast<FloatType>(elt)) {
    auto it = attr.value_begin<APFloat>();
    for (int64_t i = 0; i < values; ++i, ++it)
      push((*it).bitcastToAPInt(), ft.getWidth());
  } else {
    unsigned width = elt.isInteger(1) ? 8 : elt.getIntOrFloatBitWidth();
    auto it = attr.value_begin<APInt>();
    for (int64_t i = 0; i < values; ++i, ++it)
      push((*it).zextOrTrunc(width), width);
  }
  if (splat && n > 1) {
    std::vector<uint8_t> one = bytes;
    bytes.clear();
    bytes.reserve(one.size() * n);
    for (int64_t i = 0; i < n; ++i)
      bytes.insert(bytes.end(), one.begin(), one.end());
  }
  return bytes;
}
