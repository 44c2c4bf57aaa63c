//===- test_cpu_pool.cpp - The CPU backend's thread pool ------------------===//
//
// runtime/cpu/cpu_pool.cpp runs every item exactly once whatever the thread
// count, its chunks do not depend on the thread count, nested calls run
// inline, and the thread count comes from the environment variables in
// their order; the pooled row kernels (cpu_kernels.cpp, cpu_fast.cpp) give
// the same bits with 1, 2, 3 and 5 threads on tensors of many items;
// creating the CPU backend stops OpenBLAS's idle worker threads.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "cpu/cpu_fast.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_pool.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

using namespace ampc;

namespace {

/// Restores the pool's thread count at the end of a test.
struct ThreadsGuard {
  int saved = cpupool::threadCount();
  ~ThreadsGuard() { cpupool::setThreadCount(saved); }
};

const int kCounts[] = {1, 2, 3, 5};

TEST(CpuPool, EveryItemRunsOnce) {
  ThreadsGuard guard;
  for (int t : kCounts) {
    cpupool::setThreadCount(t);
    ASSERT_EQ(cpupool::threadCount(), t);
    for (int64_t n : {0, 1, 2, 7, 64, 1000, 100000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (auto &h : hits)
        h.store(0);
      // Several jobs back to back: workers must not run a stale job.
      for (int rep = 0; rep < 3; ++rep)
        cpupool::parallelFor(n, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 3)
            << "threads " << t << " n " << n << " i " << i;
    }
  }
}

TEST(CpuPool, TakesConstAndTemporaryCallables) {
  ThreadsGuard guard;
  cpupool::setThreadCount(2);
  std::atomic<int64_t> sum{0};
  const auto add = [&](int64_t i) { sum.fetch_add(i); };
  cpupool::parallelFor(10, add);
  cpupool::parallelFor(10, [&](int64_t i) { sum.fetch_add(i); });
  cpupool::forChunks(10, 3, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 3 * 45);
}

TEST(CpuPool, ItemsRunOnSeveralThreads) {
  ThreadsGuard guard;
  cpupool::setThreadCount(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  // Items that wait for each other: only finishes if two threads run them
  // (the first job after the workers start included).
  std::atomic<int> arrived{0};
  cpupool::parallelFor(2, [&](int64_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    auto start = std::chrono::steady_clock::now();
    while (arrived.load() < 2 &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
      std::this_thread::yield();
  });
  EXPECT_EQ(arrived.load(), 2);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(CpuPool, ChunksDoNotDependOnTheThreadCount) {
  ThreadsGuard guard;
  std::vector<std::pair<int64_t, int64_t>> first;
  for (int t : kCounts) {
    cpupool::setThreadCount(t);
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    cpupool::forChunks(100003, 4096, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(m);
      chunks.push_back({b, e});
    });
    std::sort(chunks.begin(), chunks.end());
    ASSERT_EQ(chunks.size(), 25u);
    EXPECT_EQ(chunks.front(), std::make_pair(int64_t(0), int64_t(4096)));
    EXPECT_EQ(chunks.back(), std::make_pair(int64_t(98304), int64_t(100003)));
    if (first.empty())
      first = chunks;
    EXPECT_EQ(chunks, first) << "threads " << t;
  }
}

TEST(CpuPool, NestedCallsRunInline) {
  ThreadsGuard guard;
  cpupool::setThreadCount(3);
  std::vector<std::atomic<int>> hits(64 * 64);
  for (auto &h : hits)
    h.store(0);
  cpupool::parallelFor(64, [&](int64_t i) {
    std::thread::id me = std::this_thread::get_id();
    cpupool::parallelFor(64, [&](int64_t j) {
      EXPECT_EQ(std::this_thread::get_id(), me);
      hits[i * 64 + j].fetch_add(1);
    });
  });
  for (auto &h : hits)
    ASSERT_EQ(h.load(), 1);
}

TEST(CpuPool, ConcurrentCallersBothFinish) {
  ThreadsGuard guard;
  cpupool::setThreadCount(2);
  std::atomic<int64_t> sum{0};
  auto caller = [&] {
    for (int rep = 0; rep < 50; ++rep)
      cpupool::parallelFor(100, [&](int64_t i) { sum.fetch_add(i); });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), int64_t(2) * 50 * 4950);
}

/// The threads of this process (the entries of /proc/self/task).
int taskCount() {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  while (dirent *e = readdir(d))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// OpenBLAS starts its worker threads when the library loads; creating the
// CPU backend stops them (the runtime calls OpenBLAS single-threaded, and
// each idle worker would spin for about a tenth of a second). Checked in a
// fresh process, where nothing else has started threads: the threadsafe
// death-test style runs the test in a new run of this binary.
TEST(CpuPool, CreatingTheBackendStopsOpenBlasWorkers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int before = taskCount();
        ampc_context ctx = nullptr;
        if (ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx) != AMPC_OK)
          _exit(2);
        int after = taskCount();
        fprintf(stderr, "threads: %d before the backend, %d after\n", before,
                after);
        _exit(after == 1 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "threads: [0-9]+ before the backend, 1 after");
}

TEST(CpuPool, ThreadCountFromTheEnvironment) {
  struct Saved {
    const char *name;
    std::string value;
    bool set;
  };
  std::vector<Saved> saved;
  for (const char *v :
       {"AMPC_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char *cur = getenv(v);
    saved.push_back({v, cur ? cur : "", cur != nullptr});
    unsetenv(v);
  }
  // No variable: the CPUs this process may run on.
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int cpus = CPU_COUNT(&set);
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local || atoi(local) <= 1) {
    EXPECT_EQ(cpupool::threadsFromEnvironment(), std::min(cpus, 256));
    EXPECT_EQ(cpupool::defaultThreads(), std::min(cpus, 256));
  }
  setenv("OMP_NUM_THREADS", "4", 1);
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 4);
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 3);
  setenv("AMPC_NUM_THREADS", "2", 1);
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 2);
  setenv("AMPC_NUM_THREADS", "0", 1);
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 1);
  setenv("AMPC_NUM_THREADS", "", 1); // empty: the next variable
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 3);
  setenv("AMPC_NUM_THREADS", "100000", 1);
  EXPECT_EQ(cpupool::threadsFromEnvironment(), 256);
  for (const Saved &s : saved)
    if (s.set)
      setenv(s.name, s.value.c_str(), 1);
    else
      unsetenv(s.name);
}

// --- The pooled kernels: the same bits at every thread count. ---

std::vector<uint8_t> randomBytes(size_t n, ampc_dtype dt, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  size_t es = dt == AMPC_F32 ? 4 : 2;
  std::vector<uint8_t> out(n * es);
  for (size_t i = 0; i < n; ++i)
    storeF32(out.data(), dt, static_cast<int64_t>(i), dist(rng));
  return out;
}

/// Runs `kernel` (which writes into the buffers it is given) at every
/// thread count on fresh copies of `inputs` and checks that every output
/// buffer has the bits of the one-thread run.
void sameAtEveryCount(
    const std::vector<std::vector<uint8_t>> &inputs,
    const std::function<void(std::vector<std::vector<uint8_t>> &)> &kernel) {
  ThreadsGuard guard;
  std::vector<std::vector<uint8_t>> ref;
  for (int t : kCounts) {
    cpupool::setThreadCount(t);
    std::vector<std::vector<uint8_t>> bufs = inputs;
    kernel(bufs);
    if (ref.empty()) {
      ref = bufs;
      continue;
    }
    for (size_t i = 0; i < bufs.size(); ++i)
      EXPECT_TRUE(bufs[i] == ref[i])
          << "buffer " << i << ", " << t << " threads";
  }
}

Walk walk2(int rank, const int64_t *shape, const int64_t *s0, const int64_t *s1,
           const int64_t *s2) {
  Walk w;
  w.rank = rank;
  for (int d = 0; d < rank; ++d) {
    w.shape[d] = shape[d];
    w.stride[0][d] = s0[d];
    w.stride[1][d] = s1[d];
    w.stride[2][d] = s2 ? s2[d] : 0;
  }
  return w;
}

TEST(CpuPoolKernels, UnaryAndBinaryBroadcasts) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    // y[64, 300, 37] = a[64, 300, 37] * b[300, 1] (broadcast), and a
    // single long row (contiguous add) of 3 * 32768 + 5 elements.
    int64_t shape[3] = {64, 300, 37};
    int64_t full[3] = {300 * 37, 37, 1}, bc[3] = {0, 1, 0};
    Walk w = walk2(3, shape, full, full, bc);
    int64_t n = 64 * 300 * 37;
    sameAtEveryCount(
        {randomBytes(n, dt, 1), randomBytes(300, dt, 2), randomBytes(n, dt, 3),
         randomBytes(n, dt, 4)},
        [&](std::vector<std::vector<uint8_t>> &b) {
          cpukern::binary(BinaryOp::Mul, Buf{b[2].data(), dt},
                          Buf{b[0].data(), dt}, Buf{b[1].data(), dt}, w);
          // Every element is a * b of its own row's broadcast value.
          for (int64_t i = 0; i < n; i += 97) {
            float a = loadF32(b[0].data(), dt, i);
            float s = loadF32(b[1].data(), dt, i / 37 % 300);
            uint32_t h = 0;
            storeF32(&h, dt, 0, a * s);
            ASSERT_EQ(loadF32(b[2].data(), dt, i), loadF32(&h, dt, 0)) << i;
          }
          cpukern::binaryBwd(BinaryOp::Div, 1, Buf{b[3].data(), dt},
                             Buf{b[2].data(), dt}, Buf{b[0].data(), dt},
                             Buf{b[1].data(), dt}, w);
          UnaryAttrs attrs{};
          cpukern::unary(UnaryOp::Gelu, attrs, Buf{b[2].data(), dt},
                         Buf{b[0].data(), dt}, n);
          cpukern::unaryBwd(UnaryOp::Gelu, attrs, Buf{b[3].data(), dt},
                            Buf{b[2].data(), dt}, Buf{b[0].data(), dt}, n);
        });
    int64_t len = 3 * 32768 + 5;
    int64_t one[1] = {1}, lshape[1] = {len};
    Walk row = walk2(1, lshape, one, one, one);
    sameAtEveryCount({randomBytes(len, dt, 5), randomBytes(len, dt, 6),
                      randomBytes(len, dt, 7)},
                     [&](std::vector<std::vector<uint8_t>> &b) {
                       cpukern::binary(BinaryOp::Add, Buf{b[2].data(), dt},
                                       Buf{b[0].data(), dt},
                                       Buf{b[1].data(), dt}, row);
                     });
  }
}

TEST(CpuPoolKernels, ReductionsAndRowKernels) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    int64_t rows = 1024, cols = 300;
    int64_t n = rows * cols;
    // Row sums (inner stride 1), column sums (the reduceColumns path) and
    // max; softmax, log-softmax and the norms with their gradients.
    int64_t oshape[1] = {rows}, ostr[1] = {1}, oxs[1] = {cols};
    int64_t ishape[1] = {cols}, izero[1] = {0}, ione[1] = {1};
    Walk outerRows = walk2(1, oshape, ostr, oxs, nullptr);
    Walk innerRows = walk2(1, ishape, izero, ione, nullptr);
    int64_t cshape[1] = {cols}, cxs[1] = {1};
    int64_t rshape[1] = {rows}, rxs[1] = {cols};
    Walk outerCols = walk2(1, cshape, ione, cxs, nullptr);
    Walk innerCols = walk2(1, rshape, izero, rxs, nullptr);
    sameAtEveryCount(
        {randomBytes(n, dt, 11), randomBytes(n, dt, 12), randomBytes(n, dt, 0),
         randomBytes(n, dt, 0), randomBytes(rows, dt, 0),
         randomBytes(cols, dt, 0), randomBytes(cols, dt, 13),
         randomBytes(cols, dt, 14), randomBytes(cols, dt, 0),
         randomBytes(cols, dt, 0)},
        [&](std::vector<std::vector<uint8_t>> &b) {
          auto B = [&](int i) { return Buf{b[i].data(), dt}; };
          cpukern::reduce(ReduceOp::Sum, B(4), B(0), outerRows, innerRows);
          cpukern::reduce(ReduceOp::Max, B(4), B(0), outerRows, innerRows);
          ASSERT_TRUE(
              cpufast::reduceColumns(B(5), B(0), outerCols, innerCols, true));
          cpukern::softmax(false, B(2), B(0), rows, cols, 1);
          cpukern::softmaxBwd(false, B(3), B(1), B(2), rows, cols, 1);
          cpukern::softmax(true, B(2), B(0), 4, rows / 4, cols);
          cpukern::softmaxBwd(true, B(3), B(1), B(2), 4, rows / 4, cols);
          cpukern::norm(false, B(2), B(0), B(6), B(7), rows, cols, 1e-5f);
          cpukern::normBwd(false, B(3), B(8), B(9), B(1), B(0), B(6), rows,
                           cols, 1e-5f);
          cpukern::normBwd(true, B(3), B(8), Buf{nullptr, dt}, B(1), B(0), B(6),
                           rows, cols, 1e-5f);
          // dx over dy (in place).
          cpukern::normBwd(false, B(1), B(8), B(9), B(1), B(0), B(6), rows,
                           cols, 1e-5f);
        });
  }
}

TEST(CpuPoolKernels, NormBwdInPlaceMatchesOutOfPlace) {
  int64_t rows = 512, cols = 200, n = rows * cols;
  auto x = randomBytes(n, AMPC_F32, 21), dy = randomBytes(n, AMPC_F32, 22),
       w = randomBytes(cols, AMPC_F32, 23);
  ThreadsGuard guard;
  cpupool::setThreadCount(3);
  std::vector<uint8_t> dx(n * 4), dw1(cols * 4), db1(cols * 4), dw2(cols * 4),
      db2(cols * 4);
  cpukern::normBwd(false, Buf{dx.data(), AMPC_F32}, Buf{dw1.data(), AMPC_F32},
                   Buf{db1.data(), AMPC_F32}, Buf{dy.data(), AMPC_F32},
                   Buf{x.data(), AMPC_F32}, Buf{w.data(), AMPC_F32}, rows, cols,
                   1e-5f);
  std::vector<uint8_t> inPlace = dy;
  cpukern::normBwd(false, Buf{inPlace.data(), AMPC_F32},
                   Buf{dw2.data(), AMPC_F32}, Buf{db2.data(), AMPC_F32},
                   Buf{inPlace.data(), AMPC_F32}, Buf{x.data(), AMPC_F32},
                   Buf{w.data(), AMPC_F32}, rows, cols, 1e-5f);
  EXPECT_TRUE(inPlace == dx);
  EXPECT_TRUE(dw1 == dw2);
  EXPECT_TRUE(db1 == db2);
}

TEST(CpuPoolKernels, StridedCopies) {
  // A [8, 128, 4, 64] -> [8, 4, 128, 64] permute (rows) and a [256, 1024]
  // transpose (tiles), 4- and 2-byte elements.
  for (int64_t es : {4, 2}) {
    int64_t pshape[4] = {8, 4, 128, 64};
    int64_t pdst[4] = {4 * 128 * 64, 128 * 64, 64, 1};
    int64_t psrc[4] = {128 * 4 * 64, 64, 4 * 64, 1};
    Walk perm = walk2(4, pshape, pdst, psrc, nullptr);
    int64_t tshape[2] = {1024, 256}, tdst[2] = {256, 1}, tsrc[2] = {1, 1024};
    Walk tr = walk2(2, tshape, tdst, tsrc, nullptr);
    int64_t n = 8 * 128 * 4 * 64;
    ampc_dtype dt = es == 4 ? AMPC_F32 : AMPC_F16;
    sameAtEveryCount(
        {randomBytes(n, dt, 31), randomBytes(n, dt, 0), randomBytes(n, dt, 0)},
        [&](std::vector<std::vector<uint8_t>> &b) {
          ASSERT_TRUE(cpufast::stridedCopy(b[1].data(), b[0].data(), es, perm));
          ASSERT_TRUE(cpufast::stridedCopy(b[2].data(), b[0].data(), es, tr));
          // The elements land where the walks say.
          const uint8_t *src = b[0].data();
          for (int64_t i0 = 0; i0 < 8; ++i0)
            for (int64_t i1 = 0; i1 < 4; ++i1)
              for (int64_t i2 = 0; i2 < 128; i2 += 7)
                for (int64_t i3 = 0; i3 < 64; i3 += 5) {
                  int64_t d = i0 * pdst[0] + i1 * pdst[1] + i2 * pdst[2] + i3;
                  int64_t s = i0 * psrc[0] + i1 * psrc[1] + i2 * psrc[2] + i3;
                  ASSERT_EQ(memcmp(b[1].data() + d * es, src + s * es, es), 0);
                }
          for (int64_t i = 0; i < 1024; i += 3)
            for (int64_t j = 0; j < 256; ++j)
              ASSERT_EQ(memcmp(b[2].data() + (i * 256 + j) * es,
                               src + (i + j * 1024) * es, es),
                        0);
        });
  }
}

} // namespace
