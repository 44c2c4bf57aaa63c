//===- NNOps.cpp - ONNX neural-network ops ----------------------*- C++ -*-===//
//
// The converters of ONNX's neural-network ops: convolutions, Gemm and MatMul,
// softmax, pooling, reductions, ArgMax and CumSum, the normalizations and
// Dropout.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

void Emitter::addNNConverters(ConverterTable &t) {
  t["Conv"] = [](Emitter &e) { return e.convertConv(/*transposed=*/false); };
  t["ConvTranspose"] = [](Emitter &e) {
    return e.convertConv(/*transposed=*/true);
  };
  t["Gemm"] = [](Emitter &e) { return e.convertGemm(); };
  t["MatMul"] = [](Emitter &e) { return e.convertMatMul(); };
  for (StringRef op : {"Softmax", "LogSoftmax"})
    t[op] = [](Emitter &e) { return e.convertSoftmax(); };
  for (StringRef op : {"GlobalAveragePool", "GlobalMaxPool"})
    t[op] = [](Emitter &e) { return e.convertGlobalPool(); };
  t["MaxPool"] = [](Emitter &e) { return e.convertPool(/*isMax=*/true); };
  t["AveragePool"] = [](Emitter &e) { return e.convertPool(/*isMax=*/false); };
  t["ReduceMean"] = [](Emitter &e) { return e.convertReduce("tg.mean"); };
  for (StringRef op :
       {"ReduceSum", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"})
    t[op] = [](Emitter &e) { return e.convertReduce("tg.sum"); };
  t["ReduceMax"] = [](Emitter &e) { return e.convertReduce("tg.max"); };
  t["ReduceMin"] = [](Emitter &e) {
    return e.convertReduce("tg.max", /*negate=*/true);
  };
  t["ReduceLogSumExp"] = [](Emitter &e) {
    return e.convertReduce("tg.logsumexp");
  };
  t["ReduceProd"] = [](Emitter &e) { return e.convertReduceProd(); };
  t["ArgMax"] = [](Emitter &e) { return e.convertArgMax(); };
  t["CumSum"] = [](Emitter &e) { return e.convertCumSum(); };
  t["InstanceNormalization"] = [](Emitter &e) {
    return e.convertInstanceNorm();
  };
  t["BatchNormalization"] = [](Emitter &e) { return e.convertBatchNorm(); };
  t["Dropout"] = [](Emitter &e) { return e.convertDropout(); };
  t["LayerNormalization"] = [](Emitter &e) { return e.convertLayerNorm(); };
}

LogicalResult Emitter::convertConv(bool transposed) {
  if (failed(checkAttrs({"dilations", "group", "kernel_shape", "pads",
                         "strides", "auto_pad", "output_padding"})))
    return failure();
  if (!transposed && attr("output_padding"))
    return checkAttrs(
        {"dilations", "group", "kernel_shape", "pads", "strides", "auto_pad"});
  if (failed(checkAutoPad()))
    return failure();
  Value x = value(0), w = value(1);
  if (!x || !w)
    return failure();
  if (typeOf(x).getRank() != 4) {
    error() << "ampc supports 2-D convolutions (rank-4 input), found rank "
            << typeOf(x).getRank();
    return failure();
  }
  auto stride = pair("strides", 1), dilation = pair("dilations", 1);
  auto pads = pads2d();
  if (!stride || !dilation || !pads)
    return failure();
  SmallVector<Value> ops{x, w};
  if (hasInput(2)) {
    Value bias = value(2);
    if (!bias)
      return failure();
    ops.push_back(bias);
  }
  SmallVector<NamedAttribute> attrs{
      named("stride", ints(*stride)), named("padding", ints(*pads)),
      named("dilation", ints(*dilation)),
      named("groups", b.getI64IntegerAttr(attrInt("group", 1)))};
  if (transposed) {
    auto outPad = pair("output_padding", 0);
    if (!outPad)
      return failure();
    attrs.push_back(named("output_padding", ints(*outPad)));
    return setOutput(0, build("tg.conv_transpose2d", ops, attrs));
  }
  return setOutput(0, build<tg::Conv2dOp>(ops, attrs));
}

LogicalResult Emitter::convertGemm() {
  if (failed(checkAttrs({"alpha", "beta", "transA", "transB"})))
    return failure();
  Value a = value(0), w = value(1);
  if (!a || !w)
    return failure();
  double alpha = attrFloat("alpha", 1.0), beta = attrFloat("beta", 1.0);
  bool transA = attrInt("transA", 0) != 0, transB = attrInt("transB", 0) != 0;
  if (typeOf(a).getRank() != 2 || typeOf(w).getRank() != 2) {
    error() << "A and B must be 2-D";
    return failure();
  }
  if (transA)
    a = build<tg::TransposeOp>({a}, {named("perm", ints({1, 0}))});
  Value c = hasInput(2) ? value(2) : Value();
  if (hasInput(2) && !c)
    return failure();
  Value y;
  // x·wᵀ + b with a bias of one value per output column is F.linear (its
  // kernel adds the bias in the GEMM epilogue); a C that broadcasts
  // otherwise (f32[1], [M, 1], [M, N], a scalar) is added after the matmul.
  bool biasPerColumn = c && typeOf(c).getRank() == 1 &&
                       typeOf(c).getDimSize(0) == typeOf(w).getDimSize(0);
  if (transB && alpha == 1.0 && (!c || (beta == 1.0 && biasPerColumn))) {
    SmallVector<Value> ops{a, w};
    if (c)
      ops.push_back(c);
    return setOutput(0, build<tg::LinearOp>(ops));
  }
  if (transB)
    w = build<tg::TransposeOp>({w}, {named("perm", ints({1, 0}))});
  y = build<tg::MatmulOp>({a, w});
  if (y && alpha != 1.0)
    y = build<tg::MulOp>({y, scalar(alpha, y)});
  if (y && c) {
    if (beta != 1.0)
      c = build<tg::MulOp>({c, scalar(beta, c)});
    y = build<tg::AddOp>({y, c});
  }
  return setOutput(0, y);
}

/// MatMul: tg.matmul (NumPy's batching and 1-D rules).
LogicalResult Emitter::convertMatMul() {
  if (failed(checkAttrs({})))
    return failure();
  return setOutput(0, build<tg::MatmulOp>({value(0), value(1)}));
}

/// Softmax and LogSoftmax along `axis`.
LogicalResult Emitter::convertSoftmax() {
  StringRef op = node->op_type();
  if (failed(checkAttrs({"axis"})))
    return failure();
  Value x;
  auto a = inputAndAxis(-1, x);
  if (!a)
    return failure();
  return setOutput(0, build(op == "Softmax" ? "tg.softmax" : "tg.log_softmax",
                            {x}, {named("dim", b.getI64IntegerAttr(*a))}));
}

/// GlobalAveragePool and GlobalMaxPool: a mean or max over the spatial
/// dims, kept.
LogicalResult Emitter::convertGlobalPool() {
  StringRef op = node->op_type();
  if (failed(checkAttrs({})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  int64_t rank = typeOf(x).getRank();
  if (rank < 3) {
    error() << "needs an N, C, spatial... input, found rank " << rank;
    return failure();
  }
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  return setOutput(
      0, build(op == "GlobalAveragePool" ? "tg.mean" : "tg.max", {x},
               {named("dims", ints(dims)), named("keepdim", b.getUnitAttr())}));
}

LogicalResult Emitter::convertPool(bool isMax) {
  if (failed(checkAttrs({"kernel_shape", "strides", "pads", "auto_pad",
                         "ceil_mode", isMax ? "dilations" : "count_include_pad",
                         isMax ? "storage_order" : "ceil_mode"})))
    return failure();
  if (failed(checkAutoPad()))
    return failure();
  bool ceilMode = attrInt("ceil_mode", 0) != 0;
  if (isMax) {
    if (attrInt("storage_order", 0) != 0)
      return unsupportedValue("storage_order", "1", "0");
    auto dil = pair("dilations", 1);
    if (!dil)
      return failure();
    if ((*dil)[0] != 1 || (*dil)[1] != 1)
      return unsupportedValue("dilations", "other than [1, 1]", "[1, 1]");
    if (failed(onlyFirstOutput()))
      return failure();
  }
  auto kernel = attrInts("kernel_shape");
  if (!kernel || kernel->size() != 2) {
    error() << "needs a 2-D 'kernel_shape'";
    return failure();
  }
  auto stride = pair("strides", 1);
  auto pads = pads2d();
  if (!stride || !pads)
    return failure();
  // ceil_mode rounds the output size up; it is the floor mode's result when
  // the windows tile the padded input exactly. Otherwise a MaxPool pads the
  // input itself with -inf (the pads, and after them what the last window
  // reaches past the end) and pools it unpadded; an AveragePool's divisor
  // of a clipped window is not mapped.
  Value input;
  if (ceilMode) {
    input = value(0);
    if (!input)
      return failure();
    auto shape = typeOf(input).getShape();
    for (int d = 0; d < 2; ++d)
      if ((*stride)[d] < 1 || (*kernel)[d] < 1) {
        error() << "'kernel_shape' and 'strides' must be 1 or more";
        return failure();
      }
    bool tiles = true;
    for (int d = 0; d < 2 && shape.size() == 4; ++d)
      if ((shape[2 + d] + 2 * (*pads)[d] - (*kernel)[d]) % (*stride)[d] != 0)
        tiles = false;
    if (!tiles && !isMax)
      return unsupportedValue("ceil_mode", "1",
                              "0, or 1 where the windows tile the input "
                              "exactly");
    if (!tiles) {
      int64_t outs[2];
      for (int d = 0; d < 2; ++d) {
        int64_t size = shape[2 + d], k = (*kernel)[d], st = (*stride)[d],
                p = (*pads)[d];
        if (size + 2 * p < k) {
          error() << "the window " << k << " is larger than the padded dim "
                  << size + 2 * p;
          return failure();
        }
        // ONNX's (and PyTorch's) ceil-mode output size: rounded up, less
        // a last window that would start in the end padding.
        int64_t out = (size + 2 * p - k + st - 1) / st + 1;
        if ((out - 1) * st >= size + p)
          --out;
        outs[d] = out;
        // The padded dim the last window ends in (unpadded pooling floors
        // to `out` windows on it).
        int64_t after = std::max<int64_t>(0, (out - 1) * st + k - size - p);
        input = padWith(input, 2 + d, p, after,
                        -std::numeric_limits<double>::infinity());
        if (!input)
          return failure();
      }
      Value y =
          build("tg.max_pool2d", {input},
                {named("kernel", ints(*kernel)), named("stride", ints(*stride)),
                 named("padding", ints({0, 0}))});
      if (y && (typeOf(y).getDimSize(2) != outs[0] ||
                typeOf(y).getDimSize(3) != outs[1]))
        return unsupportedValue("ceil_mode",
                                "1 with these strides and "
                                "kernel",
                                "ceil mode where the kernel is at least the "
                                "stride");
      return setOutput(0, y);
    }
  }
  Value y =
      build(isMax ? "tg.max_pool2d" : "tg.avg_pool2d", {value(0)},
            {named("kernel", ints(*kernel)), named("stride", ints(*stride)),
             named("padding", ints(*pads))});
  if (!y || isMax || (!(*pads)[0] && !(*pads)[1]) ||
      attrInt("count_include_pad", 0) != 0)
    return setOutput(0, y);
  // count_include_pad 0: tg.avg_pool2d divides by the window's size, pads
  // included; a window of c elements inside the input is scaled by
  // size / c (a constant of the output's spatial shape).
  auto shape = typeOf(value(0)).getShape();
  auto outShape = typeOf(y).getShape();
  HostTensor scale;
  scale.elt = typeOf(y).getElementType();
  scale.shape = {1, 1, outShape[2], outShape[3]};
  scale.resize(scale.numel());
  auto inside = [&](int d, int64_t o) {
    int64_t lo = o * (*stride)[d] - (*pads)[d];
    int64_t hi = lo + (*kernel)[d];
    return std::min<int64_t>(hi, shape[2 + d]) - std::max<int64_t>(lo, 0);
  };
  for (int d = 0; d < 2; ++d)
    if ((*pads)[d] >= (*kernel)[d])
      return unsupportedValue("pads", Twine((*pads)[d]),
                              "pads smaller than the kernel with "
                              "count_include_pad 0");
  for (int64_t i = 0; i < outShape[2]; ++i)
    for (int64_t j = 0; j < outShape[3]; ++j)
      scale.floats[i * outShape[3] + j] = double((*kernel)[0] * (*kernel)[1]) /
                                          double(inside(0, i) * inside(1, j));
  Value factor =
      tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(scale)));
  return setOutput(0, build<tg::MulOp>({y, factor}));
}

LogicalResult Emitter::convertReduce(StringRef opName, bool negate) {
  StringRef op = node->op_type();
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  bool axesInput = op == "ReduceSum";
  if (failed(checkAttrs(
          axesInput ? ArrayRef<StringRef>{"keepdims", "noop_with_empty_axes"}
                    : ArrayRef<StringRef>{"keepdims", "axes"})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> dims;
  std::optional<SmallVector<int64_t>> axes =
      axesInput ? axesInputOrAttr(1) : attrInts("axes");
  if (axesInput && !axes)
    return failure();
  if (!axes || axes->empty()) {
    if (axesInput && attrInt("noop_with_empty_axes", 0))
      return setOutput(0, x);
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  } else {
    for (int64_t a : *axes) {
      auto r = axis(a, rank);
      if (!r)
        return failure();
      dims.push_back(*r);
    }
    llvm::sort(dims);
  }
  SmallVector<NamedAttribute> attrs{named("dims", ints(dims))};
  if (attrInt("keepdims", 1))
    attrs.push_back(named("keepdim", b.getUnitAttr()));
  if (negate) {
    // min(x) = -max(-x).
    Value y = build(opName, {build<tg::NegOp>({x})}, attrs);
    return setOutput(0, y ? build<tg::NegOp>({y}) : nullptr);
  }
  // The norms and logs around a sum: L1 = sum |x|, L2 = sqrt(sum x^2),
  // SumSquare = sum x^2, LogSum = log(sum x).
  if (op == "ReduceL1")
    x = build<tg::AbsOp>({x});
  else if (op == "ReduceL2" || op == "ReduceSumSquare")
    x = build<tg::MulOp>({x, x});
  Value y = build(opName, {x}, attrs);
  if (y && op == "ReduceL2")
    y = build<tg::SqrtOp>({y});
  else if (y && op == "ReduceLogSum")
    y = build<tg::LogOp>({y});
  return setOutput(0, y);
}

/// ReduceProd of a value computed at run time (the host folds the rest).
LogicalResult Emitter::convertReduceProd() {
  error() << "ampc folds ReduceProd of values known at import (shapes) "
             "only, but its input '"
          << node->input(0)
          << "' is computed from the graph's inputs or parameters";
  return failure();
}

/// ArgMax: tg.argmax's i32 index, cast to ONNX's int64.
LogicalResult Emitter::convertArgMax() {
  if (failed(checkAttrs({"axis", "keepdims", "select_last_index"})))
    return failure();
  if (attrInt("select_last_index", 0) != 0)
    return convertArgLast(/*isMin=*/false); // TensorOps.cpp
  Value x;
  auto a = inputAndAxis(0, x);
  if (!a)
    return failure();
  SmallVector<NamedAttribute> attrs{named("dim", b.getI64IntegerAttr(*a))};
  if (attrInt("keepdims", 1))
    attrs.push_back(named("keepdim", b.getUnitAttr()));
  Value i = build<tg::ArgmaxOp>({x}, attrs);
  if (!i)
    return failure();
  Value y = tg::CastOp::create(
      b, loc, RankedTensorType::get(typeOf(i).getShape(), b.getI64Type()), i);
  if (failed(verify(y.getDefiningOp())))
    return failure();
  return setOutput(0, y);
}

/// CumSum along a scalar axis known at import.
LogicalResult Emitter::convertCumSum() {
  if (failed(checkAttrs({"exclusive", "reverse"})))
    return failure();
  if (attrInt("exclusive", 0) != 0)
    return unsupportedValue("exclusive", "1", "0");
  if (attrInt("reverse", 0) != 0)
    return unsupportedValue("reverse", "1", "0");
  Value x = value(0);
  const HostTensor *axisT = needHost(1, "axis");
  if (!x || !axisT)
    return failure();
  if (axisT->numel() != 1) {
    error() << "its axis must be a scalar";
    return failure();
  }
  auto a = axis(axisT->i(0), typeOf(x).getRank());
  if (!a)
    return failure();
  return setOutput(
      0, build<tg::CumsumOp>({x}, {named("dim", b.getI64IntegerAttr(*a))}));
}

/// InstanceNormalization: a group norm with one group per channel.
LogicalResult Emitter::convertInstanceNorm() {
  if (failed(checkAttrs({"epsilon"})))
    return failure();
  Value x = value(0), scale = value(1), bias = value(2);
  if (!x || !scale || !bias)
    return failure();
  if (typeOf(x).getRank() < 3) {
    error() << "needs an N, C, spatial... input, found rank "
            << typeOf(x).getRank();
    return failure();
  }
  return setOutput(
      0, build<tg::GroupNormOp>(
             {x, scale, bias},
             {named("groups", b.getI64IntegerAttr(typeOf(x).getDimSize(1))),
              named("eps",
                    b.getF64FloatAttr(attrFloatAsWritten("epsilon", 1e-5)))}));
}

/// The buffer of running statistic `k` (3: mean, 4: variance) of the
/// BatchNormalization being converted: `PREFIX.<initializer>`, or, when the
/// exporter stored one initializer for several uses (equal values are
/// stored once: fresh modules' zeros and ones), `PREFIX.<node>.running_mean`
/// / `.running_var`, so that every batch norm keeps its own statistics as
/// the module it was exported from does.
std::string Emitter::bufferName(size_t k) {
  StringRef init = node->input(k);
  if (runningStatUses.lookup(init) == 1 && !otherUses.contains(init))
    return prefix.str() + "." + sanitizeName(init);
  return prefix.str() + "." + sanitizeName(nodeName) +
         (k == 3 ? ".running_mean" : ".running_var");
}

/// BatchNormalization onto `tg.batch_norm`, its running statistics as
/// buffers. ONNX's momentum weighs the old statistics (`new = momentum *
/// old + (1 - momentum) * batch`), tg's (PyTorch's) the batch's: tg's is
/// 1 - ONNX's.
LogicalResult Emitter::convertBatchNorm() {
  if (failed(checkAttrs({"epsilon", "momentum", "training_mode"})))
    return failure();
  bool trainingMode = attrInt("training_mode", 0) != 0;
  // The running statistics' outputs (training mode) are the buffers' new
  // values, written by the step; they are not values of the graph.
  if (failed(onlyFirstOutput()))
    return failure();
  Value x = value(0), scale = value(1), bias = value(2);
  if (!x || !scale || !bias)
    return failure();
  int64_t rank = typeOf(x).getRank();
  if (rank < 2) {
    error() << "needs an input of rank 2 or more";
    return failure();
  }
  double eps = attrFloatAsWritten("epsilon", 1e-5);
  // As written, then rounded to f32 and read as written again: ONNX's 0.9f
  // gives PyTorch's 0.1 exactly.
  double momentum =
      asWritten(static_cast<float>(1.0 - attrFloatAsWritten("momentum", 0.9)));
  SmallVector<Value> stats;
  for (size_t k : {size_t(3), size_t(4)}) {
    if (!hasInput(k) || !lookup(k))
      return failure();
    Entry &e = env[node->input(k)];
    if (!e.isParam) {
      if (!trainingMode)
        return convertBatchNormComposed(x, scale, bias, eps);
      error() << "a training-mode batch norm keeps its running "
              << (k == 3 ? "mean" : "variance") << " (input " << k
              << ") in a buffer, so it must be an initializer, but '"
              << node->input(k) << "' is computed in the graph";
      return failure();
    }
    stats.push_back(
        state.buffer(bufferName(k), cast<DenseElementsAttr>(toAttr(*e.host))));
  }
  // A training-mode node trains in a training graph (batch statistics,
  // buffers updated) and is an inference batch norm elsewhere, as the
  // language's batch_norm.
  bool training = trainingMode && state.isTraining();
  int64_t channels = typeOf(x).getDimSize(1);
  if (training &&
      typeOf(x).getNumElements() / std::max<int64_t>(channels, 1) < 2) {
    error() << "a batch norm in a training graph needs more than one value "
               "per channel, got input "
            << typeOf(x);
    return failure();
  }
  Value y =
      build<tg::BatchNormOp>({x, scale, bias, stats[0], stats[1]},
                             {named("momentum", b.getF64FloatAttr(momentum)),
                              named("eps", b.getF64FloatAttr(eps)),
                              named("training", b.getBoolAttr(training))});
  if (!y || !training)
    return setOutput(0, y);
  Operation *update = buildOp(
      tg::BatchNormUpdateOp::getOperationName(), {x, stats[0], stats[1]},
      {named("momentum", b.getF64FloatAttr(momentum))}, 2);
  if (!update)
    return failure();
  state.updateBuffer(bufferName(3), update->getResult(0));
  state.updateBuffer(bufferName(4), update->getResult(1));
  return setOutput(0, y);
}

/// An eval-mode batch norm whose statistics are computed in the graph (not
/// initializers, so not buffers): (x - mean) * (scale * rsqrt(var + eps)) +
/// bias per channel.
LogicalResult Emitter::convertBatchNormComposed(Value x, Value scale,
                                                Value bias, double eps) {
  Value mean = value(3), var = value(4);
  if (!mean || !var)
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = typeOf(x).getDimSize(1);
  auto chan = [&](Value v) { return reshape(v, shape); };
  Value inv = build<tg::RsqrtOp>({build<tg::AddOp>({var, scalar(eps, var)})});
  Value factor = chan(build<tg::MulOp>({scale, inv}));
  Value y = build<tg::MulOp>({build<tg::SubOp>({x, chan(mean)}), factor});
  return setOutput(0, build<tg::AddOp>({y, chan(bias)}));
}

/// Dropout: the identity, except a training-mode node (the training_mode
/// input true) in a training graph, which is `tg.dropout` with p = ratio.
LogicalResult Emitter::convertDropout() {
  if (failed(checkAttrs({"seed"})) || failed(onlyFirstOutput()))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  bool trainingMode = false;
  if (hasInput(2)) {
    const HostTensor *t = needHost(2, "training_mode");
    if (!t)
      return failure();
    if (t->numel() != 1) {
      error() << "its training_mode must be a scalar";
      return failure();
    }
    trainingMode = t->i(0) != 0;
  }
  double ratio = 0.5;
  if (hasInput(1)) {
    const HostTensor *r = needHost(1, "ratio");
    if (!r)
      return failure();
    if (r->numel() != 1 || !r->isFloat()) {
      error() << "its ratio must be a float scalar";
      return failure();
    }
    ratio = asWritten(r->f(0));
  }
  if (!trainingMode || !state.isTraining())
    return setOutput(0, x);
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", ratio);
    error() << "its ratio is " << text
            << "; a training-mode dropout needs a ratio in [0, 1)";
    return failure();
  }
  if (ratio == 0.0)
    return setOutput(0, x);
  return setOutput(0, state.dropout(x, ratio, loc));
}

LogicalResult Emitter::convertLayerNorm() {
  if (failed(checkAttrs({"axis", "epsilon", "stash_type"})) ||
      failed(onlyFirstOutput()))
    return failure();
  Value x = value(0), scale = value(1);
  if (!x || !scale)
    return failure();
  int64_t rank = typeOf(x).getRank();
  auto a = axis(attrInt("axis", -1), rank);
  if (!a)
    return failure();
  // Normalized over dims axis..rank-1: those flattened into one last dim for
  // tg.layer_norm (the axis -1 of nn.LayerNorm([5, 16]) at opset 17 is
  // -2), the scale and bias (broadcast to those dims) flattened alike.
  ArrayRef<int64_t> xShape = typeOf(x).getShape();
  SmallVector<int64_t> normShape(xShape.begin() + *a, xShape.end());
  int64_t d = 1;
  for (int64_t n : normShape)
    d *= n;
  auto flat = [&](Value v) -> Value {
    if (!v)
      return nullptr;
    if (typeOf(v).getNumElements() != d ||
        typeOf(v).getRank() > int64_t(normShape.size()))
      v = build<tg::BroadcastToOp>({v}, {named("shape", ints(normShape))});
    return reshape(v, {d});
  };
  Value bias;
  if (hasInput(2)) {
    bias = value(2);
  } else {
    HostTensor z;
    z.elt = typeOf(scale).getElementType();
    z.shape = {d};
    z.floats.assign(d, 0.0);
    bias = tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(z)));
  }
  SmallVector<int64_t> rows(xShape.begin(), xShape.begin() + *a);
  rows.push_back(d);
  Value y = build<tg::LayerNormOp>(
      {reshape(x, rows), flat(scale), flat(bias)},
      {named("eps", b.getF64FloatAttr(attrFloat("epsilon", 1e-5)))});
  return setOutput(0, reshape(y, xShape));
}