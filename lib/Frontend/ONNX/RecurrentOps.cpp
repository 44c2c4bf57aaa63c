//===- RecurrentOps.cpp - ONNX RNN, GRU and LSTM, unrolled -------*- C++ -*-===//
//
// RNN, GRU and LSTM unrolled at import over their static sequence length:
// the input projection of every step as one matmul, then per step a matmul
// of the hidden state, the gates (slices), and the default activations
// (sigmoid, tanh). Built of differentiable tg ops, so imported sequence
// models train.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

LogicalResult Emitter::convertRecurrent() {
  StringRef op = node->op_type();
  bool isGru = op == "GRU", isLstm = op == "LSTM";
  SmallVector<StringRef> known{"activation_alpha", "activation_beta",
                               "activations", "clip", "direction",
                               "hidden_size", "layout"};
  if (isGru)
    known.push_back("linear_before_reset");
  if (isLstm)
    known.push_back("input_forget");
  if (failed(checkAttrs(known)))
    return failure();
  if (attr("clip")) {
    error() << "unsupported attribute 'clip' (ampc's recurrent ops do not "
               "clip their gates)";
    return failure();
  }
  if (attr("activation_alpha") || attr("activation_beta")) {
    error() << "unsupported attributes 'activation_alpha'/'activation_beta' "
               "(ampc takes the default activations)";
    return failure();
  }
  if (isLstm && attrInt("input_forget", 0) != 0)
    return unsupportedValue("input_forget", "1", "0");
  std::string direction = attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return unsupportedValue("direction", "'" + direction + "'",
                            "'forward', 'reverse' and 'bidirectional'");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (const auto *a = attr("activations")) {
    SmallVector<std::string> want;
    for (int64_t d = 0; d < dirs; ++d) {
      if (isLstm)
        want.append({"Sigmoid", "Tanh", "Tanh"});
      else if (isGru)
        want.append({"Sigmoid", "Tanh"});
      else
        want.push_back("Tanh");
    }
    bool same = a->strings_size() == int(want.size());
    for (int k = 0; same && k < a->strings_size(); ++k)
      same = a->strings(k) == want[k];
    if (!same) {
      error() << "unsupported 'activations' (ampc takes the defaults: "
              << (isLstm ? "Sigmoid, Tanh, Tanh" : isGru ? "Sigmoid, Tanh"
                                                          : "Tanh")
              << " per direction)";
      return failure();
    }
  }
  int64_t layout = attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    return unsupportedValue("layout", Twine(layout), "0 and 1");
  bool lbr = isGru && attrInt("linear_before_reset", 0) != 0;
  int64_t gates = isLstm ? 4 : isGru ? 3 : 1;
  Value x = floatValue(0), w = floatValue(1), r = floatValue(2);
  if (!x || !w || !r)
    return failure();
  if (typeOf(x).getRank() != 3) {
    error() << "needs a rank-3 input X, found " << typeOf(x);
    return failure();
  }
  if (layout == 1)
    x = build<tg::TransposeOp>({x}, {named("perm", ints({1, 0, 2}))});
  if (!x)
    return failure();
  ArrayRef<int64_t> xs = typeOf(x).getShape();
  int64_t seq = xs[0], batch = xs[1], in = xs[2];
  int64_t hidden = attrInt("hidden_size", 0);
  if (hidden < 1 || hidden > (int64_t(1) << 24)) {
    error() << "needs a 'hidden_size' from 1 to 2^24";
    return failure();
  }
  if (typeOf(w).getShape() != ArrayRef<int64_t>{dirs, gates * hidden, in} ||
      typeOf(r).getShape() !=
          ArrayRef<int64_t>{dirs, gates * hidden, hidden}) {
    error() << "W " << typeOf(w) << " and R " << typeOf(r)
            << " do not match " << dirs << " direction(s), hidden size "
            << hidden << " and input size " << in;
    return failure();
  }
  if (seq < 1 || seq > 4096) {
    error() << "ampc unrolls sequences of 1 to 4096 steps, found " << seq;
    return failure();
  }
  if (hasInput(4)) {
    const HostTensor *lens = needHost(4, "sequence_lens");
    if (!lens)
      return failure();
    for (int64_t k = 0; k < lens->numel(); ++k)
      if (lens->i(k) != seq) {
        error() << "ampc takes sequence_lens equal to the sequence length "
                << seq << " only, found " << lens->i(k);
        return failure();
      }
  }
  Type elt = typeOf(x).getElementType();
  auto state0 = [&](size_t k) -> Value {
    // initial_h / initial_c: [dirs, batch, H] ([batch, dirs, H] in layout 1).
    if (!hasInput(k))
      return constant(elt, {dirs, batch, hidden}, {});
    Value v = floatValue(k);
    if (v && layout == 1)
      v = build<tg::TransposeOp>({v}, {named("perm", ints({1, 0, 2}))});
    if (v && typeOf(v).getShape() != ArrayRef<int64_t>{dirs, batch, hidden}) {
      error() << "initial state input " << k << " must be [" << dirs << ", "
              << batch << ", " << hidden << "], found " << typeOf(v);
      return nullptr;
    }
    return v;
  };
  Value h0 = state0(5), c0 = isLstm ? state0(6) : Value();
  Value bias = hasInput(3) ? floatValue(3) : Value();
  Value peep = isLstm && hasInput(7) ? floatValue(7) : Value();
  if (!h0 || (isLstm && !c0) || (hasInput(3) && !bias) ||
      (isLstm && hasInput(7) && !peep))
    return failure();
  if (bias && typeOf(bias).getShape() !=
                  ArrayRef<int64_t>{dirs, 2 * gates * hidden}) {
    error() << "B must be [" << dirs << ", " << 2 * gates * hidden
            << "], found " << typeOf(bias);
    return failure();
  }
  if (peep && typeOf(peep).getShape() != ArrayRef<int64_t>{dirs, 3 * hidden}) {
    error() << "P must be [" << dirs << ", " << 3 * hidden << "], found "
            << typeOf(peep);
    return failure();
  }
  int64_t gh = gates * hidden;
  auto pick = [&](Value v, int64_t d, ArrayRef<int64_t> shape) -> Value {
    return reshape(slice(v, 0, d, d + 1), shape);
  };
  auto gate = [&](Value v, int64_t g) -> Value {
    return slice(v, 1, g * hidden, (g + 1) * hidden);
  };
  auto sigmoid = [&](Value v) { return build<tg::SigmoidOp>({v}); };
  auto tanh = [&](Value v) { return build<tg::TanhOp>({v}); };
  auto add = [&](Value a, Value c) { return build<tg::AddOp>({a, c}); };
  auto mul = [&](Value a, Value c) { return build<tg::MulOp>({a, c}); };
  SmallVector<Value> ys, hs, cs;
  Value xFlat = reshape(x, {seq * batch, in});
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Value wt = build<tg::TransposeOp>({pick(w, d, {gh, in})},
                                      {named("perm", ints({1, 0}))});
    Value rt = build<tg::TransposeOp>({pick(r, d, {gh, hidden})},
                                      {named("perm", ints({1, 0}))});
    // The input projection of every step, with W's bias and (except a
    // GRU's hidden gate with linear_before_reset) R's.
    Value xw = build<tg::MatmulOp>({xFlat, wt});
    Value rbHidden;
    if (bias) {
      Value bd = pick(bias, d, {2 * gh});
      Value wb = slice(bd, 0, 0, gh), rb = slice(bd, 0, gh, 2 * gh);
      if (lbr) {
        rbHidden = slice(rb, 0, 2 * hidden, 3 * hidden);
        rb = padWith(slice(rb, 0, 0, 2 * hidden), 0, 0, hidden, 0.0);
      }
      xw = add(xw, add(wb, rb));
    }
    xw = reshape(xw, {seq, batch, gh});
    Value pi, po, pf;
    if (peep) {
      Value pd = pick(peep, d, {3 * hidden});
      pi = slice(pd, 0, 0, hidden);
      po = slice(pd, 0, hidden, 2 * hidden);
      pf = slice(pd, 0, 2 * hidden, 3 * hidden);
    }
    Value h = pick(h0, d, {batch, hidden});
    Value c = isLstm ? pick(c0, d, {batch, hidden}) : Value();
    SmallVector<Value> steps(seq);
    for (int64_t k = 0; k < seq; ++k) {
      int64_t t = reverse ? seq - 1 - k : k;
      if (!xw || !wt || !rt || !h)
        return failure();
      Value xt = pick(xw, t, {batch, gh});
      Value hr = build<tg::MatmulOp>({h, rt});
      if (isLstm) {
        Value g = add(xt, hr);
        Value i = pi ? add(gate(g, 0), mul(pi, c)) : gate(g, 0);
        Value f = pf ? add(gate(g, 2), mul(pf, c)) : gate(g, 2);
        Value ct = tanh(gate(g, 3));
        c = add(mul(sigmoid(f), c), mul(sigmoid(i), ct));
        Value o = po ? add(gate(g, 1), mul(po, c)) : gate(g, 1);
        h = mul(sigmoid(o), tanh(c));
      } else if (isGru) {
        Value z = sigmoid(add(gate(xt, 0), gate(hr, 0)));
        Value rg = sigmoid(add(gate(xt, 1), gate(hr, 1)));
        Value hh;
        if (lbr) {
          Value rh = gate(hr, 2);
          if (rbHidden)
            rh = add(rh, rbHidden);
          hh = tanh(add(gate(xt, 2), mul(rg, rh)));
        } else {
          Value rh = build<tg::MatmulOp>(
              {mul(rg, h), slice(rt, 1, 2 * hidden, 3 * hidden)});
          hh = tanh(add(gate(xt, 2), rh));
        }
        // (1 - z) * hh + z * h = hh + z * (h - hh).
        h = add(hh, mul(z, build<tg::SubOp>({h, hh})));
      } else {
        h = tanh(add(xt, hr));
      }
      if (!h)
        return failure();
      steps[t] = reshape(h, {1, 1, batch, hidden});
    }
    ys.push_back(steps.size() == 1
                     ? steps[0]
                     : build<tg::ConcatOp>(
                           steps, {named("dim", b.getI64IntegerAttr(0))}));
    hs.push_back(reshape(h, {1, batch, hidden}));
    if (isLstm)
      cs.push_back(reshape(c, {1, batch, hidden}));
  }
  auto join = [&](ArrayRef<Value> parts, int64_t dim) -> Value {
    if (llvm::is_contained(parts, Value()))
      return nullptr;
    return parts.size() == 1
               ? parts[0]
               : build<tg::ConcatOp>(parts,
                                     {named("dim", b.getI64IntegerAttr(dim))});
  };
  // Y [seq, dirs, batch, H], Y_h and Y_c [dirs, batch, H]; layout 1:
  // [batch, seq, dirs, H] and [batch, dirs, H].
  Value y = join(ys, 1), yh = join(hs, 0), yc = isLstm ? join(cs, 0) : Value();
  if (!y || !yh || (isLstm && !yc))
    return failure();
  if (layout == 1) {
    y = build<tg::TransposeOp>({y}, {named("perm", ints({2, 0, 1, 3}))});
    yh = build<tg::TransposeOp>({yh}, {named("perm", ints({1, 0, 2}))});
    if (isLstm)
      yc = build<tg::TransposeOp>({yc}, {named("perm", ints({1, 0, 2}))});
  }
  if (failed(setOutput(0, y)) || failed(setOutput(1, yh)))
    return failure();
  if (isLstm && failed(setOutput(2, yc)))
    return failure();
  return success();
}
