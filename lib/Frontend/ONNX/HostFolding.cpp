//===- HostFolding.cpp - ONNX nodes computed at import ----------*- C++ -*-===//
//
// The ops an import computes on the host when every input is known
// (constants, non-float initializers, shapes): shape arithmetic, index
// tensors, masks. Each folder reads its inputs as host tensors and sets its
// output to a host tensor; it fails with no diagnostic when it has no host
// form for these inputs (an integer Sqrt), and the node is then built as IR.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <cmath>

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

void Emitter::addHostFolders(ConverterTable &t) {
  t["Identity"] = [](Emitter &e) { return e.foldIdentity(); };
  t["Cast"] = [](Emitter &e) { return e.foldCast(); };
  for (StringRef op : {"Reshape", "Unsqueeze", "Squeeze", "Flatten"})
    t[op] = [](Emitter &e) { return e.foldReshapeLike(); };
  t["Gather"] = [](Emitter &e) { return e.foldGather(); };
  t["Concat"] = [](Emitter &e) { return e.foldConcat(); };
  for (StringRef op : {"Add", "Sub", "Mul", "Div", "Equal", "Where", "Expand",
                       "Pow", "Less", "Greater", "Max", "Min"})
    t[op] = [](Emitter &e) { return e.foldBroadcast(); };
  for (StringRef op : {"Sqrt", "Neg", "Reciprocal"})
    t[op] = [](Emitter &e) { return e.foldUnary(); };
  t["Slice"] = [](Emitter &e) { return e.foldSlice(); };
  t["ReduceProd"] = [](Emitter &e) { return e.foldReduceProd(); };
  t["Not"] = [](Emitter &e) { return e.foldNot(); };
  t["Trilu"] = [](Emitter &e) { return e.foldTrilu(); };
  t["Range"] = [](Emitter &e) { return e.foldRange(); };
  t["Transpose"] = [](Emitter &e) { return e.foldTranspose(); };
}

/// The same tensor.
LogicalResult Emitter::foldIdentity() {
  if (failed(requireInputs(1)))
    return failure();
  return setOutput(0, *host(0));
}

/// Cast: integers truncate toward 0, bools are `!= 0`.
LogicalResult Emitter::foldCast() {
  if (failed(requireInputs(1)))
    return failure();
  Type to = elementTypeOf(ctx, attrInt("to", 0));
  if (!to)
    return failure();
  HostTensor h;
  h.elt = to;
  h.shape = host(0)->shape;
  h.resize(host(0)->numel());
  for (int64_t k = 0; k < h.numel(); ++k) {
    if (h.isFloat())
      h.floats[k] = host(0)->f(k);
    else if (to.isInteger(1))
      h.ints[k] = host(0)->f(k) != 0;
    else
      h.ints[k] = host(0)->i(k); // toInt64 of a float
  }
  return setOutput(0, std::move(h));
}

/// Reshape, Unsqueeze, Squeeze, Flatten: the data is unchanged, only the
/// shape.
LogicalResult Emitter::foldReshapeLike() {
  if (failed(requireInputs(1)))
    return failure();
  HostTensor h = *host(0);
  auto shape = reshapedShape(h.shape);
  if (!shape)
    return failure();
  h.shape = *shape;
  return setOutput(0, std::move(h));
}

/// Gather along `axis`, negative indices from the end.
LogicalResult Emitter::foldGather() {
  if (failed(requireInputs(2)))
    return failure();
  const HostTensor &data = *host(0), &idx = *host(1);
  int64_t rank = data.shape.size();
  auto a = axis(attrInt("axis", 0), rank);
  if (!a)
    return failure();
  HostTensor h;
  h.elt = data.elt;
  SmallVector<int64_t> outer(data.shape.begin(), data.shape.begin() + *a);
  SmallVector<int64_t> inner(data.shape.begin() + *a + 1, data.shape.end());
  h.shape = outer;
  h.shape.append(idx.shape.begin(), idx.shape.end());
  h.shape.append(inner);
  if (failed(sized(h)))
    return failure();
  int64_t nOuter = 1, nInner = 1, dim = data.shape[*a];
  for (int64_t d : outer)
    nOuter *= d;
  for (int64_t d : inner)
    nInner *= d;
  int64_t nIdx = idx.numel(), k = 0;
  for (int64_t o = 0; o < nOuter; ++o)
    for (int64_t j = 0; j < nIdx; ++j) {
      int64_t ix = idx.i(j);
      if (ix < 0)
        ix += dim;
      if (ix < 0 || ix >= dim) {
        error() << "index " << idx.i(j) << " is out of range for a dim of "
                << dim;
        return failure();
      }
      for (int64_t i = 0; i < nInner; ++i)
        h.set(k++, data, (o * dim + ix) * nInner + i);
    }
  return setOutput(0, std::move(h));
}

/// Concat along `axis`.
LogicalResult Emitter::foldConcat() {
  if (failed(requireInputs(numInputs())))
    return failure();
  int64_t rank = host(0)->shape.size();
  auto a = axis(attrInt("axis", 0), rank);
  if (!a)
    return failure();
  HostTensor h;
  h.elt = host(0)->elt;
  h.shape = host(0)->shape;
  h.shape[*a] = 0;
  for (size_t k = 0; k < numInputs(); ++k) {
    if (host(k)->shape.size() != size_t(rank)) {
      error() << "inputs of different ranks";
      return failure();
    }
    for (int64_t d = 0; d < rank; ++d)
      if (d != *a && host(k)->shape[d] != host(0)->shape[d]) {
        error() << "input " << k << " has " << host(k)->shape[d]
                << " in dim " << d << ", input 0 has " << host(0)->shape[d]
                << " (only the axis " << *a << " may differ)";
        return failure();
      }
    h.shape[*a] += host(k)->shape[*a];
  }
  if (failed(sized(h)))
    return failure();
  int64_t nOuter = 1;
  for (int64_t d = 0; d < *a; ++d)
    nOuter *= h.shape[d];
  int64_t k = 0;
  for (int64_t o = 0; o < nOuter; ++o)
    for (size_t j = 0; j < numInputs(); ++j) {
      int64_t chunk = host(j)->numel() / std::max<int64_t>(nOuter, 1);
      for (int64_t c = 0; c < chunk; ++c)
        h.set(k++, *host(j), o * chunk + c);
    }
  return setOutput(0, std::move(h));
}

/// The broadcasting ops: arithmetic, comparisons, Where, Expand, and the
/// variadic Max and Min.
LogicalResult Emitter::foldBroadcast() {
  StringRef op = node->op_type();
  if (failed(requireInputs(numInputs())))
    return failure();
  SmallVector<SmallVector<int64_t>> shapes;
  for (size_t k = 0; k < numInputs(); ++k)
    shapes.push_back(host(k)->shape);
  if (op == "Expand") {
    shapes.pop_back();
    shapes.push_back(host(1)->allInts());
  }
  auto out = broadcastShapes(shapes);
  if (!out) {
    error() << "the input shapes do not broadcast";
    return failure();
  }
  HostTensor h;
  const HostTensor &x = *host(0);
  if ((op == "Max" || op == "Min") && numInputs() != 2) {
    // Variadic (one input or more): folded over the inputs.
    h.elt = x.elt;
    h.shape = *out;
    if (failed(sized(h)))
      return failure();
    forEachIndex(*out, [&](int64_t lin, ArrayRef<int64_t> idx) {
      h.set(lin, x, broadcastIndex(idx, *out, x.shape));
      for (size_t k = 1; k < numInputs(); ++k) {
        int64_t j = broadcastIndex(idx, *out, host(k)->shape);
        bool take = h.isFloat() ? (op == "Max" ? host(k)->f(j) > h.floats[lin]
                                               : host(k)->f(j) < h.floats[lin])
                                : (op == "Max" ? host(k)->i(j) > h.ints[lin]
                                               : host(k)->i(j) < h.ints[lin]);
        if (take)
          h.set(lin, *host(k), j);
      }
    });
    return setOutput(0, std::move(h));
  }
  if (op == "Equal" || op == "Less" || op == "Greater")
    h.elt = b.getI1Type();
  else if (op == "Where")
    h.elt = host(1)->elt;
  else
    h.elt = x.elt;
  h.shape = *out;
  if (failed(sized(h)))
    return failure();
  bool isInt = !h.isFloat();
  forEachIndex(*out, [&](int64_t lin, ArrayRef<int64_t> idx) {
    auto at = [&](size_t k) {
      return broadcastIndex(idx, *out, host(k)->shape);
    };
    if (op == "Expand") {
      h.set(lin, x, at(0));
      return;
    }
    if (op == "Where") {
      size_t src = host(0)->i(at(0)) ? 1 : 2;
      h.set(lin, *host(src), at(src));
      return;
    }
    const HostTensor &y = *host(1);
    int64_t i0 = at(0), i1 = at(1);
    // One formula for integers (int64_t) and floats (double).
    auto apply = [&](auto p, auto q) {
      using T = decltype(p);
      if (op == "Equal")
        return T(p == q);
      if (op == "Less")
        return T(p < q);
      if (op == "Greater")
        return T(p > q);
      if constexpr (std::is_integral_v<T>) {
        if (op == "Add")
          return wrapAdd(p, q);
        if (op == "Sub")
          return wrapSub(p, q);
        if (op == "Mul")
          return wrapMul(p, q);
        if (op == "Div")
          return wrapDiv(p, q);
        if (op == "Pow")
          return wrapPow(p, q);
      } else {
        if (op == "Add")
          return T(p + q);
        if (op == "Sub")
          return T(p - q);
        if (op == "Mul")
          return T(p * q);
        if (op == "Div")
          return T(p / q);
      }
      if (op == "Max")
        return std::max(p, q);
      if (op == "Min")
        return std::min(p, q);
      double r = std::pow(double(p), double(q));
      if constexpr (std::is_integral_v<T>)
        return toInt64(r);
      else
        return r;
    };
    // Comparisons compare in the operands' kind; their result is bool.
    bool floats = op == "Equal" || op == "Less" || op == "Greater"
                      ? x.isFloat() || y.isFloat()
                      : !isInt;
    if (floats) {
      double r = apply(x.f(i0), y.f(i1));
      if (isInt)
        h.ints[lin] = toInt64(r);
      else
        h.floats[lin] = r;
    } else {
      h.ints[lin] = apply(x.i(i0), y.i(i1));
    }
  });
  return setOutput(0, std::move(h));
}

/// Sqrt, Neg, Reciprocal (Neg alone of an integer tensor).
LogicalResult Emitter::foldUnary() {
  StringRef op = node->op_type();
  if (failed(requireInputs(1)))
    return failure();
  HostTensor h = *host(0);
  for (int64_t k = 0; k < h.numel(); ++k) {
    if (h.isFloat())
      h.floats[k] = op == "Sqrt"  ? std::sqrt(h.floats[k])
                    : op == "Neg" ? -h.floats[k]
                                  : 1.0 / h.floats[k];
    else if (op == "Neg")
      h.ints[k] = wrapSub(0, h.ints[k]);
    else
      return failure();
  }
  return setOutput(0, std::move(h));
}

/// Slice with starts, ends and the optional axes and steps.
LogicalResult Emitter::foldSlice() {
  if (failed(requireInputs(3)))
    return failure();
  const HostTensor &data = *host(0);
  int64_t rank = data.shape.size();
  SmallVector<int64_t> start(rank, 0), step(rank, 1), count(data.shape);
  const HostTensor *starts = host(1), *ends = host(2);
  const HostTensor *axes = hasInput(3) ? host(3) : nullptr;
  const HostTensor *steps = hasInput(4) ? host(4) : nullptr;
  if (failed(checkSliceInputs(starts, ends, axes, steps)))
    return failure();
  for (int64_t j = 0; j < starts->numel(); ++j) {
    auto a = axis(axes ? axes->i(j) : j, rank);
    if (!a)
      return failure();
    int64_t dim = data.shape[*a];
    int64_t st = steps ? steps->i(j) : 1;
    if (st == 0) {
      error() << "a step of 0";
      return failure();
    }
    // A step past the dim takes one element, as the dim does (and the
    // counts below cannot overflow, nor can -st).
    st = std::clamp(st, -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
    int64_t s = starts->i(j), e = ends->i(j);
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count[*a] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count[*a] = s > e ? (s - e - st - 1) / (-st) : 0;
    }
    start[*a] = s;
    step[*a] = st;
  }
  HostTensor h;
  h.elt = data.elt;
  h.shape = count;
  h.resize(h.numel());
  SmallVector<int64_t> strides = stridesOf(data.shape);
  forEachIndex(count, [&](int64_t lin, ArrayRef<int64_t> idx) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (start[d] + idx[d] * step[d]) * strides[d];
    h.set(lin, data, src);
  });
  return setOutput(0, std::move(h));
}

/// ReduceProd (of shapes: torch.var's element count), axes from the
/// attribute.
LogicalResult Emitter::foldReduceProd() {
  if (failed(requireInputs(1)))
    return failure();
  const HostTensor &x = *host(0);
  int64_t rank = x.shape.size();
  SmallVector<bool> reduced(rank, false);
  auto axes = attrInts("axes");
  if (!axes || axes->empty())
    reduced.assign(rank, true);
  else
    for (int64_t a : *axes) {
      auto r = axis(a, rank);
      if (!r)
        return failure();
      reduced[*r] = true;
    }
  bool keep = attrInt("keepdims", 1) != 0;
  HostTensor h;
  h.elt = x.elt;
  SmallVector<int64_t> outShape;
  for (int64_t d = 0; d < rank; ++d)
    outShape.push_back(reduced[d] ? 1 : x.shape[d]);
  h.shape = outShape;
  h.resize(h.numel());
  if (h.isFloat())
    h.floats.assign(h.numel(), 1.0);
  else
    h.ints.assign(h.numel(), 1);
  forEachIndex(x.shape, [&](int64_t lin, ArrayRef<int64_t> idx) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      o = o * outShape[d] + (reduced[d] ? 0 : idx[d]);
    if (h.isFloat())
      h.floats[o] *= x.f(lin);
    else
      h.ints[o] = wrapMul(h.ints[o], x.i(lin));
  });
  if (!keep) {
    SmallVector<int64_t> squeezed;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        squeezed.push_back(outShape[d]);
    h.shape = squeezed;
  }
  return setOutput(0, std::move(h));
}

/// Not of a bool tensor.
LogicalResult Emitter::foldNot() {
  if (failed(requireInputs(1)))
    return failure();
  HostTensor h = *host(0);
  if (h.isFloat())
    return failure();
  for (int64_t &v : h.ints)
    v = v == 0;
  return setOutput(0, std::move(h));
}

/// Trilu: the triangle's elements, else 0.
LogicalResult Emitter::foldTrilu() {
  if (failed(requireInputs(1)))
    return failure();
  HostTensor h = *host(0);
  auto keep = triluKeep(h.shape);
  if (!keep)
    return failure();
  for (int64_t k = 0; k < h.numel(); ++k)
    if (!(*keep)[k % keep->size()]) {
      if (h.isFloat())
        h.floats[k] = 0.0;
      else
        h.ints[k] = 0;
    }
  return setOutput(0, std::move(h));
}

/// Range(start, limit, delta).
LogicalResult Emitter::foldRange() {
  if (failed(requireInputs(3)))
    return failure();
  const HostTensor *s = host(0), *l = host(1), *d = host(2);
  for (const HostTensor *t : {s, l, d})
    if (t->numel() != 1) {
      error() << "start, limit and delta must be scalars (one element "
                 "each)";
      return failure();
    }
  HostTensor h;
  h.elt = s->elt;
  double start = s->f(0), limit = l->f(0), delta = d->f(0);
  if (delta == 0) {
    error() << "a delta of 0";
    return failure();
  }
  double count = std::ceil((limit - start) / delta);
  if (!(count <= double(kMaxHostElements))) {
    error() << "the range has more than 2^28 elements";
    return failure();
  }
  int64_t n = count > 0 ? int64_t(count) : 0;
  h.shape = {n};
  if (failed(sized(h)))
    return failure();
  for (int64_t k = 0; k < n; ++k) {
    if (h.isFloat())
      h.floats[k] = start + k * delta;
    else
      h.ints[k] = wrapAdd(s->i(0), wrapMul(k, d->i(0)));
  }
  return setOutput(0, std::move(h));
}

/// Transpose by `perm` (default: reversed dims).
LogicalResult Emitter::foldTranspose() {
  if (failed(requireInputs(1)))
    return failure();
  const HostTensor &x = *host(0);
  int64_t rank = x.shape.size();
  SmallVector<int64_t> perm(rank);
  for (int64_t d = 0; d < rank; ++d)
    perm[d] = rank - 1 - d;
  if (auto p = attrInts("perm"))
    perm = *p;
  if (failed(checkPerm(perm, rank)))
    return failure();
  HostTensor h;
  h.elt = x.elt;
  for (int64_t p : perm)
    h.shape.push_back(x.shape[p]);
  h.resize(h.numel());
  SmallVector<int64_t> strides = stridesOf(x.shape);
  forEachIndex(h.shape, [&](int64_t lin, ArrayRef<int64_t> idx) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += idx[d] * strides[perm[d]];
    h.set(lin, x, src);
  });
  return setOutput(0, std::move(h));
}
