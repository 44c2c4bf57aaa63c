//===- TGAccumulateOps.cpp - gradient accumulation types ------------------===//
//
// The result types and checks of tg.grad_accumulate (TGAccumulateOps.td).
//
//===----------------------------------------------------------------------===//

#include "InferSupport.h"

#include "ampc/Dialect/TG/TGOps.h"

using namespace mlir;
using namespace ampc::tg;
using ampc::tg::detail::InferError;

LogicalResult GradAccumulateOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  InferError err{loc, "grad_accumulate"};
  ValueRange accs = adaptor.getAccs(), grads = adaptor.getGrads();
  if (accs.size() != grads.size())
    return err("needs one accumulator per gradient: ", accs.size(),
               " accumulators but ", grads.size(), " gradients");
  for (auto [i, pair] : llvm::enumerate(llvm::zip_equal(accs, grads))) {
    auto acc = cast<RankedTensorType>(std::get<0>(pair).getType());
    auto grad = cast<RankedTensorType>(std::get<1>(pair).getType());
    // f32 accumulators for f32 / f16 / bf16 gradients; an f64 gradient (an
    // f64 param's) has an f64 one, and only it.
    bool wide = grad.getElementType().isF64();
    if (wide ? !acc.getElementType().isF64() : !acc.getElementType().isF32())
      return err("accumulator #", i, " must be ", wide ? "f64" : "f32",
                 " (its gradient is ", grad, "), got ", acc);
    if (acc.getShape() != grad.getShape())
      return err("accumulator #", i, " has type ", acc, " but its gradient ",
                 grad);
    types.push_back(acc);
  }
  types.push_back(adaptor.getMicro().getType());
  return success();
}
