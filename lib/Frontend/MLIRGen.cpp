//===- MLIRGen.cpp - .tg AST to tg dialect IR -----------------------------===//
//
// Walks the AST once, in program order, with one symbol table per graph.
// Every op is created through `buildOp`, which lets the op infer its result
// type and verifies it on the spot, so a shape error is reported at the
// token that caused it and the lowering stops there.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/MLIRGen.h"
#include "MLIRGenImpl.h"

#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace ampc;
using namespace ampc::frontend;
using namespace ampc::frontend::detail;
using llvm::dyn_cast;
using llvm::isa;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Value MLIRGenImpl::genExpr(const ExprAST &e) {
  if (std::optional<Literal> lit = asLiteral(e))
    return genConstant(*lit, builder.getF32Type(), e.getLoc());

  switch (e.getKind()) {
  case ExprAST::Kind::Number:
    llvm_unreachable("handled as a literal");
  case ExprAST::Kind::Name: {
    auto &name = cast<NameExprAST>(e);
    auto it = symbols.find(name.name);
    if (it == symbols.end()) {
      error(e.getLoc()) << "undefined name '" << name.name << "'";
      return nullptr;
    }
    return it->second;
  }
  case ExprAST::Kind::Neg: {
    Value v = genExpr(*cast<NegExprAST>(e).operand);
    return v ? build<tg::NegOp>(loc(e.getLoc()), {v}) : Value();
  }
  case ExprAST::Kind::Binary: {
    auto &bin = cast<BinaryExprAST>(e);
    switch (bin.op) {
    case '+':
      return genBinary(tg::AddOp::getOperationName(), *bin.lhs, *bin.rhs,
                       bin.getLoc());
    case '-':
      return genBinary(tg::SubOp::getOperationName(), *bin.lhs, *bin.rhs,
                       bin.getLoc());
    case '*':
      return genBinary(tg::MulOp::getOperationName(), *bin.lhs, *bin.rhs,
                       bin.getLoc());
    case '/':
      return genBinary(tg::DivOp::getOperationName(), *bin.lhs, *bin.rhs,
                       bin.getLoc());
    case '@': {
      // `a @ b` is `matmul(a, b)` (Python's `__matmul__`).
      for (const ExprAST *side : {bin.lhs.get(), bin.rhs.get()})
        if (asLiteral(*side)) {
          error(side->getLoc()) << "operands of '@' must be tensors, found a "
                                   "bare number";
          return nullptr;
        }
      Value a = genExpr(*bin.lhs);
      if (!a)
        return nullptr;
      // `y = x @f64` reads as a product with a tensor named `f64`: say what
      // a pin is when that name is undefined.
      if (auto *name = dyn_cast<NameExprAST>(bin.rhs.get());
          name && !symbols.count(name->name)) {
        error(name->getLoc()) << "undefined name '" << name->name
                              << "' after '@' (a pin is '@f32', '@f16' or "
                                 "'@bf16')";
        return nullptr;
      }
      Value b = genExpr(*bin.rhs);
      return b ? build<tg::MatmulOp>(loc(bin.getLoc()), {a, b}) : Value();
    }
    }
    error(e.getLoc()) << "unknown operator '" << bin.op << "'";
    return nullptr;
  }
  case ExprAST::Kind::Call: {
    auto &call = cast<CallExprAST>(e);
    if (call.callee == "grad") {
      error(call.getLoc()) << "'grad' must be the whole right-hand side of an "
                              "assignment, with one name per gradient";
      return nullptr;
    }
    return genCall(call, 1);
  }
  }
  return nullptr;
}

/// The op `info` of a `.tg` call, built from its record: operand counts and
/// keyword attributes (names, kinds, defaults) come from the dialect
/// (TGOpInfo.h), so an op declared in ODS is callable without code here.
/// Only the calls whose records say `customFrontend` have code of their own
/// (genCustomCall).
/// The rank each operand of `chain_matmul` must have (torch.chain_matmul:
/// 2-D, two or more); empty for other callees. It is built as a chain of
/// `tg.mm`, left to right (`mm`, `bmm` and `mv` have op records).
static SmallVector<int64_t> matmulFamilyRanks(StringRef callee, size_t n) {
  if (callee == "chain_matmul")
    return SmallVector<int64_t>(std::max<size_t>(n, 2), 2);
  return {};
}

Value MLIRGenImpl::genMatmulFamily(const CallExprAST &call) {
  SmallVector<int64_t> ranks =
      matmulFamilyRanks(call.callee, call.args.size());
  bool variadic = call.callee == "chain_matmul";
  if (failed(checkArity(call, 2, variadic ? SIZE_MAX : 2)) ||
      failed(checkKeywords(call, {})))
    return nullptr;
  SmallVector<Value> ops;
  if (failed(genOperands(call, ops)))
    return nullptr;
  for (auto [i, v] : llvm::enumerate(ops)) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    if (rank != ranks[i]) {
      error(call.args[i]->getLoc())
          << "operand " << i + 1 << " of '" << call.callee << "' must be "
          << ranks[i] << "-D, found a " << rank << "-D tensor";
      return nullptr;
    }
  }
  Value acc = ops[0];
  for (Value next : ArrayRef<Value>(ops).drop_front()) {
    acc = build<tg::MmOp>(loc(call.getLoc()), {acc, next});
    if (!acc)
      return nullptr;
  }
  return acc;
}

Value MLIRGenImpl::genCall(const CallExprAST &call, unsigned numResults,
                           SmallVectorImpl<Value> *results) {
  if (auto it = imports.find(call.callee); it != imports.end())
    return genImportCall(call, *it->second, numResults, results);
  const tg::OpInfo *info = tg::lookupLanguageOp(call.callee);
  if (!info && !matmulFamilyRanks(call.callee, 0).empty()) {
    if (numResults != 1) {
      error(call.getLoc()) << "'" << call.callee << "' produces one value, but "
                           << numResults << " names are assigned";
      return nullptr;
    }
    return genMatmulFamily(call);
  }
  if (!info) {
    if (call.callee == "sgd" || call.callee == "adamw")
      error(call.getLoc()) << "'" << call.callee
                           << "' is an optimizer: use it in 'minimize LOSS "
                              "with "
                           << call.callee << "(...)'";
    else
      error(call.getLoc()) << "unknown op '" << call.callee << "'";
    return nullptr;
  }
  bool isGrad = info->name == tg::GradOp::getOperationName();
  if (!isGrad && numResults != 1) {
    error(call.getLoc()) << "'" << call.callee << "' produces one value, but "
                         << numResults << " names are assigned";
    return nullptr;
  }
  SmallVector<StringRef> keywords;
  for (const tg::KeywordInfo &kw : info->keywords)
    keywords.push_back(kw.name);
  size_t maxOperands = info->maxOperands == tg::OpInfo::kVariadic
                           ? SIZE_MAX
                           : size_t(info->maxOperands);
  // `dropout(x)`: its step counter is the graph's, not the call's.
  if (info->name == tg::DropoutOp::getOperationName())
    maxOperands = 1;
  if (failed(checkArity(call, info->minOperands, maxOperands)) ||
      failed(checkKeywords(call, keywords)))
    return nullptr;

  // Binary elementwise ops accept bare numbers on either side.
  if (info->elementwise == "binary")
    return genBinary(info->name, *call.args[0], *call.args[1], call.getLoc());

  // `where(c, a, b)`: a bare number as a value side takes the other side's
  // dtype (f32 when both are numbers), as `torch.where(c, x, 0.0)` does.
  if (info->name == tg::WhereOp::getOperationName() && call.args.size() == 3) {
    Value c = asLiteral(*call.args[0]) ? Value() : genExpr(*call.args[0]);
    if (!c) {
      if (asLiteral(*call.args[0]))
        error(call.args[0]->getLoc())
            << "operand 1 of 'where' must be a tensor, found a bare number";
      return nullptr;
    }
    std::optional<Literal> l = asLiteral(*call.args[1]),
                           r = asLiteral(*call.args[2]);
    Value a = l ? Value() : genExpr(*call.args[1]);
    Value b = r ? Value() : genExpr(*call.args[2]);
    if ((!l && !a) || (!r && !b))
      return nullptr;
    auto eltOf = [&](Value v) {
      return v ? cast<RankedTensorType>(v.getType()).getElementType()
               : Type(builder.getF32Type());
    };
    if (l)
      a = genConstant(*l, eltOf(b), call.args[1]->getLoc());
    if (r)
      b = genConstant(*r, eltOf(a), call.args[2]->getLoc());
    if (!a || !b)
      return nullptr;
    return build(info->name, loc(call.getLoc()), {c, a, b});
  }

  SmallVector<Value> ops;
  if (failed(genOperands(call, ops)))
    return nullptr;
  if (info->customFrontend)
    return genCustomCall(call, *info, ops, numResults, results);
  SmallVector<NamedAttribute> attrs;
  for (const tg::KeywordInfo &kw : info->keywords)
    if (failed(genKeyword(call, kw, ops, attrs)))
      return nullptr;
  return build(info->name, loc(call.getLoc()), ops, attrs);
}

/// The default of `kw` as a number.
static double defaultNumber(const tg::KeywordInfo &kw) {
  return std::strtod(kw.defaultValue.data(), nullptr);
}

/// The default of a list keyword: `N` or `[A, B, ...]`.
static SmallVector<int64_t> defaultList(const tg::KeywordInfo &kw) {
  SmallVector<int64_t> values;
  StringRef text = kw.defaultValue;
  text = text.trim().trim("[]");
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    int64_t v = 0;
    if (!part.trim().getAsInteger(10, v))
      values.push_back(v);
  }
  return values;
}

LogicalResult MLIRGenImpl::genKeyword(const CallExprAST &call,
                                      const tg::KeywordInfo &kw,
                                      ArrayRef<Value> ops,
                                      SmallVectorImpl<NamedAttribute> &attrs) {
  StringRef name = kw.name;
  bool required = kw.isRequired();
  // The default of a numeric keyword (none when it is required).
  std::optional<int64_t> intDefault;
  std::optional<double> floatDefault;
  if (!required) {
    floatDefault = defaultNumber(kw);
    intDefault = static_cast<int64_t>(*floatDefault);
  }
  switch (kw.kind) {
  case tg::KeywordKind::Float: {
    auto v = getFloat(call, name, floatDefault);
    if (failed(v))
      return failure();
    attrs.push_back(named(name, builder.getF64FloatAttr(*v)));
    return success();
  }
  case tg::KeywordKind::Int: {
    auto v = getInt(call, name, intDefault);
    if (failed(v))
      return failure();
    attrs.push_back(named(name, builder.getI64IntegerAttr(*v)));
    return success();
  }
  case tg::KeywordKind::Bool:
  case tg::KeywordKind::Flag: {
    auto v = getBool(call, name, kw.defaultValue == "true");
    if (failed(v))
      return failure();
    if (kw.kind == tg::KeywordKind::Bool)
      attrs.push_back(named(name, builder.getBoolAttr(*v)));
    else if (*v)
      attrs.push_back(named(name, builder.getUnitAttr()));
    return success();
  }
  case tg::KeywordKind::String: {
    std::string value = kw.defaultValue.str();
    if (const KeywordArg *arg = call.findKeyword(name)) {
      std::string expected = "a string";
      if (!kw.allowed.empty()) {
        expected.clear();
        for (auto [i, a] : llvm::enumerate(kw.allowed))
          expected += (i ? " or \"" : "\"") + a.str() + "\"";
      }
      if (arg->value.kind != AttrAST::Kind::String)
        return attrError(call, *arg, expected);
      value = arg->value.string;
      if (!kw.allowed.empty() && !llvm::is_contained(kw.allowed, value)) {
        error(arg->value.loc)
            << "attribute '" << name << "' of '" << call.callee << "' must be "
            << expected << ", found \"" << value << "\"";
        return failure();
      }
    }
    attrs.push_back(named(name, builder.getStringAttr(value)));
    return success();
  }
  case tg::KeywordKind::Ints: {
    auto list = getIntList(call, name);
    if (failed(list))
      return failure();
    if (!*list && required) {
      error(call.getLoc()) << "'" << call.callee << "' needs attribute '"
                           << name << "'";
      return failure();
    }
    SmallVector<int64_t> values = *list ? **list : defaultList(kw);
    attrs.push_back(named(name, builder.getDenseI64ArrayAttr(values)));
    return success();
  }
  case tg::KeywordKind::Pair:
  case tg::KeywordKind::Single:
  case tg::KeywordKind::Triple: {
    size_t count = kw.kind == tg::KeywordKind::Pair     ? 2
                   : kw.kind == tg::KeywordKind::Single ? 1
                                                        : 3;
    FailureOr<SmallVector<int64_t>> pair = failure();
    if (kw.defaultValue.starts_with("=") && !call.findKeyword(name)) {
      // The value of another keyword (built before this one).
      StringRef from = kw.defaultValue.drop_front();
      for (const NamedAttribute &a : attrs)
        if (a.getName() == from)
          pair = SmallVector<int64_t>(
              cast<DenseI64ArrayAttr>(a.getValue()).asArrayRef());
      if (failed(pair))
        llvm_unreachable("a pair defaults to a keyword built before it");
    } else {
      pair =
          getPair(call, name,
                  kw.defaultValue.starts_with("=") ? std::nullopt : intDefault,
                  count);
    }
    if (failed(pair))
      return failure();
    attrs.push_back(named(name, builder.getDenseI64ArrayAttr(*pair)));
    return success();
  }
  case tg::KeywordKind::Dim: {
    auto dim = getInt(call, name, intDefault);
    if (failed(dim))
      return failure();
    auto nd = normalizeDim(*dim, cast<RankedTensorType>(ops[0].getType()),
                           kwLoc(call, name));
    if (failed(nd))
      return failure();
    attrs.push_back(named(name, builder.getI64IntegerAttr(*nd)));
    return success();
  }
  case tg::KeywordKind::Dims: {
    auto type = cast<RankedTensorType>(ops[0].getType());
    auto dimsOr = getIntList(call, name);
    if (failed(dimsOr))
      return failure();
    SmallVector<int64_t> dims;
    // No dims (or an empty list, as in torch.sum(x, dim=[])) reduces all.
    if (!*dimsOr || (*dimsOr)->empty()) {
      for (int64_t d = 0; d < type.getRank(); ++d)
        dims.push_back(d);
    } else {
      for (auto [i, d] : llvm::enumerate(**dimsOr)) {
        const frontend::Location &dl = kwElementLoc(call, name, i);
        if (type.getRank() == 0) {
          error(dl) << "cannot reduce a scalar over dim " << d;
          return failure();
        }
        auto nd = normalizeDim(d, type, dl);
        if (failed(nd))
          return failure();
        if (llvm::is_contained(dims, *nd)) {
          error(dl) << "dim " << d << " appears twice in '" << name << "'";
          return failure();
        }
        dims.push_back(*nd);
      }
      llvm::sort(dims);
    }
    attrs.push_back(named(name, builder.getDenseI64ArrayAttr(dims)));
    return success();
  }
  case tg::KeywordKind::DType:
    break;
  }
  llvm_unreachable("a dtype keyword belongs to a custom call");
}

/// The calls that need code: `transpose` (its 2-D default), `concat` and
/// `slice` (Python's index rules), `cast` (its result type) and `grad`
/// (several results).
Value MLIRGenImpl::genCustomCall(const CallExprAST &call,
                                 const tg::OpInfo &info, ArrayRef<Value> ops,
                                 unsigned numResults,
                                 SmallVectorImpl<Value> *results) {
  mlir::Location l = loc(call.getLoc());
  StringRef name = info.name;
  if (name == tg::TransposeOp::getOperationName()) {
    auto type = cast<RankedTensorType>(ops[0].getType());
    auto permOr = getIntList(call, "perm");
    if (failed(permOr))
      return nullptr;
    SmallVector<int64_t> perm;
    if (!*permOr) {
      if (type.getRank() != 2) {
        error(call.getLoc()) << "'transpose' without 'perm' swaps the dims of "
                                "a 2-D tensor, but the operand is "
                             << formatType(type);
        return nullptr;
      }
      perm = {1, 0};
    } else {
      for (int64_t p : **permOr) {
        // Out-of-range entries are left for the op's verifier to report.
        perm.push_back(p < 0 && p >= -type.getRank() ? p + type.getRank() : p);
      }
    }
    return build<tg::TransposeOp>(
        l, ops, {named("perm", builder.getDenseI64ArrayAttr(perm))});
  }
  if (name == tg::ConcatOp::getOperationName()) {
    auto dim = getInt(call, "dim", 0);
    if (failed(dim))
      return nullptr;
    auto type = cast<RankedTensorType>(ops[0].getType());
    if (type.getRank() == 0) {
      error(call.args[0]->getLoc()) << "'concat' needs tensors of rank >= 1, "
                                       "operand 1 is "
                                    << formatType(type);
      return nullptr;
    }
    auto nd = normalizeDim(*dim, type, kwLoc(call, "dim"));
    if (failed(nd))
      return nullptr;
    return build<tg::ConcatOp>(l, ops,
                               {named("dim", builder.getI64IntegerAttr(*nd))});
  }
  if (name == tg::SliceOp::getOperationName()) {
    auto type = cast<RankedTensorType>(ops[0].getType());
    auto dim = getInt(call, "dim", std::nullopt);
    if (failed(dim))
      return nullptr;
    if (type.getRank() == 0) {
      error(call.getLoc()) << "cannot slice a scalar";
      return nullptr;
    }
    auto nd = normalizeDim(*dim, type, kwLoc(call, "dim"));
    if (failed(nd))
      return nullptr;
    int64_t size = type.getDimSize(*nd);
    auto start = getInt(call, "start", 0);
    auto end = getInt(call, "end", size);
    if (failed(start) || failed(end))
      return nullptr;
    // Python slicing: negative indices count from the end, then clamp.
    auto resolve = [&](int64_t i) {
      if (i < 0)
        i += size;
      return std::clamp<int64_t>(i, 0, size);
    };
    int64_t s = resolve(*start), e = resolve(*end);
    if (s >= e) {
      error(call.getLoc()) << "slice [" << *start << ":" << *end << "] of dim "
                           << *nd << " of " << formatType(type) << " is empty";
      return nullptr;
    }
    return build<tg::SliceOp>(l, ops,
                              {named("dim", builder.getI64IntegerAttr(*nd)),
                               named("start", builder.getI64IntegerAttr(s)),
                               named("end", builder.getI64IntegerAttr(e))});
  }
  if (name == tg::CastOp::getOperationName()) {
    const KeywordArg *to = call.findKeyword("to");
    if (!to) {
      error(call.getLoc()) << "'cast' needs attribute 'to' (a dtype)";
      return nullptr;
    }
    if (to->value.kind != AttrAST::Kind::DType) {
      (void)attrError(call, *to, "a dtype");
      return nullptr;
    }
    auto type = cast<RankedTensorType>(ops[0].getType());
    auto result = type.clone(elementType(to->value.dtype));
    return tg::CastOp::create(builder, l, result, ops[0]);
  }
  if (name == tg::GradOp::getOperationName()) {
    if (call.args.size() - 1 != numResults) {
      error(call.getLoc()) << "'grad' with respect to " << call.args.size() - 1
                           << " value" << (call.args.size() == 2 ? "" : "s")
                           << " produces as many gradients, but " << numResults
                           << " name" << (numResults == 1 ? " is" : "s are")
                           << " assigned";
      return nullptr;
    }
    auto lossType = cast<RankedTensorType>(ops[0].getType());
    if (lossType.getRank() != 0 || !isa<FloatType>(lossType.getElementType())) {
      error(call.args[0]->getLoc())
          << "'grad' needs a float scalar loss, got " << formatType(lossType);
      return nullptr;
    }
    for (size_t i = 1; i < ops.size(); ++i) {
      const ExprAST &arg = *call.args[i];
      if (bufferArgs.count(ops[i])) {
        error(arg.getLoc()) << "'grad' differentiates with respect to params "
                               "or graph inputs; '"
                            << bufferArgs.lookup(ops[i])
                            << "' is a buffer (non-trainable state)";
        return nullptr;
      }
      if (!isa<NameExprAST>(arg) || !isa<BlockArgument>(ops[i])) {
        error(arg.getLoc()) << "'grad' differentiates with respect to params "
                               "or graph inputs; operand "
                            << i + 1 << " is a computed value";
        return nullptr;
      }
      auto t = cast<RankedTensorType>(ops[i].getType());
      if (!isa<FloatType>(t.getElementType())) {
        error(arg.getLoc()) << "cannot differentiate with respect to '"
                            << cast<NameExprAST>(arg).name
                            << "' of integer type " << formatType(t);
        return nullptr;
      }
    }
    Operation *op = buildOp<tg::GradOp>(l, ops, {}, numResults);
    if (!op)
      return nullptr;
    if (results)
      results->append(op->result_begin(), op->result_end());
    return op->getResult(0);
  }
  if (name == tg::BatchNormOp::getOperationName())
    return genBatchNorm(call, ops);
  if (name == tg::DropoutOp::getOperationName())
    return genDropout(call, ops);
  error(call.getLoc()) << "'" << call.callee << "' has no frontend rule";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult MLIRGenImpl::genAssign(const AssignStmtAST &stmt) {
  unsigned numNames = stmt.names.size();
  SmallVector<Value> values;
  const ExprAST &expr = *stmt.value;
  if (auto *call = dyn_cast<CallExprAST>(&expr)) {
    Value v = genCall(*call, numNames, &values);
    if (!v)
      return failure();
    if (values.empty())
      values.push_back(v);
  } else {
    if (numNames != 1) {
      error(stmt.names[1].loc)
          << "only 'grad' produces several values; this expression produces "
             "one, but "
          << numNames << " names are assigned";
      return failure();
    }
    Value v = genExpr(expr);
    if (!v)
      return failure();
    values.push_back(v);
  }

  // The op that computes the outermost expression carries the variable
  // name(s) (for reports) and the pin.
  bool computedHere = !isa<NameExprAST>(expr);
  Operation *def = computedHere ? values.front().getDefiningOp() : nullptr;
  if (stmt.pin) {
    if (!def || isa<tg::ConstantOp>(def)) {
      error(stmt.pinLoc) << "'@" << toString(*stmt.pin)
                         << "' pins the precision of an op, but the "
                            "right-hand side computes nothing";
      return failure();
    }
    DType pin = *stmt.pin;
    if (pin != DType::F32 && pin != DType::F16 && pin != DType::BF16) {
      error(stmt.pinLoc) << "a pin must be @f32, @f16 or @bf16";
      return failure();
    }
    def->setAttr(tg::TGDialect::kPinAttrName, TypeAttr::get(elementType(pin)));
  }
  if (def) {
    std::string joined;
    for (auto [i, n] : llvm::enumerate(stmt.names))
      joined += (i ? ", " : "") + n.name;
    def->setLoc(NameLoc::get(builder.getStringAttr(joined), def->getLoc()));
  }
  for (auto [name, value] : llvm::zip(stmt.names, values))
    if (failed(define(name.name, name.loc, value)))
      return failure();
  return success();
}

LogicalResult MLIRGenImpl::genRegion(const RegionStmtAST &stmt) {
  StringAttr mode = builder.getStringAttr(toString(stmt.mode));
  Block *block = builder.getInsertionBlock();
  for (const std::unique_ptr<StmtAST> &inner : stmt.stmts) {
    if (auto *region = dyn_cast<RegionStmtAST>(inner.get())) {
      if (failed(genRegion(*region)))
        return failure();
      continue;
    }
    // The ops an assignment makes are appended to the graph's block (its
    // `grad` and imported models' ops included): those after the last op
    // before it.
    Operation *before = block->empty() ? nullptr : &block->back();
    if (failed(genAssign(*cast<AssignStmtAST>(inner.get()))))
      return failure();
    auto it = before ? std::next(before->getIterator()) : block->begin();
    for (Operation &op : llvm::make_range(it, block->end()))
      op.walk([&](Operation *nested) {
        nested->setAttr(tg::TGDialect::kRegionAttrName, mode);
      });
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Imported ONNX models
//===----------------------------------------------------------------------===//

LogicalResult MLIRGenImpl::loadImports(const ModuleAST &module) {
  for (const ImportAST &imp : module.imports) {
    if (tg::lookupLanguageOp(imp.name) || imp.name == "conv1d" ||
        !matmulFamilyRanks(imp.name, 0).empty() || imp.name == "grad") {
      error(imp.nameLoc) << "'" << imp.name
                         << "' is an op of the language and cannot name an "
                            "imported model";
      return failure();
    }
    // The path is relative to the importing file.
    SmallString<256> path(imp.path);
    if (!llvm::sys::path::is_absolute(path) && imp.pathLoc.file) {
      StringRef dir = llvm::sys::path::parent_path(*imp.pathLoc.file);
      if (!dir.empty()) {
        path = dir;
        llvm::sys::path::append(path, imp.path);
      }
    }
    std::unique_ptr<onnx_import::ONNXModel> model =
        onnx_import::ONNXModel::load(ctx, path, path, loc(imp.pathLoc));
    if (!model)
      return failure();
    imports[imp.name] = std::move(model);
  }
  return success();
}

/// `NAME(args...)` of `import NAME = "FILE.onnx"`: the model's graph,
/// inlined on the arguments; its initializers are parameters `NAME.<init>`
/// (one per graph, shared by the calls in it).
Value MLIRGenImpl::genImportCall(const CallExprAST &call,
                                 const onnx_import::ONNXModel &m,
                                 unsigned numResults,
                                 SmallVectorImpl<Value> *results) {
  if (failed(checkKeywords(call, {})))
    return nullptr;
  size_t numOutputs = m.getOutputNames().size();
  if (numResults != numOutputs) {
    error(call.getLoc()) << "'" << call.callee << "' produces " << numOutputs
                         << " value" << (numOutputs == 1 ? "" : "s") << ", but "
                         << numResults << " name"
                         << (numResults == 1 ? " is" : "s are") << " assigned";
    return nullptr;
  }
  SmallVector<Value> args;
  if (failed(genOperands(call, args)))
    return nullptr;
  // The model's parameters and buffers are arguments appended at their
  // first use in the graph; a training graph updates the buffers and
  // drops.
  struct CallState : onnx_import::GraphState {
    MLIRGenImpl &gen;
    mlir::Location at;
    CallState(MLIRGenImpl &gen, mlir::Location at) : gen(gen), at(at) {}
    BlockArgument newArg(StringRef role, StringRef name,
                         DenseElementsAttr value) {
      NamedAttrList attrs;
      attrs.append(role, gen.builder.getStringAttr(name));
      attrs.append(tg::TGDialect::kInitAttrName,
                   tg::InitAttr::get(&gen.ctx, tg::InitKind::zeros, 0.0, 0.0));
      attrs.append(tg::TGDialect::kInitValueAttrName, value);
      unsigned index = gen.currentFunc.getNumArguments();
      (void)gen.currentFunc.insertArgument(
          index, value.getType(), attrs.getDictionary(&gen.ctx),
          NameLoc::get(gen.builder.getStringAttr(name), at));
      return gen.currentFunc.getArgument(index);
    }
    bool isTraining() const override { return gen.trainingGraph; }
    Value param(StringRef name, DenseElementsAttr value) override {
      for (const Param &p : gen.importedParams)
        if (p.name == name)
          return p.arg;
      BlockArgument arg = newArg(tg::TGDialect::kParamAttrName, name, value);
      gen.importedParams.push_back({nullptr, arg, name.str()});
      return arg;
    }
    Value buffer(StringRef name, DenseElementsAttr value) override {
      for (auto &[n, v] : gen.bufferUpdates)
        if (n == name)
          return v;
      auto it = gen.importedBuffers.find(name);
      if (it != gen.importedBuffers.end())
        return it->second;
      BlockArgument arg = newArg(tg::TGDialect::kBufferAttrName, name, value);
      auto entry = gen.importedBuffers.try_emplace(name, arg).first;
      gen.bufferArgs[arg] = entry->getKey();
      return arg;
    }
    void updateBuffer(StringRef name, Value value) override {
      for (auto &[n, v] : gen.bufferUpdates)
        if (n == name) {
          v = value;
          return;
        }
      gen.bufferUpdates.push_back({name.str(), value});
    }
    Value dropout(Value x, double p, mlir::Location l) override {
      return gen.buildDropout(x, p, l);
    }
  } state(*this, loc(call.getLoc()));
  FailureOr<SmallVector<Value>> outs =
      m.emit(builder, loc(call.getLoc()), args, call.callee, state);
  if (failed(outs))
    return nullptr;
  if (results)
    results->append(outs->begin(), outs->end());
  return outs->front();
}

LogicalResult MLIRGenImpl::genGraph(const GraphAST &graph) {
  symbols.clear();
  definedAt.clear();
  params.clear();
  importedParams.clear();
  bufferArgs.clear();
  bufferUpdates.clear();
  importedBuffers.clear();
  dropoutStep = Value();
  dropoutCount = 0;
  trainingGraph = llvm::any_of(graph.stmts, [](const auto &stmt) {
    return isa<MinimizeStmtAST>(stmt.get());
  });

  if (theModule.lookupSymbol(graph.name)) {
    error(graph.nameLoc) << "redefinition of graph '" << graph.name << "'";
    return failure();
  }

  // Arguments: the graph's inputs, then its parameters in declaration order.
  SmallVector<Type> argTypes;
  for (const ArgAST &arg : graph.args)
    argTypes.push_back(tensorType(arg.type));
  SmallVector<const ParamStmtAST *> paramStmts;
  for (const auto &stmt : graph.stmts)
    if (auto *p = dyn_cast<ParamStmtAST>(stmt.get())) {
      paramStmts.push_back(p);
      StringRef what = p->isBuffer ? "buffer" : "parameter";
      if (!isa<FloatType>(tensorType(p->type).getElementType())) {
        error(p->type.loc) << what << " '" << p->name
                           << "' must have a float dtype (f32, f16 or bf16), "
                              "got "
                           << formatType(tensorType(p->type));
        return failure();
      }
      argTypes.push_back(tensorType(p->type));
      auto [first, isNew] = firstParam.try_emplace(p->name, p);
      if (isNew)
        continue;
      const ParamStmtAST &f = *first->second;
      if (f.isBuffer != p->isBuffer) {
        error(p->nameLoc) << "'" << p->name << "' is declared as a " << what
                          << " here but as a "
                          << (f.isBuffer ? "buffer" : "parameter")
                          << " where another graph declares it (line "
                          << f.nameLoc.line
                          << "); graphs share params and buffers by name";
        return failure();
      }
      if (tensorType(f.type) != tensorType(p->type)) {
        error(p->type.loc) << what << " '" << p->name << "' is "
                           << formatType(tensorType(p->type))
                           << " here but " << formatType(tensorType(f.type))
                           << " where another graph declares it (line "
                           << f.nameLoc.line << "); graphs share "
                           << (p->isBuffer ? "buffers" : "params")
                           << " by name";
        return failure();
      }
      if (p->init.isExplicit &&
          (p->init.kind != f.init.kind || p->init.a != f.init.a ||
           p->init.b != f.init.b)) {
        error(p->init.loc) << what << " '" << p->name
                           << "' has another initialiser than where it is "
                              "first declared (line "
                           << f.nameLoc.line << "); the first one counts";
        return failure();
      }
    }

  builder.setInsertionPointToEnd(theModule.getBody());
  auto func = func::FuncOp::create(builder, loc(graph.loc), graph.name,
                                   builder.getFunctionType(argTypes, {}));
  currentFunc = func;
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  // All argument attributes are set at once: setArgAttr per argument
  // rebuilds (and uniques) the whole arg_attrs array each time, which is
  // quadratic in time and memory for graphs with many parameters.
  SmallVector<DictionaryAttr> argAttrs(argTypes.size());
  for (auto [i, arg] : llvm::enumerate(graph.args)) {
    entry->getArgument(i).setLoc(
        NameLoc::get(builder.getStringAttr(arg.name), loc(arg.loc)));
    argAttrs[i] = builder.getDictionaryAttr(builder.getNamedAttr(
        tg::TGDialect::kInputAttrName, builder.getStringAttr(arg.name)));
    if (failed(define(arg.name, arg.loc, entry->getArgument(i))))
      return failure();
  }
  for (auto [i, p] : llvm::enumerate(paramStmts)) {
    unsigned index = graph.args.size() + i;
    entry->getArgument(index).setLoc(
        NameLoc::get(builder.getStringAttr(p->name), loc(p->nameLoc)));
    static_assert(static_cast<int>(InitSpec::Kind::Uniform) ==
                      static_cast<int>(tg::InitKind::uniform),
                  "init kinds must line up");
    argAttrs[index] = builder.getDictionaryAttr(
        {builder.getNamedAttr(p->isBuffer ? tg::TGDialect::kBufferAttrName
                                          : tg::TGDialect::kParamAttrName,
                              builder.getStringAttr(p->name)),
         builder.getNamedAttr(
             tg::TGDialect::kInitAttrName,
             tg::InitAttr::get(
                 &ctx,
                 static_cast<tg::InitKind>(firstParam[p->name]->init.kind),
                 firstParam[p->name]->init.a, firstParam[p->name]->init.b))});
    if (p->isBuffer)
      bufferArgs[entry->getArgument(index)] = p->name;
    else
      params.push_back({p, entry->getArgument(index), p->name});
  }
  func.setAllArgAttrs(argAttrs);

  Operation *minimize = nullptr;
  const ReturnStmtAST *ret = nullptr;
  size_t nextDecl = 0;
  for (const auto &stmt : graph.stmts) {
    if (auto *p = dyn_cast<ParamStmtAST>(stmt.get())) {
      // Params and buffers are the arguments after the inputs, in
      // declaration order.
      assert(nextDecl < paramStmts.size() && paramStmts[nextDecl] == p);
      BlockArgument arg =
          entry->getArgument(graph.args.size() + nextDecl++);
      if (failed(define(p->name, p->nameLoc, arg)))
        return failure();
    } else if (auto *a = dyn_cast<AssignStmtAST>(stmt.get())) {
      if (failed(genAssign(*a)))
        return failure();
    } else if (auto *r = dyn_cast<RegionStmtAST>(stmt.get())) {
      if (failed(genRegion(*r)))
        return failure();
    } else if (auto *m = dyn_cast<MinimizeStmtAST>(stmt.get())) {
      auto op = genMinimize(*m);
      if (failed(op))
        return failure();
      minimize = *op;
    } else {
      ret = cast<ReturnStmtAST>(stmt.get());
    }
  }
  if (!ret) {
    error(graph.loc) << "graph '" << graph.name << "' has no 'return'";
    return failure();
  }

  SmallVector<Value> outputs;
  for (const auto &e : ret->values) {
    Value v = genExpr(*e);
    if (!v)
      return failure();
    outputs.push_back(v);
  }
  if (!graph.results.empty()) {
    if (graph.results.size() != outputs.size()) {
      error(ret->getLoc()) << "graph '" << graph.name << "' declares "
                           << graph.results.size() << " result"
                           << (graph.results.size() == 1 ? "" : "s")
                           << " but returns " << outputs.size();
      return failure();
    }
    for (auto [i, declared, v] : llvm::enumerate(graph.results, outputs)) {
      Type want = tensorType(declared);
      if (want != v.getType()) {
        error(ret->values[i]->getLoc())
            << "return value " << i + 1 << " is " << formatType(v.getType())
            << " but graph '" << graph.name << "' declares "
            << formatType(want);
        return failure();
      }
    }
  }

  SmallVector<Value> results(outputs);
  if (minimize)
    results.append(minimize->result_begin(), minimize->result_end());
  // The buffers' new values and the dropout counter's next value, after the
  // params' (they are updated as the params are, in place at run time).
  size_t firstState = results.size();
  for (auto &[name, value] : bufferUpdates)
    results.push_back(value);
  if (dropoutStep)
    results.push_back(tg::CounterNextOp::create(builder, loc(ret->getLoc()),
                                                dropoutStep));
  func::ReturnOp::create(builder, loc(ret->getLoc()), results);
  // Arguments may have been added while the body was built (dropout.step,
  // parameters of imported models).
  func.setFunctionType(builder.getFunctionType(
      func.getArgumentTypes(), TypeRange(ValueRange(results))));
  for (size_t i = 0; i < outputs.size(); ++i)
    func.setResultAttr(i, tg::TGDialect::kOutputAttrName,
                       builder.getI64IntegerAttr(i));
  if (minimize)
    for (auto [i, p] : llvm::enumerate(allParams()))
      func.setResultAttr(outputs.size() + i, tg::TGDialect::kParamOutAttrName,
                         builder.getStringAttr(p.name));
  for (auto [i, update] : llvm::enumerate(bufferUpdates))
    func.setResultAttr(firstState + i, tg::TGDialect::kBufferOutAttrName,
                       builder.getStringAttr(update.first));
  if (dropoutStep)
    func.setResultAttr(results.size() - 1, tg::TGDialect::kStateOutAttrName,
                       builder.getStringAttr(kDropoutStepName));
  return success();
}

/// A number as C's %g prints it (`0.5`, `-0.001`, `1`).
static std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// What a value is, for messages about operands that must be buffers.
static std::string describeValue(Value v, StringRef asWritten) {
  std::string name = "'" + asWritten.str() + "'";
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return "a computed value";
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (func && func.getArgAttr(arg.getArgNumber(), tg::TGDialect::kParamAttrName))
    return name + ", a parameter";
  return name + ", a graph input";
}

Value MLIRGenImpl::genBatchNorm(const CallExprAST &call, ArrayRef<Value> ops) {
  auto x = cast<RankedTensorType>(ops[0].getType());
  if (x.getRank() < 2) {
    error(call.args[0]->getLoc())
        << "'batch_norm' normalises over dim 1 of an (N, C, ...) input of "
           "rank >= 2, got "
        << formatType(x);
    return nullptr;
  }
  int64_t channels = x.getDimSize(1);
  static const char *const kNames[] = {"input", "weight", "bias",
                                       "running_mean", "running_var"};
  for (unsigned i = 1; i < 5; ++i) {
    auto t = cast<RankedTensorType>(ops[i].getType());
    StringRef written;
    if (auto *n = dyn_cast<NameExprAST>(call.args[i].get()))
      written = n->name;
    if (i >= 3 && !bufferArgs.count(ops[i])) {
      error(call.args[i]->getLoc())
          << "'batch_norm' keeps its " << kNames[i] << " (operand " << i + 1
          << ") in a 'buffer' (non-trainable state), but it is "
          << describeValue(ops[i], written)
          << "; declare it with 'buffer NAME: f32[" << channels << "]'";
      return nullptr;
    }
    if (t.getRank() != 1 || t.getDimSize(0) != channels) {
      error(call.args[i]->getLoc())
          << "'batch_norm' needs " << kNames[i] << " (operand " << i + 1
          << ") of shape [" << channels << "] (dim 1 of the input "
          << formatType(x) << "), got " << formatType(t);
      return nullptr;
    }
  }
  auto momentum = getFloat(call, "momentum", 0.1);
  auto eps = getFloat(call, "eps", 1e-5);
  if (failed(momentum) || failed(eps))
    return nullptr;
  if (!(*eps >= 0.0)) {
    error(kwLoc(call, "eps")) << "'batch_norm' needs eps >= 0, got "
                              << shortNumber(*eps);
    return nullptr;
  }
  if (!std::isfinite(*momentum)) {
    error(kwLoc(call, "momentum"))
        << "'batch_norm' needs a finite momentum, got " << *momentum;
    return nullptr;
  }
  if (trainingGraph && x.getNumElements() / std::max<int64_t>(channels, 1) < 2) {
    error(call.getLoc()) << "'batch_norm' in a training graph needs more than "
                            "one value per channel, got input "
                         << formatType(x);
    return nullptr;
  }
  mlir::Location l = loc(call.getLoc());
  Value y = build<tg::BatchNormOp>(
      l, ops,
      {named("momentum", builder.getF64FloatAttr(*momentum)),
       named("eps", builder.getF64FloatAttr(*eps)),
       named("training", builder.getBoolAttr(trainingGraph))});
  if (!y || !trainingGraph)
    return y;
  // The running statistics' new values, from their latest values (a buffer
  // two batch norms update is updated twice, as in PyTorch).
  auto latest = [&](Value arg) {
    StringRef name = bufferArgs.lookup(arg);
    for (auto &[n, v] : bufferUpdates)
      if (n == name)
        return v;
    return arg;
  };
  Operation *update = buildOp<tg::BatchNormUpdateOp>(
      l, {ops[0], latest(ops[3]), latest(ops[4])},
      {named("momentum", builder.getF64FloatAttr(*momentum))}, 2);
  if (!update)
    return nullptr;
  for (unsigned k = 0; k < 2; ++k) {
    std::string name = bufferArgs.lookup(ops[3 + k]).str();
    Value v = update->getResult(k);
    auto it = llvm::find_if(bufferUpdates,
                            [&](const auto &u) { return u.first == name; });
    if (it == bufferUpdates.end())
      bufferUpdates.push_back({name, v});
    else
      it->second = v;
  }
  return y;
}

Value MLIRGenImpl::genDropout(const CallExprAST &call, ArrayRef<Value> ops) {
  auto p = getFloat(call, "p", 0.5);
  if (failed(p))
    return nullptr;
  if (!(*p >= 0.0 && *p < 1.0)) {
    error(kwLoc(call, "p")) << "'dropout' needs p in [0, 1), got "
                            << shortNumber(*p);
    return nullptr;
  }
  // Outside a training graph dropout is the identity.
  if (!trainingGraph)
    return ops[0];
  return buildDropout(ops[0], *p, loc(call.getLoc()));
}

Value MLIRGenImpl::buildDropout(Value x, double p, mlir::Location l) {
  if (!dropoutStep) {
    MLIRContext *c = &ctx;
    NamedAttrList attrs;
    attrs.append(tg::TGDialect::kStateAttrName,
                 builder.getStringAttr(kDropoutStepName));
    attrs.append(tg::TGDialect::kInitAttrName,
                 tg::InitAttr::get(c, tg::InitKind::zeros, 0.0, 0.0));
    unsigned index = currentFunc.getNumArguments();
    (void)currentFunc.insertArgument(
        index, RankedTensorType::get({}, builder.getI32Type()),
        attrs.getDictionary(c), l);
    dropoutStep = currentFunc.getArgument(index);
  }
  return build<tg::DropoutOp>(
      l, {x, dropoutStep},
      {named("p", builder.getF64FloatAttr(p)),
       named("key", builder.getI64IntegerAttr(dropoutCount++))});
}

OwningOpRef<ModuleOp> MLIRGenImpl::genModule(const ModuleAST &module) {
  ctx.getOrLoadDialect<tg::TGDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  mlir::Location moduleLoc = builder.getUnknownLoc();
  if (!module.graphs.empty() && module.graphs.front().loc.file)
    moduleLoc =
        FileLineColLoc::get(&ctx, *module.graphs.front().loc.file, 1, 1);
  OwningOpRef<ModuleOp> owned = ModuleOp::create(moduleLoc);
  theModule = *owned;
  if (failed(loadImports(module)))
    return nullptr;
  for (const GraphAST &graph : module.graphs)
    if (failed(genGraph(graph)))
      return nullptr;
  if (failed(mlir::verify(*owned)))
    return nullptr;
  return owned;
}

OwningOpRef<ModuleOp> ampc::frontend::mlirGen(MLIRContext &context,
                                              const ModuleAST &module) {
  return MLIRGenImpl(context).genModule(module);
}
