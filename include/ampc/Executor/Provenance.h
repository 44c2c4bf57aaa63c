//===- Provenance.h - failed checks and overflows by source op -*- C++ -*-===//
//
// What `ampc run` says about a step whose device-side checks failed
// (docs/jobs.md, "Run-time checks") and about a step the loss scaler skipped
// ("The overflow report"). Nothing here runs on a step that passed.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_PROVENANCE_H
#define AMPC_EXECUTOR_PROVENANCE_H

#include "ampc/Executor/Executor.h"

#include <functional>
#include <string>

namespace ampc::exec {

/// Reads the context's index check word after a step (with its loss, so it
/// waits for nothing more). Returns false with `error` set when the read
/// failed, or when a kernel recorded a site: then `located` is set and
/// `error` is a diagnostic naming the op's source location
/// ("FILE:LINE:COL: error: ...").
bool checkIndices(Executor &ex, const rt::Program &program, int64_t step,
                  std::string &error, bool &located);

/// After a skipped step, before the next one: runs the step's calls up to
/// the gradients' overflow check again from the same state, with the scale
/// the step used (`scale`), checking every result of a source op for
/// non-finite values on the device, and restores every param and state slot
/// afterwards. `found` is the first such call in execution order, or null
/// (e.g. the overflow was on another rank). The replay starts from the
/// state the step left, where buffers and counters the step writes have
/// moved on; `ampc run` uses findOverflowFromSnapshot where it can (no
/// accumulation) and this otherwise, replaying at once, before the next step.
///
/// Gradient accumulation (program.accumulate = K > 1): the update's K
/// micro-batches are replayed in order (`feedMicro(j)` puts micro-batch j's
/// inputs back), each up to the update, and `microFound` is the micro-batch
/// (from 0) of the first op found, or -1.
bool findOverflow(Executor &ex, const rt::Program &program, double scale,
                  const rt::CallSource *&found, std::string &error,
                  const std::function<bool(int64_t)> *feedMicro = nullptr,
                  int64_t *microFound = nullptr);

/// The same search for step `serial` (Executor::stepsTaken() numbering; one
/// of the last two steps, skipped) from its device-side snapshot
/// (Executor::enableSnapshot): the replay reads the state the step started
/// from, buffers, counters and loss scale included, and changes no live
/// state, so it may run after the next step has been queued.
bool findOverflowFromSnapshot(Executor &ex, const rt::Program &program,
                              uint64_t serial, const rt::CallSource *&found,
                              std::string &error);

class World;
/// Data parallel: every rank passes what its own replay found; all of them
/// get the first (in execution order) over the ranks, so an overflow only
/// another rank's shard produced is named too. One collective per rank, on
/// skipped steps only.
bool agreeOnOverflow(World &world, const rt::Program &program,
                     const rt::CallSource *&found, std::string &error);

/// The log's "overflow" object for `source`.
std::string overflowJson(const rt::CallSource &source);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_PROVENANCE_H
