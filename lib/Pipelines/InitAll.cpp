//===- InitAll.cpp - register everything ampc provides --------------------===//

#include "ampc/InitAll.h"

#include "ampc/Conversion/TGToRuntime.h"
#include "ampc/Dialect/RT/RTDialect.h"
#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Pipelines/Pipelines.h"
#include "ampc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

void ampc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry
      .insert<tg::TGDialect, rt::RTDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
              mlir::math::MathDialect, mlir::linalg::LinalgDialect,
              mlir::tensor::TensorDialect, mlir::scf::SCFDialect>();
}

void ampc::registerAllPasses() {
  registerAMPCPasses();
  registerAMPCConversionPasses();
  registerPipelines();
}
