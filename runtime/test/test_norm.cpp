//===- test_norm_dropout.cpp - batch norm and dropout kernels -------------===//
//
// ampc_batch_norm_fwd/_bwd/_update against formulas computed here in f64
// (and the backward against finite differences of the forward), the dropout
// mask's statistics and determinism, and the CUDA backend against the CPU
// backend (bit-identical dropout masks; skipped without a usable GPU).
//
//===----------------------------------------------------------------------===//
#include "src/dropout_ops.h"
#include "src/norm_ops.h"
#include "test_util.h"

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

/// The CUDA backend computes what the CPU backend computes.
class NormDropoutCuda : public ::testing::Test {
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
  /// Copies of `ts` on the GPU; `run` gets the pointer of tensor i.
  std::vector<void *> upload(std::vector<Tensor> &ts) {
    std::vector<void *> dev(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_OK(ampc_malloc(gpu, ts[i].bytes.size(), &dev[i]));
      EXPECT_OK(ampc_memcpy(gpu, dev[i], ts[i].bytes.data(),
                            ts[i].bytes.size(), AMPC_MEMCPY_HOST_TO_DEVICE));
    }
    return dev;
  }
  Tensor download(void *p, const Tensor &like) {
    Tensor t = like;
    EXPECT_OK(ampc_memcpy(gpu, t.data(), p, t.bytes.size(),
                          AMPC_MEMCPY_DEVICE_TO_HOST));
    return t;
  }
  /// batch_norm forward, backward and update on both backends over x of
  /// [n, c, l] in `xt` (y, dy, dx in `yt`; parameters and statistics in
  /// f32), in training and inference; the outputs must agree to `tol`.
  void batchNormOnBoth(int64_t n, int64_t c, int64_t l, ampc_dtype xt,
                       ampc_dtype yt, double tol) {
    std::vector<Tensor> ts = {
        randomTensor({n, c, l}, xt),        randomTensor({c}, AMPC_F32),
        randomTensor({c}, AMPC_F32),        randomTensor({c}, AMPC_F32),
        randomTensor({c}, AMPC_F32, 0.5, 2), Tensor({n, c, l}, yt),
        randomTensor({n, c, l}, yt),        Tensor({n, c, l}, yt),
        Tensor({c}, AMPC_F32),              Tensor({c}, AMPC_F32),
        Tensor({c}, AMPC_F32),              Tensor({c}, AMPC_F32)};
    std::vector<void *> dev = upload(ts);
    for (int training : {1, 0}) {
      for (ampc_context ctx : {cpu, gpu}) {
        auto P = [&](int i) { return ctx == cpu ? ts[i].data() : dev[i]; };
#define B(i) P(i), ts[i].dtype, ts[i].dims(), ts[i].rank()
        ASSERT_OK(ampc_batch_norm_fwd(ctx, B(5), B(0), B(1), B(2), B(3), B(4),
                                      training, 1e-5));
        ASSERT_OK(ampc_batch_norm_bwd(ctx, B(7), B(8), B(9), B(6), B(0), B(1),
                                      B(3), B(4), training, 1e-5));
        ASSERT_OK(ampc_batch_norm_update(ctx, B(10), B(11), B(0), B(3), B(4),
                                         0.1));
#undef B
      }
      for (int o : {5, 7, 8, 9, 10, 11})
        expectClose(download(dev[o], ts[o]).values(), ts[o].values(), tol,
                    1e-6, "output " + std::to_string(o));
    }
    for (void *p : dev)
      ampc_free(gpu, p);
  }
  ampc_context gpu = nullptr, cpu = nullptr;
};

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
