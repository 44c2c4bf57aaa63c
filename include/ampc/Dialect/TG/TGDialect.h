//===- TGDialect.h - the tensor-graph dialect -------------------*- C++ -*-===//
#ifndef AMPC_DIALECT_TG_TGDIALECT_H
#define AMPC_DIALECT_TG_TGDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ampc/Dialect/TG/TGDialect.h.inc"

#endif // AMPC_DIALECT_TG_TGDIALECT_H
