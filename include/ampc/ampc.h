//===- ampc.h - the public API of the ampc compiler -------------*- C++ -*-===//
//
// The one header an embedding compiler includes (CMake: link ampc::compiler).
//
//   mlir::DialectRegistry registry;
//   ampc::registerAllDialects(registry);       // tg, func, arith, math, ...
//   mlir::MLIRContext context(registry);
//   ampc::amp::registerOpClass("linalg.matmul", ampc::amp::OpClass::Lower);
//   mlir::PassManager pm(&context);
//   ampc::AutoMixedPrecisionOptions amp;       // low type, policy, ...
//   pm.addNestedPass<mlir::func::FuncOp>(ampc::createAutoMixedPrecision(amp));
//
// What each declaration means is documented where it is declared; the
// walkthrough is docs/embedding.md.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_AMPC_H
#define AMPC_AMPC_H

// registerAllDialects, registerAllPasses.
#include "ampc/InitAll.h"

// The tg dialect and its ops.
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGOps.h"

// The AMP policy: ampc::amp::OpClass, registerOpClass, PolicyTable.
#include "ampc/Transforms/AMPPolicy.h"

// The passes (create* functions and their option structs).
#include "ampc/Transforms/Passes.h"

// The whole pipeline: ampc::PipelineOptions, buildPipeline.
#include "ampc/Pipelines/Pipelines.h"

#endif // AMPC_AMPC_H
