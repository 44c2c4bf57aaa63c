//===- AMPPolicy.h - automatic-mixed-precision op classes -------*- C++ -*-===//
//
// The AMP policy as data: a table from operation name to class (the
// defaults are PyTorch's CUDA autocast lists, see docs/amp.md). The
// defaults hold every `tg` op; an embedding
// compiler registers the ops of its own dialects with `registerOpClass`
// (e.g. `linalg.matmul` -> lower) and the same pass rewrites them.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_TRANSFORMS_AMPPOLICY_H
#define AMPC_TRANSFORMS_AMPPOLICY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

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

/// The 16-bit type AMP lowers to (amp.md's "low").
enum class LowType { F16, BF16 };

/// Which rewriting AMP performs (amp.md, "Policies").
enum class Policy {
  /// Exactly torch.autocast: explicit casts, each value cast once per type.
  Reference,
  /// The same numeric contract or a stricter one, with casts fused into
  /// producers and consumers.
  Fast,
};

/// What AMP does with an op that is not in the policy table.
enum class UnknownOpMode {
  /// Treat it as `follow`, with a remark.
  Follow,
  /// Fail with an error located at the op.
  Error,
};

/// `--amp=`: off, or the low type.
enum class Mode { Off, FP16, BF16 };

/// Resolves a user-facing op name to its table key: a bare name (`gelu`)
/// means the `tg` op of that name, which must exist; `tg.gelu` likewise; any
/// other dotted name (`arith.mulf`) is taken as an op of another dialect.
/// Returns std::nullopt for a name that names no op.
std::optional<std::string> resolveOpName(llvm::StringRef name,
                                         const PolicyTable &table);

/// The default table with the ops named in `fp32`, `lower` and `follow`
/// moved to those classes (later lists win). On an unknown name, returns
/// std::nullopt and sets `badName`.
std::optional<PolicyTable>
buildPolicyTable(llvm::ArrayRef<std::string> fp32,
                 llvm::ArrayRef<std::string> lower,
                 llvm::ArrayRef<std::string> follow, std::string &badName);

/// True for GEMM-like ops (the default class of `opName` is `lower`): their
/// kernels read inputs in their compute precision, so a cast into one can be
/// fused into the producer but never into the GEMM's load.
bool isGemmLike(llvm::StringRef opName);

/// The class of `opName` in the process-wide defaults (amp.md's table plus
/// registrations), ignoring any command-line override.
std::optional<OpClass> lookupDefaultClass(llvm::StringRef opName);

/// Registers (or re-registers) the class of `opName` in the process-wide
/// defaults, for ops of dialects ampc does not know. Not thread-safe against
/// concurrent pass runs: register before building pipelines.
void registerOpClass(llvm::StringRef opName, OpClass cls);

} // namespace ampc::amp

#endif // AMPC_TRANSFORMS_AMPPOLICY_H
