//===- Profile.h - ampc run --profile: time by function and source op -*- C++ -*-===//
//
// What `ampc run --profile` prints and `--profile-json` writes
// (docs/cli.md, "Profiles"): the step's calls timed one by one
// (Executor::enableProfile), summed by runtime function and by the source
// op they come from, per step, with the implementations their GEMMs and
// convolutions ran on.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_EXECUTOR_PROFILE_H
#define AMPC_EXECUTOR_PROFILE_H

#include "ampc/Executor/Executor.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ampc::exec {

/// One line of a profile: the calls of one runtime function, or of one
/// source op (forward or backward), summed and divided by the steps.
struct ProfileRow {
  std::string function; ///< the runtime function(s), comma-separated
  std::string op;       ///< the source op ("linear"), "" for a function row
  std::string name;     ///< the variable the op is assigned to, or ""
  std::string loc;      ///< FILE:LINE:COL, or ""
  bool backward = false;
  double seconds = 0;       ///< per step
  double calls = 0;         ///< per step
  std::string engines;      ///< comma-separated, each once
};

struct ProfileReport {
  int64_t steps = 0;          ///< the steps summed
  bool firstLeftOut = false;  ///< whether the first step is not among them
  double callSeconds = 0;     ///< per step, in the calls
  double wallSeconds = 0;     ///< per step, from the first summed to the end
  double calls = 0;           ///< per step
  std::vector<ProfileRow> byFunction, bySource; ///< slowest first
  /// Every call, in the step's order (its source op's fields, when it has
  /// one, as in bySource).
  std::vector<ProfileRow> byCall;
};

/// Appends to the comma-separated `into` each name of the comma-separated
/// `names` it lacks.
void addNames(std::string &into, llvm::StringRef names);

/// Sums `calls` (Executor::profile) over `steps` steps.
ProfileReport summarizeProfile(const rt::Program &program,
                               const std::vector<Executor::CallProfile> &calls,
                               int64_t steps, bool firstLeftOut,
                               double wallSeconds);
/// The table `--profile` prints: every function, the `sourceRows` slowest
/// source ops.
std::string profileText(const ProfileReport &report, size_t sourceRows = 15);
/// The `--profile-json` file: every row, and every call.
std::string profileJson(const ProfileReport &report);

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_PROFILE_H
