//===- test_sync_batch_norm.cpp - batch norm over ranks, one rank ---------===//
//
// ampc_sync_batch_norm_fwd/_bwd/_update on a context with no communicator
// attached are the one-rank entry points bit for bit (training and not).
// Their results over several ranks are tested end to end under mpirun
// (test/Distributed/sync-batchnorm.test, sync-batchnorm-f64.test).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace ampc_test;

namespace {

using SyncBatchNormTest = CpuTest;

bool sameBits(Tensor &a, Tensor &b) {
  return a.bytes.size() == b.bytes.size() &&
         std::memcmp(a.data(), b.data(), a.bytes.size()) == 0;
}

TEST_F(SyncBatchNormTest, WithoutACommunicatorIsTheOneRankKernel) {
  ampc_comm comm = reinterpret_cast<ampc_comm>(0x1);
  ASSERT_OK(ampc_context_get_comm(ctx, &comm));
  ASSERT_EQ(comm, nullptr);
  const int64_t n = 4, c = 3, l = 5;
  Tensor x = randomTensor({n, c, l}, AMPC_F32, -2, 3);
  Tensor dy = randomTensor({n, c, l}, AMPC_F32);
  Tensor w = randomTensor({c}, AMPC_F32, 0.5, 1.5);
  Tensor b = randomTensor({c}, AMPC_F32);
  Tensor rm = randomTensor({c}, AMPC_F32);
  Tensor rv = randomTensor({c}, AMPC_F32, 0.5, 2);
  for (int training : {1, 0}) {
    Tensor y1({n, c, l}, AMPC_F32), y2({n, c, l}, AMPC_F32);
    ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y1), T(x), T(w), T(b), T(rm), T(rv),
                                  training, 1e-5));
    ASSERT_OK(ampc_sync_batch_norm_fwd(ctx, T(y2), T(x), T(w), T(b), T(rm),
                                       T(rv), training, 1e-5));
    EXPECT_TRUE(sameBits(y1, y2)) << "training " << training;
    Tensor dx1({n, c, l}, AMPC_F32), dx2({n, c, l}, AMPC_F32);
    Tensor dw1({c}, AMPC_F32), dw2({c}, AMPC_F32), db1({c}, AMPC_F32),
        db2({c}, AMPC_F32);
    ASSERT_OK(ampc_batch_norm_bwd(ctx, T(dx1), T(dw1), T(db1), T(dy), T(x),
                                  T(w), T(rm), T(rv), training, 1e-5));
    ASSERT_OK(ampc_sync_batch_norm_bwd(ctx, T(dx2), T(dw2), T(db2), T(dy),
                                       T(x), T(w), T(rm), T(rv), training,
                                       1e-5));
    EXPECT_TRUE(sameBits(dx1, dx2)) << "training " << training;
    EXPECT_TRUE(sameBits(dw1, dw2)) << "training " << training;
    EXPECT_TRUE(sameBits(db1, db2)) << "training " << training;
  }
  Tensor m1({c}, AMPC_F32), m2({c}, AMPC_F32), v1({c}, AMPC_F32),
      v2({c}, AMPC_F32);
  ASSERT_OK(ampc_batch_norm_update(ctx, T(m1), T(v1), T(x), T(rm), T(rv), 0.1));
  ASSERT_OK(
      ampc_sync_batch_norm_update(ctx, T(m2), T(v2), T(x), T(rm), T(rv), 0.1));
  EXPECT_TRUE(sameBits(m1, m2));
  EXPECT_TRUE(sameBits(v1, v2));
}

TEST_F(SyncBatchNormTest, BadArgumentsFailAsTheOneRankKernel) {
  Tensor x = randomTensor({4, 3}, AMPC_F32);
  Tensor w = randomTensor({2}, AMPC_F32);
  Tensor y({4, 3}, AMPC_F32);
  EXPECT_EQ(ampc_sync_batch_norm_fwd(ctx, T(y), T(x), T(w), T(w), T(w), T(w),
                                     1, 1e-5),
            AMPC_ERROR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(ampc_last_error()).find("ampc_batch_norm_fwd"),
            std::string::npos);
}

TEST_F(SyncBatchNormTest, F64ComputesInF64AgainstANaiveReference) {
  // x (N=3, C=2, inner=2): channel 0 holds 1 + k 2^-30 (deviations an f32
  // cannot hold), channel 1 ordinary values; eps and momentum are not f32
  // values.
  const int64_t n = 3, c = 2, l = 2, m = n * l;
  const double e = std::ldexp(1.0, -30), eps = 1e-7, momentum = 0.3;
  auto xv = [&](int64_t s, int64_t ch, int64_t j) {
    int64_t k = s * l + j;
    return ch == 0 ? 1.0 + double(k) * e : 0.5 * double(k * k) - 1.25;
  };
  auto dyv = [&](int64_t s, int64_t ch, int64_t j) {
    return 0.375 * double((s * c + ch) * l + j) - 1.0;
  };
  Tensor x({n, c, l}, AMPC_F64), dy({n, c, l}, AMPC_F64);
  auto *px = static_cast<double *>(x.data());
  auto *pdy = static_cast<double *>(dy.data());
  for (int64_t s = 0; s < n; ++s)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < l; ++j) {
        px[(s * c + ch) * l + j] = xv(s, ch, j);
        pdy[(s * c + ch) * l + j] = dyv(s, ch, j);
      }
  Tensor w({c}, AMPC_F64), b({c}, AMPC_F64), rm({c}, AMPC_F64),
      rv({c}, AMPC_F64);
  const double wv[] = {1.5, -0.75}, bv[] = {0.1, 2.0}, rmv[] = {1.0, -0.5},
               rvv[] = {4.0, 0.3};
  for (int64_t ch = 0; ch < c; ++ch) {
    static_cast<double *>(w.data())[ch] = wv[ch];
    static_cast<double *>(b.data())[ch] = bv[ch];
    static_cast<double *>(rm.data())[ch] = rmv[ch];
    static_cast<double *>(rv.data())[ch] = rvv[ch];
  }
  Tensor y({n, c, l}, AMPC_F64), dx({n, c, l}, AMPC_F64), dw({c}, AMPC_F64),
      db({c}, AMPC_F64), nm({c}, AMPC_F64), nv({c}, AMPC_F64);
  ASSERT_OK(ampc_sync_batch_norm_fwd(ctx, T(y), T(x), T(w), T(b), T(rm),
                                     T(rv), 1, eps));
  ASSERT_OK(ampc_sync_batch_norm_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x),
                                     T(w), T(rm), T(rv), 1, eps));
  ASSERT_OK(ampc_sync_batch_norm_update(ctx, T(nm), T(nv), T(x), T(rm),
                                        T(rv), momentum));
  auto d = [](Tensor &t, int64_t i) {
    return static_cast<double *>(t.data())[i];
  };
  for (int64_t ch = 0; ch < c; ++ch) {
    // The textbook formulas, in f64.
    double mean = 0, var = 0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < l; ++j)
        mean += xv(s, ch, j);
    mean /= double(m);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < l; ++j)
        var += (xv(s, ch, j) - mean) * (xv(s, ch, j) - mean);
    var /= double(m);
    double invstd = 1.0 / std::sqrt(var + eps);
    double sumDy = 0, sumDyXhat = 0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < l; ++j) {
        sumDy += dyv(s, ch, j);
        sumDyXhat += dyv(s, ch, j) * (xv(s, ch, j) - mean) * invstd;
      }
    // Within 1e-12 relative (invstd is ~3e3 on channel 0, dx ~1e4): f32
    // anywhere on the way misses by more than 1e-8.
    auto tol = [](double want) {
      return 1e-12 * std::max(1.0, std::fabs(want));
    };
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < l; ++j) {
        int64_t i = (s * c + ch) * l + j;
        double xhat = (xv(s, ch, j) - mean) * invstd;
        double wantY = xhat * wv[ch] + bv[ch];
        EXPECT_NEAR(d(y, i), wantY, tol(wantY)) << ch << "," << i;
        double want = wv[ch] * invstd *
                      (dyv(s, ch, j) - sumDy / double(m) -
                       xhat * sumDyXhat / double(m));
        EXPECT_NEAR(d(dx, i), want, tol(want)) << ch << "," << i;
      }
    EXPECT_NEAR(d(dw, ch), sumDyXhat, tol(sumDyXhat)) << ch;
    EXPECT_NEAR(d(db, ch), sumDy, tol(sumDy)) << ch;
    double wantM = (1 - momentum) * rmv[ch] + momentum * mean;
    double wantV = (1 - momentum) * rvv[ch] +
                   momentum * var * double(m) / double(m - 1);
    EXPECT_NEAR(d(nm, ch), wantM, tol(wantM)) << ch;
    EXPECT_NEAR(d(nv, ch), wantV, tol(wantV)) << ch;
  }
  // Through f32, channel 0's values would all round to 1: y to exactly b.
  EXPECT_NE(d(y, 0), bv[0]);
  EXPECT_NE(d(y, 0), d(y, 1));
}

} // namespace
