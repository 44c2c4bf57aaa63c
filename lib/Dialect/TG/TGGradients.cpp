//===- TGGradients.cpp - gradient rules of the tg ops ---------------------===//
//
// `GradientOpInterface::buildGradient` for every differentiable op: the
// vector-Jacobian product of the op, written with forward `tg` ops where they
// express it exactly and with backward ops (each in its family's .td file)
// where the rule needs a comparison, a scatter or the op's internals. Most
// rules are data in the op records (`gradients`, expanded by
// gen-op-tables.py into TGGradients.inc, included at the end); the ones here
// need C++.
//
// Conventions (TGInterfaces.td): the gradient of a value has the value's
// type. Rules compute in the natural (promoted) type of the ops they build
// and `fit` the result to each operand: sum over the dims the operand was
// broadcast along, reshape, and cast back to its element type (the gradient
// of `cast` is the cast back, as in PyTorch). Where PyTorch's autograd
// formula is a specific expression (`div`, `rsqrt`, `sigmoid`, ...), the rule
// uses the same expression so the numbers match.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

#include "ampc/Dialect/TG/TGInterfaces.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

using namespace mlir;
using namespace ampc::tg;
using ampc::tg::detail::GradBuilder;

#include "ampc/Dialect/TG/TGInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Locations
//===----------------------------------------------------------------------===//

Location ampc::tg::getTaggedLoc(Location loc, StringRef tag) {
  MLIRContext *ctx = loc.getContext();
  return FusedLoc::get(ctx, {loc}, StringAttr::get(ctx, tag));
}

StringRef ampc::tg::getLocTag(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (auto tag = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      return tag.getValue();
  return {};
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Checks the interface contract on the way in: one gradient slot per
/// operand, all null.
static void initGrads(Operation *op, SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
}

//===----------------------------------------------------------------------===//
// Casts and linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  GradBuilder gb(builder, *this);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value a = getLhs(), b = getRhs();
  RankedTensorType at = gb.type(a), bt = gb.type(b);
  // torch.matmul's 1-D promotion, made explicit: a [k] is [1, k], b [k] is
  // [k, 1], and dy gets the dim the result dropped.
  SmallVector<int64_t> a2Shape(at.getShape()), b2Shape(bt.getShape());
  if (at.getRank() == 1)
    a2Shape.insert(a2Shape.begin(), 1);
  if (bt.getRank() == 1)
    b2Shape.push_back(1);
  SmallVector<int64_t> yShape(gb.type(dy).getShape());
  if (at.getRank() == 1)
    yShape.insert(yShape.end() - (bt.getRank() == 1 ? 0 : 1), 1);
  if (bt.getRank() == 1)
    yShape.push_back(1);
  Value dy2 = gb.reshape(dy, yShape);
  int64_t k = a2Shape.back(), n = b2Shape.back();

  if (wanted[0]) {
    // da = dy @ b^T, summed over the batch dims a was broadcast along.
    Value bT = gb.transposeLast2(gb.reshape(b, b2Shape));
    Value da = MatmulOp::create(builder, gb.loc, dy2, bT);
    operandGrads[0] =
        gb.fit(gb.reshape(gb.sumTo(da, a2Shape), at.getShape()), a);
  }
  if (wanted[1]) {
    Value a2 = gb.reshape(a, a2Shape);
    Value db;
    if (b2Shape.size() == 2 && a2Shape.size() > 2) {
      // A shared 2-D rhs (the common "activations @ weight"): fold a's batch
      // into its rows, one GEMM instead of a batched one and a sum.
      Value aFlat = gb.reshape(a2, {at.getNumElements() / k, k});
      Value dyFlat = gb.reshape(dy2, {gb.type(dy2).getNumElements() / n, n});
      db = MatmulOp::create(builder, gb.loc, gb.transposeLast2(aFlat), dyFlat);
    } else {
      db = MatmulOp::create(builder, gb.loc, gb.transposeLast2(a2), dy2);
      db = gb.sumTo(db, b2Shape);
    }
    operandGrads[1] = gb.fit(gb.reshape(db, bt.getShape()), b);
  }
  return success();
}

LogicalResult LinearOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  GradBuilder gb(builder, *this);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value x = getInput(), w = getWeight();
  int64_t out = gb.type(w).getDimSize(0), in = gb.type(w).getDimSize(1);
  if (wanted[0]) // dx = dy @ w
    operandGrads[0] = gb.fit(MatmulOp::create(builder, gb.loc, dy, w), x);
  if (wanted[1]) {
    // dw = dy^T @ x over all leading dims folded into rows.
    int64_t rows = gb.type(dy).getNumElements() / out;
    Value dy2 = gb.reshape(dy, {rows, out});
    Value x2 = gb.reshape(x, {rows, in});
    operandGrads[1] = gb.fit(
        MatmulOp::create(builder, gb.loc, gb.transposeLast2(dy2), x2), w);
  }
  if (getBias() && wanted[2])
    operandGrads[2] = gb.fit(dy, getBias());
  return success();
}

LogicalResult Conv2dOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  GradBuilder gb(builder, *this);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  if (wanted[0] || wanted[1]) {
    auto grad = Conv2dGradOp::create(builder, gb.loc, dy, getInput(),
                                     getWeight(), getStrideAttr(),
                                     getPaddingAttr(), getDilationAttr(),
                                     getGroupsAttr());
    if (wanted[0])
      operandGrads[0] = gb.fit(grad.getInputGrad(), getInput());
    if (wanted[1])
      operandGrads[1] = gb.fit(grad.getWeightGrad(), getWeight());
  }
  if (getBias() && wanted[2]) {
    Value db = SumOp::create(builder, gb.loc, dy, ArrayRef<int64_t>{0, 2, 3},
                             /*keepdim=*/false);
    operandGrads[2] = gb.fit(db, getBias());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// dy of a reduction reshaped to the keepdim shape of `x`.
static Value keepdimGrad(GradBuilder &gb, Value dy, Value x,
                         ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(gb.type(x).getShape());
  for (int64_t d : dims)
    shape[d] = 1;
  return gb.reshape(dy, shape);
}

LogicalResult SumOp::buildGradient(OpBuilder &builder,
                                   ArrayRef<Value> resultGrads,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  if (!dy || !wanted[0])
    return success();
  GradBuilder gb(builder, *this);
  Value x = getInput();
  Value g = keepdimGrad(gb, dy, x, getDims());
  operandGrads[0] = gb.fit(gb.broadcastTo(g, gb.type(x).getShape()), x);
  return success();
}

LogicalResult MeanOp::buildGradient(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  if (!dy || !wanted[0])
    return success();
  GradBuilder gb(builder, *this);
  Value x = getInput();
  int64_t count = 1;
  for (int64_t d : getDims())
    count *= gb.type(x).getDimSize(d);
  // PyTorch divides the expanded gradient by the count; dividing before the
  // broadcast gives the same values with fewer elements.
  Value g = keepdimGrad(gb, dy, x, getDims());
  if (count != 1)
    g = DivOp::create(builder, gb.loc, g, gb.scalar(double(count), g));
  operandGrads[0] = gb.fit(gb.broadcastTo(g, gb.type(x).getShape()), x);
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// The gradient of an op that only moves its input's elements (transpose,
/// roll): `back` moves dy's elements back to where they came from.
static LogicalResult
movedGradient(Operation *op, OpBuilder &builder, ArrayRef<Value> resultGrads,
              ArrayRef<bool> wanted, SmallVectorImpl<Value> &operandGrads,
              llvm::function_ref<Value(GradBuilder &, Value)> back) {
  initGrads(op, operandGrads);
  Value dy = resultGrads[0];
  Value input = op->getOperand(0);
  if (!dy || !wanted[0] || !GradBuilder::isFloatValue(input))
    return success();
  GradBuilder gb(builder, op);
  operandGrads[0] = gb.fit(back(gb, dy), input);
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &builder,
                                         ArrayRef<Value> resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return movedGradient(*this, builder, resultGrads, wanted, operandGrads,
                       [&](GradBuilder &gb, Value dy) {
                         return gb.transpose(dy, inverse);
                       });
}

LogicalResult RollOp::buildGradient(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGrads) {
  // Rolling back: the same dims, each shift negated. A shift counts modulo
  // its dim's size (the element count without dims), so it is negated
  // reduced, which cannot overflow.
  auto type = cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> dims = getDims();
  SmallVector<int64_t> back;
  for (auto [k, s] : llvm::enumerate(getShifts())) {
    int64_t size = dims.empty()
                       ? type.getNumElements()
                       : type.getDimSize(dims[k] < 0 ? dims[k] + type.getRank()
                                                     : dims[k]);
    back.push_back(size > 0 ? -(s % size) : 0);
  }
  return movedGradient(*this, builder, resultGrads, wanted, operandGrads,
                       [&](GradBuilder &gb, Value dy) -> Value {
                         return RollOp::create(gb.b, gb.loc, dy, back, dims);
                       });
}

LogicalResult ConcatOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder gb(builder, *this);
  int64_t dim = getDim(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = gb.type(input).getDimSize(dim);
    if (wanted[i] && GradBuilder::isFloatValue(input)) {
      Value part = dy;
      if (gb.type(dy).getDimSize(dim) != size)
        part = SliceOp::create(builder, gb.loc, dy, dim, offset,
                               offset + size);
      operandGrads[i] = gb.fit(part, input);
    }
    offset += size;
  }
  return success();
}

LogicalResult SliceOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  Value x = getInput();
  if (!dy || !wanted[0] || !GradBuilder::isFloatValue(x))
    return success();
  GradBuilder gb(builder, *this);
  // dx = concat(zeros before, dy, zeros after) along dim.
  int64_t dim = getDim(), start = getStart(), end = getEnd();
  int64_t size = gb.type(x).getDimSize(dim);
  Type elt = gb.type(dy).getElementType();
  SmallVector<Value> parts;
  SmallVector<int64_t> shape(gb.type(x).getShape());
  if (start > 0) {
    shape[dim] = start;
    parts.push_back(gb.splat(0.0, shape, elt));
  }
  parts.push_back(dy);
  if (end < size) {
    shape[dim] = size - end;
    parts.push_back(gb.splat(0.0, shape, elt));
  }
  Value dx = parts.size() == 1
                 ? dy
                 : ConcatOp::create(builder, gb.loc, parts, dim).getResult();
  operandGrads[0] = gb.fit(dx, x);
  return success();
}

LogicalResult EmbeddingOp::buildGradient(OpBuilder &builder,
                                         ArrayRef<Value> resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  Value dy = resultGrads[0];
  if (!dy || !wanted[0])
    return success();
  GradBuilder gb(builder, *this);
  int64_t rows = gb.type(getTable()).getDimSize(0);
  Value dt = EmbeddingGradOp::create(builder, gb.loc, dy, getIds(), rows);
  operandGrads[0] = gb.fit(dt, getTable());
  return success();
}

//===----------------------------------------------------------------------===//
// Rules as data
//===----------------------------------------------------------------------===//

// y = A_w^T x, where A_w is the conv2d with weight w that maps y's shape to
// x's: dx = conv2d(dy, w); dw is conv2d's weight gradient with input dy and
// output gradient x; db sums dy over N, H, W.
LogicalResult ConvTranspose2dOp::buildGradient(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &operandGrads) {
  initGrads(*this, operandGrads);
  GradBuilder gb(builder, *this);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  if (wanted[0]) {
    Value dx = Conv2dOp::create(builder, gb.loc, dy, getWeight(), Value(),
                                getStrideAttr(), getPaddingAttr(),
                                getDilationAttr(), getGroupsAttr());
    operandGrads[0] = gb.fit(dx, getInput());
  }
  if (wanted[1]) {
    auto grad = Conv2dGradOp::create(builder, gb.loc, getInput(), dy,
                                     getWeight(), getStrideAttr(),
                                     getPaddingAttr(), getDilationAttr(),
                                     getGroupsAttr());
    operandGrads[1] = gb.fit(grad.getWeightGrad(), getWeight());
  }
  if (getBias() && wanted[2]) {
    Value db = SumOp::create(builder, gb.loc, dy, ArrayRef<int64_t>{0, 2, 3},
                             /*keepdim=*/false);
    operandGrads[2] = gb.fit(db, getBias());
  }
  return success();
}

LogicalResult PreluOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getOperation()->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy || (!wanted[0] && !wanted[1]))
    return success();
  GradBuilder g(builder, *this);
  auto grad = PreluGradOp::create(builder, g.loc, dy, getInput(), getWeight());
  if (wanted[0])
    operandGrads[0] = g.fit(grad.getInputGrad(), getInput());
  if (wanted[1])
    operandGrads[1] = g.fit(grad.getWeightGrad(), getWeight());
  return success();
}

// The rules of the ops whose records hold them (`gradients` in the .td files):
// the elementwise ops, casts, softmax-like ops, norms, pools, losses and the
// `max` reduction. The rules above need code: shape bookkeeping (matmul's
// 1-D promotion, reductions, slices) or attributes the forward op lacks.
#include "ampc/Dialect/TG/TGGradients.inc"
