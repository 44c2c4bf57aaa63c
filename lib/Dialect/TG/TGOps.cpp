//===- TGOps.cpp - the core tensor-graph ops ------------------------------===//
//
// Result type inference (which doubles as shape verification), verifiers and
// folders of the ops of TGOps.td, and the helpers every family's file shares
// (type promotion, broadcasting, the fused-store types). Every message names
// the op, the shapes involved and the offending dim, because users read them
// as `.tg` compile errors.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::string ampc::tg::elementTypeName(Type type) {
  if (type.isInteger(1))
    return "bool";
  if (type.isUnsignedInteger(8))
    return "u8";
  return typeToString(type);
}

std::string ampc::tg::typeToString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// The rank of an integer type in torch.result_type's order (bool lowest);
/// u8 sorts with i8 and is handled apart.
static unsigned integerWidth(Type t) { return t.getIntOrFloatBitWidth(); }

Type ampc::tg::promoteElementTypes(Type a, Type b) {
  if (a == b)
    return a;
  MLIRContext *ctx = a.getContext();
  bool fa = isAnyFloatElement(a), fb = isAnyFloatElement(b);
  if (fa && fb) {
    // f64 with any float is f64; f32 is the widest of the others; f16 and
    // bf16 are incomparable and meet at f32.
    if (a.isF64() || b.isF64())
      return Float64Type::get(ctx);
    return Float32Type::get(ctx);
  }
  // An integer (or bool) with a float: the float.
  if (fa && b.isInteger())
    return a;
  if (fb && a.isInteger())
    return b;
  if (!a.isInteger() || !b.isInteger())
    return {};
  // bool with an integer: the integer.
  if (a.isInteger(1))
    return b;
  if (b.isInteger(1))
    return a;
  // u8 with a signed type: the smallest signed type holding both (u8 with
  // i8 gives i16); signed with signed: the wider.
  bool ua = a.isUnsignedInteger(), ub = b.isUnsignedInteger();
  unsigned wa = integerWidth(a), wb = integerWidth(b);
  if (ua)
    wa = 16;
  if (ub)
    wb = 16;
  return IntegerType::get(ctx, std::max(wa, wb));
}

std::optional<SmallVector<int64_t>>
ampc::tg::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                          int64_t *badDim) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      if (badDim)
        *badDim = static_cast<int64_t>(i);
      return std::nullopt;
    }
    result[i] = da == 1 ? db : da;
  }
  return result;
}

bool ampc::tg::isExactConversion(Type from, Type to) {
  if (from == to)
    return true;
  // Every value of `from` is a value of `to`.
  auto intRange = [](Type t, int64_t &lo, int64_t &hi) {
    unsigned w = t.getIntOrFloatBitWidth();
    if (t.isInteger(1) || t.isUnsignedInteger()) {
      lo = 0;
      hi = w == 1 ? 1 : (int64_t(1) << w) - 1;
    } else {
      lo = w == 64 ? INT64_MIN : -(int64_t(1) << (w - 1));
      hi = w == 64 ? INT64_MAX : (int64_t(1) << (w - 1)) - 1;
    }
  };
  // The integers a float type holds exactly: |v| <= 2^(mantissa + 1).
  auto floatExactBits = [](Type t) -> unsigned {
    if (t.isF64())
      return 53;
    if (t.isF32())
      return 24;
    if (t.isF16())
      return 11;
    return 8; // bf16
  };
  if (from.isInteger() && to.isInteger()) {
    int64_t fl, fh, tl, th;
    intRange(from, fl, fh);
    intRange(to, tl, th);
    return tl <= fl && fh <= th;
  }
  if (from.isInteger() && isAnyFloatElement(to)) {
    int64_t lo, hi;
    intRange(from, lo, hi);
    unsigned bits = floatExactBits(to);
    return bits >= 63 || (hi <= (int64_t(1) << bits) &&
                          lo >= -(int64_t(1) << bits));
  }
  if (to.isF64())
    return isAnyFloatElement(from);
  if (to.isF32())
    return from.isF16() || from.isBF16();
  return false;
}

bool ampc::tg::areCompatibleResultTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip_equal(inferred, actual)) {
    if (a == b)
      continue;
    auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb || ta.getShape() != tb.getShape() ||
        !isAnyFloatElement(ta.getElementType()) ||
        !isAnyFloatElement(tb.getElementType()))
      return false;
  }
  return true;
}

ParseResult ampc::tg::parseStoreType(OpAsmParser &parser, Type &operand,
                                     Type &result) {
  // Tensors only, as the declarative `type($input)` it replaces required.
  RankedTensorType operandType, resultType;
  if (parser.parseType(operandType))
    return failure();
  operand = result = operandType;
  if (failed(parser.parseOptionalArrow()))
    return success();
  if (parser.parseType(resultType))
    return failure();
  result = resultType;
  return success();
}

void ampc::tg::printStoreType(OpAsmPrinter &printer, Operation *,
                              Type operand, Type result) {
  printer << operand;
  if (operand != result)
    printer << " -> " << result;
}

Type ampc::tg::getComputeType(Operation *op) {
  if (auto attr = op->getAttrOfType<TypeAttr>(TGDialect::kComputeAttrName))
    return attr.getValue();
  if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (succeeded(infer.inferReturnTypes(
            op->getContext(), std::nullopt, op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)) &&
        !types.empty() &&
        (isAnyFloatElement(getElementTypeOrSelf(types.front())) ||
         !llvm::any_of(op->getOperandTypes(), [&](Type t) {
           return isAnyFloatElement(getElementTypeOrSelf(t));
         })))
      return getElementTypeOrSelf(types.front());
  }
  // A float computation with a result that is not a float (a comparison's
  // bool) computes at its float operands' promoted type.
  Type widest;
  for (Value v : op->getOperands()) {
    Type e = getElementTypeOrSelf(v.getType());
    if (!isAnyFloatElement(e))
      continue;
    widest = widest ? promoteElementTypes(widest, e) : e;
  }
  if (widest)
    return widest;
  if (op->getNumResults() > 0)
    return getElementTypeOrSelf(op->getResult(0).getType());
  return {};
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  ElementsAttr value = adaptor.getValueAttr();
  if (!value)
    return emitOptionalError(loc, "'tg.constant' requires a 'value'");
  types.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs.front());
  auto out = dyn_cast<RankedTensorType>(outputs.front());
  return in && out && in.getShape() == out.getShape();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x : A -> B) : B -> C): drop the inner cast only when it is
  // exact, so no rounding step disappears. A == C gives x itself.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value x = inner.getInput();
    Type a = cast<RankedTensorType>(x.getType()).getElementType();
    Type b = inner.getType().getElementType();
    if (!isExactConversion(a, b))
      return {};
    if (x.getType() == getType())
      return x;
    // A -> C directly rounds once, exactly as A -> B -> C did (B is exact).
    getInputMutable().assign(x);
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  InferError err{loc, "matmul"};
  auto a = tensorType(adaptor.getLhs()), b = tensorType(adaptor.getRhs());
  if (!a || !b)
    return err("operands must be ranked tensors");
  if (a.getRank() == 0 || b.getRank() == 0)
    return err("operands must have rank >= 1, got ", a, " and ", b);
  FailureOr<Type> elt = promoteAll(err, {adaptor.getLhs(), adaptor.getRhs()});
  if (failed(elt))
    return failure();

  // torch.matmul: a 1-D lhs is a row vector, a 1-D rhs a column vector; the
  // added dim does not appear in the result.
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool lhsVec = as.size() == 1, rhsVec = bs.size() == 1;
  if (lhsVec)
    as.insert(as.begin(), 1);
  if (rhsVec)
    bs.push_back(1);
  int64_t k = as.back(), k2 = bs[bs.size() - 2];
  if (k != k2)
    return err("contraction dims differ: lhs ", a, " has ", k, " in dim ",
               a.getRank() - 1, ", rhs ", b, " has ", k2, " in dim ",
               rhsVec ? 0 : b.getRank() - 2);
  ArrayRef<int64_t> aBatch = ArrayRef<int64_t>(as).drop_back(2);
  ArrayRef<int64_t> bBatch = ArrayRef<int64_t>(bs).drop_back(2);
  int64_t badDim = 0;
  auto batch = broadcastShapes(aBatch, bBatch, &badDim);
  if (!batch)
    return err("batch dims ", shapeToString(aBatch), " of ", a, " and ",
               shapeToString(bBatch), " of ", b,
               " do not broadcast (batch dim ", badDim, ")");
  SmallVector<int64_t> shape = *batch;
  if (!lhsVec)
    shape.push_back(as[as.size() - 2]);
  if (!rhsVec)
    shape.push_back(bs.back());
  types.push_back(RankedTensorType::get(shape, *elt));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  InferError err{loc, "linear"};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  auto b = tensorType(adaptor.getBias());
  if (!x || !w)
    return err("operands must be ranked tensors");
  if (x.getRank() < 1)
    return err("input must have rank >= 1, got ", x);
  if (w.getRank() != 2)
    return err("weight must be 2-D [out, in], got ", w);
  if (x.getShape().back() != w.getDimSize(1))
    return err("input ", x, " has ", x.getShape().back(),
               " features (last dim) but weight ", w, " expects ",
               w.getDimSize(1), " (dim 1)");
  if (b && (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0)))
    return err("bias ", b, " must be [", w.getDimSize(0),
               "] to match weight ", w);
  SmallVector<Value> vals{adaptor.getInput(), adaptor.getWeight()};
  if (b)
    vals.push_back(adaptor.getBias());
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = w.getDimSize(0);
  return pushPromoted(err, vals, {shape}, types);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ampc::tg::detail::inferBinary(StringRef name,
                                            std::optional<Location> loc,
                                            Value lhs, Value rhs,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b)
    return err("operands must be ranked tensors");
  Type elt = promoteElementTypes(a.getElementType(), b.getElementType());
  if (!elt)
    return err("cannot combine element types of ", a, " and ", b);
  auto shape = broadcastPair(err, a, b);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, elt));
  return success();
}

// The elementwise ops' inference is generated with them (TG_BinaryOp and
// TG_UnaryOp in TGOps.td).

/// True when `op` converts nothing: no `tg.compute` and its result has the
/// element type of its first operand. Folders that forward a value through
/// an op are only exact for such ops (a fused store rounds or widens).
static bool keepsElementType(Operation *op) {
  if (op->hasAttr(TGDialect::kComputeAttrName))
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return in && out && in.getElementType() == out.getElementType();
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  auto inner = getInput().getDefiningOp<NegOp>();
  if (inner && keepsElementType(*this) && keepsElementType(inner))
    return inner.getInput();
  return {};
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(checkGeluApproximate(InferError{loc, "gelu"},
                                  adaptor.getApproximateAttr())))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

/// F.prelu's weight check: `[1]`, or `[C]` with C = dim 1 of the input.
static LogicalResult checkPreluWeight(const InferError &err,
                                      RankedTensorType x, RankedTensorType w) {
  if (w.getRank() != 1)
    return err("weight must be 1-D ([1] or [C]), got ", w);
  int64_t n = w.getDimSize(0);
  if (n == 1)
    return success();
  if (x.getRank() < 2)
    return err("weight ", w, " has ", n,
               " slopes but input ", x, " has no channel dim (dim 1)");
  if (x.getDimSize(1) != n)
    return err("weight ", w, " has ", n, " slopes but input ", x, " has ",
               x.getDimSize(1), " channels (dim 1)");
  return success();
}

LogicalResult PreluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  InferError err{loc, "prelu"};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  if (!x || !w)
    return err("operands must be ranked tensors");
  if (failed(checkPreluWeight(err, x, w)))
    return failure();
  return pushPromoted(err, {adaptor.getInput(), adaptor.getWeight()},
                      {x.getShape()}, types);
}

LogicalResult PreluGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "prelu_grad"};
  auto g = tensorType(adaptor.getGrad()), x = tensorType(adaptor.getInput()),
       w = tensorType(adaptor.getWeight());
  if (!g || !x || !w)
    return err("operands must be ranked tensors");
  if (failed(checkPreluWeight(err, x, w)))
    return failure();
  if (g.getShape() != x.getShape())
    return err("grad ", g, " must have the input's shape ", x);
  return pushPromoted(
      err, {adaptor.getGrad(), adaptor.getInput(), adaptor.getWeight()},
      {x.getShape(), w.getShape()}, types);
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

LogicalResult ampc::tg::detail::inferAlongDim(StringRef name,
                                              std::optional<Location> loc,
                                              Value input, IntegerAttr dimAttr,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x)
    return err("operand must be a ranked tensor");
  if (failed(checkDim(err, x, dimAttr)))
    return failure();
  types.push_back(x);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferAlongDim("softmax", loc, adaptor.getInput(), adaptor.getDimAttr(),
                       types);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferAlongDim("log_softmax", loc, adaptor.getInput(),
                       adaptor.getDimAttr(), types);
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  InferError err{loc, "reshape"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  DenseI64ArrayAttr shapeAttr = adaptor.getShapeAttr();
  if (!shapeAttr)
    return err("requires attribute 'shape'");
  SmallVector<int64_t> shape(shapeAttr.asArrayRef());
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == -1) {
      if (inferred >= 0)
        return err("shape ", shapeToString(shape),
                   " has more than one -1 (dims ", inferred, " and ", i, ")");
      inferred = i;
      continue;
    }
    if (d < 1)
      return err("shape ", shapeToString(shape), " has invalid size ", d,
                 " in dim ", i);
    if (known > (int64_t(1) << 62) / d)
      return err("shape ", shapeToString(shape), " is too large");
    known *= d;
  }
  int64_t count = x.getNumElements();
  if (inferred >= 0) {
    if (count % known != 0)
      return err("cannot reshape ", x, " (", count, " elements) to ",
                 shapeToString(shape));
    shape[inferred] = count / known;
  } else if (known != count) {
    return err("cannot reshape ", x, " (", count, " elements) to ",
               shapeToString(shape), " (", known, " elements)");
  }
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) is one reshape: only the element order matters (and
  // the inner one must not round or widen on store).
  auto inner = getInput().getDefiningOp<ReshapeOp>();
  if (inner && keepsElementType(inner)) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (dense && keepsElementType(*this))
    return dense.reshape(getType());
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "transpose"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  DenseI64ArrayAttr permAttr = adaptor.getPermAttr();
  if (!permAttr)
    return err("requires attribute 'perm'");
  ArrayRef<int64_t> perm = permAttr.asArrayRef();
  if (static_cast<int64_t>(perm.size()) != x.getRank())
    return err("perm ", shapeToString(perm), " has ", perm.size(),
               " entries but input ", x, " has rank ", x.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return err("perm ", shapeToString(perm),
                 " is not a permutation of the dims of ", x);
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (static_cast<int64_t>(i) != p)
      return {};
  if (getInput().getType() != getType())
    return {};
  return getInput();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  InferError err{loc, "concat"};
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return err("needs at least one input");
  IntegerAttr dimAttr = adaptor.getDimAttr();
  if (!dimAttr)
    return err("requires attribute 'dim'");
  auto first = tensorType(inputs.front());
  if (!first)
    return err("operands must be ranked tensors");
  int64_t rank = first.getRank(), dim = dimAttr.getInt();
  if (rank == 0)
    return err("cannot concatenate scalars (", first, ")");
  if (dim < 0 || dim >= rank)
    return err("dim ", dim, " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto t = tensorType(v);
    if (!t || t.getRank() != rank)
      return err("input #", i + 1, " ", v.getType(), " has a different rank than ",
                 first);
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && t.getDimSize(d) != first.getDimSize(d))
        return err("input #", i + 1, " ", t, " differs from ", first,
                   " in dim ", d, " (only dim ", dim, " may differ)");
    shape[dim] += t.getDimSize(dim);
  }
  return pushPromoted(err, inputs, {shape}, types);
}

LogicalResult FlipOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  InferError err{loc, "flip"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  DenseI64ArrayAttr dimsAttr = adaptor.getDimsAttr();
  if (!dimsAttr)
    return err("requires attribute 'dims'");
  ArrayRef<int64_t> dims = dimsAttr.asArrayRef();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= x.getRank())
      return err("dim ", d, " is out of range for ", x, " (rank ", x.getRank(),
                 ")");
    if (i > 0 && d <= dims[i - 1])
      return err("dims ", shapeToString(dims), " must be sorted and distinct");
  }
  types.push_back(x);
  return success();
}

LogicalResult RollOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  InferError err{loc, "roll"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  DenseI64ArrayAttr shiftsAttr = adaptor.getShiftsAttr();
  DenseI64ArrayAttr dimsAttr = adaptor.getDimsAttr();
  if (!shiftsAttr || !dimsAttr)
    return err("requires attributes 'shifts' and 'dims'");
  ArrayRef<int64_t> shifts = shiftsAttr.asArrayRef();
  ArrayRef<int64_t> dims = dimsAttr.asArrayRef();
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size())
    return err("shifts ", shapeToString(shifts), " and dims ",
               shapeToString(dims),
               " must pair one shift with each dim (one shift without dims)");
  for (int64_t d : dims)
    if (d < -x.getRank() || d >= x.getRank())
      return err("dim ", d, " is out of range for ", x, " (rank ", x.getRank(),
                 ")");
  types.push_back(x);
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  InferError err{loc, "slice"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  if (!adaptor.getDimAttr() || !adaptor.getStartAttr() || !adaptor.getEndAttr())
    return err("requires attributes 'dim', 'start' and 'end'");
  int64_t dim = adaptor.getDimAttr().getInt();
  int64_t start = adaptor.getStartAttr().getInt();
  int64_t end = adaptor.getEndAttr().getInt();
  if (dim < 0 || dim >= x.getRank())
    return err("dim ", dim, " is out of range for ", x, " (rank ", x.getRank(),
               ")");
  int64_t size = x.getDimSize(dim);
  if (start < 0 || end > size || start >= end)
    return err("range [", start, ", ", end, ") is empty or outside [0, ", size,
               ") in dim ", dim, " of ", x);
  SmallVector<int64_t> shape(x.getShape());
  shape[dim] = end - start;
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "embedding"};
  auto table = tensorType(adaptor.getTable()), ids = tensorType(adaptor.getIds());
  if (!table || !ids)
    return err("operands must be ranked tensors");
  if (table.getRank() != 2)
    return err("table must be 2-D [V, D], got ", table);
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

static LogicalResult checkScalarLoss(const InferError &err, Value loss) {
  auto t = tensorType(loss);
  if (!t || t.getRank() != 0 || !isAnyFloatElement(t.getElementType()))
    return err("loss must be a float scalar, got ", loss.getType());
  return success();
}

LogicalResult GradOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  InferError err{loc, "grad"};
  if (failed(checkScalarLoss(err, adaptor.getLoss())))
    return failure();
  if (adaptor.getWrt().empty())
    return err("needs at least one value to differentiate with respect to");
  for (Value v : adaptor.getWrt())
    types.push_back(v.getType());
  return success();
}

LogicalResult GradSeedOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  InferError err{loc, "grad_seed"};
  if (failed(checkScalarLoss(err, adaptor.getLoss())))
    return failure();
  if (Value scale = adaptor.getScale()) {
    auto t = tensorType(scale);
    if (!t || t.getRank() != 0)
      return err("scale must be a float scalar, got ", scale.getType());
  }
  types.push_back(adaptor.getLoss().getType());
  return success();
}

LogicalResult MinimizeOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  InferError err{loc, "minimize"};
  if (failed(checkScalarLoss(err, adaptor.getLoss())))
    return failure();
  if (adaptor.getParams().empty())
    return err("needs at least one parameter to update");
  for (Value v : adaptor.getParams())
    types.push_back(v.getType());
  return success();
}

/// Checks one hyperparameter dictionary of `tg.minimize`: the call's
/// (`global` true: `max_grad_norm` allowed) or a parameter group's.
static LogicalResult verifyHyperparams(Operation *op, StringRef opt,
                                       DictionaryAttr hyper, bool global,
                                       StringRef what) {
  struct Key {
    StringRef name;
    bool isBool;
    bool required;
  };
  SmallVector<Key> keys;
  if (opt == "sgd")
    keys = {{"lr", false, true},
            {"momentum", false, true},
            {"weight_decay", false, true},
            {"nesterov", true, true}};
  else
    keys = {{"lr", false, true},          {"beta1", false, true},
            {"beta2", false, true},       {"eps", false, true},
            {"weight_decay", false, true}};
  if (global)
    keys.push_back({"max_grad_norm", false, false});

  for (NamedAttribute attr : hyper) {
    const Key *key = llvm::find_if(
        keys, [&](const Key &k) { return k.name == attr.getName(); });
    if (key == keys.end())
      return op->emitOpError("unknown ")
             << opt << " hyperparameter '" << attr.getName().getValue()
             << "'" << what;
    if (key->isBool ? !isa<BoolAttr>(attr.getValue())
                    : !isa<FloatAttr>(attr.getValue()))
      return op->emitOpError(opt)
             << " hyperparameter '" << attr.getName().getValue() << "'"
             << what << " must be a " << (key->isBool ? "bool" : "float")
             << ", got " << attr.getValue();
  }
  for (const Key &k : keys)
    if (k.required && !hyper.get(k.name))
      return op->emitOpError(opt)
             << " needs hyperparameter '" << k.name << "'" << what;

  auto value = [&](StringRef name) {
    auto f = dyn_cast_or_null<FloatAttr>(hyper.get(name));
    return f ? f.getValueAsDouble() : 0.0;
  };
  if (!(value("lr") >= 0.0))
    return op->emitOpError("lr must be >= 0, got ") << value("lr") << what;
  if (!(value("weight_decay") >= 0.0))
    return op->emitOpError("weight_decay must be >= 0, got ")
           << value("weight_decay") << what;
  if (hyper.get("max_grad_norm") && !(value("max_grad_norm") > 0.0))
    return op->emitOpError("max_grad_norm must be > 0, got ")
           << value("max_grad_norm");
  if (opt == "sgd") {
    if (!(value("momentum") >= 0.0))
      return op->emitOpError("momentum must be >= 0, got ")
             << value("momentum") << what;
    if (cast<BoolAttr>(hyper.get("nesterov")).getValue() &&
        value("momentum") <= 0.0)
      return op->emitOpError("nesterov needs momentum > 0") << what;
  } else {
    for (StringRef beta : {"beta1", "beta2"})
      if (!(value(beta) >= 0.0 && value(beta) < 1.0))
        return op->emitOpError(beta)
               << " must be in [0, 1), got " << value(beta) << what;
    if (!(value("eps") >= 0.0))
      return op->emitOpError("eps must be >= 0, got ") << value("eps") << what;
  }
  return success();
}

LogicalResult MinimizeOp::verify() {
  StringRef opt = getOptimizer();
  if (opt != "sgd" && opt != "adamw")
    return emitOpError("unknown optimizer \"")
           << opt << "\"; expected \"sgd\" or \"adamw\"";
  if (failed(verifyHyperparams(*this, opt, getHyperparams(), /*global=*/true,
                               "")))
    return failure();
  if (std::optional<DictionaryAttr> schedule = getSchedule()) {
    auto str = dyn_cast_or_null<StringAttr>(schedule->get("kind"));
    auto integer = [&](StringRef key) {
      return dyn_cast_or_null<IntegerAttr>(schedule->get(key));
    };
    auto real = [&](StringRef key) {
      return dyn_cast_or_null<FloatAttr>(schedule->get(key));
    };
    if (!str || !integer("warmup_steps") || !integer("total_steps") ||
        !integer("step_size") || !real("min_lr") || !real("gamma") ||
        schedule->size() != 6)
      return emitOpError("schedule must be {kind = \"...\", warmup_steps, "
                         "total_steps, step_size (integers), min_lr, gamma "
                         "(floats)}");
    auto lr = cast<FloatAttr>(getHyperparams().get("lr"));
    if (failed(detail::verifyLrSchedule(
            *this, str.getValue(), lr.getValueAsDouble(),
            integer("warmup_steps").getInt(), integer("total_steps").getInt(),
            real("min_lr").getValueAsDouble(), integer("step_size").getInt(),
            real("gamma").getValueAsDouble())))
      return failure();
  }

  // Parameter groups: each {params = array<i64: operand indices>,
  // hyperparams = {...}}; a parameter belongs to at most one group.
  std::optional<ArrayAttr> groups = getParamGroups();
  if (!groups)
    return success();
  SmallVector<int> owner(getParams().size(), -1);
  for (auto [g, attr] : llvm::enumerate(*groups)) {
    std::string what = " (in parameter group #" + std::to_string(g) + ")";
    auto dict = dyn_cast<DictionaryAttr>(attr);
    auto members =
        dict ? dyn_cast_or_null<DenseI64ArrayAttr>(dict.get("params")) : nullptr;
    auto hyper =
        dict ? dyn_cast_or_null<DictionaryAttr>(dict.get("hyperparams"))
             : nullptr;
    if (!members || !hyper || dict.size() != 2)
      return emitOpError("parameter group #")
             << g
             << " must be {params = array<i64: ...>, hyperparams = {...}}";
    if (members.empty())
      return emitOpError("parameter group #") << g << " names no parameter";
    for (int64_t i : members.asArrayRef()) {
      if (i < 0 || i >= static_cast<int64_t>(owner.size()))
        return emitOpError("parameter group #")
               << g << " names operand " << i << ", but there are "
               << owner.size() << " parameters";
      if (owner[i] >= 0)
        return emitOpError("parameter #")
               << i << " is in parameter groups #" << owner[i] << " and #"
               << g;
      owner[i] = static_cast<int>(g);
    }
    if (failed(verifyHyperparams(*this, opt, hyper, /*global=*/false, what)))
      return failure();
  }
  return success();
}

#define GET_OP_CLASSES
#include "ampc/Dialect/TG/TGOps.cpp.inc"
