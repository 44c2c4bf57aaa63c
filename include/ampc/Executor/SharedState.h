//===- SharedState.h - params and buffers of the other graphs ---*- C++ -*-===//
//
// Graphs of one file share params and buffers by name. A checkpoint and a
// `--params-out` folder hold the union over all graphs of the file: the
// running graph's own state plus what only other graphs declare.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_SHAREDSTATE_H
#define AMPC_EXECUTOR_SHAREDSTATE_H

#include "ampc/Executor/Executor.h"

#include <set>
#include <string>
#include <vector>

namespace ampc::exec {

/// The names of the params and buffers that graphs of `programs` other than
/// `running` declare and `running` lacks.
std::set<std::string> otherGraphState(const std::vector<rt::Program> &programs,
                                      const rt::Program &running);

/// The values of otherGraphState(): from `eval` (the eval graph's executor,
/// may be null) where it holds them, else the initial values of a fresh
/// executor of the graph that declares them.
bool otherGraphEntries(const std::vector<rt::Program> &programs,
                       const rt::Program &running, Executor *eval,
                       const rt::Program *evalProgram, bool cuda,
                       uint64_t seed, std::vector<StateEntry> &out,
                       std::string &error);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_SHAREDSTATE_H
