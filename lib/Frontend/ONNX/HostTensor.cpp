//===- HostTensor.cpp - Tensors known at import time ------------*- C++ -*-===//
//
// Shape helpers of host tensors, and reading a TensorProto (raw bytes or the
// typed fields, every element type ampc takes) into one.
//
//===----------------------------------------------------------------------===//

#include "HostTensor.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FormatVariadic.h"

#include "onnx/onnx_pb.h"

#include <charconv>
#include <cstring>

using namespace mlir;

namespace {
/// The `T` stored (little-endian, unaligned) at `p`.
template <typename T> T loadAs(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
} // namespace

namespace ampc::onnx_import {

std::optional<int64_t> checkedNumel(ArrayRef<int64_t> shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > limit / d)
      return std::nullopt;
    n *= d;
  }
  if (n > limit)
    return std::nullopt;
  return n;
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::optional<SmallVector<int64_t>>
broadcastShapes(ArrayRef<SmallVector<int64_t>> shapes) {
  size_t rank = 0;
  for (auto &s : shapes)
    rank = std::max(rank, s.size());
  SmallVector<int64_t> out(rank, 1);
  for (auto &s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t &o = out[rank - s.size() + k];
      int64_t d = s[k];
      if (d == o || d == 1)
        continue;
      if (o != 1)
        return std::nullopt;
      o = d;
    }
  return out;
}

int64_t broadcastIndex(ArrayRef<int64_t> idx, ArrayRef<int64_t> out,
                       ArrayRef<int64_t> in) {
  int64_t lin = 0, stride = 1;
  for (int64_t k = int64_t(in.size()) - 1; k >= 0; --k) {
    int64_t o = idx[out.size() - in.size() + k];
    lin += (in[k] == 1 ? 0 : o) * stride;
    stride *= in[k];
  }
  return lin;
}

Type elementTypeOf(MLIRContext &ctx, int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(&ctx);
  case onnx::TensorProto::DOUBLE:
    return Float64Type::get(&ctx);
  case onnx::TensorProto::UINT8:
    return IntegerType::get(&ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::INT8:
    return IntegerType::get(&ctx, 8);
  case onnx::TensorProto::INT16:
    return IntegerType::get(&ctx, 16);
  case onnx::TensorProto::FLOAT16:
    return Float16Type::get(&ctx);
  case onnx::TensorProto::BFLOAT16:
    return BFloat16Type::get(&ctx);
  case onnx::TensorProto::INT64:
    return IntegerType::get(&ctx, 64);
  case onnx::TensorProto::INT32:
    return IntegerType::get(&ctx, 32);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(&ctx, 1);
  default:
    return nullptr;
  }
}

const char *onnxTypeName(int32_t t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(
                   static_cast<onnx::TensorProto_DataType>(t))
                   .c_str()
             : "an unknown type";
}

std::optional<HostTensor>
readTensor(MLIRContext &ctx, const onnx::TensorProto &t, std::string &why) {
  HostTensor h;
  h.elt = elementTypeOf(ctx, t.data_type());
  if (!h.elt) {
    why = std::string("element type ") + onnxTypeName(t.data_type()) +
          " is not supported";
    return std::nullopt;
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    why = "external data is not supported (save the model with its data "
          "inside)";
    return std::nullopt;
  }
  for (int64_t d : t.dims()) {
    if (d < 0) {
      why = "a negative dim";
      return std::nullopt;
    }
    h.shape.push_back(d);
  }
  // A file holds less than 2^31 bytes: a count past that is not in it (and
  // one that overflowed could have matched a short buffer).
  if (!checkedNumel(h.shape, int64_t(1) << 31)) {
    why = "its dims hold more elements than an ONNX file can (2^31)";
    return std::nullopt;
  }
  int64_t n = h.numel();
  const std::string &raw = t.raw_data();
  // The values are `raw_data` (little-endian, `width` bytes each) or the
  // type's repeated field; `fromBytes` and `fromField` decode one element.
  auto read = [&](size_t width, auto fromBytes, const auto &field,
                  auto fromField) -> bool {
    auto store = [&](int64_t k, auto v) {
      if (h.isFloat())
        h.floats[k] = static_cast<double>(v);
      else
        h.ints[k] = static_cast<int64_t>(v);
    };
    if (t.has_raw_data()) {
      if (raw.size() != size_t(n) * width) {
        why = llvm::formatv("{0} bytes of data for {1} elements of {2} bytes",
                            raw.size(), n, width)
                  .str();
        return false;
      }
      h.resize(n);
      for (int64_t k = 0; k < n; ++k)
        store(k, fromBytes(raw.data() + k * width));
      return true;
    }
    if (field.size() != n) {
      why = llvm::formatv("{0} values for {1} elements", field.size(), n).str();
      return false;
    }
    h.resize(n);
    for (int64_t k = 0; k < n; ++k)
      store(k, fromField(field.Get(k)));
    return true;
  };
  auto same = [](auto v) { return v; };
  const llvm::fltSemantics &half = t.data_type() == onnx::TensorProto::FLOAT16
                                       ? APFloat::IEEEhalf()
                                       : APFloat::BFloat();
  auto decode16 = [&](uint16_t bits) {
    return APFloat(half, APInt(16, bits)).convertToFloat();
  };
  bool ok = true;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    ok = read(4, loadAs<float>, t.float_data(), same);
    break;
  case onnx::TensorProto::DOUBLE:
    ok = read(8, loadAs<double>, t.double_data(), same);
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    ok = read(
        2, [&](const char *p) { return decode16(loadAs<uint16_t>(p)); },
        t.int32_data(), [&](int32_t v) { return decode16(uint16_t(v)); });
    break;
  case onnx::TensorProto::INT64:
    ok = read(8, loadAs<int64_t>, t.int64_data(), same);
    break;
  case onnx::TensorProto::INT32:
    ok = read(4, loadAs<int32_t>, t.int32_data(), same);
    break;
  // The narrow integers: raw bytes, or one int32_data entry each.
  case onnx::TensorProto::UINT8:
    ok = read(1, loadAs<uint8_t>, t.int32_data(),
              [](int32_t v) { return uint8_t(v); });
    break;
  case onnx::TensorProto::INT8:
    ok = read(1, loadAs<int8_t>, t.int32_data(),
              [](int32_t v) { return int8_t(v); });
    break;
  case onnx::TensorProto::INT16:
    ok = read(2, loadAs<int16_t>, t.int32_data(),
              [](int32_t v) { return int16_t(v); });
    break;
  case onnx::TensorProto::BOOL:
    ok = read(
        1, [](const char *p) { return loadAs<uint8_t>(p) != 0; },
        t.int32_data(), [](int32_t v) { return v != 0; });
    break;
  default:
    break;
  }
  if (!ok)
    return std::nullopt;
  return h;
}

double asWritten(float f) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f);
  double d = f;
  std::from_chars(buf, res.ptr, d);
  return d;
}

DenseElementsAttr toAttr(const HostTensor &h) {
  auto type = RankedTensorType::get(h.shape, h.elt);
  if (h.elt.isF32()) {
    SmallVector<float> v(h.floats.begin(), h.floats.end());
    return DenseElementsAttr::get(type, ArrayRef<float>(v));
  }
  if (auto ft = dyn_cast<FloatType>(h.elt)) {
    SmallVector<APFloat> v;
    v.reserve(h.floats.size());
    for (double d : h.floats) {
      APFloat a(d);
      bool lost;
      a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      v.push_back(a);
    }
    return DenseElementsAttr::get(type, v);
  }
  unsigned width = h.elt.getIntOrFloatBitWidth();
  if (width == 1) {
    SmallVector<bool> v;
    for (int64_t x : h.ints)
      v.push_back(x != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(v));
  }
  SmallVector<APInt> v;
  v.reserve(h.ints.size());
  for (int64_t x : h.ints)
    v.push_back(APInt(width, static_cast<uint64_t>(x),
                      /*isSigned=*/!h.elt.isUnsignedInteger(),
                      /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, v);
}

} // namespace ampc::onnx_import
