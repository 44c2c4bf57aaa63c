//===- NNOps.cpp - ONNX neural-network ops ----------------------*- C++ -*-===//
//
// The converters of ONNX's neural-network ops: convolutions, Gemm and MatMul,
// softmax, pooling, reductions, ArgMax and CumSum, the normalizations,
// Dropout, the losses, Hardmax and LRN (Resize in ResizeOps.cpp, the
// recurrent ops in RecurrentOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "llvm/Support/MathExtras.h"

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
  t["NegativeLogLikelihoodLoss"] = [](Emitter &e) {
    return e.convertLoss(/*withSoftmax=*/false);
  };
  t["SoftmaxCrossEntropyLoss"] = [](Emitter &e) {
    return e.convertLoss(/*withSoftmax=*/true);
  };
  t["Hardmax"] = [](Emitter &e) { return e.convertHardmax(); };
  t["LRN"] = [](Emitter &e) { return e.convertLRN(); };
  t["MeanVarianceNormalization"] = [](Emitter &e) {
    return e.convertMeanVarianceNorm();
  };
  // ResizeOps.cpp, RecurrentOps.cpp.
  t["Resize"] = [](Emitter &e) { return e.convertResizeInterp(); };
  for (StringRef op : {"RNN", "GRU", "LSTM"})
    t[op] = [](Emitter &e) { return e.convertRecurrent(); };
}

static std::string listText(ArrayRef<int64_t> v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(v, os);
  os << "]";
  return s;
}

std::optional<Emitter::Window>
Emitter::windowAttrs(ArrayRef<int64_t> in, ArrayRef<int64_t> k, bool autoPad) {
  size_t r = in.size();
  auto get = [&](StringRef name, int64_t dflt,
                 size_t n) -> std::optional<SmallVector<int64_t>> {
    auto v = attrInts(name).value_or(SmallVector<int64_t>(n, dflt));
    if (v.size() != n) {
      error() << "attribute '" << name << "' must have " << n
              << " values (an input of " << r << " spatial dims), found "
              << v.size();
      return std::nullopt;
    }
    return v;
  };
  Window w;
  w.k.assign(k.begin(), k.end());
  auto s = get("strides", 1, r), d = get("dilations", 1, r),
       pads = get("pads", 0, 2 * r);
  if (!s || !d || !pads)
    return std::nullopt;
  w.s = *s;
  w.d = *d;
  for (size_t i = 0; i < r; ++i) {
    if (w.k[i] < 1 || w.s[i] < 1 || w.d[i] < 1) {
      error() << "kernel sizes, 'strides' and 'dilations' must be 1 or "
                 "more, found kernel "
              << listText(w.k) << ", strides " << listText(w.s)
              << ", dilations " << listText(w.d);
      return std::nullopt;
    }
    if (w.k[i] > (int64_t(1) << 20) || w.s[i] > (int64_t(1) << 20) ||
        w.d[i] > (int64_t(1) << 20)) {
      error() << "kernel sizes, 'strides' and 'dilations' above 2^20 are "
                 "not supported";
      return std::nullopt;
    }
    if ((*pads)[i] < 0 || (*pads)[r + i] < 0 ||
        (*pads)[i] > (int64_t(1) << 20) || (*pads)[r + i] > (int64_t(1) << 20)) {
      (void)unsupportedValue("pads", listText(*pads), "pads from 0 to 2^20");
      return std::nullopt;
    }
  }
  std::string ap = autoPad ? attrString("auto_pad", "NOTSET") : "NOTSET";
  w.pb.assign(r, 0);
  w.pe.assign(r, 0);
  if (ap == "NOTSET") {
    w.pb.assign(pads->begin(), pads->begin() + r);
    w.pe.assign(pads->begin() + r, pads->end());
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    // The output is ceil(in / stride); the pads that make it so are
    // split evenly, the odd one at the end (SAME_UPPER) or the beginning.
    for (size_t i = 0; i < r; ++i) {
      int64_t out = (in[i] + w.s[i] - 1) / w.s[i];
      int64_t total = std::max<int64_t>(
          0, (out - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - in[i]);
      int64_t small = total / 2;
      w.pb[i] = ap == "SAME_UPPER" ? small : total - small;
      w.pe[i] = total - w.pb[i];
    }
  } else if (ap != "VALID") {
    (void)unsupportedValue("auto_pad", "'" + ap + "'",
                           "NOTSET, VALID, SAME_UPPER and SAME_LOWER");
    return std::nullopt;
  }
  return w;
}

Value Emitter::constant(Type elt, ArrayRef<int64_t> shape,
                        ArrayRef<double> values) {
  HostTensor h;
  h.elt = elt;
  h.shape.assign(shape.begin(), shape.end());
  if (failed(sized(h)))
    return nullptr;
  for (size_t j = 0; j < values.size(); ++j)
    if (h.isFloat())
      h.floats[j] = values[j];
    else
      h.ints[j] = static_cast<int64_t>(values[j]);
  return tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(h)));
}

Value Emitter::castTo(Value v, Type elt) {
  if (!v)
    return nullptr;
  if (typeOf(v).getElementType() == elt)
    return v;
  Value y = tg::CastOp::create(
      b, loc, RankedTensorType::get(typeOf(v).getShape(), elt), v);
  if (failed(verify(y.getDefiningOp())))
    return nullptr;
  return y;
}

Value Emitter::indicesFrom(Value idx, int64_t n) {
  Value fi = castTo(idx, b.getF32Type());
  if (!fi)
    return nullptr;
  return build<tg::WhereOp>({build<tg::LessOp>({fi, scalar(0.0, fi)}),
                             build<tg::AddOp>({fi, scalar(double(n), fi)}),
                             fi});
}

LogicalResult Emitter::checkIndexDims(ArrayRef<int64_t> is,
                                      ArrayRef<int64_t> ds, int64_t axis) {
  for (int64_t d = 0; d < int64_t(ds.size()); ++d)
    if (d != axis && is[d] > ds[d]) {
      error() << "the indices' dim " << d << " (" << is[d]
              << ") exceeds the data's (" << ds[d] << ")";
      return failure();
    }
  return success();
}

/// Conv and ConvTranspose of 1-D, 2-D and 3-D inputs (tg.conv1d/2d/3d,
/// tg.conv_transpose1d/2d/3d). Pads that differ at the two ends of a dim
/// are the symmetric part in the op and the rest as explicit zero blocks.
LogicalResult Emitter::convertConv(bool transposed) {
  SmallVector<StringRef> known{"dilations", "group", "kernel_shape", "pads",
                               "strides",   "auto_pad"};
  if (transposed) {
    known.push_back("output_padding");
    known.push_back("output_shape");
  }
  if (failed(checkAttrs(known)))
    return failure();
  Value x = floatValue(0), w = floatValue(1);
  if (!x || !w)
    return failure();
  int64_t rank = typeOf(x).getRank();
  if (rank < 3 || rank > 5) {
    error() << "ampc supports 1-D, 2-D and 3-D convolutions (an input of "
               "rank 3 to 5), found rank "
            << rank;
    return failure();
  }
  if (typeOf(w).getRank() != rank) {
    error() << "the weight must have the input's rank " << rank
            << ", found rank " << typeOf(w).getRank();
    return failure();
  }
  int64_t groups = attrInt("group", 1);
  if (groups < 1 || groups > kMaxDim) {
    error() << "attribute 'group' must be from 1 to 2^31 - 1, found "
            << groups;
    return failure();
  }
  SmallVector<int64_t> kernel(typeOf(w).getShape().drop_front(2));
  if (auto ks = attrInts("kernel_shape"); ks && ArrayRef<int64_t>(*ks) !=
                                                    ArrayRef<int64_t>(kernel)) {
    error() << "attribute 'kernel_shape' " << listText(*ks)
            << " disagrees with the weight's spatial dims "
            << listText(kernel);
    return failure();
  }
  if (transposed)
    return convertConvTransposeNd(x, w, groups);
  SmallVector<int64_t> in(typeOf(x).getShape().drop_front(2));
  auto win = windowAttrs(in, kernel);
  if (!win)
    return failure();
  size_t r = in.size();
  SmallVector<int64_t> pad(r);
  for (size_t i = 0; i < r; ++i) {
    pad[i] = std::min(win->pb[i], win->pe[i]);
    x = padWith(x, 2 + i, win->pb[i] - pad[i], win->pe[i] - pad[i], 0.0);
    if (!x)
      return failure();
  }
  SmallVector<Value> ops{x, w};
  if (hasInput(2)) {
    Value bias = value(2);
    if (!bias)
      return failure();
    ops.push_back(bias);
  }
  SmallVector<NamedAttribute> attrs{
      named("stride", ints(win->s)), named("padding", ints(pad)),
      named("dilation", ints(win->d)),
      named("groups", b.getI64IntegerAttr(groups))};
  StringRef opName = r == 1   ? "tg.conv1d"
                     : r == 2 ? tg::Conv2dOp::getOperationName()
                              : "tg.conv3d";
  return setOutput(0, build(opName, ops, attrs));
}

/// ConvTranspose: the transposed convolution without padding (its full
/// output, `(in - 1) * stride + (k - 1) * dilation + 1` per dim), cut to
/// the pads or `output_shape` (zeros where the output reaches past it: the
/// `output_padding`), then the bias; the op's own padding when the pads
/// are symmetric and the output padding is one the op takes.
LogicalResult Emitter::convertConvTransposeNd(Value x, Value w,
                                              int64_t groups) {
  SmallVector<int64_t> in(typeOf(x).getShape().drop_front(2));
  SmallVector<int64_t> kernel(typeOf(w).getShape().drop_front(2));
  size_t r = in.size();
  std::string ap = attrString("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" &&
      ap != "SAME_LOWER")
    return unsupportedValue("auto_pad", "'" + ap + "'",
                            "NOTSET, VALID, SAME_UPPER and SAME_LOWER");
  // Strides, dilations and pads as for a convolution; auto_pad sizes the
  // output here, so it is resolved below.
  std::optional<Window> win = windowAttrs(in, kernel, /*autoPad=*/false);
  if (!win)
    return failure();
  auto outPad =
      attrInts("output_padding").value_or(SmallVector<int64_t>(r, 0));
  if (outPad.size() != r) {
    error() << "attribute 'output_padding' must have " << r
            << " values, found " << outPad.size();
    return failure();
  }
  std::optional<SmallVector<int64_t>> outShape = attrInts("output_shape");
  if (outShape && outShape->size() == r + 2)
    outShape->erase(outShape->begin(), outShape->begin() + 2);
  if (outShape && outShape->size() != r) {
    error() << "attribute 'output_shape' must have " << r << " values, found "
            << outShape->size();
    return failure();
  }
  SmallVector<int64_t> full(r), out(r), pb(r), pe(r);
  for (size_t i = 0; i < r; ++i) {
    if (outPad[i] < 0 || outPad[i] > (int64_t(1) << 20))
      return unsupportedValue("output_padding", listText(outPad),
                              "values from 0 to 2^20");
    full[i] = (in[i] - 1) * win->s[i] + (kernel[i] - 1) * win->d[i] + 1;
    if (outShape || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      out[i] = outShape ? (*outShape)[i] : in[i] * win->s[i];
      if (out[i] < 1 || out[i] > (int64_t(1) << 28)) {
        error() << "output size " << out[i] << " is out of range";
        return failure();
      }
      int64_t total = full[i] + outPad[i] - out[i];
      // ONNX: SAME_UPPER puts the odd pad at the end, anything else at
      // the beginning; halves are rounded down (a negative total, an
      // output past the full one, grows it at the end).
      int64_t half = llvm::divideFloorSigned(total, int64_t(2));
      if (ap == "SAME_UPPER") {
        pb[i] = half;
        pe[i] = total - pb[i];
      } else {
        pe[i] = half;
        pb[i] = total - pe[i];
      }
    } else {
      if (ap == "NOTSET") {
        pb[i] = win->pb[i];
        pe[i] = win->pe[i];
      }
      out[i] = full[i] + outPad[i] - pb[i] - pe[i];
      if (out[i] < 1) {
        error() << "the pads " << pb[i] << " and " << pe[i]
                << " leave no output in spatial dim " << i;
        return failure();
      }
    }
  }
  Value bias;
  if (hasInput(2) && !(bias = value(2)))
    return failure();
  StringRef opName = r == 1   ? "tg.conv_transpose1d"
                     : r == 2 ? "tg.conv_transpose2d"
                              : "tg.conv_transpose3d";
  bool direct = true;
  for (size_t i = 0; i < r; ++i)
    if (pb[i] != pe[i] || pb[i] < 0 ||
        outPad[i] >= std::max(win->s[i], win->d[i]) ||
        out[i] != full[i] + outPad[i] - 2 * pb[i])
      direct = false;
  SmallVector<Value> ops{x, w};
  if (direct && bias)
    ops.push_back(bias);
  SmallVector<NamedAttribute> attrs{
      named("stride", ints(win->s)),
      named("padding", ints(direct ? pb : SmallVector<int64_t>(r, 0))),
      named("output_padding",
            ints(direct ? outPad : SmallVector<int64_t>(r, 0))),
      named("dilation", ints(win->d)),
      named("groups", b.getI64IntegerAttr(groups))};
  Value y = build(opName, ops, attrs);
  if (!y || direct)
    return setOutput(0, y);
  for (size_t i = 0; i < r; ++i) {
    int64_t dim = 2 + i;
    // Output position o is full position o + pb.
    int64_t lo = std::max<int64_t>(pb[i], 0),
            hi = std::min<int64_t>(pb[i] + out[i], full[i]);
    if (hi <= lo) {
      error() << "the output of spatial dim " << i
              << " lies outside the transposed convolution's values";
      return failure();
    }
    if (lo != 0 || hi != full[i])
      y = slice(y, dim, lo, hi);
    y = padWith(y, dim, std::max<int64_t>(-pb[i], 0),
                std::max<int64_t>(pb[i] + out[i] - full[i], 0), 0.0);
    if (!y)
      return failure();
  }
  if (bias) {
    SmallVector<int64_t> shape(r + 1, 1);
    shape[0] = typeOf(bias).getNumElements();
    y = build<tg::AddOp>({y, reshape(bias, shape)});
  }
  return setOutput(0, y);
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
  if (!x || failed(requireSpatial(x)))
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  return setOutput(
      0, build(op == "GlobalAveragePool" ? "tg.mean" : "tg.max", {x},
               {named("dims", ints(dims)), named("keepdim", b.getUnitAttr())}));
}

Value Emitter::poolAlong(Value x, int64_t dim, bool pair,
                         ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                         int64_t dilation, bool isMax) {
  if (!x)
    return nullptr;
  SmallVector<int64_t> shape(typeOf(x).getShape());
  int64_t outer = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= shape[i];
  StringRef opName = isMax ? "tg.max_pool2d" : "tg.avg_pool2d";
  SmallVector<int64_t> outShape = shape;
  if (pair) {
    // The last two dims, one 2-D pool of [outer, 1, H, W].
    Value v = dim == 2 && shape.size() == 4
                  ? x
                  : reshape(x, {outer, 1, shape[dim], shape[dim + 1]});
    Value y = build(opName, {v},
                    {named("kernel", ints(k)), named("stride", ints(s)),
                     named("padding", ints({0, 0}))});
    if (!y)
      return nullptr;
    outShape[dim] = typeOf(y).getDimSize(2);
    outShape[dim + 1] = typeOf(y).getDimSize(3);
    return reshape(y, outShape);
  }
  int64_t inner = 1;
  for (size_t i = dim + 1; i < shape.size(); ++i)
    inner *= shape[i];
  int64_t len = shape[dim];
  int64_t out = (len - ((k[0] - 1) * dilation + 1)) / s[0] + 1;
  Value v = reshape(x, {outer, 1, len, inner});
  Value y;
  if (dilation == 1) {
    y = build(opName, {v},
              {named("kernel", ints({k[0], 1})), named("stride", ints({s[0], 1})),
               named("padding", ints({0, 0}))});
  } else {
    // Tap j of every window: the elements j * dilation + o * stride, a
    // slice subsampled by a 1x1 pool of the stride; then their maximum or
    // mean.
    for (int64_t j = 0; j < k[0]; ++j) {
      Value t = slice(v, 2, j * dilation, j * dilation + (out - 1) * s[0] + 1);
      if (t && s[0] > 1)
        t = build("tg.avg_pool2d", {t},
                  {named("kernel", ints({1, 1})),
                   named("stride", ints({s[0], 1})),
                   named("padding", ints({0, 0}))});
      if (!t)
        return nullptr;
      y = !y ? t : isMax ? build<tg::MaximumOp>({y, t}) : build<tg::AddOp>({y, t});
    }
    if (y && !isMax && k[0] > 1)
      y = build<tg::MulOp>({y, scalar(1.0 / double(k[0]), y)});
  }
  if (!y)
    return nullptr;
  outShape[dim] = out;
  return reshape(y, outShape);
}

/// MaxPool and AveragePool of 1-D, 2-D and 3-D inputs. A 2-D pool with
/// symmetric pads of at most half the kernel, no dilation and no ceil-mode
/// extension is one tg.max_pool2d / avg_pool2d; any other pads the input
/// itself (-inf for a max, 0 for an average: the pads, and after them what
/// a ceil-mode window reaches past the end) and pools it unpadded, one
/// spatial dim at a time (the last two together): a max (mean) over a box
/// is the max (mean) over each dim in turn. An average is then scaled by
/// each window's size over its count of elements (inside the input, or the
/// padded input with `count_include_pad`).
LogicalResult Emitter::convertPool(bool isMax) {
  if (failed(checkAttrs({"kernel_shape", "strides", "pads", "auto_pad",
                         "ceil_mode", "dilations",
                         isMax ? "storage_order" : "count_include_pad"})))
    return failure();
  bool wantIndices = isMax && node->output_size() > 1 && !node->output(1).empty();
  int64_t storageOrder = isMax ? attrInt("storage_order", 0) : 0;
  if (storageOrder != 0 && storageOrder != 1)
    return unsupportedValue("storage_order", Twine(storageOrder), "0 and 1");
  Value x = floatValue(0);
  if (!x)
    return failure();
  int64_t rank = typeOf(x).getRank();
  if (rank < 3 || rank > 5) {
    error() << "ampc supports 1-D, 2-D and 3-D pools (an input of rank 3 to "
               "5), found rank "
            << rank;
    return failure();
  }
  size_t r = rank - 2;
  auto kernel = attrInts("kernel_shape");
  if (!kernel || kernel->size() != r) {
    error() << "needs a 'kernel_shape' of " << r << " values";
    return failure();
  }
  SmallVector<int64_t> in(typeOf(x).getShape().drop_front(2));
  auto w = windowAttrs(in, *kernel);
  if (!w)
    return failure();
  bool ceilMode = attrInt("ceil_mode", 0) != 0 &&
                  attrString("auto_pad", "NOTSET") == "NOTSET";
  bool countPad = !isMax && attrInt("count_include_pad", 0) != 0;
  SmallVector<int64_t> out(r), extent(r), after(r);
  bool direct = r == 2;
  for (size_t i = 0; i < r; ++i) {
    extent[i] = (w->k[i] - 1) * w->d[i] + 1;
    int64_t span = in[i] + w->pb[i] + w->pe[i] - extent[i];
    if (span < 0) {
      error() << "the window " << extent[i] << " is larger than the padded "
              << "dim " << in[i] + w->pb[i] + w->pe[i];
      return failure();
    }
    out[i] = (ceilMode ? (span + w->s[i] - 1) / w->s[i] : span / w->s[i]) + 1;
    // ONNX's and PyTorch's ceil mode: no window starts in the end padding.
    if (ceilMode && (out[i] - 1) * w->s[i] >= in[i] + w->pb[i])
      --out[i];
    // The input as the windows read it: padded before, and after up to the
    // end of the last window.
    after[i] = std::max<int64_t>(
        0, (out[i] - 1) * w->s[i] + extent[i] - in[i] - w->pb[i]);
    if (w->d[i] != 1 || w->pb[i] != w->pe[i] || 2 * w->pb[i] > w->k[i] ||
        (out[i] - 1) * w->s[i] + extent[i] > in[i] + 2 * w->pb[i])
      direct = false;
  }
  Value y;
  if (direct) {
    y = build(isMax ? "tg.max_pool2d" : "tg.avg_pool2d", {x},
              {named("kernel", ints(w->k)), named("stride", ints(w->s)),
               named("padding", ints({w->pb[0], w->pb[1]}))});
  } else {
    y = x;
    double fill = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (size_t i = 0; i < r && y; ++i)
      y = padWith(y, 2 + i, w->pb[i], after[i], fill);
    for (size_t i = 0; i < r && y;) {
      if (i + 1 < r && i + 2 == r && w->d[i] == 1 && w->d[i + 1] == 1) {
        y = poolAlong(y, 2 + i, /*pair=*/true, {w->k[i], w->k[i + 1]},
                      {w->s[i], w->s[i + 1]}, 1, isMax);
        i += 2;
      } else {
        y = poolAlong(y, 2 + i, /*pair=*/false, {w->k[i]}, {w->s[i]},
                      w->d[i], isMax);
        i += 1;
      }
    }
  }
  if (!y)
    return failure();
  for (size_t i = 0; i < r; ++i)
    if (typeOf(y).getDimSize(2 + i) != out[i]) {
      error() << "internal: pooled size " << typeOf(y).getDimSize(2 + i)
              << " is not the expected " << out[i];
      return failure();
    }
  if (isMax && !wantIndices)
    return setOutput(0, y);
  if (isMax) {
    if (failed(setOutput(0, y)))
      return failure();
    return setOutput(1, maxPoolIndices(x, *w, out, storageOrder));
  }
  // Each window's size over its count of elements that are inside the
  // input (or the pads, with count_include_pad), per dim.
  SmallVector<SmallVector<double>> factor(r);
  bool scaled = false;
  for (size_t i = 0; i < r; ++i)
    for (int64_t o = 0; o < out[i]; ++o) {
      int64_t lo = countPad ? -w->pb[i] : 0,
              hi = countPad ? in[i] + w->pe[i] : in[i];
      int64_t count = 0;
      for (int64_t j = 0; j < w->k[i]; ++j) {
        int64_t p = o * w->s[i] - w->pb[i] + j * w->d[i];
        count += p >= lo && p < hi;
      }
      if (count == 0) {
        error() << "a window of spatial dim " << i
                << " holds no element to average";
        return failure();
      }
      factor[i].push_back(double(w->k[i]) / double(count));
      scaled |= count != w->k[i];
    }
  if (!scaled)
    return setOutput(0, y);
  SmallVector<int64_t> shape{1, 1};
  shape.append(out.begin(), out.end());
  // A constant of the output's spatial shape: within the limit of what is
  // computed at import (2^28 elements).
  std::optional<int64_t> count = checkedNumel(shape);
  if (!count) {
    error() << "the average pool's scale constant " << listText(shape)
            << " would have more than 2^28 elements";
    return failure();
  }
  int64_t n = *count;
  SmallVector<double> values(n);
  for (int64_t e = 0; e < n; ++e) {
    double f = 1.0;
    int64_t rest = e;
    for (size_t i = r; i-- > 0;) {
      f *= factor[i][rest % out[i]];
      rest /= out[i];
    }
    values[e] = f;
  }
  Value scale = constant(typeOf(y).getElementType(), shape, values);
  return setOutput(0, scale ? build<tg::MulOp>({y, scale}) : nullptr);
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
  return setIndexOutput(build<tg::ArgmaxOp>({x}, attrs));
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
  Value y = build<tg::CumsumOp>({x}, {named("dim", b.getI64IntegerAttr(*a))});
  // tg.cumsum of integers is i64 (torch.cumsum); ONNX's keeps the input's
  // type: the sums wrapped to it (the same bits as summing in its width).
  Type elt = typeOf(x).getElementType();
  if (y && typeOf(y).getElementType() != elt) {
    y = tg::CastOp::create(
        b, loc, RankedTensorType::get(typeOf(x).getShape(), elt), y);
    if (failed(verify(y.getDefiningOp())))
      return failure();
  }
  return setOutput(0, y);
}

/// InstanceNormalization: a group norm with one group per channel.
LogicalResult Emitter::convertInstanceNorm() {
  if (failed(checkAttrs({"epsilon"})))
    return failure();
  Value x = value(0), scale = value(1), bias = value(2);
  if (!x || !scale || !bias || failed(requireSpatial(x)))
    return failure();
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
  if (failed(checkAttrs({"seed"})))
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
  // The ratio matters to a training-mode node only (an inference dropout
  // is the identity whatever it is).
  double ratio = 0.5;
  if (hasInput(1) && trainingMode) {
    const HostTensor *r = needHost(1, "ratio");
    if (!r)
      return failure();
    if (r->numel() != 1 || !r->isFloat()) {
      error() << "its ratio must be a float scalar";
      return failure();
    }
    ratio = asWritten(r->f(0));
  }
  bool training = trainingMode && state.isTraining();
  if (training && !(ratio >= 0.0 && ratio < 1.0)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", ratio);
    error() << "its ratio is " << text
            << "; a training-mode dropout needs a ratio in [0, 1)";
    return failure();
  }
  bool identity = !training || ratio == 0.0;
  // The mask output (true where kept): all true for the identity; the
  // mask of tg.dropout is not a value of the graph.
  if (node->output_size() > 1 && !node->output(1).empty()) {
    if (!identity) {
      if (failed(onlyFirstOutput()))
        return failure();
    } else {
      ArrayRef<int64_t> shape = typeOf(x).getShape();
      Value mask = constant(b.getI1Type(), shape,
                            SmallVector<double>(typeOf(x).getNumElements(), 1.0));
      if (failed(setOutput(1, mask)))
        return failure();
    }
  }
  if (identity)
    return setOutput(0, x);
  return setOutput(0, state.dropout(x, ratio, loc));
}

/// MaxPool's Indices output: each window's first maximum (in the window's
/// row-major order), as the flat index of the input (N, C, then the
/// spatial dims in row-major order, or column-major with `storage_order`
/// 1). Per tap of the window: its values (the -inf padded input sliced at
/// the tap and subsampled by the stride) and a constant of its positions'
/// indices; a running maximum keeps the index of the first greater value
/// (tg.greater, tg.where). Not differentiable (an integer output).
Value Emitter::maxPoolIndices(Value x, const Window &w, ArrayRef<int64_t> out,
                              int64_t storageOrder) {
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  size_t r = shape.size() - 2;
  SmallVector<int64_t> in(shape.drop_front(2));
  int64_t spatial = 1, taps = 1, outCount = 1;
  for (size_t i = 0; i < r; ++i) {
    spatial *= in[i];
    taps *= w.k[i];
    outCount *= out[i];
  }
  if (taps > 1024) {
    error() << "ampc computes MaxPool's Indices output for windows of at "
               "most 1024 elements, found "
            << taps;
    return nullptr;
  }
  Value padded = x;
  for (size_t i = 0; i < r && padded; ++i) {
    int64_t after = std::max<int64_t>(
        0, (out[i] - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - in[i] - w.pb[i]);
    padded = padWith(padded, 2 + i, w.pb[i], after,
                     -std::numeric_limits<double>::infinity());
  }
  // The index constants hold every (n, c) plane: N * C * outputs * taps
  // values in all
  int64_t planes = shape[0] * shape[1];
  // (and the indices stay below 2^24, exact wherever a kernel reads them
  // as f32).
  if (planes * outCount * taps > (int64_t(1) << 24) ||
      planes * spatial > (int64_t(1) << 24)) {
    error() << "ampc computes MaxPool's Indices output for inputs of at most "
               "2^24 elements and at most 2^24 window elements in all";
    return nullptr;
  }
  Type i64 = b.getI64Type();
  SmallVector<int64_t> posShape{shape[0], shape[1]};
  posShape.append(out.begin(), out.end());
  Value best, bestIndex;
  for (int64_t tap = 0; tap < taps && padded; ++tap) {
    SmallVector<int64_t> tapPos(r);
    for (int64_t rest = tap, i = r - 1; i >= 0; --i) {
      tapPos[i] = rest % w.k[i];
      rest /= w.k[i];
    }
    Value v = padded;
    for (size_t i = 0; i < r && v; ++i) {
      int64_t start = tapPos[i] * w.d[i];
      v = slice(v, 2 + i, start, start + (out[i] - 1) * w.s[i] + 1);
      if (v && w.s[i] > 1)
        v = poolAlong(v, 2 + i, /*pair=*/false, {1}, {w.s[i]}, 1,
                      /*isMax=*/false);
    }
    // The tap's input position for each output position (a padded one
    // never wins: -inf is greater than nothing).
    SmallVector<double> pos(planes * outCount);
    for (int64_t o = 0; o < outCount; ++o) {
      SmallVector<int64_t> oPos(r);
      for (int64_t rest = o, i = r - 1; i >= 0; --i) {
        oPos[i] = rest % out[i];
        rest /= out[i];
      }
      int64_t flat = 0, stride = 1;
      for (size_t k = 0; k < r; ++k) {
        // Row-major: the last dim varies fastest; column-major: the first.
        size_t i = storageOrder ? k : r - 1 - k;
        int64_t p = std::clamp<int64_t>(
            oPos[i] * w.s[i] - w.pb[i] + tapPos[i] * w.d[i], 0, in[i] - 1);
        flat += p * stride;
        stride *= in[i];
      }
      for (int64_t p = 0; p < planes; ++p)
        pos[p * outCount + o] = double(p * spatial + flat);
    }
    Value index = constant(i64, posShape, pos);
    if (!v || !index)
      return nullptr;
    if (!best) {
      best = v;
      bestIndex = index;
      continue;
    }
    Value greater = build<tg::GreaterOp>({v, best});
    best = build<tg::WhereOp>({greater, v, best});
    bestIndex = build<tg::WhereOp>({greater, index, bestIndex});
  }
  return bestIndex;
}

/// LRN: x / (bias + alpha / size * sum of x^2 over the channels c - (size
/// - 1) / 2 .. c + size / 2)^beta: alpha / size * sum is alpha times the
/// windowed mean, an average pool along dim 1 of the zero-padded squares.
LogicalResult Emitter::convertLRN() {
  if (failed(checkAttrs({"alpha", "beta", "bias", "size"})))
    return failure();
  Value x = floatValue(0);
  if (!x || failed(requireSpatial(x)))
    return failure();
  int64_t size = attrInt("size", 0);
  if (size < 1 || size > (int64_t(1) << 20)) {
    error() << "attribute 'size' must be from 1 to 2^20, found " << size;
    return failure();
  }
  double alpha = attrFloat("alpha", 1e-4), beta = attrFloat("beta", 0.75),
         bias = attrFloat("bias", 1.0);
  Value sq = build<tg::MulOp>({x, x});
  Value padded = padWith(sq, 1, (size - 1) / 2, size / 2, 0.0);
  Value mean = poolAlong(padded, 1, /*pair=*/false, {size}, {1}, 1,
                         /*isMax=*/false);
  if (!mean)
    return failure();
  Value scaled = build<tg::MulOp>({mean, scalar(alpha, mean)});
  Value base = build<tg::AddOp>({scaled, scalar(bias, mean)});
  Value den = build<tg::PowOp>({base, scalar(beta, mean)});
  return setOutput(0, build<tg::DivOp>({x, den}));
}

/// MeanVarianceNormalization: ONNX's function body, (x - mean) /
/// (sqrt(mean(x^2) - mean^2) + 1e-9) over `axes` (default [0, 2, 3]).
LogicalResult Emitter::convertMeanVarianceNorm() {
  if (failed(checkAttrs({"axes"})))
    return failure();
  Value x = floatValue(0);
  if (!x)
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> dims;
  for (int64_t a :
       attrInts("axes").value_or(SmallVector<int64_t>{0, 2, 3})) {
    auto d = axis(a, rank);
    if (!d)
      return failure();
    if (llvm::is_contained(dims, *d)) {
      error() << "axis " << a << " is given twice";
      return failure();
    }
    dims.push_back(*d);
  }
  llvm::sort(dims);
  SmallVector<NamedAttribute> attrs{named("dims", ints(dims)),
                                    named("keepdim", b.getUnitAttr())};
  Value mean = build<tg::MeanOp>({x}, attrs);
  Value meanSq = build<tg::MeanOp>({build<tg::MulOp>({x, x})}, attrs);
  Value var = build<tg::SubOp>({meanSq, build<tg::MulOp>({mean, mean})});
  Value std = build<tg::SqrtOp>({var});
  Value den = std ? build<tg::AddOp>({std, scalar(1e-9, std)}) : nullptr;
  return setOutput(0, build<tg::DivOp>({build<tg::SubOp>({x, mean}), den}));
}

LogicalResult Emitter::convertLayerNorm() {
  if (failed(checkAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  if (attrInt("stash_type", 1) != 1)
    return unsupportedValue("stash_type", Twine(attrInt("stash_type", 1)),
                            "1 (statistics in f32)");
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
  Value xr = reshape(x, rows);
  double eps = attrFloat("epsilon", 1e-5);
  Value y = build<tg::LayerNormOp>({xr, flat(scale), flat(bias)},
                                   {named("eps", b.getF64FloatAttr(eps))});
  if (failed(setOutput(0, reshape(y, xShape))))
    return failure();
  // Mean and InvStdDev (outputs 1 and 2, the input's shape with 1 for each
  // normalized dim): the mean and 1 / sqrt(biased variance + epsilon) over
  // the normalized dims, when they are used.
  bool wantMean = node->output_size() > 1 && !node->output(1).empty(),
       wantInv = node->output_size() > 2 && !node->output(2).empty();
  if (!wantMean && !wantInv)
    return success();
  SmallVector<int64_t> statShape(xShape.begin(), xShape.begin() + *a);
  statShape.append(normShape.size(), 1);
  Type f32 = b.getF32Type();
  Value xf = castTo(xr, f32);
  SmallVector<NamedAttribute> lastDim{
      named("dims", ints({int64_t(rows.size()) - 1})),
      named("keepdim", b.getUnitAttr())};
  Value mean = build<tg::MeanOp>({xf}, lastDim);
  if (wantMean && failed(setOutput(1, reshape(mean, statShape))))
    return failure();
  if (!wantInv)
    return success();
  Value diff = build<tg::SubOp>({xf, mean});
  Value var = build<tg::MeanOp>({build<tg::MulOp>({diff, diff})}, lastDim);
  Value inv =
      var ? build<tg::RsqrtOp>({build<tg::AddOp>({var, scalar(eps, var)})})
          : nullptr;
  return setOutput(2, reshape(inv, statShape));
}
/// NegativeLogLikelihoodLoss (and SoftmaxCrossEntropyLoss: its input's
/// log_softmax over dim 1 first, also output 1). For input [N, C, d...]
/// and target [N, d...]: the target's class picked from dim 1 by a `where`
/// of the target against [0, C), negated and weighted by the class's
/// weight (1 without weights, 0 at `ignore_index`); "mean" divides the sum
/// by the sum of those weights. Built of tg.where, tg.sum, tg.mul and
/// tg.div, so its gradient is theirs.
LogicalResult Emitter::convertLoss(bool withSoftmax) {
  if (failed(checkAttrs({"ignore_index", "reduction"})))
    return failure();
  if (!withSoftmax && failed(onlyFirstOutput()))
    return failure();
  Value x = floatValue(0), t = value(1);
  if (!x || !t)
    return failure();
  Type elt = typeOf(x).getElementType();
  ArrayRef<int64_t> xs = typeOf(x).getShape(), ts = typeOf(t).getShape();
  int64_t rank = xs.size();
  if (rank < 2) {
    error() << "needs an input of rank 2 or more ([N, C, d...]), found rank "
            << rank;
    return failure();
  }
  if (!typeOf(t).getElementType().isInteger()) {
    error() << "its target must hold integer class indices";
    return failure();
  }
  SmallVector<int64_t> want{xs[0]};
  want.append(xs.begin() + 2, xs.end());
  if (ts != ArrayRef<int64_t>(want)) {
    error() << "target shape " << listText(ts)
            << " must be the input's without dim 1, " << listText(want);
    return failure();
  }
  std::string reduction = attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return unsupportedValue("reduction", "'" + reduction + "'",
                            "'none', 'sum' and 'mean'");
  int64_t classes = xs[1];
  if (withSoftmax) {
    x = build<tg::LogSoftmaxOp>({x}, {named("dim", b.getI64IntegerAttr(1))});
    if (!x || failed(setOutput(1, x)))
      return failure();
  }
  // [N, 1, d...] against [1, C, 1...]: the target's class.
  SmallVector<int64_t> t1 = want, classShape(rank, 1);
  t1.insert(t1.begin() + 1, 1);
  classShape[1] = classes;
  SmallVector<double> iota(classes);
  for (int64_t c = 0; c < classes; ++c)
    iota[c] = double(c);
  Value tr = reshape(t, t1);
  Value cls = constant(typeOf(t).getElementType(), classShape, iota);
  Value hit = build<tg::EqualOp>({tr, cls});
  Value zero = scalar(0.0, x);
  if (!hit || !zero)
    return failure();
  auto sumClasses = [&](Value v) -> Value {
    return build<tg::SumOp>({v}, {named("dims", ints({1}))});
  };
  Value loss = build<tg::NegOp>({sumClasses(build<tg::WhereOp>({hit, x, zero}))});
  // The weight of each element's class (unset: 1).
  Value weight;
  if (hasInput(2)) {
    Value wc = floatValue(2);
    if (!wc)
      return failure();
    if (typeOf(wc).getShape() != ArrayRef<int64_t>{classes}) {
      error() << "its weight must be [C] = [" << classes << "], found "
              << typeOf(wc);
      return failure();
    }
    weight = sumClasses(
        build<tg::WhereOp>({hit, reshape(wc, classShape), scalar(0.0, wc)}));
  }
  if (attr("ignore_index")) {
    Value keep = castTo(
        build<tg::NotEqualOp>({t, scalar(double(attrInt("ignore_index", 0)), t)}),
        elt);
    weight = weight ? build<tg::MulOp>({weight, keep}) : keep;
  }
  if (weight)
    loss = build<tg::MulOp>({loss, weight});
  if (!loss)
    return failure();
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < int64_t(ts.size()); ++d)
    all.push_back(d);
  auto total = [&](Value v) -> Value {
    return build<tg::SumOp>({v}, {named("dims", ints(all))});
  };
  if (reduction == "sum")
    loss = total(loss);
  else if (reduction == "mean")
    loss = weight ? build<tg::DivOp>({total(loss), total(weight)})
                  : build<tg::MeanOp>({loss}, {named("dims", ints(all))});
  return setOutput(0, loss);
}

/// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (tg.argmax
/// against the positions of the axis). Its gradient is zero.
LogicalResult Emitter::convertHardmax() {
  if (failed(checkAttrs({"axis"})))
    return failure();
  Value x;
  auto a = inputAndAxis(-1, x);
  if (!a)
    return failure();
  if (!isa<FloatType>(typeOf(x).getElementType())) {
    error() << "needs a float input";
    return failure();
  }
  int64_t rank = typeOf(x).getRank(), n = typeOf(x).getDimSize(*a);
  Value i = build<tg::ArgmaxOp>({x}, {named("dim", b.getI64IntegerAttr(*a)),
                                      named("keepdim", b.getUnitAttr())});
  SmallVector<int64_t> shape(rank, 1);
  shape[*a] = n;
  SmallVector<double> iota(n);
  for (int64_t k = 0; k < n; ++k)
    iota[k] = double(k);
  Value pos = constant(b.getI32Type(), shape, iota);
  return setOutput(
      0, castTo(build<tg::EqualOp>({i, pos}), typeOf(x).getElementType()));
}
