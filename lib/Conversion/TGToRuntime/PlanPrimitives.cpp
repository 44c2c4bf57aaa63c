//===- PlanPrimitives.cpp - GEMM and convolution primitives at creation ---===//
//
// ampc-plan-primitives (Passes.td): the step's calls of the kernel table's
// AMPC_PLANNED_ENTRY entry points, repeated at the end of rt.init between
// ampc_plan_begin and ampc_plan_end, so that a backend makes their
// primitives when the program is created.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Dialect/RT/RTDialect.h"
#include "ampc/runtime.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace ampc {
#define GEN_PASS_DEF_PLANPRIMITIVES
#include "ampc/Conversion/Passes.h.inc"
} // namespace ampc

using namespace mlir;
namespace rtd = ampc::rt;

namespace {

/// The entry points whose calls are planned, from the runtime's table.
const llvm::StringSet<> &plannedEntries() {
  static const llvm::StringSet<> names = {
#define AMPC_PLANNED_ENTRY(NAME) "ampc_" #NAME,
#include "ampc/runtime_kernels.inc"
  };
  return names;
}

constexpr llvm::StringLiteral kBegin = "ampc_plan_begin";
constexpr llvm::StringLiteral kEnd = "ampc_plan_end";

/// Whether `program`'s init plans already (the pass ran on it before).
bool planned(rtd::ProgramOp program) {
  return llvm::any_of(program.getInit().getOps<rtd::CallOp>(),
                      [](rtd::CallOp c) { return c.getCallee() == kBegin; });
}

/// Repeats `program`'s planned step calls at the end of its init; returns
/// how many.
unsigned planProgram(rtd::ProgramOp program) {
  Block &step = program.getStep().getBody().front();
  Block &init = program.getInit().getBody().front();
  MLIRContext *ctx = program.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(&init);
  // The step's slots and arena are the init's, in the same order.
  IRMapping map;
  for (auto [from, to] : llvm::zip(step.getArguments(), init.getArguments()))
    map.map(from, to);
  // One call per distinct callee and argument list: the buffers' addresses
  // do not change which primitives a call makes.
  llvm::DenseSet<std::pair<Attribute, Attribute>> seen;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> views;
  ArrayAttr contextOnly = b.getArrayAttr({rtd::ContextAttr::get(ctx)});
  SmallVector<rtd::SlotOp, 8> slots = program.getSlots();
  auto isInput = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &step &&
           arg.getArgNumber() < slots.size() &&
           slots[arg.getArgNumber()].getRole() == rtd::SlotRole::input;
  };
  unsigned planned = 0;
  for (auto call : step.getOps<rtd::CallOp>()) {
    if (!plannedEntries().contains(call.getCallee()))
      continue;
    // Arena views are made again in the init; a constant's buffer is not
    // available there, nor an input's in emitted code (the caller passes
    // the inputs to each step): planning reads no data, so an input is
    // passed as the arena's first bytes.
    bool mappable = llvm::all_of(call.getBuffers(), [&](Value v) {
      if (isInput(v))
        return program.getArenaSize() > 0;
      return map.contains(v) || v.getDefiningOp<rtd::ViewOp>();
    });
    if (!mappable ||
        !seen.insert({call.getCalleeAttr(), call.getArgs()}).second)
      continue;
    if (planned++ == 0)
      rtd::CallOp::create(b, program.getLoc(), b.getStringAttr(kBegin),
                          contextOnly, ValueRange{});
    SmallVector<Value> buffers;
    for (Value v : call.getBuffers()) {
      if (isInput(v)) {
        Value &made = views[{init.getArguments().back(), 0}];
        if (!made)
          made = rtd::ViewOp::create(b, program.getLoc(),
                                     rtd::BufferType::get(ctx),
                                     init.getArguments().back(),
                                     b.getI64IntegerAttr(0));
        buffers.push_back(made);
        continue;
      }
      if (!map.contains(v)) {
        // One init view per offset.
        auto view = v.getDefiningOp<rtd::ViewOp>();
        Value &made = views[{map.lookup(view.getBase()), view.getOffset()}];
        if (!made)
          made = b.clone(*view, map)->getResult(0);
        map.map(v, made);
      }
      buffers.push_back(map.lookup(v));
    }
    rtd::CallOp::create(b, call.getLoc(), call.getCalleeAttr(),
                        call.getArgs(), buffers);
  }
  if (planned)
    rtd::CallOp::create(b, program.getLoc(), b.getStringAttr(kEnd),
                        contextOnly, ValueRange{});
  return planned;
}

struct PlanPrimitivesPass
    : ampc::impl::PlanPrimitivesBase<PlanPrimitivesPass> {
  void runOnOperation() override {
    assert(ampc::isRuntimeKernel(kBegin) && ampc::isRuntimeKernel(kEnd));
    for (auto program : getOperation().getOps<rtd::ProgramOp>())
      if (program.getInit() && program.getStep() && !planned(program))
        planProgram(program);
  }
};

} // namespace
