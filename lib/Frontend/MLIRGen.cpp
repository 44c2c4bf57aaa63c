//===- MLIRGen.cpp - .tg AST to tg dialect IR -----------------------------===//
//
// Walks the AST once, in program order, with one symbol table per graph.
// Every op is created through `buildOp`, which lets the op infer its result
// type and verifies it on the spot, so a shape error is reported at the
// token that caused it and the lowering stops there.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/MLIRGen.h"
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
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace ampc;
using namespace ampc::frontend;
using llvm::dyn_cast;
using llvm::isa;

namespace {

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

} // namespace

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
