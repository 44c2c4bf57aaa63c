//===- TGOpInfo.h - what each tg op declares, as a table --------*- C++ -*-===//
//
// The facts every `tg` op record declares (TGOpInfo.td): its default AMP
// class, the operands its kernel converts on load, its in-place operands, its
// role for loss scaling, the runtime kernels it lowers to, how a `.tg`
// program calls it and the PyTorch function with its meaning. The table is
// generated from the records at build time (gen-op-tables.py); nothing here
// is kept by hand.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_DIALECT_TG_TGOPINFO_H
#define AMPC_DIALECT_TG_TGOPINFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <limits>
#include <optional>

namespace mlir {
class Operation;
class OpOperand;
} // namespace mlir

namespace ampc::tg {

/// What loss scaling sees in an op.
enum class LossScaleRole {
  None,
  /// Where a backward graph starts (`tg.grad_seed`).
  Seed,
  /// Reads the step's gradients and ends the backward graph (optimizer
  /// updates, clipping).
  GradientConsumer,
  /// The fused inf/NaN check and unscale.
  Unscale,
  /// The dynamic scale update.
  ScaleUpdate,
};

/// How a keyword attribute of a `.tg` call is spelled (TGOpInfo.td).
enum class KeywordKind {
  Float,  ///< a number, an F64 attribute
  Int,    ///< an integer, an I64 attribute
  Bool,   ///< true or false, a bool attribute
  Flag,   ///< true or false, a unit attribute present when true
  String, ///< a string, one of `allowed` when that is not empty
  Ints,   ///< a list of integers (one integer is a list of one)
  Pair,   ///< one integer or a list of two, for the two spatial dims
  Single, ///< one integer or a list of one, for one spatial dim
  Triple, ///< one integer or a list of three, for three spatial dims
  Dim,    ///< a dim of the first operand, negative counting from the end
  Dims,   ///< a list of such dims; absent means every dim
  DType,  ///< a dtype name
};

/// One keyword attribute of a `.tg` call.
struct KeywordInfo {
  llvm::StringLiteral name;
  KeywordKind kind;
  /// The default in the language's spelling: "" means required (or, for
  /// Dims, every dim) and "=NAME" the value of keyword NAME.
  llvm::StringLiteral defaultValue;
  llvm::ArrayRef<llvm::StringLiteral> allowed;

  bool isRequired() const {
    return defaultValue.empty() && kind != KeywordKind::Dims;
  }
};

/// The record of one `tg` op.
struct OpInfo {
  static constexpr unsigned kVariadic = std::numeric_limits<unsigned>::max();

  /// "tg.relu".
  llvm::StringLiteral name;
  /// Its default AMP class: "lower", "fp32", "promote" or "follow".
  llvm::StringLiteral ampClass;
  LossScaleRole lossScaleRole;
  /// The runtime functions (C ABI) it lowers to, in the order the lowering
  /// prefers them; empty for ops that never reach the lowering.
  llvm::ArrayRef<llvm::StringLiteral> kernels;
  /// The operands (ODS names) its kernel converts from another float type as
  /// it loads them; "*" means every float operand.
  llvm::ArrayRef<llvm::StringLiteral> loadConverts;
  /// Operand groups (ODS names) whose elements the results overwrite, in
  /// order: result i may reuse the buffer of the i-th operand of them.
  llvm::ArrayRef<llvm::StringLiteral> inPlace;
  /// The `.tg` callee, "" for ops the compiler makes.
  llvm::StringLiteral language;
  /// "unary", "binary" or "".
  llvm::StringLiteral elementwise;
  /// The PyTorch function with its meaning ("torch.nn.functional.gelu"), or
  /// "" where the reference computes it with code of its own.
  llvm::StringLiteral torch;
  /// Operand (group) names, in ODS order.
  llvm::ArrayRef<llvm::StringLiteral> operands;
  /// The keyword attributes of the call, in order.
  llvm::ArrayRef<KeywordInfo> keywords;
  /// How many operands a call takes (maxOperands may be kVariadic).
  unsigned minOperands, maxOperands;
  /// An op the compiler makes for training steps.
  bool training;
  /// The frontend builds it with code of its own, not from `keywords` alone.
  bool customFrontend;
  /// Its gradient rule is data in its record (else C++, or none).
  bool gradientFromRecord;
  /// It implements GradientOpInterface.
  bool differentiable;
  /// Its kernel computes on floats only although the IR allows integer
  /// operands (the lowering rejects those at their location).
  bool floatOnlyKernel;
  /// Opt level O2 keeps it in f32 (batch norm and the losses).
  bool o2KeptF32;

  const KeywordInfo *findKeyword(llvm::StringRef keyword) const;
};

/// Every `tg` op, in the order of the .td files.
llvm::ArrayRef<OpInfo> getOpInfos();
/// The record of `opName` ("tg.relu"), or null for any other op.
const OpInfo *lookupOpInfo(llvm::StringRef opName);
/// The op a `.tg` call of `callee` builds, or null.
const OpInfo *lookupLanguageOp(llvm::StringRef callee);

/// The runtime functions `op` lowers to (empty for non-tg ops).
llvm::ArrayRef<llvm::StringLiteral> getKernelNames(mlir::Operation *op);
/// The loss-scaling role of `op` (None for non-tg ops).
LossScaleRole getLossScaleRole(mlir::Operation *op);
/// Whether the kernel of `operand`'s owner converts that operand from
/// another float type as it loads it (false for non-tg ops).
bool kernelConvertsOnLoad(mlir::OpOperand &operand);
/// The operand whose buffer result `resultIndex` of `op` may reuse (same
/// element type), from the record's `inPlace`; std::nullopt when none.
std::optional<unsigned> getInPlaceOperand(mlir::Operation *op,
                                          unsigned resultIndex);

/// The JSON document of every op record (`ampc --list-ops`, docs/ops.md).
llvm::StringRef getOpListJSON();

} // namespace ampc::tg

#endif // AMPC_DIALECT_TG_TGOPINFO_H
