//===- TGToRuntime.h - a planned tg step as runtime calls ---------*- C++ -*-===//
//
// The lowered form of a step ("one lowering, two consumers"): a
// flat list of calls into the runtime C ABI (runtime/include/ampc/runtime.h)
// whose arguments are buffers (a slot or an arena offset), constants and
// constant arrays. The in-process executor calls it through libffi; the C++
// emitter prints it. Neither consumer interprets tg ops.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_CONVERSION_TGTORUNTIME_H
#define AMPC_CONVERSION_TGTORUNTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ampc::rt {

/// The C type of a scalar argument.
enum class CType { Ptr, I32, I64, U64, F32, F64 };

/// A device buffer: a persistent slot, or an offset in the step's arena.
struct BufferRef {
  int32_t slot = -1; ///< -1: the arena.
  int64_t offset = 0;
  bool operator==(const BufferRef &o) const {
    return slot == o.slot && offset == o.offset;
  }
  bool operator!=(const BufferRef &o) const { return !(*this == o); }
};

/// One argument of a runtime call.
struct Arg {
  enum class Kind {
    Buffer,      ///< a device pointer (void *)
    Null,        ///< NULL
    Scalar,      ///< an integer or float of `ctype`
    Seed,        ///< the user's seed (uint64_t)
    Context,     ///< the ampc_context
    I64Array,    ///< const int64_t * (dims, perms, numels)
    I32Array,    ///< const ampc_dtype * (dtype lists)
    BufferArray, ///< void *const * (tensor lists)
    ShapeArray,  ///< const int64_t *const * (concat's shapes)
    HostBytes    ///< const void * to constant host data
  };
  Kind kind = Kind::Null;
  CType ctype = CType::Ptr;
  BufferRef buffer;
  int64_t i = 0;
  double f = 0.0;
  std::string symbol; ///< C spelling of an enum value ("AMPC_F16"), if any
  std::vector<int64_t> ints;
  std::vector<BufferRef> buffers;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<uint8_t> bytes;
};

/// One call `callee(args...)` returning ampc_status.
struct Call {
  std::string callee;
  std::vector<Arg> args;
  std::string note; ///< what it computes, for emitted comments
};

/// A persistent buffer.
struct Slot {
  enum class Role { Input, Param, State, Constant };
  Role role = Role::Input;
  std::string name;
  int32_t dtype = 0; ///< ampc_dtype
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int32_t argIndex = -1; ///< the function argument it holds, if any
  /// For Input slots: the exclusive upper bound of valid integer values
  /// (labels < C, ids < V) when a consumer constrains them, else 0.
  int64_t intRange = 0;
};

/// A value the step returns to the user.
struct Output {
  int64_t index = 0;
  BufferRef buffer;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};

/// A whole lowered step.
struct Program {
  std::string name;
  int64_t arenaSize = 0;
  int64_t intermediateBytes = 0;
  std::vector<Slot> slots;
  std::vector<Call> init; ///< run once: parameters, state, constants
  std::vector<Call> step; ///< run every step
  std::vector<Output> outputs;
  bool training = false; ///< it updates parameters (a `minimize` step)
  /// The scaler: its scale slot (dynamic) or its constant scale (static,
  /// else 0), and found_inf (f32) after a step.
  int32_t scaleSlot = -1;
  double staticScale = 0.0;
  bool hasFoundInf = false;
  BufferRef foundInf;
  /// Identifies the graph's state layout (checkpoints refuse other graphs).
  uint64_t fingerprint = 0;
};

/// Lowers one planned function (ampc-buffer-planning has run). Emits an
/// error on the function and fails on an op it cannot lower.
mlir::FailureOr<Program> lowerToRuntime(mlir::func::FuncOp func);

/// The C spelling of an ampc_dtype value.
const char *dtypeSymbol(int32_t dtype);

} // namespace ampc::rt

#endif // AMPC_CONVERSION_TGTORUNTIME_H
