//===- ampc-opt.cpp - MlirOptMain with ampc's dialects and passes ---------===//
//
// The pass-testing driver of the lit suite: `ampc-opt FILE --PASS`. It
// parses tg and the upstream dialects arith, func, linalg, math, scf and
// tensor.
//
//===----------------------------------------------------------------------===//

#include "ampc/InitAll.h"
#include "ampc/Transforms/AMPPolicy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

/// `--ampc-amp-register=OP=CLASS` (repeatable): registers the AMP class of an
/// op through the C++ API (`ampc::amp::registerOpClass`), as an embedding
/// compiler would, so lit tests show foreign ops rewritten by the same pass.
static llvm::cl::list<std::string> ampRegister(
    "ampc-amp-register",
    llvm::cl::desc("Register the AMP class of an op: OP=lower|fp32|promote|"
                   "follow (e.g. arith.mulf=lower)"),
    llvm::cl::value_desc("OP=CLASS"),
    llvm::cl::cb<void, const std::string &>([](const std::string &spec) {
      auto [op, cls] = llvm::StringRef(spec).split('=');
      std::optional<ampc::amp::OpClass> parsed = ampc::amp::symbolizeOpClass(cls);
      if (op.empty() || !op.contains('.') || !parsed) {
        llvm::errs() << "ampc-opt: error: --ampc-amp-register expects "
                        "DIALECT.OP=lower|fp32|promote|follow, got '"
                     << spec << "'\n";
        std::exit(2);
      }
      ampc::amp::registerOpClass(op, *parsed);
    }));

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  ampc::registerAllPasses();
  mlir::DialectRegistry registry;
  ampc::registerAllDialects(registry);
  // The dialects an embedding compiler mixes with tg, so lit tests can show
  // automatic mixed precision on their ops (--allow-unregistered-dialect
  // covers any other).
  registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ampc pass driver\n", registry));
}
