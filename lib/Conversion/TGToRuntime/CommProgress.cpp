//===- CommProgress.cpp - MPI progress calls in a lowered step ------------===//
//
// See ampc/Conversion/CommProgress.h. The calls cost one atomic load each
// when nothing is in flight (no communicator, one rank); the runtime tests
// the buckets at most every few microseconds otherwise.
//
//===----------------------------------------------------------------------===//

#include "ampc/Conversion/CommProgress.h"

#include "ampc/Dialect/RT/RTDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
namespace rtd = ampc::rt;

namespace {
constexpr llvm::StringLiteral kStart = "ampc_grad_allreduce_start";
constexpr llvm::StringLiteral kWait = "ampc_grad_allreduce_wait";

/// The bucket a start or wait call names: its `i64` argument after the
/// list, dtypes, numels and count (runtime.h's order, after the context).
std::optional<int64_t> bucketOf(rtd::CallOp call) {
  ArrayAttr args = call.getArgs();
  if (args.size() < 6)
    return std::nullopt;
  auto bucket = dyn_cast<IntegerAttr>(args[5]);
  if (!bucket || !bucket.getType().isInteger(64))
    return std::nullopt;
  return bucket.getInt();
}
} // namespace

unsigned ampc::insertCommProgress(Block &step, llvm::StringRef progressCallee) {
  llvm::DenseSet<int64_t> inFlight;
  SmallVector<rtd::CallOp> after;
  for (Operation &op : step) {
    auto call = dyn_cast<rtd::CallOp>(op);
    if (!call)
      continue;
    StringRef callee = call.getCallee();
    if (callee == kStart || callee == kWait) {
      std::optional<int64_t> bucket = bucketOf(call);
      if (!bucket)
        continue;
      if (callee == kStart)
        inFlight.insert(*bucket);
      else
        inFlight.erase(*bucket);
      continue;
    }
    if (!inFlight.empty())
      after.push_back(call);
  }
  MLIRContext *ctx = step.getParentOp()->getContext();
  OpBuilder builder(ctx);
  ArrayAttr args = builder.getArrayAttr({rtd::ContextAttr::get(ctx)});
  StringAttr name = builder.getStringAttr(progressCallee);
  for (rtd::CallOp call : after) {
    builder.setInsertionPointAfter(call);
    rtd::CallOp::create(builder, call.getLoc(), name, args, ValueRange{});
  }
  return after.size();
}
