//===- cpu_pool.cpp - The CPU backend's thread pool -----------------------===//
//
// See cpu_pool.h. One job at a time: the submitting thread publishes the job
// (the item function, the item count, a fresh item counter), bumps a
// generation counter and runs items itself; workers spin briefly on the
// generation, then sleep on a condition variable. A worker joins a job by
// raising `busy` and checking that the job is still open; the submitter,
// out of items, closes the job and waits for `busy` to fall to zero. Workers
// that wake late find the job closed and touch nothing, so the submitter
// never waits for a worker that was not scheduled.
//
//===----------------------------------------------------------------------===//
#include "cpu_pool.h"

#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AMPC_POOL_PAUSE() _mm_pause()
#else
#define AMPC_POOL_PAUSE() std::this_thread::yield()
#endif

namespace ampc {
namespace cpupool {
namespace {

constexpr int kMaxThreads = 256;

} // namespace

int threadsFromEnvironment() {
  for (const char *var :
       {"AMPC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char *v = getenv(var);
    if (!v || !*v)
      continue;
    char *end = nullptr;
    long n = strtol(v, &end, 10);
    if (end == v)
      continue;
    if (n < 1)
      return 1;
    return n > kMaxThreads ? kMaxThreads : static_cast<int>(n);
  }
  return defaultThreads();
}

int defaultThreads() {
  // The CPUs this process may run on (taskset, cgroup cpusets, an MPI
  // launcher's binding), else every hardware thread.
  long cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    cpus = CPU_COUNT(&set);
  long all = static_cast<long>(std::thread::hardware_concurrency());
  if (cpus < 1)
    cpus = all;
  // Ranks of an MPI job on this machine that were not bound to their own
  // CPUs share them.
  if (cpus >= all) {
    for (const char *var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                            "MV2_COMM_WORLD_LOCAL_SIZE"}) {
      const char *v = getenv(var);
      long ranks = v && *v ? strtol(v, nullptr, 10) : 0;
      if (ranks > 1) {
        cpus /= ranks;
        break;
      }
    }
  }
  if (cpus < 1)
    return 1;
  return cpus > kMaxThreads ? kMaxThreads : static_cast<int>(cpus);
}

namespace {

thread_local bool insideItem = false;

class Pool {
public:
  ~Pool() { stopWorkers(); }

  int threads() {
    std::call_once(envOnce, [&] {
      if (wanted.load() == 0)
        wanted.store(threadsFromEnvironment());
    });
    return wanted.load();
  }

  void setThreads(int n) {
    std::call_once(envOnce, [] {});
    std::lock_guard<std::mutex> submitLock(submit);
    n = n < 1 ? 1 : (n > kMaxThreads ? kMaxThreads : n);
    if (static_cast<int>(workers.size()) + 1 != n)
      stopWorkers();
    wanted.store(n);
  }

  void run(int64_t n, ItemFn fn) {
    int t = threads();
    std::unique_lock<std::mutex> submitLock(submit, std::defer_lock);
    if (t == 1 || insideItem || !submitLock.try_lock()) {
      for (int64_t i = 0; i < n; ++i)
        fn(i);
      return;
    }
    if (static_cast<int>(workers.size()) + 1 != t)
      startWorkers(t - 1);
    // Publish: the fields first, then open the job, then the generation.
    jobFn = &fn;
    jobItems = n;
    next.store(0, std::memory_order_relaxed);
    closed.store(false);
    generation.fetch_add(1);
    if (sleeping.load() > 0) {
      { std::lock_guard<std::mutex> lock(mutex); }
      wake.notify_all();
    }
    insideItem = true;
    work();
    insideItem = false;
    // Close, then wait for the workers that joined.
    closed.store(true);
    for (int spins = 0; busy.load() != 0; ++spins) {
      if (spins < 4096)
        AMPC_POOL_PAUSE();
      else
        std::this_thread::yield();
    }
  }

private:
  void work() {
    const ItemFn &fn = *jobFn;
    int64_t n = jobItems;
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1))
      fn(i);
  }

  /// `seen`: the generation when the worker was created (before the job
  /// that started it was published, so the worker joins that job).
  void workerLoop(uint64_t seen) {
    insideItem = true;
    for (;;) {
      // Spin for up to ~50 microseconds (kernels of one step follow each
      // other closely), then sleep.
      auto start = std::chrono::steady_clock::now();
      for (int spins = 0; generation.load() == seen && !stopping.load();
           ++spins) {
        AMPC_POOL_PAUSE();
        if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start >
                                      std::chrono::microseconds(50)) {
          std::unique_lock<std::mutex> lock(mutex);
          sleeping.fetch_add(1);
          wake.wait(lock, [&] {
            return generation.load() != seen || stopping.load();
          });
          sleeping.fetch_sub(1);
          break;
        }
      }
      if (stopping.load())
        return;
      seen = generation.load();
      busy.fetch_add(1);
      if (!closed.load())
        work();
      busy.fetch_sub(1);
    }
  }

  void startWorkers(int count) {
    stopWorkers();
    stopping.store(false);
    uint64_t now = generation.load();
    for (int i = 0; i < count; ++i)
      workers.emplace_back([this, now] { workerLoop(now); });
  }

  void stopWorkers() {
    if (workers.empty())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping.store(true);
    }
    wake.notify_all();
    for (std::thread &w : workers)
      w.join();
    workers.clear();
  }

  std::once_flag envOnce;
  std::atomic<int> wanted{0};
  std::mutex submit; // one job at a time
  std::vector<std::thread> workers;

  // The current job (written by the submitter before `closed` is cleared).
  const ItemFn *jobFn = nullptr;
  int64_t jobItems = 0;
  std::atomic<int64_t> next{0};
  std::atomic<bool> closed{true};
  std::atomic<int> busy{0};

  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
  std::atomic<int> sleeping{0};
  std::mutex mutex;
  std::condition_variable wake;
};

Pool &pool() {
  // Never destroyed: workers may still be parked when static destructors
  // run (a process exiting from inside a kernel's caller).
  static Pool *p = new Pool();
  return *p;
}

} // namespace

int threadCount() { return pool().threads(); }

void setThreadCount(int n) { pool().setThreads(n); }

void run(int64_t n, ItemFn fn) { pool().run(n, fn); }

} // namespace cpupool
} // namespace ampc
