//===- Schedule.cpp - the learning-rate schedule of a lowered step --------===//
//
// Reads a step's schedule from its `ampc_lr_schedule` call: the arguments
// are (context, factor, step, kind, lr, warmup_steps, total_steps, min_lr,
// step_size, gamma, found_inf, found_inf dtype), as runtime.h declares.
//
//===----------------------------------------------------------------------===//

#include "ampc/Executor/Schedule.h"

#include "ampc/runtime.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace ampc;
using namespace ampc::exec;

double ScheduleInfo::rate(int64_t t) const {
  return lr * ampc_lr_schedule_factor(
                  static_cast<ampc_lr_schedule_kind>(kind), lr, warmup, total,
                  minLr, stepSize, gamma, t);
}

std::optional<ScheduleInfo> ampc::exec::findSchedule(
    const rt::Program &program) {
  std::optional<ScheduleInfo> found;
  program.op.walk([&](rt::CallOp call) {
    if (found || call.getCallee() != "ampc_lr_schedule")
      return;
    ArrayAttr args = call.getArgs();
    if (args.size() < 10)
      return;
    auto integer = [&](unsigned i) {
      auto a = dyn_cast<IntegerAttr>(args[i]);
      return a ? a.getInt() : 0;
    };
    auto real = [&](unsigned i) {
      auto a = dyn_cast<FloatAttr>(args[i]);
      return a ? a.getValueAsDouble() : 0.0;
    };
    ScheduleInfo info;
    if (auto kind = dyn_cast<rt::EnumAttr>(args[3]))
      info.kind = kind.getValue();
    info.lr = real(4);
    info.warmup = integer(5);
    info.total = integer(6);
    info.minLr = real(7);
    info.stepSize = integer(8);
    info.gamma = real(9);
    found = info;
  });
  if (!found)
    return std::nullopt;
  for (auto [i, slot] : llvm::enumerate(program.slots))
    if (slot.role == rt::Slot::Role::State && slot.name == "lr_schedule.step")
      found->counterSlot = static_cast<int32_t>(i);
  return found;
}
