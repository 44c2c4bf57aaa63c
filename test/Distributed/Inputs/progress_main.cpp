// Checks MPI progress of the gradient all-reduce under mpirun: an all-reduce
// started with ampc_comm_allreduce_async completes through ampc_comm_test
// calls before its wait (the test reports it done), and two buckets started
// with ampc_grad_allreduce_start complete through the progress calls a step
// makes (ampc_grad_allreduce_progress) before their waits, as the counters
// of ampc_grad_allreduce_stats show; the results are the exact sums. The
// messages are large (4 MiB and more) so MPI needs many progress rounds.
// Prints one line per check on rank 0.
#include "mpi_check.h"

#include <chrono>
#include <cstdio>
#include <vector>

static double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

int main() {
  ampc_context ctx;
  check(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx), "context");
  int failures = 0;

  // No communicator: nothing is in flight; a progress call is a no-op and a
  // bucket is "done" at once.
  check(ampc_grad_allreduce_progress(ctx), "progress (no comm)");
  std::vector<float> lone(4, 1.0f);
  void *lonePtr[1] = {lone.data()};
  ampc_dtype f32[2] = {AMPC_F32, AMPC_F32};
  int64_t four[1] = {4};
  check(ampc_grad_allreduce_start(ctx, lonePtr, f32, four, 1, 0, 0, 0),
        "start (no comm)");
  int32_t done = 0;
  check(ampc_grad_allreduce_test(ctx, 0, &done), "test (no comm)");
  check(ampc_grad_allreduce_wait(ctx, lonePtr, f32, four, 1, 0),
        "wait (no comm)");
  int64_t waits = -1;
  check(ampc_grad_allreduce_stats(ctx, &waits, nullptr, nullptr, nullptr,
                                  nullptr),
        "stats (no comm)");
  if (!done || waits != 0 || lone[0] != 1.0f)
    ++failures;

  ampc_comm comm;
  int32_t rank, size;
  openMpiComm(comm, rank, size);
  // S = sum over ranks of (r + 1).
  float s = float(size) * float(size + 1) / 2;

  // 1. ampc_comm_test alone completes an all-reduce of 2^20 + 3 floats.
  const int64_t n = (1 << 20) + 3;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(rank + 1) * float(i % 1000);
  ampc_request req;
  check(ampc_comm_allreduce_async(comm, ctx, x.data(), AMPC_F32, n,
                                  AMPC_REDUCE_SUM, &req),
        "allreduce_async");
  int64_t tests = 0;
  done = 0;
  auto t0 = std::chrono::steady_clock::now();
  while (!done && since(t0) < 20.0) {
    check(ampc_comm_test(req, &done), "ampc_comm_test");
    ++tests;
  }
  if (!done) {
    std::fprintf(stderr, "rank %d: ampc_comm_test never reported done\n",
                 rank);
    ++failures;
  }
  int32_t again = 0;
  check(ampc_comm_test(req, &again), "ampc_comm_test after done");
  check(ampc_comm_wait(req), "ampc_comm_wait");
  for (int64_t i = 0; i < n; ++i)
    if (x[i] != s * float(i % 1000)) {
      std::fprintf(stderr, "rank %d: x[%lld] = %g\n", rank, (long long)i,
                   double(x[i]));
      ++failures;
      break;
    }
  if (!again)
    ++failures;
  if (rank == 0)
    std::printf("ampc_comm_test: done before the wait (%s), exact sum on %d "
                "ranks\n",
                done ? "yes" : "no", size);

  // 2. Two buckets (each two f32 gradients staged into one message of 2^20
  // floats) in flight at once, progressed by the calls a step makes
  // between its kernels; the waits find both transfers complete.
  check(ampc_context_set_comm(ctx, comm), "attach");
  const int64_t half = 1 << 19;
  std::vector<std::vector<float>> g(4, std::vector<float>(half));
  for (int k = 0; k < 4; ++k)
    for (int64_t i = 0; i < half; ++i)
      g[k][i] = float(rank + 1) * float(k + 1) + float(i % 7);
  void *grads[4] = {g[0].data(), g[1].data(), g[2].data(), g[3].data()};
  ampc_dtype types[4] = {AMPC_F32, AMPC_F32, AMPC_F32, AMPC_F32};
  int64_t numels[4] = {half, half, half, half};
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 2, 0, 0, 0),
        "start 0");
  check(ampc_grad_allreduce_start(ctx, grads + 2, types + 2, numels + 2, 2, 1,
                                  0, 0),
        "start 1");
  // The step's progress calls until the runtime has seen both transfers
  // complete (reading the counters progresses nothing), for up to 30 s.
  int64_t unfinished = 2, testsMade = 0;
  t0 = std::chrono::steady_clock::now();
  while (unfinished > 0 && since(t0) < 30.0) {
    check(ampc_grad_allreduce_progress(ctx), "progress");
    check(ampc_grad_allreduce_stats(ctx, nullptr, nullptr, nullptr,
                                    &testsMade, &unfinished),
          "stats");
  }
  check(ampc_grad_allreduce_wait(ctx, grads + 2, types + 2, numels + 2, 2, 1),
        "wait 1");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 2, 0), "wait 0");
  int64_t arrived = 0;
  check(ampc_grad_allreduce_stats(ctx, &waits, &arrived, nullptr, &testsMade,
                                  nullptr),
        "stats");
  for (int k = 0; k < 4; ++k)
    for (int64_t i = 0; i < half; ++i)
      if (g[k][i] != s * float(k + 1) + float(size) * float(i % 7)) {
        std::fprintf(stderr, "rank %d: g%d[%lld] = %g\n", rank, k,
                     (long long)i, double(g[k][i]));
        ++failures;
        k = 4;
        break;
      }
  if (unfinished != 0 || waits != 2 || arrived != 2 || testsMade == 0) {
    std::fprintf(stderr,
                 "rank %d: %lld unfinished after the progress calls, %lld "
                 "waits, %lld arrived, %lld tests\n",
                 rank, (long long)unfinished, (long long)waits,
                 (long long)arrived, (long long)testsMade);
    ++failures;
  }
  if (rank == 0)
    std::printf("progress calls: %lld of %lld buckets arrived before their "
                "wait, exact sums\n",
                (long long)arrived, (long long)waits);

  // 3. ampc_grad_allreduce_test progresses one bucket and reports it done
  // (every rank now holds the same values, so the sum is W times them).
  std::vector<float> prev = g[0];
  check(ampc_grad_allreduce_start(ctx, grads, types, numels, 1, 2, 0, 0),
        "start 2");
  done = 0;
  t0 = std::chrono::steady_clock::now();
  while (!done && since(t0) < 30.0)
    check(ampc_grad_allreduce_test(ctx, 2, &done), "test 2");
  check(ampc_grad_allreduce_wait(ctx, grads, types, numels, 1, 2), "wait 2");
  for (int64_t i = 0; i < half; ++i)
    if (g[0][i] != float(size) * prev[i]) {
      ++failures;
      break;
    }
  if (!done)
    ++failures;
  if (rank == 0)
    std::printf("ampc_grad_allreduce_test: done before the wait (%s)\n",
                done ? "yes" : "no");

  // Misuse: testing a bucket that is not in flight is an error.
  if (ampc_grad_allreduce_test(ctx, 7, &done) == AMPC_OK)
    ++failures;
  if (rank == 0)
    std::printf("bad arguments\n");

  ampc_context_destroy(ctx);
  ampc_comm_destroy(comm);
  if (failures) {
    std::fprintf(stderr, "rank %d: %d failures\n", rank, failures);
    return 1;
  }
  return 0;
}
