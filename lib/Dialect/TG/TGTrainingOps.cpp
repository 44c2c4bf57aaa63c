//===- TGTrainingOps.cpp - backward, optimizer and scaler ops -------------===//
//
// Type inference (which is also verification) of the ops in TGTrainingOps.td.
// Backward ops check that the incoming gradient has exactly the shape the
// forward op would produce (checkGradShape, InferSupport.h), so a malformed
// backward graph is a located error rather than a runtime shape mismatch.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"

#include "InferSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace ampc::tg;
using namespace ampc::tg::detail;

//===----------------------------------------------------------------------===//
// BroadcastToOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastToOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, "broadcast_to"};
  auto x = tensorType(adaptor.getInput());
  if (!x)
    return err("operand must be a ranked tensor");
  if (!adaptor.getShapeAttr())
    return err("requires attribute 'shape'");
  ArrayRef<int64_t> shape = adaptor.getShape();
  for (int64_t d : shape)
    if (d < 1)
      return err("shape ", shapeToString(shape), " has invalid size ", d);
  auto joined = broadcastShapes(x.getShape(), shape);
  if (!joined || ArrayRef<int64_t>(*joined) != shape)
    return err("cannot broadcast ", x, " to ", shapeToString(shape));
  types.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Elementwise backward ops
//===----------------------------------------------------------------------===//

LogicalResult ampc::tg::detail::inferUnaryGrad(StringRef name,
                                               std::optional<Location> loc,
                                               Value grad, Value input,
                                               SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto x = tensorType(input);
  if (!x || !tensorType(grad))
    return err("operands must be ranked tensors");
  if (failed(checkGradShape(err, grad, x.getShape(), "forward")))
    return failure();
  return pushPromoted(err, {grad, input}, {x.getShape()}, types);
}

// The inference of every TG_UnaryGradOp is generated with it (TGOps.td).

LogicalResult GeluGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (failed(checkGeluApproximate(InferError{loc, "gelu_grad"},
                                  adaptor.getApproximateAttr())))
    return failure();
  return inferUnaryGrad("gelu_grad", loc, adaptor.getGrad(),
                        adaptor.getInput(), types);
}

static LogicalResult inferBinaryGrad(StringRef name,
                                     std::optional<Location> loc, Value grad,
                                     Value lhs, Value rhs,
                                     SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto a = tensorType(lhs), b = tensorType(rhs);
  if (!a || !b || !tensorType(grad))
    return err("operands must be ranked tensors");
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (!shape)
    return err("operands ", a, " and ", b, " do not broadcast");
  if (failed(checkGradShape(err, grad, *shape, "forward")))
    return failure();
  return pushPromoted(err, {grad, lhs, rhs}, {a.getShape(), b.getShape()},
                      types);
}

#define TG_BINARY_GRAD_INFER(OP, NAME)                                         \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &types) {           \
    return inferBinaryGrad(NAME, loc, adaptor.getGrad(), adaptor.getLhs(),     \
                           adaptor.getRhs(), types);                           \
  }
TG_BINARY_GRAD_INFER(MaximumGradOp, "maximum_grad")
TG_BINARY_GRAD_INFER(MinimumGradOp, "minimum_grad")
TG_BINARY_GRAD_INFER(PowGradOp, "pow_grad")
#undef TG_BINARY_GRAD_INFER

//===----------------------------------------------------------------------===//
// Softmax and embedding backward ops
//===----------------------------------------------------------------------===//

static LogicalResult inferSoftmaxGrad(StringRef name,
                                      std::optional<Location> loc, Value grad,
                                      Value output, IntegerAttr dimAttr,
                                      SmallVectorImpl<Type> &types) {
  InferError err{loc, name};
  auto y = tensorType(output);
  if (!y || !tensorType(grad))
    return err("operands must be ranked tensors");
  if (failed(checkDim(err, y, dimAttr, /*sayRank=*/false)) ||
      failed(checkGradShape(err, grad, y.getShape(), "forward")))
    return failure();
  return pushPromoted(err, {grad, output}, {y.getShape()}, types);
}

LogicalResult SoftmaxGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferSoftmaxGrad("softmax_grad", loc, adaptor.getGrad(),
                          adaptor.getOutput(), adaptor.getDimAttr(), types);
}

LogicalResult LogSoftmaxGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferSoftmaxGrad("log_softmax_grad", loc, adaptor.getGrad(),
                          adaptor.getOutput(), adaptor.getDimAttr(), types);
}

LogicalResult EmbeddingGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  InferError err{loc, "embedding_grad"};
  auto g = tensorType(adaptor.getGrad()), ids = tensorType(adaptor.getIds());
  if (!g || !ids)
    return err("operands must be ranked tensors");
  if (!adaptor.getNumEmbeddingsAttr())
    return err("requires attribute 'num_embeddings'");
  int64_t rows = adaptor.getNumEmbeddingsAttr().getInt();
  if (rows < 1)
    return err("num_embeddings must be >= 1, got ", rows);
  if (g.getRank() != ids.getRank() + 1 ||
      g.getShape().drop_back() != ids.getShape())
    return err("gradient ", g, " must be the ids' shape ",
               shapeToString(ids.getShape()), " plus the embedding dim");
  types.push_back(
      RankedTensorType::get({rows, g.getShape().back()}, g.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers and clipping
//===----------------------------------------------------------------------===//

/// `state` holds one f32 tensor per parameter (f64 for an f64 one), of the
/// parameter's shape.
static LogicalResult checkPerParam(const InferError &err, StringRef what,
                                   ValueRange params, ValueRange values,
                                   bool f32Only) {
  if (values.size() != params.size())
    return err("needs one ", what, " per parameter: ", params.size(),
               " parameters but ", values.size(), " ", what, "s");
  for (auto [i, p, v] : llvm::enumerate(params, values)) {
    auto pt = tensorType(p), vt = tensorType(v);
    if (!pt || !vt)
      return err("operands must be ranked tensors");
    if (pt.getShape() != vt.getShape())
      return err(what, " #", i, " ", vt, " does not have the shape of parameter ",
                 pt);
    // Optimizer state is f32, or 16-bit with --optimizer-state-dtype; an
    // f64 parameter's is f64.
    Type e = vt.getElementType();
    if (e.isF64() && pt.getElementType().isF64())
      continue;
    if (f32Only && !e.isF32() && !e.isBF16() && !e.isF16())
      return err(what, " #", i, " must be f32, bf16 or f16 (f64 for an f64 "
                 "parameter), got ", vt);
  }
  return success();
}

LogicalResult ClipGradNormOp::inferReturnTypes(MLIRContext *ctx,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  InferError err{loc, "clip_grad_norm"};
  if (adaptor.getGrads().empty())
    return err("needs at least one gradient");
  FloatAttr maxNorm = adaptor.getMaxNormAttr();
  if (!maxNorm)
    return err("requires attribute 'max_norm'");
  if (!(maxNorm.getValueAsDouble() > 0.0) ||
      !std::isfinite(maxNorm.getValueAsDouble()))
    return err("max_norm must be finite and > 0, got ",
               maxNorm.getValueAsDouble());
  for (Value g : adaptor.getGrads())
    types.push_back(g.getType());
  types.push_back(RankedTensorType::get({}, Float32Type::get(ctx)));
  return success();
}

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  InferError err{loc, "sgd_update"};
  ValueRange params = adaptor.getParams();
  if (params.empty())
    return err("needs at least one parameter");
  if (failed(checkPerParam(err, "gradient", params, adaptor.getGrads(),
                           /*f32Only=*/false)))
    return failure();
  ValueRange buffers = adaptor.getMomentumBuffers();
  if (!buffers.empty() &&
      failed(checkPerParam(err, "momentum buffer", params, buffers,
                           /*f32Only=*/true)))
    return failure();
  for (Value p : params)
    types.push_back(p.getType());
  for (Value m : buffers)
    types.push_back(m.getType());
  for (Value m : adaptor.getModels())
    types.push_back(m.getType());
  for (Value c : adaptor.getComps())
    types.push_back(c.getType());
  if (Value counter = adaptor.getCounter())
    types.push_back(counter.getType());
  return success();
}

LogicalResult AdamWUpdateOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  InferError err{loc, "adamw_update"};
  ValueRange params = adaptor.getParams();
  if (params.empty())
    return err("needs at least one parameter");
  if (failed(checkPerParam(err, "gradient", params, adaptor.getGrads(),
                           /*f32Only=*/false)) ||
      failed(checkPerParam(err, "exp_avg", params, adaptor.getExpAvgs(),
                           /*f32Only=*/true)) ||
      failed(checkPerParam(err, "exp_avg_sq", params, adaptor.getExpAvgSqs(),
                           /*f32Only=*/true)))
    return failure();
  for (Value v : params)
    types.push_back(v.getType());
  for (Value v : adaptor.getExpAvgs())
    types.push_back(v.getType());
  for (Value v : adaptor.getExpAvgSqs())
    types.push_back(v.getType());
  for (Value v : adaptor.getModels())
    types.push_back(v.getType());
  for (Value v : adaptor.getComps())
    types.push_back(v.getType());
  types.push_back(adaptor.getStep().getType());
  return success();
}

/// Updates of 16-bit params: `low_update` is a known mode, and `comps`
/// (only under "kahan") are the compensation buffers of the 16-bit params
/// `comp_params` names, each of its param's type.
static LogicalResult verifyLowUpdate(Operation *op, ValueRange params,
                                     ValueRange comps,
                                     std::optional<ArrayRef<int64_t>> index,
                                     std::optional<StringRef> mode) {
  StringRef m = mode.value_or("nearest");
  if (m != "nearest" && m != "stochastic" && m != "kahan")
    return op->emitOpError("low_update must be nearest, stochastic or kahan, "
                           "got '")
           << m << "'";
  size_t given = index ? index->size() : 0;
  if (given != comps.size())
    return op->emitOpError("has ")
           << comps.size() << " compensation buffers but 'comp_params' names "
           << given;
  if (!comps.empty() && m != "kahan")
    return op->emitOpError("compensation buffers need low_update = kahan");
  int64_t previous = -1;
  for (auto [k, i] : llvm::enumerate(index.value_or(ArrayRef<int64_t>()))) {
    if (i <= previous || i >= static_cast<int64_t>(params.size()))
      return op->emitOpError("'comp_params' must be increasing indices below ")
             << params.size() << ", got " << i;
    previous = i;
    Type pt = params[i].getType();
    if (pt != comps[k].getType() ||
        cast<RankedTensorType>(pt).getElementType().isF32())
      return op->emitOpError("compensation buffer #")
             << k << " must have its 16-bit parameter's type " << pt
             << ", got " << comps[k].getType();
  }
  return success();
}

static LogicalResult checkNonNegative(Operation *op, StringRef name,
                                      double v) {
  if (!(v >= 0.0) || !std::isfinite(v))
    return op->emitOpError(name) << " must be finite and >= 0, got " << v;
  return success();
}

/// Opt level O2's model copies: `model_params` names, in increasing order,
/// the parameter each low copy in `models` belongs to (same shape).
static LogicalResult verifyModelCopies(Operation *op, ValueRange params,
                                       ValueRange models,
                                       std::optional<ArrayRef<int64_t>> index) {
  size_t given = index ? index->size() : 0;
  if (given != models.size())
    return op->emitOpError("has ")
           << models.size() << " model copies but 'model_params' names "
           << given;
  int64_t previous = -1;
  for (auto [k, i] : llvm::enumerate(index.value_or(ArrayRef<int64_t>()))) {
    if (i <= previous || i >= static_cast<int64_t>(params.size()))
      return op->emitOpError("'model_params' must be increasing indices "
                             "below ")
             << params.size() << ", got " << i;
    previous = i;
    auto p = cast<RankedTensorType>(params[i].getType());
    auto m = cast<RankedTensorType>(models[k].getType());
    if (p.getShape() != m.getShape())
      return op->emitOpError("model copy #")
             << k << " has shape of " << m << " but its parameter is " << p;
  }
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  if (failed(checkNonNegative(*this, "lr", getLr().convertToDouble())) ||
      failed(checkNonNegative(*this, "momentum", momentum)) ||
      failed(checkNonNegative(*this, "weight_decay",
                              getWeightDecay().convertToDouble())))
    return failure();
  if (getNesterov() && momentum <= 0.0)
    return emitOpError("nesterov needs momentum > 0");
  size_t buffers = getMomentumBuffers().size();
  if (momentum == 0.0 && buffers != 0)
    return emitOpError("momentum 0 keeps no momentum buffers, got ")
           << buffers;
  if (momentum != 0.0 && buffers != getParams().size())
    return emitOpError("momentum ")
           << momentum << " needs one momentum buffer per parameter: "
           << getParams().size() << " parameters but " << buffers
           << " buffers";
  if (failed(verifyLowUpdate(*this, getParams(), getComps(), getCompParams(),
                             getLowUpdate())))
    return failure();
  return verifyModelCopies(*this, getParams(), getModels(), getModelParams());
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(checkNonNegative(*this, "lr", getLr().convertToDouble())) ||
      failed(checkNonNegative(*this, "eps", getEps().convertToDouble())) ||
      failed(checkNonNegative(*this, "weight_decay",
                              getWeightDecay().convertToDouble())))
    return failure();
  for (auto [name, value] : {std::pair<StringRef, double>{
                                 "beta1", getBeta1().convertToDouble()},
                             {"beta2", getBeta2().convertToDouble()}})
    if (!(value >= 0.0 && value < 1.0))
      return emitOpError(name) << " must be in [0, 1), got " << value;
  for (auto [i, m, v] : llvm::enumerate(getExpAvgs(), getExpAvgSqs()))
    if (cast<RankedTensorType>(m.getType()).getElementType() !=
        cast<RankedTensorType>(v.getType()).getElementType())
      return emitOpError("exp_avg #")
             << i << " and exp_avg_sq #" << i << " must have one dtype";
  if (failed(verifyLowUpdate(*this, getParams(), getComps(), getCompParams(),
                             getLowUpdate())))
    return failure();
  return verifyModelCopies(*this, getParams(), getModels(), getModelParams());
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

LogicalResult CheckFiniteAndUnscaleOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (adaptor.getGrads().empty())
    return emitOptionalError(
        loc, "'tg.check_finite_and_unscale' needs at least one gradient");
  for (Value g : adaptor.getGrads())
    types.push_back(g.getType());
  types.push_back(RankedTensorType::get({}, Float32Type::get(ctx)));
  return success();
}

LogicalResult UpdateScaleOp::verify() {
  double growth = getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  if (!(growth > 1.0) || !std::isfinite(growth))
    return emitOpError("growth_factor must be finite and > 1, got ") << growth;
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("backoff_factor must be in (0, 1), got ") << backoff;
  if (getGrowthInterval() < 1 || getGrowthInterval() > INT32_MAX)
    return emitOpError("growth_interval must be in [1, 2^31), got ")
           << getGrowthInterval();
  if (getHysteresis() < 1 || getHysteresis() > INT32_MAX)
    return emitOpError("hysteresis must be in [1, 2^31), got ")
           << getHysteresis();
  std::optional<double> lo, hi;
  if (auto attr = getMinScaleAttr())
    lo = attr.getValueAsDouble();
  if (auto attr = getMaxScaleAttr())
    hi = attr.getValueAsDouble();
  if (lo && !(*lo > 0.0 && std::isfinite(*lo)))
    return emitOpError("min_scale must be finite and > 0, got ") << *lo;
  if (hi && !(*hi > 0.0 && std::isfinite(*hi)))
    return emitOpError("max_scale must be finite and > 0, got ") << *hi;
  if (lo && hi && *lo > *hi)
    return emitOpError("min_scale ")
           << *lo << " exceeds max_scale " << *hi;
  return success();
}
