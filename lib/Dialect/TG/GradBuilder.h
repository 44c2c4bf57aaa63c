//===- GradBuilder.h - builders of the tg gradient rules -------*- C++ -*-===//
//
// Private to lib/Dialect/TG: the builder the hand-written gradient rules
// (TGGradients.cpp, the generated TGGradients.inc, TGMatmulOps.cpp,
// TGConvOps.cpp) create their backward ops with, at the forward op's gradient
// location, so every rule sums, reshapes and casts a gradient back to its
// operand the same way.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_LIB_DIALECT_TG_GRADBUILDER_H
#define AMPC_LIB_DIALECT_TG_GRADBUILDER_H

#include "ampc/Dialect/TG/TGInterfaces.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <numeric>

namespace ampc::tg::detail {

/// Builds backward ops at one location.
class GradBuilder {
public:
  GradBuilder(mlir::OpBuilder &b, mlir::Operation *forward)
      : b(b), loc(getGradientLoc(forward)) {}

  static mlir::RankedTensorType type(mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  static bool isFloatValue(mlir::Value v) {
    return isAnyFloatElement(type(v).getElementType());
  }

  /// A splat constant of `shape` and element type `elt`.
  mlir::Value splat(double value, llvm::ArrayRef<int64_t> shape, mlir::Type elt) {
    auto t = mlir::RankedTensorType::get(shape, elt);
    return ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(
                                          t, b.getFloatAttr(elt, value)));
  }
  /// A scalar constant of `like`'s element type.
  mlir::Value scalar(double value, mlir::Value like) {
    return splat(value, {}, type(like).getElementType());
  }

  mlir::Value cast(mlir::Value v, mlir::Type elt) {
    if (type(v).getElementType() == elt)
      return v;
    return CastOp::create(b, loc, type(v).clone(elt), v);
  }
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape) {
    if (type(v).getShape() == shape)
      return v;
    return ReshapeOp::create(b, loc, v, shape);
  }
  mlir::Value transpose(mlir::Value v, llvm::ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, loc, v, perm);
  }
  /// Swaps the last two dims.
  mlir::Value transposeLast2(mlir::Value v) {
    int64_t rank = type(v).getRank();
    llvm::SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return transpose(v, perm);
  }
  mlir::Value broadcastTo(mlir::Value v, llvm::ArrayRef<int64_t> shape) {
    if (type(v).getShape() == shape)
      return v;
    return BroadcastToOp::create(b, loc, v, shape);
  }

  /// Sums `g` over the dims along which `shape` was broadcast to `g`'s shape
  /// (missing leading dims and size-1 dims), then reshapes to `shape`.
  mlir::Value sumTo(mlir::Value g, llvm::ArrayRef<int64_t> shape) {
    llvm::ArrayRef<int64_t> gs = type(g).getShape();
    if (gs == shape)
      return g;
    size_t lead = gs.size() - shape.size();
    llvm::SmallVector<int64_t> dims;
    for (size_t i = 0; i < gs.size(); ++i)
      if (i < lead || (shape[i - lead] == 1 && gs[i] != 1))
        dims.push_back(i);
    mlir::Value summed = g;
    if (!dims.empty())
      summed = SumOp::create(b, loc, g, dims, /*keepdim=*/true);
    return reshape(summed, shape);
  }

  /// The gradient of `operand` from `g`: `sumTo` its shape, cast to its type.
  mlir::Value fit(mlir::Value g, mlir::Value operand) {
    mlir::RankedTensorType t = type(operand);
    return cast(sumTo(g, t.getShape()), t.getElementType());
  }

  /// v * s, or v itself when s is 1 (PyTorch's maybe_multiply).
  mlir::Value scale(mlir::Value v, double s) {
    if (s == 1.0)
      return v;
    return MulOp::create(b, loc, v, scalar(s, v));
  }

  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace ampc::tg::detail

#endif // AMPC_LIB_DIALECT_TG_GRADBUILDER_H
