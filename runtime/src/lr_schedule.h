//===- lr_schedule.h - learning-rate schedules, shared by both backends ---===//
//
// The factor torch.optim.lr_scheduler.LambdaLR multiplies every parameter
// group's base rate by, for the schedules of ampc_lr_schedule_kind
// (docs/optimizer.md, "Learning-rate schedules"). Computed in f64, as Python
// does. Used by the CPU backend, the CUDA kernel and the host entry point
// ampc_lr_schedule_factor.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_LR_SCHEDULE_H
#define AMPC_RUNTIME_LR_SCHEDULE_H

#include "hd.h"

#include <math.h>
#include <stdint.h>

namespace ampc {

struct LrSchedule {
  int32_t kind; ///< ampc_lr_schedule_kind
  double lr;    ///< the base rate of the default group (> 0)
  int64_t warmup, total;
  double minLr;
  int64_t stepSize;
  double gamma;
};

/// The factor after `t` applied updates (0 for the first update): the
/// schedule's rate divided by the base rate, so that a group with its own
/// rate gets `group lr * factor` (its minimum scaled by group lr / lr).
AMPC_HD double lrScheduleFactor(const LrSchedule &s, int64_t t) {
  double td = static_cast<double>(t);
  if (t < s.warmup)
    return (td + 1.0) / static_cast<double>(s.warmup);
  double m = s.minLr / s.lr;
  double span = static_cast<double>(s.total - s.warmup);
  switch (s.kind) {
  case 1: { // linear
    double r = (static_cast<double>(s.total) - td) / span;
    return m + (1.0 - m) * (r > 0.0 ? r : 0.0);
  }
  case 2: { // cosine
    double r = (td - static_cast<double>(s.warmup)) / span;
    if (r > 1.0)
      r = 1.0;
    return m + (1.0 - m) * 0.5 * (1.0 + cos(3.14159265358979323846 * r));
  }
  case 3: // step
    return pow(s.gamma, floor((td - static_cast<double>(s.warmup)) /
                              static_cast<double>(s.stepSize)));
  default: // constant
    return 1.0;
  }
}

} // namespace ampc

#endif // AMPC_RUNTIME_LR_SCHEDULE_H
