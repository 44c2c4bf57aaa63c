//===- DataParallel.cpp - the bucketed gradient all-reduce ----------------===//
//
// The `ampc-data-parallel` pass (its contract in Passes.td, the user's view
// in docs/distributed.md): the gradients the step's consumers read, and the
// gradients of parameters that `grad` statements return (tg.grad_of), are
// cut into buckets in the order the backward produces them; each bucket's
// all-reduce starts right after its last gradient and every bucket is
// waited for just before the first consumer. A returned gradient that
// repeats the optimizer's is that gradient's reduced value; the gradients
// of inputs stay each rank's own. With pre-division the seeds are divided
// by the world size, so the reductions only sum.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ampc {
#define GEN_PASS_DEF_DATAPARALLEL
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

/// Ops that read the step's gradients: the optimizer updates and clipping
/// (records' `gradient_consumer` role) and, when loss scaling already ran,
/// its check.
bool isConsumer(Operation *op) {
  LossScaleRole role = getLossScaleRole(op);
  return role == LossScaleRole::GradientConsumer ||
         role == LossScaleRole::Unscale;
}

/// The gradients a consumer reads.
OperandRange gradsOf(Operation *op) {
  if (auto clip = dyn_cast<ClipGradNormOp>(op))
    return clip.getGrads();
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return sgd.getGrads();
  if (auto adamw = dyn_cast<AdamWUpdateOp>(op))
    return adamw.getGrads();
  if (auto check = dyn_cast<CheckFiniteAndUnscaleOp>(op))
    return check.getGrads();
  return op->getOperands().take_front(0); // lr_schedule reads none
}

bool hasLowFloat(func::FuncOp func) {
  auto low = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && (tensor.getElementType().isF16() ||
                      tensor.getElementType().isBF16());
  };
  bool found = llvm::any_of(func.getArgumentTypes(), low);
  func.walk([&](Operation *op) {
    if (llvm::any_of(op->getResultTypes(), low))
      found = true;
  });
  return found;
}

/// Whether `v` is a parameter of `func` (an argument with `tg.param`).
bool isParameter(func::FuncOp func, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &func.getBody().front() &&
         func.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName);
}

/// The gradient an optimizer update reads for each parameter, before
/// clipping (a clip's result is traced back to its input).
llvm::DenseMap<Value, Value> gradientOfParameter(Block &block) {
  llvm::DenseMap<Value, Value> of;
  auto add = [&](OperandRange params, OperandRange grads) {
    for (auto [p, g] : llvm::zip(params, grads)) {
      if (auto clip = g.getDefiningOp<ClipGradNormOp>()) {
        unsigned i = cast<OpResult>(g).getResultNumber();
        if (i >= clip.getGrads().size())
          continue;
        g = clip.getGrads()[i];
      }
      of.try_emplace(p, g);
    }
  };
  for (Operation &op : block) {
    if (auto sgd = dyn_cast<SgdUpdateOp>(op))
      add(sgd.getParams(), sgd.getGrads());
    else if (auto adamw = dyn_cast<AdamWUpdateOp>(op))
      add(adamw.getParams(), adamw.getGrads());
  }
  return of;
}

/// Whether two values of one block are the same computation: equal, or
/// results of the same number of side-effect-free ops of the same name,
/// attributes and result types on operands that are the same computation
/// (locations aside). Finds a `grad` statement's gradient that repeats the
/// backward of the `minimize` of the same loss.
class SameComputation {
public:
  bool operator()(Value a, Value b) {
    if (a == b)
      return true;
    auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
    if (!ra || !rb || a.getType() != b.getType() ||
        ra.getResultNumber() != rb.getResultNumber())
      return false;
    Operation *x = ra.getOwner(), *y = rb.getOwner();
    if (x == y)
      return false; // two results of one op
    auto key = std::make_pair(x, y);
    if (auto it = memo.find(key); it != memo.end())
      return it->second;
    memo[key] = false;
    bool same =
        x->getNumRegions() == 0 && y->getNumRegions() == 0 &&
        isMemoryEffectFree(x) && isMemoryEffectFree(y) &&
        OperationEquivalence::isEquivalentTo(
            x, y,
            [&](Value l, Value r) { return success((*this)(l, r)); },
            /*markEquivalent=*/nullptr,
            OperationEquivalence::IgnoreLocations);
    memo[key] = same;
    return same;
  }

private:
  llvm::DenseMap<std::pair<Operation *, Operation *>, bool> memo;
};

struct DataParallelPass
    : public ampc::impl::DataParallelBase<DataParallelPass> {
  using DataParallelBase::DataParallelBase;
  void runOnOperation() override;
};

void DataParallelPass::runOnOperation() {
  func::FuncOp func = getOperation();
  MLIRContext *ctx = func.getContext();
  if (predivide != "auto" && predivide != "always" && predivide != "never") {
    emitError(func.getLoc(), "ampc-data-parallel: predivide must be auto, "
                             "always or never, got '")
        << predivide << "'";
    return signalPassFailure();
  }
  if (!(bucketCapMb > 0.0) || !(firstBucketMb > 0.0)) {
    emitError(func.getLoc(), "ampc-data-parallel: bucket-cap-mb and "
                             "first-bucket-mb must be > 0");
    return signalPassFailure();
  }
  if (func.isExternal() || !func.getBody().hasOneBlock() ||
      func->hasAttr(TGDialect::kDataParallelAttrName))
    return;
  Block &block = func.getBody().front();

  // The gradients: what the consumers read, except what another consumer
  // made (a clip's outputs feed the update).
  Operation *firstConsumer = nullptr;
  llvm::SetVector<Value> grads;
  for (Operation &op : block) {
    if (!isConsumer(&op))
      continue;
    // (An lr_schedule reads no gradient: it does not need to wait.)
    if (!firstConsumer && !gradsOf(&op).empty())
      firstConsumer = &op;
    for (Value g : gradsOf(&op))
      if (!g.getDefiningOp() || !isConsumer(g.getDefiningOp()))
        grads.insert(g);
  }

  // The gradients a graph returns through `grad` statements (tg.grad_of):
  // a parameter's is averaged like DDP's `p.grad`, the one the optimizer
  // reads when it is the same computation (no second all-reduce), else a
  // gradient of its own buckets; an input's stays the rank's own.
  // A gradient no seed reaches is a constant zero, the same on every rank.
  SmallVector<GradSeedOp> seeds(block.getOps<GradSeedOp>());
  llvm::DenseMap<Value, uint64_t> reach; // which seeds a value depends on
  for (Operation &op : block) {
    uint64_t mask = 0;
    for (Value v : op.getOperands())
      mask |= reach.lookup(v);
    if (auto seed = dyn_cast<GradSeedOp>(op)) {
      unsigned i = llvm::find(seeds, seed) - seeds.begin();
      mask |= i < 64 ? uint64_t(1) << i : ~uint64_t(0);
    }
    if (mask)
      for (Value r : op.getResults())
        reach[r] = mask;
  }
  llvm::DenseMap<Value, Value> paramGrad = gradientOfParameter(block);
  SameComputation same;
  llvm::MapVector<Value, Value> alias; // a returned gradient -> a member
  llvm::SmallPtrSet<Value, 8> returnedMembers;
  uint64_t inputSeeds = 0; // seeds whose backward yields an input gradient
  for (GradOfOp marker : block.getOps<GradOfOp>()) {
    Value g = marker.getGrad();
    if (!reach.lookup(g))
      continue;
    if (!isParameter(func, marker.getWrt())) {
      inputSeeds |= reach.lookup(g);
      continue;
    }
    if (grads.contains(g) || alias.count(g)) {
      returnedMembers.insert(g);
      continue;
    }
    Value consumed = paramGrad.lookup(marker.getWrt());
    if (consumed && grads.contains(consumed) && same(g, consumed)) {
      alias[g] = consumed;
      continue;
    }
    grads.insert(g);
    returnedMembers.insert(g);
  }
  if (grads.empty())
    return; // not a training step

  // The order the backward produces them in: by defining op, then result.
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned n = 0;
  for (Operation &op : block)
    position[&op] = ++n;
  auto producedAt = [&](Value v) -> std::pair<unsigned, unsigned> {
    if (Operation *def = v.getDefiningOp())
      return {position[def], cast<OpResult>(v).getResultNumber()};
    return {0, cast<BlockArgument>(v).getArgNumber()};
  };
  SmallVector<Value> order(grads.begin(), grads.end());
  llvm::stable_sort(
      order, [&](Value a, Value b) { return producedAt(a) < producedAt(b); });
  // A hand-written step may update one parameter before another's gradient
  // exists: the waits then follow the last start and the early consumers
  // move after them (the block is sorted again at the end).
  Operation *lastGradDef = nullptr;
  for (Value g : order)
    if (Operation *def = g.getDefiningOp())
      if (!lastGradDef || lastGradDef->isBeforeInBlock(def))
        lastGradDef = def;
  // A step without consumers (`grad` without `minimize`) waits before its
  // return: what reads the gradients follows the waits.
  Operation *waitBefore = firstConsumer ? firstConsumer : block.getTerminator();
  bool consumersFirst =
      lastGradDef && waitBefore->isBeforeInBlock(lastGradDef);

  // Pre-division: the seeds divided by W, so every gradient leaves the
  // backward divided and the reductions sum; otherwise they take the mean.
  // `auto` leaves a seed whose backward yields an input's gradient
  // undivided (that gradient is the rank's own, not a share of a sum).
  bool foldMode = !seeds.empty() && (predivide == "always" ||
                                     (predivide == "auto" && hasLowFloat(func)));
  uint64_t divided = 0;
  if (foldMode && predivide == "always")
    divided = ~uint64_t(0);
  else if (foldMode)
    divided = seeds.size() <= 64 ? ~inputSeeds
                                 : (inputSeeds ? 0 : ~uint64_t(0));
  // A gradient of divided and undivided seeds at once would need both: then
  // nothing is divided.
  for (Value g : order) {
    uint64_t m = reach.lookup(g);
    if ((m & divided) && (m & ~divided))
      divided = 0;
  }
  auto seedDivided = [&](size_t i) {
    return i >= 64 ? divided == ~uint64_t(0) : ((divided >> i) & 1) != 0;
  };
  unsigned dividedSeeds = 0;
  for (size_t i = 0; i < seeds.size(); ++i)
    dividedSeeds += seedDivided(i);
  // A gradient no seed reaches (a hand-written step's) is summed when
  // every seed is divided, as the backward's gradients are.
  bool allDivided = !seeds.empty() && dividedSeeds == seeds.size();
  auto isDivided = [&](Value g) {
    uint64_t m = reach.lookup(g);
    return m ? (m & divided) != 0 : allDivided;
  };

  // Buckets: the first small (DDP's first bucket), the others about
  // bucket-cap-mb; a bucket closes before a gradient that would overflow it.
  SmallVector<SmallVector<Value>> buckets(1);
  int64_t bytes = 0;
  auto capOf = [&](size_t index) {
    double mb = index == 0 ? firstBucketMb : bucketCapMb;
    return static_cast<int64_t>(mb * 1024.0 * 1024.0);
  };
  for (Value g : order) {
    auto type = cast<RankedTensorType>(g.getType());
    int64_t size = type.getNumElements() *
                   static_cast<int64_t>(
                       (type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
    if (!buckets.back().empty() &&
        (bytes + size > capOf(buckets.size() - 1) ||
         isDivided(g) != isDivided(buckets.back().front()))) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(g);
    bytes += size;
  }

  OpBuilder builder(ctx);
  for (auto [i, seed] : llvm::enumerate(seeds))
    if (seedDivided(i)) {
      builder.setInsertionPointAfter(seed);
      auto divided =
          DivideByWorldOp::create(builder, seed.getLoc(), seed.getResult());
      seed.getResult().replaceAllUsesExcept(divided.getResult(), divided);
    }

  Location loc = waitBefore->getLoc();
  // Where the waits go (and, with delay-allreduce, the starts): just before
  // the first consumer, or after the last gradient when a consumer comes
  // earlier.
  auto atWaitPoint = [&] {
    if (consumersFirst)
      builder.setInsertionPointAfter(lastGradDef);
    else
      builder.setInsertionPoint(waitBefore);
  };
  SmallVector<GradAllreduceStartOp> starts;
  if (delayAllreduce)
    atWaitPoint();
  for (auto [index, members] : llvm::enumerate(buckets)) {
    if (!delayAllreduce) {
      Operation *last = nullptr;
      for (Value g : members)
        if (Operation *def = g.getDefiningOp())
          if (!last || last->isBeforeInBlock(def))
            last = def;
      if (last)
        builder.setInsertionPointAfter(last);
      else
        builder.setInsertionPointToStart(&block);
      // A gradient that is the seed itself follows its division.
      if (last && isa<GradSeedOp>(last) && isDivided(last->getResult(0)))
        builder.setInsertionPointAfter(last->getNextNode());
    }
    bool sum = isDivided(members.front());
    auto start = GradAllreduceStartOp::create(
        builder, loc, members, builder.getI64IntegerAttr(index),
        sum ? UnitAttr() : builder.getUnitAttr(),
        allreduceFp32 ? builder.getUnitAttr() : UnitAttr());
    starts.push_back(start);
  }
  if (!delayAllreduce) {
    atWaitPoint();
    if (consumersFirst) {
      Operation *lastStart = starts.front();
      for (GradAllreduceStartOp start : starts)
        if (lastStart->isBeforeInBlock(start))
          lastStart = start;
      builder.setInsertionPointAfter(lastStart);
    }
  }

  bool needSort = consumersFirst;
  llvm::DenseMap<Value, std::pair<Value, GradAllreduceWaitOp>> reducedOf;
  // A marker names the averaged value, after its wait; every other reader
  // of a returned gradient reads the average (moved after the wait).
  llvm::DenseMap<Operation *, Operation *> lastMarker; // per wait
  auto rewireReturned = [&](OpOperand &use, Value reduced,
                            GradAllreduceWaitOp wait) {
    Operation *owner = block.findAncestorOpInBlock(*use.getOwner());
    use.set(reduced);
    if (isa<GradOfOp>(owner)) {
      Operation *&after = lastMarker[wait];
      owner->moveAfter(after ? after : wait.getOperation());
      after = owner;
    } else if (owner->isBeforeInBlock(wait)) {
      needSort = true;
    }
  };
  for (auto [index, start] : llvm::enumerate(starts)) {
    auto wait = GradAllreduceWaitOp::create(builder, loc, start.getResults(),
                                            builder.getI64IntegerAttr(index));
    for (auto [g, reduced] : llvm::zip_equal(buckets[index], wait.getResults())) {
      reducedOf[g] = {reduced, wait};
      bool returned = returnedMembers.contains(g);
      for (OpOperand &use : llvm::make_early_inc_range(g.getUses())) {
        Operation *owner = block.findAncestorOpInBlock(*use.getOwner());
        if (owner == start)
          continue;
        if (returned || isa<GradOfOp>(owner)) {
          rewireReturned(use, reduced, wait);
          continue;
        }
        // The consumers and the results read the reduced values wherever
        // they are; other ops only after the wait.
        if (isConsumer(owner) || isa<func::ReturnOp>(owner)) {
          use.set(reduced);
          continue;
        }
        if (owner->isBeforeInBlock(start))
          continue; // read before the reduction starts: the rank's own value
        if (owner->isBeforeInBlock(wait)) {
          owner->emitOpError("reads a gradient while its all-reduce is in "
                             "flight (bucket ")
              << index << ")";
          return signalPassFailure();
        }
        use.set(reduced);
      }
    }
  }
  // A returned gradient that repeats the optimizer's: the same averaged
  // value (its own backward is then dead).
  for (auto [g, member] : alias) {
    auto [reduced, wait] = reducedOf.lookup(member);
    for (OpOperand &use : llvm::make_early_inc_range(g.getUses()))
      rewireReturned(use, reduced, wait);
  }
  if (needSort && !sortTopologically(&block)) {
    func.emitOpError("data-parallel rewriting made a cycle (internal error)");
    return signalPassFailure();
  }

  NamedAttrList info;
  info.append("buckets", builder.getI64IntegerAttr(buckets.size()));
  info.append("bucket_cap_mb", builder.getF64FloatAttr(bucketCapMb));
  info.append("first_bucket_mb", builder.getF64FloatAttr(firstBucketMb));
  info.append("predivide",
              builder.getStringAttr(dividedSeeds == 0 ? "none"
                                    : allDivided
                                        ? "seed"
                                        : "some_seeds"));
  if (allreduceFp32)
    info.append("allreduce_fp32", builder.getUnitAttr());
  if (delayAllreduce)
    info.append("delay_allreduce", builder.getUnitAttr());
  func->setAttr(TGDialect::kDataParallelAttrName, info.getDictionary(ctx));
}

} // namespace
