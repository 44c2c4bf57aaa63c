//===- TGConvOps.cpp - the convolutions: inference, gradients ------------===//
//
// Result types and gradient rules of the ops of TGConvOps.td: conv1d/2d/3d,
// conv_transpose1d/2d/3d and the gradient ops of the convolutions
// (conv_transpose2d's rule is in TGGradients.cpp). Messages follow
// PyTorch's checks.
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

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  InferError err{loc, "conv2d"};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  auto b = tensorType(adaptor.getBias());
  if (!x || !w)
    return err("operands must be ranked tensors");
  if (failed(checkConv2dOperands(err, x, w, adaptor.getStrideAttr(),
                                 adaptor.getPaddingAttr(),
                                 adaptor.getDilationAttr())))
    return failure();
  IntegerAttr groupsAttr = adaptor.getGroupsAttr();
  if (!groupsAttr)
    return err("requires attribute 'groups'");
  int64_t groups = groupsAttr.getInt();
  if (groups < 1)
    return err("'groups' must be >= 1, got ", groups);
  int64_t c = x.getDimSize(1), o = w.getDimSize(0);
  if (c % groups != 0)
    return err("input channels ", c, " of ", x, " are not divisible by groups ",
               groups);
  if (o % groups != 0)
    return err("output channels ", o, " of weight ", w,
               " are not divisible by groups ", groups);
  if (w.getDimSize(1) != c / groups)
    return err("weight ", w, " has ", w.getDimSize(1),
               " input channels (dim 1) but input ", x, " with groups ", groups,
               " needs ", c / groups);
  if (b && (b.getRank() != 1 || b.getDimSize(0) != o))
    return err("bias ", b, " must be [", o, "] to match weight ", w);
  SmallVector<Value> vals{adaptor.getInput(), adaptor.getWeight()};
  if (b)
    vals.push_back(adaptor.getBias());
  FailureOr<Type> elt = promoteAll(err, vals);
  if (failed(elt))
    return failure();
  ArrayRef<int64_t> stride = adaptor.getStride(), pad = adaptor.getPadding(),
                    dil = adaptor.getDilation();
  SmallVector<int64_t> shape{x.getDimSize(0), o};
  for (int i = 0; i < 2; ++i) {
    int64_t in = x.getDimSize(2 + i), k = w.getDimSize(2 + i);
    int64_t span = dil[i] * (k - 1) + 1;
    int64_t padded = in + 2 * pad[i];
    if (padded < span)
      return err("kernel extent ", span, " (dilated) exceeds padded input ",
                 padded, " in spatial dim ", 2 + i, " of ", x);
    shape.push_back((padded - span) / stride[i] + 1);
  }
  types.push_back(RankedTensorType::get(shape, *elt));
  return success();
}

LogicalResult Conv2dGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  InferError err{loc, "conv2d_grad"};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight());
  if (!x || !w || !tensorType(adaptor.getGrad()))
    return err("operands must be ranked tensors");
  if (failed(checkConv2dOperands(err, x, w, adaptor.getStrideAttr(),
                                 adaptor.getPaddingAttr(),
                                 adaptor.getDilationAttr())))
    return failure();
  if (!adaptor.getGroupsAttr())
    return err("requires attribute 'groups'");
  int64_t groups = adaptor.getGroupsAttr().getInt();
  int64_t c = x.getDimSize(1), o = w.getDimSize(0);
  if (groups < 1 || c % groups != 0 || o % groups != 0 ||
      w.getDimSize(1) != c / groups)
    return err("input ", x, " and weight ", w, " do not fit groups ", groups);
  SmallVector<int64_t> out{x.getDimSize(0), o};
  if (failed(appendConvSpatial(err, x, w, 2, adaptor.getStride(),
                               adaptor.getPadding(), adaptor.getDilation(),
                               out)))
    return failure();
  if (failed(checkGradShape(err, adaptor.getGrad(), out, "conv2d")))
    return failure();
  return pushPromoted(
      err, {adaptor.getGrad(), adaptor.getInput(), adaptor.getWeight()},
      {x.getShape(), w.getShape()}, types);
}

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
