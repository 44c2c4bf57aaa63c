//===- BufferPlan.h - shared facts of buffer planning and lowering -*- C++ -*-===//
//
// The buffer-planning pass and the lowering to runtime calls must agree on
// which results are computed in place (they reuse an operand's buffer) and
// on how many bytes a tensor takes; both live here.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_CONVERSION_BUFFERPLAN_H
#define AMPC_CONVERSION_BUFFERPLAN_H

#include "ampc/Dialect/TG/TGOpInfo.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include <cstdint>
#include <optional>

namespace ampc {

/// Alignment of every planned buffer inside the arena (the arena base is
/// 256-byte aligned by the runtime).
constexpr int64_t kBufferAlignment = 256;

/// The operand whose buffer result `resultIndex` of `op` reuses (the runtime
/// kernel updates it in place: optimizer and scaler updates, unscaling,
/// clipping; a reshape that keeps the element type is a view), as the op's
/// record declares it (`inPlace` in TGOpInfo.td).
inline std::optional<unsigned> getInPlaceOperand(mlir::Operation *op,
                                                 unsigned resultIndex) {
  return tg::getInPlaceOperand(op, resultIndex);
}

/// Bytes of a statically shaped tensor (i1 takes one byte).
int64_t getTensorBytes(mlir::Type type);

} // namespace ampc

#endif // AMPC_CONVERSION_BUFFERPLAN_H
