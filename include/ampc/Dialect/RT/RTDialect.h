//===- RTDialect.h - the runtime-call dialect --------------------*- C++ -*-===//
//
// `rt`: a planned step as calls into the runtime C ABI (RTOps.td).
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_DIALECT_RT_RTDIALECT_H
#define AMPC_DIALECT_RT_RTDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ampc/Dialect/RT/RTOpsDialect.h.inc"
#include "ampc/Dialect/RT/RTEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "ampc/Dialect/RT/RTOpsTypes.h.inc"
#define GET_ATTRDEF_CLASSES
#include "ampc/Dialect/RT/RTAttrs.h.inc"

namespace ampc::rt {
class InitOp;
class StepOp;
class SlotOp;
} // namespace ampc::rt

#define GET_OP_CLASSES
#include "ampc/Dialect/RT/RTOps.h.inc"

#endif // AMPC_DIALECT_RT_RTDIALECT_H
