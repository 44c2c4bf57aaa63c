//===- ONNXImport.cpp - ONNX models to tg dialect IR ------------*- C++ -*-===//
//
// One pass over the graph's nodes in file order (ONNX requires topological
// order). Each ONNX value is either an IR value or a host tensor: constants,
// non-float initializers and everything computed from them only (shape
// arithmetic) stay on the host and are folded as the nodes are read; a host
// tensor becomes a `tg.constant` when an IR op consumes it. Float
// initializers are parameters, created when an IR op first reads them
// (through the GraphState the caller gives); a batch norm's running mean and
// variance are buffers instead (convertBatchNorm in NNOps.cpp).
//
// This file reads the model, walks the graph and finds each node's converter
// by op type in one table; the converters are in one file per op family:
// ElementwiseOps.cpp, NNOps.cpp, TensorOps.cpp, and HostFolding.cpp for the
// ops computed at import. Every tg op is built through `Emitter::build`,
// which lets the op infer its result type and verifies it at once, so a shape
// error names the node.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/ONNXImport.h"

#include "Emitter.h"
#include "ONNXCheck.h"

#include "ampc/Dialect/TG/TGDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <limits>

using namespace mlir;
using namespace ampc;
using namespace ampc::onnx_import;
using namespace ampc::onnx_import::detail;

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

ONNXModel::ONNXModel(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
ONNXModel::~ONNXModel() = default;

ArrayRef<ModelInput> ONNXModel::getInputs() const { return impl->inputs; }
void ONNXModel::setKnownInput(StringRef name, const InputValue &value) {
  for (const ModelInput &in : impl->inputs) {
    if (in.name != name)
      continue;
    HostTensor h;
    h.elt = in.elementType;
    h.shape.assign(value.shape.begin(), value.shape.end());
    if (value.isInteger && isa<IntegerType>(in.elementType)) {
      h.ints = value.ints;
      impl->knownInputs[name] = std::move(h);
    } else if (value.isFloat && in.elementType.isF32()) {
      h.floats = value.floats;
      impl->fileInputs[name] = std::move(h);
    }
  }
}
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

std::unique_ptr<ONNXModel> ONNXModel::load(MLIRContext &ctx, StringRef path,
                                           StringRef displayPath,
                                           std::optional<Location> at) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (std::error_code ec = buffer.getError()) {
    emitError(at ? *at : fileLoc(ctx, displayPath))
        << "cannot read ONNX model '" << displayPath << "': " << ec.message();
    return nullptr;
  }
  return parse(ctx, (*buffer)->getBuffer(), displayPath, at);
}

std::unique_ptr<ONNXModel> ONNXModel::parse(MLIRContext &ctx, StringRef bytes,
                                            StringRef displayPath,
                                            std::optional<Location> at) {
  ctx.getOrLoadDialect<tg::TGDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  Location where = at ? *at : fileLoc(ctx, displayPath);
  auto fail = [&](const Twine &message) -> std::unique_ptr<ONNXModel> {
    emitError(where) << message;
    return nullptr;
  };
  auto impl = std::make_unique<Impl>();
  impl->ctx = &ctx;
  impl->displayPath = displayPath.str();
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
    return fail("'" + displayPath +
                "' is not a valid ONNX model: " + StringRef(why).trim());
  for (const auto &op : impl->model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      impl->opset = op.version();
  if (impl->opset < 1 || impl->opset > 17)
    return fail("'" + displayPath + "' uses opset " + Twine(impl->opset) +
                " of the default domain; ampc imports opsets 13 to 17 "
                "(export with opset_version between 13 and 17)");
  // An older opset is taken where each of its nodes' ops is defined as at
  // opset 13 (the op has not changed since; Emitter::convert checks each
  // node), and the graph is then imported as opset 13.
  impl->fileOpset = impl->opset;
  impl->opset = std::max<int64_t>(impl->opset, 13);

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
      auto [it, fresh] =
          bySanitized.try_emplace(sanitizeName(t.name()), t.name());
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
    if (!mi.elementType)
      return fail("'" + displayPath + "': input '" + in.name() + "' has " +
                  onnxTypeName(type.tensor_type().elem_type()) +
                  " elements (ampc takes DOUBLE, FLOAT, FLOAT16, BFLOAT16, "
                  "INT64, INT32, INT16, INT8, UINT8 or BOOL)");
    if (!type.tensor_type().has_shape())
      return fail("'" + displayPath + "': input '" + in.name() +
                  "' has no shape (not even a rank)");
    for (const auto &d : type.tensor_type().shape().dim()) {
      if (d.has_dim_value() && d.dim_value() > kMaxDim)
        return fail("'" + displayPath + "': input '" + in.name() + "': dim " +
                    Twine(mi.dims.size()) + " is " + Twine(d.dim_value()) +
                    " (ampc imports dims below 2^31)");
      mi.dims.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value()
                                                               : -1);
      mi.dimParams.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
    SmallVector<int64_t> known;
    for (int64_t d : mi.dims)
      known.push_back(std::max<int64_t>(d, 1));
    if (!checkedNumel(known, std::numeric_limits<int64_t>::max()))
      return fail("'" + displayPath + "': input '" + in.name() +
                  "' has more elements than int64 counts");
    impl->inputs.push_back(std::move(mi));
  }
  for (const onnx::ValueInfoProto &out : g.output())
    impl->outputs.push_back(out.name());
  return std::unique_ptr<ONNXModel>(new ONNXModel(std::move(impl)));
}

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

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult Emitter::convert() {
  /// The converters of every op family, by op type, built once.
  struct Tables {
    ConverterTable converters, hostFolders;
    Tables() {
      addElementwiseConverters(converters);
      addNNConverters(converters);
      addTensorConverters(converters);
      addHostFolders(hostFolders);
    }
  };
  static const Tables tables;
  StringRef op = node->op_type();
  if (!node->domain().empty() && node->domain() != "ai.onnx") {
    error() << "domain '" << node->domain()
            << "' is not supported (only the default ONNX domain)";
    return failure();
  }
  if (m.fileOpset < 13) {
    if (!sameAsOpset13(node->op_type(), int(m.fileOpset))) {
      error() << "the model's opset " << m.fileOpset << " defines "
              << node->op_type() << " as of opset "
              << sinceVersion(node->op_type(), int(m.fileOpset))
              << ", which differs from the " << node->op_type()
              << " of opsets 13 to 17 that ampc imports (export with "
                 "opset_version between 13 and 17)";
      return failure();
    }
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
    if (auto fold = tables.hostFolders.find(op);
        fold != tables.hostFolders.end()) {
      // A folder emits a diagnostic only for real errors; it returns failure
      // silently when it has no host form, and then IR is built.
      bool hadError = false;
      ScopedDiagnosticHandler probe(&ctx, [&](Diagnostic &) {
        hadError = true;
        return failure(); // let it propagate
      });
      if (succeeded(fold->second(*this)))
        return success();
      if (hadError)
        return failure();
    }
  }

  auto it = tables.converters.find(op);
  if (it == tables.converters.end()) {
    error() << "op type '" << op
            << "' is not supported by ampc's ONNX importer";
    return failure();
  }
  return it->second(*this);
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
                         << m.displayPath << "' is " << want << ", got " << got;
      return failure();
    }
    env[in.name].value = v;
    if (auto known = m.knownInputs.find(in.name); known != m.knownInputs.end())
      env[in.name].host = known->second;
    if (auto file = m.fileInputs.find(in.name); file != m.fileInputs.end()) {
      env[in.name].host = file->second;
      env[in.name].fileOnly = true;
    }
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
    nodeName = node->name().empty() ? node->op_type() + "_" + std::to_string(k)
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
      e.value =
          e.isParam
              ? state.param(prefix.str() + "." + sanitizeName(e.init), attr)
              : Value(tg::ConstantOp::create(b, fileLoc(ctx, m.displayPath),
                                             cast<ElementsAttr>(attr)));
    }
    results.push_back(e.value);
  }
  return results;
}

GraphState::~GraphState() = default;

FailureOr<SmallVector<Value>>
ONNXModel::emit(OpBuilder &builder, Location callLoc, ValueRange inputs,
                StringRef prefix, GraphState &state) const {
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
    std::string *graphName, std::vector<std::string> *outputNames,
    const std::map<std::string, InputValue> *inputValues) {
  std::unique_ptr<ONNXModel> model =
      ONNXModel::load(ctx, path, path, std::nullopt);
  if (!model)
    return nullptr;
  if (inputValues)
    for (const auto &[given, value] : *inputValues)
      model->setKnownInput(given, value);
  return importONNXModel(ctx, *model, path, inputShapes, graphName,
                         outputNames, inputValues);
}

OwningOpRef<ModuleOp> ampc::onnx_import::importONNXModel(
    MLIRContext &ctx, const ONNXModel &loaded, StringRef path,
    const std::map<std::string, std::vector<int64_t>> &inputShapes,
    std::string *graphName, std::vector<std::string> *outputNames,
    const std::map<std::string, InputValue> *inputValues) {
  const ONNXModel *model = &loaded;
  Location at = fileLoc(ctx, path);
  std::string name = sanitizeName(llvm::sys::path::stem(path));
  std::replace(name.begin(), name.end(), '.', '_');
  if (name.empty() || llvm::isDigit(name[0]))
    name = "m_" + name;

  for (const auto &shape : inputShapes)
    if (llvm::none_of(model->getInputs(), [&](const ModelInput &in) {
          return in.name == shape.first;
        })) {
      std::string names;
      llvm::raw_string_ostream os(names);
      llvm::interleaveComma(model->getInputs(), os,
                            [&](const ModelInput &in) { os << in.name; });
      emitError(at) << "--input-shape names '" << shape.first
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
    const std::vector<int64_t> *givenDims = nullptr;
    if (auto given = inputShapes.find(in.name); given != inputShapes.end())
      givenDims = &given->second;
    // `ampc run`: an input with a dynamic dim and no --input-shape takes
    // its file's shape (when it agrees with the model's rank and static
    // dims; the run checks the file).
    else if (inputValues && llvm::is_contained(dims, -1))
      if (auto v = inputValues->find(in.name); v != inputValues->end()) {
        const std::vector<int64_t> &shape = v->second.shape;
        bool fits = shape.size() == dims.size();
        for (size_t d = 0; fits && d < dims.size(); ++d)
          fits = shape[d] > 0 && (dims[d] < 0 || dims[d] == shape[d]);
        if (fits)
          givenDims = &shape;
      }
    if (givenDims) {
      if ((*givenDims).size() != dims.size()) {
        emitError(at) << "--input-shape " << in.name << ": the model's input "
                      << "has rank " << dims.size() << ", the shape given "
                      << (*givenDims).size();
        return nullptr;
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        if ((*givenDims)[d] > kMaxDim) {
          emitError(at) << "--input-shape " << in.name << ": dim " << d
                        << " is " << (*givenDims)[d]
                        << " (ampc imports dims below 2^31)";
          return nullptr;
        }
        if (dims[d] > 0 && dims[d] != (*givenDims)[d]) {
          emitError(at) << "--input-shape " << in.name << ": dim " << d
                        << " is " << dims[d] << " in the model, "
                        << (*givenDims)[d] << " given";
          return nullptr;
        }
        dims[d] = (*givenDims)[d];
        StringRef param = paramOf(in, d);
        if (param.empty())
          continue;
        auto [it, fresh] =
            paramSizes.try_emplace(param, ParamSize{dims[d], in.name});
        if (!fresh && it->second.size != dims[d]) {
          emitError(at) << "--input-shape " << in.name << ": dim " << d << " ('"
                        << param << "') is " << dims[d]
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
                      << "=D0x...x"
                      << "D" << dims.size() - 1;
        return nullptr;
      }
    argTypes.push_back(RankedTensorType::get(dims, in.elementType));
  }
  auto func =
      func::FuncOp::create(b, at, name, b.getFunctionType(argTypes, {}));
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
           b.getNamedAttr(
               tg::TGDialect::kInitAttrName,
               tg::InitAttr::get(b.getContext(), tg::InitKind::zeros, 0, 0)),
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
  func.setFunctionType(
      b.getFunctionType(argTypes, TypeRange(ValueRange(*outs))));
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
