//===- Dot.cpp - the Graphviz view of a compiled graph (--emit=dot) -------===//
//
// One digraph, one cluster per graph. Ops are boxes filled by the precision
// they compute in (f32 blue, f16 orange, bf16 green, integers grey), casts are
// red diamonds (dashed when a pass inserted them), graph inputs are ellipses,
// parameters and state cylinders. Edges are labelled with the type they
// carry, so fused casts show as an op whose inputs and output differ.
//
//===----------------------------------------------------------------------===//

#include "ampc/Report/Report.h"

#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace ampc;

namespace {

std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

std::string typeLabel(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor) {
    t.print(os);
    return s;
  }
  tensor.getElementType().print(os);
  os << "[";
  llvm::interleave(tensor.getShape(), os, ",");
  os << "]";
  return s;
}

std::string elementName(Type t) {
  if (!t)
    return "";
  t = getElementTypeOrSelf(t);
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

const char *fillFor(Type compute) {
  if (!compute)
    return "#ffffff";
  if (compute.isF32())
    return "#9ecae1";
  if (compute.isF16())
    return "#fdae6b";
  if (compute.isBF16())
    return "#a1d99b";
  return "#d9d9d9";
}

class DotWriter {
public:
  explicit DotWriter(llvm::raw_ostream &os) : os(os) {}

  void graph(func::FuncOp func, unsigned index) {
    os << "  subgraph cluster_" << index << " {\n    label=\""
       << escape(func.getSymName()) << "\";\n";
    for (BlockArgument arg : func.getArguments()) {
      std::string id = "g" + std::to_string(index) + "_a" +
                       std::to_string(arg.getArgNumber());
      ids[arg] = id;
      StringRef name;
      bool isParam = false;
      if (auto input = func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), tg::TGDialect::kInputAttrName))
        name = input.getValue();
      for (StringRef key :
           {tg::TGDialect::kParamAttrName, tg::TGDialect::kStateAttrName})
        if (auto p = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), key)) {
          name = p.getValue();
          isParam = true;
        }
      os << "    " << id << " [label=\"" << escape(name) << "\\n"
         << typeLabel(arg.getType()) << "\", shape="
         << (isParam ? "cylinder" : "ellipse") << "];\n";
    }
    unsigned counter = 0;
    func.walk([&](Operation *op) {
      if (op == func.getOperation())
        return;
      std::string id = "g" + std::to_string(index) + "_o" +
                       std::to_string(counter++);
      node(op, id);
      for (Value v : op->getResults())
        ids[v] = id;
      for (Value operand : op->getOperands()) {
        auto it = ids.find(operand);
        if (it == ids.end())
          continue;
        os << "    " << it->second << " -> " << id << " [label=\""
           << typeLabel(operand.getType()) << "\"];\n";
      }
    });
    os << "  }\n";
  }

  void legend() {
    os << "  subgraph cluster_legend {\n    label=\"compute precision\";\n"
       << "    legend_f32 [label=\"f32\", fillcolor=\"" << fillFor(f32())
       << "\"];\n    legend_f16 [label=\"f16\", fillcolor=\"" << fillFor(f16())
       << "\"];\n    legend_bf16 [label=\"bf16\", fillcolor=\""
       << fillFor(bf16())
       << "\"];\n    legend_cast [label=\"cast\", shape=diamond, "
          "fillcolor=\"#fb6a4a\"];\n  }\n";
  }

  Type f32() { return Float32Type::get(ctx); }
  Type f16() { return Float16Type::get(ctx); }
  Type bf16() { return BFloat16Type::get(ctx); }
  MLIRContext *ctx = nullptr;

private:
  llvm::raw_ostream &os;
  DenseMap<Value, std::string> ids;

  void node(Operation *op, const std::string &id) {
    std::string label;
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      label = (name.getName().getValue() + " = ").str();
    label += op->getName().getStringRef().str();
    if (isa<tg::CastOp>(op)) {
      bool inserted = !report::isSourceOp(op);
      os << "    " << id << " [label=\"" << escape(label) << "\\n"
         << elementName(op->getOperand(0).getType()) << " -> "
         << elementName(op->getResult(0).getType())
         << "\", shape=diamond, style=\"filled"
         << (inserted ? ",dashed" : "") << "\", fillcolor=\"#fb6a4a\"];\n";
      return;
    }
    if (isa<func::ReturnOp>(op)) {
      os << "    " << id << " [label=\"return\", shape=doublecircle];\n";
      return;
    }
    if (op->hasTrait<OpTrait::ConstantLike>()) {
      os << "    " << id << " [label=\"const "
         << typeLabel(op->getResult(0).getType())
         << "\", shape=plaintext, fontsize=8];\n";
      return;
    }
    Type compute = tg::getComputeType(op);
    os << "    " << id << " [label=\"" << escape(label) << "\\ncompute "
       << elementName(compute);
    if (op->getNumResults() == 1 &&
        elementName(op->getResult(0).getType()) != elementName(compute))
      os << ", store " << elementName(op->getResult(0).getType());
    os << "\", fillcolor=\"" << fillFor(compute) << "\"];\n";
  }
};

} // namespace

void ampc::report::emitDot(ModuleOp module, llvm::raw_ostream &os) {
  os << "digraph ampc {\n  node [shape=box, style=filled, "
        "fontname=\"Helvetica\", fontsize=10];\n  edge [fontsize=8];\n";
  DotWriter writer(os);
  writer.ctx = module.getContext();
  unsigned index = 0;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    writer.graph(func, index++);
  writer.legend();
  os << "}\n";
}
