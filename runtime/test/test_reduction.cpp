//===- test_reduction.cpp - fp32-list reductions and norms ---------------===//
//
// The composed kernels of runtime/src/api_reduction.cpp and api_norm.cpp
// (logsumexp, norm, cumsum, group_norm, cosine_similarity): edge cases on
// the CPU backend against values worked out by hand and argument errors;
// then every entry point on the CUDA backend against the CPU backend
// (skipped without a GPU). The losses are test_loss.cpp's. The broad value
// checks against PyTorch are the lit suite's (test/Ops/reduce-loss-ops.test).
//
//===----------------------------------------------------------------------===//
#include "cuda_test_util.h"

#include <cmath>

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

//===----------------------------------------------------------------------===//
// CUDA against CPU
//===----------------------------------------------------------------------===//

TEST_F(ReduceLossCuda, ReductionsAndNorms) {
  Shape s = {4, 7, 5};
  int64_t dims[2] = {0, 2};
  for (double pv : {1.0, 2.0, 3.0, static_cast<double>(INFINITY)}) {
    std::vector<Tensor> ts = {randomTensor(s, AMPC_F16), Tensor({7}, AMPC_F32),
                              randomTensor({7}, AMPC_F32), Tensor(s, AMPC_F32)};
    compare(
        ts, {1, 3},
        [&](ampc_context c, const PtrFn &p) {
          AMPC_TRY(ampc_norm_fwd(c, A(1, ts[1]), A(0, ts[0]), pv, dims, 2, 0));
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
        AMPC_TRY(ampc_logsumexp_fwd(c, A(1, ts[1]), A(0, ts[0]), dims, 2, 0));
        AMPC_TRY(ampc_logsumexp_bwd(c, A(3, ts[3]), A(2, ts[2]), A(0, ts[0]),
                                    A(1, ts[1]), dims, 2, 0));
        AMPC_TRY(ampc_cumsum_fwd(c, A(4, ts[4]), A(0, ts[0]), 1));
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
        AMPC_TRY(ampc_group_norm_fwd(c, A(3, ts[3]), A(0, ts[0]), A(1, ts[1]),
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
        AMPC_TRY(ampc_cosine_similarity_fwd(c, A(2, cs[2]), A(0, cs[0]),
                                            A(1, cs[1]), 1, 1e-8));
        return ampc_cosine_similarity_bwd(c, A(4, cs[4]), A(5, cs[5]),
                                          A(3, cs[3]), A(0, cs[0]),
                                          A(1, cs[1]), 1, 1e-8);
      },
      1e-4, "cosine_similarity");
}

} // namespace
