//===- TGLossOps.cpp - the losses: inference ------------------------------===//
//
// Result types and attribute checks (the inference is also the verifier) of
// the ops of TGLossOps.td: every loss and its gradient op.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

namespace {

/// The loss' result shape for `reduction` of terms of `shape`.
FailureOr<SmallVector<int64_t>> lossShape(const InferError &err,
                                          ArrayRef<int64_t> shape,
                                          StringAttr reduction,
                                          bool batchmean) {
  if (!reduction)
    return err("requires attribute 'reduction'");
  StringRef r = reduction.getValue();
  if (r == "none")
    return SmallVector<int64_t>(shape);
  if (r == "mean" || r == "sum")
    return SmallVector<int64_t>();
  if (batchmean && r == "batchmean") {
    if (shape.empty())
      return err("reduction \"batchmean\" needs operands of rank >= 1");
    return SmallVector<int64_t>();
  }
  return err("'reduction' must be \"none\", \"mean\", \"sum\"",
             batchmean ? " or \"batchmean\"" : "", ", got \"", r, "\"");
}

/// A pair loss: two operands of one shape.
LogicalResult inferPairReduced(StringRef name, std::optional<Location> loc,
                               Value lhs, Value rhs, StringAttr reduction,
                               bool batchmean, SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  FailureOr<Type> elt = pairLossType(err, lhs, rhs);
  if (failed(elt))
    return failure();
  auto shape = lossShape(err, tensorType(lhs).getShape(), reduction, batchmean);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, *elt));
  return success();
}

LogicalResult inferPairReducedGrad(StringRef name, std::optional<Location> loc,
                                   Value grad, Value lhs, Value rhs,
                                   StringAttr reduction, bool batchmean,
                                   SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto g = tensorType(grad), a = tensorType(lhs), b = tensorType(rhs);
  if (!g || !a || !b)
    return err("operands must be ranked tensors");
  if (a.getShape() != b.getShape())
    return err("operands must have the same shape, got ", a, " and ", b);
  auto shape = lossShape(err, a.getShape(), reduction, batchmean);
  if (failed(shape))
    return failure();
  if (g.getShape() != ArrayRef<int64_t>(*shape))
    return err("the gradient of the loss must have the loss' shape ",
               shapeToString(*shape), ", got ", g);
  return pushPromoted(err, {grad, lhs, rhs}, {a.getShape(), b.getShape()},
                      types);
}

/// nll_loss' operands: logp [N, C], labels [N]; the loss' shape.
FailureOr<SmallVector<int64_t>> nllShape(const InferError &err,
                                         RankedTensorType x,
                                         RankedTensorType labels,
                                         StringAttr reduction) {
  if (x.getRank() != 2)
    return err("input must be 2-D [N, C] log-probabilities, got ", x);
  if (labels.getRank() != 1 || labels.getDimSize(0) != x.getDimSize(0))
    return err("labels ", labels, " must be [", x.getDimSize(0),
               "] (one class index per row of ", x, ")");
  return lossShape(err, {x.getDimSize(0)}, reduction, false);
}

} // namespace

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  InferError err{loc, "cross_entropy"};
  auto logits = tensorType(adaptor.getLogits());
  auto labels = tensorType(adaptor.getLabels());
  if (!logits || !labels)
    return err("operands must be ranked tensors");
  if (logits.getRank() != 2)
    return err("logits must be 2-D [N, C], got ", logits);
  if (labels.getRank() != 1 || labels.getDimSize(0) != logits.getDimSize(0))
    return err("labels ", labels, " must be [", logits.getDimSize(0),
               "] to match logits ", logits);
  types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferPairLoss("mse_loss", loc, adaptor.getLhs(), adaptor.getRhs(),
                       types);
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  InferError err{loc, "cross_entropy_grad"};
  auto logits = tensorType(adaptor.getLogits());
  auto labels = tensorType(adaptor.getLabels());
  if (!logits || !labels || !tensorType(adaptor.getGrad()))
    return err("operands must be ranked tensors");
  if (logits.getRank() != 2)
    return err("logits must be 2-D [N, C], got ", logits);
  if (labels.getRank() != 1 || labels.getDimSize(0) != logits.getDimSize(0))
    return err("labels ", labels, " must be [", logits.getDimSize(0),
               "] to match logits ", logits);
  if (failed(checkGradShape(err, adaptor.getGrad(), {}, "loss")))
    return failure();
  return pushPromoted(err, {adaptor.getGrad(), adaptor.getLogits()},
                      {logits.getShape()}, types);
}

LogicalResult MseLossGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, "mse_loss_grad"};
  auto a = tensorType(adaptor.getLhs()), b = tensorType(adaptor.getRhs());
  if (!a || !b || !tensorType(adaptor.getGrad()))
    return err("operands must be ranked tensors");
  if (a.getShape() != b.getShape())
    return err("operands must have the same shape, got ", a, " and ", b);
  if (failed(checkGradShape(err, adaptor.getGrad(), {}, "loss")))
    return failure();
  return pushPromoted(err,
                      {adaptor.getGrad(), adaptor.getLhs(), adaptor.getRhs()},
                      {a.getShape(), b.getShape()}, types);
}

LogicalResult ampc::tg::detail::inferPairLoss(StringRef name,
                                              std::optional<Location> loc,
                                              Value lhs, Value rhs,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  FailureOr<Type> elt = pairLossType(err, lhs, rhs);
  if (failed(elt))
    return failure();
  types.push_back(RankedTensorType::get({}, *elt));
  return success();
}

LogicalResult ampc::tg::detail::inferPairLossGrad(
    StringRef name, std::optional<Location> loc, Value grad, Value lhs,
    Value rhs, SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto g = tensorType(grad), a = tensorType(lhs), b = tensorType(rhs);
  if (!g || !a || !b)
    return err("operands must be ranked tensors");
  if (g.getRank() != 0)
    return err("the gradient of the loss must be a scalar, got ", g);
  if (a.getShape() != b.getShape())
    return err("operands must have the same shape, got ", a, " and ", b);
  return pushPromoted(err, {grad, lhs, rhs}, {a.getShape(), b.getShape()},
                      types);
}

LogicalResult L1LossOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferPairReduced("l1_loss", loc, adaptor.getLhs(), adaptor.getRhs(),
                          adaptor.getReductionAttr(), false, types);
}

LogicalResult L1LossGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferPairReducedGrad("l1_loss_grad", loc, adaptor.getGrad(),
                              adaptor.getLhs(), adaptor.getRhs(),
                              adaptor.getReductionAttr(), false, types);
}

static LogicalResult checkBeta(std::optional<Location> loc, StringRef name,
                               FloatAttr beta) {
  InferError err{loc, name};
  if (!beta)
    return err("requires attribute 'beta'");
  if (!(beta.getValueAsDouble() >= 0.0))
    return err("'beta' must not be negative, got ", beta.getValueAsDouble());
  return success();
}

LogicalResult SmoothL1LossOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  if (failed(checkBeta(loc, "smooth_l1_loss", adaptor.getBetaAttr())))
    return failure();
  return inferPairReduced("smooth_l1_loss", loc, adaptor.getLhs(),
                          adaptor.getRhs(), adaptor.getReductionAttr(), false,
                          types);
}

LogicalResult SmoothL1LossGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkBeta(loc, "smooth_l1_loss_grad", adaptor.getBetaAttr())))
    return failure();
  return inferPairReducedGrad("smooth_l1_loss_grad", loc, adaptor.getGrad(),
                              adaptor.getLhs(), adaptor.getRhs(),
                              adaptor.getReductionAttr(), false, types);
}

LogicalResult KlDivOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferPairReduced("kl_div", loc, adaptor.getLhs(), adaptor.getRhs(),
                          adaptor.getReductionAttr(), true, types);
}

LogicalResult KlDivGradOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferPairReducedGrad("kl_div_grad", loc, adaptor.getGrad(),
                              adaptor.getLhs(), adaptor.getRhs(),
                              adaptor.getReductionAttr(), true, types);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  InferError err{loc, "nll_loss"};
  auto x = tensorType(adaptor.getInput()), y = tensorType(adaptor.getLabels());
  if (!x || !y)
    return err("operands must be ranked tensors");
  auto shape = nllShape(err, x, y, adaptor.getReductionAttr());
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}

LogicalResult NllLossGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, "nll_loss_grad"};
  auto g = tensorType(adaptor.getGrad()), x = tensorType(adaptor.getInput()),
       y = tensorType(adaptor.getLabels());
  if (!g || !x || !y)
    return err("operands must be ranked tensors");
  auto shape = nllShape(err, x, y, adaptor.getReductionAttr());
  if (failed(shape))
    return failure();
  if (g.getShape() != ArrayRef<int64_t>(*shape))
    return err("the gradient of the loss must have the loss' shape ",
               shapeToString(*shape), ", got ", g);
  return pushPromoted(err, {adaptor.getGrad(), adaptor.getInput()},
                      {x.getShape()}, types);
}
