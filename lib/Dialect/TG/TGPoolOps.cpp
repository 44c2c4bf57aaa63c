//===- TGPoolOps.cpp - pooling: inference ---------------------------------===//
//
// Result types (the inference is also the verifier) of the ops of
// TGPoolOps.td: max_pool2d, avg_pool2d and their gradient ops.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

static LogicalResult inferPool(StringRef name, std::optional<Location> loc,
                               Value input, DenseI64ArrayAttr kernel,
                               DenseI64ArrayAttr stride,
                               DenseI64ArrayAttr padding,
                               SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x)
    return err("operand must be a ranked tensor");
  auto shape = poolOutputShape(err, x, kernel, stride, padding);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferPool("max_pool2d", loc, adaptor.getInput(),
                   adaptor.getKernelAttr(), adaptor.getStrideAttr(),
                   adaptor.getPaddingAttr(), types);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferPool("avg_pool2d", loc, adaptor.getInput(),
                   adaptor.getKernelAttr(), adaptor.getStrideAttr(),
                   adaptor.getPaddingAttr(), types);
}

static LogicalResult inferPoolGrad(StringRef name, std::optional<Location> loc,
                                   Value grad, Value input,
                                   DenseI64ArrayAttr kernel,
                                   DenseI64ArrayAttr stride,
                                   DenseI64ArrayAttr padding,
                                   SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x || !tensorType(grad))
    return err("operands must be ranked tensors");
  auto out = poolOutputShape(err, x, kernel, stride, padding);
  if (failed(out))
    return failure();
  if (failed(checkGradShape(err, grad, *out, "pooling")))
    return failure();
  return pushPromoted(err, {grad, input}, {x.getShape()}, types);
}

LogicalResult MaxPool2dGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferPoolGrad("max_pool2d_grad", loc, adaptor.getGrad(),
                       adaptor.getInput(), adaptor.getKernelAttr(),
                       adaptor.getStrideAttr(), adaptor.getPaddingAttr(),
                       types);
}

LogicalResult AvgPool2dGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferPoolGrad("avg_pool2d_grad", loc, adaptor.getGrad(),
                       adaptor.getInput(), adaptor.getKernelAttr(),
                       adaptor.getStrideAttr(), adaptor.getPaddingAttr(),
                       types);
}
