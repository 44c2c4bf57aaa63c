//===- TensorOps.cpp - ONNX tensor and shape ops ----------------*- C++ -*-===//
//
// The converters of ONNX's tensor and shape ops: constants and shapes (known
// at import), Identity, the reshapes, Transpose, Concat, Slice, Split,
// Gather, Pad, Trilu, Resize, DepthToSpace/SpaceToDepth and Tile; ArgMin
// (and both arg ops' select_last_index), Size, EyeLike, GatherElements,
// ScatterElements, OneHot and TopK.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <limits>

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

void Emitter::addTensorConverters(ConverterTable &t) {
  t["Constant"] = [](Emitter &e) { return e.convertConstant(); };
  t["Shape"] = [](Emitter &e) { return e.convertShape(); };
  t["ConstantOfShape"] = [](Emitter &e) { return e.convertConstantOfShape(); };
  t["Identity"] = [](Emitter &e) { return e.convertIdentity(); };
  for (StringRef op : {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Expand"})
    t[op] = [](Emitter &e) { return e.convertReshapeLike(); };
  t["Transpose"] = [](Emitter &e) { return e.convertTranspose(); };
  t["Concat"] = [](Emitter &e) { return e.convertConcat(); };
  t["Slice"] = [](Emitter &e) { return e.convertSlice(); };
  t["Split"] = [](Emitter &e) { return e.convertSplit(); };
  t["Gather"] = [](Emitter &e) { return e.convertGather(); };
  t["Pad"] = [](Emitter &e) { return e.convertPad(); };
  t["Trilu"] = [](Emitter &e) { return e.convertTrilu(); };
  for (StringRef op : {"DepthToSpace", "SpaceToDepth"})
    t[op] = [](Emitter &e) { return e.convertDepthToSpace(); };
  t["Tile"] = [](Emitter &e) { return e.convertTile(); };
  t["ArgMin"] = [](Emitter &e) { return e.convertArgMin(); };
  t["GatherElements"] = [](Emitter &e) { return e.convertGatherElements(); };
  t["OneHot"] = [](Emitter &e) { return e.convertOneHot(); };
  t["TopK"] = [](Emitter &e) { return e.convertTopK(); };
  t["ScatterElements"] = [](Emitter &e) {
    return e.convertScatterElements();
  };
  t["Size"] = [](Emitter &e) { return e.convertSize(); };
  t["EyeLike"] = [](Emitter &e) { return e.convertEyeLike(); };
}

/// Constant: a host tensor from one of its value attributes.
LogicalResult Emitter::convertConstant() {
  if (failed(checkAttrs(
          {"value", "value_float", "value_floats", "value_int", "value_ints"})))
    return failure();
  HostTensor h;
  if (const auto *a = attr("value")) {
    std::string why;
    auto t = readTensor(ctx, a->t(), why);
    if (!t) {
      error() << "attribute 'value': " << why;
      return failure();
    }
    h = std::move(*t);
  } else if (const auto *a = attr("value_float")) {
    h.elt = b.getF32Type();
    h.floats = {a->f()};
  } else if (const auto *a = attr("value_floats")) {
    h.elt = b.getF32Type();
    h.shape = {a->floats_size()};
    h.floats.assign(a->floats().begin(), a->floats().end());
  } else if (const auto *a = attr("value_int")) {
    h.elt = b.getI64Type();
    h.ints = {a->i()};
  } else if (const auto *a = attr("value_ints")) {
    h.elt = b.getI64Type();
    h.shape = {a->ints_size()};
    h.ints.assign(a->ints().begin(), a->ints().end());
  } else {
    error() << "has no value attribute ampc supports";
    return failure();
  }
  return setOutput(0, std::move(h));
}

/// Shape (its `start` and `end` clamped as ONNX says): a host tensor.
LogicalResult Emitter::convertShape() {
  if (failed(checkAttrs({"start", "end"})))
    return failure();
  auto s = shapeOf(0);
  if (!s)
    return failure();
  int64_t rank = s->size();
  int64_t start = attrInt("start", 0), end = attrInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  HostTensor h;
  h.elt = b.getI64Type();
  h.shape = {end - start};
  h.ints.assign(s->begin() + start, s->begin() + end);
  return setOutput(0, std::move(h));
}

/// ConstantOfShape: a host tensor of its shape input, filled.
LogicalResult Emitter::convertConstantOfShape() {
  if (failed(checkAttrs({"value"})))
    return failure();
  const HostTensor *shape = needHost(0, "shape");
  if (!shape)
    return failure();
  HostTensor fill;
  fill.elt = b.getF32Type();
  fill.floats = {0.0};
  if (const auto *a = attr("value")) {
    std::string why;
    auto t = readTensor(ctx, a->t(), why);
    if (!t || t->numel() != 1) {
      error() << "attribute 'value' must hold one element"
              << (t ? "" : ": " + why);
      return failure();
    }
    fill = std::move(*t);
  }
  HostTensor h;
  h.elt = fill.elt;
  h.shape = shape->allInts();
  if (failed(sized(h)))
    return failure();
  for (int64_t k = 0; k < h.numel(); ++k)
    h.set(k, fill, 0);
  return setOutput(0, std::move(h));
}

/// Identity: the same entry. An Identity of an initializer is that
/// initializer (torch.onnx.export names a batch norm's running statistics so
/// when they equal another initializer).
LogicalResult Emitter::convertIdentity() {
  if (failed(checkAttrs({})) || !hasInput(0) || !lookup(0))
    return failure();
  Entry e = env[node->input(0)];
  if (node->output_size() > 0 && !node->output(0).empty())
    env[node->output(0)] = std::move(e);
  return success();
}

std::optional<SmallVector<int64_t>>
Emitter::resolveReshape(ArrayRef<int64_t> in, const HostTensor &spec) {
  if (spec.shape.size() != 1) {
    error() << "the shape must be 1-D";
    return std::nullopt;
  }
  if (attrInt("allowzero", 0) != 0) {
    (void)unsupportedValue("allowzero", "1", "0");
    return std::nullopt;
  }
  SmallVector<int64_t> out;
  int64_t known = 1, inferred = -1;
  std::optional<int64_t> counted =
      checkedNumel(in, std::numeric_limits<int64_t>::max());
  if (!counted) {
    error() << "the input's element count overflows int64";
    return std::nullopt;
  }
  int64_t total = *counted;
  for (int64_t k = 0; k < spec.numel(); ++k) {
    int64_t d = spec.i(k);
    if (d == 0) {
      if (k >= int64_t(in.size())) {
        error() << "shape entry " << k << " is 0 (copy) but the input has "
                << "rank " << in.size();
        return std::nullopt;
      }
      d = in[k];
    }
    if (d == -1) {
      if (inferred >= 0) {
        error() << "the shape has two -1 entries";
        return std::nullopt;
      }
      inferred = k;
      out.push_back(-1);
      continue;
    }
    if (d < 0) {
      error() << "shape entry " << k << " is " << d;
      return std::nullopt;
    }
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d) {
      error() << "the shape's element count overflows int64 at entry " << k
              << " (" << d << ")";
      return std::nullopt;
    }
    known *= d;
    out.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      error() << "cannot infer the -1 entry of the shape";
      return std::nullopt;
    }
    out[inferred] = total / known;
  } else if (known != total) {
    error() << "the shape has " << known << " elements, the input " << total;
    return std::nullopt;
  }
  return out;
}

std::optional<SmallVector<int64_t>> Emitter::axesInputOrAttr(size_t k) {
  if (hasInput(k)) {
    const HostTensor *a = needHost(k, "axes");
    if (!a)
      return std::nullopt;
    SmallVector<int64_t> v;
    for (int64_t j = 0; j < a->numel(); ++j)
      v.push_back(a->i(j));
    return v;
  }
  if (auto v = attrInts("axes"))
    return v;
  return SmallVector<int64_t>{};
}

/// The output shape of the Reshape, Flatten, Squeeze or Unsqueeze being
/// converted, for an input of shape `in` (the host and the IR forms share
/// it).
std::optional<SmallVector<int64_t>>
Emitter::reshapedShape(ArrayRef<int64_t> in) {
  StringRef op = node->op_type();
  int64_t rank = in.size();
  if (op == "Reshape") {
    const HostTensor *spec = needHost(1, "shape");
    if (!spec)
      return std::nullopt;
    return resolveReshape(in, *spec);
  }
  if (op == "Flatten") {
    // The axis is in [-rank, rank]; a negative one counts from the input's
    // rank (-1 keeps the last dim as the second output dim).
    int64_t given = attrInt("axis", 1);
    if (given < -rank || given > rank) {
      error() << "axis " << given << " is out of range for rank " << rank
              << " (Flatten takes -" << rank << " to " << rank << ")";
      return std::nullopt;
    }
    int64_t a = given < 0 ? given + rank : given;
    auto lo = checkedNumel(in.take_front(a), std::numeric_limits<int64_t>::max());
    auto hi = checkedNumel(in.drop_front(a), std::numeric_limits<int64_t>::max());
    if (!lo || !hi) {
      error() << "the flattened dims' element count overflows int64";
      return std::nullopt;
    }
    return SmallVector<int64_t>{*lo, *hi};
  }
  auto axes = axesInputOrAttr(1);
  if (!axes)
    return std::nullopt;
  SmallVector<int64_t> out;
  if (op == "Unsqueeze") {
    int64_t outRank = rank + axes->size();
    SmallVector<bool> isNew(outRank, false);
    for (int64_t a : *axes) {
      auto r = axis(a, outRank);
      if (!r)
        return std::nullopt;
      if (isNew[*r]) {
        error() << "axis " << a << " is given twice";
        return std::nullopt;
      }
      isNew[*r] = true;
    }
    size_t j = 0;
    for (int64_t d = 0; d < outRank; ++d)
      out.push_back(isNew[d] ? 1 : in[j++]);
    return out;
  }
  // Squeeze: the given dims, or every dim of size 1.
  SmallVector<bool> drop(rank, false);
  if (axes->empty())
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = in[d] == 1;
  for (int64_t a : *axes) {
    auto r = axis(a, rank);
    if (!r)
      return std::nullopt;
    if (in[*r] != 1) {
      error() << "cannot squeeze dim " << *r << " of size " << in[*r];
      return std::nullopt;
    }
    drop[*r] = true;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      out.push_back(in[d]);
  return out;
}

LogicalResult Emitter::convertReshapeLike() {
  StringRef op = node->op_type();
  if (failed(checkAttrs(op == "Flatten"   ? ArrayRef<StringRef>{"axis"}
                        : op == "Reshape" ? ArrayRef<StringRef>{"allowzero"}
                        : op == "Expand"  ? ArrayRef<StringRef>{}
                                          : ArrayRef<StringRef>{"axes"})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  SmallVector<int64_t> in(typeOf(x).getShape());
  if (op == "Expand") {
    const HostTensor *spec = needHost(1, "shape");
    if (!spec)
      return failure();
    auto s = broadcastShapes({in, spec->allInts()});
    if (!s) {
      error() << "the shape does not broadcast with the input's";
      return failure();
    }
    for (int64_t d : *s)
      if (d < 0 || d > kMaxDim) {
        error() << "the shape has a dim of " << d
                << " (ampc imports dims from 0 to 2^31 - 1)";
        return failure();
      }
    if (*s == in)
      return setOutput(0, x);
    return setOutput(0,
                     build<tg::BroadcastToOp>({x}, {named("shape", ints(*s))}));
  }
  auto out = reshapedShape(in);
  if (!out)
    return failure();
  return setOutput(0, reshape(x, *out));
}

/// Transpose by `perm` (default: reversed dims).
LogicalResult Emitter::convertTranspose() {
  if (failed(checkAttrs({"perm"})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> perm;
  for (int64_t d = rank - 1; d >= 0; --d)
    perm.push_back(d);
  if (auto p = attrInts("perm"))
    perm = *p;
  return setOutput(0, build<tg::TransposeOp>({x}, {named("perm", ints(perm))}));
}

/// Concat along `axis`.
LogicalResult Emitter::convertConcat() {
  if (failed(checkAttrs({"axis"})))
    return failure();
  SmallVector<Value> xs;
  for (size_t k = 0; k < numInputs(); ++k) {
    Value v = value(k);
    if (!v)
      return failure();
    xs.push_back(v);
  }
  auto a = axis(attrInt("axis", 0), typeOf(xs[0]).getRank());
  if (!a)
    return failure();
  return setOutput(
      0, build<tg::ConcatOp>(xs, {named("dim", b.getI64IntegerAttr(*a))}));
}

LogicalResult Emitter::checkSliceInputs(const HostTensor *starts,
                                        const HostTensor *ends,
                                        const HostTensor *axes,
                                        const HostTensor *steps) {
  int64_t n = starts->numel();
  for (auto [t, what] : {std::pair(starts, "starts"), std::pair(ends, "ends"),
                         std::pair(axes, "axes"), std::pair(steps, "steps")}) {
    if (t && (t->shape.size() != 1 || t->numel() != n)) {
      error() << "'" << what << "' must be 1-D with one value per sliced "
              << "axis (" << n << "), found " << t->numel() << " values";
      return failure();
    }
  }
  return success();
}

LogicalResult Emitter::convertSlice() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  const HostTensor *starts = needHost(1, "starts"), *ends = needHost(2, "ends");
  if (!starts || !ends)
    return failure();
  const HostTensor *axes = nullptr, *steps = nullptr;
  if (hasInput(3) && !(axes = needHost(3, "axes")))
    return failure();
  if (hasInput(4) && !(steps = needHost(4, "steps")))
    return failure();
  if (failed(checkSliceInputs(starts, ends, axes, steps)))
    return failure();
  int64_t rank = typeOf(x).getRank();
  for (int64_t j = 0; j < starts->numel(); ++j) {
    auto a = axis(axes ? axes->i(j) : j, rank);
    if (!a)
      return failure();
    int64_t st = steps ? steps->i(j) : 1;
    if (st < 1)
      return unsupportedValue("steps", Twine(st),
                              "positive steps on values computed at run time");
    int64_t dim = typeOf(x).getDimSize(*a);
    // A step past the dim takes one element, as the dim does (and the
    // count below cannot overflow).
    st = std::min(st, std::max<int64_t>(dim, 1));
    int64_t s = starts->i(j), e = ends->i(j);
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    if (e <= s) {
      error() << "the slice of dim " << *a << " is empty";
      return failure();
    }
    if (st == 1 && s == 0 && e == dim)
      continue;
    // With a step: x[s : last + 1] (last the last element taken), padded
    // to n * step elements, viewed as [n, step] and the first of each step
    // kept.
    int64_t n = (e - s + st - 1) / st;
    int64_t last = s + (n - 1) * st;
    x = slice(x, *a, s, st == 1 ? e : last + 1);
    if (x && st > 1 && n > 1) {
      x = padWith(x, *a, 0, st - 1, 0.0);
      if (!x)
        return failure();
      SmallVector<int64_t> shape(typeOf(x).getShape());
      shape[*a] = n;
      shape.insert(shape.begin() + *a + 1, st);
      x = slice(reshape(x, shape), *a + 1, 0, 1);
      if (!x)
        return failure();
      shape.erase(shape.begin() + *a + 1);
      x = reshape(x, shape);
    }
    if (!x)
      return failure();
  }
  return setOutput(0, x);
}

LogicalResult Emitter::convertSplit() {
  if (failed(checkAttrs({"axis", "split"})))
    return failure();
  Value x;
  auto a = inputAndAxis(0, x);
  if (!a)
    return failure();
  int64_t dim = typeOf(x).getDimSize(*a);
  SmallVector<int64_t> sizes;
  if (hasInput(1)) {
    const HostTensor *s = needHost(1, "split");
    if (!s)
      return failure();
    sizes = s->allInts();
  } else if (auto s = attrInts("split")) {
    sizes = *s;
  } else {
    int64_t n = node->output_size();
    if (n == 0 || dim % n != 0) {
      error() << "cannot split a dim of " << dim << " into " << n
              << " equal parts";
      return failure();
    }
    sizes.assign(n, dim / n);
  }
  // Each size in [0, dim] before they are added: their sum cannot overflow.
  bool inRange = llvm::all_of(sizes, [&](int64_t s) { return s >= 0 && s <= dim; });
  if (!inRange || int64_t(sizes.size()) != node->output_size() ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim) {
    error() << "the split sizes do not add up to the dim (" << dim
            << ") or do not match the " << node->output_size() << " outputs";
    return failure();
  }
  int64_t start = 0;
  for (auto [k, size] : llvm::enumerate(sizes)) {
    Value part = x;
    if (size != dim)
      part = slice(x, *a, start, start + size);
    if (failed(setOutput(k, part)))
      return failure();
    start += size;
  }
  return success();
}

LogicalResult Emitter::convertGather() {
  if (failed(checkAttrs({"axis"})))
    return failure();
  Value x;
  auto a = inputAndAxis(0, x);
  if (!a)
    return failure();
  int64_t rank = typeOf(x).getRank();
  const HostTensor *idx = host(1);
  if (idx && idx->numel() == 1) {
    // x[..., i, ...]: a slice, then the dim dropped when the index is a
    // scalar.
    int64_t dim = typeOf(x).getDimSize(*a);
    int64_t i = idx->i(0) < 0 ? idx->i(0) + dim : idx->i(0);
    if (i < 0 || i >= dim) {
      error() << "index " << idx->i(0) << " is out of range for a dim of "
              << dim;
      return failure();
    }
    Value y = slice(x, *a, i, i + 1);
    if (!y)
      return failure();
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape.erase(shape.begin() + *a);
    shape.insert(shape.begin() + *a, idx->shape.begin(), idx->shape.end());
    return setOutput(0, reshape(y, shape));
  }
  if (*a == 0 && rank == 2) {
    // Rows of a table: an embedding lookup. Known indices are checked and
    // their negative ones (counted from the end, as ONNX allows) resolved
    // here; the embedding takes indices in [0, rows).
    Value ids;
    if (idx) {
      int64_t rows = typeOf(x).getDimSize(0);
      HostTensor resolved = *idx;
      for (int64_t k = 0; k < resolved.numel(); ++k) {
        int64_t i = idx->i(k);
        if (i < -rows || i >= rows) {
          error() << "index " << i << " is out of range for a dim of " << rows;
          return failure();
        }
        if (!resolved.isFloat() && i < 0)
          resolved.ints[k] = i + rows;
      }
      ids =
          tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(resolved)));
    } else {
      ids = value(1);
    }
    if (!ids)
      return failure();
    return setOutput(0, build<tg::EmbeddingOp>({x, ids}));
  }
  if (idx && idx->numel() > 1) {
    // Several known indices along any axis: one slice each, concatenated
    // along the axis, then the indices' shape in place of the axis.
    int64_t dim = typeOf(x).getDimSize(*a);
    SmallVector<Value> parts;
    for (int64_t k = 0; k < idx->numel(); ++k) {
      int64_t i = idx->i(k);
      if (i < -dim || i >= dim) {
        error() << "index " << i << " is out of range for a dim of " << dim;
        return failure();
      }
      if (i < 0)
        i += dim;
      Value part = slice(x, *a, i, i + 1);
      if (!part)
        return failure();
      parts.push_back(part);
    }
    Value y =
        build<tg::ConcatOp>(parts, {named("dim", b.getI64IntegerAttr(*a))});
    if (!y)
      return failure();
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape.erase(shape.begin() + *a);
    shape.insert(shape.begin() + *a, idx->shape.begin(), idx->shape.end());
    return setOutput(0, reshape(y, shape));
  }
  error() << "ampc supports Gather of indices known at import, or of rows "
             "(axis 0) of a 2-D table";
  return failure();
}

/// Constant-mode padding: zeros (or the given value) concatenated on each
/// side of each padded dim.
LogicalResult Emitter::convertPad() {
  if (failed(checkAttrs({"mode"})))
    return failure();
  std::string mode = attrString("mode", "constant");
  if (mode != "constant")
    return unsupportedValue("mode", "'" + mode + "'", "'constant'");
  Value x = value(0);
  if (!x)
    return failure();
  const HostTensor *pads = needHost(1, "pads");
  if (!pads)
    return failure();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> axes;
  if (hasInput(3)) {
    const HostTensor *a = needHost(3, "axes");
    if (!a)
      return failure();
    for (int64_t k = 0; k < a->numel(); ++k) {
      auto r = axis(a->i(k), rank);
      if (!r)
        return failure();
      axes.push_back(*r);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads->numel() != 2 * int64_t(axes.size())) {
    error() << "'pads' has " << pads->numel() << " values for " << axes.size()
            << " axes";
    return failure();
  }
  double fill = 0.0;
  if (hasInput(2)) {
    const HostTensor *v = needHost(2, "constant_value");
    if (!v)
      return failure();
    if (v->numel() != 1) {
      error() << "its constant_value must hold one element, found "
              << v->numel();
      return failure();
    }
    fill = v->f(0);
  }
  for (auto [k, d] : llvm::enumerate(axes)) {
    int64_t before = pads->i(k), after = pads->i(k + axes.size());
    if (before < 0 || after < 0)
      return unsupportedValue("pads", "with negative entries (cropping)",
                              "pads of 0 or more");
    x = padWith(x, d, before, after, fill);
    if (!x)
      return failure();
  }
  return setOutput(0, x);
}

std::optional<std::vector<bool>> Emitter::triluKeep(ArrayRef<int64_t> shape) {
  if (failed(checkAttrs({"upper"})))
    return std::nullopt;
  if (shape.size() < 2) {
    error() << "needs an input of rank 2 or more, found rank " << shape.size();
    return std::nullopt;
  }
  int64_t k = 0;
  if (hasInput(1)) {
    const HostTensor *kt = needHost(1, "k");
    if (!kt)
      return std::nullopt;
    if (kt->numel() != 1) {
      error() << "its k must be a scalar";
      return std::nullopt;
    }
    k = kt->i(0);
  }
  bool upper = attrInt("upper", 1) != 0;
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  // The mask is a constant of rows x cols elements, made here.
  if (!checkedNumel({rows, cols})) {
    error() << "its mask of " << rows << " x " << cols
            << " elements would be more than 2^28 elements computed at import";
    return std::nullopt;
  }
  std::vector<bool> keep(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep[i * cols + j] = upper ? j - i >= k : j - i <= k;
  return keep;
}

/// Trilu: the input where the triangle's mask (a constant of its last two
/// dims) holds, else 0.
LogicalResult Emitter::convertTrilu() {
  Value x = value(0);
  if (!x)
    return failure();
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  auto keep = triluKeep(shape);
  if (!keep)
    return failure();
  HostTensor mask;
  mask.elt = b.getI1Type();
  mask.shape = {shape[shape.size() - 2], shape.back()};
  mask.ints.assign(keep->begin(), keep->end());
  Value m = tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(mask)));
  return setOutput(0, build<tg::WhereOp>({m, x, scalar(0.0, x)}));
}

/// Resize in nearest mode by whole factors, where each output element is
/// the input element it lies in (the coordinate and rounding modes that
/// give that: asymmetric with floor, PyTorch's export of
/// F.interpolate(mode="nearest"); half_pixel with a rounding one): the
/// input viewed with a 1 after each dim, broadcast to the factors, and
/// reshaped.
LogicalResult Emitter::convertResize() {
  if (failed(checkAttrs({"mode", "coordinate_transformation_mode",
                         "nearest_mode", "cubic_coeff_a", "exclude_outside",
                         "extrapolation_value"})))
    return failure();
  std::string mode = attrString("mode", "nearest");
  if (mode != "nearest")
    return unsupportedValue("mode", "'" + mode + "'", "'nearest'");
  std::string coord =
      attrString("coordinate_transformation_mode", "half_pixel");
  std::string rounding = attrString("nearest_mode", "round_prefer_floor");
  bool halfPixel = coord == "half_pixel" || coord == "pytorch_half_pixel";
  if (!(coord == "asymmetric" && rounding == "floor") &&
      !(halfPixel && rounding != "floor" && rounding != "ceil"))
    return unsupportedValue(
        "coordinate_transformation_mode",
        "'" + coord + "' with nearest_mode '" + rounding + "'",
        "'asymmetric' with 'floor', or 'half_pixel' with a rounding mode");
  Value x = value(0);
  if (!x)
    return failure();
  ArrayRef<int64_t> in = typeOf(x).getShape();
  int64_t rank = in.size();
  // The output size from `sizes` (input 3) or `scales` (input 2).
  SmallVector<int64_t> outShape;
  const HostTensor *scales = host(2);
  if (hasInput(3)) {
    const HostTensor *sizes = needHost(3, "sizes");
    if (!sizes)
      return failure();
    outShape = sizes->allInts();
  } else if (hasInput(2) && (scales = needHost(2, "scales"))) {
    for (int64_t k = 0; k < scales->numel() && k < rank; ++k)
      outShape.push_back(
          toInt64(std::floor(double(in[k]) * scales->f(k))));
  } else {
    if (hasInput(2))
      return failure();
    error() << "needs its scales or sizes input";
    return failure();
  }
  if (int64_t(outShape.size()) != rank) {
    error() << "the scales or sizes give " << outShape.size()
            << " dims for an input of rank " << rank;
    return failure();
  }
  SmallVector<int64_t> viewed, broadcast, factors;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t f = in[d] > 0 ? outShape[d] / in[d] : 0;
    bool whole = f >= 1 && f * in[d] == outShape[d];
    if (whole && scales && !hasInput(3))
      whole = scales->f(d) == double(f);
    if (!whole) {
      error() << "ampc resizes by whole factors only; dim " << d << " goes "
              << "from " << in[d] << " to " << outShape[d];
      return failure();
    }
    viewed.append({in[d], 1});
    broadcast.append({in[d], f});
  }
  Value y = build<tg::BroadcastToOp>({reshape(x, viewed)},
                                     {named("shape", ints(broadcast))});
  return setOutput(0, reshape(y, outShape));
}

/// DepthToSpace and SpaceToDepth: reshape, transpose, reshape (ONNX's
/// definitions).
LogicalResult Emitter::convertDepthToSpace() {
  StringRef op = node->op_type();
  bool toSpace = op == "DepthToSpace";
  if (failed(checkAttrs(toSpace ? ArrayRef<StringRef>{"blocksize", "mode"}
                                : ArrayRef<StringRef>{"blocksize"})))
    return failure();
  Value x = value(0);
  if (!x)
    return failure();
  if (typeOf(x).getRank() != 4) {
    error() << "needs an N, C, H, W input, found rank " << typeOf(x).getRank();
    return failure();
  }
  int64_t bs = attrInt("blocksize", 0);
  auto sh = typeOf(x).getShape();
  int64_t n = sh[0], c = sh[1], h = sh[2], w = sh[3];
  // A blocksize past the dims it divides is refused before bs * bs can
  // overflow (2^40 squared wrapped to 0: a division by zero).
  if (bs < 1 || bs > (toSpace ? c : std::min(h, w)) ||
      (toSpace ? c % (bs * bs) : (h % bs) + (w % bs)) != 0) {
    error() << "blocksize " << bs << " does not divide the input " << typeOf(x);
    return failure();
  }
  std::string mode = attrString("mode", "DCR");
  if (toSpace && mode != "DCR" && mode != "CRD")
    return unsupportedValue("mode", "'" + mode + "'", "'DCR' or 'CRD'");
  SmallVector<int64_t> viewed, perm, out;
  if (!toSpace) {
    viewed = {n, c, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * bs * bs, h / bs, w / bs};
  } else if (mode == "DCR") {
    viewed = {n, bs, bs, c / (bs * bs), h, w};
    perm = {0, 3, 4, 1, 5, 2};
    out = {n, c / (bs * bs), h * bs, w * bs};
  } else {
    viewed = {n, c / (bs * bs), bs, bs, h, w};
    perm = {0, 1, 4, 2, 5, 3};
    out = {n, c / (bs * bs), h * bs, w * bs};
  }
  Value y =
      build<tg::TransposeOp>({reshape(x, viewed)}, {named("perm", ints(perm))});
  return setOutput(0, reshape(y, out));
}

/// Tile: each dim's repeats as an outer factor: the input viewed [1, S] per
/// dim, broadcast to [r, S], reshaped to [r * S].
LogicalResult Emitter::convertTile() {
  if (failed(checkAttrs({})))
    return failure();
  Value x = value(0);
  const HostTensor *repeats = needHost(1, "repeats");
  if (!x || !repeats)
    return failure();
  ArrayRef<int64_t> in = typeOf(x).getShape();
  if (repeats->numel() != int64_t(in.size())) {
    error() << "'repeats' has " << repeats->numel()
            << " values for an input of rank " << in.size();
    return failure();
  }
  SmallVector<int64_t> viewed, broadcast, out;
  for (auto [d, size] : llvm::enumerate(in)) {
    int64_t r = repeats->i(d);
    if (r < 1) {
      error() << "repeat " << r << " of dim " << d << " (ampc takes 1 or more)";
      return failure();
    }
    // The tiled count must fit in int64 (2^62 repeats wrapped around).
    if (size != 0 && r > std::numeric_limits<int64_t>::max() / size) {
      error() << "repeat " << r << " of dim " << d << " (size " << size
              << ") overflows the dim";
      return failure();
    }
    viewed.append({1, size});
    broadcast.append({r, size});
    out.push_back(r * size);
  }
  if (!checkedNumel(out, std::numeric_limits<int64_t>::max())) {
    error() << "the tiled tensor has more elements than an int64 counts";
    return failure();
  }
  Value y = build<tg::BroadcastToOp>({reshape(x, viewed)},
                                     {named("shape", ints(broadcast))});
  return setOutput(0, reshape(y, out));
}

/// ArgMin: `tg.argmax` of the negated input (the first minimum is the first
/// maximum of -x, exactly), then `cast` to INT64.
LogicalResult Emitter::convertArgMin() {
  if (failed(checkAttrs({"axis", "keepdims", "select_last_index"})))
    return failure();
  if (attrInt("select_last_index", 0) != 0)
    return convertArgLast(/*isMin=*/true);
  Value x;
  auto a = inputAndAxis(0, x);
  if (!a)
    return failure();
  if (!isa<FloatType>(typeOf(x).getElementType())) {
    error() << "needs a float input (ArgMin negates it)";
    return failure();
  }
  SmallVector<NamedAttribute> attrs{named("dim", b.getI64IntegerAttr(*a))};
  if (attrInt("keepdims", 1))
    attrs.push_back(named("keepdim", b.getUnitAttr()));
  return setIndexOutput(build<tg::ArgmaxOp>({build<tg::NegOp>({x})}, attrs));
}

/// Size: the input's element count (its shape is static), known at import.
LogicalResult Emitter::convertSize() {
  if (failed(checkAttrs({})))
    return failure();
  auto shape = shapeOf(0);
  if (!shape)
    return failure();
  HostTensor h;
  h.elt = b.getI64Type();
  int64_t n = 1;
  for (int64_t d : *shape)
    n *= d;
  h.ints = {n};
  return setOutput(0, std::move(h));
}

/// EyeLike: ones on the k-th diagonal of a 2-D shape like the input's, of
/// `dtype` (default the input's element type), known at import.
LogicalResult Emitter::convertEyeLike() {
  if (failed(checkAttrs({"dtype", "k"})))
    return failure();
  auto shape = shapeOf(0);
  if (!shape)
    return failure();
  if (shape->size() != 2) {
    error() << "needs a 2-D input, found rank " << shape->size();
    return failure();
  }
  Type elt;
  if (attr("dtype")) {
    elt = elementTypeOf(ctx, attrInt("dtype", 0));
    if (!elt)
      return unsupportedValue("dtype", onnxTypeName(attrInt("dtype", 0)),
                              kOnnxElementTypes);
  } else {
    Entry *e = lookup(0);
    if (!e)
      return failure();
    elt = e->value ? typeOf(e->value).getElementType() : e->host->elt;
  }
  HostTensor h;
  h.elt = elt;
  h.shape = *shape;
  if (failed(sized(h)))
    return failure();
  int64_t k = attrInt("k", 0);
  for (int64_t r = 0; r < (*shape)[0]; ++r) {
    int64_t c = r + k;
    if (c < 0 || c >= (*shape)[1])
      continue;
    if (h.isFloat())
      h.floats[r * (*shape)[1] + c] = 1.0;
    else
      h.ints[r * (*shape)[1] + c] = 1;
  }
  return setOutput(0, std::move(h));
}

/// `[1, ..., n, ..., 1]` (n at `dim` of `rank` dims) holding 0 .. n-1 in f32
/// (exact below 2^24).
Value Emitter::iotaAlong(int64_t n, int64_t dim, int64_t rank) {
  HostTensor h;
  h.elt = b.getF32Type();
  h.shape.assign(rank, 1);
  h.shape[dim] = n;
  if (failed(sized(h)))
    return nullptr;
  for (int64_t k = 0; k < n; ++k)
    h.floats[k] = double(k);
  return tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(h)));
}

/// ArgMax and ArgMin with select_last_index 1: the largest index where x
/// (ArgMin: -x) equals its maximum along the axis: `max`, `equal`, `where`
/// of the indices (else -1), `max`, then `cast` to INT64. Exact for axes
/// below 2^24 elements.
LogicalResult Emitter::convertArgLast(bool isMin) {
  Value x;
  auto a = inputAndAxis(0, x);
  if (!a)
    return failure();
  if (!isa<FloatType>(typeOf(x).getElementType())) {
    error() << "needs a float input";
    return failure();
  }
  int64_t rank = typeOf(x).getRank(), n = typeOf(x).getDimSize(*a);
  if (isMin)
    x = build<tg::NegOp>({x});
  Value m = build<tg::MaxOp>(
      {x}, {named("dims", ints({*a})), named("keepdim", b.getUnitAttr())});
  Value iota = iotaAlong(n, *a, rank);
  if (!m || !iota)
    return failure();
  Value f32x = castTo(x, b.getF32Type());
  m = castTo(m, b.getF32Type());
  if (!f32x || !m)
    return failure();
  Value at = build<tg::WhereOp>(
      {build<tg::EqualOp>({f32x, m}), iota, scalar(-1.0, iota)});
  SmallVector<NamedAttribute> attrs{named("dims", ints({*a}))};
  if (attrInt("keepdims", 1))
    attrs.push_back(named("keepdim", b.getUnitAttr()));
  return setIndexOutput(build<tg::MaxOp>({at}, attrs));
}

/// GatherElements(data, indices, axis): out[.., i, ..] = data[.., indices[..,
/// i, ..], ..] along `axis`, composed as a one-hot selection: the indices
/// (negative ones counted from the end) compared with 0 .. n-1 along a new
/// dim after `axis`, `where` of that with the data (else 0), `sum` over the
/// new dim. Exact, and it differentiates with respect to the data. An index
/// out of range selects nothing (0).
LogicalResult Emitter::convertGatherElements() {
  if (failed(checkAttrs({"axis"})) || failed(requireInputs(2)))
    return failure();
  Value data, idx = value(1);
  auto a = inputAndAxis(0, data);
  if (!a || !idx)
    return failure();
  if (!isa<FloatType>(typeOf(data).getElementType())) {
    error() << "needs float data";
    return failure();
  }
  ArrayRef<int64_t> ds = typeOf(data).getShape(), is = typeOf(idx).getShape();
  int64_t rank = ds.size();
  if (int64_t(is.size()) != rank) {
    error() << "the indices' rank " << is.size() << " differs from the data's "
            << rank;
    return failure();
  }
  if (failed(checkIndexDims(is, ds, *a)))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    if (d == *a || is[d] == ds[d])
      continue;
    data = slice(data, d, 0, is[d]);
    if (!data)
      return failure();
  }
  int64_t n = ds[*a];
  Value fi = indicesFrom(idx, n);
  if (!fi)
    return failure();
  SmallVector<int64_t> ishape(is), dshape(typeOf(data).getShape());
  ishape.insert(ishape.begin() + *a + 1, 1);
  dshape[*a] = 1;
  dshape.insert(dshape.begin() + *a + 1, n);
  Value iota = iotaAlong(n, *a + 1, rank + 1);
  Value mask = build<tg::EqualOp>({reshape(fi, ishape), iota});
  Value picked =
      build<tg::WhereOp>({mask, reshape(data, dshape), scalar(0.0, data)});
  return setOutput(0,
                   build<tg::SumOp>({picked}, {named("dims", ints({*a + 1}))}));
}

/// OneHot(indices, depth, values): `values[1]` where the index (negative
/// ones counted from depth) equals the position along the new dim `axis`,
/// else `values[0]`: `equal` of the indices (as f32, a 1 inserted at the
/// axis) with 0 .. depth-1, then `where`. The depth must be known at import.
LogicalResult Emitter::convertOneHot() {
  if (failed(checkAttrs({"axis"})) || failed(requireInputs(3)))
    return failure();
  Value idx = value(0), vals = value(2);
  const HostTensor *depthT = needHost(1, "depth");
  if (!idx || !vals || !depthT)
    return failure();
  if (depthT->numel() != 1 || depthT->f(0) < 1 || depthT->f(0) > (1 << 24)) {
    error() << "its depth must be one value in [1, 2^24]";
    return failure();
  }
  if (typeOf(vals).getNumElements() != 2) {
    error() << "its values must be [off, on] (2 elements)";
    return failure();
  }
  int64_t depth = int64_t(depthT->f(0));
  int64_t rank = typeOf(idx).getRank();
  auto a = axis(attrInt("axis", -1), rank + 1);
  if (!a)
    return failure();
  Value fi = indicesFrom(idx, depth);
  if (!fi)
    return failure();
  SmallVector<int64_t> shape(typeOf(idx).getShape());
  shape.insert(shape.begin() + *a, 1);
  Value mask =
      build<tg::EqualOp>({reshape(fi, shape), iotaAlong(depth, *a, rank + 1)});
  Value off = reshape(slice(vals, 0, 0, 1), {});
  Value on = reshape(slice(vals, 0, 1, 2), {});
  return setOutput(0, build<tg::WhereOp>({mask, on, off}));
}

/// ScatterElements(data, indices, updates, axis, reduction): along `axis`,
/// out[.., indices[.., i, ..], ..] = updates[.., i, ..] (reduction `add`:
/// added to the data), composed as a one-hot placement: the indices
/// (negative ones counted from the end) compared with 0 .. n-1 along a new
/// dim after `axis`, `where` of that with the updates (else 0) summed over
/// the indices' axis, and `where` an index hit, that, else the data
/// (`add`: data plus it). Differentiable in the data and the updates. With
/// reduction `none`, indices given twice add their updates (ONNX leaves
/// that undefined); an index out of range places nothing.
LogicalResult Emitter::convertScatterElements() {
  if (failed(checkAttrs({"axis", "reduction"})) || failed(requireInputs(3)))
    return failure();
  std::string reduction = attrString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return unsupportedValue("reduction", "'" + reduction + "'",
                            "'none' and 'add'");
  Value data, idx = value(1), upd = value(2);
  auto a = inputAndAxis(0, data);
  if (!a || !idx || !upd)
    return failure();
  if (!isa<FloatType>(typeOf(data).getElementType()) ||
      typeOf(upd).getElementType() != typeOf(data).getElementType()) {
    error() << "needs float data and updates of the data's type";
    return failure();
  }
  ArrayRef<int64_t> ds = typeOf(data).getShape(), is = typeOf(idx).getShape();
  int64_t rank = ds.size();
  if (int64_t(is.size()) != rank || typeOf(upd).getShape() != is) {
    error() << "needs indices and updates of one shape, of the data's rank";
    return failure();
  }
  if (failed(checkIndexDims(is, ds, *a)))
    return failure();
  int64_t n = ds[*a];
  Value fi = indicesFrom(idx, n);
  if (!fi)
    return failure();
  SmallVector<int64_t> ishape(is);
  ishape.insert(ishape.begin() + *a + 1, 1);
  Value mask =
      build<tg::EqualOp>({reshape(fi, ishape), iotaAlong(n, *a + 1, rank + 1)});
  Value placed = build<tg::SumOp>(
      {build<tg::WhereOp>({mask, reshape(upd, ishape), scalar(0.0, upd)})},
      {named("dims", ints({*a}))});
  Value hit = build<tg::MaxOp>(
      {build<tg::WhereOp>({mask, scalar(1.0, fi), scalar(0.0, fi)})},
      {named("dims", ints({*a}))});
  if (!placed || !hit)
    return failure();
  // Back to the data's other dims (the indices' may be smaller).
  for (int64_t d = 0; d < rank; ++d)
    if (d != *a && is[d] < ds[d]) {
      placed = padWith(placed, d, 0, ds[d] - is[d], 0.0);
      hit = padWith(hit, d, 0, ds[d] - is[d], 0.0);
      if (!placed || !hit)
        return failure();
    }
  if (reduction == "add")
    return setOutput(0, build<tg::AddOp>({data, placed}));
  return setOutput(
      0, build<tg::WhereOp>(
             {build<tg::GreaterOp>({hit, scalar(0.0, hit)}), placed, data}));
}

/// TopK(x, k): k rounds of `max` and `argmax` along the axis (of -x for
/// `largest` 0), each masking its pick with -inf (`where` of `equal` to the
/// index) for the next, the picks `concat`enated: sorted, equal values in
/// index order, as ONNX asks. The values differentiate (through `max`). k
/// must be known at import and at most 64 (the rounds are unrolled).
LogicalResult Emitter::convertTopK() {
  if (failed(checkAttrs({"axis", "largest", "sorted"})) ||
      failed(requireInputs(2)))
    return failure();
  Value x;
  auto a = inputAndAxis(-1, x);
  const HostTensor *kT = needHost(1, "k");
  if (!a || !kT)
    return failure();
  if (!typeOf(x).getElementType().isF32()) {
    error() << "needs an f32 input";
    return failure();
  }
  int64_t n = typeOf(x).getDimSize(*a), rank = typeOf(x).getRank();
  if (kT->numel() != 1 || kT->i(0) < 1 || kT->i(0) > std::min<int64_t>(n, 64)) {
    error() << "its k must be one value in [1, min(64, " << n << ")]";
    return failure();
  }
  int64_t k = kT->i(0);
  bool largest = attrInt("largest", 1) != 0;
  Value cur = largest ? x : build<tg::NegOp>({x});
  Value iota = iotaAlong(n, *a, rank);
  SmallVector<Value> vals, idxs;
  auto keep = [&] {
    return SmallVector<NamedAttribute>{named("keepdim", b.getUnitAttr())};
  };
  for (int64_t j = 0; j < k; ++j) {
    SmallVector<NamedAttribute> maxAttrs = keep();
    maxAttrs.push_back(named("dims", ints({*a})));
    SmallVector<NamedAttribute> argAttrs = keep();
    argAttrs.push_back(named("dim", b.getI64IntegerAttr(*a)));
    Value m = build<tg::MaxOp>({cur}, maxAttrs);
    Value i = build<tg::ArgmaxOp>({cur}, argAttrs);
    if (!m || !i || !iota)
      return failure();
    Value i64 = castTo(i, b.getI64Type()), f = castTo(i, b.getF32Type());
    if (!i64 || !f)
      return failure();
    vals.push_back(largest ? m : build<tg::NegOp>({m}));
    idxs.push_back(i64);
    if (j + 1 < k)
      cur = build<tg::WhereOp>(
          {build<tg::EqualOp>({iota, f}),
           scalar(-std::numeric_limits<double>::infinity(), cur), cur});
  }
  auto join = [&](SmallVector<Value> &parts) -> Value {
    if (parts.size() == 1)
      return parts[0];
    return build<tg::ConcatOp>(parts, {named("dim", b.getI64IntegerAttr(*a))});
  };
  if (failed(setOutput(0, join(vals))))
    return failure();
  return setOutput(1, join(idxs));
}
