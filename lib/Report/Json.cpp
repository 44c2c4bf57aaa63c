//===- Json.cpp - the graph as JSON (--emit=json)
//---------------------------===//
//
// A machine-readable form of the IR for tools outside the compiler (the
// PyTorch reference of tools/ampc-torch reads it instead of parsing .tg a
// second time). Generic over ops: every op is its name, operand value ids,
// result types and attributes, so the form needs no change when an op is
// added. The format is documented in docs/json.md.
//
//===----------------------------------------------------------------------===//

#include "ampc/Report/Report.h"

#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;
using namespace ampc;
namespace json = llvm::json;

namespace {

/// JSON has no inf or NaN: those are the strings "inf", "-inf", "nan".
json::Value number(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

json::Value optionalString(std::optional<std::string> s) {
  if (!s)
    return nullptr;
  return std::move(*s);
}

std::string elementName(Type t) { return tg::elementTypeName(t); }

/// `"type": ELEMENT, "shape": [...]` of a tensor; other types print whole.
void addType(json::Object &obj, Type t) {
  if (auto tensor = dyn_cast<RankedTensorType>(t)) {
    obj["type"] = elementName(tensor.getElementType());
    obj["shape"] = json::Array(tensor.getShape());
    return;
  }
  obj["type"] = elementName(t);
}

json::Value attrToJson(Attribute attr) {
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getValue().getSExtValue();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return number(f.getValueAsDouble());
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.getValue();
  if (isa<UnitAttr>(attr))
    return true;
  if (auto t = dyn_cast<TypeAttr>(attr))
    return elementName(t.getValue());
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr))
    return json::Array(a.asArrayRef());
  if (auto a = dyn_cast<DenseI32ArrayAttr>(attr))
    return json::Array(a.asArrayRef());
  if (auto a = dyn_cast<DenseF64ArrayAttr>(attr)) {
    json::Array out;
    for (double v : a.asArrayRef())
      out.push_back(number(v));
    return out;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json::Array out;
    for (Attribute e : a)
      out.push_back(attrToJson(e));
    return out;
  }
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json::Object out;
    for (NamedAttribute e : d)
      out[e.getName().getValue()] = attrToJson(e.getValue());
    return out;
  }
  if (auto init = dyn_cast<tg::InitAttr>(attr)) {
    json::Object out{{"kind", tg::stringifyInitKind(init.getKind())}};
    switch (init.getKind()) {
    case tg::InitKind::zeros:
    case tg::InitKind::ones:
      break;
    case tg::InitKind::normal:
      out["mean"] = number(init.getFirst());
      out["std"] = number(init.getSecond());
      break;
    case tg::InitKind::uniform:
      out["low"] = number(init.getFirst());
      out["high"] = number(init.getSecond());
      break;
    case tg::InitKind::full:
      out["value"] = number(init.getFirst());
      break;
    }
    return out;
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    json::Object out;
    addType(out, dense.getType());
    Type element = dense.getElementType();
    auto convert = [&](auto values) {
      json::Array array;
      for (auto v : values) {
        if constexpr (std::is_same_v<decltype(v), APFloat>)
          array.push_back(number(v.convertToDouble()));
        else if (element.isInteger(1))
          array.push_back(!v.isZero());
        else if (element.isUnsignedInteger())
          array.push_back(static_cast<int64_t>(v.getZExtValue()));
        else
          array.push_back(v.getSExtValue());
      }
      return array;
    };
    json::Array values = isa<FloatType>(element)
                             ? convert(dense.getValues<APFloat>())
                             : convert(dense.getValues<APInt>());
    if (dense.isSplat())
      out["splat"] = std::move(values.front());
    else
      out["values"] = std::move(values);
    return out;
  }
  // Anything else (attributes of other dialects): its textual form.
  std::string s;
  llvm::raw_string_ostream os(s);
  attr.print(os);
  return s;
}

json::Object attrsToJson(ArrayRef<NamedAttribute> attrs,
                         ArrayRef<StringRef> skip = {}) {
  json::Object out;
  for (const NamedAttribute &a : attrs)
    if (!llvm::is_contained(skip, a.getName().getValue()))
      out[a.getName().getValue()] = attrToJson(a.getValue());
  return out;
}

/// The role and name of an argument or result from its tg attribute.
void addRole(json::Object &obj, DictionaryAttr attrs,
             ArrayRef<std::pair<StringRef, StringRef>> roles) {
  for (auto [attrName, role] : roles)
    if (Attribute a = attrs ? attrs.get(attrName) : Attribute()) {
      obj["role"] = role;
      if (auto s = dyn_cast<StringAttr>(a))
        obj["name"] = s.getValue();
      else if (auto i = dyn_cast<IntegerAttr>(a))
        obj["index"] = i.getInt();
      return;
    }
}

/// An argument or result of a graph: its id, type, role and name (from its
/// tg attribute) and all its attributes.
json::Object
describeSignatureValue(int64_t id, Type type, DictionaryAttr attrs,
                       ArrayRef<std::pair<StringRef, StringRef>> roles) {
  json::Object obj{{"value", id}};
  addType(obj, type);
  addRole(obj, attrs, roles);
  obj["attrs"] = attrs ? attrsToJson(attrs.getValue()) : json::Object();
  return obj;
}

/// One graph: its fields, then its args, ops and results one per line.
LogicalResult emitGraph(func::FuncOp func, llvm::raw_ostream &os) {
  llvm::DenseMap<Value, int64_t> ids;
  auto idOf = [&](Value v) -> int64_t {
    auto it = ids.find(v);
    return it == ids.end() ? -1 : it->second;
  };
  if (func.isExternal())
    return func.emitError("--emit=json: graph '")
           << func.getSymName() << "' has no body";
  json::Object graph{
      {"name", func.getSymName()},
      {"loc", optionalString(report::sourceLocation(func.getLoc()))}};
  Block &body = func.getBody().front();

  json::Array args;
  for (BlockArgument arg : body.getArguments()) {
    int64_t id = static_cast<int64_t>(ids.size());
    ids[arg] = id;
    json::Object a = describeSignatureValue(
        id, arg.getType(), func.getArgAttrDict(arg.getArgNumber()),
        {{tg::TGDialect::kInputAttrName, "input"},
         {tg::TGDialect::kParamAttrName, "param"},
         {tg::TGDialect::kStateAttrName, "state"},
         {tg::TGDialect::kBufferAttrName, "buffer"}});
    a["loc"] = optionalString(report::sourceLocation(arg.getLoc()));
    args.push_back(std::move(a));
  }

  json::Array ops, results;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions())
      return op.emitError("--emit=json: ops with regions are not supported");
    json::Array operands;
    for (Value v : op.getOperands())
      operands.push_back(idOf(v));
    json::Array res;
    for (Value r : op.getResults()) {
      int64_t id = static_cast<int64_t>(ids.size());
      ids[r] = id;
      json::Object o{{"value", id}};
      addType(o, r.getType());
      res.push_back(std::move(o));
    }
    ops.push_back(json::Object{
        {"op", op.getName().getStringRef()},
        {"operands", std::move(operands)},
        {"results", std::move(res)},
        {"attrs", attrsToJson(op.getAttrs())},
        {"name", optionalString(report::sourceName(op.getLoc()))},
        {"loc", optionalString(report::sourceLocation(op.getLoc()))},
        {"source", report::isSourceOp(&op)}});
  }
  Operation *ret = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    json::Object r = describeSignatureValue(
        idOf(v), v.getType(), func.getResultAttrDict(i),
        {{tg::TGDialect::kOutputAttrName, "output"},
         {tg::TGDialect::kParamOutAttrName, "param_out"},
         {tg::TGDialect::kStateOutAttrName, "state_out"},
         {tg::TGDialect::kBufferOutAttrName, "buffer_out"}});
    results.push_back(std::move(r));
  }
  graph["attrs"] =
      attrsToJson(func->getAttrs(), {"sym_name", "function_type", "arg_attrs",
                                     "res_attrs", "sym_visibility"});
  // The graph's own fields, then the three lists, one entry per line.
  std::string head;
  llvm::raw_string_ostream headOs(head);
  headOs << json::Value(std::move(graph));
  os << "  " << StringRef(head).drop_back(1);
  auto list = [&](StringRef key, json::Array &entries) {
    os << ",\n   \"" << key << "\": [";
    for (size_t i = 0; i < entries.size(); ++i)
      os << (i ? ",\n     " : "\n     ") << entries[i];
    os << (entries.empty() ? "]" : "\n   ]");
  };
  list("args", args);
  list("ops", ops);
  list("results", results);
  os << "}";
  return success();
}

} // namespace

LogicalResult ampc::report::emitJson(ModuleOp module, llvm::raw_ostream &os) {
  // Rendered whole first: a graph that cannot be written leaves no output.
  std::string text;
  llvm::raw_string_ostream body(text);
  body << "{\"format\": \"ampc-graph\", \"version\": 1, \"graphs\": [";
  bool first = true;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    body << (first ? "\n" : ",\n");
    first = false;
    if (failed(emitGraph(func, body)))
      return failure();
  }
  body << (first ? "]}\n" : "\n  ]}\n");
  os << text;
  return success();
}
