//===- TGNormOps.cpp - inference of batch norm and dropout ---------===//
//
// Type inference (which is also verification) of the ops in
// TGNormOps.td: per-channel operands of batch norm are `[C]` with C
// dim 1 of the input; dropout's step counter is an i32 scalar.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

/// Checks the input (rank >= 2) and the `[C]` operands named `names`.
static LogicalResult checkChannels(const InferError &err, Value input,
                                   ArrayRef<std::pair<const char *, Value>> perChannel) {
  auto x = tensorType(input);
  if (!x)
    return err("operands must be ranked tensors");
  if (x.getRank() < 2)
    return err("input must be (N, C, ...) with rank >= 2, got ", x);
  int64_t c = x.getDimSize(1);
  for (auto [name, v] : perChannel) {
    auto t = tensorType(v);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != c)
      return err(name, " ", v.getType(), " must be [", c,
                 "] to match dim 1 (channels) of input ", x);
  }
  return success();
}

static LogicalResult checkEps(const InferError &err, FloatAttr eps) {
  if (eps && !(eps.getValueAsDouble() >= 0.0))
    return err("eps must be >= 0, got ", eps.getValueAsDouble());
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "batch_norm"};
  if (failed(checkChannels(err, adaptor.getInput(),
                           {{"weight", adaptor.getWeight()},
                            {"bias", adaptor.getBias()},
                            {"running_mean", adaptor.getRunningMean()},
                            {"running_var", adaptor.getRunningVar()}})) ||
      failed(checkEps(err, adaptor.getEpsAttr())))
    return failure();
  FailureOr<Type> elt = promoteAll(
      err, {adaptor.getInput(), adaptor.getWeight(), adaptor.getBias()});
  if (failed(elt))
    return failure();
  types.push_back(
      RankedTensorType::get(tensorType(adaptor.getInput()).getShape(), *elt));
  return success();
}

LogicalResult BatchNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  InferError err{loc, "batch_norm_grad"};
  if (failed(checkChannels(err, adaptor.getInput(),
                           {{"weight", adaptor.getWeight()},
                            {"running_mean", adaptor.getRunningMean()},
                            {"running_var", adaptor.getRunningVar()}})) ||
      failed(checkEps(err, adaptor.getEpsAttr())))
    return failure();
  auto x = tensorType(adaptor.getInput());
  auto g = tensorType(adaptor.getGrad());
  if (!g || g.getShape() != x.getShape())
    return err("gradient ", adaptor.getGrad().getType(),
               " must have the input's shape ", x);
  FailureOr<Type> elt = promoteAll(
      err, {adaptor.getGrad(), adaptor.getInput(), adaptor.getWeight()});
  if (failed(elt))
    return failure();
  types.push_back(RankedTensorType::get(x.getShape(), *elt));
  types.push_back(RankedTensorType::get({x.getDimSize(1)}, *elt));
  types.push_back(RankedTensorType::get({x.getDimSize(1)}, *elt));
  return success();
}

LogicalResult BatchNormUpdateOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  InferError err{loc, "batch_norm_update"};
  if (failed(checkChannels(err, adaptor.getInput(),
                           {{"running_mean", adaptor.getRunningMean()},
                            {"running_var", adaptor.getRunningVar()}})))
    return failure();
  auto x = tensorType(adaptor.getInput());
  int64_t m = x.getNumElements() / std::max<int64_t>(x.getDimSize(1), 1);
  if (m < 2)
    return err("needs more than one value per channel to update the running "
               "variance, got input ",
               x);
  types.push_back(adaptor.getRunningMean().getType());
  types.push_back(adaptor.getRunningVar().getType());
  return success();
}

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
