//===- MLIRGen.h - .tg AST to tg dialect IR ---------------------*- C++ -*-===//
//
// Lowers a parsed `.tg` module to a `builtin.module` of `func.func` graphs
// made of `tg` ops, with a `FileLineColLoc` on every op (wrapped in a
// `NameLoc` carrying the assigned variable for the outermost op of an
// assignment). The encoding of graphs, parameters and training steps is the
// one documented in the `tg` dialect description (TGDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_FRONTEND_MLIRGEN_H
#define AMPC_FRONTEND_MLIRGEN_H

#include "ampc/Frontend/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace ampc::frontend {

/// Builds the IR of `module`. Errors (undefined or redefined names, unknown
/// ops, wrong arity, bad attributes, shape and type mismatches) are emitted
/// through `context`'s diagnostic engine at the offending token; the result
/// is null if there was any. The first error stops the lowering.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const ModuleAST &module);

} // namespace ampc::frontend

#endif // AMPC_FRONTEND_MLIRGEN_H
