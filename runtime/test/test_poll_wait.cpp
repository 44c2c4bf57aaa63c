//===- test_poll_wait.cpp - The NCCL module's polled host wait ------------===//
//
// pollUntilDone (src/poll_wait.h) with fake queries and a fake clock: the
// NCCL module's waits must end with an error, not hang, when the
// communicator reports an asynchronous error or the time limit passes.
//
//===----------------------------------------------------------------------===//
#include "src/poll_wait.h"

#include <gtest/gtest.h>

using ampc::PollEnd;
using ampc::pollUntilDone;

namespace {

/// A fake clock that advances by one second per pause.
struct Fake {
  int polls = 0, doneAt = -1, errorAt = -1, failAt = -1;
  double clock = 0;
  int query() {
    ++polls;
    if (failAt >= 0 && polls >= failAt)
      return -1;
    return doneAt >= 0 && polls >= doneAt ? 1 : 0;
  }
  bool asyncError() const { return errorAt >= 0 && polls >= errorAt; }
  PollEnd run(double timeout) {
    return pollUntilDone([&] { return query(); }, [&] { return asyncError(); },
                         [&] { return clock; }, [&] { clock += 1; }, timeout);
  }
};

TEST(PollWait, EndsOnDoneErrorFailureOrTimeout) {
  struct Case {
    const char *what;
    int doneAt, errorAt, failAt;
    double timeout;
    PollEnd want;
    int polls;
  } cases[] = {
      {"done at the 4th poll", 4, -1, -1, 0, PollEnd::Done, 4},
      // A collective whose peer is gone never finishes: only the
      // communicator's error ends the wait.
      {"never done, an error at the 3rd", -1, 3, -1, 0, PollEnd::AsyncError, 3},
      {"done and an error at once", 2, 2, -1, 0, PollEnd::Done, 2},
      {"the query fails at the 5th", -1, -1, 5, 0, PollEnd::Failed, 5},
      {"never done, no error, 10 s", -1, -1, -1, 10, PollEnd::TimedOut, 11},
  };
  for (const Case &c : cases) {
    Fake f;
    f.doneAt = c.doneAt;
    f.errorAt = c.errorAt;
    f.failAt = c.failAt;
    EXPECT_EQ(f.run(c.timeout), c.want) << c.what;
    EXPECT_EQ(f.polls, c.polls) << c.what;
    if (c.want == PollEnd::TimedOut)
      EXPECT_EQ(f.clock, c.timeout) << c.what;
  }
}

} // namespace
