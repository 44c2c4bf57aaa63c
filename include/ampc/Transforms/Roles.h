//===- Roles.h - what made a compiler-made op -------------------*- C++ -*-===//
//
// Passes that add ops mark them with the discardable attribute `tg.role`, and
// later passes and the AMP report decide from it. Locations only say where an
// op comes from (for diagnostics), so stripping them changes no decision.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_TRANSFORMS_ROLES_H
#define AMPC_TRANSFORMS_ROLES_H

#include "ampc/Dialect/TG/TGDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace ampc {

/// Why a pass made an op.
enum class Role {
  /// A cast automatic mixed precision is responsible for: one it inserted,
  /// or the cast back that autodiff built as the gradient of one.
  Amp,
  /// A backward op built by autodiff.
  Grad,
  /// An op of the optimizer expansion of `tg.minimize` (clipping, updates).
  Optimizer,
  /// An op of loss scaling (the scale, check-and-unscale, scale update).
  LossScale,
};

/// "amp", "grad", "optimizer", "loss_scale": the values of `tg.role`.
inline llvm::StringRef stringifyRole(Role role) {
  switch (role) {
  case Role::Amp:
    return "amp";
  case Role::Grad:
    return "grad";
  case Role::Optimizer:
    return "optimizer";
  case Role::LossScale:
    return "loss_scale";
  }
  return "grad";
}

/// The role of `op`, or std::nullopt for an op of the source program.
inline std::optional<Role> getRole(mlir::Operation *op) {
  auto attr = op->getAttrOfType<mlir::StringAttr>(tg::TGDialect::kRoleAttrName);
  if (!attr)
    return std::nullopt;
  return llvm::StringSwitch<std::optional<Role>>(attr.getValue())
      .Case("amp", Role::Amp)
      .Case("grad", Role::Grad)
      .Case("optimizer", Role::Optimizer)
      .Case("loss_scale", Role::LossScale)
      .Default(std::nullopt);
}

inline bool hasRole(mlir::Operation *op, Role role) {
  return getRole(op) == role;
}

inline void setRole(mlir::Operation *op, Role role) {
  op->setAttr(tg::TGDialect::kRoleAttrName,
              mlir::StringAttr::get(op->getContext(), stringifyRole(role)));
}

} // namespace ampc

#endif // AMPC_TRANSFORMS_ROLES_H
