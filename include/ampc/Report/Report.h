//===- Report.h - the AMP report and the Graphviz view ----------*- C++ -*-===//
//
// `ampc --emit=report` (the JSON described in docs/amp.md) and `--emit=dot`
// (Graphviz, ops coloured by compute precision, casts drawn distinctly),
// both computed from the IR after the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_REPORT_REPORT_H
#define AMPC_REPORT_REPORT_H

#include "ampc/Transforms/AMPPolicy.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ampc::report {

/// What the report says about the run (the pipeline's AMP options).
struct ReportOptions {
  /// "off", "fp16" or "bf16".
  std::string amp = "off";
  /// "fast" or "reference"; printed as null when `amp` is "off".
  std::string policy = "fast";
  /// The effective class table (defaults plus overrides).
  amp::PolicyTable table = amp::PolicyTable::getDefault();
  /// `--opt-level` when given ("O0".."O3"), else empty (no key).
  std::string optLevel;
  /// The processor the step is for ("cuda:sm_61", "cpu:avx512_bf16") and
  /// why `amp` is what it is; each key only when set.
  std::string target;
  std::string ampReason;
};

/// Standalone cast kernels of one graph: how many, and the bytes they read
/// plus write per execution. Every `tg.cast` counts, the source's `cast()`
/// included: each is a kernel that runs.
struct CastTraffic {
  int64_t count = 0;
  int64_t bytes = 0;
};
CastTraffic measureCasts(mlir::Operation *graph);

/// True for an op of the source program: a `tg` op that is not a constant
/// (bare numbers are not ops of the language) and that no compiler pass made
/// (it has no `tg.role` attribute).
bool isSourceOp(mlir::Operation *op);

/// `FILE:LINE:COL` of the source position in `loc`, if it has one.
std::optional<std::string> sourceLocation(mlir::Location loc);
/// The variable an op computes (its `NameLoc`), if any.
std::optional<std::string> sourceName(mlir::Location loc);

/// The source ops of every graph as the pipeline last saw them, so the
/// report can list the ones a pass removed (a cast or transpose folded away,
/// an op whose result nothing reads) with the decision made for them before
/// they went. Fill it with `snapshot` on the module before the pipeline runs
/// (that fixes the program's order), then let `instrumentation` take a
/// snapshot before every pass.
class SourceOpHistory {
public:
  explicit SourceOpHistory(ReportOptions options);
  /// Records the source ops of `op` (a module, or one graph) as they stand:
  /// the first snapshot of a graph lists its ops in order; later ones update
  /// the entries of the ops still there (matched by source location and
  /// variable, in order).
  void snapshot(mlir::Operation *op);
  /// A pass instrumentation that calls `snapshot` before every pass.
  std::unique_ptr<mlir::PassInstrumentation> instrumentation();

  struct Entry {
    std::string key;  ///< source location and variable
    std::string text; ///< the op's report fields, as last seen
  };
  /// The graph's entries in program order, or null for a graph never seen.
  const std::vector<Entry> *entries(llvm::StringRef graph) const;
  const ReportOptions &options() const { return opts; }

private:
  void snapshotGraph(mlir::Operation *func);
  ReportOptions opts;
  std::mutex lock;
  llvm::StringMap<std::vector<Entry>> graphs;
};

/// One JSON object per graph (`func.func`), a JSON array of them when the
/// module holds several. With `history`, ops a pass removed are listed too,
/// in program order, with `"removed": true`.
void emitReport(mlir::ModuleOp module, const ReportOptions &options,
                llvm::raw_ostream &os,
                const SourceOpHistory *history = nullptr);

/// The module as JSON (`--emit=json`, docs/json.md): every graph's
/// arguments, ops (name, operand ids, result types, attributes, source
/// location and variable) and results. Fails with a diagnostic on an op it
/// cannot represent (one with regions).
mlir::LogicalResult emitJson(mlir::ModuleOp module, llvm::raw_ostream &os);

/// One Graphviz digraph, with one cluster per graph.
void emitDot(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace ampc::report

#endif // AMPC_REPORT_REPORT_H
