//===- ProgramInfo.h - what consumers of an rt.program read -------*- C++ -*-===//
//
// The executor and the C++ emitter both need the slot table of a program
// (names, roles, dtypes, sizes) and where its outputs, constants and scaler
// flags live; this reads them from the IR once.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_DIALECT_RT_PROGRAMINFO_H
#define AMPC_DIALECT_RT_PROGRAMINFO_H

#include "ampc/Dialect/RT/RTDialect.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ampc::rt {

/// Bytes of a statically shaped tensor (i1 takes one byte).
int64_t tensorBytes(mlir::Type type);

/// A persistent buffer: one per rt.slot, then one per rt.constant.
struct Slot {
  /// Buffer: the language's non-trainable `buffer` state (saved like a
  /// param, never updated by an optimizer).
  enum class Role { Input, Param, State, Constant, Buffer };
  Role role = Role::Input;
  std::string name;
  int32_t dtype = 0; ///< ampc_dtype
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  /// Inputs: the exclusive upper bound of valid integer values, else 0.
  int64_t intRange = 0;
  /// Constants: their value.
  mlir::ElementsAttr value;
};

/// A value the step returns.
struct Output {
  int64_t index = 0;
  mlir::Value buffer;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

/// Where a call of the step comes from (its `rt.source` and location), for
/// the reports of failed checks and of overflows.
struct CallSource {
  size_t call = 0;  ///< index among the step's rt.call ops
  std::string op;   ///< the source op it comes from ("matmul")
  std::string name; ///< the variable that op is assigned to, or ""
  std::string loc;  ///< "FILE:LINE:COL", or "" without a location
  bool backward = false;
  int32_t site = -1; ///< its check site (ampc_check), if it has one
  /// With a site: the checked index operand (ODS name) and its valid range
  /// [0, range).
  std::string index;
  int64_t range = 0;
  /// Argument positions of its result tensors (pointer, dtype, dims, rank).
  std::vector<int64_t> results;
};

/// An rt.program, described for its consumers.
struct Program {
  mutable ProgramOp op; ///< ops have no const accessors
  std::string name;
  int64_t arenaSize = 0;
  int64_t intermediateBytes = 0;
  std::vector<Slot> slots;
  /// The rt.constant ops, in order; constant k is slot numArgs + k.
  mutable std::vector<ConstantOp> constants;
  size_t numArgs = 0; ///< slots declared by rt.slot
  std::vector<Output> outputs; ///< by index
  bool training = false;
  int32_t scaleSlot = -1;   ///< a dynamic scaler's scale
  double staticScale = 0.0; ///< a static scaler's scale, else 0
  mlir::Value foundInf;     ///< the overflow flag, if any
  uint64_t fingerprint = 0;
  /// The step's calls that have an `rt.source`, in order.
  std::vector<CallSource> sources;
  /// The index of the step's first call that reads the gradients' overflow
  /// check (ampc_check_finite_unscale), or the number of calls.
  size_t checkCall = 0;
  /// Gradient accumulation (`accumulate = K`): micro-batches per update (1
  /// without), and the index of the step's first call of the update: calls
  /// [0, updateCall) are one micro-batch (forward, backward, accumulation),
  /// calls [updateCall, end) the update, run after the K-th micro-batch.
  /// Without accumulation updateCall is the number of calls.
  int64_t accumulate = 1;
  size_t updateCall = 0;

  /// The source of check site `site`, or null.
  const CallSource *sourceOfSite(int32_t site) const {
    for (const CallSource &s : sources)
      if (s.site == site && site >= 0)
        return &s;
    return nullptr;
  }

  /// The slot a block argument of rt.init/rt.step stands for, or -1 (the
  /// arena).
  int32_t slotOf(mlir::BlockArgument arg) const {
    return arg.getArgNumber() < numArgs ? int32_t(arg.getArgNumber()) : -1;
  }
};

/// The bytes of a constant as the runtime stores them (little-endian, i1 as
/// one byte, a splat repeated).
std::vector<uint8_t> constantBytes(mlir::ElementsAttr value);

/// Reads `op`.
Program describeProgram(ProgramOp op);

/// The graph of a lowered module that `ampc run` runs and `--emit=cpp`
/// emits: `graph` when given, else the first that trains, else the first.
/// Null, with `error` set, when `graph` names none of them. When `graph` is
/// empty and the module holds several, `note` says which was chosen and why
/// (`verb`: "running", "emitting").
ProgramOp chooseProgram(mlir::ModuleOp module, llvm::StringRef graph,
                        llvm::StringRef verb, std::string &error,
                        std::string &note);

/// Fills p.sources and p.checkCall from the calls of `step`.
void describeSources(mlir::Block &step, Program &p);

/// The ampc_dtype of a tensor's element type.
int32_t dtypeOf(mlir::Type type);

} // namespace ampc::rt

#endif // AMPC_DIALECT_RT_PROGRAMINFO_H
