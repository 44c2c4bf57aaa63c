//===- TGReductionOps.cpp - the reductions: inference ---------------------===//
//
// Result types and attribute checks (the inference is also the verifier) of
// the ops of TGReductionOps.td: sum, mean, max, logsumexp, norm, cumsum,
// cosine_similarity and their backward ops.
//
//===----------------------------------------------------------------------===//

#include "InferSupport.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

namespace {

LogicalResult checkP(const InferError &err, FloatAttr p) {
  if (!p)
    return err("requires attribute 'p'");
  double v = p.getValueAsDouble();
  if (!(v >= 1.0))
    return err("'p' must be >= 1 or inf, got ", v);
  return success();
}

/// The backward op of a reduction: grad and result_value have the shape of
/// the reduction of input; the result has the input's shape.
LogicalResult inferReduceGrad(StringRef name, std::optional<Location> loc,
                              Value grad, Value input, Value result,
                              DenseI64ArrayAttr dims, bool keepdim,
                              SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input), y = tensorType(result), g = tensorType(grad);
  if (!x || !y || !g)
    return err("operands must be ranked tensors");
  auto shape = reduceShape(err, x, dims, keepdim);
  if (failed(shape))
    return failure();
  for (RankedTensorType t : {y, g})
    if (t.getShape() != ArrayRef<int64_t>(*shape))
      return err("forward result and gradient must have the shape ",
                 shapeToString(*shape), " of the reduction of ", x, ", got ",
                 t);
  return pushPromoted(err, {grad, input}, {x.getShape()}, types);
}

/// cosine_similarity's broadcast shape (of lhs's rank) and dim check.
FailureOr<SmallVector<int64_t>> cosineShape(const InferError &err,
                                            RankedTensorType a,
                                            RankedTensorType b,
                                            IntegerAttr dimAttr,
                                            FloatAttr epsAttr) {
  auto shape = broadcastPair(err, a, b);
  if (failed(shape))
    return failure();
  if (static_cast<int64_t>(shape->size()) != a.getRank())
    return err("the second operand ", b, " has a higher rank than the first ",
               a);
  if (a.getRank() == 0)
    return err("needs operands of rank >= 1, got ", a);
  if (!dimAttr)
    return err("requires attribute 'dim'");
  int64_t dim = dimAttr.getInt();
  if (dim < 0 || dim >= a.getRank())
    return err("dim ", dim, " is out of range for ", a, " (rank ",
               a.getRank(), ")");
  if (!epsAttr || !(epsAttr.getValueAsDouble() >= 0.0))
    return err("'eps' must not be negative");
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < a.getRank(); ++i)
    if (i != dim)
      out.push_back((*shape)[i]);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// sum, mean, max
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(StringRef name, std::optional<Location> loc,
                                 Value input, DenseI64ArrayAttr dimsAttr,
                                 bool keepdim, SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x)
    return err("operand must be a ranked tensor");
  auto shape = reduceShape(err, x, dimsAttr, keepdim);
  if (failed(shape))
    return failure();
  Type elt = x.getElementType();
  // torch.sum of an integer or bool tensor is i64.
  if (name == "sum" && elt.isInteger())
    elt = IntegerType::get(elt.getContext(), 64);
  types.push_back(RankedTensorType::get(*shape, elt));
  return success();
}

#define TG_REDUCE_INFER(OP, NAME)                                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferReduce(NAME, loc, adaptor.getInput(), adaptor.getDimsAttr(),   \
                       static_cast<bool>(adaptor.getKeepdimAttr()), types);    \
  }
TG_REDUCE_INFER(SumOp, "sum")
TG_REDUCE_INFER(MeanOp, "mean")
TG_REDUCE_INFER(MaxOp, "max")
#undef TG_REDUCE_INFER

LogicalResult MaxGradOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  InferError err{loc, "max_grad"};
  auto x = tensorType(adaptor.getInput()), y = tensorType(adaptor.getResultValue());
  if (!x || !y || !tensorType(adaptor.getGrad()))
    return err("operands must be ranked tensors");
  auto reduced = reduceShape(err, x, adaptor.getDimsAttr(),
                             static_cast<bool>(adaptor.getKeepdimAttr()),
                             /*sayRank=*/false);
  if (failed(reduced))
    return failure();
  if (y.getShape() != ArrayRef<int64_t>(*reduced))
    return err("forward result ", y, " must have the shape ",
               shapeToString(*reduced), " of max over dims ",
               shapeToString(adaptor.getDims()), " of ", x);
  if (failed(checkGradShape(err, adaptor.getGrad(), *reduced, "max")))
    return failure();
  return pushPromoted(
      err, {adaptor.getGrad(), adaptor.getInput(), adaptor.getResultValue()},
      {x.getShape()}, types);
}

//===----------------------------------------------------------------------===//
// logsumexp, norm
//===----------------------------------------------------------------------===//

LogicalResult LogsumexpOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "logsumexp"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  auto shape = reduceShape(err, x, adaptor.getDimsAttr(),
                           static_cast<bool>(adaptor.getKeepdimAttr()));
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}

LogicalResult NormOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  InferError err{loc, "norm"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  if (failed(checkP(err, adaptor.getPAttr())))
    return failure();
  auto shape = reduceShape(err, x, adaptor.getDimsAttr(),
                           static_cast<bool>(adaptor.getKeepdimAttr()));
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, x.getElementType()));
  return success();
}

LogicalResult LogsumexpGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferReduceGrad("logsumexp_grad", loc, adaptor.getGrad(),
                         adaptor.getInput(), adaptor.getResultValue(),
                         adaptor.getDimsAttr(),
                         static_cast<bool>(adaptor.getKeepdimAttr()), types);
}

LogicalResult NormGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  InferError err{loc, "norm_grad"};
  if (failed(checkP(err, adaptor.getPAttr())))
    return failure();
  return inferReduceGrad("norm_grad", loc, adaptor.getGrad(),
                         adaptor.getInput(), adaptor.getResultValue(),
                         adaptor.getDimsAttr(),
                         static_cast<bool>(adaptor.getKeepdimAttr()), types);
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

LogicalResult CumsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(inferAlongDim("cumsum", loc, adaptor.getInput(),
                           adaptor.getDimAttr(), types)))
    return failure();
  // torch.cumsum of an integer or bool tensor is i64.
  auto t = cast<RankedTensorType>(types.back());
  if (t.getElementType().isInteger())
    types.back() = RankedTensorType::get(
        t.getShape(), IntegerType::get(t.getContext(), 64));
  return success();
}

LogicalResult CumsumGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferAlongDim("cumsum_grad", loc, adaptor.getGrad(),
                       adaptor.getDimAttr(), types);
}

//===----------------------------------------------------------------------===//
// cosine_similarity
//===----------------------------------------------------------------------===//

LogicalResult CosineSimilarityOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  InferError err{loc, "cosine_similarity"};
  auto a = tensorType(adaptor.getLhs()), b = tensorType(adaptor.getRhs());
  if (!a || !b)
    return err("operands must be ranked tensors");
  auto shape =
      cosineShape(err, a, b, adaptor.getDimAttr(), adaptor.getEpsAttr());
  if (failed(shape))
    return failure();
  return pushPromoted(err, {adaptor.getLhs(), adaptor.getRhs()}, {*shape},
                      types);
}

LogicalResult CosineSimilarityGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  InferError err{loc, "cosine_similarity_grad"};
  auto g = tensorType(adaptor.getGrad()), a = tensorType(adaptor.getLhs()),
       b = tensorType(adaptor.getRhs());
  if (!g || !a || !b)
    return err("operands must be ranked tensors");
  auto shape =
      cosineShape(err, a, b, adaptor.getDimAttr(), adaptor.getEpsAttr());
  if (failed(shape))
    return failure();
  if (g.getShape() != ArrayRef<int64_t>(*shape))
    return err("gradient ", g, " must have the result's shape ",
               shapeToString(*shape));
  return pushPromoted(err,
                      {adaptor.getGrad(), adaptor.getLhs(), adaptor.getRhs()},
                      {a.getShape(), b.getShape()}, types);
}
