//===- TGCompareOps.cpp - comparisons, argmax, where: inference -----------===//
//
// The inference of the ops of TGCompareOps.td (called from the code their
// records generate): the comparisons' and `where`'s broadcast result and
// `argmax`'s i32 result.
//
//===----------------------------------------------------------------------===//

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

LogicalResult ampc::tg::detail::inferCompare(StringRef name,
                                             std::optional<Location> loc,
                                             Value lhs, Value rhs,
                                             SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b)
    return err("operands must be ranked tensors");
  auto shape = broadcastPair(err, a, b);
  if (failed(shape))
    return failure();
  types.push_back(
      RankedTensorType::get(*shape, IntegerType::get(a.getContext(), 1)));
  return success();
}

LogicalResult ampc::tg::detail::inferWhere(std::optional<Location> loc,
                                           Value condition, Value lhs,
                                           Value rhs,
                                           SmallVectorImpl<Type> &types) {
  InferError err{loc, "where"};
  auto c = tensorType(condition), a = tensorType(lhs), b = tensorType(rhs);
  if (!c || !a || !b)
    return err("operands must be ranked tensors");
  Type elt = promoteElementTypes(a.getElementType(), b.getElementType());
  if (!elt)
    return err("cannot combine the value types of ", a, " and ", b);
  auto ab = broadcastPair(err, a, b);
  if (failed(ab))
    return failure();
  int64_t badDim = 0;
  auto shape = broadcastShapes(c.getShape(), *ab, &badDim);
  if (!shape)
    return err("the condition ", c, " does not broadcast with shape ",
               shapeToString(*ab), " (dim ", badDim, " of the result)");
  types.push_back(RankedTensorType::get(*shape, elt));
  return success();
}

LogicalResult ampc::tg::detail::inferArgmax(std::optional<Location> loc,
                                            Value input, int64_t dim,
                                            bool keepdim,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "argmax"};
  auto x = tensorType(input);
  if (!x)
    return err("operand must be a ranked tensor");
  if (x.getRank() == 0)
    return err("needs an input of rank >= 1, got ", x);
  if (dim < 0 || dim >= x.getRank())
    return err("dim ", dim, " is out of range for ", x);
  if (x.getDimSize(dim) == 0)
    return err("dim ", dim, " of ", x, " is empty");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < x.getRank(); ++i) {
    if (i != dim)
      shape.push_back(x.getDimSize(i));
    else if (keepdim)
      shape.push_back(1);
  }
  types.push_back(
      RankedTensorType::get(shape, IntegerType::get(x.getContext(), 32)));
  return success();
}
