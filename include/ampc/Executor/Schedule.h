//===- Schedule.h - the learning-rate schedule of a lowered step -*- C++ -*-===//
//
// What `ampc run` needs of a step's learning-rate schedule to log the rate
// each update used ("lr" in the log): the schedule's constants, read from
// the step's `ampc_lr_schedule` call, and its counter's state slot.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_SCHEDULE_H
#define AMPC_EXECUTOR_SCHEDULE_H

#include "ampc/Dialect/RT/ProgramInfo.h"

#include <cstdint>
#include <optional>

namespace ampc::exec {

struct ScheduleInfo {
  int32_t kind = 0; ///< ampc_lr_schedule_kind
  double lr = 0.0;  ///< the default group's base rate
  int64_t warmup = 0, total = 0, stepSize = 0;
  double minLr = 0.0, gamma = 0.0;
  /// The slot of the counter (state `lr_schedule.step`), or -1.
  int32_t counterSlot = -1;

  /// The default group's rate after `t` applied updates.
  double rate(int64_t t) const;
};

/// The schedule of `program`'s step, if it has one.
std::optional<ScheduleInfo> findSchedule(const rt::Program &program);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_SCHEDULE_H
