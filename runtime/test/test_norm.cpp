//===- test_norm.cpp - batch norm kernels ---------------------------------===//
//
// ampc_batch_norm_fwd/_bwd/_update against formulas computed here in f64
// (and the backward against finite differences of the forward), and the
// CUDA backend against the CPU backend (skipped without a usable GPU).
//
//===----------------------------------------------------------------------===//
#include "src/norm_ops.h"
#include "cuda_test_util.h"

#include <cmath>

using namespace ampc_test;

namespace {

using BatchNormTest = CpuTest;

/// (N, C, L) = (4, 3, 5): per-channel mean, biased and unbiased variance.
struct Stats {
  std::vector<double> mean, var, unbiased;
};
Stats channelStats(const Tensor &x, int64_t n, int64_t c, int64_t l) {
  Stats s{std::vector<double>(c), std::vector<double>(c),
          std::vector<double>(c)};
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < l; ++j)
        sum += x.get((i * c + ch) * l + j);
    double m = sum / (n * l);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < l; ++j) {
        double d = x.get((i * c + ch) * l + j) - m;
        sq += d * d;
      }
    s.mean[ch] = m;
    s.var[ch] = sq / (n * l);
    s.unbiased[ch] = sq / (n * l - 1);
  }
  return s;
}

// The CPU backend widens a block of channels of a 16-bit tensor into f32
// a piece at a time (pieces that end inside channels and inside samples):
// every output has the bits of the shared per-element code
// (norm_ops.h) run on the 16-bit tensors themselves.
TEST_F(BatchNormTest, SixteenBitBitsOfThePerElementCode) {
  struct Geom {
    int64_t n, c, l;
  };
  const float eps = static_cast<float>(1e-5), momentum = 0.1f;
  for (Geom s : {Geom{3, 5, 1001}, Geom{2051, 3, 1}, Geom{5, 700, 3}}) {
    for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
      SCOPED_TRACE(::testing::Message()
                   << (dt == AMPC_F16 ? "f16 " : "bf16 ") << s.n << "x" << s.c
                   << "x" << s.l);
      ampc::BnGeom g{s.n, s.c, s.l};
      Tensor x = randomTensor({s.n, s.c, s.l}, dt, -2, 3);
      Tensor dy = randomTensor({s.n, s.c, s.l}, dt, -1, 1);
      Tensor w = randomTensor({s.c}, dt, 0.5, 1.5), b = randomTensor({s.c}, dt);
      Tensor rm = randomTensor({s.c}, dt), rv = randomTensor({s.c}, dt, 0.5, 2);
      auto buf = [](Tensor &t) { return ampc::Buf{t.data(), t.dtype}; };
      for (int training : {1, 0}) {
        Tensor y({s.n, s.c, s.l}, dt), want = y;
        ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(b), T(rm),
                                      T(rv), training, 1e-5));
        for (int64_t ch = 0; ch < s.c; ++ch)
          ampc::bnForwardChannel(buf(want), buf(x), buf(w), buf(b), buf(rm),
                                 buf(rv), training, g, ch, eps);
        EXPECT_TRUE(y.bytes == want.bytes) << "forward, training " << training;

        Tensor dx({s.n, s.c, s.l}, dt), dw({s.c}, dt), db({s.c}, dt);
        Tensor wdx = dx, wdw = dw, wdb = db;
        ASSERT_OK(ampc_batch_norm_bwd(ctx, T(dx), T(dw), T(db), T(dy), T(x),
                                      T(w), T(rm), T(rv), training, 1e-5));
        for (int64_t ch = 0; ch < s.c; ++ch)
          ampc::bnBackwardChannel(buf(wdx), buf(wdw), buf(wdb), buf(dy), buf(x),
                                  buf(w), buf(rm), buf(rv), training, g, ch,
                                  eps);
        EXPECT_TRUE(dx.bytes == wdx.bytes) << "dx, training " << training;
        EXPECT_TRUE(dw.bytes == wdw.bytes) << "dw, training " << training;
        EXPECT_TRUE(db.bytes == wdb.bytes) << "db, training " << training;
      }
      Tensor nm({s.c}, dt), nv({s.c}, dt), wnm = nm, wnv = nv;
      ASSERT_OK(
          ampc_batch_norm_update(ctx, T(nm), T(nv), T(x), T(rm), T(rv), 0.1));
      for (int64_t ch = 0; ch < s.c; ++ch)
        ampc::bnUpdateChannel(buf(wnm), buf(wnv), buf(x), buf(rm), buf(rv), g,
                              ch, momentum);
      EXPECT_TRUE(nm.bytes == wnm.bytes);
      EXPECT_TRUE(nv.bytes == wnv.bytes);
    }
  }
}

TEST_F(BatchNormTest, ForwardAndUpdateMatchTheFormulas) {
  const int64_t n = 4, c = 3, l = 5;
  Tensor x = randomTensor({n, c, l}, AMPC_F32, -2, 3);
  Tensor w = randomTensor({c}, AMPC_F32, 0.5, 1.5);
  Tensor b = randomTensor({c}, AMPC_F32);
  Tensor rm = randomTensor({c}, AMPC_F32);
  Tensor rv = randomTensor({c}, AMPC_F32, 0.5, 2);
  Tensor y({n, c, l}, AMPC_F32), nm({c}, AMPC_F32), nv({c}, AMPC_F32);
  Stats s = channelStats(x, n, c, l);
  for (int training : {1, 0}) {
    ASSERT_OK(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(b), T(rm), T(rv),
                                  training, 1e-5));
    Vec want(y.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < l; ++j) {
          int64_t k = (i * c + ch) * l + j;
          double m = training ? s.mean[ch] : rm.get(ch);
          double v = training ? s.var[ch] : rv.get(ch);
          want[k] = (x.get(k) - m) / std::sqrt(v + 1e-5) * w.get(ch) + b.get(ch);
        }
    expectClose(y.values(), want, 1e-5, 1e-6,
                training ? "batch statistics" : "running statistics");
  }
  ASSERT_OK(ampc_batch_norm_update(ctx, T(nm), T(nv), T(x), T(rm), T(rv), 0.1));
  Vec wantMean(c), wantVar(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    wantMean[ch] = 0.9 * rm.get(ch) + 0.1 * s.mean[ch];
    wantVar[ch] = 0.9 * rv.get(ch) + 0.1 * s.unbiased[ch];
  }
  expectClose(nm.values(), wantMean, 1e-6, 1e-7, "running mean");
  expectClose(nv.values(), wantVar, 1e-6, 1e-7, "running variance (unbiased)");
}

TEST_F(BatchNormTest, BackwardMatchesFiniteDifferences) {
  const int64_t n = 3, c = 2, l = 4;
  Tensor x = randomTensor({n, c, l}, AMPC_F32, -2, 2);
  Tensor w = randomTensor({c}, AMPC_F32, 0.5, 1.5);
  Tensor b = randomTensor({c}, AMPC_F32);
  Tensor rm = randomTensor({c}, AMPC_F32);
  Tensor rv = randomTensor({c}, AMPC_F32, 0.5, 2);
  Tensor r = randomTensor({n, c, l}, AMPC_F32); // loss = sum(y * r)
  for (int training : {1, 0}) {
    Tensor dx({n, c, l}, AMPC_F32), dw({c}, AMPC_F32), db({c}, AMPC_F32);
    ASSERT_OK(ampc_batch_norm_bwd(ctx, T(dx), T(dw), T(db), T(r), T(x), T(w),
                                  T(rm), T(rv), training, 1e-5));
    auto loss = [&](Tensor &xv, Tensor &wv, Tensor &bv) {
      Tensor y({n, c, l}, AMPC_F32);
      EXPECT_OK(ampc_batch_norm_fwd(ctx, T(y), T(xv), T(wv), T(bv), T(rm),
                                    T(rv), training, 1e-5));
      double sum = 0;
      for (int64_t i = 0; i < y.size(); ++i)
        sum += y.get(i) * r.get(i);
      return sum;
    };
    auto numeric = [&](Tensor &t) {
      Vec g(t.size());
      for (int64_t i = 0; i < t.size(); ++i) {
        double v = t.get(i), h = 1e-2;
        t.set(i, v + h);
        double up = loss(x, w, b);
        t.set(i, v - h);
        double down = loss(x, w, b);
        t.set(i, v);
        g[i] = (up - down) / (2 * h);
      }
      return g;
    };
    std::string mode = training ? "training" : "eval";
    expectClose(dx.values(), numeric(x), 2e-2, 2e-3, mode + " dx");
    expectClose(dw.values(), numeric(w), 2e-2, 2e-3, mode + " dw");
    expectClose(db.values(), numeric(b), 2e-2, 2e-3, mode + " db");
  }
}

TEST_F(BatchNormTest, RefusesOneValuePerChannelAndBadShapes) {
  Tensor x = randomTensor({1, 3}, AMPC_F32), y({1, 3}, AMPC_F32);
  Tensor w = randomTensor({3}, AMPC_F32), v4({4}, AMPC_F32);
  EXPECT_EQ(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(w), T(w), T(w), 1,
                                1e-5),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ampc_last_error()).find("more than one value"),
            std::string::npos);
  EXPECT_OK(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(w), T(w), T(w), 0,
                                1e-5));
  EXPECT_EQ(ampc_batch_norm_fwd(ctx, T(y), T(x), T(w), T(w), T(v4), T(w), 0,
                                1e-5),
            AMPC_ERROR_SHAPE_MISMATCH);
}

TEST_F(NormDropoutCuda, BatchNormMatchesTheCpu) {
  // f16 activations into f32 outputs and gradients.
  batchNormOnBoth(8, 5, 33, AMPC_F16, AMPC_F32, 1e-5);
}

// At a ResNet-like size the statistics are sums over 32 * 56 * 56 values
// per channel, split over a block of threads on the GPU (one thread per
// channel before): the same results as the CPU's in-order sums, in
// training and inference, with f32 and f16 activations and gradients.
TEST_F(NormDropoutCuda, BatchNormAtConvSizes) {
  batchNormOnBoth(32, 64, 56 * 56, AMPC_F32, AMPC_F32, 1e-5);
  batchNormOnBoth(32, 64, 56 * 56, AMPC_F16, AMPC_F16, 2e-3); // an f16 ulp
}

} // namespace
