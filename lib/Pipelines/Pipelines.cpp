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
  bool ampOn = options.amp != amp::Mode::Off;
  if (ampOn) {
    // The reference rewriting here; the fast policy's fusions run after loss
    // scaling, as `ampc-cast-optimization`, so they also see its casts.
    AutoMixedPrecisionOptions ampOptions;
    ampOptions.lowType = options.amp == amp::Mode::BF16 ? amp::LowType::BF16
                                                         : amp::LowType::F16;
    ampOptions.policy = amp::Policy::Reference;
    ampOptions.fp32Ops.assign(options.ampFp32.begin(), options.ampFp32.end());
    ampOptions.lowerOps.assign(options.ampLower.begin(),
                               options.ampLower.end());
    ampOptions.followOps.assign(options.ampFollow.begin(),
                                options.ampFollow.end());
    ampOptions.unknownOps = options.ampUnknownOps;
    pm.addNestedPass<func::FuncOp>(createAutoMixedPrecision(ampOptions));
  }
  if (ampOn && options.ampPolicy == amp::Policy::Fast)
    pm.addNestedPass<func::FuncOp>(createCastOptimization());
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
