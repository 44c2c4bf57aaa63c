//===- TGToRuntime.h - a planned tg step as rt runtime calls ------*- C++ -*-===//
//
// The lowering of a buffer-planned `tg` step to the `rt` dialect (one
// lowering, two consumers: `ampc run` and the C++ emitter both read its
// result). Every `tg` op becomes the runtime call(s) it means, on the buffers
// buffer planning gave its results.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_CONVERSION_TGTORUNTIME_H
#define AMPC_CONVERSION_TGTORUNTIME_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

#include <memory>
#include <utility>
#include <vector>

namespace ampc {

/// Converts statically shaped tensors to `!rt.buffer` (a value's buffer).
class RuntimeTypeConverter : public mlir::TypeConverter {
public:
  explicit RuntimeTypeConverter(mlir::MLIRContext *context);
};

/// The patterns that rewrite each `tg` op inside an `rt.step` into runtime
/// calls on its planned buffers (`tg.offsets`; in-place results reuse their
/// operand's buffer), and the step's `func.return` into outputs and copies
/// into slots.
void populateTGToRuntimeConversionPatterns(mlir::TypeConverter &converter,
                                           mlir::RewritePatternSet &patterns);

/// Whether `name` ("ampc_relu_fwd") is an entry point of the runtime's kernel
/// table (ampc/runtime_kernels.inc, which the lowering includes).
bool isRuntimeKernel(llvm::StringRef name);

/// The ops the generic kernel-call pattern lowers, each with the runtime
/// entry point it calls: the rows the lowering writes and those it derives
/// from the op records and the kernel table's families.
std::vector<std::pair<llvm::StringRef, llvm::StringRef>> getKernelCallees();

#define GEN_PASS_DECL_CONVERTTGTORUNTIME
#define GEN_PASS_DECL_PLANPRIMITIVES
#include "ampc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ampc/Conversion/Passes.h.inc"

/// Runs the conversion on `module` (buffer planning has run), then
/// ampc-plan-primitives; emits located errors and fails on what it cannot
/// lower.
mlir::LogicalResult lowerToRuntime(mlir::ModuleOp module);

} // namespace ampc

#endif // AMPC_CONVERSION_TGTORUNTIME_H
