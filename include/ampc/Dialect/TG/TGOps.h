//===- TGOps.h - the tensor-graph ops ---------------------------*- C++ -*-===//
#ifndef AMPC_DIALECT_TG_TGOPS_H
#define AMPC_DIALECT_TG_TGOPS_H

#include "ampc/Dialect/TG/TGDialect.h"
#include "ampc/Dialect/TG/TGInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ampc/Dialect/TG/TGEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ampc/Dialect/TG/TGAttrs.h.inc"

namespace ampc::tg {
/// The relaxed result-type rule of `tg` ops: same count and shapes; a float
/// result may be stored in any float type (a cast fused into the store);
/// integer and i1 results must match exactly.
bool areCompatibleResultTypes(mlir::TypeRange inferred, mlir::TypeRange actual);

/// Custom assembly directive `custom<StoreType>` of unary ops: `T` when the
/// result has the operand's type T, `T -> R` when it is stored as R (a fused
/// store).
mlir::ParseResult parseStoreType(mlir::OpAsmParser &parser, mlir::Type &operand,
                                 mlir::Type &result);
void printStoreType(mlir::OpAsmPrinter &printer, mlir::Operation *op,
                    mlir::Type operand, mlir::Type result);
} // namespace ampc::tg

#define GET_OP_CLASSES
#include "ampc/Dialect/TG/TGOps.h.inc"

namespace ampc::tg {

/// True for the float element types the compiler computes in and mixed
/// precision moves between: f32, f16 and bf16. (The element type of a value
/// is mlir::getElementTypeOrSelf.)
inline bool isFloatElement(mlir::Type t) {
  return t.isF32() || t.isF16() || t.isBF16();
}

/// True for the 16-bit float element types, f16 and bf16.
inline bool isLowFloatElement(mlir::Type t) { return t.isF16() || t.isBF16(); }

/// True for every float element type of the language: f64 too, which no
/// mixed-precision rewrite touches (docs/amp.md) but which computes and
/// differentiates like the others.
inline bool isAnyFloatElement(mlir::Type t) {
  return isFloatElement(t) || t.isF64();
}

/// The float type both operands promote to: the wider one, and f32 for the
/// incomparable pair f16/bf16. Returns null for a mix of integer and float,
/// or of two different integer types.
mlir::Type promoteElementTypes(mlir::Type a, mlir::Type b);

/// NumPy/PyTorch broadcast of two static shapes; std::nullopt if they do not
/// broadcast, with `badDim` set to the offending result dim (counted from the
/// left of the longer shape).
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                int64_t *badDim = nullptr);

/// True when every value of `from` is exactly representable in `to`
/// (e.g. f16 -> f32), so a cast from -> to loses nothing.
bool isExactConversion(mlir::Type from, mlir::Type to);

/// The element type an op computes in: its `tg.compute` attribute when
/// present, else its natural type (the element type its result type
/// inference gives for its current operands when that is a float or the op
/// reads no float; otherwise, as for an op without inference, the promoted
/// type of its float operands (a comparison of f32 and f16 computes in f32,
/// its result is bool), else its first result's element type).
/// Null for an op with neither float operands nor results.
mlir::Type getComputeType(mlir::Operation *op);

/// `tensor<2x3xf32>`, for diagnostics.
/// An element type in the language's spelling: `bool` for i1, `u8` for ui8,
/// MLIR's own (`f32`, `i16`, ...) for the others.
std::string elementTypeName(mlir::Type type);
std::string typeToString(mlir::Type type);

} // namespace ampc::tg

#endif // AMPC_DIALECT_TG_TGOPS_H
