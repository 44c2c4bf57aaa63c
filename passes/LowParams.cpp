//===- LowParams.cpp - O3's parameters stored in low precision ------------===//
//
// The `ampc-low-params` pass (its description in Passes.td): an f32
// parameter that the (all-low) mixed-precision rewriting reads only through
// casts to one 16-bit type is stored in that type.
//
//===----------------------------------------------------------------------===//

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ampc {
#define GEN_PASS_DEF_LOWPARAMS
#include "ampc/Transforms/Passes.h.inc"
} // namespace ampc

using namespace mlir;
using namespace ampc;
using namespace ampc::tg;

namespace {

struct LowParamsPass : public ampc::impl::LowParamsBase<LowParamsPass> {
  void runOnOperation() override;
};

/// The 16-bit type every value-reading use of `p` casts it to, or null when
/// some use reads it as it is (an f32 op) or casts disagree. The parameter
/// lists of `tg.minimize` and `tg.grad` name it without reading it.
Type onlyLowReads(Value p, SmallVectorImpl<CastOp> &casts) {
  Type low;
  for (OpOperand &use : p.getUses()) {
    Operation *user = use.getOwner();
    if (auto m = dyn_cast<MinimizeOp>(user)) {
      if (use.getOperandNumber() == 0)
        return {};
      continue;
    }
    if (auto g = dyn_cast<GradOp>(user)) {
      if (use.get() == g.getLoss())
        return {};
      continue;
    }
    auto cast = dyn_cast<CastOp>(user);
    if (!cast)
      return {};
    Type to = getElementTypeOrSelf(cast.getType());
    if ((!to.isF16() && !to.isBF16()) || (low && low != to))
      return {};
    low = to;
    casts.push_back(cast);
  }
  return low;
}

} // namespace

void LowParamsPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  Block &body = func.getBody().front();
  bool changed = false;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = func.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttrName);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type || !type.getElementType().isF32())
      continue;
    SmallVector<CastOp> casts;
    Type low = onlyLowReads(arg, casts);
    if (!low || casts.empty())
      continue;
    arg.setType(type.clone(low));
    for (CastOp cast : casts) {
      cast.getResult().replaceAllUsesWith(arg);
      cast.erase();
    }
    changed = true;
  }
  if (!changed)
    return;
  // The updated params (tg.minimize's results) take their params' types,
  // and so do the function's results that return them.
  // tg.grad's gradients likewise.
  for (Operation &op : body) {
    if (auto m = dyn_cast<MinimizeOp>(op))
      for (auto [result, p] : llvm::zip_equal(m.getUpdated(), m.getParams()))
        result.setType(p.getType());
    if (auto g = dyn_cast<GradOp>(op))
      for (auto [result, p] : llvm::zip_equal(g.getGrads(), g.getWrt()))
        result.setType(p.getType());
  }
  SmallVector<Type> results(
      body.getTerminator()->getOperandTypes().begin(),
      body.getTerminator()->getOperandTypes().end());
  SmallVector<Type> inputs(body.getArgumentTypes().begin(),
                           body.getArgumentTypes().end());
  func.setFunctionType(FunctionType::get(&getContext(), inputs, results));
}
