//===- test_dropout.cpp - dropout kernels ---------------------------------===//
//
// The dropout mask's statistics and determinism, the step counter, and the
// CUDA backend against the CPU backend (bit-identical dropout masks; skipped
// without a usable GPU).
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

using namespace ampc_test;

namespace {

using DropoutTest = CpuTest;

TEST_F(DropoutTest, MaskStatisticsAndDeterminism) {
  const int64_t n = 200000;
  Tensor x({n}, AMPC_F32), y({n}, AMPC_F32), y2({n}, AMPC_F32),
      y3({n}, AMPC_F32);
  for (int64_t i = 0; i < n; ++i)
    x.set(i, 1.0);
  Tensor step({}, AMPC_I32);
  step.set(0, 3);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y), T(x), step.data(), 42, 0.25, 0));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = y.get(i);
    ASSERT_TRUE(v == 0.0 || v == static_cast<double>(1.0f / 0.75f)) << v;
    kept += v != 0.0;
  }
  EXPECT_NEAR(double(kept) / n, 0.75, 0.005);
  // The same key, step and seed: the same mask (the backward's).
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y2), T(x), step.data(), 42, 0.25, 0));
  EXPECT_EQ(y.bytes, y2.bytes);
  // Another step, key or seed: another mask.
  step.set(0, 4);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y3), T(x), step.data(), 42, 0.25, 0));
  EXPECT_NE(y.bytes, y3.bytes);
  step.set(0, 3);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y3), T(x), step.data(), 42, 0.25, 1));
  EXPECT_NE(y.bytes, y3.bytes);
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y3), T(x), step.data(), 43, 0.25, 0));
  EXPECT_NE(y.bytes, y3.bytes);
  // p = 0 keeps everything unscaled.
  ASSERT_OK(ampc_dropout_fwd(ctx, T(y3), T(x), step.data(), 42, 0.0, 0));
  EXPECT_EQ(y3.bytes, x.bytes);
  EXPECT_EQ(ampc_dropout_fwd(ctx, T(y3), T(x), step.data(), 42, 1.0, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
}

TEST_F(DropoutTest, CounterNext) {
  Tensor c({}, AMPC_I32), next({}, AMPC_I32);
  c.set(0, 41);
  ASSERT_OK(ampc_counter_next(ctx, next.data(), c.data()));
  EXPECT_EQ(next.get(0), 42);
  ASSERT_OK(ampc_counter_next(ctx, c.data(), c.data()));
  EXPECT_EQ(c.get(0), 42);
}

#define D(i, t) dev[i], (t).dtype, (t).dims(), (t).rank()

TEST_F(NormDropoutCuda, DropoutMasksAreBitIdentical) {
  for (ampc_dtype dt : {AMPC_F32, AMPC_F16, AMPC_BF16}) {
    std::vector<Tensor> ts = {randomTensor({37, 129}, dt),
                              Tensor({37, 129}, dt), Tensor({}, AMPC_I32)};
    ts[2].set(0, 17);
    std::vector<void *> dev = upload(ts);
    ASSERT_OK(ampc_dropout_fwd(cpu, T(ts[1]), T(ts[0]), ts[2].data(), 5, 0.3,
                               2));
    ASSERT_OK(ampc_dropout_fwd(gpu, D(1, ts[1]), D(0, ts[0]), dev[2], 5, 0.3,
                               2));
    EXPECT_EQ(download(dev[1], ts[1]).bytes, ts[1].bytes);
    ASSERT_OK(ampc_counter_next(gpu, dev[2], dev[2]));
    EXPECT_EQ(download(dev[2], ts[2]).get(0), 18);
    for (void *p : dev)
      ampc_free(gpu, p);
  }
}

} // namespace
