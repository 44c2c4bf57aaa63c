//===- DataParallel.cpp - the bucketed gradient all-reduce ----------------===//
//
// The `ampc-data-parallel` pass (its contract in Passes.td, the user's view
// in docs/distributed.md): the gradients the step's consumers read are cut
// into buckets in the order the backward produces them; each bucket's
// all-reduce starts right after its last gradient and every bucket is
// waited for just before the first consumer. With pre-division the seed is
// divided by the world size, so the reductions only sum.
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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

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
  bool consumersFirst =
      lastGradDef && firstConsumer->isBeforeInBlock(lastGradDef);

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
    if (!buckets.back().empty() && bytes + size > capOf(buckets.size() - 1)) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(g);
    bytes += size;
  }

  // Pre-division: the seed divided by W, so every gradient leaves the
  // backward divided and the reductions sum; otherwise they take the mean.
  SmallVector<GradSeedOp> seeds(block.getOps<GradSeedOp>());
  bool fold = !seeds.empty() && (predivide == "always" ||
                                 (predivide == "auto" && hasLowFloat(func)));
  OpBuilder builder(ctx);
  if (fold)
    for (GradSeedOp seed : seeds) {
      builder.setInsertionPointAfter(seed);
      auto divided =
          DivideByWorldOp::create(builder, seed.getLoc(), seed.getResult());
      seed.getResult().replaceAllUsesExcept(divided.getResult(), divided);
    }

  Location loc = firstConsumer->getLoc();
  // Where the waits go (and, with delay-allreduce, the starts): just before
  // the first consumer, or after the last gradient when a consumer comes
  // earlier.
  auto atWaitPoint = [&] {
    if (consumersFirst)
      builder.setInsertionPointAfter(lastGradDef);
    else
      builder.setInsertionPoint(firstConsumer);
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
      if (last && fold && isa<GradSeedOp>(last))
        builder.setInsertionPointAfter(last->getNextNode());
    }
    auto start = GradAllreduceStartOp::create(
        builder, loc, members, builder.getI64IntegerAttr(index),
        fold ? UnitAttr() : builder.getUnitAttr(),
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

  for (auto [index, start] : llvm::enumerate(starts)) {
    auto wait = GradAllreduceWaitOp::create(builder, loc, start.getResults(),
                                            builder.getI64IntegerAttr(index));
    for (auto [g, reduced] : llvm::zip_equal(buckets[index], wait.getResults()))
      for (OpOperand &use : llvm::make_early_inc_range(g.getUses())) {
        Operation *owner = block.findAncestorOpInBlock(*use.getOwner());
        if (owner == start)
          continue;
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
  if (consumersFirst && !sortTopologically(&block)) {
    func.emitOpError("data-parallel rewriting made a cycle (internal error)");
    return signalPassFailure();
  }

  NamedAttrList info;
  info.append("buckets", builder.getI64IntegerAttr(buckets.size()));
  info.append("bucket_cap_mb", builder.getF64FloatAttr(bucketCapMb));
  info.append("first_bucket_mb", builder.getF64FloatAttr(firstBucketMb));
  info.append("predivide", builder.getStringAttr(fold ? "seed" : "none"));
  if (allreduceFp32)
    info.append("allreduce_fp32", builder.getUnitAttr());
  if (delayAllreduce)
    info.append("delay_allreduce", builder.getUnitAttr());
  func->setAttr(TGDialect::kDataParallelAttrName, info.getDictionary(ctx));
}

} // namespace
