//===- interrupt.h - SIGINT / SIGTERM as `ampc run` takes them --*- C++ -*-===//
//
// The signal rule of `ampc run` (docs/jobs.md, "Signals"), for `ampc run`
// itself and for programs that drive the emitted code
// (docs/examples/ddp_train.cpp): the first SIGINT or SIGTERM ends the run
// after its running step, with every requested output written; another one
// within kSameInterruptionSeconds of the first belongs to the same
// interruption (coreutils `timeout` and some launchers deliver one signal to
// the process and again to its process group); a later one means "stop
// now": the program exits at once after a note that names the outputs not
// written yet.
//
// Header-only C++ (the runtime's C ABI is unchanged): include it in one
// program's code as often as needed.
//
//===----------------------------------------------------------------------===//

#ifndef AMPC_INTERRUPT_H
#define AMPC_INTERRUPT_H

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>

namespace ampc {

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
    /// Only record it (takeLaterSignal()): the owner acts on it.
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

private:
  static void onSignal(int sig);
  static void laterNote(int sig, long seconds);
  static void put(const char *s, size_t n);
  static void put(const char *s) { put(s, std::strlen(s)); }

  // Everything the handler reads is plain memory written before it is
  // published (pendingCount, first): the handler calls only
  // async-signal-safe functions (clock_gettime, write, _exit).
  static constexpr int kMaxPending = 8;
  static constexpr size_t kNameBytes = 512;
  struct Pending {
    char name[kNameBytes];
    size_t length;
    volatile std::sig_atomic_t done;
  };
  struct State {
    Pending pending[kMaxPending];
    volatile std::sig_atomic_t pendingCount = 0;
    volatile std::sig_atomic_t first = 0;
    volatile std::sig_atomic_t later = 0;
    volatile std::sig_atomic_t quiet = 0;
    volatile std::sig_atomic_t exitOnLater = 1;
    struct timespec firstAt = {};
    struct sigaction oldInt = {}, oldTerm = {};
  };
  static State &state() {
    static State s;
    return s;
  }
};

inline void Interruption::put(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

/// "ampc: note: SIGTERM again, 3 s after the first: exiting now; not
/// written: --save 'c.ckpt', --params-out 'p'".
inline void Interruption::laterNote(int sig, long seconds) {
  State &st = state();
  char digits[24];
  int n = 0;
  do {
    digits[sizeof(digits) - 1 - n++] = static_cast<char>('0' + seconds % 10);
    seconds /= 10;
  } while (seconds > 0 && n < static_cast<int>(sizeof(digits)));
  put("ampc: note: ");
  put(sig == SIGINT ? "SIGINT" : "SIGTERM");
  put(" again, ");
  put(digits + sizeof(digits) - n, static_cast<size_t>(n));
  put(" s after the first: exiting now");
  bool any = false;
  for (int i = 0; i < st.pendingCount; ++i) {
    if (st.pending[i].done)
      continue;
    put(any ? ", " : "; not written: ");
    put(st.pending[i].name, st.pending[i].length);
    any = true;
  }
  put(any ? "\n" : "; no requested output was left to write\n");
}

inline void Interruption::onSignal(int sig) {
  State &st = state();
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!st.first) {
    st.firstAt = now;
    st.first = sig;
    return;
  }
  double since = static_cast<double>(now.tv_sec - st.firstAt.tv_sec) +
                 1e-9 * static_cast<double>(now.tv_nsec - st.firstAt.tv_nsec);
  if (since < kSameInterruptionSeconds)
    return;
  st.later = sig;
  if (!st.exitOnLater)
    return;
  if (!st.quiet)
    laterNote(sig, static_cast<long>(since + 0.5));
  _exit(128 + sig);
}

inline Interruption::Interruption(Later later) {
  State &st = state();
  st.first = 0;
  st.later = 0;
  st.pendingCount = 0;
  st.exitOnLater = later == Later::ExitNow;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onSignal;
  // A repeat of the signal must not fail a write or wait it interrupts.
  sa.sa_flags = SA_RESTART;
  // One handler at a time: the first signal's time is set before a second
  // one reads it.
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, &st.oldInt);
  sigaction(SIGTERM, &sa, &st.oldTerm);
}

inline Interruption::~Interruption() {
  sigaction(SIGINT, &state().oldInt, nullptr);
  sigaction(SIGTERM, &state().oldTerm, nullptr);
}

inline int Interruption::signal() { return state().first; }

inline int Interruption::takeLaterSignal() {
  int sig = state().later;
  state().later = 0;
  return sig;
}

inline int Interruption::expect(const std::string &what) {
  State &st = state();
  int id = st.pendingCount;
  if (id >= kMaxPending)
    return -1;
  Pending &p = st.pending[id];
  p.length = std::min(what.size(), kNameBytes);
  std::memcpy(p.name, what.data(), p.length);
  p.done = 0;
  // Published last: the handler reads only complete entries.
  std::atomic_signal_fence(std::memory_order_release);
  st.pendingCount = id + 1;
  return id;
}

inline void Interruption::written(int id) {
  if (id >= 0 && id < state().pendingCount)
    state().pending[id].done = 1;
}

inline void Interruption::setQuiet(bool quiet) { state().quiet = quiet; }

} // namespace ampc

#endif // AMPC_INTERRUPT_H
