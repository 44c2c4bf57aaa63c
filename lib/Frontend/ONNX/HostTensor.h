//===- HostTensor.h - Tensors known at import time --------------*- C++ -*-===//
//
// The values an ONNX import knows before run time: constants, non-float
// initializers and the shape arithmetic folded from them (HostFolding.cpp),
// with the helpers that read them from the file (a TensorProto) and turn them
// into attributes.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_LIB_FRONTEND_ONNX_HOSTTENSOR_H
#define AMPC_LIB_FRONTEND_ONNX_HOSTTENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace ampc::onnx_import {

/// `v` as an integer, truncated toward 0: NaN is 0 and values past int64's
/// range saturate (a C++ conversion of those is undefined behaviour, and a
/// model file can hold any float).
inline int64_t toInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775808.0)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

/// Integer arithmetic on values from a model file wraps around (two's
/// complement, as the runtime's integer kernels do) instead of overflowing.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}
/// a ** b by repeated squaring, wrapping; a negative exponent gives 1 for a
/// base of 1, +-1 for -1 and 0 otherwise (as the runtime's integer pow).
inline int64_t wrapPow(int64_t a, int64_t b) {
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  for (; b; b >>= 1, a = wrapMul(a, a))
    if (b & 1)
      r = wrapMul(r, a);
  return r;
}
/// Division truncating toward 0; by 0 gives 0, and INT64_MIN / -1 wraps.
inline int64_t wrapDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return wrapSub(0, a);
  return a / b;
}

/// A tensor known at import time. Integer and bool data live in `ints`,
/// float data in `floats` (exactly one of them is used).
struct HostTensor {
  mlir::Type elt;
  llvm::SmallVector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const { return mlir::isa<mlir::FloatType>(elt); }
  /// The integers wrapped to the element type's width (two's complement;
  /// unsigned for ui8), as the device's integer kernels store results, so
  /// that a value folded at import (200 + 100 in u8 is 44) compares and
  /// divides as the run would; i64 and bool are left as they are.
  void wrapInts() {
    auto it = mlir::dyn_cast_or_null<mlir::IntegerType>(elt);
    if (!it || it.getWidth() <= 1 || it.getWidth() >= 64)
      return;
    unsigned w = it.getWidth();
    uint64_t mask = (uint64_t(1) << w) - 1;
    for (int64_t &v : ints) {
      uint64_t m = static_cast<uint64_t>(v) & mask;
      if (!it.isUnsigned() && (m >> (w - 1)) != 0)
        m |= ~mask;
      v = static_cast<int64_t>(m);
    }
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  double f(int64_t i) const { return isFloat() ? floats[i] : double(ints[i]); }
  int64_t i(int64_t k) const {
    return isFloat() ? toInt64(floats[k]) : ints[k];
  }
  /// Every element as an integer (a shape, sizes, axes).
  llvm::SmallVector<int64_t> allInts() const {
    llvm::SmallVector<int64_t> out;
    for (int64_t k = 0; k < numel(); ++k)
      out.push_back(i(k));
    return out;
  }
  void resize(int64_t n) {
    if (isFloat())
      floats.assign(n, 0.0);
    else
      ints.assign(n, 0);
  }
  void set(int64_t k, const HostTensor &src, int64_t j) {
    if (isFloat())
      floats[k] = src.f(j);
    else
      ints[k] = src.i(j);
  }
};

/// The largest dim of a tensor an import builds (2^31 - 1): the model's
/// inputs, `--input-shape`, and every op's result. With dims and the ops'
/// integer attributes below 2^31, no shape arithmetic overflows int64.
constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();

/// The most elements ampc computes at import (a host tensor or a constant
/// block): 2^28.
constexpr int64_t kMaxHostElements = int64_t(1) << 28;

/// The element count of `shape`; nullopt when a dim is negative or the
/// count exceeds `limit` (no overflow on the way).
std::optional<int64_t> checkedNumel(llvm::ArrayRef<int64_t> shape,
                                    int64_t limit = kMaxHostElements);

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// NumPy broadcasting of shapes; nullopt when they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<llvm::SmallVector<int64_t>> shapes);

/// The linear index into a tensor of shape `in` (broadcast to `out`) of the
/// element at multi-index `idx` of `out`.
int64_t broadcastIndex(llvm::ArrayRef<int64_t> idx, llvm::ArrayRef<int64_t> out,
                       llvm::ArrayRef<int64_t> in);

/// Calls `fn(linearIndex, multiIndex)` for every element of `shape`.
template <typename Fn> void forEachIndex(llvm::ArrayRef<int64_t> shape, Fn fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  llvm::SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    fn(lin, llvm::ArrayRef<int64_t>(idx));
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

/// The tg element type of an ONNX tensor element type; null if none:
/// DOUBLE, FLOAT, FLOAT16, BFLOAT16 are f64, f32, f16, bf16; INT64, INT32,
/// INT16, INT8, UINT8 are i64, i32, i16, i8, ui8; BOOL is i1.
mlir::Type elementTypeOf(mlir::MLIRContext &ctx, int32_t t);

/// The ONNX element types elementTypeOf maps, for error messages.
inline constexpr const char *kOnnxElementTypes =
    "DOUBLE, FLOAT, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT8, BOOL";

/// ONNX's name of element type `t` ("an unknown type" when it has none).
const char *onnxTypeName(int32_t t);

/// Reads a TensorProto; on failure sets `why`.
std::optional<HostTensor> readTensor(mlir::MLIRContext &ctx,
                                     const onnx::TensorProto &t,
                                     std::string &why);

/// The shortest decimal that reads back as the f32 `f` (std::to_chars), as
/// a double: what an exporter that stored a double as f32 started from.
double asWritten(float f);

/// `h` as a dense attribute of its element type and shape.
mlir::DenseElementsAttr toAttr(const HostTensor &h);

} // namespace ampc::onnx_import

#endif // AMPC_LIB_FRONTEND_ONNX_HOSTTENSOR_H
