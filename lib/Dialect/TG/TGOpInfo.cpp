//===- TGOpInfo.cpp - the generated table of tg op records ----------------===//

#include "ampc/Dialect/TG/TGOpInfo.h"
#include "ampc/Dialect/TG/TGOps.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"

#include <initializer_list>

using namespace mlir;
using namespace ampc::tg;

/// Result `resultIndex` of `op` reuses the i-th operand of the concatenated
/// groups (start, length), when both have the same element type.
static std::optional<unsigned>
inPlaceFromGroups(Operation *op, unsigned resultIndex,
                  std::initializer_list<std::pair<unsigned, unsigned>> groups) {
  unsigned i = resultIndex;
  for (auto [start, length] : groups) {
    if (i < length) {
      unsigned operand = start + i;
      if (getElementTypeOrSelf(op->getOperand(operand).getType()) !=
          getElementTypeOrSelf(op->getResult(resultIndex).getType()))
        return std::nullopt;
      return operand;
    }
    i -= length;
  }
  return std::nullopt;
}

#include "ampc/Dialect/TG/TGOpInfo.cpp.inc"

const KeywordInfo *OpInfo::findKeyword(llvm::StringRef keyword) const {
  for (const KeywordInfo &k : keywords)
    if (k.name == keyword)
      return &k;
  return nullptr;
}

llvm::ArrayRef<OpInfo> ampc::tg::getOpInfos() { return kOpInfos; }

namespace {
struct Index {
  llvm::StringMap<const OpInfo *> byName, byLanguage;
  Index() {
    for (const OpInfo &info : kOpInfos) {
      byName[info.name] = &info;
      if (!info.language.empty())
        byLanguage[info.language] = &info;
    }
  }
};
const Index &getIndex() {
  static const Index index;
  return index;
}
} // namespace

const OpInfo *ampc::tg::lookupOpInfo(llvm::StringRef opName) {
  return getIndex().byName.lookup(opName);
}

const OpInfo *ampc::tg::lookupLanguageOp(llvm::StringRef callee) {
  return getIndex().byLanguage.lookup(callee);
}

llvm::ArrayRef<llvm::StringLiteral> ampc::tg::getKernelNames(Operation *op) {
  const OpInfo *info = lookupOpInfo(op->getName().getStringRef());
  return info ? info->kernels : llvm::ArrayRef<llvm::StringLiteral>();
}

LossScaleRole ampc::tg::getLossScaleRole(Operation *op) {
  const OpInfo *info = lookupOpInfo(op->getName().getStringRef());
  return info ? info->lossScaleRole : LossScaleRole::None;
}

bool ampc::tg::kernelConvertsOnLoad(OpOperand &operand) {
  return convertsOnLoad(operand.getOwner(), operand.getOperandNumber());
}

std::optional<unsigned> ampc::tg::getInPlaceOperand(Operation *op,
                                                    unsigned resultIndex) {
  return inPlaceOperandOf(op, resultIndex);
}

llvm::StringRef ampc::tg::getOpListJSON() {
  static const char kJSON[] =
#include "ampc/Dialect/TG/TGOpList.json.inc"
      ;
  return llvm::StringRef(kJSON, sizeof(kJSON) - 1);
}
