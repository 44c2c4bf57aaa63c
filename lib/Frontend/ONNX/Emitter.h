//===- Emitter.h - ONNX nodes to tg IR --------------------------*- C++ -*-===//
//
// The state of one import (the model, the values of the graph read so far,
// the node being converted) and the helpers every converter uses. The
// converters live in one file per op family (ElementwiseOps.cpp, NNOps.cpp,
// TensorOps.cpp, HostFolding.cpp) and are found by op type in one table
// (ONNXImport.cpp), as onnx-mlir's importer does. Internal to the importer.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_LIB_FRONTEND_ONNX_EMITTER_H
#define AMPC_LIB_FRONTEND_ONNX_EMITTER_H

#include "HostTensor.h"

#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Frontend/ONNXImport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <optional>
#include <string>

struct ampc::onnx_import::ONNXModel::Impl {
  mlir::MLIRContext *ctx = nullptr;
  onnx::ModelProto model;
  std::string displayPath;
  int64_t opset = 0;
  /// The opset the file declares (opset is 13 for an older one).
  int64_t fileOpset = 0;
  /// Integer inputs whose values `ampc run` read from their files before
  /// compiling (importONNXFile's inputValues): known at import.
  llvm::StringMap<HostTensor> knownInputs;
  /// Float inputs read from their files: their values where one must be
  /// known at import (needHost), run-time inputs everywhere else.
  llvm::StringMap<HostTensor> fileInputs;
  llvm::SmallVector<ModelInput> inputs;
  llvm::SmallVector<std::string> outputs;
  /// Initializers by name, read once.
  llvm::StringMap<HostTensor> initializers;
};

namespace ampc::onnx_import::detail {

// The converters are written against MLIR's types throughout; this
// namespace is the importer's own.
using namespace mlir;

class Emitter;
/// Converts the node being read (or folds it on the host).
using Converter = LogicalResult (*)(Emitter &);
/// Converters by ONNX op type.
using ConverterTable = llvm::StringMap<Converter>;

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
    /// A float graph input whose file `ampc run` read: `host` is read only
    /// where a value must be known (needHost).
    bool fileOnly = false;
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
    if (it == env.end() || !it->second.host || it->second.isParam ||
        it->second.fileOnly)
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
    if (!h && (e->isParam || e->fileOnly) && e->host)
      h = &*e->host;
    // A graph input that `ampc run` would read from its file (an integer
    // one, or f32): say which to give.
    if (!h && llvm::any_of(m.inputs, [&](const ModelInput &in) {
          Type t = in.elementType;
          return in.name == node->input(k) &&
                 ((isa<IntegerType>(t) && !t.isInteger(1)) || t.isF32());
        }))
      error() << "its " << what << " is the graph's input '" << node->input(k)
              << "', which must be known at import time: give it with `ampc "
                 "run --input "
              << node->input(k)
              << "=FILE.npy` (its values are then folded)";
    else if (!h)
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
    h.wrapInts();
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

  /// An error unless the node names its first `n` inputs: an empty name
  /// omits an optional input, never one that the op reads.
  LogicalResult requireInputs(size_t n) {
    for (size_t k = 0; k < n; ++k)
      if (!hasInput(k)) {
        error() << "input " << k << " is missing (an empty name)";
        return failure();
      }
    return success();
  }

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
    if (failed(iface.inferReturnTypes(
            &ctx, loc, op->getOperands(), op->getRawDictionaryAttrs(),
            op->getPropertiesStorage(), op->getRegions(), types)) ||
        types.size() != numResults) {
      op->erase();
      return nullptr;
    }
    // Before the verifier runs, which counts elements: no result may have
    // a dim of 2^31 or more, nor more elements than int64 counts.
    for (Type t : types)
      if (auto ranked = dyn_cast<RankedTensorType>(t))
        if (llvm::any_of(ranked.getShape(),
                         [](int64_t d) { return d > kMaxDim; }) ||
            !checkedNumel(ranked.getShape(),
                          std::numeric_limits<int64_t>::max())) {
          op->erase();
          error() << "its result " << t << " has a dim of 2^31 or more, "
                  << "or more elements than int64 counts (ampc imports "
                  << "dims below 2^31)";
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
      h.ints = {toInt64(v)};
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
          h.ints[j] = toInt64(fill);
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
  std::optional<int64_t> axis(int64_t a, int64_t rank,
                              StringRef what = "axis") {
    if (a < -rank || a >= rank) {
      error() << what << " " << a << " is out of range for rank " << rank;
      return std::nullopt;
    }
    return a < 0 ? a + rank : a;
  }

  /// An error unless `perm` (Transpose's attribute) is a permutation of
  /// the dims of a rank-`rank` input.
  LogicalResult checkPerm(ArrayRef<int64_t> perm, int64_t rank) {
    if (int64_t(perm.size()) != rank) {
      error() << "attribute 'perm' has " << perm.size()
              << " values for an input of rank " << rank;
      return failure();
    }
    SmallVector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p]) {
        error() << "attribute 'perm' is not a permutation of the dims 0 to "
                << rank - 1 << " (it has " << p << ")";
        return failure();
      }
      seen[p] = true;
    }
    return success();
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

  //===--- Dispatch -------------------------------------------------------===//

  /// The node being converted: the host folder of its op type when all its
  /// inputs are known at import, else its converter.
  LogicalResult convert();

  /// The converters of each op family, by ONNX op type (one file each).
  static void addElementwiseConverters(ConverterTable &table);
  static void addNNConverters(ConverterTable &table);
  static void addTensorConverters(ConverterTable &table);
  /// The ops computed at import when every input is a host tensor
  /// (HostFolding.cpp). A folder returns failure() with no diagnostic when
  /// it has no host form for these inputs (the caller then builds IR).
  static void addHostFolders(ConverterTable &table);

  //===--- Elementwise (ElementwiseOps.cpp) -------------------------------===//

  LogicalResult convertUnary();
  LogicalResult convertBinary();
  LogicalResult convertNot();
  LogicalResult convertHardSigmoid();
  LogicalResult convertActivation();
  LogicalResult convertPRelu();
  Value positiveElse(Value x, Value negative);
  LogicalResult convertErf();
  LogicalResult convertClip();
  LogicalResult convertWhere();
  LogicalResult convertCast();
  LogicalResult convertLogical();
  LogicalResult convertIsNaNOrInf();
  LogicalResult convertSumOrMean();
  LogicalResult convertMoreActivations();

  //===--- Neural-network ops (NNOps.cpp) ---------------------------------===//

  LogicalResult convertConv(bool transposed);
  LogicalResult convertGemm();
  LogicalResult convertMatMul();
  LogicalResult convertSoftmax();
  LogicalResult convertGlobalPool();
  LogicalResult convertPool(bool isMax);
  LogicalResult convertReduce(StringRef opName, bool negate = false);
  LogicalResult convertReduceProd();
  LogicalResult convertArgMax();
  LogicalResult convertCumSum();
  LogicalResult convertInstanceNorm();
  LogicalResult convertBatchNorm();
  LogicalResult convertBatchNormComposed(Value x, Value scale, Value bias,
                                         double eps);
  std::string bufferName(size_t k);
  LogicalResult convertDropout();
  LogicalResult convertLayerNorm();

  //===--- NN ops: N-d convolutions and pools, losses (NNOps.cpp) ---------===//

  /// The window of a convolution or pool along each spatial dim: kernel,
  /// stride, dilation and the pads before and after (`auto_pad` resolved).
  struct Window {
    SmallVector<int64_t> k, s, d, pb, pe;
  };
  /// `strides`, `dilations`, `pads` and `auto_pad` of the node for an input
  /// of spatial dims `in` and a kernel `k` (one value per spatial dim);
  /// `auto_pad` is left to the caller unless `autoPad`.
  std::optional<Window> windowAttrs(ArrayRef<int64_t> in, ArrayRef<int64_t> k,
                                    bool autoPad = true);
  /// A constant of `shape` and element type `elt` holding `values`.
  Value constant(Type elt, ArrayRef<int64_t> shape, ArrayRef<double> values);
  /// `v` cast to element type `elt` (a verified tg.cast).
  Value castTo(Value v, Type elt);
  /// Integer indices as f32 (what tg's comparisons against an iota take),
  /// a negative one counted from `n` (ONNX's rule); null on failure.
  Value indicesFrom(Value idx, int64_t n);
  /// The dims of the index argument that must be found in the data, found
  /// along every dim but `axis`: no larger than the data's (an error names
  /// the first that is).
  LogicalResult checkIndexDims(ArrayRef<int64_t> is, ArrayRef<int64_t> ds,
                               int64_t axis);
  /// An N, C, spatial... input (rank 3 or more), or an error saying so.
  LogicalResult requireSpatial(Value x) {
    if (typeOf(x).getRank() >= 3)
      return success();
    error() << "needs an N, C, spatial... input, found rank "
            << typeOf(x).getRank();
    return failure();
  }
  /// Output 0 as i64 indices (ONNX's ArgMax/ArgMin/TopK index type).
  LogicalResult setIndexOutput(Value i) {
    return setOutput(0, castTo(i, b.getI64Type()));
  }
  /// A max or average pool of `x` (padded already) along `dim`, or along
  /// `dim` and `dim + 1` when `pair`.
  Value poolAlong(Value x, int64_t dim, bool pair, ArrayRef<int64_t> k,
                  ArrayRef<int64_t> s, int64_t dilation, bool isMax);
  LogicalResult convertConvTransposeNd(Value x, Value w, int64_t groups);
  LogicalResult convertLoss(bool withSoftmax);
  LogicalResult convertHardmax();
  LogicalResult convertMeanVarianceNorm();
  LogicalResult convertLRN();
  /// MaxPool's Indices output for input `x` (unpadded), window `w` and
  /// output spatial dims `out`.
  Value maxPoolIndices(Value x, const Window &w, ArrayRef<int64_t> out,
                       int64_t storageOrder);
  /// Resize (ResizeOps.cpp).
  LogicalResult convertResizeInterp();
  /// RNN, GRU and LSTM, unrolled (RecurrentOps.cpp).
  LogicalResult convertRecurrent();

  //===--- Tensors and shapes (TensorOps.cpp) -----------------------------===//

  LogicalResult convertConstant();
  LogicalResult convertShape();
  LogicalResult convertConstantOfShape();
  LogicalResult convertIdentity();
  LogicalResult convertReshapeLike();
  std::optional<SmallVector<int64_t>> reshapedShape(ArrayRef<int64_t> in);
  /// New shape for Reshape (0 copies, -1 infers) from `spec`.
  std::optional<SmallVector<int64_t>> resolveReshape(ArrayRef<int64_t> in,
                                                     const HostTensor &spec);
  /// Axes of Squeeze/Unsqueeze: the input at index 1 (opset 13) or the
  /// attribute.
  std::optional<SmallVector<int64_t>> axesInputOrAttr(size_t k);
  LogicalResult convertTranspose();
  LogicalResult convertConcat();
  LogicalResult convertSlice();
  /// An error unless Slice's starts, ends and the optional axes and steps
  /// hold one value per sliced axis each.
  LogicalResult checkSliceInputs(const HostTensor *starts,
                                 const HostTensor *ends, const HostTensor *axes,
                                 const HostTensor *steps);
  LogicalResult convertSplit();
  LogicalResult convertGather();
  LogicalResult convertPad();
  LogicalResult convertTrilu();
  /// Trilu's kept elements of the last two dims of `shape` (row-major),
  /// from its `upper` attribute and `k` input; an error when it cannot be
  /// read.
  std::optional<std::vector<bool>> triluKeep(ArrayRef<int64_t> shape);
  LogicalResult convertResize();
  LogicalResult convertDepthToSpace();
  LogicalResult convertTile();
  LogicalResult convertArgMin();
  LogicalResult convertArgLast(bool isMin);
  LogicalResult convertGatherElements();
  LogicalResult convertOneHot();
  LogicalResult convertScatterElements();
  LogicalResult convertTopK();
  Value iotaAlong(int64_t n, int64_t dim, int64_t rank);
  LogicalResult convertSize();
  LogicalResult convertEyeLike();

  //===--- Host folding (HostFolding.cpp) ---------------------------------===//

  LogicalResult foldIdentity();
  LogicalResult foldCast();
  LogicalResult foldReshapeLike();
  LogicalResult foldGather();
  LogicalResult foldConcat();
  LogicalResult foldBroadcast();
  LogicalResult foldUnary();
  LogicalResult foldSlice();
  LogicalResult foldReduceProd();
  LogicalResult foldNot();
  LogicalResult foldTrilu();
  LogicalResult foldRange();
  LogicalResult foldTranspose();
};

} // namespace ampc::onnx_import::detail

#endif // AMPC_LIB_FRONTEND_ONNX_EMITTER_H
