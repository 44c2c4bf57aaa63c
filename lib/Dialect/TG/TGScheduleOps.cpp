//===- TGScheduleOps.cpp - learning-rate schedule checks -------------------===//
//
// The verifier of tg.lr_schedule (TGScheduleOps.td) and the checks it
// shares with tg.minimize's `schedule` attribute.
//
//===----------------------------------------------------------------------===//

#include "InferSupport.h"

#include "ampc/Dialect/TG/TGOps.h"

#include <cmath>

using namespace mlir;
using namespace ampc::tg;

LogicalResult ampc::tg::detail::verifyLrSchedule(Operation *op, StringRef kind,
                                                 double lr, int64_t warmup,
                                                 int64_t total, double minLr,
                                                 int64_t stepSize,
                                                 double gamma) {
  if (kind != "constant" && kind != "linear" && kind != "cosine" &&
      kind != "step")
    return op->emitOpError("unknown schedule \"")
           << kind << "\"; expected \"constant\", \"linear\", \"cosine\" or "
                      "\"step\"";
  if (!(lr > 0.0) || !std::isfinite(lr))
    return op->emitOpError("a learning-rate schedule needs lr > 0, got ")
           << lr;
  if (warmup < 0 || warmup > INT32_MAX)
    return op->emitOpError("warmup_steps must be in [0, 2^31), got ")
           << warmup;
  if ((kind == "linear" || kind == "cosine") &&
      (total <= warmup || total > INT32_MAX))
    return op->emitOpError("schedule \"")
           << kind << "\" needs total_steps > warmup_steps (" << warmup
           << "), got " << total;
  if (!(minLr >= 0.0) || !std::isfinite(minLr))
    return op->emitOpError("min_lr must be >= 0, got ") << minLr;
  if (kind == "step" && (stepSize < 1 || stepSize > INT32_MAX))
    return op->emitOpError("schedule \"step\" needs step_size >= 1, got ")
           << stepSize;
  if (kind == "step" && (!(gamma > 0.0) || !std::isfinite(gamma)))
    return op->emitOpError("schedule \"step\" needs gamma > 0, got ")
           << gamma;
  return success();
}

LogicalResult LrScheduleOp::verify() {
  return detail::verifyLrSchedule(
      *this, getKind(), getLr().convertToDouble(),
      getWarmupStepsAttr().getInt(), getTotalStepsAttr().getInt(),
      getMinLr().convertToDouble(), getStepSizeAttr().getInt(),
      getGamma().convertToDouble());
}
