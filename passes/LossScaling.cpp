//===- LossScaling.cpp - loss scaling of training steps -------------------===//
//
// The `ampc-loss-scaling` pass (Passes.td has the contract and the
// numerics, docs/amp.md the user's view): seed := scale, one fused check-and-unscale, clipping
// and optimizer updates predicated on found_inf, and the scale update with
// its state in the function signature.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGInterfaces.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace ampc {
#define GEN_PASS_DEF_LOSSSCALING
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

/// Marks the ops loss scaling makes (`tg.role = "loss_scale"`).
struct LossScaleRoles : public OpBuilder::Listener {
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    setRole(op, Role::LossScale);
  }
};

/// Ops that consume gradients and end the backward graph (their records'
/// `lossScaleRole`).
bool isGradientConsumer(Operation *op) {
  return getLossScaleRole(op) == LossScaleRole::GradientConsumer;
}

/// The `grads` operands of a gradient consumer.
OperandRange gradOperands(Operation *op) {
  if (auto clip = dyn_cast<ClipGradNormOp>(op))
    return clip.getGrads();
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return sgd.getGrads();
  if (auto sched = dyn_cast<LrScheduleOp>(op)) // reads no gradient
    return sched->getOperands().take_front(0);
  return cast<AdamWUpdateOp>(op).getGrads();
}

MutableOperandRange foundInfOperand(Operation *op) {
  if (auto clip = dyn_cast<ClipGradNormOp>(op))
    return clip.getFoundInfMutable();
  if (auto sgd = dyn_cast<SgdUpdateOp>(op))
    return sgd.getFoundInfMutable();
  if (auto sched = dyn_cast<LrScheduleOp>(op))
    return sched.getFoundInfMutable();
  return cast<AdamWUpdateOp>(op).getFoundInfMutable();
}

struct LossScalingPass : public ampc::impl::LossScalingBase<LossScalingPass> {
  using LossScalingBase::LossScalingBase;

  void runOnOperation() override;
  LogicalResult checkOptions(Location loc);
  DictionaryAttr configAttr(MLIRContext *ctx);
};

LogicalResult LossScalingPass::checkOptions(Location loc) {
  if (mode != "dynamic" && mode != "static" && mode != "none")
    return emitError(loc, "ampc-loss-scaling: mode must be dynamic, static or "
                          "none, got '")
           << mode << "'";
  if (!(init > 0.0) || !std::isfinite(init))
    return emitError(loc, "ampc-loss-scaling: init must be finite and > 0, "
                          "got ")
           << init;
  if (mode == "static")
    return success();
  if (!(growthFactor > 1.0) || !std::isfinite(growthFactor))
    return emitError(loc, "ampc-loss-scaling: growth-factor must be finite "
                          "and > 1, got ")
           << growthFactor;
  if (!(backoffFactor > 0.0 && backoffFactor < 1.0))
    return emitError(loc, "ampc-loss-scaling: backoff-factor must be in (0, "
                          "1), got ")
           << backoffFactor;
  if (growthInterval < 1 || growthInterval > INT32_MAX)
    return emitError(loc, "ampc-loss-scaling: growth-interval must be in [1, "
                          "2^31), got ")
           << static_cast<int64_t>(growthInterval);
  if (hysteresis < 1 || hysteresis > INT32_MAX)
    return emitError(loc, "ampc-loss-scaling: hysteresis must be in [1, "
                          "2^31), got ")
           << static_cast<int64_t>(hysteresis);
  if (minScale < 0.0 || maxScale < 0.0 || !std::isfinite(minScale) ||
      !std::isfinite(maxScale))
    return emitError(loc, "ampc-loss-scaling: min-scale and max-scale must be "
                          "finite and >= 0 (0: no bound)");
  if (minScale > 0.0 && maxScale > 0.0 && minScale > maxScale)
    return emitError(loc, "ampc-loss-scaling: min-scale ")
           << minScale << " exceeds max-scale " << maxScale;
  return success();
}

DictionaryAttr LossScalingPass::configAttr(MLIRContext *ctx) {
  Builder b(ctx);
  NamedAttrList attrs;
  attrs.append("mode", b.getStringAttr(mode));
  if (mode == "static") {
    attrs.append("scale", b.getF64FloatAttr(init));
    return attrs.getDictionary(ctx);
  }
  attrs.append("init", b.getF64FloatAttr(init));
  attrs.append("growth_factor", b.getF64FloatAttr(growthFactor));
  attrs.append("backoff_factor", b.getF64FloatAttr(backoffFactor));
  attrs.append("growth_interval", b.getI64IntegerAttr(growthInterval));
  attrs.append("hysteresis", b.getI64IntegerAttr(hysteresis));
  if (minScale > 0.0)
    attrs.append("min_scale", b.getF64FloatAttr(minScale));
  if (maxScale > 0.0)
    attrs.append("max_scale", b.getF64FloatAttr(maxScale));
  return attrs.getDictionary(ctx);
}

void LossScalingPass::runOnOperation() {
  func::FuncOp func = getOperation();
  MLIRContext *ctx = func.getContext();
  if (failed(checkOptions(func.getLoc())))
    return signalPassFailure();
  if (mode == "none" || func.isExternal() ||
      func->hasAttr(TGDialect::kLossScaleAttrName))
    return;
  // A step with an autocast(fp16) region gets the scaler an --amp=fp16 step
  // gets.
  if (onlyFP16Regions && !func.walk([](Operation *op) {
                            auto region = op->getAttrOfType<StringAttr>(
                                TGDialect::kRegionAttrName);
                            return region && region.getValue() == "fp16"
                                       ? WalkResult::interrupt()
                                       : WalkResult::advance();
                          }).wasInterrupted())
    return;
  if (!func.getBody().hasOneBlock())
    return;
  Block &block = func.getBody().front();

  SmallVector<GradSeedOp> seeds;
  for (auto seed : block.getOps<GradSeedOp>())
    seeds.push_back(seed);
  if (seeds.empty())
    return; // Not a training step.
  for (GradSeedOp seed : seeds)
    if (seed.getScale()) {
      seed.emitOpError("already has a loss scale, but the function has no "
                       "'")
          << TGDialect::kLossScaleAttrName << "' record";
      return signalPassFailure();
    }
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret) {
    func.emitOpError("loss scaling needs a function that ends with "
                     "'func.return'");
    return signalPassFailure();
  }

  // The backward graph: everything that depends on a seed, up to (not
  // through) the ops that consume gradients.
  llvm::DenseSet<Value> scaled;
  for (GradSeedOp seed : seeds)
    scaled.insert(seed.getResult());
  SmallVector<Operation *> consumers;
  for (Operation &op : block) {
    bool readsScaled = llvm::any_of(
        op.getOperands(), [&](Value v) { return scaled.contains(v); });
    if (isGradientConsumer(&op)) {
      if (!foundInfOperand(&op).empty()) {
        op.emitOpError("is already predicated on found_inf, but the step has "
                       "no loss scale");
        return signalPassFailure();
      }
      consumers.push_back(&op);
      continue;
    }
    if (readsScaled && !isa<func::ReturnOp>(op))
      for (Value r : op.getResults())
        scaled.insert(r);
  }

  // The gradients: what consumers read (a clip's inputs rather than its
  // outputs) and the returned values that come out of the backward graph.
  llvm::SetVector<Value> grads;
  for (Operation *op : consumers)
    for (Value g : gradOperands(op))
      if (!isa_and_nonnull<ClipGradNormOp>(g.getDefiningOp()))
        grads.insert(g);
  for (Value v : ret.getOperands())
    if (scaled.contains(v) && !isa_and_nonnull<GradSeedOp>(v.getDefiningOp()) &&
        // Gradient accumulation's micro-batch index (i32) is no gradient.
        isa<FloatType>(getElementTypeOrSelf(v.getType())))
      grads.insert(v);
  if (grads.empty()) {
    seeds.front().emitOpError(
        "starts a backward graph, but no optimizer update, gradient clipping "
        "or returned value reads a gradient that depends on it; loss scaling "
        "cannot tell which values to unscale");
    return signalPassFailure();
  }

  OpBuilder builder(ctx);
  LossScaleRoles roles;
  builder.setListener(&roles);
  Location loc = getTaggedLoc(seeds.front().getLoc(), kLossScaleLocTag);
  Type f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  Type i32Scalar = RankedTensorType::get({}, IntegerType::get(ctx, 32));

  // The scale: state of the signature (dynamic) or a constant (static).
  Value scale, tracker, hysteresisLeft;
  auto addState = [&](Type type, StringRef name, InitAttr init) -> Value {
    NamedAttrList attrs;
    attrs.append(TGDialect::kStateAttrName, builder.getStringAttr(name));
    attrs.append(TGDialect::kInitAttrName, init);
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(index, type, attrs.getDictionary(ctx), loc);
    return func.getArgument(index);
  };
  if (mode == "dynamic") {
    scale = addState(f32Scalar, "loss_scale.scale",
                     InitAttr::get(ctx, InitKind::full, init, 0.0));
    tracker = addState(i32Scalar, "loss_scale.growth_tracker",
                       InitAttr::get(ctx, InitKind::zeros, 0.0, 0.0));
    hysteresisLeft =
        addState(i32Scalar, "loss_scale.hysteresis_left",
                 InitAttr::get(ctx, InitKind::full, double(hysteresis), 0.0));
  } else {
    builder.setInsertionPointToStart(&block);
    scale = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(cast<RankedTensorType>(f32Scalar),
                               builder.getF32FloatAttr(float(init))));
  }
  for (GradSeedOp seed : seeds)
    seed.getScaleMutable().assign(scale);

  // One fused check-and-unscale, after the last gradient is computed.
  Operation *lastDef = nullptr;
  for (Value g : grads)
    if (Operation *def = g.getDefiningOp())
      if (!lastDef || lastDef->isBeforeInBlock(def))
        lastDef = def;
  if (lastDef)
    builder.setInsertionPointAfter(lastDef);
  else
    builder.setInsertionPointToStart(&block);
  if (auto *scaleDef = scale.getDefiningOp();
      scaleDef && lastDef && lastDef->isBeforeInBlock(scaleDef))
    builder.setInsertionPointAfter(scaleDef);
  auto check = CheckFiniteAndUnscaleOp::create(builder, loc,
                                               grads.getArrayRef(), scale);
  Value foundInf = check.getFoundInf();
  for (auto [g, u] : llvm::zip_equal(grads, check.getUnscaled()))
    Value(g).replaceUsesWithIf(u, [&](OpOperand &use) {
      Operation *owner = use.getOwner();
      return owner != check &&
             (isGradientConsumer(owner) ||
              isa<func::ReturnOp, GradOfOp>(owner));
    });
  // Data parallel (ampc-data-parallel ran): when the check also reads a
  // returned gradient that is each rank's own (an input's, no all-reduce's
  // result), found_inf is summed over the ranks (one more bucket, after the
  // gradients' ones), so every rank skips when one rank found a non-finite
  // value.
  if (auto dp = func->getAttrOfType<DictionaryAttr>(
          TGDialect::kDataParallelAttrName);
      dp && llvm::any_of(grads, [](Value g) {
        return !isa_and_nonnull<GradAllreduceWaitOp>(g.getDefiningOp());
      })) {
    auto buckets = dp.getAs<IntegerAttr>("buckets");
    IntegerAttr bucket =
        builder.getI64IntegerAttr(buckets ? buckets.getInt() : 0);
    builder.setInsertionPointAfter(check);
    auto start = GradAllreduceStartOp::create(builder, loc, foundInf, bucket,
                                              UnitAttr(), UnitAttr());
    foundInf = GradAllreduceWaitOp::create(builder, loc, start.getResults(),
                                           bucket)
                   .getResult(0);
  }
  for (Operation *op : consumers)
    foundInfOperand(op).assign(foundInf);

  if (mode == "dynamic") {
    builder.setInsertionPoint(ret);
    auto update = UpdateScaleOp::create(
        builder, loc, scale, tracker, hysteresisLeft, foundInf,
        builder.getF64FloatAttr(growthFactor),
        builder.getF64FloatAttr(backoffFactor),
        builder.getI64IntegerAttr(growthInterval),
        builder.getI64IntegerAttr(hysteresis),
        minScale > 0.0 ? builder.getF64FloatAttr(minScale) : FloatAttr(),
        maxScale > 0.0 ? builder.getF64FloatAttr(maxScale) : FloatAttr());
    static constexpr StringLiteral kStateNames[] = {
        "loss_scale.scale", "loss_scale.growth_tracker",
        "loss_scale.hysteresis_left"};
    for (auto [name, value] :
         llvm::zip_equal(kStateNames, update.getResults())) {
      NamedAttrList attrs;
      attrs.append(TGDialect::kStateOutAttrName, builder.getStringAttr(name));
      (void)func.insertResult(func.getNumResults(), value.getType(),
                              attrs.getDictionary(ctx));
      ret->insertOperands(ret->getNumOperands(), value);
    }
  }

  // A hand-written step may update one parameter before computing another
  // one's gradient; restore def-before-use after the rewiring.
  if (!sortTopologically(&block)) {
    func.emitOpError("loss scaling made a cycle (internal error)");
    return signalPassFailure();
  }
  func->setAttr(TGDialect::kLossScaleAttrName, configAttr(ctx));
}

} // namespace
