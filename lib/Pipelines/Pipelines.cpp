//===- Pipelines.cpp - the ampc compilation pipeline ----------------------===//

#include "ampc/Pipelines/Pipelines.h"

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/InitAll.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void ampc::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  // Autodiff, automatic mixed precision, loss scaling, cast optimization and
  // buffer planning are added here, in that order, as they land.
  if (options.canonicalize)
    pm.addPass(createCanonicalizerPass());
}

void ampc::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "ampc-pipeline", "The ampc compilation pipeline (what `ampc` runs)",
      buildPipeline);
}

void ampc::registerAllDialects(DialectRegistry &registry) {
  registry.insert<tg::TGDialect, func::FuncDialect, arith::ArithDialect>();
}

void ampc::registerAllPasses() {
  registerAMPCPasses();
  registerPipelines();
}
