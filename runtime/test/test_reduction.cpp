//===- test_reduce_loss.cpp - fp32-list reductions, norms and losses -------===//
//
// The composed kernels of runtime/src/api_reduction.cpp, api_norm.cpp and
// api_loss.cpp (logsumexp, norm, cumsum, group_norm, cosine_similarity,
// l1/smooth_l1/kl_div/nll losses): edge cases
// on the CPU backend against values worked out by hand, argument errors,
// nll_loss's label check word; then every entry point on the CUDA backend
// against the CPU backend (skipped without a GPU). The broad value checks
// against PyTorch are the lit suite's (test/Ops/reduce-loss-ops.test).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <cmath>
#include <functional>

using namespace ampc_test;

namespace {

using ReduceLoss = CpuTest;

TEST_F(ReduceLoss, LogsumexpIsStableAndAllNegInfGivesNegInf) {
  Tensor x({2, 3}, AMPC_F32), y({2}, AMPC_F32);
  const double big[3] = {1000.0, 1000.0, 999.0};
  for (int i = 0; i < 3; ++i) {
    x.set(i, big[i]);
    x.set(3 + i, -INFINITY);
  }
  int64_t dims[1] = {1};
  ASSERT_OK(ampc_logsumexp_fwd(ctx, T(y), T(x), dims, 1, 0));
  double want = 1000.0 + std::log(2.0 + std::exp(-1.0));
  EXPECT_NEAR(y.get(0), want, 1e-3);
  EXPECT_TRUE(std::isinf(y.get(1)) && y.get(1) < 0) << y.get(1);
}

TEST_F(ReduceLoss, NormGradientsAtZeroAndInfTies) {
  // Rows: [1, -1, 0.5] and [0, 0, 0].
  Tensor x({2, 3}, AMPC_F32), y({2}, AMPC_F32), dy({2}, AMPC_F32),
      dx({2, 3}, AMPC_F32);
  const double v[6] = {1, -1, 0.5, 0, 0, 0};
  for (int i = 0; i < 6; ++i)
    x.set(i, v[i]);
  dy.set(0, 1.0);
  dy.set(1, 1.0);
  int64_t dims[1] = {1};
  // inf: y = 1, the gradient split between the two ties, 0 at the zero row.
  ASSERT_OK(ampc_norm_fwd(ctx, T(y), T(x), INFINITY, dims, 1, 0));
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(1), 0.0);
  ASSERT_OK(ampc_norm_bwd(ctx, T(dx), T(dy), T(x), T(y), INFINITY, dims, 1, 0));
  const double inf[6] = {0.5, -0.5, 0, 0, 0, 0};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(dx.get(i), inf[i]) << i;
  // 2: x / y, and 0 (not NaN) where y is 0.
  ASSERT_OK(ampc_norm_fwd(ctx, T(y), T(x), 2.0, dims, 1, 0));
  EXPECT_NEAR(y.get(0), 1.5, 1e-6);
  ASSERT_OK(ampc_norm_bwd(ctx, T(dx), T(dy), T(x), T(y), 2.0, dims, 1, 0));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(dx.get(i), v[i] / 1.5, 1e-6) << i;
  for (int i = 3; i < 6; ++i)
    EXPECT_EQ(dx.get(i), 0.0) << i;
  // p < 1 is refused.
  EXPECT_EQ(ampc_norm_fwd(ctx, T(y), T(x), 0.5, dims, 1, 0),
            AMPC_ERROR_INVALID_ARGUMENT);
}

TEST_F(ReduceLoss, CumsumAndItsReverse) {
  Tensor x = randomTensor({2, 5, 3}, AMPC_F32), y({2, 5, 3}, AMPC_F32),
         dx({2, 5, 3}, AMPC_F32);
  ASSERT_OK(ampc_cumsum_fwd(ctx, T(y), T(x), 1));
  ASSERT_OK(ampc_cumsum_bwd(ctx, T(dx), T(x), 1));
  for (int o = 0; o < 2; ++o)
    for (int in = 0; in < 3; ++in) {
      double fwd = 0, bwd = 0;
      for (int i = 0; i < 5; ++i) {
        fwd += x.get((o * 5 + i) * 3 + in);
        bwd += x.get((o * 5 + 4 - i) * 3 + in);
        EXPECT_NEAR(y.get((o * 5 + i) * 3 + in), fwd, 1e-6);
        EXPECT_NEAR(dx.get((o * 5 + 4 - i) * 3 + in), bwd, 1e-6);
      }
    }
  EXPECT_EQ(ampc_cumsum_fwd(ctx, T(y), T(x), 3), AMPC_ERROR_INVALID_ARGUMENT);
}

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

//===----------------------------------------------------------------------===//
// CUDA against CPU
//===----------------------------------------------------------------------===//

using PtrFn = std::function<void *(int)>;
using Op = std::function<ampc_status(ampc_context, const PtrFn &)>;

class ReduceLossCuda : public ::testing::Test {
protected:
  void SetUp() override {
    int32_t available = 0;
    ampc_backend_available(AMPC_BACKEND_CUDA, &available);
    if (!available)
      GTEST_SKIP() << "no usable CUDA device (or the runtime was built "
                      "without CUDA): CUDA-vs-CPU comparison skipped";
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CUDA, 0, &gpu));
    ASSERT_OK(ampc_context_create(AMPC_BACKEND_CPU, 0, &cpu));
  }
  void TearDown() override {
    ampc_context_destroy(gpu);
    ampc_context_destroy(cpu);
  }

  /// Runs `op` on both backends over copies of `ts` and compares the
  /// tensors listed in `outputs` within `tol`.
  void compare(const std::vector<Tensor> &ts, const std::vector<int> &outputs,
               const Op &op, double tol, const std::string &what) {
    SCOPED_TRACE(what);
    std::vector<Tensor> onCpu = ts, fromGpu = ts;
    ASSERT_OK(op(cpu, [&](int i) { return onCpu[i].data(); }));
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      ASSERT_OK(ampc_malloc(gpu, ts[i].bytes.size(), &dev[i]));
      ASSERT_OK(ampc_memcpy(gpu, dev[i], ts[i].bytes.data(), ts[i].bytes.size(),
                            AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    ASSERT_OK(op(gpu, [&](int i) { return dev[i]; }));
    for (int o : outputs)
      ASSERT_OK(ampc_memcpy(gpu, fromGpu[o].bytes.data(), dev[o],
                            ts[o].bytes.size(), AMPC_MEMCPY_DEVICE_TO_HOST));
    for (void *p : dev)
      ampc_free(gpu, p);
    for (int o : outputs)
      expectClose(fromGpu[o].values(), onCpu[o].values(), tol, tol,
                  what + " output " + std::to_string(o));
  }

  ampc_context gpu = nullptr, cpu = nullptr;
};

#define A(i, t) p(i), (t).dtype, (t).dims(), (t).rank()
#define TRY(expr)                                                              \
  do {                                                                         \
    ampc_status s_ = (expr);                                                   \
    if (s_ != AMPC_OK)                                                         \
      return s_;                                                               \
  } while (0)

TEST_F(ReduceLossCuda, ReductionsAndNorms) {
  Shape s = {4, 7, 5};
  int64_t dims[2] = {0, 2};
  for (double pv : {1.0, 2.0, 3.0, static_cast<double>(INFINITY)}) {
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F16), Tensor({7}, AMPC_F32),
                              randomTensor({7}, AMPC_F32), Tensor(s, AMPC_F32)};
    compare(
        ts, {1, 3},
        [&](ampc_context c, const PtrFn &p) {
          TRY(ampc_norm_fwd(c, A(1, ts[1]), A(0, ts[0]), pv, dims, 2, 0));
          return ampc_norm_bwd(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]),
                               A(1, ts[1]), pv, dims, 2, 0);
        },
        1e-4, "norm p=" + std::to_string(pv));
  }
  std::vector<Tensor> ts = {randomTensor(s, AMPC_BF16, -4, 4),
                            Tensor({7}, AMPC_F32), randomTensor({7}, AMPC_F32),
                            Tensor(s, AMPC_F32), Tensor(s, AMPC_F16),
                            Tensor(s, AMPC_F32)};
  compare(
      ts, {1, 3, 4, 5},
      [&](ampc_context c, const PtrFn &p) {
        TRY(ampc_logsumexp_fwd(c, A(1, ts[1]), A(0, ts[0]), dims, 2, 0));
        TRY(ampc_logsumexp_bwd(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]),
                               A(1, ts[1]), dims, 2, 0));
        TRY(ampc_cumsum_fwd(c, A(4, ts[4]), A(0, ts[0]), 1));
        return ampc_cumsum_bwd(c, A(5, ts[5]), A(0, ts[0]), 2);
      },
      2e-3, "logsumexp, cumsum");
}

TEST_F(ReduceLossCuda, GroupNormAndCosine) {
  std::vector<Tensor> ts = {
      randomTensor({3, 6, 5, 2}, AMPC_F16, -2, 2), randomTensor({6}, AMPC_F32),
      randomTensor({6}, AMPC_F32),                Tensor({3, 6, 5, 2}, AMPC_F32),
      randomTensor({3, 6, 5, 2}, AMPC_F32),       Tensor({3, 6, 5, 2}, AMPC_F32),
      Tensor({6}, AMPC_F32),                      Tensor({6}, AMPC_F32)};
  compare(
      ts, {3, 5, 6, 7},
      [&](ampc_context c, const PtrFn &p) {
        TRY(ampc_group_norm_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
                                A(2, ts[2]), 3, 1e-5));
        return ampc_group_norm_bwd(c, A(5, ts[5]), A(6, ts[6]), A(7, ts[7]),
                                   A(4, ts[4]), A(0, ts[0]), A(1, ts[1]), 3,
                                   1e-5);
      },
      2e-3, "group_norm");
  std::vector<Tensor> cs = {randomTensor({4, 9, 3}, AMPC_F32),
                            randomTensor({9, 3}, AMPC_F16),
                            Tensor({4, 3}, AMPC_F32),
                            randomTensor({4, 3}, AMPC_F32),
                            Tensor({4, 9, 3}, AMPC_F32),
                            Tensor({9, 3}, AMPC_F32)};
  compare(
      cs, {2, 4, 5},
      [&](ampc_context c, const PtrFn &p) {
        TRY(ampc_cosine_similarity_fwd(c, A(2, cs[2]), A(0, cs[0]),
                                       A(1, cs[1]), 1, 1e-8));
        return ampc_cosine_similarity_bwd(c, A(4, cs[4]), A(5, cs[5]),
                                          A(3, cs[3]), A(0, cs[0]),
                                          A(1, cs[1]), 1, 1e-8);
      },
      1e-4, "cosine_similarity");
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
            TRY(ampc_kl_div_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]), r,
                                lt));
            TRY(ampc_kl_div_bwd(c, A(4, ts[4]), A(5, ts[5]), A(3, ts[3]),
                                A(0, ts[0]), A(1, ts[1]), r, lt));
          }
          if (r == AMPC_REDUCTION_BATCHMEAN)
            return AMPC_OK;
          TRY(ampc_l1_loss_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]), r));
          TRY(ampc_l1_loss_bwd(c, A(4, ts[4]), A(5, ts[5]), A(3, ts[3]),
                               A(0, ts[0]), A(1, ts[1]), r));
          TRY(ampc_smooth_l1_loss_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]),
                                      0.5, r));
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
        TRY(ampc_nll_loss_fwd(c, A(2, ts[2]), A(0, ts[0]), A(1, ts[1]), -100,
                              AMPC_REDUCTION_MEAN, 0));
        return ampc_nll_loss_bwd(c, A(4, ts[4]), A(3, ts[3]), A(0, ts[0]),
                                 A(1, ts[1]), -100, AMPC_REDUCTION_MEAN);
      },
      1e-5, "nll_loss");
}

} // namespace
