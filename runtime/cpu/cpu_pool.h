//===- cpu_pool.h - The CPU backend's thread pool ---------------*- C++ -*-===//
//
// A small pool of worker threads for the CPU backend's kernels, built so that
// results do not depend on the thread count:
//  - the caller splits its work into ITEMS whose boundaries depend only on
//    the problem (its shape and fixed block sizes), never on the number of
//    threads; each item is computed by the same code, in the same order of
//    operations, whichever thread runs it;
//  - threads only choose which items they run (a shared counter hands them
//    out), so with 1, 2 or 16 threads every item, and every output, has the
//    same bits;
//  - an item never depends on another item's result inside one call; the
//    caller combines per-item partial results (if any) afterwards in item
//    order.
//
// The thread count is read once, at first use, from AMPC_NUM_THREADS, else
// OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs the process may
// run on (defaultThreads; values below 1 count as 1; at most 256). The calling thread runs items too, so
// n threads means n - 1 workers, started once, the first time a call has
// more than one item. A parallelFor called from inside an item (or while
// another thread's parallelFor is running) runs its items serially on the
// calling thread: the same items, the same results.
//
// Kernels call parallelFor(items, fn) with fn(item), or forChunks(total,
// chunk, fn) with fn(begin, end) over fixed chunks of `chunk` elements;
// work of one item (tensors below a kernel's chunk size) runs inline
// without touching the pool.
//
//===----------------------------------------------------------------------===//
#ifndef AMPC_RUNTIME_CPU_CPU_POOL_H
#define AMPC_RUNTIME_CPU_CPU_POOL_H

#include <stdint.h>

#include <type_traits>
#include <utility>

namespace ampc {
namespace cpupool {

/// Elements per item of the elementwise, conversion and row loops: tensors
/// up to this size run on the calling thread alone.
constexpr int64_t kItemElements = 32768;

/// The number of threads kernels run on (>= 1, the caller included).
int threadCount();

/// The thread count the environment asks for (the variables above, in
/// their order; an empty or non-numeric value counts as unset), else
/// defaultThreads().
int threadsFromEnvironment();
/// With no variable set: the CPUs this process may run on (its affinity
/// mask), divided by the ranks of an MPI job on this machine when they were
/// not bound to CPUs of their own; at least 1.
int defaultThreads();

/// Changes the thread count (>= 1; tests and benchmarks). Must not be
/// called while a parallelFor runs.
void setThreadCount(int n);

/// A non-owning reference to a callable taking an item index.
class ItemFn {
public:
  template <typename F>
  ItemFn(F &f) // NOLINT: implicit on purpose
      : obj(const_cast<void *>(static_cast<const void *>(&f))),
        call([](void *o, int64_t i) { (*static_cast<F *>(o))(i); }) {}
  void operator()(int64_t i) const { call(obj, i); }

private:
  void *obj;
  void (*call)(void *, int64_t);
};

/// Runs the pool for items [0, n): every item exactly once, on some thread.
void run(int64_t n, ItemFn fn);

/// Calls fn(i) for every i in [0, n); returns when all have run.
template <typename F> void parallelFor(int64_t n, F &&fn) {
  if (n <= 0)
    return;
  if (n == 1) {
    fn(int64_t(0));
    return;
  }
  std::remove_reference_t<F> &f = fn;
  run(n, ItemFn(f));
}

/// Calls fn(begin, end) for the fixed chunks [k * chunk, min((k + 1) *
/// chunk, total)) of [0, total).
template <typename F> void forChunks(int64_t total, int64_t chunk, F &&fn) {
  if (total <= 0)
    return;
  if (chunk <= 0 || total <= chunk) {
    fn(int64_t(0), total);
    return;
  }
  int64_t n = (total + chunk - 1) / chunk;
  auto item = [&](int64_t i) {
    int64_t b = i * chunk;
    fn(b, b + chunk < total ? b + chunk : total);
  };
  run(n, ItemFn(item));
}

} // namespace cpupool
} // namespace ampc

#endif // AMPC_RUNTIME_CPU_CPU_POOL_H
