//===- test_loss.cpp - fp32-list losses -----------------------------------===//
//
// The composed kernels of runtime/src/api_loss.cpp (l1/smooth_l1/kl_div/nll
// losses): edge cases on the CPU backend against values worked out by hand,
// argument errors, nll_loss's label check word; then every entry point on
// the CUDA backend against the CPU backend (skipped without a GPU). The
// broad value checks against PyTorch are the lit suite's
// (test/Ops/reduce-loss-ops.test).
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

using namespace ampc_test;

namespace {

using ReduceLoss = CpuTest;

TEST_F(ReduceLoss, NllLossIgnoreIndexAndLabelCheck) {
  Tensor logp = randomTensor({3, 4}, AMPC_F32, -3, 0), labels({3}, AMPC_I32),
      loss(Shape{}, AMPC_F32), none({3}, AMPC_F32), dlogp({3, 4}, AMPC_F32),
      dloss(Shape{}, AMPC_F32);
  labels.set(0, 2);
  labels.set(1, -100);
  labels.set(2, 1);
  ASSERT_OK(ampc_nll_loss_fwd(ctx, T(loss), T(logp), T(labels), -100,
                              AMPC_REDUCTION_MEAN, 5));
  EXPECT_NEAR(loss.get(0), -(logp.get(2) + logp.get(9)) / 2, 1e-6);
  ASSERT_OK(ampc_nll_loss_fwd(ctx, T(none), T(logp), T(labels), -100,
                              AMPC_REDUCTION_NONE, 5));
  EXPECT_NEAR(none.get(0), -logp.get(2), 1e-6);
  EXPECT_EQ(none.get(1), 0.0);
  int32_t site = -2;
  ASSERT_OK(ampc_check_read(ctx, AMPC_CHECK_INDEX, 1, &site));
  EXPECT_EQ(site, -1) << "labels in range or ignored record nothing";
  dloss.set(0, 1.0);
  ASSERT_OK(ampc_nll_loss_bwd(ctx, T(dlogp), T(dloss), T(logp), T(labels),
                              -100, AMPC_REDUCTION_MEAN));
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(dlogp.get(i), i == 2 || i == 9 ? -0.5 : 0.0) << i;
  // A class index as ignore_index; a label out of range records the site.
  labels.set(1, 4);
  ASSERT_OK(ampc_nll_loss_fwd(ctx, T(loss), T(logp), T(labels), 2,
                              AMPC_REDUCTION_SUM, 5));
  EXPECT_NEAR(loss.get(0), -logp.get(9), 1e-6);
  ASSERT_OK(ampc_check_read(ctx, AMPC_CHECK_INDEX, 1, &site));
  EXPECT_EQ(site, 5);
}

TEST_F(ReduceLoss, LossReductionsAndBadEnums) {
  Tensor a({2, 3}, AMPC_F32), b({2, 3}, AMPC_F32), loss(Shape{}, AMPC_F32);
  for (int i = 0; i < 6; ++i) {
    a.set(i, i);
    b.set(i, 0.0);
  }
  ASSERT_OK(ampc_l1_loss_fwd(ctx, T(loss), T(a), T(b), AMPC_REDUCTION_SUM));
  EXPECT_EQ(loss.get(0), 15.0);
  ASSERT_OK(ampc_smooth_l1_loss_fwd(ctx, T(loss), T(a), T(b), 2.0,
                                    AMPC_REDUCTION_MEAN));
  // 0, 0.25, 1, 2, 3, 4 (|d| < 2: d²/4; else |d| - 1).
  EXPECT_NEAR(loss.get(0), 10.25 / 6, 1e-6);
  // kl_div with t = b = 0 everywhere is 0; batchmean divides by 2.
  ASSERT_OK(ampc_kl_div_fwd(ctx, T(loss), T(a), T(b),
                            AMPC_REDUCTION_BATCHMEAN, 0));
  EXPECT_EQ(loss.get(0), 0.0);
  for (int32_t bad : {-1, 4, 1000}) {
    EXPECT_EQ(ampc_l1_loss_fwd(ctx, T(loss), T(a), T(b),
                               static_cast<ampc_reduction>(bad)),
              AMPC_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(ampc_kl_div_fwd(ctx, T(loss), T(a), T(b),
                              static_cast<ampc_reduction>(bad), 0),
              AMPC_ERROR_INVALID_ARGUMENT);
  }
  Tensor wrong({3, 2}, AMPC_F32);
  EXPECT_EQ(ampc_l1_loss_fwd(ctx, T(loss), T(a), T(wrong), AMPC_REDUCTION_SUM),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_EQ(ampc_smooth_l1_loss_fwd(ctx, T(loss), T(a), T(b), -1.0,
                                    AMPC_REDUCTION_SUM),
            AMPC_ERROR_INVALID_ARGUMENT);
}

TEST_F(ReduceLossCuda, Losses) {
  Shape s = {5, 7};
  for (ampc_reduction r : {AMPC_REDUCTION_MEAN, AMPC_REDUCTION_SUM,
                           AMPC_REDUCTION_NONE, AMPC_REDUCTION_BATCHMEAN}) {
    Shape ls = r == AMPC_REDUCTION_NONE ? s : Shape{};
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F32, -2, 0),
                              randomTensor(s, AMPC_F16, 0.01, 1),
                              Tensor(ls, AMPC_F32),
                              randomTensor(ls, AMPC_F32),
                              Tensor(s, AMPC_F32),
                              Tensor(s, AMPC_F32)};
    compare(
        ts, {2, 4, 5},
        [&](ampc_context c, const PtrFn &p) {
          for (int32_t lt : {0, 1}) {
            AMPC_TRY(ampc_kl_div_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]),
                                     r, lt));
            AMPC_TRY(ampc_kl_div_bwd(c, A(4, ts[4]), A(5, ts[5]), A(3, ts[3]),
                                     A(0, ts[0]), A(1, ts[1]), r, lt));
          }
          if (r == AMPC_REDUCTION_BATCHMEAN)
            return AMPC_OK;
          AMPC_TRY(
              ampc_l1_loss_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]), r));
          AMPC_TRY(ampc_l1_loss_bwd(c, A(4, ts[4]), A(5, ts[5]), A(3, ts[3]),
                                    A(0, ts[0]), A(1, ts[1]), r));
          AMPC_TRY(ampc_smooth_l1_loss_fwd(c, A(2, ts[2]), A(0, ts[0]),
                                           A(1, ts[1]), 0.5, r));
          return ampc_smooth_l1_loss_bwd(c, A(4, ts[4]), A(5, ts[5]),
                                         A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                         0.5, r);
        },
        1e-4, "losses, reduction " + std::to_string(static_cast<int>(r)));
  }
  std::vector<Tensor> ts = {randomTensor({6, 5}, AMPC_F16, -3, 0),
                            Tensor({6}, AMPC_I64), Tensor(Shape{}, AMPC_F32),
                            randomTensor(Shape{}, AMPC_F32),
                            Tensor({6, 5}, AMPC_F32)};
  const int labels[6] = {0, 4, -100, 2, 2, 1};
  for (int i = 0; i < 6; ++i)
    ts[1].set(i, labels[i]);
  compare(
      ts, {2, 4},
      [&](ampc_context c, const PtrFn &p) {
        AMPC_TRY(ampc_nll_loss_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]),
                                   -100, AMPC_REDUCTION_MEAN, 0));
        return ampc_nll_loss_bwd(c, A(4, ts[4]), A(3, ts[3]), A(0, ts[0]),
                                 A(1, ts[1]), -100, AMPC_REDUCTION_MEAN);
      },
      1e-5, "nll_loss");
}

} // namespace
