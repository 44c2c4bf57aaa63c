//===- MLIRGenOptimizer.cpp - `minimize` to tg.minimize -------------------===//
//
// The training statement of a graph, `minimize LOSS with OPTIMIZER(...)`:
// the optimizer call's hyperparameters, its parameter groups and its
// learning-rate schedule (docs/optimizer.md), checked against what each
// optimizer reads and lowered to one `tg.minimize`.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

#include <cstdio>

using namespace mlir;
using namespace ampc;
using namespace ampc::frontend;
using namespace ampc::frontend::detail;

FailureOr<ArrayAttr>
MLIRGenImpl::genParamGroups(const MinimizeStmtAST &stmt, Value loss,
                            ArrayRef<NamedAttribute> callHyper, bool isSgd) {
  if (stmt.groups.empty())
    return ArrayAttr();
  const CallExprAST &opt = *stmt.optimizer;
  // The params the loss depends on: block arguments reached backwards.
  llvm::SmallDenseSet<Value> reached;
  SmallVector<Value> work{loss};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!reached.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }

  SmallVector<StringRef> perParam =
      isSgd ? SmallVector<StringRef>{"lr", "momentum", "weight_decay",
                                     "nesterov"}
            : SmallVector<StringRef>{"lr", "beta1", "beta2", "eps",
                                     "weight_decay"};
  // Attributes of the whole optimizer, never of a group.
  static constexpr StringRef kGlobal[] = {
      "max_grad_norm", "schedule", "warmup_steps", "total_steps", "min_lr",
      "step_size",     "gamma",    "accumulate"};

  llvm::StringMap<std::pair<unsigned, const NameExprAST *>> grouped;
  SmallVector<Attribute> result;
  for (auto [g, group] : llvm::enumerate(stmt.groups)) {
    if (group->args.empty()) {
      error(group->getLoc()) << "a parameter group names no parameter "
                                "(expected 'group(PARAM, ..., NAME = VALUE)')";
      return failure();
    }
    SmallVector<int64_t> members;
    for (const std::unique_ptr<ExprAST> &arg : group->args) {
      auto *name = dyn_cast<NameExprAST>(arg.get());
      if (!name) {
        error(arg->getLoc()) << "a parameter group lists parameter names, "
                                "not expressions";
        return failure();
      }
      SmallVector<Param> all = allParams();
      const Param *param = llvm::find_if(all, [&](const Param &p) {
        return p.name == name->name;
      });
      if (param == all.end()) {
        error(name->getLoc()) << "'" << name->name
                              << "' is not a parameter of this graph";
        return failure();
      }
      if (!reached.contains(param->arg)) {
        error(name->getLoc()) << "the loss '" << stmt.loss.name
                              << "' does not depend on parameter '"
                              << name->name << "'";
        return failure();
      }
      auto [it, inserted] =
          grouped.try_emplace(name->name, static_cast<unsigned>(g), name);
      if (!inserted) {
        error(name->getLoc())
            << "parameter '" << name->name
            << "' is in two parameter groups (first at "
            << it->second.second->getLoc().line << ":"
            << it->second.second->getLoc().col << ")";
        return failure();
      }
      members.push_back(param - all.begin());
    }
    for (const KeywordArg &kw : group->kwargs) {
      if (llvm::is_contained(kGlobal, kw.name)) {
        error(kw.loc) << "'" << kw.name << "' applies to the whole optimizer "
                      << "and cannot be set in a parameter group; give it "
                      << "in '" << opt.callee << "(...)'";
        return failure();
      }
    }
    if (failed(checkKeywords(*group, perParam)))
      return failure();
    // The group's values over the call's.
    NamedAttrList hyper;
    for (const NamedAttribute &attr : callHyper) {
      if (attr.getName() == "max_grad_norm")
        continue;
      if (!group->findKeyword(attr.getName())) {
        hyper.append(attr);
        continue;
      }
      if (attr.getName() == "nesterov") {
        auto v = getBool(*group, "nesterov", false);
        if (failed(v))
          return failure();
        hyper.append(named("nesterov", builder.getBoolAttr(*v)));
        continue;
      }
      auto v = getFloat(*group, attr.getName(), std::nullopt);
      if (failed(v))
        return failure();
      hyper.append(named(attr.getName(), builder.getF64FloatAttr(*v)));
    }
    result.push_back(builder.getDictionaryAttr(
        {named("params", builder.getDenseI64ArrayAttr(members)),
         named("hyperparams", hyper.getDictionary(builder.getContext()))}));
  }
  return builder.getArrayAttr(result);
}

/// The learning-rate schedule of an optimizer call (docs/optimizer.md), or
/// a null attribute when the call sets none of its keys.
FailureOr<DictionaryAttr> MLIRGenImpl::genSchedule(const CallExprAST &opt,
                                                   double lr) {
  // Numbers in messages as written (`0.5`, `-0.1`).
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return std::string(buf);
  };
  if (llvm::none_of(kScheduleKeys,
                    [&](StringRef k) { return opt.findKeyword(k); }))
    return DictionaryAttr();
  std::string kind = "constant";
  if (const KeywordArg *kw = opt.findKeyword("schedule")) {
    if (kw->value.kind != AttrAST::Kind::String)
      return attrError(opt, *kw, "a string");
    kind = kw->value.string;
    if (kind != "constant" && kind != "linear" && kind != "cosine" &&
        kind != "step") {
      error(kw->value.loc) << "unknown schedule \"" << kind
                           << "\" (expected \"constant\", \"linear\", "
                              "\"cosine\" or \"step\")";
      return failure();
    }
  }
  bool decays = kind == "linear" || kind == "cosine";
  // The keys each schedule reads; a key it does not read is an error.
  auto uses = [&](StringRef key) {
    if (key == "total_steps" || key == "min_lr")
      return decays;
    if (key == "step_size" || key == "gamma")
      return kind == "step";
    return true;
  };
  for (StringRef key : kScheduleKeys)
    if (const KeywordArg *kw = opt.findKeyword(key); kw && !uses(key)) {
      error(kw->loc) << "'" << key << "' does not apply to schedule \""
                     << kind << "\"";
      return failure();
    }
  if (!(lr > 0.0)) {
    error(opt.getLoc()) << "a learning-rate schedule needs lr > 0, got "
                        << num(lr);
    return failure();
  }
  // An integer attribute in [lo, 2^31).
  auto count = [&](StringRef key, std::optional<int64_t> dflt,
                   int64_t lo) -> FailureOr<int64_t> {
    FailureOr<int64_t> v = getInt(opt, key, dflt);
    if (failed(v))
      return failure();
    if (*v < lo || *v > INT32_MAX) {
      error(opt.findKeyword(key)->value.loc)
          << "'" << key << "' must be an integer in [" << lo
          << ", 2^31), got " << *v;
      return failure();
    }
    return *v;
  };
  FailureOr<int64_t> warmup = count("warmup_steps", 0, 0);
  if (failed(warmup))
    return failure();
  int64_t total = 0, stepSize = 0;
  double minLr = 0.0, gamma = 0.0;
  if (decays) {
    FailureOr<int64_t> t = count("total_steps", std::nullopt, 1);
    if (failed(t))
      return failure();
    if (*t <= *warmup) {
      error(opt.findKeyword("total_steps")->value.loc)
          << "'total_steps' (" << *t << ") must exceed 'warmup_steps' ("
          << *warmup << ")";
      return failure();
    }
    total = *t;
    FailureOr<double> m = getFloat(opt, "min_lr", 0.0);
    if (failed(m))
      return failure();
    if (!(*m >= 0.0)) {
      error(opt.findKeyword("min_lr")->value.loc)
          << "'min_lr' must be >= 0, got " << num(*m);
      return failure();
    }
    minLr = *m;
  } else if (kind == "step") {
    FailureOr<int64_t> k = count("step_size", std::nullopt, 1);
    if (failed(k))
      return failure();
    stepSize = *k;
    FailureOr<double> g = getFloat(opt, "gamma", 0.1);
    if (failed(g))
      return failure();
    if (!(*g > 0.0)) {
      error(opt.findKeyword("gamma")->value.loc)
          << "'gamma' must be > 0, got " << num(*g);
      return failure();
    }
    gamma = *g;
  }
  return builder.getDictionaryAttr(
      {named("kind", builder.getStringAttr(kind)),
       named("warmup_steps", builder.getI64IntegerAttr(*warmup)),
       named("total_steps", builder.getI64IntegerAttr(total)),
       named("min_lr", builder.getF64FloatAttr(minLr)),
       named("step_size", builder.getI64IntegerAttr(stepSize)),
       named("gamma", builder.getF64FloatAttr(gamma))});
}

FailureOr<Operation *> MLIRGenImpl::genMinimize(const MinimizeStmtAST &stmt) {
  auto it = symbols.find(stmt.loss.name);
  if (it == symbols.end()) {
    error(stmt.loss.loc) << "undefined name '" << stmt.loss.name << "'";
    return failure();
  }
  Value loss = it->second;
  auto lossType = cast<RankedTensorType>(loss.getType());
  if (lossType.getRank() != 0 || !isa<FloatType>(lossType.getElementType())) {
    error(stmt.loss.loc) << "'minimize' needs a float scalar loss, but '"
                         << stmt.loss.name << "' is " << formatType(lossType);
    return failure();
  }
  if (params.empty() && importedParams.empty()) {
    error(stmt.getLoc()) << "'minimize' needs parameters to train, but the "
                            "graph declares no 'param'";
    return failure();
  }

  const CallExprAST &opt = *stmt.optimizer;
  bool isSgd = opt.callee == "sgd";
  if (!isSgd && opt.callee != "adamw") {
    error(opt.getLoc()) << "unknown optimizer '" << opt.callee
                        << "' (expected sgd or adamw)";
    return failure();
  }
  SmallVector<StringRef> allowed =
      isSgd ? SmallVector<StringRef>{"lr", "momentum", "weight_decay",
                                     "nesterov", "max_grad_norm"}
            : SmallVector<StringRef>{"lr",  "beta1",        "beta2",
                                     "eps", "weight_decay", "max_grad_norm"};
  allowed.append(std::begin(kScheduleKeys), std::end(kScheduleKeys));
  allowed.push_back("accumulate");
  if (failed(checkKeywords(opt, allowed)))
    return failure();

  // `lr` may be given positionally, as in `sgd(0.1, momentum=0.9)`.
  std::optional<double> lr;
  if (opt.args.size() > 1) {
    error(opt.args[1]->getLoc())
        << "'" << opt.callee << "' takes one positional argument (lr)";
    return failure();
  }
  if (opt.args.size() == 1) {
    std::optional<Literal> lit = asLiteral(*opt.args[0]);
    if (!lit) {
      error(opt.args[0]->getLoc()) << "the learning rate must be a number";
      return failure();
    }
    if (opt.findKeyword("lr")) {
      error(opt.findKeyword("lr")->loc) << "lr is given twice";
      return failure();
    }
    lr = lit->value;
  }
  if (!lr) {
    auto v = getFloat(opt, "lr", std::nullopt);
    if (failed(v))
      return failure();
    lr = *v;
  }

  SmallVector<NamedAttribute> hyper{named("lr", builder.getF64FloatAttr(*lr))};
  auto addFloat = [&](StringRef name, double dflt) {
    auto v = getFloat(opt, name, dflt);
    if (failed(v))
      return failure();
    hyper.push_back(named(name, builder.getF64FloatAttr(*v)));
    return success();
  };
  if (isSgd) {
    auto nesterov = getBool(opt, "nesterov", false);
    if (failed(addFloat("momentum", 0.0)) ||
        failed(addFloat("weight_decay", 0.0)) || failed(nesterov))
      return failure();
    hyper.push_back(named("nesterov", builder.getBoolAttr(*nesterov)));
  } else {
    if (failed(addFloat("beta1", 0.9)) || failed(addFloat("beta2", 0.999)) ||
        failed(addFloat("eps", 1e-8)) || failed(addFloat("weight_decay", 0.01)))
      return failure();
  }
  if (opt.findKeyword("max_grad_norm") &&
      failed(addFloat("max_grad_norm", 0.0)))
    return failure();

  FailureOr<ArrayAttr> groups = genParamGroups(stmt, loss, hyper, isSgd);
  if (failed(groups))
    return failure();

  FailureOr<DictionaryAttr> schedule = genSchedule(opt, *lr);
  if (failed(schedule))
    return failure();

  SmallVector<Value> operands{loss};
  SmallVector<Param> all = allParams();
  for (const Param &p : all)
    operands.push_back(p.arg);
  SmallVector<NamedAttribute> attrs{
      named("optimizer", builder.getStringAttr(opt.callee)),
      named("hyperparams", builder.getDictionaryAttr(hyper))};
  if (*groups)
    attrs.push_back(named("param_groups", *groups));
  if (*schedule)
    attrs.push_back(named("schedule", *schedule));
  // Gradient accumulation: micro-batches per update, an integer >= 1.
  if (const KeywordArg *kw = opt.findKeyword("accumulate")) {
    FailureOr<int64_t> k = getInt(opt, "accumulate", std::nullopt);
    if (failed(k))
      return failure();
    if (*k < 1 || *k > INT32_MAX) {
      error(kw->value.loc) << "'accumulate' must be an integer in [1, 2^31) "
                              "(micro-batches per update), got "
                           << *k;
      return failure();
    }
    if (*k > 1)
      attrs.push_back(named("accumulate", builder.getI64IntegerAttr(*k)));
  }
  Operation *op = buildOp<tg::MinimizeOp>(loc(opt.getLoc()), operands, attrs,
                                          all.size());
  if (!op)
    return failure();
  return op;
}
