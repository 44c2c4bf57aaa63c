//===- Interrupt.h - SIGINT / SIGTERM during `ampc run` ---------*- C++ -*-===//
//
// The signal rule of `ampc run` (docs/jobs.md, "Signals"): the first SIGINT
// or SIGTERM ends the run after its running step, with every requested output
// written; another one within kSameInterruptionSeconds of the first belongs to
// the same interruption (coreutils `timeout` and some launchers deliver one
// signal to the process and again to its process group); a later one means
// "stop now": the run exits at once after a note that names the outputs not
// written yet.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_EXECUTOR_INTERRUPT_H
#define AMPC_EXECUTOR_INTERRUPT_H

#include <csignal>
#include <string>

namespace ampc::exec {

/// A second signal this soon after the first is the same interruption.
constexpr double kSameInterruptionSeconds = 2.0;

/// Handles SIGINT and SIGTERM while it lives (one at a time); the destructor
/// puts back the handlers it found.
class Interruption {
public:
  /// What a later signal does.
  enum class Later {
    /// Print the note naming the pending outputs, then `_exit(128 + sig)`.
    ExitNow,
    /// Only record it (laterSignal()): the owner acts on it.
    Record,
  };
  explicit Interruption(Later later = Later::ExitNow);
  ~Interruption();
  Interruption(const Interruption &) = delete;
  Interruption &operator=(const Interruption &) = delete;

  /// The first signal received (SIGINT or SIGTERM), or 0.
  static int signal();
  /// The last signal that came later than kSameInterruptionSeconds after
  /// the first (SIGINT or SIGTERM), or 0; reading it clears it.
  static int takeLaterSignal();

  /// Names an output that is asked for and not written yet, e.g.
  /// "--save 'c.ckpt'"; a later signal's note lists it until
  /// written(id). Returns its id (-1 when the list is full).
  static int expect(const std::string &what);
  static void written(int id);
  /// Without a note (ranks other than 0: rank 0 prints it).
  static void setQuiet(bool quiet);
};

} // namespace ampc::exec

#endif // AMPC_EXECUTOR_INTERRUPT_H
