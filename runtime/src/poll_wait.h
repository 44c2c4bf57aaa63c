//===- poll_wait.h - A host wait that also watches for errors ---*- C++ -*-===//
//
// NCCL reports a failed collective (a peer gone, a network error) through
// ncclCommGetAsyncError, not through the CUDA stream the collective runs
// on: a blocking cudaEventSynchronize on such a collective never returns.
// So the NCCL module waits by polling: the event, then the communicator's
// asynchronous error, then a pause, until one of them says something.
// Header-only and free of CUDA and NCCL, so the CPU tests can drive it.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_SRC_POLL_WAIT_H
#define AMPC_RUNTIME_SRC_POLL_WAIT_H

namespace ampc {

/// How a polled wait ended.
enum class PollEnd {
  Done,       ///< the work finished
  Failed,     ///< the query itself failed (a CUDA error)
  AsyncError, ///< the communicator reported an asynchronous error
  TimedOut,   ///< still running after the time limit
};

/// Polls until `query()` is 1 (done; 0: not yet, negative: failed) or
/// `asyncError()` is true, calling `pause()` between polls; `now()` is a
/// clock in seconds. A `timeoutS` of 0 or less waits without a limit.
template <class Query, class AsyncError, class Now, class Pause>
PollEnd pollUntilDone(Query query, AsyncError asyncError, Now now, Pause pause,
                      double timeoutS) {
  double start = now();
  for (;;) {
    int q = query();
    if (q > 0)
      return PollEnd::Done;
    if (q < 0)
      return PollEnd::Failed;
    if (asyncError())
      return PollEnd::AsyncError;
    if (timeoutS > 0 && now() - start >= timeoutS)
      return PollEnd::TimedOut;
    pause();
  }
}

} // namespace ampc

#endif // AMPC_RUNTIME_SRC_POLL_WAIT_H
