//===- AutoMixedPrecision.cpp - automatic mixed precision -----------------===//
//
// The `reference` rewriting of amp.md (exactly torch.autocast, explicit casts,
// each value cast at most once per type), followed for `policy=fast` by the
// cast-optimization pass. The pass description in Passes.td states the rules
// and the guarantee.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/AMPPolicy.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopedHashTable.h"

namespace ampc {
#define GEN_PASS_DEF_AUTOMIXEDPRECISION
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::amp;

namespace {

bool isFloatValue(Value v) {
  return tg::isFloatElement(getElementTypeOrSelf(v.getType()));
}

Type withElement(Type t, Type element) {
  if (auto shaped = dyn_cast<ShapedType>(t))
    return shaped.clone(element);
  return element;
}

unsigned bitWidth(Type t) { return t.getIntOrFloatBitWidth(); }

/// How an op is rewritten: its precision decision.
struct Decision {
  enum Kind { Keep, Follow, Compute } kind = Keep;
  /// For `Compute`: the type every float input is cast to.
  Type type;
};

class AutoMixedPrecisionPass
    : public ampc::impl::AutoMixedPrecisionBase<AutoMixedPrecisionPass> {
public:
  using Base::Base;

  LogicalResult initialize(MLIRContext *ctx) override {
    std::string bad;
    std::optional<PolicyTable> built =
        buildPolicyTable(fp32Ops, lowerOps, followOps, bad);
    if (!built)
      return emitError(UnknownLoc::get(ctx))
             << "ampc-auto-mixed-precision: unknown op '" << bad
             << "' in a class override (expected a tg op such as 'gelu' or "
                "'tg.gelu', or a dialect-qualified name such as 'arith.mulf')";
    table = std::move(*built);
    return success();
  }

  void runOnOperation() override;

private:
  PolicyTable table;

  // Per-function state. Casts are cached per block scope: a cast placed in a
  // block dominates the rest of it and the regions nested in it.
  using CastCache = llvm::ScopedHashTable<std::pair<Value, Type>, Value>;
  /// Points at the cache of the running function (the pass must stay
  /// copyable, the table is not).
  CastCache *castCache = nullptr;
  /// The type a value had before this pass changed it.
  DenseMap<Value, Type> originalTypes;
  /// While a foreign op is rewritten tentatively: the casts made for it (and
  /// their cache keys), to remove if the rewrite is undone.
  SmallVector<std::pair<std::pair<Value, Type>, Value>> *tentativeCasts =
      nullptr;
  bool sawUnknownOp = false;

  Type lowElementType() {
    return lowType == LowType::BF16 ? Type(BFloat16Type::get(&getContext()))
                                    : Type(Float16Type::get(&getContext()));
  }
  /// The low type `lower` ops compute in at `op`: its autocast region's
  /// (`tg.region = "fp16" | "bf16"`), else the pass's.
  Type lowElementTypeAt(Operation *op) {
    if (auto region =
            op->getAttrOfType<StringAttr>(tg::TGDialect::kRegionAttrName)) {
      if (region.getValue() == "fp16")
        return Float16Type::get(&getContext());
      if (region.getValue() == "bf16")
        return BFloat16Type::get(&getContext());
    }
    return lowElementType();
  }
  Decision decide(Operation *op);
  Value castTo(OpBuilder &b, Operation *consumer, Value v, Type element);
  Value convertConstant(OpBuilder &b, Operation *constant, Value v,
                        Type element);
  void updateResultTypes(Operation *op, const Decision &d);
  void rewriteReturn(func::ReturnOp ret, func::FuncOp func);
  void processBlock(Block &block, func::FuncOp func);
  void rewriteTGOp(Operation *op, const Decision &d);
  LogicalResult rewriteForeignOp(Operation *&op, const Decision &d);
  FailureOr<Operation *> rebuildLinalgNamedOp(linalg::LinalgOp op,
                                              const Decision &d,
                                              std::string &reason);
  void restoreOperands(Operation *op);
  Type originalType(Value v) const {
    auto it = originalTypes.find(v);
    return it == originalTypes.end() ? v.getType() : it->second;
  }
};

} // namespace

/// PyTorch's promotion with its categories: dimensioned tensors decide; rank-0
/// tensors only when there is no dimensioned float operand; bare numbers
/// (constants) only when there is nothing else.
static Type promoteType(Operation *op) {
  Type dims, zeroDim, numbers;
  auto meet = [](Type acc, Type t) {
    return acc ? ampc::tg::promoteElementTypes(acc, t) : t;
  };
  for (Value v : op->getOperands()) {
    if (!isFloatValue(v))
      continue;
    Type e = getElementTypeOrSelf(v.getType());
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    bool rank0 = tensor && tensor.getRank() == 0;
    if (rank0 && v.getDefiningOp() &&
        v.getDefiningOp()->hasTrait<OpTrait::ConstantLike>())
      numbers = meet(numbers, e);
    else if (rank0)
      zeroDim = meet(zeroDim, e);
    else
      dims = meet(dims, e);
  }
  return dims ? dims : zeroDim ? zeroDim : numbers;
}

Decision AutoMixedPrecisionPass::decide(Operation *op) {
  // Explicit casts, constants (rematerialised where they are read) and ops
  // whose precision is already decided stay as they are.
  if (isa<tg::CastOp>(op) || op->hasTrait<OpTrait::ConstantLike>() ||
      op->hasAttr(tg::TGDialect::kComputeAttrName))
    return {};
  // Integer-only ops are never touched.
  bool hasFloat = llvm::any_of(op->getOperands(), isFloatValue) ||
                  llvm::any_of(op->getResults(), isFloatValue);
  if (!hasFloat)
    return {};
  // f64 is never cast (autocast casts only float32 tensors): an op with an
  // f64 operand or result computes at the types it was written with, which
  // promote to f64, whatever its class, region or mode.
  auto isF64Value = [](Value v) { return getElementTypeOrSelf(v.getType()).isF64(); };
  if (llvm::any_of(op->getOperands(), isF64Value) ||
      llvm::any_of(op->getResults(), isF64Value))
    return {};
  // The innermost autocast region of the op decides, else the graph's mode:
  // outside regions under --amp=off everything (pins too) is as written.
  auto region = op->getAttrOfType<StringAttr>(tg::TGDialect::kRegionAttrName);
  if (!region && !outsideRegions)
    return {};
  // `grad` is a statement of the backward, not an op to compute: it follows
  // the types of its operands whatever its region.
  if (region && isa<tg::GradOp>(op))
    return {Decision::Follow, Type()};
  if (auto pin = op->getAttrOfType<TypeAttr>(tg::TGDialect::kPinAttrName))
    return {Decision::Compute, pin.getValue()};
  // autocast(off): as if pinned f32.
  if (region && region.getValue() == "off")
    return {Decision::Compute, Float32Type::get(&getContext())};

  std::optional<OpClass> cls = table.lookup(op->getName().getStringRef());
  if (!cls) {
    if (unknownOps == UnknownOpMode::Error) {
      op->emitError("'") << op->getName()
                         << "' is not in the AMP policy table (classify it "
                            "with --amp-fp32=/--amp-lower=/--amp-follow= or "
                            "ampc::amp::registerOpClass)";
      sawUnknownOp = true;
      return {};
    }
    op->emitRemark("'") << op->getName()
                        << "' is not in the AMP policy table; treated as "
                           "follow";
    cls = OpClass::Follow;
  }
  switch (*cls) {
  case OpClass::Lower:
    return {Decision::Compute, lowElementTypeAt(op)};
  case OpClass::FP32:
    return {Decision::Compute, Float32Type::get(&getContext())};
  case OpClass::Promote:
    if (Type t = promoteType(op))
      return {Decision::Compute, t};
    return {Decision::Follow, Type()};
  case OpClass::Follow:
    return {Decision::Follow, Type()};
  }
  return {};
}

/// A float constant converted to `element` (round-to-nearest-even), shared
/// by every reader: a bare number is not an op of the program, so it costs no
/// cast kernel.
Value AutoMixedPrecisionPass::convertConstant(OpBuilder &b, Operation *constant,
                                              Value v, Type element) {
  auto attr = dyn_cast<DenseElementsAttr>(
      constant->getAttrOfType<ElementsAttr>("value"));
  if (!isa<tg::ConstantOp>(constant) || !attr)
    return {};
  auto floatType = cast<FloatType>(element);
  auto newType = cast<RankedTensorType>(attr.getType()).clone(element);
  SmallVector<APFloat> values;
  for (APFloat x : attr.getValues<APFloat>()) {
    bool lost;
    x.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &lost);
    values.push_back(x);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(constant);
  return tg::ConstantOp::create(b, constant->getLoc(),
                                DenseElementsAttr::get(newType, values));
}

Value AutoMixedPrecisionPass::castTo(OpBuilder &b, Operation *consumer, Value v,
                                     Type element) {
  auto key = std::make_pair(v, element);
  if (Value cached = castCache->lookup(key))
    return cached;
  // Casts read `v` where it is defined: before the consumer, in its block.
  Value result;
  Operation *def = v.getDefiningOp();
  if (def && def->hasTrait<OpTrait::ConstantLike>())
    result = convertConstant(b, def, v, element);
  if (!result) {
    Location loc = FusedLoc::get(&getContext(), {consumer->getLoc()},
                                 StringAttr::get(&getContext(), "amp"));
    Type from = getElementTypeOrSelf(v.getType());
    Type to = withElement(v.getType(), element);
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    if (tensor && tensor.hasStaticShape()) {
      result = tg::CastOp::create(b, loc, to, v);
    } else if (bitWidth(from) < bitWidth(element)) {
      // Scalars and dynamically shaped tensors of other dialects.
      result = arith::ExtFOp::create(b, loc, to, v);
    } else if (bitWidth(from) > bitWidth(element)) {
      result = arith::TruncFOp::create(b, loc, to, v);
    } else {
      // f16 <-> bf16: exactly through f32, then one rounding.
      Type f32 = withElement(v.getType(), b.getF32Type());
      Value wide = arith::ExtFOp::create(b, loc, f32, v);
      result = arith::TruncFOp::create(b, loc, to, wide);
      setRole(wide.getDefiningOp(), Role::Amp);
    }
    setRole(result.getDefiningOp(), Role::Amp);
  }
  castCache->insert(key, result);
  if (tentativeCasts)
    tentativeCasts->push_back({key, result});
  return result;
}

void AutoMixedPrecisionPass::updateResultTypes(Operation *op,
                                               const Decision &d) {
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (succeeded(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)) &&
        types.size() == op->getNumResults()) {
      for (auto [result, type] : llvm::zip_equal(op->getResults(), types)) {
        if (result.getType() != type)
          originalTypes.try_emplace(result, result.getType());
        result.setType(type);
      }
      return;
    }
  }
  // Ops without type inference: float results take the compute type (or, for
  // follow, the common type of the float inputs when there is one).
  Type target = d.type;
  if (d.kind == Decision::Follow) {
    for (Value v : op->getOperands()) {
      if (!isFloatValue(v))
        continue;
      Type e = getElementTypeOrSelf(v.getType());
      if (target && target != e)
        return;
      target = e;
    }
  }
  if (!target)
    return;
  for (Value result : op->getResults()) {
    if (!isFloatValue(result))
      continue;
    Type type = withElement(result.getType(), target);
    if (result.getType() != type)
      originalTypes.try_emplace(result, result.getType());
    result.setType(type);
  }
}

void AutoMixedPrecisionPass::rewriteReturn(func::ReturnOp ret,
                                           func::FuncOp func) {
  OpBuilder b(ret);
  for (auto [i, declared] :
       llvm::enumerate(func.getFunctionType().getResults())) {
    Value v = ret.getOperand(i);
    if (v.getType() == declared || !isFloatValue(v) ||
        !tg::isFloatElement(getElementTypeOrSelf(declared)))
      continue;
    ret.setOperand(i, castTo(b, ret, v, getElementTypeOrSelf(declared)));
  }
}

/// Casts every float operand of `op` whose type this pass changed back to
/// the type it had, so `op` sees exactly the types it was written with.
void AutoMixedPrecisionPass::restoreOperands(Operation *op) {
  OpBuilder b(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    Type original = originalType(v);
    if (original == v.getType() || !isFloatValue(v) ||
        !tg::isFloatElement(getElementTypeOrSelf(original)))
      continue;
    operand.set(castTo(b, op, v, getElementTypeOrSelf(original)));
  }
}

void AutoMixedPrecisionPass::rewriteTGOp(Operation *op, const Decision &d) {
  if (d.kind == Decision::Keep)
    return;
  if (d.kind == Decision::Compute) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!isFloatValue(v) || getElementTypeOrSelf(v.getType()) == d.type)
        continue;
      operand.set(castTo(b, op, v, d.type));
    }
  }
  updateResultTypes(op, d);
}

/// An op of another dialect (or an unregistered one). `tg` ops read mixed
/// float types by definition; other ops may tie their types together (same
/// operand and result types, destination operands, region arguments), so
/// the rewrite is checked with the op's own verifier:
///  - ops with regions and calls tie types to their bodies or callees: a
///    `follow` one is kept as written (its operands cast back), a
///    `lower`/`fp32`/`promote` one is refused;
///  - otherwise the class's casts are applied and the results retyped
///    (`follow`: only an op whose float operands and results had one type
///    follows, reading them at their widest current type); if the op then
///    fails to verify, it is kept as written when `follow`, refused with the
///    verifier's reason otherwise.
/// A linalg named op (its body comes from the op's region builder) made to
/// compute in `d.type`: its inputs are cast to it and the op is rebuilt with
/// the body its region builder makes for the new types. A `lower` op keeps
/// its outputs (the accumulator) in the type they were written with, so it
/// accumulates in f32 from low inputs, and its results are rounded to low
/// after it, as autocast rounds a GEMM's result; `fp32` and `promote` ops
/// compute and store in `d.type`. The new op carries `tg.compute` (what it
/// computes in), so running the pass again keeps it. Returns the op that
/// replaces `op`.
FailureOr<Operation *>
AutoMixedPrecisionPass::rebuildLinalgNamedOp(linalg::LinalgOp op,
                                             const Decision &d,
                                             std::string &reason) {
  auto regionBuilder = op.getRegionBuilder();
  bool lower = d.type == lowElementTypeAt(op) &&
               table.lookup(op->getName().getStringRef()) == OpClass::Lower;
  OpBuilder b(op);
  SmallVector<Value> inputs, outputs;
  for (OpOperand *in : op.getDpsInputOperands()) {
    Value v = in->get();
    if (isFloatValue(v) && getElementTypeOrSelf(v.getType()) != d.type)
      v = castTo(b, op, v, d.type);
    inputs.push_back(v);
  }
  for (OpOperand &out : op.getDpsInitsMutable()) {
    Value v = out.get();
    Type target = lower ? getElementTypeOrSelf(originalType(v)) : d.type;
    if (isFloatValue(v) && tg::isFloatElement(target) &&
        getElementTypeOrSelf(v.getType()) != target)
      v = castTo(b, op, v, target);
    outputs.push_back(v);
  }
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(inputs);
  state.addOperands(outputs);
  state.addAttributes(op->getAttrs());
  for (Value v : outputs)
    state.addTypes(v.getType());
  Region *region = state.addRegion();
  auto *body = new Block();
  region->push_back(body);
  for (Value v : llvm::concat<Value>(inputs, outputs))
    body->addArgument(getElementTypeOrSelf(v.getType()), op->getLoc());
  {
    ImplicitLocOpBuilder ib(op->getLoc(), op->getContext());
    ib.setInsertionPointToStart(body);
    regionBuilder(ib, *body, op->getAttrs(),
                  [&]() { return op->emitError(); });
  }
  Operation *rebuilt = b.create(state);
  bool verifies;
  {
    ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &diag) {
      if (reason.empty())
        reason = diag.str();
      return success();
    });
    verifies = succeeded(verify(rebuilt, /*verifyRecursively=*/true));
  }
  if (!verifies) {
    rebuilt->erase();
    return failure();
  }
  // Decided, like a tg op with `tg.compute`: a second run keeps it.
  rebuilt->setAttr(tg::TGDialect::kComputeAttrName, TypeAttr::get(d.type));
  b.setInsertionPointAfter(rebuilt);
  for (auto [old, now] : llvm::zip_equal(op->getResults(), rebuilt->getResults())) {
    Value replacement = now;
    if (lower && isFloatValue(now) &&
        getElementTypeOrSelf(now.getType()) != d.type)
      replacement = castTo(b, rebuilt, now, d.type);
    if (replacement.getType() != old.getType())
      originalTypes.try_emplace(replacement, old.getType());
    if (now != replacement && now.getType() != old.getType())
      originalTypes.try_emplace(now, old.getType());
    old.replaceAllUsesWith(replacement);
  }
  op->erase();
  return rebuilt;
}

LogicalResult AutoMixedPrecisionPass::rewriteForeignOp(Operation *&op,
                                                       const Decision &d) {
  auto fail = [&](const Twine &why) {
    std::string compute;
    llvm::raw_string_ostream os(compute);
    os << d.type;
    op->emitError("'") << op->getName() << "' must compute in " << compute
                       << " (its AMP class), but automatic mixed precision "
                          "cannot retype it: "
                       << why
                       << "; classify it 'follow' to keep it in the types "
                          "it was written with";
    return failure();
  };
  if (d.kind == Decision::Keep) {
    restoreOperands(op);
    return success();
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (linalgOp && d.kind == Decision::Compute &&
      linalgOp.hasPureTensorSemantics() && linalgOp.getRegionBuilder() &&
      !isa<linalg::GenericOp>(op)) {
    std::string reason;
    FailureOr<Operation *> rebuilt =
        rebuildLinalgNamedOp(linalgOp, d, reason);
    if (failed(rebuilt))
      return fail("rebuilt for its class it does not verify (" + reason + ")");
    op = *rebuilt;
    return success();
  }
  bool tied = op->getNumRegions() > 0 || isa<CallOpInterface>(op);
  if (tied) {
    if (d.kind == Decision::Compute)
      return fail(op->getNumRegions()
                      ? "its regions' types are tied to its operands and "
                        "results"
                      : "its operand and result types are tied to its callee");
    restoreOperands(op);
    return success();
  }

  Decision apply = d;
  if (d.kind == Decision::Follow) {
    // Follow only an op that computed in the type of its float operands.
    Type common, widest;
    bool uniform = true;
    for (Value v : op->getOperands()) {
      if (!isFloatValue(v))
        continue;
      Type e = getElementTypeOrSelf(originalType(v));
      uniform &= !common || common == e;
      common = e;
      Type now = getElementTypeOrSelf(v.getType());
      widest = widest ? tg::promoteElementTypes(widest, now) : now;
    }
    for (Value r : op->getResults())
      if (isFloatValue(r))
        uniform &= !common || getElementTypeOrSelf(r.getType()) == common;
    if (!common || !uniform) {
      restoreOperands(op);
      return success();
    }
    apply = {Decision::Compute, widest};
  }

  SmallVector<Value> oldOperands(op->getOperands());
  SmallVector<Type> oldResults(op->getResultTypes());
  SmallVector<std::pair<std::pair<Value, Type>, Value>> madeCasts;
  tentativeCasts = &madeCasts;
  {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!isFloatValue(v) || getElementTypeOrSelf(v.getType()) == apply.type)
        continue;
      operand.set(castTo(b, op, v, apply.type));
    }
  }
  updateResultTypes(op, apply);
  tentativeCasts = nullptr;

  std::string reason;
  bool verifies;
  {
    ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &diag) {
      if (reason.empty())
        reason = diag.str();
      return success();
    });
    verifies = succeeded(verify(op, /*verifyRecursively=*/false));
  }
  if (verifies)
    return success();
  // Undo: the op as written.
  for (auto [operand, old] : llvm::zip_equal(op->getOpOperands(), oldOperands))
    operand.set(old);
  for (auto [result, type] : llvm::zip_equal(op->getResults(), oldResults)) {
    result.setType(type);
    originalTypes.erase(result);
  }
  // The casts made for the attempt, unless something else reads them now;
  // a null entry hides them from the cache for the rest of the block.
  for (auto &[key, cast] : llvm::reverse(madeCasts)) {
    if (!cast.use_empty())
      continue;
    castCache->insert(key, Value());
    Operation *def = cast.getDefiningOp();
    SmallVector<Value> inputs(def->getOperands());
    def->erase();
    // f16 <-> bf16 goes through an f32 value made for it.
    for (Value in : inputs)
      if (Operation *wide = in.getDefiningOp();
          wide && in.use_empty() && hasRole(wide, Role::Amp))
        wide->erase();
  }
  if (d.kind == Decision::Compute)
    return fail("with its operands cast it does not verify (" + reason +
                ")");
  restoreOperands(op);
  return success();
}

void AutoMixedPrecisionPass::processBlock(Block &block, func::FuncOp func) {
  CastCache::ScopeTy scope(*castCache);
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto ret = dyn_cast<func::ReturnOp>(op);
        ret && ret->getParentOp() == func) {
      rewriteReturn(ret, func);
      continue;
    }
    // An unregistered op may be a terminator: the last op of a nested block
    // is taken as one.
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        (!op.isRegistered() && &op == &block.back() &&
         block.getParentOp() != func)) {
      // A terminator of a nested region (scf.yield, ...) passes values to
      // its parent, whose types are as written.
      restoreOperands(&op);
      continue;
    }
    Decision d = decide(&op);
    Operation *current = &op;
    if (isa_and_nonnull<tg::TGDialect>(op.getDialect())) {
      rewriteTGOp(&op, d);
    } else if (failed(rewriteForeignOp(current, d))) {
      sawUnknownOp = true;
      continue;
    }
    // A linalg op's body is scalar code over its own block arguments, made
    // for its types (by its region builder when rebuilt), not graph ops.
    if (current != &op || isa<linalg::LinalgOp>(current))
      continue;
    // Ops nested in regions (scf.if, scf.for, ...) are handled like
    // top-level ones; an isolated region is not part of this graph.
    if (op.hasTrait<OpTrait::IsIsolatedFromAbove>())
      continue;
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        processBlock(nested, func);
  }
}

void AutoMixedPrecisionPass::runOnOperation() {
  func::FuncOp func = getOperation();
  // Under --amp=off only autocast regions are rewritten: a graph without
  // one is left untouched.
  if (!outsideRegions && !func.walk([](Operation *op) {
                             return op->hasAttr(
                                        tg::TGDialect::kRegionAttrName)
                                        ? WalkResult::interrupt()
                                        : WalkResult::advance();
                           }).wasInterrupted()) {
    markAllAnalysesPreserved();
    return;
  }
  originalTypes.clear();
  sawUnknownOp = false;
  CastCache cache;
  castCache = &cache;
  for (Block &block : func.getBody())
    processBlock(block, func);
  castCache = nullptr;
  if (sawUnknownOp)
    return signalPassFailure();

  if (policy == Policy::Fast) {
    OpPassManager pm(func::FuncOp::getOperationName());
    pm.addPass(createCastOptimization());
    if (mlir::failed(runPipeline(pm, func)))
      return signalPassFailure();
  }
}
