//===- TGDropoutOps.cpp - dropout: inference ------------------------------===//
//
// Result types (the inference is also the verifier) of the ops of
// TGDropoutOps.td: dropout's step counter is an i32 scalar.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  InferError err{loc, "dropout"};
  auto x = tensorType(adaptor.getInput());
  auto step = tensorType(adaptor.getStep());
  if (!x || !step)
    return err("operands must be ranked tensors");
  if (step.getRank() != 0)
    return err("step must be an i32 scalar, got ", step);
  double p = adaptor.getPAttr() ? adaptor.getPAttr().getValueAsDouble() : 0.5;
  if (!(p >= 0.0 && p < 1.0))
    return err("p must be in [0, 1), got ", p);
  if (adaptor.getKeyAttr() && adaptor.getKeyAttr().getInt() < 0)
    return err("key must be >= 0, got ", adaptor.getKeyAttr().getInt());
  types.push_back(x);
  return success();
}

LogicalResult CounterNextOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, "counter_next"};
  auto c = tensorType(adaptor.getCounter());
  if (!c || c.getRank() != 0)
    return err("counter must be an i32 scalar");
  types.push_back(c);
  return success();
}
