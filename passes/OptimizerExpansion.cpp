//===- OptimizerExpansion.cpp - tg.minimize to backward + optimizer ops ---===//
//
// The `ampc-optimizer-expansion` pass (its description is in Passes.td):
// every `tg.minimize` becomes its backward graph (the reverse-mode engine of
// ampc-autodiff, Differentiate.h), optional gradient clipping and one
// optimizer update per parameter group, with the optimizer state as
// function arguments and results.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Differentiate.h"
#include "ampc/Transforms/Passes.h"
#include "ampc/Transforms/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"

namespace ampc {
#define GEN_PASS_DEF_OPTIMIZEREXPANSION
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

/// Gives every op a builder inserts a role (`tg.role`).
struct RoleListener : public OpBuilder::Listener {
  explicit RoleListener(Role role) : role(role) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    setRole(op, role);
  }
  Role role;
};

/// Adds a state argument (and its result) named `name` to `func`.
BlockArgument addStateArg(func::FuncOp func, Type type, StringRef name,
                          Attribute init, Location loc) {
  MLIRContext *ctx = func.getContext();
  NamedAttrList attrs;
  attrs.append(TGDialect::kStateAttrName, StringAttr::get(ctx, name));
  attrs.append(TGDialect::kInitAttrName, init);
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, attrs.getDictionary(ctx), loc);
  return func.getArgument(index);
}

/// How the updates write 16-bit values (the pass options `low-update` and
/// `state-dtype`).
struct LowOptions {
  StringRef mode = "nearest";
  bool bf16State = false;
};

bool isLowFloat(Value v) {
  return isLowFloatElement(getElementTypeOrSelf(v.getType()));
}

/// The parameters' names (their `tg.param`), in operand order; an error when
/// an operand is not a parameter or is listed twice (its name names its state).
FailureOr<SmallVector<StringRef>> parameterNames(func::FuncOp func,
                                                 MinimizeOp op) {
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
  return names;
}

/// The value the backward differentiates. With gradient accumulation the
/// step is one of K micro-batches, each the gradient of loss * (1/K) (torch's
/// `(loss / K).backward()` with 1/K as an f32 multiplier, or an f64 one for
/// an f64 loss), so the K accumulated gradients are the gradient of the mean
/// loss.
Value lossOfMicroBatch(MinimizeOp op, int64_t accumulate) {
  if (accumulate <= 1)
    return op.getLoss();
  OpBuilder builder(op);
  auto lossType = cast<RankedTensorType>(op.getLoss().getType());
  auto elem = cast<FloatType>(lossType.getElementType());
  // 1/K rounded once, to f64 for an f64 loss (an f32 1/K would move an f64
  // loss by up to 2^-25 relative), to f32 otherwise.
  llvm::APFloat inv =
      elem.isF64() ? llvm::APFloat(1.0 / static_cast<double>(accumulate))
                   : llvm::APFloat(1.0f / static_cast<float>(accumulate));
  bool lost = false;
  inv.convert(elem.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
  Location kLoc = getTaggedLoc(op.getLoc(), kOptimizerLocTag);
  Value invK = ConstantOp::create(
      builder, kLoc,
      DenseElementsAttr::get(RankedTensorType::get({}, elem), inv));
  return MulOp::create(builder, kLoc, op.getLoss(), invK);
}

/// A torch.optim parameter group: its hyperparameters and its members.
struct ParamGroup {
  DictionaryAttr hyper;
  SmallVector<unsigned> members; // indices into the reached parameters
};

/// Kahan compensation buffers of a group's 16-bit params.
struct KahanComps {
  SmallVector<Value> values;
  SmallVector<int64_t> index;
  SmallVector<std::string> names;
};

/// The update part of one `tg.minimize` whose loss reaches some parameters.
/// Each step emits its ops before the `minimize` (with the optimizer role)
/// and adds its state arguments in turn, so the order of the calls is the
/// order of the state in the signature.
class OptimizerUpdate {
public:
  OptimizerUpdate(func::FuncOp func, MinimizeOp op, ArrayRef<StringRef> names,
                  ArrayRef<unsigned> reached, ArrayRef<Value> grads,
                  const LowOptions &low)
      : func(func), op(op), ctx(func.getContext()), names(names),
        reached(reached), low(low), builder(op), roles(Role::Optimizer),
        loc(getTaggedLoc(op.getLoc(), kOptimizerLocTag)),
        hyper(op.getHyperparams()),
        zeros(InitAttr::get(ctx, InitKind::zeros, 0.0, 0.0)),
        updated(op.getParams()) {
    builder.setListener(&roles);
    for (unsigned i : reached) {
      params.push_back(op.getParams()[i]);
      paramGrads.push_back(grads[i]);
    }
  }

  /// Gradient accumulation over `accumulate` micro-batches: each gradient
  /// goes into its f32 accumulator (the first micro-batch of an update
  /// writes it); clipping and the updates read the accumulators. Returns the
  /// `tg.grad_accumulate`: what follows it is the update.
  Operation *accumulateGradients(int64_t accumulate);
  /// Clipping by the global norm (hyperparameter `max_grad_norm`).
  void clipGradients();
  /// A learning-rate schedule: the factor of this update, computed on the
  /// device from the update counter (state `lr_schedule.step`), which
  /// multiplies every group's lr.
  void scheduleLearningRate();
  /// torch.optim parameter groups: the default group (the params no group
  /// names, with the call's hyperparameters), then each group in order.
  SmallVector<ParamGroup> parameterGroups();
  /// One `tg.sgd_update` per group with parameters.
  void emitSgd(ArrayRef<ParamGroup> groups);
  /// One `tg.adamw_update` per group with parameters.
  void emitAdamW(ArrayRef<ParamGroup> groups);
  /// The new state as results after the existing ones, in argument order.
  void returnNewState();

  /// Each parameter's value after the update (unchanged where the loss does
  /// not reach it).
  ArrayRef<Value> updatedParams() const { return updated; }

private:
  FloatAttr f64(double v) { return builder.getF64FloatAttr(v); }
  Location stateLoc(Value p) const {
    return getTaggedLoc(p.getLoc(), kOptimizerLocTag);
  }
  Value addCounter(StringRef name) {
    return addStateArg(func,
                       RankedTensorType::get({}, IntegerType::get(ctx, 32)),
                       name, zeros, loc);
  }
  RankedTensorType stateLike(Value p) const;
  void setLowUpdateAttrs(Operation *update, int64_t base);
  KahanComps kahanComps(ArrayRef<unsigned> members);
  DenseI64ArrayAttr compIndex(const KahanComps &c) {
    return c.index.empty() ? DenseI64ArrayAttr()
                           : builder.getDenseI64ArrayAttr(c.index);
  }
  static double groupParam(const ParamGroup &g, StringRef key, double dflt) {
    auto attr = dyn_cast_or_null<FloatAttr>(g.hyper.get(key));
    return attr ? attr.getValueAsDouble() : dflt;
  }

  func::FuncOp func;
  MinimizeOp op;
  MLIRContext *ctx;
  ArrayRef<StringRef> names;
  ArrayRef<unsigned> reached;
  const LowOptions &low;
  OpBuilder builder;
  RoleListener roles;
  Location loc;
  DictionaryAttr hyper;
  InitAttr zeros;
  /// The reached parameters and the gradients the updates read.
  SmallVector<Value> params, paramGrads;
  SmallVector<Value> updated;
  /// The state results, named, in argument order.
  SmallVector<std::pair<std::string, Value>> newState;
  bool accumulating = false;
  /// The factor of the learning-rate schedule, if any.
  Value lrScale;
  /// The index of each group's first param in the step (the stochastic
  /// rounding's key).
  int64_t paramBase = 0;
};

Operation *OptimizerUpdate::accumulateGradients(int64_t accumulate) {
  SmallVector<Value> accs;
  for (unsigned i : reached) {
    // f32 accumulators; f64 ones for an f64 param (whose gradients are f64).
    Value p = op.getParams()[i];
    auto pType = cast<RankedTensorType>(p.getType());
    auto accType = pType.getElementType().isF64()
                       ? pType
                       : pType.clone(Float32Type::get(ctx));
    accs.push_back(addStateArg(func, accType, (names[i] + ".grad_acc").str(),
                               zeros, stateLoc(p)));
  }
  Value micro = addCounter("accumulate.micro");
  auto acc = GradAccumulateOp::create(builder, loc, accs, paramGrads, micro,
                                      builder.getI64IntegerAttr(accumulate));
  for (auto [k, i] : llvm::enumerate(reached)) {
    paramGrads[k] = acc.getNewAccs()[k];
    newState.emplace_back((names[i] + ".grad_acc").str(), acc.getNewAccs()[k]);
  }
  newState.emplace_back("accumulate.micro", acc.getNewMicro());
  func->setAttr(TGDialect::kAccumulateAttrName,
                builder.getI64IntegerAttr(accumulate));
  accumulating = true;
  return acc;
}

void OptimizerUpdate::clipGradients() {
  auto maxNorm = dyn_cast_or_null<FloatAttr>(hyper.get("max_grad_norm"));
  if (!maxNorm)
    return;
  auto clip = ClipGradNormOp::create(builder, loc, paramGrads,
                                     /*found_inf=*/Value(),
                                     f64(maxNorm.getValueAsDouble()));
  paramGrads.assign(clip.getClipped().begin(), clip.getClipped().end());
  // The accumulators' state is the last value written to them in place
  // (their content after the update does not matter: the next update's
  // first micro-batch overwrites it).
  if (accumulating)
    for (auto [k, c] : llvm::enumerate(clip.getClipped()))
      newState[k].second = c;
}

void OptimizerUpdate::scheduleLearningRate() {
  std::optional<DictionaryAttr> schedule = op.getSchedule();
  if (!schedule)
    return;
  auto i32Scalar = RankedTensorType::get({}, IntegerType::get(ctx, 32));
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  Value count = addCounter("lr_schedule.step");
  auto integer = [&](StringRef key) {
    return cast<IntegerAttr>(schedule->get(key)).getInt();
  };
  auto real = [&](StringRef key) {
    return cast<FloatAttr>(schedule->get(key)).getValueAsDouble();
  };
  auto sched = LrScheduleOp::create(
      builder, loc, i32Scalar, f32Scalar, count, /*found_inf=*/Value(),
      cast<StringAttr>(schedule->get("kind")),
      f64(cast<FloatAttr>(hyper.get("lr")).getValueAsDouble()),
      builder.getI64IntegerAttr(integer("warmup_steps")),
      builder.getI64IntegerAttr(integer("total_steps")), f64(real("min_lr")),
      builder.getI64IntegerAttr(integer("step_size")), f64(real("gamma")));
  lrScale = sched.getFactor();
  newState.emplace_back("lr_schedule.step", sched.getNewStep());
}

SmallVector<ParamGroup> OptimizerUpdate::parameterGroups() {
  SmallVector<ParamGroup> groups{{hyper, {}}};
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
  return groups;
}

// Momentum buffers and Adam moments: an f64 param keeps f64 state
// (torch.optim's buffers have the param's dtype); the others f32, or bf16
// with --optimizer-state-dtype=bf16.
RankedTensorType OptimizerUpdate::stateLike(Value p) const {
  auto t = cast<RankedTensorType>(p.getType());
  if (t.getElementType().isF64())
    return t;
  Type e = low.bf16State ? Type(BFloat16Type::get(ctx))
                         : Type(Float32Type::get(ctx));
  return t.clone(e);
}

// Updates of 16-bit params get the mode and, for stochastic rounding, the
// index of the group's first param. Only an update that writes 16-bit values
// gets the mode: f32 params with f32 state are written as they are whatever
// it is.
void OptimizerUpdate::setLowUpdateAttrs(Operation *update, int64_t base) {
  bool writes16 = false;
  if (auto sgd = dyn_cast<SgdUpdateOp>(update))
    writes16 = (low.bf16State && !sgd.getMomentumBuffers().empty()) ||
               llvm::any_of(sgd.getParams(), isLowFloat);
  else if (auto adamw = dyn_cast<AdamWUpdateOp>(update))
    writes16 = low.bf16State || llvm::any_of(adamw.getParams(), isLowFloat);
  if (!writes16)
    return;
  if (low.mode != "nearest")
    update->setAttr("low_update", builder.getStringAttr(low.mode));
  if (low.mode == "stochastic")
    update->setAttr("param_base", builder.getI64IntegerAttr(base));
}

// With --low-update=kahan, a compensation buffer per 16-bit param of the
// group (state `<param>.kahan_comp`).
KahanComps OptimizerUpdate::kahanComps(ArrayRef<unsigned> members) {
  KahanComps c;
  if (low.mode != "kahan")
    return c;
  for (auto [k, j] : llvm::enumerate(members)) {
    unsigned i = reached[j];
    Value p = op.getParams()[i];
    if (!isLowFloat(p))
      continue;
    std::string name = (names[i] + ".kahan_comp").str();
    c.values.push_back(
        addStateArg(func, p.getType(), name, zeros, stateLoc(p)));
    c.index.push_back(k);
    c.names.push_back(name);
  }
  return c;
}

void OptimizerUpdate::emitSgd(ArrayRef<ParamGroup> groups) {
  bool firstGroup = true;
  for (auto [gi, g] : llvm::enumerate(groups)) {
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
      buffers.push_back(
          addStateArg(func, stateLike(p), name, zeros, stateLoc(p)));
      bufferNames.push_back(name);
    }
    KahanComps comps = kahanComps(g.members);
    // Stochastic rounding of 16-bit params or buffers: the group's update
    // counter, the Philox key's update number.
    Value counter;
    std::string counterName =
        firstGroup ? std::string("sgd.counter")
                   : "sgd.group" + std::to_string(gi) + ".counter";
    firstGroup = false;
    if (low.mode == "stochastic" &&
        (llvm::any_of(gParams, isLowFloat) ||
         (!buffers.empty() && low.bf16State)))
      counter = addCounter(counterName);
    auto nesterov = dyn_cast_or_null<BoolAttr>(g.hyper.get("nesterov"));
    auto sgd = SgdUpdateOp::create(
        builder, loc, gParams, gGrads, buffers, /*found_inf=*/Value(),
        /*models=*/ValueRange(), lrScale, comps.values, counter,
        f64(groupParam(g, "lr", 0.0)), f64(momentum),
        f64(groupParam(g, "weight_decay", 0.0)),
        builder.getBoolAttr(nesterov && nesterov.getValue()),
        /*model_params=*/DenseI64ArrayAttr(), /*low_update=*/StringAttr(),
        /*param_base=*/IntegerAttr(), compIndex(comps));
    setLowUpdateAttrs(sgd, paramBase);
    paramBase += g.members.size();
    for (auto [k, j] : llvm::enumerate(g.members))
      updated[reached[j]] = sgd.getNewParams()[k];
    for (auto [name, v] :
         llvm::zip_equal(bufferNames, sgd.getNewMomentumBuffers()))
      newState.emplace_back(name, v);
    for (auto [name, v] : llvm::zip_equal(comps.names, sgd.getNewComps()))
      newState.emplace_back(name, v);
    if (counter)
      newState.emplace_back(counterName, sgd.getNewCounter());
  }
}

void OptimizerUpdate::emitAdamW(ArrayRef<ParamGroup> groups) {
  // Each group's update has its own step count (torch.optim keeps one per
  // parameter; they are equal): `adamw.step` for the first group with
  // parameters, `adamw.group<N>.step` for group N after it. An in-place
  // update cannot share its step operand with another update.
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
      expAvgs.push_back(addStateArg(func, stateLike(p),
                                    (names[i] + ".exp_avg").str(), zeros,
                                    stateLoc(p)));
      expAvgSqs.push_back(addStateArg(func, stateLike(p),
                                      (names[i] + ".exp_avg_sq").str(), zeros,
                                      stateLoc(p)));
    }
    std::string stepName =
        firstGroup ? std::string("adamw.step")
                   : "adamw.group" + std::to_string(gi) + ".step";
    firstGroup = false;
    KahanComps comps = kahanComps(g.members);
    Value step = addCounter(stepName);
    auto adamw = AdamWUpdateOp::create(
        builder, loc, gParams, gGrads, expAvgs, expAvgSqs, step,
        /*found_inf=*/Value(), /*models=*/ValueRange(), lrScale, comps.values,
        f64(groupParam(g, "lr", 1e-3)), f64(groupParam(g, "beta1", 0.9)),
        f64(groupParam(g, "beta2", 0.999)), f64(groupParam(g, "eps", 1e-8)),
        f64(groupParam(g, "weight_decay", 1e-2)),
        /*model_params=*/DenseI64ArrayAttr(), /*low_update=*/StringAttr(),
        /*param_base=*/IntegerAttr(), compIndex(comps));
    setLowUpdateAttrs(adamw, paramBase);
    paramBase += g.members.size();
    for (auto [k, j] : llvm::enumerate(g.members)) {
      unsigned i = reached[j];
      updated[i] = adamw.getNewParams()[k];
      // State results in argument order: per parameter exp_avg, exp_avg_sq.
      newState.emplace_back((names[i] + ".exp_avg").str(),
                            adamw.getNewExpAvgs()[k]);
      newState.emplace_back((names[i] + ".exp_avg_sq").str(),
                            adamw.getNewExpAvgSqs()[k]);
    }
    for (auto [name, v] : llvm::zip_equal(comps.names, adamw.getNewComps()))
      newState.emplace_back(name, v);
    newState.emplace_back(stepName, adamw.getNewStep());
  }
}

void OptimizerUpdate::returnNewState() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto &[name, value] : newState) {
    unsigned index = func.getNumResults();
    NamedAttrList attrs;
    attrs.append(TGDialect::kStateOutAttrName, StringAttr::get(ctx, name));
    (void)func.insertResult(index, value.getType(), attrs.getDictionary(ctx));
    ret->insertOperands(ret->getNumOperands(), value);
  }
}

/// With accumulation everything after the tg.grad_accumulate is the update,
/// run once per K micro-batches: the ops the step computes after the
/// `minimize` (the casts of returned values, say) belong to every
/// micro-batch and move before it, unless they read an updated parameter.
void hoistMicroBatchOps(MinimizeOp op, Operation *accumulation) {
  llvm::SmallDenseSet<Value> afterUpdate(op.getUpdated().begin(),
                                         op.getUpdated().end());
  for (Operation *o = op->getNextNode(), *next; o; o = next) {
    next = o->getNextNode();
    if (o->hasTrait<OpTrait::IsTerminator>())
      break;
    if (llvm::any_of(o->getOperands(),
                     [&](Value v) { return afterUpdate.contains(v); })) {
      afterUpdate.insert(o->result_begin(), o->result_end());
      continue;
    }
    o->moveBefore(accumulation);
  }
}

/// Replaces `op` by its backward graph and the optimizer update.
LogicalResult expandMinimize(func::FuncOp func, MinimizeOp op,
                             int64_t accumulate, const LowOptions &low) {
  FailureOr<SmallVector<StringRef>> names = parameterNames(func, op);
  if (failed(names))
    return failure();
  FailureOr<SmallVector<Value>> grads =
      differentiate(op, lossOfMicroBatch(op, accumulate), op.getParams());
  if (failed(grads))
    return failure();

  SmallVector<unsigned> reached;
  for (auto [i, g] : llvm::enumerate(*grads))
    if (g)
      reached.push_back(i);
  // A parameter the loss does not reach comes back unchanged.
  SmallVector<Value> updated(op.getParams());
  Operation *accumulation = nullptr;
  if (reached.empty()) {
    op.emitWarning("the loss does not depend on any parameter; this "
                   "training step updates nothing");
  } else {
    OptimizerUpdate update(func, op, *names, reached, *grads, low);
    if (accumulate > 1)
      accumulation = update.accumulateGradients(accumulate);
    update.clipGradients();
    update.scheduleLearningRate();
    SmallVector<ParamGroup> groups = update.parameterGroups();
    if (op.getOptimizer() == "sgd")
      update.emitSgd(groups);
    else
      update.emitAdamW(groups);
    update.returnNewState();
    updated.assign(update.updatedParams().begin(),
                   update.updatedParams().end());
  }
  if (accumulation)
    hoistMicroBatchOps(op, accumulation);
  for (auto [result, v] : llvm::zip_equal(op.getUpdated(), updated))
    result.replaceAllUsesWith(v);
  op.erase();
  return success();
}

struct OptimizerExpansionPass
    : public ampc::impl::OptimizerExpansionBase<OptimizerExpansionPass> {
  using OptimizerExpansionBase::OptimizerExpansionBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<MinimizeOp> targets;
    func.walk([&](MinimizeOp op) { targets.push_back(op); });
    if (targets.empty())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("autodiff needs a graph with a single block");
      return signalPassFailure();
    }
    if (targets.size() > 1) {
      InFlightDiagnostic diag = targets[1].emitOpError(
          "a graph holds at most one 'tg.minimize' (one optimizer step)");
      diag.attachNote(targets[0].getLoc())
          << "the first 'tg.minimize' is here";
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    if (!block.mightHaveTerminator() ||
        !isa<func::ReturnOp>(block.getTerminator())) {
      targets[0].emitOpError("needs a function that ends with 'func.return'");
      return signalPassFailure();
    }
    MinimizeOp target = targets[0];
    Operation *ret = block.getTerminator();
    // The step updates its parameters in place, so the graph cannot also
    // return one as it is (its buffer holds the updated value by then).
    for (OpOperand &use : ret->getOpOperands()) {
      auto arg = dyn_cast<BlockArgument>(use.get());
      if (!arg || !llvm::is_contained(target.getParams(), use.get()))
        continue;
      auto name = func.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TGDialect::kParamAttrName);
      InFlightDiagnostic diag = ret->emitError("returned value #")
                                << use.getOperandNumber() << " is parameter '"
                                << (name ? name.getValue() : StringRef("?"))
                                << "', which this graph's optimizer updates "
                                   "in place; return an expression of it "
                                   "(the value the step read) or take the "
                                   "updated value from --params-out";
      diag.attachNote(target.getLoc()) << "the optimizer step is here";
      return signalPassFailure();
    }
    // Every other op of the graph reads the values from before the update:
    // an expression written after `minimize` (in the return statement) is
    // computed with the parameters the step read, so the backward and the
    // update go last.
    if (llvm::all_of(target->getUsers(),
                     [&](Operation *user) { return user == ret; }))
      target->moveBefore(ret);
    int64_t k = accumulate > 0 ? int64_t(accumulate)
                               : int64_t(target.getAccumulate().value_or(1));
    if (lowUpdate != "nearest" && lowUpdate != "stochastic" &&
        lowUpdate != "kahan") {
      target.emitOpError("low-update must be nearest, stochastic or kahan, "
                         "got '")
          << lowUpdate << "'";
      return signalPassFailure();
    }
    if (stateDtype != "f32" && stateDtype != "bf16") {
      target.emitOpError("state-dtype must be f32 or bf16, got '")
          << stateDtype << "'";
      return signalPassFailure();
    }
    LowOptions low;
    low.mode = lowUpdate;
    low.bf16State = stateDtype == "bf16";
    if (failed(expandMinimize(func, target, k, low)))
      return signalPassFailure();
  }
};

} // namespace
