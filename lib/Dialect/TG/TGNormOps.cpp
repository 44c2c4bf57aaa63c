//===- TGNormOps.cpp - the normalizations: inference ----------------------===//
//
// Result types (the inference is also the verifier) of the ops of
// TGNormOps.td: layer_norm and rms_norm's affine operands are `[D]` with D the
// last dim; group_norm's and batch_norm's per-channel operands are `[C]` with
// C dim 1 of the input.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// layer_norm / rms_norm: affine operands are `[D]` with D the last dim.
static LogicalResult inferNorm(StringRef name, std::optional<Location> loc,
                               Value input, ValueRange affine, FloatAttr eps,
                               SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x)
    return err("operand must be a ranked tensor");
  if (failed(checkLastDimNorm(err, x, eps)))
    return failure();
  int64_t d = x.getShape().back();
  static const char *const names[] = {"weight", "bias"};
  for (auto [i, v] : llvm::enumerate(affine)) {
    auto t = tensorType(v);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != d)
      return err(names[i], " ", v.getType(), " must be [", d,
                 "] to match the last dim of input ", x);
  }
  SmallVector<Value> vals{input};
  vals.append(affine.begin(), affine.end());
  return pushPromoted(err, vals, {x.getShape()}, types);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferNorm("layer_norm", loc, adaptor.getInput(),
                   {adaptor.getWeight(), adaptor.getBias()},
                   adaptor.getEpsAttr(), types);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferNorm("rms_norm", loc, adaptor.getInput(), {adaptor.getWeight()},
                   adaptor.getEpsAttr(), types);
}

static LogicalResult inferNormGrad(StringRef name, std::optional<Location> loc,
                                   Value grad, Value input, Value weight,
                                   FloatAttr eps, unsigned numWeightGrads,
                                   SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input), w = tensorType(weight);
  if (!x || !w || !tensorType(grad))
    return err("operands must be ranked tensors");
  if (failed(checkLastDimNorm(err, x, eps)))
    return failure();
  int64_t d = x.getShape().back();
  if (w.getRank() != 1 || w.getDimSize(0) != d)
    return err("weight ", w, " must be [", d,
               "] to match the last dim of input ", x);
  if (failed(checkGradShape(err, grad, x.getShape(), "forward")))
    return failure();
  FailureOr<Type> elt = promoteAll(err, {grad, input, weight});
  if (failed(elt))
    return failure();
  types.push_back(RankedTensorType::get(x.getShape(), *elt));
  for (unsigned i = 0; i < numWeightGrads; ++i)
    types.push_back(RankedTensorType::get({d}, *elt));
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferNormGrad("layer_norm_grad", loc, adaptor.getGrad(),
                       adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getEpsAttr(), 2, types);
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferNormGrad("rms_norm_grad", loc, adaptor.getGrad(),
                       adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getEpsAttr(), 1, types);
}

//===----------------------------------------------------------------------===//
// group_norm
//===----------------------------------------------------------------------===//

/// group_norm's operand checks: x [N, C, ...], weight [C], C divisible by
/// groups, eps positive.
static LogicalResult checkGroupNorm(const InferError &err, RankedTensorType x,
                             RankedTensorType w, IntegerAttr groupsAttr,
                             FloatAttr epsAttr) {
  if (x.getRank() < 2)
    return err("input must be [N, C, ...] (rank >= 2), got ", x);
  if (!groupsAttr)
    return err("requires attribute 'groups'");
  int64_t groups = groupsAttr.getInt(), c = x.getDimSize(1);
  if (groups < 1)
    return err("'groups' must be >= 1, got ", groups);
  if (c % groups != 0)
    return err("channels ", c, " of ", x, " are not divisible by groups ",
               groups);
  if (w.getRank() != 1 || w.getDimSize(0) != c)
    return err("weight ", w, " must be [", c, "] (the channels of ", x, ")");
  if (!epsAttr || !(epsAttr.getValueAsDouble() > 0.0))
    return err("'eps' must be positive");
  return success();
}

LogicalResult GroupNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "group_norm"};
  auto x = tensorType(adaptor.getInput()), w = tensorType(adaptor.getWeight()),
       b = tensorType(adaptor.getBias());
  if (!x || !w || !b)
    return err("operands must be ranked tensors");
  if (failed(checkGroupNorm(err, x, w, adaptor.getGroupsAttr(),
                            adaptor.getEpsAttr())))
    return failure();
  if (b.getShape() != w.getShape())
    return err("bias ", b, " must have the weight's shape ", w);
  return pushPromoted(
      err, {adaptor.getInput(), adaptor.getWeight(), adaptor.getBias()},
      {x.getShape()}, types);
}

LogicalResult GroupNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  InferError err{loc, "group_norm_grad"};
  auto g = tensorType(adaptor.getGrad()), x = tensorType(adaptor.getInput()),
       w = tensorType(adaptor.getWeight());
  if (!g || !x || !w)
    return err("operands must be ranked tensors");
  if (failed(checkGroupNorm(err, x, w, adaptor.getGroupsAttr(),
                            adaptor.getEpsAttr())))
    return failure();
  if (g.getShape() != x.getShape())
    return err("gradient ", g, " must have the input's shape ", x);
  if (failed(pushPromoted(err, {adaptor.getGrad(), adaptor.getInput()},
                          {x.getShape()}, types)))
    return failure();
  // The weight and bias gradients keep the weight's type.
  types.push_back(w);
  types.push_back(w);
  return success();
}

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

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
