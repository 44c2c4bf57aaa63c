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

#include <cstring>

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

TEST(HostRead, CpuPacksReadsAndCountsWaits) {
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  readsPackAndCount(ctx);
  ampc_context_destroy(ctx);
}

TEST(HostRead, CudaPacksReadsAndCountsWaits) {
  int32_t available = 0;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (!available)
    GTEST_SKIP() << "no usable CUDA device (or the runtime was built without "
                    "CUDA): CUDA asynchronous-read test skipped";
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &ctx));
  readsPackAndCount(ctx);
  ampc_context_destroy(ctx);
}

} // namespace
