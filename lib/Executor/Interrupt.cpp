//===- Interrupt.cpp - SIGINT / SIGTERM during `ampc run` -------*- C++ -*-===//
#include "ampc/Executor/Interrupt.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <unistd.h>

using namespace ampc::exec;

namespace {
// Everything the handler reads is plain memory written before it is
// published (gPendingCount, gFirst): the handler calls only
// async-signal-safe functions (clock_gettime, write, _exit).
constexpr int kMaxPending = 8;
constexpr size_t kNameBytes = 512;
struct Pending {
  char name[kNameBytes];
  size_t length;
  volatile std::sig_atomic_t done;
};
Pending gPending[kMaxPending];
volatile std::sig_atomic_t gPendingCount = 0;
volatile std::sig_atomic_t gFirst = 0;
volatile std::sig_atomic_t gLater = 0;
volatile std::sig_atomic_t gQuiet = 0;
volatile std::sig_atomic_t gExitOnLater = 1;
struct timespec gFirstAt;
struct sigaction gOldInt, gOldTerm;

void put(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void put(const char *s) { put(s, std::strlen(s)); }

/// "ampc: note: SIGTERM again, 3 s after the first: exiting now; not
/// written: --save 'c.ckpt', --params-out 'p'".
void laterNote(int sig, long seconds) {
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
  for (int i = 0; i < gPendingCount; ++i) {
    if (gPending[i].done)
      continue;
    put(any ? ", " : "; not written: ");
    put(gPending[i].name, gPending[i].length);
    any = true;
  }
  put(any ? "\n" : "; no requested output was left to write\n");
}

extern "C" void onInterruptSignal(int sig) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!gFirst) {
    gFirstAt = now;
    gFirst = sig;
    return;
  }
  double since = static_cast<double>(now.tv_sec - gFirstAt.tv_sec) +
                 1e-9 * static_cast<double>(now.tv_nsec - gFirstAt.tv_nsec);
  if (since < kSameInterruptionSeconds)
    return;
  gLater = sig;
  if (!gExitOnLater)
    return;
  if (!gQuiet)
    laterNote(sig, static_cast<long>(since + 0.5));
  _exit(128 + sig);
}
} // namespace

Interruption::Interruption(Later later) {
  gFirst = 0;
  gLater = 0;
  gPendingCount = 0;
  gExitOnLater = later == Later::ExitNow;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = onInterruptSignal;
  // A repeat of the signal must not fail a write or wait it interrupts.
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  // One handler at a time: the first signal's time is set before a second
  // one reads it.
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, &gOldInt);
  sigaction(SIGTERM, &sa, &gOldTerm);
}

Interruption::~Interruption() {
  sigaction(SIGINT, &gOldInt, nullptr);
  sigaction(SIGTERM, &gOldTerm, nullptr);
}

int Interruption::signal() { return gFirst; }

int Interruption::takeLaterSignal() {
  int sig = gLater;
  gLater = 0;
  return sig;
}

int Interruption::expect(const std::string &what) {
  int id = gPendingCount;
  if (id >= kMaxPending)
    return -1;
  Pending &p = gPending[id];
  p.length = std::min(what.size(), kNameBytes);
  std::memcpy(p.name, what.data(), p.length);
  p.done = 0;
  // Published last: the handler reads only complete entries.
  std::atomic_signal_fence(std::memory_order_release);
  gPendingCount = id + 1;
  return id;
}

void Interruption::written(int id) {
  if (id >= 0 && id < gPendingCount)
    gPending[id].done = 1;
}

void Interruption::setQuiet(bool quiet) { gQuiet = quiet; }
