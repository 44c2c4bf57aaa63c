//===- DataParallelNarrow.cpp - reduce widened 16-bit gradients in 16 bits ===//
//
// The `ampc-data-parallel-narrow` pass (its contract in Passes.td, the
// user's view in docs/distributed.md, "The gradient all-reduce"): a
// gradient the all-reduce carries in f32 that is only the widening of a
// 16-bit value is reduced as that 16-bit value, and widened after the wait,
// so the ranks' sum meets the 16-bit limit one process with the whole
// batch meets.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace ampc {
#define GEN_PASS_DEF_DATAPARALLELNARROW
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

bool is16BitFloat(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor &&
         (tensor.getElementType().isF16() || tensor.getElementType().isBF16());
}

bool isF32(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getElementType().isF32();
}

/// The op that makes `member` (an operand of a bucket's start, read by
/// nothing else) as an exact widening of a 16-bit value read by nothing
/// else: a `tg.cast` or a `tg.reshape` from f16/bf16 to f32.
Operation *widening(Value member) {
  Operation *def = member.getDefiningOp();
  if (!def || !isa<CastOp, ReshapeOp>(def) || def->getNumOperands() != 1 ||
      def->getNumResults() != 1 || !member.hasOneUse())
    return nullptr;
  Value narrow = def->getOperand(0);
  if (!narrow.hasOneUse() || !is16BitFloat(narrow.getType()) ||
      !isF32(member.getType()))
    return nullptr;
  return def;
}

struct DataParallelNarrowPass
    : public ampc::impl::DataParallelNarrowBase<DataParallelNarrowPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<GradAllreduceStartOp> starts(
        func.getBody().getOps<GradAllreduceStartOp>());
    for (GradAllreduceStartOp start : starts) {
      // The start's one reader is its wait.
      if (start->use_empty())
        continue;
      auto wait = dyn_cast<GradAllreduceWaitOp>(*start->user_begin());
      if (!wait || wait->getBlock() != start->getBlock() ||
          !llvm::all_of(start->getUsers(),
                        [&](Operation *user) { return user == wait; }))
        continue;
      OpBuilder builder(wait);
      builder.setInsertionPointAfter(wait);
      for (unsigned i = 0; i < start->getNumOperands(); ++i) {
        Operation *def = widening(start->getOperand(i));
        // The wait's result must reach its readers only directly.
        if (!def || wait->getOperand(i) != start->getResult(i))
          continue;
        Value narrow = def->getOperand(0);
        Type narrowType = narrow.getType();
        start->setOperand(i, narrow);
        start->getResult(i).setType(narrowType);
        Value reduced = wait->getResult(i);
        reduced.setType(narrowType);
        IRMapping map;
        map.map(narrow, reduced);
        Operation *again = builder.clone(*def, map);
        reduced.replaceAllUsesExcept(again->getResult(0), again);
        def->erase();
      }
    }
  }
};

} // namespace
