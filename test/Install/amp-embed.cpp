//===- amp-embed.cpp - ampc's AMP pass in another compiler ----------------===//
//
// An out-of-tree tool that uses the installed ampc package the way an
// embedding compiler does: it registers ampc's dialects, classifies ops of
// upstream dialects for automatic mixed precision, runs the AMP pass on a
// module of `arith`/`linalg`/`math` ops and prints the result.
//
//   amp-embed INPUT.mlir [f16|bf16]   the AMP pass, built from its options
//   amp-embed INPUT.mlir PIPELINE     a textual pass pipeline on the module,
//       e.g. 'ampc-pipeline{amp=bf16 amp-policy=reference}'
//
// Exit codes: 0 success, 1 the input or the pass failed, 2 usage.
//
//===----------------------------------------------------------------------===//

#include <ampc/ampc.h>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    llvm::errs() << "usage: amp-embed INPUT.mlir [f16|bf16|PIPELINE]\n";
    return 2;
  }
  llvm::StringRef mode = argc == 3 ? argv[2] : "f16";

  // The dialects: tg plus func, arith, math, linalg, tensor, scf.
  mlir::DialectRegistry registry;
  ampc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);

  // This compiler's own classification of the ops it emits, registered
  // before any pass is built: its GEMMs and products run in the low type,
  // its transcendental math in f32, its sums follow their inputs.
  using ampc::amp::OpClass;
  ampc::amp::registerOpClass("linalg.matmul", OpClass::Lower);
  ampc::amp::registerOpClass("math.exp", OpClass::FP32);
  ampc::amp::registerOpClass("arith.mulf", OpClass::Lower);
  ampc::amp::registerOpClass("arith.addf", OpClass::Follow);

  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], sourceMgr, &context);
  if (!module)
    return 1;

  mlir::PassManager pm(&context);
  if (mode == "f16" || mode == "bf16") {
    // The same pass `ampc-opt --ampc-auto-mixed-precision` runs, built from
    // its options struct.
    ampc::AutoMixedPrecisionOptions options;
    options.lowType =
        mode == "bf16" ? ampc::amp::LowType::BF16 : ampc::amp::LowType::F16;
    options.policy = ampc::amp::Policy::Reference;
    pm.addNestedPass<mlir::func::FuncOp>(
        ampc::createAutoMixedPrecision(options));
  } else {
    // The textual form: every ampc pass and `ampc-pipeline` by name, nested
    // in the module's pass manager (no `builtin.module(...)` around it).
    ampc::registerAllPasses();
    if (mlir::failed(mlir::parsePassPipeline(mode, pm, llvm::errs())))
      return 2;
  }
  if (mlir::failed(pm.run(*module)))
    return 1;
  // The pass manager verifies after each pass; say so explicitly, since the
  // point of this tool is IR that verifies.
  if (mlir::failed(mlir::verify(*module))) {
    llvm::errs() << "amp-embed: the rewritten module does not verify\n";
    return 1;
  }
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
