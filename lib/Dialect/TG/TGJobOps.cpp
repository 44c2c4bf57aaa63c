//===- TGJobOps.cpp - inference of the training-jobs ops -------------------===//
//
// The ops of TGJobOps.td that need C++: the comparisons' result type.
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
  int64_t badDim = 0;
  auto shape = broadcastShapes(a.getShape(), b.getShape(), &badDim);
  if (!shape)
    return err("shapes ", a, " and ", b, " do not broadcast (dim ", badDim,
               " of the result)");
  types.push_back(
      RankedTensorType::get(*shape, IntegerType::get(a.getContext(), 1)));
  return success();
}
