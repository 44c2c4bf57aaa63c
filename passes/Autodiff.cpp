//===- Autodiff.cpp - tg.grad / tg.minimize to backward graphs ------------===//
//
// Reverse-mode automatic differentiation (the `ampc-autodiff` pass, see its
// description in Passes.td). The pass only walks the graph, decides which
// ops are on a path from the loss, and accumulates; every gradient rule is
// the op's own `GradientOpInterface::buildGradient`.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGInterfaces.h"
#include "ampc/Dialect/TG/TGOps.h"
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

constexpr llvm::StringLiteral kStateAttrName = "tg.state";
constexpr llvm::StringLiteral kStateOutAttrName = "tg.state_out";

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return false;
  Type e = t.getElementType();
  return e.isF32() || e.isF16() || e.isBF16();
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

/// Reverse-mode differentiation of one scalar `loss` with respect to `wrt`,
/// inserting the backward graph before `anchor` (the tg.grad or
/// tg.minimize being expanded). Returns one gradient per `wrt` value (null
/// where the loss does not reach it).
FailureOr<SmallVector<Value>> differentiate(Operation *anchor, Value loss,
                                            ValueRange wrt) {
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
  auto accumulate = [&](Value v, Value g, Location loc) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
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

  for (auto [i, v] : llvm::enumerate(wrt))
    result[i] = active.contains(v) ? grads.lookup(v) : Value();
  return result;
}

struct AutodiffPass : public ampc::impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override;

  LogicalResult expandGrad(GradOp op);
  LogicalResult expandMinimize(func::FuncOp func, MinimizeOp op);
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
    result.replaceAllUsesWith(g);
  }
  op.erase();
  return success();
}

/// Adds a state argument (and its result) named `name` to `func`.
BlockArgument addStateArg(func::FuncOp func, Type type, StringRef name,
                          Attribute init, Location loc) {
  MLIRContext *ctx = func.getContext();
  NamedAttrList attrs;
  attrs.append(kStateAttrName, StringAttr::get(ctx, name));
  attrs.append(TGDialect::kInitAttrName, init);
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, attrs.getDictionary(ctx), loc);
  return func.getArgument(index);
}

LogicalResult AutodiffPass::expandMinimize(func::FuncOp func, MinimizeOp op) {
  MLIRContext *ctx = func.getContext();
  // Every operand must be a parameter: its name names its state.
  SmallVector<StringRef> names;
  llvm::SmallDenseSet<Value> seen;
  for (auto [i, p] : llvm::enumerate(op.getParams())) {
    auto arg = dyn_cast<BlockArgument>(p);
    StringAttr name;
    if (arg && arg.getOwner() == &func.getBody().front())
      name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                               TGDialect::kParamAttrName);
    if (!name)
      return op.emitOpError("operand #")
             << i + 1
             << " is not a parameter (a function argument with 'tg.param')";
    if (!seen.insert(p).second)
      return op.emitOpError("parameter '")
             << name.getValue() << "' is listed twice";
    names.push_back(name.getValue());
  }

  FailureOr<SmallVector<Value>> grads =
      differentiate(op, op.getLoss(), op.getParams());
  if (failed(grads))
    return failure();

  SmallVector<unsigned> reached;
  for (auto [i, g] : llvm::enumerate(*grads))
    if (g)
      reached.push_back(i);
  // A parameter the loss does not reach comes back unchanged.
  SmallVector<Value> updated(op.getParams());
  if (reached.empty()) {
    op.emitWarning("the loss does not depend on any parameter; this "
                   "training step updates nothing");
  } else {
    OpBuilder builder(op);
    RoleListener roles(Role::Optimizer);
    builder.setListener(&roles);
    Location loc = getTaggedLoc(op.getLoc(), kOptimizerLocTag);
    DictionaryAttr hyper = op.getHyperparams();
    auto f64 = [&](double v) { return builder.getF64FloatAttr(v); };

    SmallVector<Value> params, paramGrads;
    for (unsigned i : reached) {
      params.push_back(op.getParams()[i]);
      paramGrads.push_back((*grads)[i]);
    }
    if (auto maxNorm = dyn_cast_or_null<FloatAttr>(hyper.get("max_grad_norm"))) {
      auto clip = ClipGradNormOp::create(builder, loc, paramGrads,
                                         /*found_inf=*/Value(),
                                         f64(maxNorm.getValueAsDouble()));
      paramGrads.assign(clip.getClipped().begin(), clip.getClipped().end());
    }

    // Optimizer state: f32 tensors of each parameter's shape, initialised
    // to zero, named after the parameter.
    auto zeros = InitAttr::get(ctx, InitKind::zeros, 0.0, 0.0);
    auto stateLoc = [&](Value p) { return getTaggedLoc(p.getLoc(), kOptimizerLocTag); };
    auto f32Like = [&](Value p) {
      return cast<RankedTensorType>(p.getType()).clone(Float32Type::get(ctx));
    };
    SmallVector<std::pair<std::string, Value>> newState;

    // torch.optim parameter groups: the default group (the params no group
    // names, with the call's hyperparameters), then each group in order.
    // Each group is one update op with its own hyperparameters.
    struct Group {
      DictionaryAttr hyper;
      SmallVector<unsigned> members; // indices into op.getParams(), reached
    };
    SmallVector<Group> groups{{hyper, {}}};
    SmallVector<int> groupOf(op.getParams().size(), 0);
    if (std::optional<ArrayAttr> paramGroups = op.getParamGroups()) {
      for (Attribute attr : *paramGroups) {
        auto dict = cast<DictionaryAttr>(attr);
        groups.push_back({cast<DictionaryAttr>(dict.get("hyperparams")), {}});
        for (int64_t i : cast<DenseI64ArrayAttr>(dict.get("params")).asArrayRef())
          groupOf[i] = groups.size() - 1;
      }
    }
    for (auto [j, i] : llvm::enumerate(reached))
      groups[groupOf[i]].members.push_back(j);
    auto groupParam = [&](const Group &g, StringRef key, double dflt) {
      auto attr = dyn_cast_or_null<FloatAttr>(g.hyper.get(key));
      return attr ? attr.getValueAsDouble() : dflt;
    };

    if (op.getOptimizer() == "sgd") {
      for (const Group &g : groups) {
        if (g.members.empty())
          continue;
        double momentum = groupParam(g, "momentum", 0.0);
        SmallVector<Value> gParams, gGrads, buffers;
        SmallVector<std::string> bufferNames;
        for (unsigned j : g.members) {
          unsigned i = reached[j];
          Value p = op.getParams()[i];
          gParams.push_back(params[j]);
          gGrads.push_back(paramGrads[j]);
          if (momentum == 0.0)
            continue;
          std::string name = (names[i] + ".momentum_buffer").str();
          buffers.push_back(addStateArg(func, f32Like(p), name, zeros,
                                        stateLoc(p)));
          bufferNames.push_back(name);
        }
        auto nesterov = dyn_cast_or_null<BoolAttr>(g.hyper.get("nesterov"));
        auto sgd = SgdUpdateOp::create(
            builder, loc, gParams, gGrads, buffers, /*found_inf=*/Value(),
            f64(groupParam(g, "lr", 0.0)), f64(momentum),
            f64(groupParam(g, "weight_decay", 0.0)),
            builder.getBoolAttr(nesterov && nesterov.getValue()));
        for (auto [k, j] : llvm::enumerate(g.members))
          updated[reached[j]] = sgd.getNewParams()[k];
        for (auto [name, v] :
             llvm::zip_equal(bufferNames, sgd.getNewMomentumBuffers()))
          newState.emplace_back(name, v);
      }
    } else {
      // Each group's update has its own step count (torch.optim keeps one
      // per parameter; they are equal): `adamw.step` for the first group
      // with parameters, `adamw.group<N>.step` for group N after it. An
      // in-place update cannot share its step operand with another update.
      bool firstGroup = true;
      for (auto [gi, g] : llvm::enumerate(groups)) {
        if (g.members.empty())
          continue;
        SmallVector<Value> gParams, gGrads, expAvgs, expAvgSqs;
        for (unsigned j : g.members) {
          unsigned i = reached[j];
          Value p = op.getParams()[i];
          gParams.push_back(params[j]);
          gGrads.push_back(paramGrads[j]);
          expAvgs.push_back(addStateArg(func, f32Like(p),
                                        (names[i] + ".exp_avg").str(), zeros,
                                        stateLoc(p)));
          expAvgSqs.push_back(addStateArg(func, f32Like(p),
                                          (names[i] + ".exp_avg_sq").str(),
                                          zeros, stateLoc(p)));
        }
        std::string stepName =
            firstGroup ? std::string("adamw.step")
                       : "adamw.group" + std::to_string(gi) + ".step";
        firstGroup = false;
        Value step = addStateArg(
            func, RankedTensorType::get({}, IntegerType::get(ctx, 32)),
            stepName, zeros, loc);
        auto adamw = AdamWUpdateOp::create(
            builder, loc, gParams, gGrads, expAvgs, expAvgSqs, step,
            /*found_inf=*/Value(), f64(groupParam(g, "lr", 1e-3)),
            f64(groupParam(g, "beta1", 0.9)), f64(groupParam(g, "beta2", 0.999)),
            f64(groupParam(g, "eps", 1e-8)),
            f64(groupParam(g, "weight_decay", 1e-2)));
        for (auto [k, j] : llvm::enumerate(g.members)) {
          unsigned i = reached[j];
          updated[i] = adamw.getNewParams()[k];
          // State results in argument order: per parameter exp_avg,
          // exp_avg_sq.
          newState.emplace_back((names[i] + ".exp_avg").str(),
                                adamw.getNewExpAvgs()[k]);
          newState.emplace_back((names[i] + ".exp_avg_sq").str(),
                                adamw.getNewExpAvgSqs()[k]);
        }
        newState.emplace_back(stepName, adamw.getNewStep());
      }
    }

    // Results: the new state after the existing results, in argument order.
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (auto &[name, value] : newState) {
      unsigned index = func.getNumResults();
      NamedAttrList attrs;
      attrs.append(kStateOutAttrName, StringAttr::get(ctx, name));
      (void)func.insertResult(index, value.getType(),
                              attrs.getDictionary(ctx));
      ret->insertOperands(ret->getNumOperands(), value);
    }
  }

  for (auto [result, v] : llvm::zip_equal(op.getUpdated(), updated))
    result.replaceAllUsesWith(v);
  op.erase();
  return success();
}

void AutodiffPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  if (!func.getBody().hasOneBlock()) {
    func.emitOpError("autodiff needs a graph with a single block");
    return signalPassFailure();
  }
  SmallVector<Operation *> targets;
  MinimizeOp first;
  for (Operation &op : func.getBody().front()) {
    if (auto m = dyn_cast<MinimizeOp>(op)) {
      if (first) {
        InFlightDiagnostic diag = m.emitOpError(
            "a graph holds at most one 'tg.minimize' (one optimizer step)");
        diag.attachNote(first.getLoc()) << "the first 'tg.minimize' is here";
        return signalPassFailure();
      }
      first = m;
      targets.push_back(m);
    } else if (isa<GradOp>(op)) {
      targets.push_back(&op);
    }
  }
  for (Operation *op : targets) {
    if (auto m = dyn_cast<MinimizeOp>(op)) {
      if (!func.getBody().front().mightHaveTerminator() ||
          !isa<func::ReturnOp>(func.getBody().front().getTerminator())) {
        m.emitOpError("needs a function that ends with 'func.return'");
        return signalPassFailure();
      }
      if (failed(expandMinimize(func, m)))
        return signalPassFailure();
    } else if (failed(expandGrad(cast<GradOp>(op)))) {
      return signalPassFailure();
    }
  }
}

} // namespace
