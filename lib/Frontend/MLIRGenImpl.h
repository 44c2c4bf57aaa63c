//===- MLIRGenImpl.h - The .tg AST to tg lowering's state -------*- C++ -*-===//
//
// Private to lib/Frontend: the class whose parts MLIRGen.cpp (expressions,
// statements, graphs, imported models, batch_norm and dropout) and
// MLIRGenOptimizer.cpp (`minimize`: optimizer, parameter groups,
// learning-rate schedule) define.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_LIB_FRONTEND_MLIRGENIMPL_H
#define AMPC_LIB_FRONTEND_MLIRGENIMPL_H

#include "ampc/Frontend/AST.h"
#include "ampc/Frontend/ONNXImport.h"

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace ampc::frontend::detail {
using namespace mlir;

/// A literal number in an expression, after folding unary minus.
struct Literal {
  double value;
  bool isInteger;
  int64_t intValue;
};

/// The state argument that counts the steps of a training graph with
/// `dropout` (the mask's step).
static constexpr llvm::StringLiteral kDropoutStepName = "dropout.step";

class MLIRGenImpl {
public:
  explicit MLIRGenImpl(MLIRContext &context) : ctx(context), builder(&ctx) {}

  OwningOpRef<ModuleOp> genModule(const ModuleAST &module);

private:
  MLIRContext &ctx;
  OpBuilder builder;
  ModuleOp theModule;

  /// Per-graph state.
  llvm::StringMap<Value> symbols;
  llvm::StringMap<frontend::Location> definedAt;
  struct Param {
    /// Null for a parameter of an imported model.
    const ParamStmtAST *stmt;
    BlockArgument arg;
    std::string name;
  };
  SmallVector<Param> params;
  /// Parameters of imported models, created at their first call
  /// (arguments appended to the graph).
  SmallVector<Param> importedParams;
  /// The imported ONNX models by import name.
  llvm::StringMap<std::unique_ptr<onnx_import::ONNXModel>> imports;

  /// Declared, then imported parameters: the order of the graph's arguments.
  SmallVector<Param> allParams() const {
    SmallVector<Param> all(params);
    all.append(importedParams);
    return all;
  }
  /// Across graphs: the first declaration of each param or buffer name
  /// (graphs of one file share them by name; the first declaration's
  /// initialiser counts).
  llvm::StringMap<const ParamStmtAST *> firstParam;

  /// Per-graph state of `buffer`s, `batch_norm` and `dropout`
  /// (genBatchNorm, genDropout).
  func::FuncOp currentFunc;
  /// Whether the graph says `minimize` (batch_norm and dropout train).
  bool trainingGraph = false;
  /// The buffer arguments, by value.
  llvm::DenseMap<Value, StringRef> bufferArgs;
  /// The buffers a training batch_norm updated, in order, and their latest
  /// values (the graph returns them as the buffers' new values).
  SmallVector<std::pair<std::string, Value>> bufferUpdates;
  /// The `dropout.step` state argument (null until a dropout needs it) and
  /// the number of dropout calls so far (the next one's key).
  Value dropoutStep;
  int64_t dropoutCount = 0;
  /// Buffers of imported models (batch norm running statistics), by name.
  llvm::StringMap<BlockArgument> importedBuffers;
  Value genBatchNorm(const CallExprAST &call, ArrayRef<Value> ops);
  Value genDropout(const CallExprAST &call, ArrayRef<Value> ops);
  /// `tg.dropout` of a training graph: the graph's step counter, the next
  /// key.
  Value buildDropout(Value x, double p, mlir::Location l);

  //===--------------------------------------------------------------------===//
  // Locations and errors
  //===--------------------------------------------------------------------===//

  mlir::Location loc(const frontend::Location &l) {
    return FileLineColLoc::get(
        &ctx, l.file ? StringRef(*l.file) : StringRef("<unknown>"), l.line,
        l.col);
  }
  InFlightDiagnostic error(const frontend::Location &l) {
    return mlir::emitError(loc(l));
  }

  /// `f32[64, 10]`: types in the language's own spelling.
  static std::string formatType(Type type) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t)
      return tg::typeToString(type);
    std::string s;
    llvm::raw_string_ostream os(s);
    os << tg::elementTypeName(t.getElementType()) << "[";
    llvm::interleaveComma(t.getShape(), os);
    os << "]";
    return s;
  }

  Type elementType(DType dtype) {
    switch (dtype) {
    case DType::F32:
      return builder.getF32Type();
    case DType::F16:
      return builder.getF16Type();
    case DType::BF16:
      return builder.getBF16Type();
    case DType::I32:
      return builder.getI32Type();
    case DType::I64:
      return builder.getI64Type();
    case DType::Bool:
      return builder.getI1Type();
    case DType::F64:
      return builder.getF64Type();
    case DType::U8:
      return builder.getIntegerType(8, /*isSigned=*/false);
    case DType::I8:
      return builder.getI8Type();
    case DType::I16:
      return builder.getI16Type();
    }
    llvm_unreachable("unknown dtype");
  }

  RankedTensorType tensorType(const TypeAST &type) {
    return RankedTensorType::get(type.shape, elementType(type.dtype));
  }

  //===--------------------------------------------------------------------===//
  // Op creation
  //===--------------------------------------------------------------------===//

  /// Creates `OpTy` with `operands` and `attrs`, lets it infer its result
  /// types and verifies it. Emits the op's own diagnostic and returns null on
  /// failure (the half-built op is erased).
  Operation *buildOp(StringRef opName, mlir::Location l, ValueRange operands,
                     ArrayRef<NamedAttribute> attrs, unsigned numResults = 1) {
    OperationState state(l, opName);
    state.addOperands(operands);
    state.addAttributes(attrs);
    state.addTypes(SmallVector<Type>(numResults, builder.getNoneType()));
    Operation *op = builder.create(state);
    SmallVector<Type> types;
    auto iface = cast<InferTypeOpInterface>(op);
    if (failed(iface.inferReturnTypes(
            &ctx, l, op->getOperands(), op->getRawDictionaryAttrs(),
            op->getPropertiesStorage(), op->getRegions(), types)) ||
        types.size() != numResults) {
      op->erase();
      return nullptr;
    }
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
    if (failed(mlir::verify(op))) {
      op->erase();
      return nullptr;
    }
    return op;
  }

  template <typename OpTy>
  Operation *buildOp(mlir::Location l, ValueRange operands,
                     ArrayRef<NamedAttribute> attrs, unsigned numResults = 1) {
    return buildOp(OpTy::getOperationName(), l, operands, attrs, numResults);
  }

  Value build(StringRef opName, mlir::Location l, ValueRange operands,
              ArrayRef<NamedAttribute> attrs = {}) {
    Operation *op = buildOp(opName, l, operands, attrs);
    return op ? op->getResult(0) : Value();
  }

  template <typename OpTy>
  Value build(mlir::Location l, ValueRange operands,
              ArrayRef<NamedAttribute> attrs = {}) {
    return build(OpTy::getOperationName(), l, operands, attrs);
  }

  NamedAttribute named(StringRef name, Attribute attr) {
    return builder.getNamedAttr(name, attr);
  }

  //===--------------------------------------------------------------------===//
  // Literals
  //===--------------------------------------------------------------------===//

  /// A number, possibly under unary minus, is a literal.
  static std::optional<Literal> asLiteral(const ExprAST &e) {
    if (auto *n = dyn_cast<NumberExprAST>(&e))
      return Literal{n->number.value, n->number.isInteger, n->number.intValue};
    if (auto *neg = dyn_cast<NegExprAST>(&e)) {
      std::optional<Literal> inner = asLiteral(*neg->operand);
      if (!inner)
        return std::nullopt;
      if (inner->isInteger && inner->intValue == INT64_MIN)
        return Literal{-inner->value, false, 0};
      return Literal{-inner->value, inner->isInteger, -inner->intValue};
    }
    return std::nullopt;
  }

  /// A rank-0 constant of element type `elt` holding `lit`.
  Value genConstant(const Literal &lit, Type elt, const frontend::Location &l) {
    auto type = RankedTensorType::get({}, elt);
    Attribute value;
    if (auto f = dyn_cast<FloatType>(elt)) {
      APFloat v(lit.value);
      bool lostInfo = false;
      v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lostInfo);
      value = DenseElementsAttr::get(type, v);
    } else {
      if (!lit.isInteger) {
        error(l) << "the number " << llvm::formatv("{0}", lit.value).str()
                 << " cannot be used as an " << formatType(type)
                 << " scalar (it is not an integer)";
        return nullptr;
      }
      unsigned width = elt.getIntOrFloatBitWidth();
      bool isUnsigned = elt.isUnsignedInteger();
      int64_t lo = isUnsigned ? 0 : -(int64_t(1) << (width - 1));
      int64_t hi = isUnsigned ? (int64_t(1) << width) - 1
                              : (int64_t(1) << (width - 1)) - 1;
      if (width < 64 && (lit.intValue > hi || lit.intValue < lo)) {
        if (!(width == 1 && (lit.intValue == 0 || lit.intValue == 1))) {
          error(l) << "the number " << lit.intValue << " does not fit in "
                   << formatType(type);
          return nullptr;
        }
      }
      value = DenseElementsAttr::get(
          type, APInt(width, static_cast<uint64_t>(lit.intValue),
                      /*isSigned=*/width > 1, /*implicitTrunc=*/true));
    }
    return tg::ConstantOp::create(builder, loc(l), cast<ElementsAttr>(value));
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Value genExpr(const ExprAST &e);
  LogicalResult loadImports(const ModuleAST &module);
  Value genImportCall(const CallExprAST &call, const onnx_import::ONNXModel &m,
                      unsigned numResults, SmallVectorImpl<Value> *results);
  Value genMatmulFamily(const CallExprAST &call);
  Value genCall(const CallExprAST &call, unsigned numResults,
                SmallVectorImpl<Value> *results = nullptr);
  LogicalResult genKeyword(const CallExprAST &call, const tg::KeywordInfo &kw,
                           ArrayRef<Value> ops,
                           SmallVectorImpl<NamedAttribute> &attrs);
  Value genCustomCall(const CallExprAST &call, const tg::OpInfo &info,
                      ArrayRef<Value> ops, unsigned numResults,
                      SmallVectorImpl<Value> *results);

  /// The element type a bare number next to a tensor of element type
  /// `other` takes: `other`, except that a number with a fraction or an
  /// exponent next to an integer tensor is f32 (torch.result_type).
  Type literalType(const Literal &lit, Value other) {
    Type elt = cast<RankedTensorType>(other.getType()).getElementType();
    if (!lit.isInteger && !isa<FloatType>(elt))
      return builder.getF32Type();
    return elt;
  }

  /// `v` cast to f32 when its elements are integers (or bool), else `v`.
  Value toF32IfInteger(Value v, mlir::Location l) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.getElementType().isInteger())
      return v;
    return tg::CastOp::create(builder, l, t.clone(builder.getF32Type()), v);
  }

  /// Generates `lhs OP rhs` where either side may be a bare number, which
  /// then takes the dtype of the other side (literalType).
  Value genBinary(StringRef opName, const ExprAST &lhs, const ExprAST &rhs,
                  const frontend::Location &opLoc) {
    std::optional<Literal> l = asLiteral(lhs), r = asLiteral(rhs);
    Value a, b;
    if (l && r) {
      Type f32 = builder.getF32Type();
      a = genConstant(*l, f32, lhs.getLoc());
      b = genConstant(*r, f32, rhs.getLoc());
    } else if (l) {
      if (!(b = genExpr(rhs)))
        return nullptr;
      a = genConstant(*l, literalType(*l, b), lhs.getLoc());
    } else {
      if (!(a = genExpr(lhs)))
        return nullptr;
      b = r ? genConstant(*r, literalType(*r, a), rhs.getLoc())
            : genExpr(rhs);
    }
    if (!a || !b)
      return nullptr;
    // `/` of integers is a true division in f32 (PyTorch's default dtype).
    if (opName == tg::DivOp::getOperationName()) {
      auto ea = cast<RankedTensorType>(a.getType()).getElementType();
      auto eb = cast<RankedTensorType>(b.getType()).getElementType();
      if (ea.isInteger() && eb.isInteger()) {
        a = toF32IfInteger(a, loc(opLoc));
        b = toF32IfInteger(b, loc(opLoc));
      }
    }
    return build(opName, loc(opLoc), {a, b});
  }

  /// Operands of a call that must be tensors (not bare numbers).
  LogicalResult genOperands(const CallExprAST &call,
                            SmallVectorImpl<Value> &operands) {
    for (auto [i, arg] : llvm::enumerate(call.args)) {
      if (asLiteral(*arg)) {
        error(arg->getLoc()) << "operand " << i + 1 << " of '" << call.callee
                             << "' must be a tensor, found a bare number";
        return failure();
      }
      Value v = genExpr(*arg);
      if (!v)
        return failure();
      operands.push_back(v);
    }
    return success();
  }

  LogicalResult checkArity(const CallExprAST &call, size_t min, size_t max) {
    size_t n = call.args.size();
    if (n >= min && n <= max)
      return success();
    auto diag = error(call.getLoc()) << "'" << call.callee << "' expects ";
    if (min == max)
      diag << min << " operand" << (min == 1 ? "" : "s");
    else if (max == SIZE_MAX)
      diag << "at least " << min << " operand" << (min == 1 ? "" : "s");
    else
      diag << min << " to " << max << " operands";
    diag << ", got " << n;
    return failure();
  }

  LogicalResult checkKeywords(const CallExprAST &call,
                              ArrayRef<StringRef> allowed) {
    for (const KeywordArg &kw : call.kwargs) {
      if (llvm::is_contained(allowed, kw.name))
        continue;
      auto diag = error(kw.loc) << "unknown attribute '" << kw.name << "' for '"
                                << call.callee << "'";
      if (allowed.empty())
        diag << " (it takes none)";
      else {
        diag << " (expected ";
        llvm::interleave(allowed, diag, ", ");
        diag << ")";
      }
      return failure();
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Keyword attributes
  //===--------------------------------------------------------------------===//

  static const char *kindName(const AttrAST &a) {
    switch (a.kind) {
    case AttrAST::Kind::Number:
      return a.number.isInteger ? "an integer" : "a float";
    case AttrAST::Kind::String:
      return "a string";
    case AttrAST::Kind::Bool:
      return "a bool";
    case AttrAST::Kind::DType:
      return "a dtype";
    case AttrAST::Kind::List:
      return "a list";
    }
    return "a value";
  }

  LogicalResult attrError(const CallExprAST &call, const KeywordArg &kw,
                          StringRef expected) {
    error(kw.value.loc) << "attribute '" << kw.name << "' of '" << call.callee
                        << "' must be " << expected << ", found "
                        << kindName(kw.value);
    return failure();
  }

  FailureOr<int64_t> getInt(const CallExprAST &call, StringRef name,
                            std::optional<int64_t> dflt) {
    const KeywordArg *kw = call.findKeyword(name);
    if (!kw) {
      if (dflt)
        return *dflt;
      error(call.getLoc()) << "'" << call.callee << "' needs attribute '"
                           << name << "'";
      return failure();
    }
    if (kw->value.kind != AttrAST::Kind::Number || !kw->value.number.isInteger)
      return attrError(call, *kw, "an integer");
    return kw->value.number.intValue;
  }

  FailureOr<double> getFloat(const CallExprAST &call, StringRef name,
                             std::optional<double> dflt) {
    const KeywordArg *kw = call.findKeyword(name);
    if (!kw) {
      if (dflt)
        return *dflt;
      error(call.getLoc()) << "'" << call.callee << "' needs attribute '"
                           << name << "'";
      return failure();
    }
    if (kw->value.kind != AttrAST::Kind::Number)
      return attrError(call, *kw, "a number");
    return kw->value.number.value;
  }

  FailureOr<bool> getBool(const CallExprAST &call, StringRef name, bool dflt) {
    const KeywordArg *kw = call.findKeyword(name);
    if (!kw)
      return dflt;
    if (kw->value.kind != AttrAST::Kind::Bool)
      return attrError(call, *kw, "true or false");
    return kw->value.boolean;
  }

  /// An integer list; a single integer is accepted as a one-element list.
  /// Returns std::nullopt (no failure) when the attribute is absent.
  FailureOr<std::optional<SmallVector<int64_t>>>
  getIntList(const CallExprAST &call, StringRef name) {
    const KeywordArg *kw = call.findKeyword(name);
    if (!kw)
      return std::optional<SmallVector<int64_t>>();
    SmallVector<int64_t> values;
    const AttrAST &a = kw->value;
    if (a.kind == AttrAST::Kind::Number && a.number.isInteger)
      return std::optional<SmallVector<int64_t>>(
          SmallVector<int64_t>{a.number.intValue});
    if (a.kind != AttrAST::Kind::List)
      return attrError(call, *kw, "a list of integers");
    for (const AttrAST &e : a.list) {
      if (e.kind != AttrAST::Kind::Number || !e.number.isInteger) {
        error(e.loc) << "attribute '" << name << "' of '" << call.callee
                     << "' must be a list of integers, found " << kindName(e)
                     << " in it";
        return failure();
      }
      values.push_back(e.number.intValue);
    }
    return std::optional<SmallVector<int64_t>>(values);
  }

  /// `k` or `[kh, kw]` for the two spatial dims (`count` dims: one
  /// integer for all of them or a list of `count`).
  FailureOr<SmallVector<int64_t>> getPair(const CallExprAST &call,
                                          StringRef name,
                                          std::optional<int64_t> dflt,
                                          size_t count = 2) {
    auto list = getIntList(call, name);
    if (failed(list))
      return failure();
    if (!*list) {
      if (dflt)
        return SmallVector<int64_t>(count, *dflt);
      error(call.getLoc()) << "'" << call.callee << "' needs attribute '"
                           << name << "'";
      return failure();
    }
    SmallVector<int64_t> v = **list;
    if (v.size() == 1)
      v.assign(count, v[0]);
    if (v.size() != count) {
      error(call.findKeyword(name)->value.loc)
          << "attribute '" << name << "' of '" << call.callee
          << "' must be one integer or a list of " << count << ", found "
          << v.size() << " values";
      return failure();
    }
    return v;
  }

  /// Resolves a possibly negative dim against `type`'s rank.
  FailureOr<int64_t> normalizeDim(int64_t dim, RankedTensorType type,
                                  const frontend::Location &l,
                                  StringRef what = "dim") {
    int64_t rank = type.getRank();
    int64_t limit = std::max<int64_t>(rank, 1);
    if (dim < -limit || dim >= limit) {
      error(l) << what << " " << dim << " is out of range for "
               << formatType(type) << " (rank " << rank << ")";
      return failure();
    }
    return dim < 0 ? dim + limit : dim;
  }

  const frontend::Location &kwLoc(const CallExprAST &call, StringRef name) {
    const KeywordArg *kw = call.findKeyword(name);
    return kw ? kw->value.loc : call.getLoc();
  }

  /// The location of element `index` of list attribute `name` (or of the
  /// attribute itself when it is a single value).
  const frontend::Location &kwElementLoc(const CallExprAST &call,
                                         StringRef name, size_t index) {
    const KeywordArg *kw = call.findKeyword(name);
    if (kw && kw->value.kind == AttrAST::Kind::List &&
        index < kw->value.list.size())
      return kw->value.list[index].loc;
    return kwLoc(call, name);
  }

  //===--------------------------------------------------------------------===//
  // Statements and graphs
  //===--------------------------------------------------------------------===//

  LogicalResult define(StringRef name, const frontend::Location &l, Value v) {
    auto it = definedAt.find(name);
    if (it != definedAt.end()) {
      error(l) << "redefinition of '" << name << "'";
      emitRemark(loc(it->second)) << "'" << name << "' was defined here";
      return failure();
    }
    definedAt[name] = l;
    symbols[name] = v;
    return success();
  }

  LogicalResult genGraph(const GraphAST &graph);
  LogicalResult genAssign(const AssignStmtAST &stmt);
  /// An `autocast(MODE) { ... }` block: its statements, each op they make
  /// carrying `tg.region = "MODE"` (an inner block's ops carry its own).
  LogicalResult genRegion(const RegionStmtAST &stmt);
  FailureOr<Operation *> genMinimize(const MinimizeStmtAST &stmt);
  /// The optimizer call's learning-rate schedule keys.
  static constexpr StringRef kScheduleKeys[] = {
      "schedule", "warmup_steps", "total_steps", "min_lr", "step_size",
      "gamma"};
  FailureOr<DictionaryAttr> genSchedule(const CallExprAST &opt, double lr);
  /// The `param_groups` attribute of `tg.minimize` (null without groups).
  FailureOr<ArrayAttr> genParamGroups(const MinimizeStmtAST &stmt, Value loss,
                                      ArrayRef<NamedAttribute> callHyper,
                                      bool isSgd);
};

} // namespace ampc::frontend::detail

#endif // AMPC_LIB_FRONTEND_MLIRGENIMPL_H
