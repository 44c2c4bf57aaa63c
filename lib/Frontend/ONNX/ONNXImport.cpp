//===- ONNXImport.cpp - ONNX models to tg dialect IR ----------------------===//
//
// One pass over the graph's nodes in file order (ONNX requires topological
// order). Each ONNX value is either an IR value or a host tensor: constants,
// non-float initializers and everything computed from them only (shape
// arithmetic) stay on the host and are folded as the nodes are read; a host
// tensor becomes a `tg.constant` when an IR op consumes it. Float
// initializers are parameters, created when an IR op first reads them
// (through the GraphState the caller gives); a batch norm's running mean and
// variance are buffers instead (convertBatchNorm).
//
// Every tg op is built through `build`, which lets the op infer its result
// type and verifies it at once, so a shape error names the node.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/ONNXImport.h"

#include "ONNXCheck.h"

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace ampc;
using namespace ampc::onnx_import;

namespace {

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

/// A tensor known at import time. Integer and bool data live in `ints`,
/// float data in `floats` (exactly one of them is used).
struct HostTensor {
  Type elt;
  SmallVector<int64_t> shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  bool isFloat() const { return isa<FloatType>(elt); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  double f(int64_t i) const { return isFloat() ? floats[i] : double(ints[i]); }
  int64_t i(int64_t k) const {
    return isFloat() ? static_cast<int64_t>(floats[k]) : ints[k];
  }
  /// Every element as an integer (a shape, sizes, axes).
  SmallVector<int64_t> allInts() const {
    SmallVector<int64_t> out;
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

/// The most elements ampc computes at import (a host tensor or a constant
/// block): 2^28.
constexpr int64_t kMaxHostElements = int64_t(1) << 28;

/// The element count of `shape`; nullopt when a dim is negative or the
/// count exceeds `limit` (no overflow on the way).
std::optional<int64_t> checkedNumel(ArrayRef<int64_t> shape,
                                    int64_t limit = kMaxHostElements) {
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

/// NumPy broadcasting of shapes; nullopt when they do not broadcast.
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

/// The linear index into a tensor of shape `in` (broadcast to `out`) of the
/// element at multi-index `idx` of `out`.
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

/// Calls `fn(linearIndex, multiIndex)` for every element of `shape`.
template <typename Fn> void forEachIndex(ArrayRef<int64_t> shape, Fn fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    fn(lin, ArrayRef<int64_t>(idx));
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// Reading the file
//===----------------------------------------------------------------------===//

/// The tg element type of an ONNX tensor element type; null if none.
Type elementTypeOf(MLIRContext &ctx, int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::DOUBLE:
    return Float32Type::get(&ctx);
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

/// The `T` stored (little-endian, unaligned) at `p`.
template <typename T> T loadAs(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// Reads a TensorProto; on failure sets `why`.
std::optional<HostTensor> readTensor(MLIRContext &ctx,
                                     const onnx::TensorProto &t,
                                     std::string &why) {
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

/// The shortest decimal that reads back as the f32 `f` (std::to_chars), as
/// a double: what an exporter that stored a double as f32 started from.
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
    v.push_back(APInt(width, static_cast<uint64_t>(x), /*isSigned=*/true,
                      /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, v);
}

} // namespace

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

struct ONNXModel::Impl {
  MLIRContext *ctx = nullptr;
  onnx::ModelProto model;
  std::string displayPath;
  int64_t opset = 0;
  SmallVector<ModelInput> inputs;
  SmallVector<std::string> outputs;
  /// Initializers by name, read once.
  llvm::StringMap<HostTensor> initializers;
};

ONNXModel::ONNXModel(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
ONNXModel::~ONNXModel() = default;

ArrayRef<ModelInput> ONNXModel::getInputs() const { return impl->inputs; }
ArrayRef<std::string> ONNXModel::getOutputNames() const {
  return impl->outputs;
}

std::string ampc::onnx_import::sanitizeName(StringRef name) {
  std::string s = name.str();
  for (char &c : s)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  return s;
}

static Location fileLoc(MLIRContext &ctx, StringRef path) {
  return FileLineColLoc::get(&ctx, path, 0, 0);
}

std::unique_ptr<ONNXModel>
ONNXModel::load(MLIRContext &ctx, StringRef path, StringRef displayPath,
                std::optional<Location> at) {
  ctx.getOrLoadDialect<tg::TGDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  Location where = at ? *at : fileLoc(ctx, displayPath);
  auto fail = [&](const Twine &message) -> std::unique_ptr<ONNXModel> {
    emitError(where) << message;
    return nullptr;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (std::error_code ec = buffer.getError())
    return fail("cannot read ONNX model '" + displayPath +
                "': " + ec.message());
  auto impl = std::make_unique<Impl>();
  impl->ctx = &ctx;
  impl->displayPath = displayPath.str();
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() > size_t(std::numeric_limits<int>::max()))
    return fail("ONNX model '" + displayPath + "' is larger than 2 GiB");
  if (bytes.empty() ||
      !impl->model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return fail("'" + displayPath +
                "' is not a valid ONNX model (malformed or truncated "
                "protobuf)");
  if (!impl->model.has_graph() || impl->model.graph().node_size() == 0)
    return fail("'" + displayPath + "' is not a valid ONNX model (no graph)");
  std::string why;
  if (!checkModel(impl->model, why))
    return fail("'" + displayPath + "' is not a valid ONNX model: " +
                StringRef(why).trim());
  for (const auto &op : impl->model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      impl->opset = op.version();
  if (impl->opset < 13 || impl->opset > 17)
    return fail("'" + displayPath + "' uses opset " + Twine(impl->opset) +
                " of the default domain; ampc imports opsets 13 to 17 "
                "(export with opset_version between 13 and 17)");

  const onnx::GraphProto &g = impl->model.graph();
  for (const onnx::TensorProto &t : g.initializer()) {
    std::optional<HostTensor> h = readTensor(ctx, t, why);
    if (!h)
      return fail("'" + displayPath + "': initializer '" + t.name() +
                  "': " + why);
    impl->initializers[t.name()] = std::move(*h);
  }
  // Float initializers become parameters (or buffers) named after them,
  // sanitized: two whose names sanitize alike would be one parameter.
  {
    llvm::StringSet<> used;
    for (const onnx::NodeProto &n : g.node())
      for (const std::string &in : n.input())
        used.insert(in);
    for (const onnx::ValueInfoProto &out : g.output())
      used.insert(out.name());
    llvm::StringMap<std::string> bySanitized;
    for (const onnx::TensorProto &t : g.initializer()) {
      if (!used.contains(t.name()) ||
          !isa<FloatType>(impl->initializers[t.name()].elt))
        continue;
      auto [it, fresh] = bySanitized.try_emplace(sanitizeName(t.name()), t.name());
      if (!fresh && it->second != t.name())
        return fail("'" + displayPath + "': initializers '" + it->second +
                    "' and '" + t.name() + "' would both be the parameter '" +
                    it->first() +
                    "' (characters other than letters, digits, '_' and '.' "
                    "become '_'); rename one");
    }
  }
  for (const onnx::ValueInfoProto &in : g.input()) {
    if (impl->initializers.count(in.name()))
      continue;
    ModelInput mi;
    mi.name = in.name();
    const auto &type = in.type();
    if (!type.has_tensor_type())
      return fail("'" + displayPath + "': input '" + in.name() +
                  "' is not a tensor");
    mi.elementType = elementTypeOf(ctx, type.tensor_type().elem_type());
    if (!mi.elementType ||
        type.tensor_type().elem_type() == onnx::TensorProto::DOUBLE)
      return fail("'" + displayPath + "': input '" + in.name() + "' has " +
                  onnxTypeName(type.tensor_type().elem_type()) +
                  " elements (ampc takes FLOAT, FLOAT16, BFLOAT16, INT64, "
                  "INT32 or BOOL)");
    if (!type.tensor_type().has_shape())
      return fail("'" + displayPath + "': input '" + in.name() +
                  "' has no shape (not even a rank)");
    for (const auto &d : type.tensor_type().shape().dim()) {
      mi.dims.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value()
                                                               : -1);
      mi.dimParams.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
    impl->inputs.push_back(std::move(mi));
  }
  for (const onnx::ValueInfoProto &out : g.output())
    impl->outputs.push_back(out.name());
  return std::unique_ptr<ONNXModel>(new ONNXModel(std::move(impl)));
}

//===----------------------------------------------------------------------===//
// Node conversion
//===----------------------------------------------------------------------===//

namespace {

class Emitter {
public:
  Emitter(const ONNXModel::Impl &m, OpBuilder &builder, StringRef prefix,
          GraphState &state)
      : m(m), ctx(*m.ctx), b(builder), prefix(prefix), state(state) {}

  FailureOr<SmallVector<Value>> run(Location callLoc, ValueRange inputs);

private:
  const ONNXModel::Impl &m;
  MLIRContext &ctx;
  OpBuilder &b;
  StringRef prefix;
  GraphState &state;
  /// How many BatchNormalization nodes read each initializer as a running
  /// statistic, and the initializers read anywhere else (see bufferName).
  llvm::StringMap<unsigned> runningStatUses;
  llvm::StringSet<> otherUses;

  struct Entry {
    Value value;
    std::optional<HostTensor> host;
    /// A float initializer: on the host for reading, but a parameter.
    bool isParam = false;
    /// For a parameter: the initializer's name (an Identity passes the
    /// entry on, so its output is the same parameter).
    std::string init;
  };
  llvm::StringMap<Entry> env;

  /// The node being converted.
  const onnx::NodeProto *node = nullptr;
  std::string nodeName;
  Location loc = UnknownLoc::get(&ctx);

  //===--- Errors ---------------------------------------------------------===//

  InFlightDiagnostic error() {
    return emitError(loc) << "ONNX node '" << nodeName << "' ("
                          << node->op_type() << "): ";
  }

  //===--- Values ---------------------------------------------------------===//

  size_t numInputs() const { return node->input_size(); }
  bool hasInput(size_t k) const {
    return k < size_t(node->input_size()) && !node->input(k).empty();
  }

  Entry *lookup(size_t k) {
    auto it = env.find(node->input(k));
    if (it == env.end()) {
      error() << "input '" << node->input(k)
              << "' is not defined before this node";
      return nullptr;
    }
    return &it->second;
  }

  /// The host value of input `k` when it is known at import time (and not a
  /// parameter).
  const HostTensor *host(size_t k) {
    if (!hasInput(k))
      return nullptr;
    auto it = env.find(node->input(k));
    if (it == env.end() || !it->second.host || it->second.isParam)
      return nullptr;
    return &*it->second.host;
  }

  /// Input `k` as a host tensor; an error when it is computed at run time.
  const HostTensor *needHost(size_t k, StringRef what) {
    if (!hasInput(k)) {
      error() << "needs its " << what << " input";
      return nullptr;
    }
    Entry *e = lookup(k);
    if (!e)
      return nullptr;
    const HostTensor *h = host(k);
    // A float initializer where a value must be known (Clip's bounds, Pad's
    // value, Resize's scales: what constant folding tools store as
    // initializers) is its file value here, not a parameter.
    if (!h && e->isParam && e->host)
      h = &*e->host;
    if (!h)
      error() << "its " << what << " ('" << node->input(k)
              << "') must be known at import time, but it is computed from "
                 "the graph's inputs or parameters";
    return h;
  }

  /// Input `k` as an IR value of a float type (else an error at the node).
  Value floatValue(size_t k) {
    Value x = value(k);
    if (x && !isa<FloatType>(typeOf(x).getElementType())) {
      error() << "needs a float input";
      return nullptr;
    }
    return x;
  }

  /// Input `k` as an IR value (a constant or parameter is materialized).
  Value value(size_t k) {
    if (!hasInput(k)) {
      error() << "input " << k << " is missing";
      return nullptr;
    }
    Entry *e = lookup(k);
    if (!e)
      return nullptr;
    if (e->value)
      return e->value;
    DenseElementsAttr attr = toAttr(*e->host);
    if (e->isParam) {
      if (!isa<FloatType>(e->host->elt)) {
        error() << "initializer '" << node->input(k) << "' is not float";
        return nullptr;
      }
      e->value = state.param(prefix.str() + "." + sanitizeName(e->init), attr);
    } else {
      e->value = tg::ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
    }
    return e->value;
  }

  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  /// The shape of input `k`, from the host or the IR.
  std::optional<SmallVector<int64_t>> shapeOf(size_t k) {
    if (!hasInput(k) || !lookup(k))
      return std::nullopt;
    Entry &e = env[node->input(k)];
    if (e.value)
      return SmallVector<int64_t>(typeOf(e.value).getShape());
    return e.host->shape;
  }

  LogicalResult setOutput(size_t k, Value v) {
    if (!v)
      return failure();
    if (k < size_t(node->output_size()) && !node->output(k).empty())
      env[node->output(k)].value = v;
    return success();
  }
  LogicalResult setOutput(size_t k, HostTensor h) {
    if (k < size_t(node->output_size()) && !node->output(k).empty()) {
      Entry e;
      e.host = std::move(h);
      env[node->output(k)] = std::move(e);
    }
    return success();
  }

  /// An output other than the first must not be used (Dropout's mask,
  /// LayerNormalization's statistics).
  LogicalResult onlyFirstOutput();

  //===--- Attributes -----------------------------------------------------===//

  const onnx::AttributeProto *attr(StringRef name) {
    for (const auto &a : node->attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  LogicalResult checkAttrs(ArrayRef<StringRef> known) {
    for (const auto &a : node->attribute())
      if (!llvm::is_contained(known, a.name())) {
        error() << "unsupported attribute '" << a.name() << "'";
        return failure();
      }
    return success();
  }
  int64_t attrInt(StringRef name, int64_t dflt) {
    const auto *a = attr(name);
    return a ? a->i() : dflt;
  }
  double attrFloat(StringRef name, double dflt) {
    const auto *a = attr(name);
    return a ? a->f() : dflt;
  }
  /// A float attribute as the exporter wrote it: the shortest decimal that
  /// reads back as the stored f32 (0.9, not 0.899999976), so that
  /// PyTorch's momentum 0.1 exported as 1 - 0.1 = 0.9f comes back as 0.1.
  double attrFloatAsWritten(StringRef name, double dflt) {
    const auto *a = attr(name);
    return a ? asWritten(a->f()) : dflt;
  }
  std::optional<SmallVector<int64_t>> attrInts(StringRef name) {
    const auto *a = attr(name);
    if (!a)
      return std::nullopt;
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  }
  std::string attrString(StringRef name, StringRef dflt) {
    const auto *a = attr(name);
    return a ? a->s() : dflt.str();
  }
  LogicalResult unsupportedValue(StringRef name, const Twine &value,
                                 StringRef supported) {
    error() << "unsupported value " << value << " of attribute '" << name
            << "' (ampc supports " << supported << ")";
    return failure();
  }

  //===--- Building ops ---------------------------------------------------===//

  NamedAttribute named(StringRef name, Attribute a) {
    return b.getNamedAttr(name, a);
  }
  Attribute ints(ArrayRef<int64_t> v) { return b.getDenseI64ArrayAttr(v); }

  /// An op with `numResults` results whose types it infers; verified at
  /// once. Null (after a diagnostic) when either fails.
  Operation *buildOp(StringRef opName, ValueRange operands,
                     ArrayRef<NamedAttribute> attrs, unsigned numResults) {
    for (Value v : operands)
      if (!v)
        return nullptr;
    OperationState st(loc, opName);
    st.addOperands(operands);
    st.addAttributes(attrs);
    st.addTypes(SmallVector<Type>(numResults, b.getNoneType()));
    Operation *op = b.create(st);
    SmallVector<Type> types;
    auto iface = cast<InferTypeOpInterface>(op);
    if (failed(iface.inferReturnTypes(&ctx, loc, op->getOperands(),
                                      op->getRawDictionaryAttrs(),
                                      op->getPropertiesStorage(),
                                      op->getRegions(), types)) ||
        types.size() != numResults) {
      op->erase();
      return nullptr;
    }
    for (auto [r, t] : llvm::zip(op->getResults(), types))
      r.setType(t);
    if (failed(verify(op))) {
      op->erase();
      return nullptr;
    }
    return op;
  }
  Value build(StringRef opName, ValueRange operands,
              ArrayRef<NamedAttribute> attrs = {}) {
    Operation *op = buildOp(opName, operands, attrs, 1);
    return op ? op->getResult(0) : nullptr;
  }
  template <typename OpTy>
  Value build(ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
    return build(OpTy::getOperationName(), operands, attrs);
  }

  /// A scalar constant of `like`'s element type.
  Value scalar(double v, Value like) {
    Type elt = typeOf(like).getElementType();
    HostTensor h;
    h.elt = elt;
    if (isa<FloatType>(elt))
      h.floats = {v};
    else
      h.ints = {static_cast<int64_t>(v)};
    return tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(h)));
  }

  /// Sizes `h` for its shape; an error when the shape has a negative dim or
  /// more than 2^28 elements.
  LogicalResult sized(HostTensor &h) {
    if (!checkedNumel(h.shape)) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << "[";
      llvm::interleaveComma(h.shape, os);
      os << "]";
      error() << "a tensor of shape " << s << " computed at import has a "
              << "negative dim or more than 2^28 elements";
      return failure();
    }
    h.resize(h.numel());
    return success();
  }

  /// `x` with `before` and `after` elements of value `fill` added along
  /// `dim` (a constant block concatenated on each side).
  Value padWith(Value x, int64_t dim, int64_t before, int64_t after,
                double fill) {
    SmallVector<Value> parts;
    auto block = [&](int64_t n) {
      SmallVector<int64_t> shape(typeOf(x).getShape());
      shape[dim] = n;
      HostTensor h;
      h.elt = typeOf(x).getElementType();
      h.shape = shape;
      if (failed(sized(h)))
        return Value();
      for (int64_t j = 0; j < h.numel(); ++j)
        if (h.isFloat())
          h.floats[j] = fill;
        else
          h.ints[j] = static_cast<int64_t>(fill);
      return Value(
          tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(h))));
    };
    if (before)
      parts.push_back(block(before));
    parts.push_back(x);
    if (after)
      parts.push_back(block(after));
    if (llvm::is_contained(parts, Value()))
      return nullptr;
    if (parts.size() == 1)
      return x;
    return build<tg::ConcatOp>(parts, {named("dim", b.getI64IntegerAttr(dim))});
  }

  /// x[start:end] along `dim`.
  Value slice(Value x, int64_t dim, int64_t start, int64_t end) {
    return build<tg::SliceOp>({x}, {named("dim", b.getI64IntegerAttr(dim)),
                                    named("start", b.getI64IntegerAttr(start)),
                                    named("end", b.getI64IntegerAttr(end))});
  }

  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (!v)
      return nullptr;
    if (typeOf(v).getShape() == shape)
      return v;
    return build<tg::ReshapeOp>({v}, {named("shape", ints(shape))});
  }

  /// Resolves an axis against `rank`; an error when out of range.
  std::optional<int64_t> axis(int64_t a, int64_t rank, StringRef what = "axis") {
    if (a < -rank || a >= rank) {
      error() << what << " " << a << " is out of range for rank " << rank;
      return std::nullopt;
    }
    return a < 0 ? a + rank : a;
  }

  /// Input 0 as `x` and the `axis` attribute (default `dflt`) resolved
  /// against its rank.
  std::optional<int64_t> inputAndAxis(int64_t dflt, Value &x) {
    x = value(0);
    if (!x)
      return std::nullopt;
    return axis(attrInt("axis", dflt), typeOf(x).getRank());
  }

  /// Symmetric 2-D pads from ONNX's [top, left, bottom, right].
  std::optional<SmallVector<int64_t>> pads2d() {
    auto pads = attrInts("pads").value_or(SmallVector<int64_t>{0, 0, 0, 0});
    if (pads.size() != 4) {
      error() << "attribute 'pads' must have 4 values, found " << pads.size();
      return std::nullopt;
    }
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << "[";
      llvm::interleaveComma(pads, os);
      os << "]";
      (void)unsupportedValue("pads", s, "symmetric pads only");
      return std::nullopt;
    }
    return SmallVector<int64_t>{pads[0], pads[1]};
  }
  LogicalResult checkAutoPad() {
    std::string ap = attrString("auto_pad", "NOTSET");
    if (ap != "NOTSET")
      return unsupportedValue("auto_pad", "'" + ap + "'",
                              "NOTSET with explicit pads");
    return success();
  }
  std::optional<SmallVector<int64_t>> pair(StringRef name, int64_t dflt) {
    auto v = attrInts(name).value_or(SmallVector<int64_t>{dflt, dflt});
    if (v.size() != 2) {
      error() << "attribute '" << name << "' must have 2 values (a 2-D "
              << "op), found " << v.size();
      return std::nullopt;
    }
    return v;
  }

  //===--- Converters -----------------------------------------------------===//

  LogicalResult convert();
  LogicalResult convertHost();
  LogicalResult convertConv(bool transposed);
  LogicalResult convertGemm();
  LogicalResult convertPool(bool isMax);
  LogicalResult convertReduce(StringRef opName, bool negate = false);
  LogicalResult convertInstanceNorm();
  LogicalResult convertBatchNorm();
  LogicalResult convertBatchNormComposed(Value x, Value scale, Value bias,
                                         double eps);
  std::string bufferName(size_t k);
  LogicalResult convertDropout();
  LogicalResult convertLayerNorm();
  LogicalResult convertSlice();
  LogicalResult convertSplit();
  LogicalResult convertGather();
  LogicalResult convertReshapeLike();
  std::optional<SmallVector<int64_t>> reshapedShape(ArrayRef<int64_t> in);
  LogicalResult convertClip();
  LogicalResult convertPad();
  LogicalResult convertErf();
  LogicalResult convertTrilu();
  LogicalResult convertResize();
  LogicalResult convertActivation();
  /// Trilu's kept elements of the last two dims of `shape` (row-major),
  /// from its `upper` attribute and `k` input; an error when it cannot be
  /// read.
  std::optional<std::vector<bool>> triluKeep(ArrayRef<int64_t> shape);

  /// New shape for Reshape (0 copies, -1 infers) from `spec`.
  std::optional<SmallVector<int64_t>>
  resolveReshape(ArrayRef<int64_t> in, const HostTensor &spec);
  /// Axes of Squeeze/Unsqueeze: the input at index 1 (opset 13) or the
  /// attribute.
  std::optional<SmallVector<int64_t>> axesInputOrAttr(size_t k);
};

LogicalResult Emitter::onlyFirstOutput() {
  for (int k = 1; k < node->output_size(); ++k) {
    if (node->output(k).empty())
      continue;
    // Used by a later node or as a graph output?
    const auto &g = m.model.graph();
    for (const auto &n : g.node())
      for (const auto &in : n.input())
        if (in == node->output(k)) {
          error() << "output " << k << " ('" << node->output(k)
                  << "') is used, but ampc computes only the first output";
          return failure();
        }
    for (const auto &o : g.output())
      if (o.name() == node->output(k)) {
        error() << "output " << k << " ('" << node->output(k)
                << "') is a graph output, but ampc computes only the first "
                   "output";
        return failure();
      }
  }
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
  int64_t total = 1;
  for (int64_t d : in)
    total *= d;
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

//===--- Host folding -----------------------------------------------------===//

/// Ops whose result is computed at import time when all their inputs are
/// host tensors. Returns failure() with no diagnostic when the op has no
/// host implementation (the caller then builds IR).
LogicalResult Emitter::convertHost() {
  StringRef op = node->op_type();
  auto in = [&](size_t k) { return host(k); };

  if (op == "Identity")
    return setOutput(0, *in(0));
  if (op == "Cast") {
    Type to = elementTypeOf(ctx, attrInt("to", 0));
    if (!to)
      return failure();
    HostTensor h;
    h.elt = to;
    h.shape = in(0)->shape;
    h.resize(in(0)->numel());
    for (int64_t k = 0; k < h.numel(); ++k) {
      if (h.isFloat())
        h.floats[k] = in(0)->f(k);
      else if (to.isInteger(1))
        h.ints[k] = in(0)->f(k) != 0;
      else
        h.ints[k] = in(0)->isFloat() ? int64_t(std::trunc(in(0)->f(k)))
                                     : in(0)->i(k);
    }
    return setOutput(0, std::move(h));
  }
  if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Flatten") {
    // The data is unchanged; only the shape.
    HostTensor h = *in(0);
    auto shape = reshapedShape(h.shape);
    if (!shape)
      return failure();
    h.shape = *shape;
    return setOutput(0, std::move(h));
  }
  if (op == "Gather") {
    const HostTensor &data = *in(0), &idx = *in(1);
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
  if (op == "Concat") {
    int64_t rank = in(0)->shape.size();
    auto a = axis(attrInt("axis", 0), rank);
    if (!a)
      return failure();
    HostTensor h;
    h.elt = in(0)->elt;
    h.shape = in(0)->shape;
    h.shape[*a] = 0;
    for (size_t k = 0; k < numInputs(); ++k) {
      if (in(k)->shape.size() != size_t(rank)) {
        error() << "inputs of different ranks";
        return failure();
      }
      h.shape[*a] += in(k)->shape[*a];
    }
    if (failed(sized(h)))
      return failure();
    int64_t nOuter = 1;
    for (int64_t d = 0; d < *a; ++d)
      nOuter *= h.shape[d];
    int64_t k = 0;
    for (int64_t o = 0; o < nOuter; ++o)
      for (size_t j = 0; j < numInputs(); ++j) {
        int64_t chunk = in(j)->numel() / std::max<int64_t>(nOuter, 1);
        for (int64_t c = 0; c < chunk; ++c)
          h.set(k++, *in(j), o * chunk + c);
      }
    return setOutput(0, std::move(h));
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Equal" || op == "Where" || op == "Expand" || op == "Pow" ||
      op == "Less" || op == "Greater" || op == "Max" || op == "Min") {
    SmallVector<SmallVector<int64_t>> shapes;
    for (size_t k = 0; k < numInputs(); ++k)
      shapes.push_back(in(k)->shape);
    if (op == "Expand") {
      shapes.pop_back();
      shapes.push_back(in(1)->allInts());
    }
    auto out = broadcastShapes(shapes);
    if (!out) {
      error() << "the input shapes do not broadcast";
      return failure();
    }
    HostTensor h;
    const HostTensor &x = *in(0);
    if ((op == "Max" || op == "Min") && numInputs() != 2) {
      // Variadic (one input or more): folded over the inputs.
      h.elt = x.elt;
      h.shape = *out;
      if (failed(sized(h)))
        return failure();
      forEachIndex(*out, [&](int64_t lin, ArrayRef<int64_t> idx) {
        h.set(lin, x, broadcastIndex(idx, *out, x.shape));
        for (size_t k = 1; k < numInputs(); ++k) {
          int64_t j = broadcastIndex(idx, *out, in(k)->shape);
          bool take = h.isFloat()
                          ? (op == "Max" ? in(k)->f(j) > h.floats[lin]
                                         : in(k)->f(j) < h.floats[lin])
                          : (op == "Max" ? in(k)->i(j) > h.ints[lin]
                                         : in(k)->i(j) < h.ints[lin]);
          if (take)
            h.set(lin, *in(k), j);
        }
      });
      return setOutput(0, std::move(h));
    }
    if (op == "Equal" || op == "Less" || op == "Greater")
      h.elt = b.getI1Type();
    else if (op == "Where")
      h.elt = in(1)->elt;
    else
      h.elt = x.elt;
    h.shape = *out;
    if (failed(sized(h)))
      return failure();
    bool isInt = !h.isFloat();
    forEachIndex(*out, [&](int64_t lin, ArrayRef<int64_t> idx) {
      auto at = [&](size_t k) {
        return broadcastIndex(idx, *out, in(k)->shape);
      };
      if (op == "Expand") {
        h.set(lin, x, at(0));
        return;
      }
      if (op == "Where") {
        size_t src = in(0)->i(at(0)) ? 1 : 2;
        h.set(lin, *in(src), at(src));
        return;
      }
      const HostTensor &y = *in(1);
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
        if (op == "Add")
          return T(p + q);
        if (op == "Sub")
          return T(p - q);
        if (op == "Mul")
          return T(p * q);
        if (op == "Div")
          return std::is_integral_v<T> && q == 0 ? T(0) : T(p / q);
        if (op == "Max")
          return std::max(p, q);
        if (op == "Min")
          return std::min(p, q);
        return T(std::pow(double(p), double(q)));
      };
      // Comparisons compare in the operands' kind; their result is bool.
      bool floats = op == "Equal" || op == "Less" || op == "Greater"
                        ? x.isFloat() || y.isFloat()
                        : !isInt;
      if (floats) {
        double r = apply(x.f(i0), y.f(i1));
        if (isInt)
          h.ints[lin] = static_cast<int64_t>(r);
        else
          h.floats[lin] = r;
      } else {
        h.ints[lin] = apply(x.i(i0), y.i(i1));
      }
    });
    return setOutput(0, std::move(h));
  }
  if (op == "Sqrt" || op == "Neg" || op == "Reciprocal") {
    HostTensor h = *in(0);
    for (int64_t k = 0; k < h.numel(); ++k) {
      if (h.isFloat())
        h.floats[k] = op == "Sqrt"  ? std::sqrt(h.floats[k])
                      : op == "Neg" ? -h.floats[k]
                                    : 1.0 / h.floats[k];
      else if (op == "Neg")
        h.ints[k] = -h.ints[k];
      else
        return failure();
    }
    return setOutput(0, std::move(h));
  }
  if (op == "Slice") {
    const HostTensor &data = *in(0);
    int64_t rank = data.shape.size();
    SmallVector<int64_t> start(rank, 0), step(rank, 1), count(data.shape);
    const HostTensor *starts = in(1), *ends = in(2);
    const HostTensor *axes = hasInput(3) ? in(3) : nullptr;
    const HostTensor *steps = hasInput(4) ? in(4) : nullptr;
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
  if (op == "ReduceProd") {
    // Of shapes (torch.var's element count): axes from the attribute.
    const HostTensor &x = *in(0);
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
        h.ints[o] *= x.i(lin);
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
  if (op == "Not") {
    HostTensor h = *in(0);
    if (h.isFloat())
      return failure();
    for (int64_t &v : h.ints)
      v = v == 0;
    return setOutput(0, std::move(h));
  }
  if (op == "Trilu") {
    HostTensor h = *in(0);
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
  if (op == "Range") {
    const HostTensor *s = in(0), *l = in(1), *d = in(2);
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
    int64_t n = std::max<int64_t>(0, int64_t(count));
    h.shape = {n};
    if (failed(sized(h)))
      return failure();
    for (int64_t k = 0; k < n; ++k) {
      if (h.isFloat())
        h.floats[k] = start + k * delta;
      else
        h.ints[k] = s->i(0) + k * d->i(0);
    }
    return setOutput(0, std::move(h));
  }
  if (op == "Transpose") {
    const HostTensor &x = *in(0);
    int64_t rank = x.shape.size();
    SmallVector<int64_t> perm(rank);
    for (int64_t d = 0; d < rank; ++d)
      perm[d] = rank - 1 - d;
    if (auto p = attrInts("perm"))
      perm = *p;
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
  return failure();
}

//===--- The dispatcher ---------------------------------------------------===//

LogicalResult Emitter::convert() {
  StringRef op = node->op_type();
  if (!node->domain().empty() && node->domain() != "ai.onnx") {
    error() << "domain '" << node->domain()
            << "' is not supported (only the default ONNX domain)";
    return failure();
  }

  // Nodes that only need shapes or attributes.
  if (op == "Constant") {
    if (failed(checkAttrs({"value", "value_float", "value_floats",
                           "value_int", "value_ints"})))
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
  if (op == "Shape") {
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
  if (op == "ConstantOfShape") {
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

  // Every input known: fold on the host when the op has a host form.
  bool allHost = numInputs() > 0;
  for (size_t k = 0; k < numInputs(); ++k) {
    if (!hasInput(k))
      continue;
    if (!lookup(k))
      return failure();
    if (!host(k))
      allHost = false;
  }
  if (allHost) {
    // convertHost emits a diagnostic only for real errors; it returns
    // failure silently when it has no host form, and then IR is built.
    bool hadError = false;
    ScopedDiagnosticHandler probe(&ctx, [&](Diagnostic &) {
      hadError = true;
      return failure(); // let it propagate
    });
    if (succeeded(convertHost()))
      return success();
    if (hadError)
      return failure();
  }

  // Elementwise.
  static const llvm::StringMap<StringRef> unary = {
      {"Relu", "tg.relu"},       {"Sigmoid", "tg.sigmoid"},
      {"Tanh", "tg.tanh"},       {"Exp", "tg.exp"},
      {"Log", "tg.log"},         {"Sqrt", "tg.sqrt"},
      {"Neg", "tg.neg"},         {"Abs", "tg.abs"},
      {"Reciprocal", "tg.reciprocal"}};
  static const llvm::StringMap<StringRef> binary = {
      {"Add", "tg.add"},         {"Sub", "tg.sub"},
      {"Mul", "tg.mul"},         {"Div", "tg.div"},
      {"Pow", "tg.pow"},         {"Max", "tg.maximum"},
      {"Min", "tg.minimum"},     {"Equal", "tg.equal"},
      {"Less", "tg.less"},       {"Greater", "tg.greater"},
      {"LessOrEqual", "tg.less_equal"},
      {"GreaterOrEqual", "tg.greater_equal"}};
  if (auto it = unary.find(op); it != unary.end()) {
    if (failed(checkAttrs({})))
      return failure();
    return setOutput(0, build(it->second, {value(0)}));
  }
  if (auto it = binary.find(op); it != binary.end()) {
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
  if (op == "Identity") {
    // The same entry: an Identity of an initializer is that initializer
    // (torch.onnx.export names a batch norm's running statistics so when
    // they equal another initializer).
    if (failed(checkAttrs({})) || !hasInput(0) || !lookup(0))
      return failure();
    Entry e = env[node->input(0)];
    if (node->output_size() > 0 && !node->output(0).empty())
      env[node->output(0)] = std::move(e);
    return success();
  }
  if (op == "Dropout")
    return convertDropout();
  if (op == "Erf")
    return convertErf();
  if (op == "Trilu")
    return convertTrilu();
  if (op == "Resize")
    return convertResize();
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    // reshape, transpose, reshape (ONNX's definitions).
    bool toSpace = op == "DepthToSpace";
    if (failed(checkAttrs(toSpace ? ArrayRef<StringRef>{"blocksize", "mode"}
                                  : ArrayRef<StringRef>{"blocksize"})))
      return failure();
    Value x = value(0);
    if (!x)
      return failure();
    if (typeOf(x).getRank() != 4) {
      error() << "needs an N, C, H, W input, found rank "
              << typeOf(x).getRank();
      return failure();
    }
    int64_t bs = attrInt("blocksize", 0);
    auto sh = typeOf(x).getShape();
    int64_t n = sh[0], c = sh[1], h = sh[2], w = sh[3];
    if (bs < 1 || (toSpace ? c % (bs * bs) : (h % bs) + (w % bs)) != 0) {
      error() << "blocksize " << bs << " does not divide the input "
              << typeOf(x);
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
    Value y = build<tg::TransposeOp>({reshape(x, viewed)},
                                     {named("perm", ints(perm))});
    return setOutput(0, reshape(y, out));
  }
  if (op == "Tile") {
    // Each dim's repeats as an outer factor: the input viewed [1, S] per
    // dim, broadcast to [r, S], reshaped to [r * S].
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
      viewed.append({1, size});
      broadcast.append({r, size});
      out.push_back(r * size);
    }
    Value y = build<tg::BroadcastToOp>({reshape(x, viewed)},
                                       {named("shape", ints(broadcast))});
    return setOutput(0, reshape(y, out));
  }
  if (op == "ArgMax") {
    // tg.argmax's i32 index, cast to ONNX's int64.
    if (failed(checkAttrs({"axis", "keepdims", "select_last_index"})))
      return failure();
    if (attrInt("select_last_index", 0) != 0)
      return unsupportedValue("select_last_index", "1", "0 (the first maximum)");
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
  if (op == "CumSum") {
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
    return setOutput(0, build<tg::CumsumOp>(
                            {x}, {named("dim", b.getI64IntegerAttr(*a))}));
  }
  if (op == "Not") {
    // x == false.
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
  if (op == "Pad")
    return convertPad();
  if (op == "HardSigmoid" || op == "HardSwish") {
    if (failed(checkAttrs(op == "HardSigmoid" ? ArrayRef<StringRef>{"alpha",
                                                                     "beta"}
                                              : ArrayRef<StringRef>{})))
      return failure();
    double alpha = op == "HardSigmoid" ? attrFloat("alpha", 0.2) : 1.0 / 6.0;
    double beta = op == "HardSigmoid" ? attrFloat("beta", 0.5) : 0.5;
    Value x = value(0);
    if (!x)
      return failure();
    Value t = build<tg::AddOp>({build<tg::MulOp>({x, scalar(alpha, x)}),
                                scalar(beta, x)});
    if (!t)
      return failure();
    t = build<tg::MinimumOp>({build<tg::MaximumOp>({t, scalar(0.0, x)}),
                              scalar(1.0, x)});
    if (op == "HardSwish")
      t = build<tg::MulOp>({x, t});
    return setOutput(0, t);
  }
  if (op == "LeakyRelu" || op == "Elu" || op == "Selu" || op == "PRelu" ||
      op == "Softplus")
    return convertActivation();
  if (op == "Clip")
    return convertClip();
  if (op == "Conv")
    return convertConv(false);
  if (op == "ConvTranspose")
    return convertConv(true);
  if (op == "Gemm")
    return convertGemm();
  if (op == "MatMul") {
    if (failed(checkAttrs({})))
      return failure();
    return setOutput(0, build<tg::MatmulOp>({value(0), value(1)}));
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    if (failed(checkAttrs({"axis"})))
      return failure();
    Value x;
    auto a = inputAndAxis(-1, x);
    if (!a)
      return failure();
    return setOutput(0, build(op == "Softmax" ? "tg.softmax" : "tg.log_softmax",
                              {x}, {named("dim", b.getI64IntegerAttr(*a))}));
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
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
    return setOutput(0, build(op == "GlobalAveragePool" ? "tg.mean" : "tg.max",
                              {x},
                              {named("dims", ints(dims)),
                               named("keepdim", b.getUnitAttr())}));
  }
  if (op == "MaxPool")
    return convertPool(true);
  if (op == "AveragePool")
    return convertPool(false);
  if (op == "ReduceMean")
    return convertReduce("tg.mean");
  if (op == "ReduceSum")
    return convertReduce("tg.sum");
  if (op == "ReduceMax")
    return convertReduce("tg.max");
  if (op == "ReduceMin")
    return convertReduce("tg.max", /*negate=*/true);
  if (op == "ReduceL1" || op == "ReduceL2" || op == "ReduceSumSquare" ||
      op == "ReduceLogSum")
    return convertReduce("tg.sum");
  if (op == "ReduceLogSumExp")
    return convertReduce("tg.logsumexp");
  if (op == "InstanceNormalization")
    return convertInstanceNorm();
  if (op == "ReduceProd") {
    error() << "ampc folds ReduceProd of values known at import (shapes) "
               "only, but its input '"
            << node->input(0)
            << "' is computed from the graph's inputs or parameters";
    return failure();
  }
  if (op == "BatchNormalization")
    return convertBatchNorm();
  if (op == "LayerNormalization")
    return convertLayerNorm();
  if (op == "Flatten" || op == "Reshape" || op == "Squeeze" ||
      op == "Unsqueeze" || op == "Expand")
    return convertReshapeLike();
  if (op == "Transpose") {
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
  if (op == "Concat") {
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
    return setOutput(0, build<tg::ConcatOp>(xs, {named("dim", b.getI64IntegerAttr(*a))}));
  }
  if (op == "Slice")
    return convertSlice();
  if (op == "Split")
    return convertSplit();
  if (op == "Gather")
    return convertGather();
  if (op == "Where") {
    if (failed(checkAttrs({})))
      return failure();
    return setOutput(0, build<tg::WhereOp>({value(0), value(1), value(2)}));
  }
  if (op == "Cast") {
    if (failed(checkAttrs({"to"})))
      return failure();
    Type to = elementTypeOf(ctx, attrInt("to", 0));
    if (!to)
      return unsupportedValue("to", onnxTypeName(attrInt("to", 0)),
                              "FLOAT, FLOAT16, BFLOAT16, INT64, INT32, BOOL");
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
  error() << "op type '" << op << "' is not supported by ampc's ONNX importer";
  return failure();
}

//===--- Converters -------------------------------------------------------===//

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
    error() << "'pads' has " << pads->numel() << " values for "
            << axes.size() << " axes";
    return failure();
  }
  double fill = 0.0;
  if (hasInput(2)) {
    const HostTensor *v = needHost(2, "constant_value");
    if (!v)
      return failure();
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

std::optional<std::vector<bool>>
Emitter::triluKeep(ArrayRef<int64_t> shape) {
  if (failed(checkAttrs({"upper"})))
    return std::nullopt;
  if (shape.size() < 2) {
    error() << "needs an input of rank 2 or more, found rank "
            << shape.size();
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
  std::string coord = attrString("coordinate_transformation_mode", "half_pixel");
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
          static_cast<int64_t>(std::floor(double(in[k]) * scales->f(k))));
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

/// LeakyRelu, PRelu, Elu, Selu and Softplus from elementwise tg ops, with
/// PyTorch's gradients: the positive branch where x > 0 (so x = 0 takes the
/// negative one's slope, as torch's backward does), exp of min(x, 0) so
/// that the branch not taken never overflows, and Softplus as
/// max(x, 0) + log(1 + exp(-|x|)).
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
  if (op == "Softplus") {
    Value pos = build<tg::MaximumOp>({x, scalar(0.0, x)});
    Value tail = build<tg::LogOp>({build<tg::AddOp>(
        {scalar(1.0, x),
         build<tg::ExpOp>({build<tg::NegOp>({build<tg::AbsOp>({x})})})})});
    return setOutput(0, build<tg::AddOp>({pos, tail}));
  }
  Value positive = build<tg::GreaterOp>({x, scalar(0.0, x)});
  Value negative;
  if (op == "LeakyRelu") {
    negative = build<tg::MulOp>({x, scalar(attrFloat("alpha", 0.01), x)});
  } else if (op == "PRelu") {
    Value slope = value(1);
    if (!slope)
      return failure();
    negative = build<tg::MulOp>({x, slope});
    if (negative && typeOf(negative).getShape() != typeOf(x).getShape()) {
      error() << "the slope " << typeOf(slope)
              << " must broadcast to the input " << typeOf(x);
      return failure();
    }
  } else {
    double alpha = attrFloat("alpha", op == "Elu" ? 1.0 : 1.67326319217681884765625);
    Value em1 = build<tg::SubOp>(
        {build<tg::ExpOp>({build<tg::MinimumOp>({x, scalar(0.0, x)})}),
         scalar(1.0, x)});
    negative = build<tg::MulOp>({em1, scalar(alpha, x)});
  }
  Value y = build<tg::WhereOp>({positive, x, negative});
  if (y && op == "Selu")
    y = build<tg::MulOp>(
        {y, scalar(attrFloat("gamma", 1.05070102214813232421875), x)});
  return setOutput(0, y);
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
       build<tg::AddOp>({scalar(1.0, x), build<tg::MulOp>({ax, scalar(p, x)})})});
  Value poly = scalar(a[4], x);
  for (int k = 3; k >= 0; --k)
    poly = build<tg::AddOp>({build<tg::MulOp>({poly, t}), scalar(a[k], x)});
  poly = build<tg::MulOp>({poly, t});
  Value gauss = build<tg::ExpOp>({build<tg::NegOp>({build<tg::MulOp>({x, x})})});
  Value y = build<tg::SubOp>({scalar(1.0, x), build<tg::MulOp>({poly, gauss})});
  Value negative = build<tg::LessOp>({x, scalar(0.0, x)});
  return setOutput(0, build<tg::WhereOp>({negative, build<tg::NegOp>({y}), y}));
}

LogicalResult Emitter::convertConv(bool transposed) {
  if (failed(checkAttrs({"dilations", "group", "kernel_shape", "pads",
                         "strides", "auto_pad", "output_padding"})))
    return failure();
  if (!transposed && attr("output_padding"))
    return checkAttrs({"dilations", "group", "kernel_shape", "pads",
                       "strides", "auto_pad"});
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
      if (
          (shape[2 + d] + 2 * (*pads)[d] - (*kernel)[d]) % (*stride)[d] != 0)
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
      Value y = build("tg.max_pool2d", {input},
                      {named("kernel", ints(*kernel)),
                       named("stride", ints(*stride)),
                       named("padding", ints({0, 0}))});
      if (y && (typeOf(y).getDimSize(2) != outs[0] ||
                typeOf(y).getDimSize(3) != outs[1]))
        return unsupportedValue("ceil_mode", "1 with these strides and "
                                             "kernel",
                                "ceil mode where the kernel is at least the "
                                "stride");
      return setOutput(0, y);
    }
  }
  Value y = build(isMax ? "tg.max_pool2d" : "tg.avg_pool2d", {value(0)},
                  {named("kernel", ints(*kernel)),
                   named("stride", ints(*stride)),
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
      scale.floats[i * outShape[3] + j] =
          double((*kernel)[0] * (*kernel)[1]) / double(inside(0, i) * inside(1, j));
  Value factor =
      tg::ConstantOp::create(b, loc, cast<ElementsAttr>(toAttr(scale)));
  return setOutput(0, build<tg::MulOp>({y, factor}));
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
              named("eps", b.getF64FloatAttr(
                               attrFloatAsWritten("epsilon", 1e-5)))}));
}

LogicalResult Emitter::convertReduce(StringRef opName, bool negate) {
  StringRef op = node->op_type();
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  bool axesInput = op == "ReduceSum";
  if (failed(checkAttrs(axesInput ? ArrayRef<StringRef>{"keepdims",
                                                        "noop_with_empty_axes"}
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
  if (training && typeOf(x).getNumElements() / std::max<int64_t>(channels, 1) < 2) {
    error() << "a batch norm in a training graph needs more than one value "
               "per channel, got input "
            << typeOf(x);
    return failure();
  }
  Value y = build<tg::BatchNormOp>(
      {x, scale, bias, stats[0], stats[1]},
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
    std::optional<int64_t> a = given < 0 ? given + rank : given;
    int64_t lo = 1, hi = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < *a ? lo : hi) *= in[d];
    return SmallVector<int64_t>{lo, hi};
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
    if (*s == in)
      return setOutput(0, x);
    return setOutput(0, build<tg::BroadcastToOp>({x}, {named("shape", ints(*s))}));
  }
  auto out = reshapedShape(in);
  if (!out)
    return failure();
  return setOutput(0, reshape(x, *out));
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
    if (dim % n != 0) {
      error() << "cannot split a dim of " << dim << " into " << n
              << " equal parts";
      return failure();
    }
    sizes.assign(n, dim / n);
  }
  if (int64_t(sizes.size()) != node->output_size() ||
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
          error() << "index " << i << " is out of range for a dim of "
                  << rows;
          return failure();
        }
        if (!resolved.isFloat() && i < 0)
          resolved.ints[k] = i + rows;
      }
      ids = tg::ConstantOp::create(b, loc,
                                   cast<ElementsAttr>(toAttr(resolved)));
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
    Value y = build<tg::ConcatOp>(parts,
                                  {named("dim", b.getI64IntegerAttr(*a))});
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

//===--- The graph --------------------------------------------------------===//

FailureOr<SmallVector<Value>> Emitter::run(Location callLoc,
                                           ValueRange inputs) {
  const onnx::GraphProto &g = m.model.graph();
  if (inputs.size() != m.inputs.size()) {
    emitError(callLoc) << "the ONNX model '" << m.displayPath << "' takes "
                       << m.inputs.size() << " input"
                       << (m.inputs.size() == 1 ? "" : "s") << ", got "
                       << inputs.size();
    return failure();
  }
  for (auto [in, v] : llvm::zip(m.inputs, inputs)) {
    auto t = cast<RankedTensorType>(v.getType());
    bool ok = t.getElementType() == in.elementType &&
              t.getRank() == int64_t(in.dims.size());
    for (size_t d = 0; ok && d < in.dims.size(); ++d)
      ok = in.dims[d] < 0 || in.dims[d] == t.getDimSize(d);
    if (!ok) {
      std::string want;
      llvm::raw_string_ostream os(want);
      os << in.elementType << "[";
      llvm::interleaveComma(in.dims, os, [&](int64_t d) {
        if (d < 0)
          os << "?";
        else
          os << d;
      });
      os << "]";
      std::string got;
      llvm::raw_string_ostream gs(got);
      if (t.getElementType().isInteger(1))
        gs << "bool";
      else
        gs << t.getElementType();
      gs << "[";
      llvm::interleaveComma(t.getShape(), gs);
      gs << "]";
      emitError(callLoc) << "input '" << in.name << "' of the ONNX model '"
                         << m.displayPath << "' is " << want << ", got "
                         << got;
      return failure();
    }
    env[in.name].value = v;
  }
  for (const onnx::NodeProto &n : g.node())
    for (int k = 0; k < n.input_size(); ++k) {
      if (n.op_type() == "BatchNormalization" && (k == 3 || k == 4))
        ++runningStatUses[n.input(k)];
      else
        otherUses.insert(n.input(k));
    }
  for (const onnx::ValueInfoProto &out : g.output())
    otherUses.insert(out.name());
  for (const auto &[name, h] : m.initializers) {
    Entry e;
    e.host = h;
    e.isParam = isa<FloatType>(h.elt);
    e.init = name.str();
    env[name] = std::move(e);
  }
  for (int k = 0; k < g.node_size(); ++k) {
    node = &g.node(k);
    nodeName = node->name().empty()
                   ? node->op_type() + "_" + std::to_string(k)
                   : node->name();
    loc = NameLoc::get(
        b.getStringAttr(nodeName),
        FileLineColLoc::get(&ctx, m.displayPath + ":" + nodeName, 0, 0));
    // The tg ops' own diagnostics (shape and type errors) also name the
    // node and its op type.
    ScopedDiagnosticHandler nameNode(&ctx, [&](Diagnostic &diag) {
      if (!StringRef(diag.str()).starts_with("ONNX node '"))
        diag << " (in ONNX node '" << nodeName << "', " << node->op_type()
             << ")";
      return failure(); // Reported by the enclosing handler.
    });
    if (failed(convert()))
      return failure();
  }
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : g.output()) {
    auto it = env.find(out.name());
    if (it == env.end()) {
      emitError(fileLoc(ctx, m.displayPath))
          << "graph output '" << out.name() << "' is not computed";
      return failure();
    }
    Entry &e = it->second;
    if (!e.value) {
      DenseElementsAttr attr = toAttr(*e.host);
      e.value = e.isParam
                    ? state.param(prefix.str() + "." + sanitizeName(e.init), attr)
                    : Value(tg::ConstantOp::create(b, fileLoc(ctx, m.displayPath),
                                                   cast<ElementsAttr>(attr)));
    }
    results.push_back(e.value);
  }
  return results;
}

} // namespace

GraphState::~GraphState() = default;

FailureOr<SmallVector<Value>> ONNXModel::emit(OpBuilder &builder,
                                              Location callLoc,
                                              ValueRange inputs,
                                              StringRef prefix,
                                              GraphState &state) const {
  Emitter e(*impl, builder, prefix, state);
  return e.run(callLoc, inputs);
}

//===----------------------------------------------------------------------===//
// `ampc FILE.onnx`
//===----------------------------------------------------------------------===//

bool ampc::onnx_import::parseInputShape(StringRef text, std::string &name,
                                        std::vector<int64_t> &dims) {
  auto [n, spec] = text.rsplit('=');
  if (n.empty() || spec.empty() || !text.contains('='))
    return false;
  name = n.str();
  dims.clear();
  SmallVector<StringRef> parts;
  spec.split(parts, 'x');
  for (StringRef p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d <= 0)
      return false;
    dims.push_back(d);
  }
  return true;
}

OwningOpRef<ModuleOp> ampc::onnx_import::importONNXFile(
    MLIRContext &ctx, StringRef path,
    const std::map<std::string, std::vector<int64_t>> &inputShapes,
    std::string *graphName, std::vector<std::string> *outputNames) {
  std::unique_ptr<ONNXModel> model =
      ONNXModel::load(ctx, path, path, std::nullopt);
  if (!model)
    return nullptr;
  Location at = fileLoc(ctx, path);
  std::string name = sanitizeName(llvm::sys::path::stem(path));
  std::replace(name.begin(), name.end(), '.', '_');
  if (name.empty() || llvm::isDigit(name[0]))
    name = "m_" + name;

  for (const auto &[given, dims] : inputShapes)
    if (llvm::none_of(model->getInputs(),
                      [&](const ModelInput &in) { return in.name == given; })) {
      std::string names;
      llvm::raw_string_ostream os(names);
      llvm::interleaveComma(model->getInputs(), os,
                            [&](const ModelInput &in) { os << in.name; });
      emitError(at) << "--input-shape names '" << given
                    << "', which is not an input of the model (its inputs: "
                    << names << ")";
      return nullptr;
    }

  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(at);
  b.setInsertionPointToEnd(module->getBody());
  // Each input's dims: the model's, then --input-shape's. A dim_param names
  // one size wherever it appears, so the shapes given must agree on it, and
  // an input without a shape of its own takes the sizes that other inputs'
  // shapes give its dim_params.
  struct ParamSize {
    int64_t size;
    std::string input;
  };
  llvm::StringMap<ParamSize> paramSizes;
  auto paramOf = [](const ModelInput &in, size_t d) {
    return d < in.dimParams.size() ? StringRef(in.dimParams[d]) : StringRef();
  };
  std::vector<SmallVector<int64_t>> inputDims;
  for (const ModelInput &in : model->getInputs()) {
    SmallVector<int64_t> dims = in.dims;
    auto given = inputShapes.find(in.name);
    if (given != inputShapes.end()) {
      if (given->second.size() != dims.size()) {
        emitError(at) << "--input-shape " << in.name << ": the model's input "
                      << "has rank " << dims.size() << ", the shape given "
                      << given->second.size();
        return nullptr;
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] > 0 && dims[d] != given->second[d]) {
          emitError(at) << "--input-shape " << in.name << ": dim " << d
                        << " is " << dims[d] << " in the model, "
                        << given->second[d] << " given";
          return nullptr;
        }
        dims[d] = given->second[d];
        StringRef param = paramOf(in, d);
        if (param.empty())
          continue;
        auto [it, fresh] =
            paramSizes.try_emplace(param, ParamSize{dims[d], in.name});
        if (!fresh && it->second.size != dims[d]) {
          emitError(at) << "--input-shape " << in.name << ": dim " << d
                        << " ('" << param << "') is " << dims[d]
                        << ", and the shape of input '" << it->second.input
                        << "' makes '" << param << "' " << it->second.size;
          return nullptr;
        }
      }
    }
    inputDims.push_back(std::move(dims));
  }
  SmallVector<Type> argTypes;
  for (auto [in, dims] : llvm::zip_equal(model->getInputs(), inputDims)) {
    for (size_t d = 0; d < dims.size(); ++d) {
      StringRef param = paramOf(in, d);
      auto known = param.empty() ? paramSizes.end() : paramSizes.find(param);
      if (dims[d] < 0 && known != paramSizes.end())
        dims[d] = known->second.size;
    }
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 0) {
        emitError(at) << "input '" << in.name << "' has a dynamic dim " << d
                      << "; give its shape with --input-shape " << in.name
                      << "=D0x...x" << "D" << dims.size() - 1;
        return nullptr;
      }
    argTypes.push_back(RankedTensorType::get(dims, in.elementType));
  }
  auto func = func::FuncOp::create(b, at, name, b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [k, in] : llvm::enumerate(model->getInputs())) {
    entry->getArgument(k).setLoc(NameLoc::get(b.getStringAttr(in.name), at));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        tg::TGDialect::kInputAttrName, b.getStringAttr(in.name))));
  }
  b.setInsertionPointToStart(entry);
  // An inference graph: parameters and buffers are arguments appended as
  // the model first reads them; nothing is updated.
  struct InferenceState : GraphState {
    OpBuilder &b;
    Block *entry;
    Location at;
    SmallVector<Type> &argTypes;
    SmallVector<DictionaryAttr> &argAttrs;
    llvm::StringMap<Value> args;
    InferenceState(OpBuilder &b, Block *entry, Location at,
                   SmallVector<Type> &argTypes,
                   SmallVector<DictionaryAttr> &argAttrs)
        : b(b), entry(entry), at(at), argTypes(argTypes), argAttrs(argAttrs) {}
    Value arg(StringRef role, StringRef pname, DenseElementsAttr value) {
      auto it = args.find(pname);
      if (it != args.end())
        return it->second;
      Value arg = entry->addArgument(value.getType(),
                                     NameLoc::get(b.getStringAttr(pname), at));
      argTypes.push_back(value.getType());
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(role, b.getStringAttr(pname)),
           b.getNamedAttr(tg::TGDialect::kInitAttrName,
                          tg::InitAttr::get(b.getContext(),
                                            tg::InitKind::zeros, 0, 0)),
           b.getNamedAttr(tg::TGDialect::kInitValueAttrName, value)}));
      args[pname] = arg;
      return arg;
    }
    Value param(StringRef pname, DenseElementsAttr value) override {
      return arg(tg::TGDialect::kParamAttrName, pname, value);
    }
    Value buffer(StringRef pname, DenseElementsAttr value) override {
      return arg(tg::TGDialect::kBufferAttrName, pname, value);
    }
  } state(b, entry, at, argTypes, argAttrs);
  // A copy: parameters are appended to the block while the graph is built.
  SmallVector<Value> inputs(entry->getArguments());
  FailureOr<SmallVector<Value>> outs = model->emit(b, at, inputs, name, state);
  if (failed(outs))
    return nullptr;
  func::ReturnOp::create(b, at, *outs);
  func.setFunctionType(b.getFunctionType(argTypes, TypeRange(ValueRange(*outs))));
  func.setAllArgAttrs(argAttrs);
  for (size_t k = 0; k < outs->size(); ++k)
    func.setResultAttr(k, tg::TGDialect::kOutputAttrName,
                       b.getI64IntegerAttr(k));
  if (graphName)
    *graphName = name;
  if (outputNames)
    outputNames->assign(model->getOutputNames().begin(),
                        model->getOutputNames().end());
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
