//===- Differentiate.h - the reverse-mode engine of ampc-autodiff -*- C++ -*-===//
//
// The reverse-mode differentiation that `ampc-autodiff` (tg.grad) and
// `ampc-optimizer-expansion` (tg.minimize) share. Implemented in
// passes/Autodiff.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_TRANSFORMS_DIFFERENTIATE_H
#define AMPC_TRANSFORMS_DIFFERENTIATE_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

namespace ampc {

/// Reverse-mode differentiation of the scalar `loss` with respect to `wrt`:
/// inserts the backward graph (ops with `tg.role = "grad"`) before `anchor`
/// (the tg.grad or tg.minimize being expanded). Returns one gradient per
/// `wrt` value, null where the loss does not reach it; fails (with a
/// diagnostic) on an op on the path that has no gradient rule.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
differentiate(mlir::Operation *anchor, mlir::Value loss, mlir::ValueRange wrt);

} // namespace ampc

#endif // AMPC_TRANSFORMS_DIFFERENTIATE_H
