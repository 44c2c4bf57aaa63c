//===- LateStep.h - Step scalars read one step late -------------*- C++ -*-===//
//
// `ampc run` writes the log line of step k only once step k + 1 is queued:
// after each step it queues one asynchronous read of the step's loss,
// skipped flag and next loss scale (Executor::queueStepScalars) and waits
// for the read of the step before, which the device finished long ago. The
// lines and their values are the same as reading at once; the device never
// waits for the host between steps. With the overflow report, a skipped
// step is replayed from the device-side snapshot of the state it started
// from (Executor::enableSnapshot), so the report does not need the read at
// once either.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_LATESTEP_H
#define AMPC_EXECUTOR_LATESTEP_H

#include "ampc/Executor/Executor.h"

#include <deque>

namespace ampc::exec {

/// How `ampc run` reads a step's scalars and finds a skipped step's
/// overflow: the one decision every path of the loop follows.
struct StepReadPlan {
  /// One asynchronous read per step (LateStep); off with ranks, which read
  /// at once to reach the loss all-reduce together.
  bool packed = false;
  /// The packed read is taken one step late.
  bool late = false;
  /// A skipped step is replayed for the overflow report.
  bool report = false;
  /// ... from the device-side snapshot of the state it started from. Not
  /// with gradient accumulation: the replay there needs every micro-batch's
  /// inputs, so the reads are taken at once and the replay runs before the
  /// next update, from the state the skipped update left.
  bool snapshot = false;
};

/// `atOnce` (AMPC_STEP_READS=at-once in the environment) takes every
/// packed read right after its step, for comparisons.
inline StepReadPlan planStepReads(const rt::Program &program,
                                  bool overflowReport, bool ranks,
                                  bool atOnce) {
  StepReadPlan plan;
  bool accumulating = program.accumulate > 1;
  plan.packed = !ranks && !accumulating;
  plan.late = plan.packed && !atOnce;
  plan.report = overflowReport && bool(program.foundInf);
  plan.snapshot = plan.report && !accumulating;
  return plan;
}

class LateStep {
public:
  /// What a step's log line needs.
  struct Record {
    bool valid = false;
    int64_t k = 0, epoch = 0, shown = 0;
    double scale = 0, loss = NAN;
    bool skipped = false;
    int32_t checkSite = -1; ///< the index check word (-1: nothing failed)
    uint64_t serial = 0; ///< Executor::stepsTaken() numbering of the step
  };

  /// `carryScale`: the program has a dynamic scaler, so the scale a step
  /// used is the one the read of the step before returned.
  explicit LateStep(bool carryScale) : carryScale(carryScale) {}

  /// After step k is queued: queues its read. `scale` is used for the step's
  /// line unless an earlier read said otherwise (see carryScale).
  bool queue(Executor &ex, int64_t k, int64_t epoch, int64_t shown,
             double scale, std::string &error) {
    if (!ex.queueStepScalars(error))
      return false;
    Record r;
    r.valid = true;
    r.k = k, r.epoch = epoch, r.shown = shown, r.scale = scale;
    r.serial = ex.stepsTaken() - 1;
    records.push_back(r);
    return true;
  }

  /// Waits for the oldest queued read (when more than `keep` are queued)
  /// and fills `out` (out.valid false when nothing was taken).
  bool take(Executor &ex, size_t keep, Record &out, std::string &error) {
    out = Record();
    if (records.size() <= keep)
      return true;
    Executor::StepScalars s;
    if (!ex.takeStepScalars(s, error))
      return false;
    out = records.front();
    records.pop_front();
    if (carryScale && haveCarried)
      out.scale = carried;
    out.loss = s.loss;
    out.skipped = s.skipped;
    out.checkSite = s.checkSite;
    if (carryScale) {
      carried = s.nextScale;
      haveCarried = true;
    }
    return true;
  }

  /// Reads queued and not taken yet.
  size_t queued() const { return records.size(); }

private:
  bool carryScale;
  bool haveCarried = false;
  double carried = 0;
  std::deque<Record> records;
};

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_LATESTEP_H
