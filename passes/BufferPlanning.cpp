//===- BufferPlanning.cpp - arena offsets by liveness ----------------------===//
//
// Gives every intermediate tensor of a step an offset in one arena. Values
// whose lifetimes do not overlap share bytes; results computed in place
// (optimizer and scaler updates, unscaling, clipping, reshape views) share
// their operand's buffer, so parameters, optimizer state and scaler state
// keep one persistent buffer each across steps.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/BufferPlan.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace ampc {
#define GEN_PASS_DEF_BUFFERPLANNING
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;

std::optional<unsigned> ampc::getInPlaceOperand(Operation *op,
                                                unsigned resultIndex) {
  auto begin = [](OperandRange range) {
    return range.getBeginOperandIndex();
  };
  if (auto sgd = dyn_cast<tg::SgdUpdateOp>(op)) {
    unsigned n = sgd.getParams().size();
    if (resultIndex < n)
      return begin(sgd.getParams()) + resultIndex;
    return begin(sgd.getMomentumBuffers()) + (resultIndex - n);
  }
  if (auto adam = dyn_cast<tg::AdamWUpdateOp>(op)) {
    unsigned n = adam.getParams().size();
    if (resultIndex < n)
      return begin(adam.getParams()) + resultIndex;
    if (resultIndex < 2 * n)
      return begin(adam.getExpAvgs()) + (resultIndex - n);
    if (resultIndex < 3 * n)
      return begin(adam.getExpAvgSqs()) + (resultIndex - 2 * n);
    return adam.getStepMutable().getOperandNumber();
  }
  if (auto unscale = dyn_cast<tg::CheckFiniteAndUnscaleOp>(op)) {
    if (resultIndex < unscale.getGrads().size())
      return begin(unscale.getGrads()) + resultIndex;
    return std::nullopt;
  }
  if (auto clip = dyn_cast<tg::ClipGradNormOp>(op)) {
    if (resultIndex < clip.getGrads().size())
      return begin(clip.getGrads()) + resultIndex;
    return std::nullopt;
  }
  if (isa<tg::UpdateScaleOp>(op))
    return resultIndex;
  if (auto reshape = dyn_cast<tg::ReshapeOp>(op)) {
    if (getElementTypeOrSelf(reshape.getInput().getType()) ==
        getElementTypeOrSelf(reshape.getType()))
      return 0u;
  }
  return std::nullopt;
}

int64_t ampc::getTensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  Type elt = shaped.getElementType();
  int64_t width = elt.isInteger(1) ? 1 : elt.getIntOrFloatBitWidth() / 8;
  return shaped.getNumElements() * width;
}

namespace {
struct Group {
  int64_t size = 0;
  int64_t begin = 0, end = 0;
  bool persistent = false; // lives in an argument or constant buffer
  int64_t offset = -1;
};

struct BufferPlanningPass
    : public ampc::impl::BufferPlanningBase<BufferPlanningPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("buffer planning needs a single-block graph");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();

    // Index ops; a value is live from its definition to its last use.
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t n = 0;
    for (Operation &op : body)
      index[&op] = n++;
    int64_t endOfStep = n;

    // Union values that share a buffer.
    llvm::EquivalenceClasses<Value> classes;
    llvm::DenseMap<Value, int64_t> lastUse;
    auto useIndex = [&](Value v) {
      int64_t last = -1;
      for (OpOperand &use : v.getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        int64_t i = isa<func::ReturnOp>(user) ? endOfStep : index[user];
        last = std::max(last, i);
      }
      return last;
    };
    for (BlockArgument arg : body.getArguments())
      classes.insert(arg);
    for (Operation &op : body) {
      for (OpResult result : op.getResults()) {
        classes.insert(result);
        if (auto operand = getInPlaceOperand(&op, result.getResultNumber())) {
          Value src = op.getOperand(*operand);
          // In place is only sound when the operand dies here.
          for (OpOperand &use : src.getUses()) {
            Operation *user = body.findAncestorOpInBlock(*use.getOwner());
            if (user != &op && (isa<func::ReturnOp>(user) ||
                                index[user] > index[&op])) {
              if (isa<tg::ReshapeOp>(op))
                continue; // a view: the union below keeps both alive
              op.emitError("buffer planning: operand #")
                  << *operand << " is updated in place but used later";
              return signalPassFailure();
            }
          }
          classes.unionSets(src, result);
        }
      }
    }

    llvm::DenseMap<Value, Group> groups;
    auto leaderOf = [&](Value v) { return classes.getLeaderValue(v); };
    for (BlockArgument arg : body.getArguments())
      groups[leaderOf(arg)].persistent = true;
    for (Operation &op : body) {
      for (OpResult result : op.getResults()) {
        Group &g = groups[leaderOf(result)];
        if (isa<tg::ConstantOp>(op))
          g.persistent = true;
        int64_t def = index[&op];
        int64_t last = std::max(useIndex(result), def);
        // found_inf is read after the step (skipped-step reporting).
        if (isa<tg::CheckFiniteAndUnscaleOp>(op) &&
            result.getResultNumber() + 1 == op.getNumResults())
          last = endOfStep;
        if (g.size == 0) {
          g.begin = def;
          g.end = last;
        } else {
          g.begin = std::min(g.begin, def);
          g.end = std::max(g.end, last);
        }
        g.size = std::max(g.size, getTensorBytes(result.getType()));
      }
    }

    // Greedy by size (largest first), lowest offset that fits.
    SmallVector<Group *> order;
    int64_t sum = 0;
    for (auto &it : groups) {
      Group &g = it.second;
      if (g.persistent)
        continue;
      g.size = llvm::alignTo(g.size, kBufferAlignment);
      sum += g.size;
      order.push_back(&g);
    }
    llvm::stable_sort(order, [](Group *a, Group *b) {
      if (a->size != b->size)
        return a->size > b->size;
      return a->begin < b->begin;
    });
    SmallVector<Group *> placed;
    int64_t arena = 0;
    for (Group *g : order) {
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (Group *p : placed)
        if (p->begin <= g->end && g->begin <= p->end)
          busy.push_back({p->offset, p->offset + p->size});
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [lo, hi] : busy) {
        if (offset + g->size <= lo)
          break;
        offset = std::max(offset, hi);
      }
      g->offset = offset;
      arena = std::max(arena, offset + g->size);
      placed.push_back(g);
    }

    Builder b(func.getContext());
    for (Operation &op : body) {
      if (op.getNumResults() == 0)
        continue;
      SmallVector<int64_t> offsets;
      for (OpResult result : op.getResults()) {
        Group &g = groups[leaderOf(result)];
        offsets.push_back(g.persistent ? -1 : g.offset);
      }
      op.setAttr(kOffsetsAttrName, b.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(kArenaSizeAttrName, b.getI64IntegerAttr(arena));
    func->setAttr(kIntermediateBytesAttrName, b.getI64IntegerAttr(sum));
  }
};
} // namespace
