//===- TGCollectiveOps.cpp - data-parallel collective ops
//------------------===//
//
// Result types and verifiers of the ops of TGCollectiveOps.td: the bucketed
// gradient all-reduce and the division of the seed by the world size.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

using namespace mlir;
using namespace ampc::tg;

namespace {
LogicalResult sameTypesAsOperands(std::optional<Location> loc, StringRef name,
                                  ValueRange operands,
                                  SmallVectorImpl<Type> &types) {
  if (operands.empty())
    return emitOptionalError(loc, "'", name, "' needs at least one gradient");
  for (Value v : operands)
    types.push_back(v.getType());
  return success();
}

LogicalResult verifyBucket(Operation *op, int64_t bucket) {
  if (bucket < 0 || bucket > INT32_MAX)
    return op->emitOpError("bucket must be in [0, 2^31), got ") << bucket;
  return success();
}
} // namespace

LogicalResult GradAllreduceStartOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return sameTypesAsOperands(loc, getOperationName(), adaptor.getGrads(),
                             types);
}

LogicalResult GradAllreduceStartOp::verify() {
  return verifyBucket(*this, getBucket());
}

LogicalResult GradAllreduceWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return sameTypesAsOperands(loc, getOperationName(), adaptor.getGrads(),
                             types);
}

LogicalResult GradAllreduceWaitOp::verify() {
  if (failed(verifyBucket(*this, getBucket())))
    return failure();
  // A wait completes exactly what one start began: all of its results, in
  // order.
  auto start = getGrads().front().getDefiningOp<GradAllreduceStartOp>();
  if (!start)
    return emitOpError("operand #0 is not a result of "
                       "'tg.grad_allreduce_start'");
  if (start.getBucket() != getBucket())
    return emitOpError("waits for bucket ")
           << getBucket() << ", but its operands were started as bucket "
           << start.getBucket();
  if (start.getNumResults() != getGrads().size())
    return emitOpError("takes ")
           << getGrads().size() << " gradients, but bucket " << getBucket()
           << " started " << start.getNumResults();
  for (auto [i, v] : llvm::enumerate(getGrads()))
    if (v != start.getResult(i))
      return emitOpError("operand #")
             << i << " is not result #" << i << " of bucket " << getBucket()
             << "'s 'tg.grad_allreduce_start'";
  return success();
}

LogicalResult DivideByWorldOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location>,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getX().getType());
  return success();
}
