//===- ResizeOps.cpp - ONNX Resize by interpolation weights ------*- C++ -*-===//
//
// Resize in every mode and coordinate transformation of opsets 13 to 17:
// per resized dim a matmul with a constant matrix of ONNX's interpolation
// weights, computed at import as ONNX's reference computes them.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

/// Resize: nearest by whole factors (`asymmetric` with `floor`, or
/// `half_pixel` with a rounding mode: PyTorch's exports) stays the
/// broadcast of TensorOps.cpp's convertResize; any other mode, coordinate
/// transformation and size is, per resized dim, a matmul with a constant
/// [in, out] matrix of ONNX's interpolation weights (nearest, linear, cubic;
/// the neighbours of the edge-padded input, `exclude_outside`,
/// `cubic_coeff_a`), computed at import as ONNX's reference does; with
/// `tf_crop_and_resize`, positions outside the input are then
/// `extrapolation_value` (a `where`). Differentiable (tg.matmul,
/// tg.transpose, tg.where).
LogicalResult Emitter::convertResizeInterp() {
  if (failed(checkAttrs({"mode", "coordinate_transformation_mode",
                         "nearest_mode", "cubic_coeff_a", "exclude_outside",
                         "extrapolation_value"})))
    return failure();
  std::string mode = attrString("mode", "nearest");
  std::string coord =
      attrString("coordinate_transformation_mode", "half_pixel");
  std::string rounding = attrString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return unsupportedValue("mode", "'" + mode + "'",
                            "'nearest', 'linear' and 'cubic'");
  static const char *coords[] = {"half_pixel",   "pytorch_half_pixel",
                                 "align_corners", "asymmetric",
                                 "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (!llvm::is_contained(coords, coord))
    return unsupportedValue("coordinate_transformation_mode",
                            "'" + coord + "'", "ONNX's six modes of opset 13");
  if (mode == "nearest" && rounding != "round_prefer_floor" &&
      rounding != "round_prefer_ceil" && rounding != "floor" &&
      rounding != "ceil")
    return unsupportedValue("nearest_mode", "'" + rounding + "'",
                            "ONNX's four modes");
  Value x = floatValue(0);
  if (!x)
    return failure();
  ArrayRef<int64_t> in = typeOf(x).getShape();
  int64_t rank = in.size();
  // The output size and scale per dim: from `sizes` (input 3; the scale is
  // out / in) or `scales` (input 2; the size is floor(in * scale)).
  SmallVector<int64_t> out;
  SmallVector<double> scale;
  bool bySizes = hasInput(3);
  if (bySizes) {
    const HostTensor *sizes = needHost(3, "sizes");
    if (!sizes)
      return failure();
    out = sizes->allInts();
  } else {
    const HostTensor *scales = needHost(2, "scales");
    if (!scales)
      return failure();
    for (int64_t k = 0; k < scales->numel(); ++k)
      scale.push_back(scales->f(k));
  }
  if (int64_t(bySizes ? out.size() : scale.size()) != rank) {
    error() << "the " << (bySizes ? "sizes" : "scales") << " give "
            << (bySizes ? out.size() : scale.size())
            << " dims for an input of rank " << rank;
    return failure();
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (bySizes) {
      if (out[d] < 1 || out[d] > (int64_t(1) << 24)) {
        error() << "output size " << out[d] << " of dim " << d
                << " is out of range (1 to 2^24)";
        return failure();
      }
      scale.push_back(double(out[d]) / double(in[d]));
    } else {
      double o = std::floor(double(in[d]) * scale[d]);
      if (!(scale[d] > 0.0) || !(o >= 1.0 && o <= double(int64_t(1) << 24))) {
        error() << "scale " << scale[d] << " of dim " << d
                << " gives no output size from 1 to 2^24";
        return failure();
      }
      out.push_back(int64_t(o));
    }
  }
  // The whole-factor nearest resizes PyTorch exports: a broadcast.
  if (mode == "nearest") {
    bool halfPixel = coord == "half_pixel" || coord == "pytorch_half_pixel";
    bool whole = (coord == "asymmetric" && rounding == "floor") ||
                 (halfPixel && rounding != "floor" && rounding != "ceil");
    for (int64_t d = 0; d < rank && whole; ++d) {
      int64_t f = out[d] / in[d];
      whole = f >= 1 && f * in[d] == out[d] && scale[d] == double(f);
    }
    if (whole)
      return convertResize();
  }
  SmallVector<double> roi;
  if (coord == "tf_crop_and_resize") {
    const HostTensor *r = needHost(1, "roi");
    if (!r)
      return failure();
    if (r->numel() != 2 * rank) {
      error() << "its roi must hold " << 2 * rank << " values, found "
              << r->numel();
      return failure();
    }
    for (int64_t k = 0; k < r->numel(); ++k)
      roi.push_back(r->f(k));
  }
  double a = attrFloat("cubic_coeff_a", -0.75);
  bool excludeOutside = attrInt("exclude_outside", 0) != 0;
  double extrapolation = attrFloat("extrapolation_value", 0.0);
  Type elt = typeOf(x).getElementType();
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = in[d], m = out[d];
    double width = scale[d] * double(n);
    // weights[o * n + i]: output o's weight of input i; outside[o]: out of
    // the roi's range.
    std::vector<double> weights(size_t(m) * size_t(n), 0.0);
    std::vector<bool> outside(m, false);
    bool identity = n == m, anyOutside = false;
    for (int64_t o = 0; o < m; ++o) {
      double xo = double(o), xi;
      if (coord == "half_pixel")
        xi = (xo + 0.5) / scale[d] - 0.5;
      else if (coord == "pytorch_half_pixel")
        xi = width > 1.0 ? (xo + 0.5) / scale[d] - 0.5 : 0.0;
      else if (coord == "align_corners")
        xi = width == 1.0 ? 0.0 : xo * double(n - 1) / (width - 1.0);
      else if (coord == "asymmetric")
        xi = xo / scale[d];
      else if (coord == "tf_half_pixel_for_nn")
        xi = (xo + 0.5) / scale[d];
      else {
        double start = roi[d], end = roi[rank + d];
        xi = width > 1.0 ? start * double(n - 1) +
                               xo * (end - start) * double(n - 1) / (width - 1.0)
                         : 0.5 * (start + end) * double(n - 1);
        if (xi < 0.0 || xi > double(n - 1)) {
          outside[o] = anyOutside = true;
          identity = false;
          continue;
        }
      }
      double base = std::floor(xi);
      double ratio = xi == base ? 1.0 : xi - base;
      SmallVector<double, 4> coeffs;
      if (mode == "nearest") {
        bool ceil = xi == base                     ? true
                    : rounding == "round_prefer_floor" ? ratio > 0.5
                    : rounding == "round_prefer_ceil"  ? ratio >= 0.5
                    : rounding == "ceil";
        coeffs = {ceil ? 0.0 : 1.0, ceil ? 1.0 : 0.0};
      } else if (mode == "linear") {
        coeffs = {1.0 - ratio, ratio};
      } else {
        double r1 = ratio + 1.0, s = 1.0 - ratio, s1 = s + 1.0;
        coeffs = {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
                  ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
                  ((a + 2) * s - (a + 3)) * s * s + 1,
                  ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a};
      }
      // The coefficients' neighbours: the len(coeffs) positions of the
      // input padded by ceil(len / 2) edge copies nearest to xi (ties to
      // the lower), in order.
      int64_t k = coeffs.size(), pad = (k + 1) / 2, len = n + 2 * pad;
      double xp = xi + double(pad);
      int64_t centre = int64_t(std::clamp(std::floor(xp), 0.0, double(len - 1)));
      SmallVector<int64_t> cand;
      for (int64_t p = std::max<int64_t>(0, centre - k - 1);
           p < std::min<int64_t>(len, centre + k + 2); ++p)
        cand.push_back(p);
      llvm::stable_sort(cand, [&](int64_t p, int64_t q) {
        double dp = std::abs(xp - double(p)), dq = std::abs(xp - double(q));
        return dp != dq ? dp < dq : p < q;
      });
      cand.resize(std::min<size_t>(cand.size(), k));
      llvm::sort(cand);
      if (int64_t(cand.size()) != k) {
        error() << "internal: too few neighbours for output " << o;
        return failure();
      }
      if (excludeOutside) {
        double sum = 0.0;
        for (int64_t j = 0; j < k; ++j) {
          int64_t idx = cand[j] - pad;
          if (idx < 0 || idx >= n)
            coeffs[j] = 0.0;
          sum += coeffs[j];
        }
        for (double &c : coeffs)
          c /= sum;
      }
      for (int64_t j = 0; j < k; ++j) {
        int64_t idx = std::clamp<int64_t>(cand[j] - pad, 0, n - 1);
        weights[size_t(o) * n + idx] += coeffs[j];
      }
      for (int64_t i = 0; i < n && identity; ++i)
        identity = weights[size_t(o) * n + i] == (i == o ? 1.0 : 0.0);
    }
    if (identity)
      continue;
    // y along d: moved last, times the [n, m] matrix, moved back.
    SmallVector<int64_t> perm;
    for (int64_t k = 0; k < rank; ++k)
      if (k != d)
        perm.push_back(k);
    perm.push_back(d);
    SmallVector<int64_t> back(rank);
    for (int64_t k = 0; k < rank; ++k)
      back[perm[k]] = k;
    bool last = d == rank - 1;
    Value moved = last ? y
                       : build<tg::TransposeOp>({y}, {named("perm", ints(perm))});
    std::vector<double> mt(size_t(n) * size_t(m));
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < n; ++i)
        mt[size_t(i) * m + o] = weights[size_t(o) * n + i];
    Value matrix = constant(elt, {n, m}, mt);
    Value r = build<tg::MatmulOp>({moved, matrix});
    y = last || !r ? r
                   : build<tg::TransposeOp>({r}, {named("perm", ints(back))});
    if (!y)
      return failure();
    if (anyOutside) {
      SmallVector<int64_t> shape(rank, 1);
      shape[d] = m;
      SmallVector<double> flags(m);
      for (int64_t o = 0; o < m; ++o)
        flags[o] = outside[o] ? 1.0 : 0.0;
      Value flag = constant(elt, shape, flags);
      Value mask = flag ? build<tg::GreaterOp>({flag, scalar(0.5, flag)}) : nullptr;
      y = build<tg::WhereOp>({mask, scalar(extrapolation, y), y});
      if (!y)
        return failure();
    }
  }
  return setOutput(0, y);
}
