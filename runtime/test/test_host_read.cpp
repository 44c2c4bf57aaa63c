//===- test_host_read.cpp - Asynchronous reads and the host-sync counter ---===//
//
// ampc_read_async packs several device values into one host buffer; a
// training loop reads a step's scalars one step late with it. On CPU the
// copy happens at once; on CUDA (skipped without a GPU) it is one transfer
// into page-locked memory that lands only by ampc_read_wait. The counter of
// ampc_host_syncs must not move for kernels, only for the calls that wait.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace ampc_test;

namespace {

void readsPackAndCount(ampc_context ctx) {
  // Three device values of 4, 2 and 8 bytes.
  void *dev = nullptr;
  ASSERT_OK(ampc_malloc(ctx, 64, &dev));
  uint8_t init[64];
  for (int i = 0; i < 64; ++i)
    init[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_OK(ampc_memcpy(ctx, dev, init, 64, AMPC_MEMCPY_HOST_TO_DEVICE));
  char *d = static_cast<char *>(dev);
  const void *srcs[3] = {d + 4, d + 17, d + 32};
  size_t bytes[3] = {4, 2, 8};

  uint64_t before = 0, after = 0;
  ASSERT_OK(ampc_host_syncs(ctx, &before));
  void *host = nullptr;
  ASSERT_OK(ampc_host_alloc(ctx, 14, &host));
  uint64_t tickets[10];
  for (int k = 0; k < 10; ++k) {
    // Kernels between reads do not wait: fill changes the source in order.
    ASSERT_OK(ampc_fill(ctx, d + 32, AMPC_F32, 2, static_cast<double>(k)));
    ASSERT_OK(ampc_read_async(ctx, host, srcs, bytes, 3, &tickets[k]));
    EXPECT_EQ(tickets[k], k == 0 ? tickets[0] : tickets[k - 1] + 1);
    ASSERT_OK(ampc_read_wait(ctx, tickets[k]));
    uint8_t got[14];
    std::memcpy(got, host, 14);
    EXPECT_EQ(0, std::memcmp(got, init + 4, 4));
    EXPECT_EQ(0, std::memcmp(got + 4, init + 17, 2));
    float f[2];
    std::memcpy(f, got + 6, 8);
    EXPECT_EQ(f[0], static_cast<float>(k));
    EXPECT_EQ(f[1], static_cast<float>(k));
  }
  ASSERT_OK(ampc_host_syncs(ctx, &after));
  EXPECT_EQ(after - before, 10u) << "one wait per read, nothing else";

  // Only the 8 most recent reads can be waited for.
  EXPECT_EQ(ampc_read_wait(ctx, tickets[1]), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("most recent reads"),
            std::string::npos);
  EXPECT_EQ(ampc_read_wait(ctx, tickets[9] + 1), AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_read_wait(ctx, 0), AMPC_ERROR_INVALID_ARGUMENT);
  // Limits on the pieces.
  uint64_t t = 0;
  EXPECT_EQ(ampc_read_async(ctx, host, srcs, bytes, 0, &t),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_read_async(ctx, host, srcs, bytes, 9, &t),
            AMPC_ERROR_INVALID_ARGUMENT);
  size_t big[1] = {257};
  EXPECT_EQ(ampc_read_async(ctx, host, srcs, big, 1, &t),
            AMPC_ERROR_INVALID_ARGUMENT);
  // Sizes whose sum wraps past SIZE_MAX to a small total (it passed the
  // 256-byte check, and the copy then ran SIZE_MAX bytes).
  size_t wrap[2] = {SIZE_MAX, 2};
  const void *two[2] = {srcs[0], srcs[0]};
  EXPECT_EQ(ampc_read_async(ctx, host, two, wrap, 2, &t),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("bytes[0]"), std::string::npos)
      << ampc_last_error();
  size_t wrap2[2] = {8, SIZE_MAX - 7};
  EXPECT_EQ(ampc_read_async(ctx, host, two, wrap2, 2, &t),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("bytes[1]"), std::string::npos)
      << ampc_last_error();
  EXPECT_EQ(ampc_read_async(ctx, nullptr, srcs, bytes, 1, &t),
            AMPC_ERROR_NULL_POINTER);
  const void *nulls[1] = {nullptr};
  EXPECT_EQ(ampc_read_async(ctx, host, nulls, bytes, 1, &t),
            AMPC_ERROR_NULL_POINTER);

  // The calls that wait each count once; kernels and H2D copies do not.
  ASSERT_OK(ampc_host_syncs(ctx, &before));
  ASSERT_OK(ampc_fill(ctx, dev, AMPC_F32, 16, 1.0));
  ASSERT_OK(ampc_memcpy(ctx, dev, init, 8, AMPC_MEMCPY_HOST_TO_DEVICE));
  ASSERT_OK(ampc_memcpy(ctx, d + 8, dev, 8, AMPC_MEMCPY_DEVICE_TO_DEVICE));
  ASSERT_OK(ampc_host_syncs(ctx, &after));
  EXPECT_EQ(after, before);
  uint8_t back[8];
  ASSERT_OK(ampc_memcpy(ctx, back, dev, 8, AMPC_MEMCPY_DEVICE_TO_HOST));
  ASSERT_OK(ampc_synchronize(ctx));
  ASSERT_OK(ampc_host_free(ctx, host));
  ASSERT_OK(ampc_free(ctx, dev));
  ASSERT_OK(ampc_host_syncs(ctx, &after));
  EXPECT_EQ(after - before, 4u);
  EXPECT_EQ(ampc_host_syncs(ctx, nullptr), AMPC_ERROR_NULL_POINTER);
}

/// Uploads from one pageable vector, overwritten right after each call (on
/// CUDA each is staged through page-locked memory, 4 buffers reused in
/// turn and grown): every device buffer must hold what the vector held
/// when its upload was queued.
void pageableUploadsLand(ampc_context ctx) {
  const int kUploads = 11;
  std::vector<void *> dev(kUploads);
  std::vector<size_t> sizes(kUploads);
  std::vector<uint8_t> host;
  for (int k = 0; k < kUploads; ++k) {
    sizes[k] = (size_t(1) << (k + 8)) + 3 * k; // 256 bytes to 256 KiB
    host.assign(sizes[k], 0);
    for (size_t i = 0; i < sizes[k]; ++i)
      host[i] = static_cast<uint8_t>(i * 31 + k * 7);
    ASSERT_OK(ampc_malloc(ctx, sizes[k], &dev[k]));
    ASSERT_OK(ampc_memcpy(ctx, dev[k], host.data(), sizes[k],
                          AMPC_MEMCPY_HOST_TO_DEVICE));
    std::fill(host.begin(), host.end(), 0xEE);
  }
  for (int k = 0; k < kUploads; ++k) {
    std::vector<uint8_t> back(sizes[k]);
    ASSERT_OK(ampc_memcpy(ctx, back.data(), dev[k], sizes[k],
                          AMPC_MEMCPY_DEVICE_TO_HOST));
    size_t bad = 0;
    for (size_t i = 0; i < sizes[k]; ++i)
      bad += back[i] != static_cast<uint8_t>(i * 31 + k * 7);
    EXPECT_EQ(bad, 0u) << "upload " << k << " of " << sizes[k] << " bytes";
    ASSERT_OK(ampc_free(ctx, dev[k]));
  }
}

/// Runs `check` on a context of `backend`; CUDA skips without a GPU.
void onBackend(ampc_backend backend, void (*check)(ampc_context),
               const char *what) {
  int32_t available = 0;
  ampc_backend_available(backend, &available);
  if (!available)
    GTEST_SKIP() << "no usable CUDA device (or the runtime was built without "
                    "CUDA): "
                 << what << " skipped";
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(backend, 0, &ctx));
  check(ctx);
  ampc_context_destroy(ctx);
}

TEST(HostRead, CpuPageableUploadsLand) {
  onBackend(AMPC_BACKEND_CPU, pageableUploadsLand, "");
}

TEST(HostRead, CudaPageableUploadsLand) {
  onBackend(AMPC_BACKEND_CUDA, pageableUploadsLand, "CUDA staged-upload test");
}

TEST(HostRead, CpuPacksReadsAndCountsWaits) {
  onBackend(AMPC_BACKEND_CPU, readsPackAndCount, "");
}

TEST(HostRead, CudaPacksReadsAndCountsWaits) {
  onBackend(AMPC_BACKEND_CUDA, readsPackAndCount,
            "CUDA asynchronous-read test");
}

} // namespace
