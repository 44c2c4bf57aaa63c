//===- ElementwiseOps.cpp - ONNX elementwise ops ----------------*- C++ -*-===//
//
// The converters of ONNX's elementwise ops: the unary and binary ops with a tg
// op each, comparisons, activations (onto tg.leaky_relu, tg.softplus and
// tg.prelu where they fit, else composed), Erf, Clip, Where and Cast; And,
// Or, Xor, IsNaN, IsInf, Sum, Mean, ThresholdedRelu, Softsign and Shrink
// composed from tg ops.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <limits>

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

void Emitter::addElementwiseConverters(ConverterTable &t) {
  for (StringRef op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg",
                       "Abs", "Reciprocal"})
    t[op] = [](Emitter &e) { return e.convertUnary(); };
  for (StringRef op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal",
                       "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    t[op] = [](Emitter &e) { return e.convertBinary(); };
  t["Not"] = [](Emitter &e) { return e.convertNot(); };
  for (StringRef op : {"HardSigmoid", "HardSwish"})
    t[op] = [](Emitter &e) { return e.convertHardSigmoid(); };
  for (StringRef op : {"LeakyRelu", "Elu", "Selu", "Softplus"})
    t[op] = [](Emitter &e) { return e.convertActivation(); };
  t["PRelu"] = [](Emitter &e) { return e.convertPRelu(); };
  t["Erf"] = [](Emitter &e) { return e.convertErf(); };
  t["Clip"] = [](Emitter &e) { return e.convertClip(); };
  t["Where"] = [](Emitter &e) { return e.convertWhere(); };
  t["Cast"] = [](Emitter &e) { return e.convertCast(); };
  for (StringRef op : {"And", "Or", "Xor"})
    t[op] = [](Emitter &e) { return e.convertLogical(); };
  for (StringRef op : {"IsNaN", "IsInf"})
    t[op] = [](Emitter &e) { return e.convertIsNaNOrInf(); };
  for (StringRef op : {"Sum", "Mean"})
    t[op] = [](Emitter &e) { return e.convertSumOrMean(); };
  for (StringRef op : {"ThresholdedRelu", "Softsign", "Shrink"})
    t[op] = [](Emitter &e) { return e.convertMoreActivations(); };
}

/// The unary ops with a tg op of their own.
LogicalResult Emitter::convertUnary() {
  static const llvm::StringMap<StringRef> unary = {
      {"Relu", "tg.relu"},
      {"Sigmoid", "tg.sigmoid"},
      {"Tanh", "tg.tanh"},
      {"Exp", "tg.exp"},
      {"Log", "tg.log"},
      {"Sqrt", "tg.sqrt"},
      {"Neg", "tg.neg"},
      {"Abs", "tg.abs"},
      {"Reciprocal", "tg.reciprocal"}};
  if (failed(checkAttrs({})))
    return failure();
  return setOutput(0, build(unary.lookup(node->op_type()), {value(0)}));
}

/// The binary ops with a tg op of their own; Max and Min are variadic.
LogicalResult Emitter::convertBinary() {
  StringRef op = node->op_type();
  static const llvm::StringMap<StringRef> binary = {
      {"Add", "tg.add"},
      {"Sub", "tg.sub"},
      {"Mul", "tg.mul"},
      {"Div", "tg.div"},
      {"Pow", "tg.pow"},
      {"Max", "tg.maximum"},
      {"Min", "tg.minimum"},
      {"Equal", "tg.equal"},
      {"Less", "tg.less"},
      {"Greater", "tg.greater"},
      {"LessOrEqual", "tg.less_equal"},
      {"GreaterOrEqual", "tg.greater_equal"}};
  auto it = binary.find(op);
  if (failed(checkAttrs({})))
    return failure();
  if ((op == "Max" || op == "Min") && numInputs() >= 1) {
    // Variadic: one input is itself, more are folded pairwise.
    Value acc = value(0);
    for (size_t k = 1; acc && k < numInputs(); ++k) {
      Value next = value(k);
      if (!next)
        return failure();
      acc = build(it->second, {acc, next});
    }
    return setOutput(0, acc);
  }
  if (numInputs() != 2) {
    error() << "expects 2 inputs, found " << numInputs();
    return failure();
  }
  Value x = value(0), y = value(1);
  if (!x || !y)
    return failure();
  // Pow's exponent may have another element type than the base (an
  // integer exponent of a float base); the result has the base's.
  Type baseElt = typeOf(x).getElementType();
  if (op == "Pow" && typeOf(y).getElementType() != baseElt) {
    y = tg::CastOp::create(
        b, loc, RankedTensorType::get(typeOf(y).getShape(), baseElt), y);
    if (failed(verify(y.getDefiningOp())))
      return failure();
  }
  return setOutput(0, build(it->second, {x, y}));
}

/// Not: x == false.
LogicalResult Emitter::convertNot() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  if (!typeOf(x).getElementType().isInteger(1)) {
    error() << "needs a bool input";
    return failure();
  }
  return setOutput(0, build<tg::EqualOp>({x, scalar(0.0, x)}));
}

/// HardSigmoid and HardSwish: min(max(alpha * x + beta, 0), 1) (times x).
LogicalResult Emitter::convertHardSigmoid() {
  StringRef op = node->op_type();
  if (failed(checkAttrs(op == "HardSigmoid"
                            ? ArrayRef<StringRef>{"alpha", "beta"}
                            : ArrayRef<StringRef>{})))
    return failure();
  double alpha = op == "HardSigmoid" ? attrFloat("alpha", 0.2) : 1.0 / 6.0;
  double beta = op == "HardSigmoid" ? attrFloat("beta", 0.5) : 0.5;
  Value x = value(0);
  if (!x)
    return failure();
  Value t = build<tg::AddOp>(
      {build<tg::MulOp>({x, scalar(alpha, x)}), scalar(beta, x)});
  if (!t)
    return failure();
  t = build<tg::MinimumOp>(
      {build<tg::MaximumOp>({t, scalar(0.0, x)}), scalar(1.0, x)});
  if (op == "HardSwish")
    t = build<tg::MulOp>({x, t});
  return setOutput(0, t);
}

/// LeakyRelu and Softplus onto `tg.leaky_relu` and `tg.softplus` (ONNX's
/// Softplus is tg's with beta 1, whose threshold 20 changes nothing in f32:
/// past it x + log(1 + exp(-x)) rounds to x). Elu and Selu from elementwise
/// tg ops with PyTorch's gradients: the positive branch where x > 0 (so
/// x = 0 takes the negative one's slope, as torch's backward does), and exp
/// of min(x, 0) so that the branch not taken never overflows.
LogicalResult Emitter::convertActivation() {
  StringRef op = node->op_type();
  if (failed(checkAttrs(op == "LeakyRelu" || op == "Elu"
                            ? ArrayRef<StringRef>{"alpha"}
                        : op == "Selu" ? ArrayRef<StringRef>{"alpha", "gamma"}
                                       : ArrayRef<StringRef>{})))
    return failure();
  Value x = floatValue(0);
  if (!x)
    return failure();
  if (op == "LeakyRelu")
    return setOutput(
        0, build<tg::LeakyReluOp>(
               {x}, {named("negative_slope",
                           b.getF64FloatAttr(attrFloat("alpha", 0.01)))}));
  if (op == "Softplus")
    return setOutput(0, build<tg::SoftplusOp>({x}));
  double alpha =
      attrFloat("alpha", op == "Elu" ? 1.0 : 1.67326319217681884765625);
  Value em1 = build<tg::SubOp>(
      {build<tg::ExpOp>({build<tg::MinimumOp>({x, scalar(0.0, x)})}),
       scalar(1.0, x)});
  Value y = positiveElse(x, build<tg::MulOp>({em1, scalar(alpha, x)}));
  if (y && op == "Selu")
    y = build<tg::MulOp>(
        {y, scalar(attrFloat("gamma", 1.05070102214813232421875), x)});
  return setOutput(0, y);
}

/// PRelu onto `tg.prelu` when the slope is one value or one per channel
/// (dim 1: PyTorch's nn.PReLU, exported as [C] or [C, 1, ...]); any other
/// slope that broadcasts to the input as x where x > 0, else x * slope.
LogicalResult Emitter::convertPRelu() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = floatValue(0), slope = value(1);
  if (!x || !slope)
    return failure();
  ArrayRef<int64_t> xs = typeOf(x).getShape(), ss = typeOf(slope).getShape();
  int64_t rank = xs.size(), lead = rank - int64_t(ss.size());
  bool perChannel = rank >= 2 && lead >= 0;
  for (int64_t d = 0; perChannel && d < int64_t(ss.size()); ++d)
    perChannel = ss[d] == (lead + d == 1 ? xs[1] : 1);
  int64_t n = typeOf(slope).getNumElements();
  if (n == 1 || perChannel)
    return setOutput(0, build<tg::PreluOp>({x, reshape(slope, {n})}));
  Value negative = build<tg::MulOp>({x, slope});
  if (negative && typeOf(negative).getShape() != xs) {
    error() << "the slope " << typeOf(slope) << " must broadcast to the input "
            << typeOf(x);
    return failure();
  }
  return setOutput(0, positiveElse(x, negative));
}

/// `x` where x > 0, else `negative`.
Value Emitter::positiveElse(Value x, Value negative) {
  if (!negative)
    return nullptr;
  return build<tg::WhereOp>(
      {build<tg::GreaterOp>({x, scalar(0.0, x)}), x, negative});
}

/// erf(x) = sign(x) * (1 - t * poly(t) * exp(-x^2)), t = 1 / (1 + p|x|):
/// Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), built from
/// tg ops so that it differentiates and takes AMP classes like any other.
LogicalResult Emitter::convertErf() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = floatValue(0);
  if (!x)
    return failure();
  static const double p = 0.3275911;
  static const double a[] = {0.254829592, -0.284496736, 1.421413741,
                             -1.453152027, 1.061405429};
  Value ax = build<tg::AbsOp>({x});
  Value t = build<tg::DivOp>(
      {scalar(1.0, x),
       build<tg::AddOp>(
           {scalar(1.0, x), build<tg::MulOp>({ax, scalar(p, x)})})});
  Value poly = scalar(a[4], x);
  for (int k = 3; k >= 0; --k)
    poly = build<tg::AddOp>({build<tg::MulOp>({poly, t}), scalar(a[k], x)});
  poly = build<tg::MulOp>({poly, t});
  Value gauss =
      build<tg::ExpOp>({build<tg::NegOp>({build<tg::MulOp>({x, x})})});
  Value y = build<tg::SubOp>({scalar(1.0, x), build<tg::MulOp>({poly, gauss})});
  Value negative = build<tg::LessOp>({x, scalar(0.0, x)});
  return setOutput(0, build<tg::WhereOp>({negative, build<tg::NegOp>({y}), y}));
}

LogicalResult Emitter::convertClip() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  for (size_t k : {size_t(1), size_t(2)}) {
    if (!hasInput(k))
      continue;
    const HostTensor *bound = needHost(k, k == 1 ? "min" : "max");
    if (!bound)
      return failure();
    if (bound->numel() != 1) {
      error() << "the " << (k == 1 ? "min" : "max") << " must be a scalar";
      return failure();
    }
    Value c = scalar(bound->f(0), x);
    x = k == 1 ? build<tg::MaximumOp>({x, c}) : build<tg::MinimumOp>({x, c});
    if (!x)
      return failure();
  }
  return setOutput(0, x);
}

/// Where(condition, x, y).
LogicalResult Emitter::convertWhere() {
  if (failed(checkAttrs({})))
    return failure();
  return setOutput(0, build<tg::WhereOp>({value(0), value(1), value(2)}));
}

/// Cast to another element type (none when it has it already).
LogicalResult Emitter::convertCast() {
  if (failed(checkAttrs({"to"})))
    return failure();
  Type to = elementTypeOf(ctx, attrInt("to", 0));
  if (!to)
    return unsupportedValue("to", onnxTypeName(attrInt("to", 0)),
                            kOnnxElementTypes);
  Value x = value(0);
  if (!x)
    return failure();
  if (typeOf(x).getElementType() == to)
    return setOutput(0, x);
  Value y = tg::CastOp::create(
      b, loc, RankedTensorType::get(typeOf(x).getShape(), to), x);
  if (failed(verify(y.getDefiningOp())))
    return failure();
  return setOutput(0, y);
}

/// And, Or and Xor of bools: the inputs cast to f32 (0 or 1), then And is
/// their product, Or their maximum, Xor whether they differ, compared with 0
/// (exact; NumPy broadcasting as the tg ops').
LogicalResult Emitter::convertLogical() {
  if (failed(checkAttrs({})) || failed(requireInputs(2)))
    return failure();
  Value x = value(0), y = value(1);
  if (!x || !y)
    return failure();
  for (Value v : {x, y})
    if (!typeOf(v).getElementType().isInteger(1)) {
      error() << "needs bool inputs";
      return failure();
    }
  StringRef op = node->op_type();
  if (op == "Xor")
    return setOutput(0, build<tg::NotEqualOp>({x, y}));
  auto toF32 = [&](Value v) { return castTo(v, b.getF32Type()); };
  Value fx = toF32(x), fy = toF32(y);
  if (!fx || !fy)
    return failure();
  Value r = op == "And" ? build<tg::MulOp>({fx, fy})
                        : build<tg::MaximumOp>({fx, fy});
  if (!r)
    return failure();
  return setOutput(0, build<tg::NotEqualOp>({r, scalar(0.0, r)}));
}

/// IsNaN: x != x. IsInf: x == +inf and/or x == -inf (detect_positive,
/// detect_negative), as |x| == inf when both.
LogicalResult Emitter::convertIsNaNOrInf() {
  bool isInf = node->op_type() == "IsInf";
  if (failed(checkAttrs(isInf ? ArrayRef<StringRef>{"detect_positive",
                                                    "detect_negative"}
                              : ArrayRef<StringRef>{})))
    return failure();
  Value x = floatValue(0);
  if (!x)
    return failure();
  if (!isInf)
    return setOutput(0, build<tg::NotEqualOp>({x, x}));
  bool pos = attrInt("detect_positive", 1) != 0;
  bool neg = attrInt("detect_negative", 1) != 0;
  double inf = std::numeric_limits<double>::infinity();
  if (pos && neg)
    return setOutput(
        0, build<tg::EqualOp>({build<tg::AbsOp>({x}), scalar(inf, x)}));
  if (pos || neg)
    return setOutput(0, build<tg::EqualOp>({x, scalar(pos ? inf : -inf, x)}));
  // Neither: all false (x < x, also for NaN).
  return setOutput(0, build<tg::LessOp>({x, x}));
}

/// Sum and Mean of one input or more: added left to right (Mean then
/// divided by their count), with NumPy broadcasting.
LogicalResult Emitter::convertSumOrMean() {
  if (failed(checkAttrs({})))
    return failure();
  if (numInputs() < 1) {
    error() << "needs at least one input";
    return failure();
  }
  Value acc = value(0);
  for (size_t k = 1; acc && k < numInputs(); ++k)
    acc = build<tg::AddOp>({acc, value(k)});
  if (acc && node->op_type() == "Mean" && numInputs() > 1) {
    if (!isa<FloatType>(typeOf(acc).getElementType())) {
      error() << "needs float inputs";
      return failure();
    }
    acc = build<tg::DivOp>({acc, scalar(double(numInputs()), acc)});
  }
  return setOutput(0, acc);
}

/// ThresholdedRelu: x where x > alpha, else 0. Softsign: x / (1 + |x|).
/// Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0.
LogicalResult Emitter::convertMoreActivations() {
  StringRef op = node->op_type();
  if (failed(checkAttrs(op == "ThresholdedRelu" ? ArrayRef<StringRef>{"alpha"}
                        : op == "Shrink" ? ArrayRef<StringRef>{"bias", "lambd"}
                                         : ArrayRef<StringRef>{})))
    return failure();
  Value x = floatValue(0);
  if (!x)
    return failure();
  if (op == "Softsign")
    return setOutput(
        0, build<tg::DivOp>(
               {x, build<tg::AddOp>({scalar(1.0, x), build<tg::AbsOp>({x})})}));
  Value zero = scalar(0.0, x);
  if (op == "ThresholdedRelu") {
    double alpha = attrFloat("alpha", 1.0);
    return setOutput(
        0, build<tg::WhereOp>(
               {build<tg::GreaterOp>({x, scalar(alpha, x)}), x, zero}));
  }
  double bias = attrFloat("bias", 0.0), lambd = attrFloat("lambd", 0.5);
  Value above = build<tg::WhereOp>(
      {build<tg::GreaterOp>({x, scalar(lambd, x)}),
       build<tg::SubOp>({x, scalar(bias, x)}), zero});
  return setOutput(0, build<tg::WhereOp>(
                          {build<tg::LessOp>({x, scalar(-lambd, x)}),
                           build<tg::AddOp>({x, scalar(bias, x)}), above}));
}
