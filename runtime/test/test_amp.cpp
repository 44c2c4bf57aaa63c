//===- test_amp.cpp - Loss scaling, optimizers, random init
//----------------===//
#include "src/philox.h"
#include "test_util.h"

using namespace ampc_test;

namespace {

class Amp : public CpuTest {};

// ------------------------------------------------------------ scale update --

/// aten/src/ATen/native/cuda/AmpKernels.cu, amp_update_scale_cuda_kernel,
/// transcribed (it has no hysteresis, min or max).
void torchUpdateScale(float &scale, int32_t &growthTracker, bool foundInf,
                      float growthFactor, float backoffFactor,
                      int32_t growthInterval) {
  if (foundInf) {
    scale = scale * backoffFactor;
    growthTracker = 0;
  } else {
    int32_t successful = growthTracker + 1;
    if (successful == growthInterval) {
      float newScale = scale * growthFactor;
      if (std::isfinite(newScale))
        scale = newScale;
      growthTracker = 0;
    } else {
      growthTracker = successful;
    }
  }
}

/// Megatron-LM core/optimizer/grad_scaler.py DynamicGradScaler.update,
/// transcribed.
struct MegatronScaler {
  float scale, minScale, growthFactor, backoffFactor;
  int32_t growthInterval, hysteresis, growthTracker = 0, hysteresisTracker;
  void update(bool foundInf) {
    if (foundInf) {
      growthTracker = 0;
      hysteresisTracker -= 1;
      if (hysteresisTracker <= 0)
        scale = std::max(scale * backoffFactor, minScale);
    } else {
      growthTracker += 1;
      if (growthTracker == growthInterval) {
        growthTracker = 0;
        hysteresisTracker = hysteresis;
        scale = scale * growthFactor;
      }
    }
  }
};

TEST_F(Amp, ScaleUpdateMatchesPyTorchOverRandomSequences) {
  std::bernoulli_distribution inf(0.12);
  for (ampc_dtype fdt : {AMPC_F32, AMPC_I32}) {
    for (int32_t interval : {1, 3, 7, 2000}) {
      float scale = 65536.0f, refScale = scale;
      int32_t tracker = 0, hyst = 1, refTracker = 0;
      Tensor flag(Shape{}, fdt);
      for (int step = 0; step < 20000; ++step) {
        bool found = inf(rng());
        flag.set(0, found ? 1.0 : 0.0);
        ASSERT_OK(ampc_update_scale(ctx, &scale, &tracker, &hyst, flag.data(),
                                    fdt, 2.0, 0.5, interval, 1, 0.0, 0.0));
        torchUpdateScale(refScale, refTracker, found, 2.0f, 0.5f, interval);
        ASSERT_EQ(scale, refScale) << "step " << step;
        ASSERT_EQ(tracker, refTracker) << "step " << step;
      }
    }
  }
}

TEST_F(Amp, ScaleUpdateOverflowKeepsScale) {
  float scale = 3e38f;
  int32_t tracker = 0, hyst = 1;
  float found = 0;
  ASSERT_OK(ampc_update_scale(ctx, &scale, &tracker, &hyst, &found, AMPC_F32,
                              2.0, 0.5, 1, 1, 0.0, 0.0));
  EXPECT_EQ(scale, 3e38f); // 6e38 is not finite: no growth
  EXPECT_EQ(tracker, 0);
}

TEST_F(Amp, ScaleUpdateMatchesMegatronHysteresis) {
  std::bernoulli_distribution inf(0.3);
  for (int32_t hysteresis : {2, 3}) {
    MegatronScaler ref{4096.0f, 1.0f, 2.0f, 0.5f, 4, hysteresis};
    ref.hysteresisTracker = hysteresis;
    float scale = ref.scale;
    int32_t tracker = 0, hyst = hysteresis;
    int backoffs = 0, growths = 0;
    for (int step = 0; step < 20000; ++step) {
      bool found = inf(rng());
      float flag = found ? 1.0f : 0.0f;
      float before = scale;
      ASSERT_OK(ampc_update_scale(ctx, &scale, &tracker, &hyst, &flag, AMPC_F32,
                                  2.0, 0.5, 4, hysteresis, 1.0, 0.0));
      ref.update(found);
      ASSERT_TRUE(std::isfinite(ref.scale));
      ASSERT_EQ(scale, ref.scale) << "step " << step;
      ASSERT_EQ(tracker, ref.growthTracker) << "step " << step;
      ASSERT_EQ(hyst, ref.hysteresisTracker) << "step " << step;
      backoffs += scale < before;
      growths += scale > before;
    }
    // The sequence exercised both paths.
    EXPECT_GT(backoffs, 10);
    EXPECT_GT(growths, 10);
  }
}

TEST_F(Amp, ScaleUpdateMinAndMax) {
  float scale = 4.0f;
  int32_t tracker = 0, hyst = 1;
  float yes = 1.0f, no = 0.0f;
  for (int i = 0; i < 5; ++i)
    ASSERT_OK(ampc_update_scale(ctx, &scale, &tracker, &hyst, &yes, AMPC_F32,
                                2.0, 0.5, 2, 1, 1.0, 8.0));
  EXPECT_EQ(scale, 1.0f); // clamped at min_scale
  for (int i = 0; i < 20; ++i)
    ASSERT_OK(ampc_update_scale(ctx, &scale, &tracker, &hyst, &no, AMPC_F32,
                                2.0, 0.5, 2, 1, 1.0, 8.0));
  EXPECT_EQ(scale, 8.0f); // growth stops at max_scale
}

// ----------------------------------------------------- check and unscale --

TEST_F(Amp, CheckFiniteAndUnscale) {
  Tensor g1 = randomTensor({100}, AMPC_F32, -1000, 1000);
  Tensor g2 = randomTensor({33}, AMPC_F16, -1000, 1000);
  Tensor orig1 = g1, orig2 = g2;
  float scale = 1024.0f;
  void *grads[2] = {g1.data(), g2.data()};
  ampc_dtype dts[2] = {AMPC_F32, AMPC_F16};
  int64_t numels[2] = {100, 33};
  for (ampc_dtype fdt : {AMPC_F32, AMPC_I32}) {
    g1 = orig1;
    g2 = orig2;
    grads[0] = g1.data();
    grads[1] = g2.data();
    Tensor flag(Shape{}, fdt);
    flag.set(0, 1); // overwritten
    ASSERT_OK(ampc_check_finite_unscale(ctx, flag.data(), fdt, grads, dts,
                                        numels, 2, &scale));
    EXPECT_EQ(flag.get(0), 0.0);
    for (int i = 0; i < 100; ++i)
      EXPECT_EQ(g1.get(i), static_cast<float>(orig1.get(i)) * (1.0f / 1024));
    for (int i = 0; i < 33; ++i)
      EXPECT_EQ(g2.get(i),
                static_cast<double>(ampc::f16ToF32(ampc::f32ToF16(
                    static_cast<float>(orig2.get(i)) * (1.0f / 1024)))));
    for (double bad : {INFINITY, -INFINITY, NAN}) {
      g2.set(7, bad);
      ASSERT_OK(ampc_check_finite_unscale(ctx, flag.data(), fdt, grads, dts,
                                          numels, 2, &scale));
      EXPECT_EQ(flag.get(0), 1.0);
      g2.set(7, 0);
    }
  }
}

TEST_F(Amp, CheckFiniteAtScaleOneReads16BitPatterns) {
  // A scale of 1 (or none) scales nothing: f16 and bf16 gradients are
  // checked on their bit patterns and left as they are. Every inf and NaN
  // pattern class is found, the largest finite values and subnormals are
  // not, in the vector body and the tail.
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    const uint16_t exp = dt == AMPC_F16 ? 0x7c00 : 0x7f80;
    for (int64_t n : {int64_t(5), int64_t(40000)}) {
      std::vector<uint16_t> g(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        g[i] = static_cast<uint16_t>((i * 7919) & 0xffff) & ~exp; // finite
      g[0] = exp - 1;                                               // max
      g[1] = 0x8001;                                                // subnormal
      std::vector<uint16_t> orig = g;
      void *grads[1] = {g.data()};
      ampc_dtype dts[1] = {dt};
      int64_t numels[1] = {n};
      float one = 1.0f;
      Tensor flag(Shape{}, AMPC_F32);
      for (const float *scale : {static_cast<const float *>(nullptr),
                                 static_cast<const float *>(&one)}) {
        flag.set(0, 1);
        ASSERT_OK(ampc_check_finite_unscale(ctx, flag.data(), AMPC_F32, grads,
                                            dts, numels, 1, scale));
        EXPECT_EQ(flag.get(0), 0.0);
        EXPECT_EQ(g, orig);
        for (uint16_t bad : {exp, uint16_t(exp | 0x8000), uint16_t(exp | 1),
                             uint16_t(0xffff)}) {
          g[n - 1] = bad;
          ASSERT_OK(ampc_check_finite_unscale(ctx, flag.data(), AMPC_F32,
                                              grads, dts, numels, 1, scale));
          EXPECT_EQ(flag.get(0), 1.0) << std::hex << bad;
          g[n - 1] = orig[n - 1];
        }
      }
    }
  }
}

// ------------------------------------------------------------ optimizers --

/// torch.optim.SGD's _single_tensor_sgd for one tensor (dampening 0), in
/// f32 and in torch's op order; `first` mirrors the buffer clone.
void torchSgd(std::vector<float> &p, const std::vector<float> &g,
              std::vector<float> &buf, bool first, float lr, float momentum,
              float wd, bool nesterov) {
  for (size_t i = 0; i < p.size(); ++i) {
    float d = g[i];
    if (wd != 0)
      d = d + wd * p[i]; // grad.add(param, alpha=wd)
    if (momentum != 0) {
      buf[i] = first ? d : buf[i] * momentum + 1.0f * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] = p[i] + (-lr) * d; // param.add_(grad, alpha=-lr)
  }
}

TEST_F(Amp, SgdMatchesPyTorchSteps) {
  for (bool nesterov : {false, true})
    for (double wd : {0.0, 0.01})
      for (double momentum : {0.0, 0.9}) {
        if (nesterov && momentum == 0)
          continue;
        Tensor p = randomTensor({50}, AMPC_F32), buf({50}, AMPC_F32);
        std::vector<float> rp(50), rbuf(50);
        for (int i = 0; i < 50; ++i)
          rp[i] = static_cast<float>(p.get(i));
        for (int step = 0; step < 5; ++step) {
          Tensor g = randomTensor({50}, AMPC_F32);
          std::vector<float> rg(50);
          for (int i = 0; i < 50; ++i)
            rg[i] = static_cast<float>(g.get(i));
          void *ps[1] = {p.data()}, *gs[1] = {g.data()}, *bs[1] = {buf.data()};
          ampc_dtype dt[1] = {AMPC_F32};
          int64_t n[1] = {50};
          ASSERT_OK(ampc_sgd_update(ctx, ps, dt, gs, dt, bs, n, 1, 0.1,
                                    momentum, wd, nesterov, 0.0, nullptr,
                                    AMPC_F32, nullptr));
          torchSgd(rp, rg, rbuf, step == 0, 0.1f, static_cast<float>(momentum),
                   static_cast<float>(wd), nesterov);
          for (int i = 0; i < 50; ++i)
            ASSERT_EQ(static_cast<float>(p.get(i)), rp[i]) << "step " << step;
        }
      }
}

TEST_F(Amp, SgdHandComputed) {
  // p=1, g=0.5, lr=0.1, momentum=0.9, wd=0.1: d = 0.5 + 0.1 = 0.6;
  // step 1: buf = 0.6, p = 1 - 0.06 = 0.94;
  // step 2 (g=0.5): d = 0.5 + 0.094 = 0.594, buf = 0.54 + 0.594 = 1.134,
  // p = 0.94 - 0.1134 = 0.8266.
  float p = 1.0f, g = 0.5f, buf = 0.0f;
  void *ps[1] = {&p}, *gs[1] = {&g}, *bs[1] = {&buf};
  ampc_dtype dt[1] = {AMPC_F32};
  int64_t n[1] = {1};
  ASSERT_OK(ampc_sgd_update(ctx, ps, dt, gs, dt, bs, n, 1, 0.1, 0.9, 0.1, 0,
                            0.0, nullptr, AMPC_F32, nullptr));
  EXPECT_NEAR(p, 0.94, 1e-7);
  ASSERT_OK(ampc_sgd_update(ctx, ps, dt, gs, dt, bs, n, 1, 0.1, 0.9, 0.1, 0,
                            0.0, nullptr, AMPC_F32, nullptr));
  EXPECT_NEAR(buf, 1.134, 1e-6);
  EXPECT_NEAR(p, 0.8266, 1e-6);
}

/// torch.optim.AdamW's _single_tensor_adamw (amsgrad off) for one tensor;
/// Python scalars are doubles, tensors f32.
void torchAdamw(std::vector<float> &p, const std::vector<float> &g,
                std::vector<float> &m, std::vector<float> &v, int step,
                double lr, double b1, double b2, double eps, double wd) {
  double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  double stepSize = lr / bc1, bc2Sqrt = std::sqrt(bc2);
  float w = static_cast<float>(1 - b1);
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = p[i] * static_cast<float>(1 - lr * wd);
    m[i] = m[i] + w * (g[i] - m[i]); // lerp_, weight < 0.5
    v[i] = v[i] * static_cast<float>(b2) +
           static_cast<float>(1 - b2) * g[i] * g[i];
    float denom =
        std::sqrt(v[i]) / static_cast<float>(bc2Sqrt) + static_cast<float>(eps);
    p[i] = p[i] + static_cast<float>(-stepSize) * (m[i] / denom);
  }
}

TEST_F(Amp, AdamwMatchesPyTorchSteps) {
  for (double wd : {0.0, 0.01}) {
    Tensor p = randomTensor({64}, AMPC_F32), m({64}, AMPC_F32),
           v({64}, AMPC_F32);
    int32_t step = 0;
    std::vector<float> rp(64), rm(64), rv(64);
    for (int i = 0; i < 64; ++i)
      rp[i] = static_cast<float>(p.get(i));
    for (int s = 1; s <= 10; ++s) {
      Tensor g = randomTensor({64}, AMPC_F32, -0.1, 0.1);
      std::vector<float> rg(64);
      for (int i = 0; i < 64; ++i)
        rg[i] = static_cast<float>(g.get(i));
      void *ps[1] = {p.data()}, *gs[1] = {g.data()}, *ms[1] = {m.data()},
           *vs[1] = {v.data()};
      ampc_dtype dt[1] = {AMPC_F32};
      int64_t n[1] = {64};
      ASSERT_OK(ampc_adamw_update(ctx, ps, dt, gs, dt, ms, vs, &step, n, 1,
                                  1e-3, 0.9, 0.999, 1e-8, wd, 0.0, nullptr,
                                  AMPC_F32, nullptr));
      EXPECT_EQ(step, s);
      torchAdamw(rp, rg, rm, rv, s, 1e-3, 0.9, 0.999, 1e-8, wd);
      for (int i = 0; i < 64; ++i) {
        ASSERT_EQ(static_cast<float>(p.get(i)), rp[i]) << "step " << s;
        ASSERT_EQ(static_cast<float>(m.get(i)), rm[i]);
        ASSERT_EQ(static_cast<float>(v.get(i)), rv[i]);
      }
    }
  }
}

TEST_F(Amp, AdamwFirstStepIsSignStep) {
  // Bias correction makes step 1 move each weight by lr * g / (|g| + eps).
  float p[2] = {1.0f, -2.0f}, g[2] = {0.25f, -3.0f}, m[2] = {}, v[2] = {};
  int32_t step = 0;
  void *ps[1] = {p}, *gs[1] = {g}, *ms[1] = {m}, *vs[1] = {v};
  ampc_dtype dt[1] = {AMPC_F32};
  int64_t n[1] = {2};
  ASSERT_OK(ampc_adamw_update(ctx, ps, dt, gs, dt, ms, vs, &step, n, 1, 0.01,
                              0.9, 0.999, 1e-8, 0.0, 0.0, nullptr, AMPC_F32, nullptr));
  EXPECT_NEAR(p[0], 0.99, 1e-6);
  EXPECT_NEAR(p[1], -1.99, 1e-6);
}

TEST_F(Amp, FoundInfLeavesEverythingBitIdentical) {
  for (ampc_dtype fdt : {AMPC_F32, AMPC_I32}) {
    Tensor flag(Shape{}, fdt);
    flag.set(0, 1);
    Tensor p = randomTensor({40}, AMPC_F32), g = randomTensor({40}, AMPC_F16);
    Tensor m = randomTensor({40}, AMPC_F32),
           v = randomTensor({40}, AMPC_F32, 0, 1);
    Tensor p0 = p, g0 = g, m0 = m, v0 = v;
    int32_t step = 7;
    void *ps[1] = {p.data()}, *gs[1] = {g.data()}, *ms[1] = {m.data()},
         *vs[1] = {v.data()};
    ampc_dtype pdt[1] = {AMPC_F32}, gdt[1] = {AMPC_F16};
    int64_t n[1] = {40};
    ASSERT_OK(ampc_adamw_update(ctx, ps, pdt, gs, gdt, ms, vs, &step, n, 1,
                                1e-3, 0.9, 0.999, 1e-8, 0.01, 0.5, flag.data(),
                                fdt, nullptr));
    ASSERT_OK(ampc_sgd_update(ctx, ps, pdt, gs, gdt, ms, n, 1, 0.1, 0.9, 0.01,
                              1, 0.5, flag.data(), fdt, nullptr));
    float norm = -1;
    ASSERT_OK(
        ampc_clip_grad_norm(ctx, &norm, gs, gdt, n, 1, 1e-3, flag.data(), fdt));
    EXPECT_EQ(step, 7);
    EXPECT_EQ(norm, -1.0f);
    EXPECT_EQ(p.bytes, p0.bytes);
    EXPECT_EQ(g.bytes, g0.bytes);
    EXPECT_EQ(m.bytes, m0.bytes);
    EXPECT_EQ(v.bytes, v0.bytes);
    // With the flag clear the same calls do move the parameters.
    flag.set(0, 0);
    ASSERT_OK(ampc_sgd_update(ctx, ps, pdt, gs, gdt, ms, n, 1, 0.1, 0.9, 0.01,
                              1, 0.0, flag.data(), fdt, nullptr));
    EXPECT_NE(p.bytes, p0.bytes);
  }
}

TEST_F(Amp, ClipGradNorm) {
  Tensor a = randomTensor({30}, AMPC_F32, -2, 2),
         b = randomTensor({20}, AMPC_BF16, -2, 2);
  double sq = 0;
  for (double x : a.values())
    sq += x * x;
  for (double x : b.values())
    sq += x * x;
  double total = std::sqrt(sq);
  Tensor a0 = a, b0 = b;
  void *gs[2] = {a.data(), b.data()};
  ampc_dtype dts[2] = {AMPC_F32, AMPC_BF16};
  int64_t n[2] = {30, 20};
  float norm = 0;
  // Below the limit: coefficient clamps to 1 (grads unchanged).
  ASSERT_OK(
      ampc_clip_grad_norm(ctx, &norm, gs, dts, n, 2, 1e6, nullptr, AMPC_F32));
  EXPECT_NEAR(norm, total, 1e-5 * total);
  EXPECT_EQ(a.bytes, a0.bytes);
  // Above: scaled by max_norm / (total + 1e-6).
  ASSERT_OK(
      ampc_clip_grad_norm(ctx, &norm, gs, dts, n, 2, 1.0, nullptr, AMPC_F32));
  float coef = static_cast<float>(1.0f / (static_cast<float>(total) + 1e-6f));
  for (int i = 0; i < 30; ++i)
    EXPECT_NEAR(a.get(i), a0.get(i) * coef, 1e-6);
  double sq2 = 0;
  for (double x : a.values())
    sq2 += x * x;
  for (double x : b.values())
    sq2 += x * x;
  EXPECT_NEAR(std::sqrt(sq2), 1.0, 1e-2); // bf16 rounding of b
}

// 16-bit gradients over several of the backend's chunks: the norm is the
// f64 sum of the widened values' squares in the documented order
// (clipNormSquares), and each clipped value is v * coef rounded once to its
// type, bit for bit; below the limit nothing is written.
TEST_F(Amp, ClipGradNorm16BitExact) {
  for (ampc_dtype dt : {AMPC_F16, AMPC_BF16}) {
    SCOPED_TRACE(dt == AMPC_F16 ? "f16" : "bf16");
    Tensor a = randomTensor({3001}, dt, -3, 3),
           b = randomTensor({1500}, AMPC_F32, -1, 1);
    float total = static_cast<float>(
        std::sqrt(clipNormSquares({a.values(), b.values()})));
    Tensor a0 = a;
    void *gs[2] = {a.data(), b.data()};
    ampc_dtype dts[2] = {dt, AMPC_F32};
    int64_t n[2] = {3001, 1500};
    float norm = 0;
    ASSERT_OK(ampc_clip_grad_norm(ctx, &norm, gs, dts, n, 2, 1e6, nullptr,
                                  AMPC_F32));
    EXPECT_EQ(norm, total);
    EXPECT_EQ(a.bytes, a0.bytes);
    ASSERT_OK(ampc_clip_grad_norm(ctx, &norm, gs, dts, n, 2, 2.0, nullptr,
                                  AMPC_F32));
    float coef = 2.0f / (total + 1e-6f);
    for (int64_t i = 0; i < 3001; ++i) {
      float v = static_cast<float>(a0.get(i)) * coef;
      double want = dt == AMPC_F16
                        ? ampc::f16ToF32(ampc::f32ToF16(v))
                        : ampc::bf16ToF32(ampc::f32ToBf16(v));
      ASSERT_EQ(a.get(i), want) << "element " << i;
    }
  }
}

// ------------------------------------------------------------ random init --

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32-10.
  ampc::Philox4 r = ampc::philox4x32_10(0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = ampc::philox4x32_10(~0ull, ~0ull, ~0ull);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = ampc::philox4x32_10(0x85a308d3243f6a88ull, 0x0370734413198a2eull,
                          0x299f31d0a4093822ull);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST_F(Amp, RandomInitIsDeterministicAndDistributed) {
  const int64_t n = 200000;
  Tensor u1({n}, AMPC_F32), u2({n}, AMPC_F32), z({n}, AMPC_F32),
      z2({n}, AMPC_F32), h({n}, AMPC_BF16);
  ASSERT_OK(ampc_init_uniform(ctx, u1.data(), AMPC_F32, n, 42, 0, -1, 3));
  ASSERT_OK(ampc_init_uniform(ctx, u2.data(), AMPC_F32, n, 42, 0, -1, 3));
  EXPECT_EQ(u1.bytes, u2.bytes);
  ASSERT_OK(ampc_init_uniform(ctx, u2.data(), AMPC_F32, n, 42, 1, -1, 3));
  EXPECT_NE(u1.bytes, u2.bytes);
  ASSERT_OK(ampc_init_normal(ctx, z.data(), AMPC_F32, n, 7, 0, 0.5, 2.0));
  ASSERT_OK(ampc_init_normal(ctx, z2.data(), AMPC_F32, n, 7, 0, 0.5, 2.0));
  EXPECT_EQ(z.bytes, z2.bytes);
  ASSERT_OK(ampc_init_normal(ctx, h.data(), AMPC_BF16, n, 7, 0, 0.5, 2.0));
  double su = 0, sz = 0, szz = 0, umin = 1e9, umax = -1e9;
  for (int64_t i = 0; i < n; ++i) {
    double u = u1.get(i), v = z.get(i);
    su += u;
    umin = std::min(umin, u);
    umax = std::max(umax, u);
    sz += v;
    szz += v * v;
    // The bf16 stream is the f32 stream rounded.
    ASSERT_EQ(h.get(i), static_cast<double>(ampc::bf16ToF32(
                            ampc::f32ToBf16(static_cast<float>(v)))));
  }
  EXPECT_NEAR(su / n, 1.0, 0.02);
  EXPECT_GE(umin, -1.0);
  EXPECT_LT(umax, 3.0);
  double mean = sz / n, var = szz / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.02);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.02);
}

} // namespace
