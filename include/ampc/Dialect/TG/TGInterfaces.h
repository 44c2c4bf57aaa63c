//===- TGInterfaces.h - tg op interfaces ------------------------*- C++ -*-===//
#ifndef AMPC_DIALECT_TG_TGINTERFACES_H
#define AMPC_DIALECT_TG_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "ampc/Dialect/TG/TGInterfaces.h.inc"

namespace ampc::tg {

/// Location metadata that tells compiler-made ops from source ops: backward
/// ops made by autodiff ("grad"), optimizer ops ("optimizer"), loss-scaling
/// ops ("loss_scale"); automatic mixed precision tags its casts "amp".
inline constexpr llvm::StringLiteral kGradLocTag = "grad";
inline constexpr llvm::StringLiteral kOptimizerLocTag = "optimizer";
inline constexpr llvm::StringLiteral kLossScaleLocTag = "loss_scale";

/// `loc` fused with `tag` as metadata: `loc(fused<"grad">[loc])`.
mlir::Location getTaggedLoc(mlir::Location loc, llvm::StringRef tag);

/// The location of the backward ops of `forward`: its location tagged "grad".
inline mlir::Location getGradientLoc(mlir::Operation *forward) {
  return getTaggedLoc(forward->getLoc(), kGradLocTag);
}

/// The tag of a compiler-made op's location ("grad", "optimizer", ...), or
/// an empty string for a source op.
llvm::StringRef getLocTag(mlir::Location loc);

} // namespace ampc::tg

#endif // AMPC_DIALECT_TG_TGINTERFACES_H
