//===- ampc-opt.cpp - MlirOptMain with ampc's dialects and passes ---------===//
//
// The pass-testing driver of the lit suite: `ampc-opt FILE --PASS`.
//
//===----------------------------------------------------------------------===//

#include "ampc/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  ampc::registerAllPasses();
  mlir::DialectRegistry registry;
  ampc::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ampc pass driver\n", registry));
}
