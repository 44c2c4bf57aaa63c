//===- AST.cpp - AST helpers and dump for the .tg language ----------------===//
//
// The dump is meant for humans and tests: one node per line, two spaces of
// indentation per level, locations as <LINE:COL>, numbers in their source
// spelling so the output is byte-for-byte deterministic.
//
//===----------------------------------------------------------------------===//

#include "ampc/Frontend/AST.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_os_ostream.h"
#include "llvm/Support/raw_ostream.h"

#include <ostream>

using namespace ampc::frontend;

const KeywordArg *CallExprAST::findKeyword(llvm::StringRef name) const {
  for (const KeywordArg &kwarg : kwargs)
    if (kwarg.name == name)
      return &kwarg;
  return nullptr;
}

llvm::StringRef ampc::frontend::toString(AutocastMode mode) {
  switch (mode) {
  case AutocastMode::Off:
    return "off";
  case AutocastMode::FP16:
    return "fp16";
  case AutocastMode::BF16:
    return "bf16";
  }
  return "off";
}

const ReturnStmtAST *GraphAST::getReturn() const {
  if (stmts.empty())
    return nullptr;
  return llvm::dyn_cast<ReturnStmtAST>(stmts.back().get());
}

const MinimizeStmtAST *GraphAST::getMinimize() const {
  for (const std::unique_ptr<StmtAST> &stmt : stmts)
    if (auto *minimize = llvm::dyn_cast<MinimizeStmtAST>(stmt.get()))
      return minimize;
  return nullptr;
}

namespace {

llvm::raw_ostream &indent(llvm::raw_ostream &os, unsigned level) {
  return os.indent(2 * level);
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Location &loc) {
  return os << "<" << loc.line << ":" << loc.col << ">";
}

void printType(llvm::raw_ostream &os, const TypeAST &type) {
  os << toString(type.dtype) << "[";
  for (size_t i = 0; i < type.shape.size(); ++i)
    os << (i ? ", " : "") << type.shape[i];
  os << "]";
}

void printInit(llvm::raw_ostream &os, const InitSpec &init) {
  switch (init.kind) {
  case InitSpec::Kind::Zeros:
    os << "zeros";
    break;
  case InitSpec::Kind::Ones:
    os << "ones";
    break;
  case InitSpec::Kind::Normal:
    os << "normal(" << llvm::format("%g", init.a) << ", "
       << llvm::format("%g", init.b) << ")";
    break;
  case InitSpec::Kind::Uniform:
    os << "uniform(" << llvm::format("%g", init.a) << ", "
       << llvm::format("%g", init.b) << ")";
    break;
  }
  if (!init.isExplicit)
    os << " (default)";
}

void printQuoted(llvm::raw_ostream &os, llvm::StringRef text) {
  os << '"';
  for (char c : text) {
    if (c == '"' || c == '\\')
      os << '\\';
    os << c;
  }
  os << '"';
}

void dumpStmt(llvm::raw_ostream &os, const StmtAST &stmt, unsigned level) {
  if (auto *param = llvm::dyn_cast<ParamStmtAST>(&stmt)) {
    indent(os, level) << (param->isBuffer ? "buffer " : "param ")
                      << param->name << ": ";
    printType(os, param->type);
    os << " = ";
    printInit(os, param->init);
    os << " " << param->loc << "\n";
    return;
  }
  if (auto *assign = llvm::dyn_cast<AssignStmtAST>(&stmt)) {
    indent(os, level) << "assign ";
    for (size_t i = 0; i < assign->names.size(); ++i)
      os << (i ? ", " : "") << assign->names[i].name;
    if (assign->pin)
      os << " pin=" << toString(*assign->pin);
    os << " " << assign->loc << "\n";
    dumpExpr(os, *assign->value, level + 1);
    return;
  }
  if (auto *minimize = llvm::dyn_cast<MinimizeStmtAST>(&stmt)) {
    indent(os, level) << "minimize " << minimize->loss.name << " "
                      << minimize->loc << "\n";
    dumpExpr(os, *minimize->optimizer, level + 1);
    for (const std::unique_ptr<CallExprAST> &group : minimize->groups)
      dumpExpr(os, *group, level + 1);
    return;
  }
  if (auto *region = llvm::dyn_cast<RegionStmtAST>(&stmt)) {
    indent(os, level) << "autocast " << toString(region->mode) << " "
                      << region->loc << "\n";
    for (const std::unique_ptr<StmtAST> &inner : region->stmts)
      dumpStmt(os, *inner, level + 1);
    return;
  }
  auto *ret = llvm::cast<ReturnStmtAST>(&stmt);
  indent(os, level) << "return " << ret->loc << "\n";
  for (const std::unique_ptr<ExprAST> &value : ret->values)
    dumpExpr(os, *value, level + 1);
}

} // namespace

void ampc::frontend::printAttr(llvm::raw_ostream &os, const AttrAST &attr) {
  switch (attr.kind) {
  case AttrAST::Kind::Number:
    os << attr.number.spelling;
    break;
  case AttrAST::Kind::String:
    printQuoted(os, attr.string);
    break;
  case AttrAST::Kind::Bool:
    os << (attr.boolean ? "true" : "false");
    break;
  case AttrAST::Kind::DType:
    os << toString(attr.dtype);
    break;
  case AttrAST::Kind::List:
    os << "[";
    for (size_t i = 0; i < attr.list.size(); ++i) {
      if (i)
        os << ", ";
      printAttr(os, attr.list[i]);
    }
    os << "]";
    break;
  }
}

void ampc::frontend::dumpExpr(llvm::raw_ostream &os, const ExprAST &expr,
                              unsigned level) {
  switch (expr.getKind()) {
  case ExprAST::Kind::Number: {
    auto &num = llvm::cast<NumberExprAST>(expr);
    indent(os, level) << "number " << num.number.spelling
                      << (num.number.isInteger ? " int " : " float ") << num.loc
                      << "\n";
    return;
  }
  case ExprAST::Kind::Name:
    indent(os, level) << "name " << llvm::cast<NameExprAST>(expr).name << " "
                      << expr.loc << "\n";
    return;
  case ExprAST::Kind::Call: {
    auto &call = llvm::cast<CallExprAST>(expr);
    indent(os, level) << "call " << call.callee << " " << call.loc << "\n";
    for (const std::unique_ptr<ExprAST> &arg : call.args)
      dumpExpr(os, *arg, level + 1);
    for (const KeywordArg &kwarg : call.kwargs) {
      indent(os, level + 1) << "kwarg " << kwarg.name << " = ";
      printAttr(os, kwarg.value);
      os << " " << kwarg.loc << "\n";
    }
    return;
  }
  case ExprAST::Kind::Binary: {
    auto &bin = llvm::cast<BinaryExprAST>(expr);
    indent(os, level) << "binary " << bin.op << " " << bin.loc << "\n";
    dumpExpr(os, *bin.lhs, level + 1);
    dumpExpr(os, *bin.rhs, level + 1);
    return;
  }
  case ExprAST::Kind::Neg:
    indent(os, level) << "neg " << expr.loc << "\n";
    dumpExpr(os, *llvm::cast<NegExprAST>(expr).operand, level + 1);
    return;
  }
}

void ModuleAST::dump(llvm::raw_ostream &os) const {
  os << "module\n";
  for (const GraphAST &graph : graphs) {
    indent(os, 1) << "graph " << graph.name << " " << graph.loc << "\n";
    for (const ArgAST &arg : graph.args) {
      indent(os, 2) << "arg " << arg.name << ": ";
      printType(os, arg.type);
      os << " " << arg.loc << "\n";
    }
    for (const TypeAST &result : graph.results) {
      indent(os, 2) << "result ";
      printType(os, result);
      os << " " << result.loc << "\n";
    }
    for (const std::unique_ptr<StmtAST> &stmt : graph.stmts)
      dumpStmt(os, *stmt, 2);
  }
}

void ModuleAST::dump(std::ostream &os) const {
  llvm::raw_os_ostream llvmOS(os);
  dump(static_cast<llvm::raw_ostream &>(llvmOS));
}
