//===- Autodiff.cpp - tg.grad to backward graphs --------------------------===//
//
// Reverse-mode automatic differentiation (the `ampc-autodiff` pass, see its
// description in Passes.td). The pass only walks the graph, decides which
// ops are on a path from the loss, and accumulates; every gradient rule is
// the op's own `GradientOpInterface::buildGradient`. The engine,
// `ampc::differentiate` (Differentiate.h), is also what
// `ampc-optimizer-expansion` (OptimizerExpansion.cpp) differentiates a
// `tg.minimize` with.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGInterfaces.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Differentiate.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace ampc {
#define GEN_PASS_DEF_AUTODIFF
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return false;
  return tg::isAnyFloatElement(t.getElementType());
}

/// Gives every op a builder inserts a role (`tg.role`): what later passes
/// and the report decide from. The backward of a cast that automatic mixed
/// precision inserted is the cast back, which is AMP's as well.
struct RoleListener : public OpBuilder::Listener {
  explicit RoleListener(Role role) : role(role) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    setRole(op, forwardIsAmpCast && isa<CastOp>(op) ? Role::Amp : role);
  }
  Role role;
  bool forwardIsAmpCast = false;
};

/// Whether `v` is a splat constant of zero (either sign): the padding a
/// slice's gradient rule puts around its gradient.
bool isZeroSplat(Value v) {
  auto cst = v.getDefiningOp<ConstantOp>();
  if (!cst)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
  if (!dense || !dense.isSplat() ||
      !isa<FloatType>(dense.getElementType()))
    return false;
  return dense.getSplatValue<APFloat>().isZero();
}

/// The sum of two gradients of one value, each a `tg.concat` along the same
/// dim of zero padding and gradient pieces (what `tg.slice`'s rule builds),
/// whose gradient pieces do not overlap: one concat of those pieces, with
/// zeros where neither has one. Null where `a` and `b` are not two such
/// concats. Each element is then the one piece's value itself, where the
/// add gave that value plus zero: the same except that a -0 stays -0 (an
/// add of +0 gives +0).
Value mergePaddedGradients(OpBuilder &builder, Location loc, Value a,
                           Value b) {
  auto ca = a.getDefiningOp<ConcatOp>(), cb = b.getDefiningOp<ConcatOp>();
  if (!ca || !cb || ca == cb || ca.getDim() != cb.getDim() ||
      a.getType() != b.getType())
    return Value();
  auto type = cast<RankedTensorType>(a.getType());
  int64_t dim = ca.getDim();
  struct Piece {
    int64_t begin, end;
    Value value;
  };
  SmallVector<Piece> pieces;
  for (ConcatOp c : {ca, cb}) {
    int64_t at = 0;
    for (Value in : c.getInputs()) {
      auto t = cast<RankedTensorType>(in.getType());
      if (t.getElementType() != type.getElementType())
        return Value();
      int64_t size = t.getDimSize(dim);
      if (!isZeroSplat(in))
        pieces.push_back({at, at + size, in});
      at += size;
    }
  }
  llvm::sort(pieces, [](const Piece &x, const Piece &y) {
    return x.begin < y.begin;
  });
  for (size_t i = 1; i < pieces.size(); ++i)
    if (pieces[i].begin < pieces[i - 1].end)
      return Value();
  SmallVector<Value> parts;
  SmallVector<int64_t> shape(type.getShape());
  auto zeros = [&](int64_t size) {
    shape[dim] = size;
    auto t = RankedTensorType::get(shape, type.getElementType());
    parts.push_back(ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(
            t, builder.getFloatAttr(type.getElementType(), 0.0))));
  };
  int64_t at = 0;
  for (const Piece &p : pieces) {
    if (p.begin > at)
      zeros(p.begin - at);
    parts.push_back(p.value);
    at = p.end;
  }
  if (at < type.getDimSize(dim))
    zeros(type.getDimSize(dim) - at);
  if (parts.size() == 1)
    return parts.front();
  return ConcatOp::create(builder, loc, parts, dim).getResult();
}

} // namespace

/// Reverse-mode differentiation of one scalar `loss` with respect to `wrt`,
/// inserting the backward graph before `anchor` (the tg.grad or
/// tg.minimize being expanded). Returns one gradient per `wrt` value (null
/// where the loss does not reach it).
FailureOr<SmallVector<Value>> ampc::differentiate(Operation *anchor,
                                                  Value loss, ValueRange wrt) {
  Block *block = anchor->getBlock();

  // Values the loss depends on (within this block).
  llvm::DenseSet<Value> reachesLoss;
  SmallVector<Value> work{loss};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!reachesLoss.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (def && def->getBlock() == block)
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }

  // Values that depend on a `wrt` value and reach the loss: the active set.
  // Only float tensors carry gradients.
  llvm::DenseSet<Value> active;
  for (Value v : wrt)
    if (reachesLoss.contains(v) && isFloatTensor(v))
      active.insert(v);
  for (Operation &op : *block) {
    if (&op == anchor)
      break;
    if (!llvm::any_of(op.getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (reachesLoss.contains(r) && isFloatTensor(r))
        active.insert(r);
  }

  SmallVector<Value> result(wrt.size());
  if (!active.contains(loss))
    return result;

  OpBuilder builder(anchor);
  RoleListener roles(Role::Grad);
  builder.setListener(&roles);
  llvm::DenseMap<Value, Value> grads;
  // Padded gradients a merge replaced: erased at the end where nothing
  // reads them (with the zeros only they read).
  llvm::SetVector<Operation *> replaced;
  auto accumulate = [&](Value v, Value g, Location loc) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (inserted)
      return;
    // Slices of one value: their padded gradients merged, not added.
    if (Value merged = mergePaddedGradients(builder, loc, it->second, g)) {
      replaced.insert(it->second.getDefiningOp());
      replaced.insert(g.getDefiningOp());
      it->second = merged;
    } else
      it->second = AddOp::create(builder, loc, it->second, g);
  };
  Operation *lossDef = loss.getDefiningOp();
  Location seedLoc = getTaggedLoc(lossDef ? lossDef->getLoc() : loss.getLoc(),
                                  kGradLocTag);
  grads[loss] = GradSeedOp::create(builder, seedLoc, loss);

  // Reverse program order is a reverse topological order of the block.
  for (Operation &op :
       llvm::reverse(llvm::make_range(block->begin(), anchor->getIterator()))) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op.getResults()) {
      Value g = active.contains(r) ? grads.lookup(r) : Value();
      any |= static_cast<bool>(g);
      resultGrads.push_back(g);
    }
    if (!any)
      continue;
    auto iface = dyn_cast<GradientOpInterface>(&op);
    if (!iface) {
      InFlightDiagnostic diag =
          op.emitOpError("has no gradient rule, but the loss depends on it "
                         "through a value being differentiated");
      diag.attachNote(anchor->getLoc()) << "differentiated here";
      return failure();
    }
    SmallVector<bool> wanted;
    for (Value operand : op.getOperands())
      wanted.push_back(active.contains(operand));
    SmallVector<Value> operandGrads;
    roles.forwardIsAmpCast = isa<CastOp>(op) && hasRole(&op, Role::Amp);
    LogicalResult built =
        iface.buildGradient(builder, resultGrads, wanted, operandGrads);
    roles.forwardIsAmpCast = false;
    if (failed(built))
      return failure();
    if (operandGrads.size() != op.getNumOperands())
      return op.emitOpError("gradient rule returned ")
             << operandGrads.size() << " gradients for " << op.getNumOperands()
             << " operands";
    for (auto [operand, g, want] :
         llvm::zip_equal(op.getOperands(), operandGrads, wanted)) {
      if (!g || !want)
        continue;
      if (g.getType() != operand.getType())
        return op.emitOpError("gradient rule produced ")
               << g.getType() << " for an operand of type "
               << operand.getType();
      accumulate(operand, g, getGradientLoc(&op));
    }
  }

  llvm::DenseSet<Value> kept;
  for (auto &entry : grads)
    kept.insert(entry.second);
  for (Operation *op : replaced) {
    if (!op->use_empty() || kept.contains(op->getResult(0)))
      continue;
    llvm::SetVector<Value> inputs(op->operand_begin(), op->operand_end());
    op->erase();
    for (Value in : inputs)
      if (auto zero = in.getDefiningOp<ConstantOp>();
          zero && zero->use_empty() && !kept.contains(in))
        zero->erase();
  }

  for (auto [i, v] : llvm::enumerate(wrt))
    result[i] = active.contains(v) ? grads.lookup(v) : Value();
  return result;
}

namespace {

struct AutodiffPass : public ampc::impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override;

  LogicalResult expandGrad(GradOp op);
};

LogicalResult AutodiffPass::expandGrad(GradOp op) {
  FailureOr<SmallVector<Value>> grads =
      differentiate(op, op.getLoss(), op.getWrt());
  if (failed(grads))
    return failure();
  OpBuilder builder(op);
  RoleListener roles(Role::Grad);
  builder.setListener(&roles);
  for (auto [result, g, v] : llvm::zip_equal(op.getGrads(), *grads,
                                             op.getWrt())) {
    if (!g) {
      // The loss does not reach `v`: its gradient is zero.
      auto type = cast<RankedTensorType>(v.getType());
      g = ConstantOp::create(
          builder, getTaggedLoc(op.getLoc(), kGradLocTag),
          DenseElementsAttr::get(
              type, builder.getFloatAttr(type.getElementType(), 0.0)));
    }
    // What the gradient is of, for the passes after (data parallel) and
    // for readers of the IR; an unused gradient gets none (it stays dead).
    if (!result.use_empty())
      GradOfOp::create(builder, getTaggedLoc(op.getLoc(), kGradLocTag), g, v);
    result.replaceAllUsesWith(g);
  }
  op.erase();
  return success();
}

void AutodiffPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  SmallVector<GradOp> targets;
  func.walk([&](GradOp op) { targets.push_back(op); });
  if (targets.empty())
    return;
  if (!func.getBody().hasOneBlock()) {
    func.emitOpError("autodiff needs a graph with a single block");
    return signalPassFailure();
  }
  for (GradOp op : targets)
    if (failed(expandGrad(op)))
      return signalPassFailure();
}

} // namespace
