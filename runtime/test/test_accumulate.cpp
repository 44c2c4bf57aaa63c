//===- test_accumulate.cpp - gradient accumulation --------------------------===//
//
// ampc_grad_accumulate (docs/runtime.md): the first micro-batch writes, the
// others add in f32, the index wraps at k; on CUDA the same bits as the CPU.
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"
#include "test_util.h"

using namespace ampc_test;

namespace {

class Accumulate : public CpuTest {};

TEST_F(Accumulate, FirstWritesOthersAddAndTheIndexWraps) {
  float acc0[3] = {7.0f, 7.0f, 7.0f}; // stale: the first micro-batch writes
  float g0[3] = {1.0f, -2.0f, 0.5f};
  Tensor acc1({2}, AMPC_F32), g1({2}, AMPC_F16);
  acc1.set(0, 9.0);
  acc1.set(1, 9.0);
  g1.set(0, 0.25);
  g1.set(1, -1.5);
  void *accs[2] = {acc0, acc1.data()};
  void *grads[2] = {g0, g1.data()};
  ampc_dtype dts[2] = {AMPC_F32, AMPC_F16};
  int64_t n[2] = {3, 2};
  int32_t micro = 0;
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, grads, dts, n, 2, &micro, 3));
  EXPECT_EQ(micro, 1);
  EXPECT_EQ(acc0[0], 1.0f);
  EXPECT_EQ(acc0[1], -2.0f);
  EXPECT_EQ(acc1.get(1), -1.5);
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, grads, dts, n, 2, &micro, 3));
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, grads, dts, n, 2, &micro, 3));
  EXPECT_EQ(micro, 0); // three micro-batches: the next update starts
  EXPECT_EQ(acc0[0], 3.0f);
  EXPECT_EQ(acc0[2], 1.5f);
  EXPECT_EQ(acc1.get(0), 0.75);
  EXPECT_EQ(acc1.get(1), -4.5);
  // The next update's first micro-batch overwrites again.
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, grads, dts, n, 2, &micro, 3));
  EXPECT_EQ(acc0[0], 1.0f);
  EXPECT_EQ(micro, 1);
}

TEST_F(Accumulate, SumsInMicroBatchOrderInF32) {
  // ((1 + 2^-24) + 2^-24): each addition rounds in f32, so the order shows.
  float acc[1] = {0.0f};
  const float tiny = std::ldexp(1.0f, -24);
  float a[1] = {1.0f}, b[1] = {tiny};
  void *accs[1] = {acc};
  ampc_dtype dt[1] = {AMPC_F32};
  int64_t n[1] = {1};
  int32_t micro = 0;
  void *ga[1] = {a}, *gb[1] = {b};
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, ga, dt, n, 1, &micro, 3));
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, gb, dt, n, 1, &micro, 3));
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, gb, dt, n, 1, &micro, 3));
  EXPECT_EQ(acc[0], 1.0f); // 1 + 2^-24 rounds to 1 (ties to even), twice
}

TEST_F(Accumulate, F64GradientsSumInF64) {
  // An f64 param's gradients have an f64 accumulator: (1 + 2^-40) + 2^-40
  // keeps bits f32 would round away, summed in micro-batch order.
  double acc[1] = {0.0};
  const double tiny = std::ldexp(1.0, -40);
  double a[1] = {1.0 + tiny}, b[1] = {tiny};
  void *accs[1] = {acc};
  ampc_dtype dt[1] = {AMPC_F64};
  int64_t n[1] = {1};
  int32_t micro = 0;
  void *ga[1] = {a}, *gb[1] = {b};
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, ga, dt, n, 1, &micro, 2));
  EXPECT_EQ(acc[0], 1.0 + tiny); // the first micro-batch writes
  ASSERT_OK(ampc_grad_accumulate(ctx, accs, gb, dt, n, 1, &micro, 2));
  EXPECT_EQ(acc[0], 1.0 + 2 * tiny);
  EXPECT_EQ(micro, 0);
}

TEST_F(Accumulate, BadArguments) {
  float acc[1] = {0.0f}, g[1] = {1.0f};
  void *accs[1] = {acc}, *grads[1] = {g};
  ampc_dtype dt[1] = {AMPC_F32}, bad[1] = {AMPC_I32};
  int64_t n[1] = {1};
  int32_t micro = 0;
  EXPECT_EQ(ampc_grad_accumulate(ctx, accs, grads, dt, n, 1, nullptr, 2),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(ampc_grad_accumulate(ctx, accs, grads, dt, n, 1, &micro, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_grad_accumulate(ctx, accs, grads, bad, n, 1, &micro, 2),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_EQ(ampc_grad_accumulate(ctx, nullptr, grads, dt, n, 1, &micro, 2),
            AMPC_ERROR_NULL_POINTER);
  EXPECT_EQ(micro, 0); // nothing ran
  EXPECT_EQ(ampc_grad_accumulate(nullptr, accs, grads, dt, n, 1, &micro, 2),
            AMPC_ERROR_NULL_POINTER);
}

class AccumulateCuda : public CudaVsCpu {
  const char *skipped() const override {
    return "ampc_grad_accumulate on CUDA against the CPU";
  }
};

TEST_F(AccumulateCuda, SameBitsAsTheCpu) {
  // Tensors 0, 1: accumulators (f32); 2, 3: gradients (f32, bf16); 4: index.
  std::vector<Tensor> ts = {Tensor({1000}, AMPC_F32), Tensor({37}, AMPC_F32),
                            Tensor({1000}, AMPC_F32), Tensor({37}, AMPC_BF16),
                            Tensor({1}, AMPC_I32)};
  for (int64_t i = 0; i < 1000; ++i)
    ts[2].set(i, std::sin(0.37 * double(i)) * 1e-3);
  for (int64_t i = 0; i < 37; ++i)
    ts[3].set(i, std::cos(0.11 * double(i)));
  compare(ts, {0, 1, 4},
          [](ampc_context c, const PtrFn &p) -> ampc_status {
            void *accs[2] = {p(0), p(1)};
            void *grads[2] = {p(2), p(3)};
            ampc_dtype dts[2] = {AMPC_F32, AMPC_BF16};
            int64_t n[2] = {1000, 37};
            for (int k = 0; k < 5; ++k)
              AMPC_TRY(ampc_grad_accumulate(c, accs, grads, dts, n, 2, p(4), 4));
            return AMPC_OK;
          },
          0, "five micro-batches, k = 4");
}

} // namespace
