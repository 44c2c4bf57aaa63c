//===- AMPPolicy.h - automatic-mixed-precision op classes -------*- C++ -*-===//
//
// The AMP policy as data: a table from operation name to class
// (shared/spec/amp.md). The defaults hold every `tg` op; an embedding
// compiler registers the ops of its own dialects with `registerOpClass`
// (e.g. `linalg.matmul` -> lower) and the same pass rewrites them.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_TRANSFORMS_AMPPOLICY_H
#define AMPC_TRANSFORMS_AMPPOLICY_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace ampc::amp {

/// How automatic mixed precision treats an op (amp.md, "Op classes").
enum class OpClass {
  /// Inputs cast to low, computed with f32 accumulation, result low.
  Lower,
  /// Inputs cast to f32, computed and returned in f32.
  FP32,
  /// Mixed float inputs computed in the widest input type.
  Promote,
  /// Computed in the type of its float input(s); never forces a cast.
  Follow,
};

/// "lower", "fp32", "promote", "follow".
llvm::StringRef stringifyOpClass(OpClass cls);
std::optional<OpClass> symbolizeOpClass(llvm::StringRef name);

/// A table from fully qualified operation name (`tg.matmul`) to class.
/// Unknown ops are not in the table; the pass treats them as `follow` (with a
/// remark, or an error when asked to).
class PolicyTable {
public:
  /// The default table of amp.md, plus every op registered through
  /// `registerOpClass` so far.
  static PolicyTable getDefault();

  void set(llvm::StringRef opName, OpClass cls) { classes[opName] = cls; }
  std::optional<OpClass> lookup(llvm::StringRef opName) const;
  const llvm::StringMap<OpClass> &entries() const { return classes; }

private:
  llvm::StringMap<OpClass> classes;
};

/// Registers (or re-registers) the class of `opName` in the process-wide
/// defaults, for ops of dialects ampc does not know. Not thread-safe against
/// concurrent pass runs: register before building pipelines.
void registerOpClass(llvm::StringRef opName, OpClass cls);

} // namespace ampc::amp

#endif // AMPC_TRANSFORMS_AMPPOLICY_H
