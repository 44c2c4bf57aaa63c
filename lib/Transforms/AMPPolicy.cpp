//===- AMPPolicy.cpp - automatic-mixed-precision op classes ---------------===//

#include "ampc/Transforms/AMPPolicy.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ManagedStatic.h"

using namespace ampc::amp;

llvm::StringRef ampc::amp::stringifyOpClass(OpClass cls) {
  switch (cls) {
  case OpClass::Lower:
    return "lower";
  case OpClass::FP32:
    return "fp32";
  case OpClass::Promote:
    return "promote";
  case OpClass::Follow:
    return "follow";
  }
  return "follow";
}

std::optional<OpClass> ampc::amp::symbolizeOpClass(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<OpClass>>(name)
      .Case("lower", OpClass::Lower)
      .Case("fp32", OpClass::FP32)
      .Case("promote", OpClass::Promote)
      .Case("follow", OpClass::Follow)
      .Default(std::nullopt);
}

namespace {
/// The defaults: the `ampClass` of every tg op record (TGOps.td and the
/// family files it includes; a record without one does not build). `lower` and
/// `fp32` follow PyTorch's CUDA autocast lists, `mean` is fp32 (TensorFlow's
/// deny list) because reductions stay in f32, and a backward op takes the
/// class of the forward op it differentiates. Registrations
/// (`registerOpClass`) are layered on top.
struct DefaultTable {
  llvm::StringMap<OpClass> classes;
  DefaultTable() {
#define TG_AMP_CLASS(NAME, CLASS) classes[NAME] = OpClass::CLASS;
#include "ampc/Dialect/TG/TGAmpClasses.inc"
  }
};
llvm::ManagedStatic<DefaultTable> defaultTable;
} // namespace

PolicyTable PolicyTable::getDefault() {
  PolicyTable table;
  for (const auto &entry : defaultTable->classes)
    table.set(entry.getKey(), entry.getValue());
  return table;
}

std::optional<OpClass> PolicyTable::lookup(llvm::StringRef opName) const {
  auto it = classes.find(opName);
  if (it == classes.end())
    return std::nullopt;
  return it->getValue();
}

void ampc::amp::registerOpClass(llvm::StringRef opName, OpClass cls) {
  defaultTable->classes[opName] = cls;
}

std::optional<std::string>
ampc::amp::resolveOpName(llvm::StringRef name, const PolicyTable &table) {
  name = name.trim();
  if (name.empty())
    return std::nullopt;
  if (!name.contains('.'))
    return table.lookup((llvm::Twine("tg.") + name).str())
               ? std::optional<std::string>("tg." + name.str())
               : std::nullopt;
  if (name.starts_with("tg."))
    return table.lookup(name) ? std::optional<std::string>(name.str())
                              : std::nullopt;
  llvm::StringRef dialect = name.split('.').first;
  if (dialect.empty() || name.ends_with("."))
    return std::nullopt;
  return name.str();
}

std::optional<PolicyTable>
ampc::amp::buildPolicyTable(llvm::ArrayRef<std::string> fp32,
                            llvm::ArrayRef<std::string> lower,
                            llvm::ArrayRef<std::string> follow,
                            std::string &badName) {
  PolicyTable table = PolicyTable::getDefault();
  std::pair<llvm::ArrayRef<std::string>, OpClass> lists[] = {
      {fp32, OpClass::FP32}, {lower, OpClass::Lower}, {follow, OpClass::Follow}};
  for (auto &[names, cls] : lists) {
    for (const std::string &name : names) {
      std::optional<std::string> key = resolveOpName(name, table);
      if (!key) {
        badName = name;
        return std::nullopt;
      }
      table.set(*key, cls);
    }
  }
  return table;
}

std::optional<OpClass> ampc::amp::lookupDefaultClass(llvm::StringRef opName) {
  auto it = defaultTable->classes.find(opName);
  if (it == defaultTable->classes.end())
    return std::nullopt;
  return it->getValue();
}

bool ampc::amp::isGemmLike(llvm::StringRef opName) {
  return lookupDefaultClass(opName) == OpClass::Lower;
}
