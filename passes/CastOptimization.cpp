//===- CastOptimization.cpp - fuse AMP casts into kernels -----------------===//
//
// The `fast` policy of automatic mixed precision: producer fusion (a value
// whose every reader reads the same cast of it is stored in that type) and
// consumer fusion (a non-GEMM reader loads the uncast value and converts on
// load). Both keep every op's compute type and never add a rounding; the
// pass description in Passes.td states the guarantee.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace ampc {
#define GEN_PASS_DEF_CASTOPTIMIZATION
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;

namespace {

/// A cast that automatic mixed precision is responsible for
/// (`tg.role = "amp"`): one it inserted, or the cast back autodiff made as its
/// gradient. Casts of the source, and their gradients, are never changed.
bool isAmpCast(Operation *op) {
  return isa<tg::CastOp>(op) && hasRole(op, Role::Amp);
}

/// Ops whose kernels keep their declared types: casts, constants, the
/// training ops whose results are values of other ops' types, and the
/// optimizer and loss-scaling ops (multi-tensor kernels over f32 state). What
/// an op is, not which pass made it, decides: a hand-written update is
/// treated like one the optimizer expansion made.
bool isStructural(Operation *op) {
  return isa<tg::CastOp, tg::GradOp, tg::GradSeedOp, tg::MinimizeOp,
             tg::SgdUpdateOp, tg::AdamWUpdateOp, tg::ClipGradNormOp,
             tg::CheckFiniteAndUnscaleOp, tg::UpdateScaleOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

/// Whether `op` may store `result` as `element` (the dialect's fused store).
bool canStoreAs(Operation *op, OpResult result, Type element) {
  if (!isa_and_nonnull<tg::TGDialect>(op->getDialect()) || isStructural(op))
    return false;
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return false;
  SmallVector<Type> proposed(op->getResultTypes());
  proposed[result.getResultNumber()] =
      cast<ShapedType>(result.getType()).clone(element);
  return infer.isCompatibleReturnTypes(op->getResultTypes(), proposed);
}

/// Pins the op's current compute type, so later changes to its operand or
/// result types do not change what it computes in.
bool pinComputeType(Operation *op) {
  if (op->hasAttr(tg::TGDialect::kComputeAttrName))
    return true;
  Type compute = tg::getComputeType(op);
  if (!compute || !tg::isFloatElement(compute) ||
      !llvm::any_of(op->getResultTypes(), [](Type t) {
        return tg::isFloatElement(getElementTypeOrSelf(t));
      }))
    return false;
  op->setAttr(tg::TGDialect::kComputeAttrName, TypeAttr::get(compute));
  return true;
}

class CastOptimizationPass
    : public ampc::impl::CastOptimizationBase<CastOptimizationPass> {
public:
  void runOnOperation() override {
    // Blocks nested in regions (scf.if, scf.for, ...) too.
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      fuseIntoProducers(*block);
      fuseIntoConsumers(*block);
    }
  }

private:
  void fuseIntoProducers(Block &block);
  void fuseIntoConsumers(Block &block);
};

} // namespace

void CastOptimizationPass::fuseIntoProducers(Block &block) {
  for (Operation &op : block) {
    for (OpResult result : op.getResults()) {
      if (result.use_empty() ||
          !tg::isFloatElement(getElementTypeOrSelf(result.getType())))
        continue;
      // Every reader must read the same AMP cast type.
      Type target;
      bool allCasts = llvm::all_of(result.getUsers(), [&](Operation *user) {
        if (!isAmpCast(user))
          return false;
        Type t = getElementTypeOrSelf(user->getResult(0).getType());
        if (target && target != t)
          return false;
        target = t;
        return true;
      });
      if (!allCasts || !target || !canStoreAs(&op, result, target) ||
          !pinComputeType(&op))
        continue;
      result.setType(cast<ShapedType>(result.getType()).clone(target));
      for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
        user->getResult(0).replaceAllUsesWith(result);
        user->erase();
      }
    }
  }
}

void CastOptimizationPass::fuseIntoConsumers(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isAmpCast(&op))
      continue;
    Value source = op.getOperand(0);
    Value castValue = op.getResult(0);
    Type from = getElementTypeOrSelf(source.getType()),
         to = getElementTypeOrSelf(castValue.getType());
    if (!tg::isFloatElement(from) || !tg::isFloatElement(to))
      continue;
    // A reader may load-convert when its kernel can and it computes in the
    // cast's type (it then sees exactly the values the cast would give).
    SmallVector<OpOperand *> fusable;
    bool allFusable = true;
    for (OpOperand &use : castValue.getUses()) {
      Operation *user = use.getOwner();
      if (tg::kernelConvertsOnLoad(use) && tg::getComputeType(user) == to)
        fusable.push_back(&use);
      else
        allFusable = false;
    }
    if (fusable.empty())
      continue;
    unsigned bitsFrom = from.getIntOrFloatBitWidth();
    unsigned bitsTo = to.getIntOrFloatBitWidth();
    if (bitsTo <= bitsFrom) {
      // Narrowing: the readers then load the wider value. Worth it only when
      // the cast kernel disappears and its bytes (read + write) cover what
      // the readers load in addition.
      if (!allFusable || fusable.size() * (bitsFrom - bitsTo) >
                             static_cast<size_t>(bitsFrom + bitsTo))
        continue;
    }
    for (OpOperand *use : fusable) {
      Operation *user = use->getOwner();
      if (!pinComputeType(user))
        continue;
      use->set(source);
    }
    if (castValue.use_empty())
      op.erase();
  }
}
