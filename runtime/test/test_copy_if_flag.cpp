//===- test_copy_if_flag.cpp - Copies predicated on a device flag ---------===//
//
// ampc_copy_if_flag copies its ranges only when the f32 flag in device
// memory is nonzero by the time the queued work before it has run, and makes
// no host synchronisation. The CUDA case (skipped without a GPU) also covers
// more ranges than one launch takes (64), a range of several grid-stride
// rounds, ranges that are not 16-byte aligned and odd lengths, and a flag
// written by a kernel queued just before.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cstring>
#include <vector>

using namespace ampc_test;

namespace {

void predicatedCopies(ampc_context ctx, bool large) {
  // Range sizes: odd, empty, aligned, and (large) one of 5 M + 3 bytes.
  std::vector<int64_t> sizes = {1, 3, 16, 0, 17, 4096, 255};
  for (int i = 0; i < 70; ++i) // more than one launch's 64 ranges
    sizes.push_back(5 + i);
  if (large)
    sizes.push_back(5 * 1024 * 1024 + 3);
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n + 16;
  void *srcBase = nullptr, *dstBase = nullptr, *flag = nullptr;
  ASSERT_OK(ampc_malloc(ctx, total, &srcBase));
  ASSERT_OK(ampc_malloc(ctx, total, &dstBase));
  ASSERT_OK(ampc_malloc(ctx, 4, &flag));
  std::vector<uint8_t> src(total), zero(total, 0), got(total);
  for (int64_t i = 0; i < total; ++i)
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  ASSERT_OK(ampc_memcpy(ctx, srcBase, src.data(), total,
                        AMPC_MEMCPY_HOST_TO_DEVICE));
  // Ranges at every alignment: range k starts k % 3 bytes into its room.
  std::vector<void *> dsts;
  std::vector<const void *> srcs;
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t off = at + static_cast<int64_t>(k % 3);
    offsets.push_back(off);
    dsts.push_back(static_cast<char *>(dstBase) + off);
    srcs.push_back(static_cast<const char *>(srcBase) + off);
    at += sizes[k] + 16;
  }
  auto expectCopied = [&](bool copied, const char *what) {
    ASSERT_OK(ampc_memcpy(ctx, got.data(), dstBase, total,
                          AMPC_MEMCPY_DEVICE_TO_HOST));
    std::vector<uint8_t> want(total, 0);
    if (copied)
      for (size_t k = 0; k < sizes.size(); ++k)
        std::memcpy(want.data() + offsets[k], src.data() + offsets[k],
                    sizes[k]);
    EXPECT_TRUE(got == want) << what;
  };
  int32_t n = static_cast<int32_t>(sizes.size());
  uint64_t before = 0, after = 0;

  // Flag 0 (written by a kernel just queued): nothing is copied.
  ASSERT_OK(ampc_memcpy(ctx, dstBase, zero.data(), total,
                        AMPC_MEMCPY_HOST_TO_DEVICE));
  ASSERT_OK(ampc_fill(ctx, flag, AMPC_F32, 1, 0.0));
  ASSERT_OK(ampc_host_syncs(ctx, &before));
  ASSERT_OK(ampc_copy_if_flag(ctx, flag, n, dsts.data(), srcs.data(),
                              sizes.data()));
  ASSERT_OK(ampc_host_syncs(ctx, &after));
  EXPECT_EQ(after, before) << "the predicated copy does not wait";
  expectCopied(false, "flag 0");

  // Flag 1 (a skipped step's found_inf): every range is copied, nothing else.
  ASSERT_OK(ampc_fill(ctx, flag, AMPC_F32, 1, 1.0));
  ASSERT_OK(ampc_host_syncs(ctx, &before));
  ASSERT_OK(ampc_copy_if_flag(ctx, flag, n, dsts.data(), srcs.data(),
                              sizes.data()));
  ASSERT_OK(ampc_host_syncs(ctx, &after));
  EXPECT_EQ(after, before);
  expectCopied(true, "flag 1");

  // The flag is read when the copy runs, after the work queued before it:
  // set, then cleared by a later kernel and copied again over zeros.
  ASSERT_OK(ampc_memcpy(ctx, dstBase, zero.data(), total,
                        AMPC_MEMCPY_HOST_TO_DEVICE));
  ASSERT_OK(ampc_fill(ctx, flag, AMPC_F32, 1, 1.0));
  ASSERT_OK(ampc_fill(ctx, flag, AMPC_F32, 1, 0.0));
  ASSERT_OK(ampc_copy_if_flag(ctx, flag, n, dsts.data(), srcs.data(),
                              sizes.data()));
  expectCopied(false, "flag cleared before the copy ran");
  // A NaN flag is nonzero.
  ASSERT_OK(ampc_fill(ctx, flag, AMPC_F32, 1, NAN));
  ASSERT_OK(ampc_copy_if_flag(ctx, flag, n, dsts.data(), srcs.data(),
                              sizes.data()));
  expectCopied(true, "NaN flag");

  // No ranges, and bad arguments.
  EXPECT_OK(ampc_copy_if_flag(ctx, flag, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(ampc_copy_if_flag(ctx, nullptr, n, dsts.data(), srcs.data(),
                              sizes.data()),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_copy_if_flag(ctx, flag, -1, dsts.data(), srcs.data(),
                              sizes.data()),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_copy_if_flag(ctx, flag, n, dsts.data(), nullptr,
                              sizes.data()),
            AMPC_ERROR_NULL_POINTER);
  int64_t negative[1] = {-4};
  EXPECT_EQ(ampc_copy_if_flag(ctx, flag, 1, dsts.data(), srcs.data(),
                              negative),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("bytes[0]"),
            std::string::npos);
  void *nullDst[1] = {nullptr};
  EXPECT_EQ(ampc_copy_if_flag(ctx, flag, 1, nullDst, srcs.data(),
                              sizes.data()),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_copy_if_flag(nullptr, flag, 1, dsts.data(), srcs.data(),
                              sizes.data()),
            AMPC_ERROR_NULL_POINTER);

  ASSERT_OK(ampc_free(ctx, srcBase));
  ASSERT_OK(ampc_free(ctx, dstBase));
  ASSERT_OK(ampc_free(ctx, flag));
}

TEST(CopyIfFlag, CpuCopiesOnlyWhenTheFlagIsSet) {
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &ctx));
  predicatedCopies(ctx, false);
  ampc_context_destroy(ctx);
}

TEST(CudaCopyIfFlag, CopiesOnlyWhenTheDeviceFlagIsSet) {
  int32_t available = 0;
  ampc_backend_available(AMPC_BACKEND_CUDA, &available);
  if (!available)
    GTEST_SKIP() << "no usable CUDA device (or the runtime was built without "
                    "CUDA): CUDA predicated-copy test skipped";
  ampc_context ctx = nullptr;
  ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &ctx));
  predicatedCopies(ctx, true);
  ampc_context_destroy(ctx);
}

} // namespace
