//===- TGSeedOps2.cpp - addmm family and prelu: inference, gradients ------===//
//
// Result types and gradient rules of the ops of TGSeedOps2.td: the
// GEMM-plus-add family (addmm, baddbmm, addbmm, addmv, addr) and prelu.
// Messages follow PyTorch's checks; the gradients are PyTorch's autograd
// formulas (the scale by alpha or beta after the product).
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "InferSupport.h"

#include "ampc/Dialect/TG/TGInterfaces.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

//===----------------------------------------------------------------------===//
// Inference
//===----------------------------------------------------------------------===//

namespace {
/// Which product an add* op computes.
enum class Product { Mm, Bmm, SumBmm, Mv, Outer };
} // namespace

/// The result type of `beta * input + alpha * product(lhs, rhs)`: checks the
/// ranks and inner dims of the product (PyTorch's messages, with the
/// operands' shapes) and that `input` broadcasts to the product's shape.
static LogicalResult inferAddGemm(StringRef name, Product kind,
                                  std::optional<Location> loc, Value input,
                                  Value lhs, Value rhs,
                                  SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto c = tensorType(input), a = tensorType(lhs), b = tensorType(rhs);
  if (!c || !a || !b)
    return err("operands must be ranked tensors");
  static const int64_t ranks[][2] = {{2, 2}, {3, 3}, {3, 3}, {2, 1}, {1, 1}};
  static const char *names[][2] = {{"mat1", "mat2"},
                                   {"batch1", "batch2"},
                                   {"batch1", "batch2"},
                                   {"mat", "vec"},
                                   {"vec1", "vec2"}};
  int idx = static_cast<int>(kind);
  for (int i = 0; i < 2; ++i) {
    RankedTensorType t = i ? b : a;
    if (t.getRank() != ranks[idx][i])
      return err("'", names[idx][i], "' (operand ", i + 2, ") must be ",
                 ranks[idx][i], "-D, got ", t);
  }
  SmallVector<int64_t> shape;
  switch (kind) {
  case Product::Mm:
    if (a.getDimSize(1) != b.getDimSize(0))
      return err("mat1 and mat2 shapes cannot be multiplied (", a, " and ", b,
                 ")");
    shape = {a.getDimSize(0), b.getDimSize(1)};
    break;
  case Product::Bmm:
  case Product::SumBmm:
    if (a.getDimSize(0) != b.getDimSize(0))
      return err("batch1 ", a, " and batch2 ", b,
                 " must have the same batch size");
    if (a.getDimSize(2) != b.getDimSize(1))
      return err("batch1 ", a, " and batch2 ", b,
                 " shapes cannot be multiplied");
    if (kind == Product::Bmm)
      shape = {a.getDimSize(0), a.getDimSize(1), b.getDimSize(2)};
    else
      shape = {a.getDimSize(1), b.getDimSize(2)};
    break;
  case Product::Mv:
    if (a.getDimSize(1) != b.getDimSize(0))
      return err("mat ", a, " and vec ", b, " shapes cannot be multiplied");
    shape = {a.getDimSize(0)};
    break;
  case Product::Outer:
    shape = {a.getDimSize(0), b.getDimSize(0)};
    break;
  }
  auto joined = broadcastShapes(c.getShape(), shape);
  if (!joined || ArrayRef<int64_t>(*joined) != ArrayRef<int64_t>(shape))
    return err("input ", c, " does not broadcast to the product's shape ",
               shapeToString(shape));
  return pushPromoted(err, {input, lhs, rhs}, {shape}, types);
}

#define AMPC_ADD_GEMM_INFER(OP, NAME, KIND)                                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferAddGemm(NAME, Product::KIND, loc, adaptor.getInput(),          \
                        adaptor.getLhs(), adaptor.getRhs(), types);            \
  }
AMPC_ADD_GEMM_INFER(AddmmOp, "addmm", Mm)
AMPC_ADD_GEMM_INFER(BaddbmmOp, "baddbmm", Bmm)
AMPC_ADD_GEMM_INFER(AddbmmOp, "addbmm", SumBmm)
AMPC_ADD_GEMM_INFER(AddmvOp, "addmv", Mv)
AMPC_ADD_GEMM_INFER(AddrOp, "addr", Outer)
#undef AMPC_ADD_GEMM_INFER

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
// Gradients
//===----------------------------------------------------------------------===//

namespace {
/// The rule shared by the add* ops: `beta * dy` summed to `input`'s shape,
/// and the product gradients of `a` and `b`, each one GEMM of the same
/// family with `alpha` folded in (beta 0, so its `input` is a zero that is
/// never read): the GEMM scales before its one rounding, as the reference's
/// `alpha * (dy @ b^T)` does, and no separate multiply runs.
template <typename OpTy, typename DA, typename DB>
LogicalResult addGemmGradient(OpTy op, OpBuilder &builder,
                              ArrayRef<Value> resultGrads,
                              ArrayRef<bool> wanted,
                              SmallVectorImpl<Value> &operandGrads, DA da,
                              DB db) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  double beta = op.getBeta().convertToDouble();
  double alpha = op.getAlpha().convertToDouble();
  if (wanted[0])
    operandGrads[0] = g.fit(g.scale(dy, beta), op.getInput());
  if (wanted[1])
    operandGrads[1] = g.fit(da(g, dy, op.getLhs(), op.getRhs(), alpha),
                            op.getLhs());
  if (wanted[2])
    operandGrads[2] = g.fit(db(g, dy, op.getLhs(), op.getRhs(), alpha),
                            op.getRhs());
  return success();
}

/// `alpha * product(x, y)` as the add* op `OpTy` with beta 0.
template <typename OpTy>
Value scaledProduct(GradBuilder &g, Value x, Value y, double alpha) {
  Value zero = g.scalar(0.0, x);
  return OpTy::create(g.b, g.loc, zero, x, y, g.b.getF64FloatAttr(0.0),
                      g.b.getF64FloatAttr(alpha));
}
} // namespace

// addmm: da = alpha * dy @ b^T, db = alpha * a^T @ dy.
LogicalResult AddmmOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value b, double alpha) {
    return scaledProduct<AddmmOp>(g, dy, g.transposeLast2(b), alpha);
  };
  auto db = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<AddmmOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// baddbmm: the same, batched.
LogicalResult BaddbmmOp::buildGradient(OpBuilder &builder,
                                       ArrayRef<Value> resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value b, double alpha) {
    return scaledProduct<BaddbmmOp>(g, dy, g.transposeLast2(b), alpha);
  };
  auto db = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<BaddbmmOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// addbmm: dy is shared by every batch entry: broadcast it to [B, m, n] and
// take baddbmm's rule (PyTorch's grad.unsqueeze(0).expand(...).bmm(...)).
LogicalResult AddbmmOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto expand = [](GradBuilder &g, Value dy, Value a) {
    int64_t batch = GradBuilder::type(a).getDimSize(0);
    ArrayRef<int64_t> s = GradBuilder::type(dy).getShape();
    return BroadcastToOp::create(g.b, g.loc, dy,
                                 ArrayRef<int64_t>{batch, s[0], s[1]})
        .getResult();
  };
  auto da = [expand](GradBuilder &g, Value dy, Value a, Value b, double alpha) {
    return scaledProduct<BaddbmmOp>(g, expand(g, dy, a), g.transposeLast2(b),
                                    alpha);
  };
  auto db = [expand](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<BaddbmmOp>(g, g.transposeLast2(a), expand(g, dy, a),
                                    alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         db);
}

// addmv: da = alpha * outer(dy, v) (addr), dv = alpha * a^T @ dy (addmv).
LogicalResult AddmvOp::buildGradient(OpBuilder &builder,
                                     ArrayRef<Value> resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &operandGrads) {
  auto da = [](GradBuilder &g, Value dy, Value, Value v, double alpha) {
    return scaledProduct<AddrOp>(g, dy, v, alpha);
  };
  auto dv = [](GradBuilder &g, Value dy, Value a, Value, double alpha) {
    return scaledProduct<AddmvOp>(g, g.transposeLast2(a), dy, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, da,
                         dv);
}

// addr: du = alpha * dy @ v, dv = alpha * dy^T @ u (addmv both).
LogicalResult AddrOp::buildGradient(OpBuilder &builder,
                                    ArrayRef<Value> resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto du = [](GradBuilder &g, Value dy, Value, Value v, double alpha) {
    return scaledProduct<AddmvOp>(g, dy, v, alpha);
  };
  auto dv = [](GradBuilder &g, Value dy, Value u, Value, double alpha) {
    return scaledProduct<AddmvOp>(g, g.transposeLast2(dy), u, alpha);
  };
  return addGemmGradient(*this, builder, resultGrads, wanted, operandGrads, du,
                         dv);
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

//===----------------------------------------------------------------------===//
// Convolutions over 1 and 3 spatial dims
//===----------------------------------------------------------------------===//

/// Checks that `attr` holds `n` values (one per spatial dim), each at least
/// `minValue`.
static LogicalResult checkSpatial(const InferError &err, StringRef what,
                                  DenseI64ArrayAttr attr, int64_t n,
                                  int64_t minValue) {
  if (!attr)
    return err("requires attribute '", what, "'");
  if (attr.size() != n)
    return err("'", what, "' needs ", n, " values (one per spatial dim), got ",
               attr.size());
  for (int64_t v : attr.asArrayRef())
    if (v < minValue)
      return err("'", what, "' values must be >= ", minValue, ", got ",
                 shapeToString(attr.asArrayRef()));
  return success();
}

/// F.convNd's checks and output shape, over `n` spatial dims.
static FailureOr<SmallVector<int64_t>>
convOutputShape(const InferError &err, int64_t n, RankedTensorType x,
                RankedTensorType w, DenseI64ArrayAttr stride,
                DenseI64ArrayAttr padding, DenseI64ArrayAttr dilation,
                IntegerAttr groupsAttr) {
  static const char *layouts[] = {"", "[N, C, L]", "[N, C, H, W]",
                                  "[N, C, D, H, W]"};
  static const char *weights[] = {"", "[O, C/groups, K]",
                                  "[O, C/groups, KH, KW]",
                                  "[O, C/groups, KD, KH, KW]"};
  if (x.getRank() != n + 2)
    return err("input must be ", n + 2, "-D ", layouts[n], ", got ", x);
  if (w.getRank() != n + 2)
    return err("weight must be ", n + 2, "-D ", weights[n], ", got ", w);
  if (failed(checkSpatial(err, "stride", stride, n, 1)) ||
      failed(checkSpatial(err, "padding", padding, n, 0)) ||
      failed(checkSpatial(err, "dilation", dilation, n, 1)))
    return failure();
  if (!groupsAttr)
    return err("requires attribute 'groups'");
  int64_t groups = groupsAttr.getInt();
  if (groups < 1)
    return err("'groups' must be >= 1, got ", groups);
  int64_t c = x.getDimSize(1), o = w.getDimSize(0);
  if (c % groups != 0 || o % groups != 0 || w.getDimSize(1) * groups != c)
    return err("input ", x, " and weight ", w, " do not fit groups ", groups,
               " (weight dim 1 must be C/groups = ", c / groups,
               " and O divisible by groups)");
  SmallVector<int64_t> out{x.getDimSize(0), o};
  if (failed(appendConvSpatial(err, x, w, n, stride.asArrayRef(),
                               padding.asArrayRef(), dilation.asArrayRef(),
                               out)))
    return failure();
  return out;
}

template <typename Adaptor>
static LogicalResult inferConvNd(StringRef name, int64_t n,
                                 std::optional<Location> loc, Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  auto b = tensorType(adaptor.getBias());
  if (!x || !w)
    return err("operands must be ranked tensors");
  auto shape = convOutputShape(err, n, x, w, adaptor.getStrideAttr(),
                               adaptor.getPaddingAttr(),
                               adaptor.getDilationAttr(),
                               adaptor.getGroupsAttr());
  if (failed(shape))
    return failure();
  int64_t o = w.getDimSize(0);
  if (b && (b.getRank() != 1 || b.getDimSize(0) != o))
    return err("bias ", b, " must be [", o, "] to match weight ", w);
  SmallVector<Value> vals{adaptor.getInput(), adaptor.getWeight()};
  if (b)
    vals.push_back(adaptor.getBias());
  return pushPromoted(err, vals, {*shape}, types);
}

LogicalResult Conv1dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferConvNd("conv1d", 1, loc, adaptor, types);
}

LogicalResult Conv3dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferConvNd("conv3d", 3, loc, adaptor, types);
}

template <typename Adaptor>
static LogicalResult inferConvNdGrad(StringRef name, StringRef fwd, int64_t n,
                                     std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  auto g = tensorType(adaptor.getGrad());
  if (!x || !w || !g)
    return err("operands must be ranked tensors");
  auto shape = convOutputShape(err, n, x, w, adaptor.getStrideAttr(),
                               adaptor.getPaddingAttr(),
                               adaptor.getDilationAttr(),
                               adaptor.getGroupsAttr());
  if (failed(shape))
    return failure();
  if (g.getShape() != ArrayRef<int64_t>(*shape))
    return err("grad ", g, " must have the ", fwd, " output shape ",
               shapeToString(*shape));
  return pushPromoted(
      err, {adaptor.getGrad(), adaptor.getInput(), adaptor.getWeight()},
      {x.getShape(), w.getShape()}, types);
}

LogicalResult Conv1dGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferConvNdGrad("conv1d_grad", "conv1d", 1, loc, adaptor, types);
}

LogicalResult Conv3dGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferConvNdGrad("conv3d_grad", "conv3d", 3, loc, adaptor, types);
}

/// F.conv_transposeNd's checks and output size.
template <typename Adaptor>
static LogicalResult inferConvTransposeNd(StringRef name, int64_t n,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  auto b = tensorType(adaptor.getBias());
  if (!x || !w)
    return err("operands must be ranked tensors");
  if (x.getRank() != n + 2)
    return err("input must be ", n + 2, "-D [N, C_in, ", n,
               " spatial dims], got ", x);
  if (w.getRank() != n + 2)
    return err("weight must be ", n + 2, "-D [C_in, C_out/groups, ", n,
               " kernel dims], got ", w);
  if (failed(checkSpatial(err, "stride", adaptor.getStrideAttr(), n, 1)) ||
      failed(checkSpatial(err, "padding", adaptor.getPaddingAttr(), n, 0)) ||
      failed(checkSpatial(err, "output_padding",
                          adaptor.getOutputPaddingAttr(), n, 0)) ||
      failed(checkSpatial(err, "dilation", adaptor.getDilationAttr(), n, 1)))
    return failure();
  IntegerAttr groupsAttr = adaptor.getGroupsAttr();
  if (!groupsAttr)
    return err("requires attribute 'groups'");
  int64_t groups = groupsAttr.getInt();
  if (groups < 1)
    return err("'groups' must be >= 1, got ", groups);
  int64_t c = x.getDimSize(1);
  if (w.getDimSize(0) != c)
    return err("weight ", w, " has ", w.getDimSize(0),
               " input channels (dim 0) but input ", x, " has ", c);
  if (c % groups != 0)
    return err("input channels ", c, " of ", x, " are not divisible by groups ",
               groups);
  int64_t o = w.getDimSize(1) * groups;
  if (b && (b.getRank() != 1 || b.getDimSize(0) != o))
    return err("bias ", b, " must be [", o, "] to match weight ", w,
               " and groups ", groups);
  SmallVector<Value> vals{adaptor.getInput(), adaptor.getWeight()};
  if (b)
    vals.push_back(adaptor.getBias());
  FailureOr<Type> elt = promoteAll(err, vals);
  if (failed(elt))
    return failure();
  ArrayRef<int64_t> stride = adaptor.getStride(), pad = adaptor.getPadding(),
                    outPad = adaptor.getOutputPadding(),
                    dil = adaptor.getDilation();
  SmallVector<int64_t> shape{x.getDimSize(0), o};
  for (int64_t i = 0; i < n; ++i) {
    if (outPad[i] >= stride[i] && outPad[i] >= dil[i])
      return err("'output_padding' ", outPad[i], " in spatial dim ", 2 + i,
                 " must be smaller than the stride ", stride[i],
                 " or the dilation ", dil[i]);
    int64_t in = x.getDimSize(2 + i), k = w.getDimSize(2 + i);
    int64_t out = (in - 1) * stride[i] - 2 * pad[i] + dil[i] * (k - 1) +
                  outPad[i] + 1;
    if (out < 1)
      return err("output size ", out, " in spatial dim ", 2 + i,
                 " is not positive for input ", x, " and weight ", w);
    shape.push_back(out);
  }
  types.push_back(RankedTensorType::get(shape, *elt));
  return success();
}

LogicalResult ConvTranspose2dOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferConvTransposeNd("conv_transpose2d", 2, loc, adaptor, types);
}

LogicalResult ConvTranspose1dOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferConvTransposeNd("conv_transpose1d", 1, loc, adaptor, types);
}

LogicalResult ConvTranspose3dOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferConvTransposeNd("conv_transpose3d", 3, loc, adaptor, types);
}

/// The dims a bias gradient sums `dy` over: all but the channel dim.
static SmallVector<int64_t> biasDims(Value dy) {
  SmallVector<int64_t> dims{0};
  for (int64_t i = 2, e = cast<RankedTensorType>(dy.getType()).getRank(); i < e;
       ++i)
    dims.push_back(i);
  return dims;
}

/// conv1d / conv3d: both gradients from the backward op, the bias's a sum.
template <typename OpTy, typename GradOpTy>
static LogicalResult convGradient(OpTy op, OpBuilder &builder,
                                  ArrayRef<Value> resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  if (wanted[0] || wanted[1]) {
    auto grad = GradOpTy::create(builder, g.loc, dy, op.getInput(),
                                 op.getWeight(), op.getStrideAttr(),
                                 op.getPaddingAttr(), op.getDilationAttr(),
                                 op.getGroupsAttr());
    if (wanted[0])
      operandGrads[0] = g.fit(grad.getInputGrad(), op.getInput());
    if (wanted[1])
      operandGrads[1] = g.fit(grad.getWeightGrad(), op.getWeight());
  }
  if (op.getBias() && wanted[2])
    operandGrads[2] = g.fit(
        SumOp::create(builder, g.loc, dy, biasDims(dy), /*keepdim=*/false),
        op.getBias());
  return success();
}

/// y = A_w^T x, where A_w is the convolution with weight w that maps y's
/// shape to x's: dx = conv(dy, w); dw is that convolution's weight gradient
/// with input dy and output gradient x; db sums dy.
template <typename OpTy, typename ConvOpTy, typename GradOpTy>
static LogicalResult convTransposeGradient(OpTy op, OpBuilder &builder,
                                           ArrayRef<Value> resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  if (wanted[0]) {
    Value dx = ConvOpTy::create(builder, g.loc, dy, op.getWeight(), Value(),
                                op.getStrideAttr(), op.getPaddingAttr(),
                                op.getDilationAttr(), op.getGroupsAttr());
    operandGrads[0] = g.fit(dx, op.getInput());
  }
  if (wanted[1]) {
    auto grad = GradOpTy::create(builder, g.loc, op.getInput(), dy,
                                 op.getWeight(), op.getStrideAttr(),
                                 op.getPaddingAttr(), op.getDilationAttr(),
                                 op.getGroupsAttr());
    operandGrads[1] = g.fit(grad.getWeightGrad(), op.getWeight());
  }
  if (op.getBias() && wanted[2])
    operandGrads[2] = g.fit(
        SumOp::create(builder, g.loc, dy, biasDims(dy), /*keepdim=*/false),
        op.getBias());
  return success();
}

LogicalResult Conv1dOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  return convGradient<Conv1dOp, Conv1dGradOp>(*this, builder, resultGrads,
                                              wanted, operandGrads);
}

LogicalResult Conv3dOp::buildGradient(OpBuilder &builder,
                                      ArrayRef<Value> resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &operandGrads) {
  return convGradient<Conv3dOp, Conv3dGradOp>(*this, builder, resultGrads,
                                              wanted, operandGrads);
}

LogicalResult ConvTranspose1dOp::buildGradient(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &operandGrads) {
  return convTransposeGradient<ConvTranspose1dOp, Conv1dOp, Conv1dGradOp>(
      *this, builder, resultGrads, wanted, operandGrads);
}

LogicalResult ConvTranspose3dOp::buildGradient(
    OpBuilder &builder, ArrayRef<Value> resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &operandGrads) {
  return convTransposeGradient<ConvTranspose3dOp, Conv3dOp, Conv3dGradOp>(
      *this, builder, resultGrads, wanted, operandGrads);
}

//===----------------------------------------------------------------------===//
// mm, bmm, mv
//===----------------------------------------------------------------------===//

/// torch.mm / torch.bmm / torch.mv: the ranks each operand must have, the
/// inner (and batch) dims, and the result.
static LogicalResult inferFixedMatmul(StringRef name, int64_t ra, int64_t rb,
                                      std::optional<Location> loc, Value lhs,
                                      Value rhs,
                                      SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b)
    return err("operands must be ranked tensors");
  if (a.getRank() != ra)
    return err("operand 1 must be ", ra, "-D, got ", a);
  if (b.getRank() != rb)
    return err("operand 2 must be ", rb, "-D, got ", b);
  int64_t k = a.getDimSize(ra - 1), kb = b.getDimSize(rb == 1 ? 0 : rb - 2);
  SmallVector<int64_t> shape;
  if (ra == 3) {
    if (a.getDimSize(0) != b.getDimSize(0))
      return err("needs equal batch sizes, found ", a.getDimSize(0), " and ",
                 b.getDimSize(0));
    shape.push_back(a.getDimSize(0));
  }
  if (k != kb)
    return err("inner dims differ: ", a, " and ", b);
  shape.push_back(a.getDimSize(ra - 2));
  if (rb > 1)
    shape.push_back(b.getDimSize(rb - 1));
  return pushPromoted(err, {lhs, rhs}, {shape}, types);
}

LogicalResult MmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("mm", 2, 2, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

LogicalResult BmmOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("bmm", 3, 3, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

LogicalResult MvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &types) {
  return inferFixedMatmul("mv", 2, 1, loc, adaptor.getLhs(), adaptor.getRhs(),
                          types);
}

// mm and bmm: da = dy @ b^T, db = a^T @ dy with the same op.
template <typename OpTy>
static LogicalResult fixedMatmulGradient(OpTy op, OpBuilder &builder,
                                         ArrayRef<Value> resultGrads,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, op);
  if (wanted[0])
    operandGrads[0] = g.fit(
        OpTy::create(builder, g.loc, dy, g.transposeLast2(op.getRhs())),
        op.getLhs());
  if (wanted[1])
    operandGrads[1] = g.fit(
        OpTy::create(builder, g.loc, g.transposeLast2(op.getLhs()), dy),
        op.getRhs());
  return success();
}

LogicalResult MmOp::buildGradient(OpBuilder &builder,
                                  ArrayRef<Value> resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &operandGrads) {
  return fixedMatmulGradient(*this, builder, resultGrads, wanted,
                             operandGrads);
}

LogicalResult BmmOp::buildGradient(OpBuilder &builder,
                                   ArrayRef<Value> resultGrads,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &operandGrads) {
  return fixedMatmulGradient(*this, builder, resultGrads, wanted,
                             operandGrads);
}

// mv: da = outer(dy, v) (an mm of [n, 1] and [1, m]), dv = a^T @ dy (mv).
LogicalResult MvOp::buildGradient(OpBuilder &builder,
                                  ArrayRef<Value> resultGrads,
                                  ArrayRef<bool> wanted,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getOperation()->getNumOperands(), Value());
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  GradBuilder g(builder, *this);
  Value a = getLhs(), v = getRhs();
  if (wanted[0]) {
    int64_t n = GradBuilder::type(dy).getDimSize(0),
            m = GradBuilder::type(v).getDimSize(0);
    operandGrads[0] = g.fit(MmOp::create(builder, g.loc, g.reshape(dy, {n, 1}),
                                         g.reshape(v, {1, m})),
                            a);
  }
  if (wanted[1])
    operandGrads[1] =
        g.fit(MvOp::create(builder, g.loc, g.transposeLast2(a), dy), v);
  return success();
}
