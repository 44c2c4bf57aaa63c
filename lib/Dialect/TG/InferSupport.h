//===- InferSupport.h - shared helpers of tg type inference -----*- C++ -*-===//
//
// Private to lib/Dialect/TG: the error helper and shape checks that the
// inference functions of every op family (TGOps.cpp, TGTrainingOps.cpp and
// the per-family files) share, so a message reads the same in all of them.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_LIB_DIALECT_TG_INFERSUPPORT_H
#define AMPC_LIB_DIALECT_TG_INFERSUPPORT_H

#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <string>

namespace ampc::tg::detail {

/// Emits `'tg.NAME' MESSAGE` at the (optional) location and fails.
struct InferError {
  std::optional<mlir::Location> loc;
  llvm::StringRef opName;
  template <typename... Args>
  mlir::LogicalResult operator()(Args &&...args) const {
    return mlir::emitOptionalError(loc, "'tg.", opName, "' ",
                                   std::forward<Args>(args)...);
  }
};

/// The ranked tensor type of `v`, or null (also for a null value).
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return v ? llvm::dyn_cast<mlir::RankedTensorType>(v.getType())
           : mlir::RankedTensorType();
}

/// `[2, 3]`, for diagnostics.
inline std::string shapeToString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The promoted element type of all `values` (ranked tensors), reporting a
/// mix that cannot be promoted.
inline mlir::FailureOr<mlir::Type> promoteAll(const InferError &err,
                                              mlir::ValueRange values) {
  mlir::Type result;
  for (mlir::Value v : values) {
    auto t = tensorType(v);
    if (!t)
      return err("operands must be ranked tensors");
    mlir::Type e = t.getElementType();
    mlir::Type next = result ? promoteElementTypes(result, e) : e;
    if (!next)
      return err("cannot mix element types ", result, " and ", e);
    result = next;
  }
  return result;
}

/// Appends one tensor type per shape in `shapes`, all of the promoted element
/// type of `values` (reported as promoteAll does): the usual last step of an
/// inference whose result takes its element type from the operands.
inline mlir::LogicalResult
pushPromoted(const InferError &err, mlir::ValueRange values,
             llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
             llvm::SmallVectorImpl<mlir::Type> &types) {
  mlir::FailureOr<mlir::Type> elt = promoteAll(err, values);
  if (mlir::failed(elt))
    return mlir::failure();
  for (llvm::ArrayRef<int64_t> shape : shapes)
    types.push_back(mlir::RankedTensorType::get(shape, *elt));
  return mlir::success();
}

/// Checks the `dim` attribute of an op over one dim of `x` (a scalar counts
/// as rank 1). `sayRank` adds ` (rank N)` to the out-of-range message;
/// softmax_grad and log_softmax_grad print it without.
inline mlir::LogicalResult checkDim(const InferError &err,
                                    mlir::RankedTensorType x,
                                    mlir::IntegerAttr dimAttr,
                                    bool sayRank = true) {
  if (!dimAttr)
    return err("requires attribute 'dim'");
  int64_t dim = dimAttr.getInt();
  if (dim < 0 || dim >= std::max<int64_t>(x.getRank(), 1)) {
    if (sayRank)
      return err("dim ", dim, " is out of range for ", x, " (rank ",
                 x.getRank(), ")");
    return err("dim ", dim, " is out of range for ", x);
  }
  return mlir::success();
}

/// Checks the `dims` of a reduction of `x` (present, not empty unless `x` is
/// a scalar, in range, sorted and distinct) and returns the result's shape.
/// `sayRank` adds ` (rank N)` to the out-of-range message; max_grad prints
/// it without.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
reduceShape(const InferError &err, mlir::RankedTensorType x,
            mlir::DenseI64ArrayAttr dimsAttr, bool keepdim,
            bool sayRank = true) {
  if (!dimsAttr)
    return err("requires attribute 'dims'");
  llvm::ArrayRef<int64_t> dims = dimsAttr.asArrayRef();
  // torch.sum(x, dim=[]) reduces every dim; the IR spells the dims out, so an
  // empty list would be ambiguous.
  if (dims.empty() && x.getRank() > 0)
    return err("dims must not be empty (list every dim to reduce)");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= x.getRank()) {
      if (sayRank)
        return err("dim ", dims[i], " is out of range for ", x, " (rank ",
                   x.getRank(), ")");
      return err("dim ", dims[i], " is out of range for ", x);
    }
    if (i > 0 && dims[i] <= dims[i - 1])
      return err("dims ", shapeToString(dims), " must be sorted and distinct");
  }
  llvm::SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(x.getDimSize(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

/// The promoted element type of the operands of a pair loss: two ranked
/// tensors of one shape.
inline mlir::FailureOr<mlir::Type>
pairLossType(const InferError &err, mlir::Value lhs, mlir::Value rhs) {
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b)
    return err("operands must be ranked tensors");
  if (a.getShape() != b.getShape())
    return err("operands must have the same shape, got ", a, " and ", b);
  return promoteAll(err, {lhs, rhs});
}

/// Checks that `grad` has exactly `shape` (the forward result's shape).
inline mlir::LogicalResult checkGradShape(const InferError &err,
                                          mlir::Value grad,
                                          llvm::ArrayRef<int64_t> shape,
                                          llvm::StringRef forward) {
  auto g = tensorType(grad);
  if (!g)
    return err("gradient must be a ranked tensor");
  if (g.getShape() != shape)
    return err("gradient ", g, " must have the shape ", shapeToString(shape),
               " of the ", forward, " result");
  return mlir::success();
}

/// Checks the input and `eps` of layer_norm / rms_norm and their backward
/// ops: rank >= 1, eps present and >= 0.
inline mlir::LogicalResult checkLastDimNorm(const InferError &err,
                                            mlir::RankedTensorType x,
                                            mlir::FloatAttr eps) {
  if (x.getRank() < 1)
    return err("input must have rank >= 1, got ", x);
  if (!eps)
    return err("requires attribute 'eps'");
  if (!(eps.getValueAsDouble() >= 0.0))
    return err("eps must be >= 0, got ", eps.getValueAsDouble());
  return mlir::success();
}

/// Checks gelu's and gelu_grad's `approximate` attribute (absent: "none").
inline mlir::LogicalResult checkGeluApproximate(const InferError &err,
                                                mlir::StringAttr approx) {
  if (approx && approx.getValue() != "none" && approx.getValue() != "tanh")
    return err("approximate must be \"none\" or \"tanh\", got \"",
               approx.getValue(), "\"");
  return mlir::success();
}

/// The broadcast shape of `a` and `b`, reporting the result dim where they
/// do not broadcast.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastPair(const InferError &err, mlir::RankedTensorType a,
              mlir::RankedTensorType b) {
  int64_t badDim = 0;
  auto shape = broadcastShapes(a.getShape(), b.getShape(), &badDim);
  if (!shape)
    return err("shapes ", a, " and ", b, " do not broadcast (dim ", badDim,
               " of the result)");
  return llvm::SmallVector<int64_t>(*shape);
}

/// Checks that `attr` holds two (H, W) values, each at least `minValue`.
inline mlir::LogicalResult checkPair(const InferError &err,
                                     llvm::StringRef what,
                                     mlir::DenseI64ArrayAttr attr,
                                     int64_t minValue) {
  if (!attr)
    return err("requires attribute '", what, "'");
  if (attr.size() != 2)
    return err("'", what, "' needs 2 values (H, W), got ", attr.size());
  for (int64_t v : attr.asArrayRef())
    if (v < minValue)
      return err("'", what, "' values must be >= ", minValue, ", got ",
                 shapeToString(attr.asArrayRef()));
  return mlir::success();
}

/// Checks the ranks of conv2d's input [N, C, H, W] and weight
/// [O, C/groups, KH, KW] and its stride, padding and dilation pairs (conv2d
/// and conv2d_grad).
inline mlir::LogicalResult
checkConv2dOperands(const InferError &err, mlir::RankedTensorType x,
                    mlir::RankedTensorType w, mlir::DenseI64ArrayAttr stride,
                    mlir::DenseI64ArrayAttr padding,
                    mlir::DenseI64ArrayAttr dilation) {
  if (x.getRank() != 4)
    return err("input must be 4-D [N, C, H, W], got ", x);
  if (w.getRank() != 4)
    return err("weight must be 4-D [O, C/groups, KH, KW], got ", w);
  if (failed(checkPair(err, "stride", stride, 1)) ||
      failed(checkPair(err, "padding", padding, 0)) ||
      failed(checkPair(err, "dilation", dilation, 1)))
    return mlir::failure();
  return mlir::success();
}

/// Appends the `n` spatial output sizes of a convolution of `x` by `w`
/// (their dims 2...) to `out`, reporting a dilated kernel wider than the
/// padded input (conv1d, conv3d, their backward ops and conv2d_grad;
/// conv2d words the message on its own).
inline mlir::LogicalResult appendConvSpatial(
    const InferError &err, mlir::RankedTensorType x, mlir::RankedTensorType w,
    int64_t n, llvm::ArrayRef<int64_t> stride, llvm::ArrayRef<int64_t> padding,
    llvm::ArrayRef<int64_t> dilation, llvm::SmallVectorImpl<int64_t> &out) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t span = dilation[i] * (w.getDimSize(2 + i) - 1) + 1;
    int64_t padded = x.getDimSize(2 + i) + 2 * padding[i];
    if (padded < span)
      return err("kernel extent ", span, " exceeds padded input ", padded,
                 " in spatial dim ", 2 + i, " of ", x);
    out.push_back((padded - span) / stride[i] + 1);
  }
  return mlir::success();
}

/// The output shape of max/avg pooling of the NCHW tensor `x` (and of the
/// input of their backward ops), checking every attribute.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
poolOutputShape(const InferError &err, mlir::RankedTensorType x,
                mlir::DenseI64ArrayAttr kernel, mlir::DenseI64ArrayAttr stride,
                mlir::DenseI64ArrayAttr padding) {
  if (x.getRank() != 4)
    return err("input must be 4-D [N, C, H, W], got ", x);
  if (failed(checkPair(err, "kernel", kernel, 1)) ||
      failed(checkPair(err, "stride", stride, 1)) ||
      failed(checkPair(err, "padding", padding, 0)))
    return mlir::failure();
  llvm::SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};
  for (int i = 0; i < 2; ++i) {
    int64_t k = kernel[i], s = stride[i], p = padding[i];
    if (p > k / 2)
      return err("padding ", p, " exceeds half the kernel ", k,
                 " in spatial dim ", 2 + i);
    int64_t padded = x.getDimSize(2 + i) + 2 * p;
    if (padded < k)
      return err("kernel ", k, " exceeds padded input ", padded,
                 " in spatial dim ", 2 + i, " of ", x);
    shape.push_back((padded - k) / s + 1);
  }
  return shape;
}

/// Result type of an elementwise binary op `name` (broadcast shapes,
/// promoted element type); the inference of every TG_BinaryOp.
mlir::LogicalResult inferBinary(llvm::StringRef name,
                                std::optional<mlir::Location> loc,
                                mlir::Value lhs, mlir::Value rhs,
                                llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of the comparison `name`: the broadcast shape, `i1`; any
/// operand dtypes.
mlir::LogicalResult inferCompare(llvm::StringRef name,
                                 std::optional<mlir::Location> loc,
                                 mlir::Value lhs, mlir::Value rhs,
                                 llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of an op along the `dim` attribute that keeps its operand's
/// type: softmax, log_softmax, cumsum, cumsum_grad.
mlir::LogicalResult inferAlongDim(llvm::StringRef name,
                                  std::optional<mlir::Location> loc,
                                  mlir::Value input, mlir::IntegerAttr dimAttr,
                                  llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of `tg.argmax`: i32, `dim` dropped (size 1 with keepdim).
mlir::LogicalResult inferArgmax(std::optional<mlir::Location> loc,
                                mlir::Value input, int64_t dim, bool keepdim,
                                llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of `tg.where`: the broadcast shape of all three, the promoted
/// type of the value sides.
mlir::LogicalResult inferWhere(std::optional<mlir::Location> loc,
                               mlir::Value condition, mlir::Value lhs,
                               mlir::Value rhs,
                               llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of a mean loss of two float tensors of one shape (the binary
/// cross-entropy losses): a scalar of the promoted type.
mlir::LogicalResult inferPairLoss(llvm::StringRef name,
                                  std::optional<mlir::Location> loc,
                                  mlir::Value lhs, mlir::Value rhs,
                                  llvm::SmallVectorImpl<mlir::Type> &types);

/// Result types of the backward op of such a loss: the operands' shape,
/// the promoted type of the scalar gradient and both operands.
mlir::LogicalResult inferPairLossGrad(llvm::StringRef name,
                                      std::optional<mlir::Location> loc,
                                      mlir::Value grad, mlir::Value lhs,
                                      mlir::Value rhs,
                                      llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of the backward op `name` of an elementwise op: the input's
/// shape, the promoted type of `grad` and `input`; the inference of every
/// TG_UnaryGradOp.
mlir::LogicalResult inferUnaryGrad(llvm::StringRef name,
                                   std::optional<mlir::Location> loc,
                                   mlir::Value grad, mlir::Value input,
                                   llvm::SmallVectorImpl<mlir::Type> &types);

/// The checks of a learning-rate schedule (TGScheduleOps.cpp), shared by
/// tg.lr_schedule and tg.minimize's `schedule`: emits through `op` and
/// fails on the first problem.
mlir::LogicalResult verifyLrSchedule(mlir::Operation *op, llvm::StringRef kind,
                                     double lr, int64_t warmup, int64_t total,
                                     double minLr, int64_t stepSize,
                                     double gamma);

} // namespace ampc::tg::detail

#endif // AMPC_LIB_DIALECT_TG_INFERSUPPORT_H
