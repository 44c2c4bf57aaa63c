//===- test_low_update.cpp - Updates of 16-bit params ---------------------===//
//
// docs/optimizer.md "Updates of 16-bit params": stochastic rounding rounds
// away from zero with probability (discarded bits) / 2^bits exactly (counted
// over every value of the random word's bits that matter), its mean over
// many draws is the f32 value, the same seed gives the same bits, Kahan
// compensation keeps updates that round-to-nearest loses, and bf16
// optimizer state follows the f32 state closely. Through the C ABI
// (ampc_sgd_update_low, ampc_adamw_update_low) on the CPU backend, and the
// CUDA backend against it bit for bit where a GPU is present.
//
//===----------------------------------------------------------------------===//

#include "cuda_test_util.h"
#include "test_util.h"

#include "../src/low_update.h"

#include <cmath>
#include <cstring>

using namespace ampc_test;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16: over all 2^16 values of the word's low half, exactly `discarded`
// of them round away from zero, and the two results are the neighbours.
TEST(LowUpdateRounding, Bf16ProbabilityIsExact) {
  const uint32_t cases[] = {
      0x3f804000u, // 1.0 + a quarter ulp: P = 1/4
      0xbf80c001u, // negative: magnitude rounds away with P = 0xc001/2^16
      0x3f80ffffu, // P = 65535/65536
      0x3f810000u, // representable: never moves
      0x00001234u, // f32 subnormal
      0x7f7f8000u, // the largest finite bf16 + half an ulp: away is inf
      0x3f800001u, // the smallest discarded part: P = 1/65536
  };
  for (uint32_t x : cases) {
    uint32_t low = x & 0xffffu;
    uint16_t down = static_cast<uint16_t>(x >> 16);
    uint16_t up = static_cast<uint16_t>(down + 1);
    uint32_t away = 0;
    for (uint32_t r = 0; r < 65536; ++r) {
      // The high half of the word is ignored.
      uint16_t b = ampc::f32ToBf16Stochastic(floatOf(x), r | (r * 7u << 16));
      ASSERT_TRUE(b == down || b == up) << std::hex << x;
      away += b == up;
    }
    EXPECT_EQ(away, low) << "bits 0x" << std::hex << x;
  }
  // inf and NaN are converted as round-to-nearest converts them.
  EXPECT_EQ(ampc::f32ToBf16Stochastic(INFINITY, 0), 0x7f80u);
  EXPECT_EQ(ampc::f32ToBf16Stochastic(-INFINITY, 0xffffffffu), 0xff80u);
  EXPECT_EQ(ampc::f32ToBf16Stochastic(NAN, 0),
            ampc::f32ToBf16(NAN));
}

// f16: 13 discarded bits for a normal result (the word's top 13 bits
// decide), 14 to 24 for subnormal ones; counted over those bits.
TEST(LowUpdateRounding, F16ProbabilityIsExact) {
  struct Case {
    float v;
    uint32_t k; // discarded bits
  };
  const Case cases[] = {
      {1.0f + 3.0f / 8192.0f / 1024.0f * 1024.0f, 13}, // normal
      {-0.3f, 13},
      {1.0e-5f, 0}, // subnormal f16 (k computed below)
      {-3.0e-7f, 0},
      {65519.0f, 13}, // rounds away to inf with its probability
  };
  for (Case c : cases) {
    uint32_t x = bitsOf(c.v), abs = x & 0x7fffffffu;
    uint32_t k = c.k, rem;
    uint16_t down;
    if (k == 13) {
      uint32_t h = abs - 0x38000000u;
      rem = h & 0x1fffu;
      down = static_cast<uint16_t>(((x >> 16) & 0x8000u) | (h >> 13));
    } else {
      uint32_t e = abs >> 23;
      uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      k = 126 - e;
      ASSERT_LE(k, 24u);
      rem = mant & ((1u << k) - 1u);
      down = static_cast<uint16_t>(((x >> 16) & 0x8000u) | (mant >> k));
    }
    ASSERT_NE(rem, 0u) << c.v;
    uint32_t away = 0;
    for (uint32_t top = 0; top < (1u << k); ++top) {
      uint32_t r = (top << (32 - k)) | (top & ((1u << (32 - k)) - 1u));
      uint16_t h = ampc::f32ToF16Stochastic(c.v, r);
      ASSERT_TRUE(h == down || h == down + 1) << c.v;
      away += h == down + 1;
    }
    EXPECT_EQ(away, rem) << c.v << " (" << k << " discarded bits)";
  }
}

class LowUpdate : public CpuTest {};

/// One SGD step (lr 1, no momentum) of `p` with gradient -delta: the f32
/// result p + delta written with `mode`.
void sgdStep(ampc_context ctx, Tensor &p, Tensor &g, Tensor *comp,
             ampc_low_update mode, uint64_t seed, int32_t &counter) {
  void *ps[1] = {p.data()}, *gs[1] = {g.data()};
  ampc_dtype pdt[1] = {p.dtype}, gdt[1] = {g.dtype};
  int64_t n[1] = {p.size()};
  void *comps[1] = {comp ? comp->data() : nullptr};
  int64_t which[1] = {0};
  ASSERT_OK(ampc_sgd_update_low(ctx, ps, pdt, gs, gdt, nullptr, n, 1, 1.0, 0.0,
                                0.0, 0, 0.0, nullptr, AMPC_F32, nullptr,
                                nullptr, nullptr, nullptr, 0, nullptr, mode,
                                seed, 0, &counter, comp ? comps : nullptr,
                                comp ? which : nullptr, comp ? 1 : 0));
}

// E[p] = v: 2^17 elements of 1.0 (bf16) each get an update of 1e-4, an
// eighth of half an ulp: round to nearest keeps every one at 1.0; the
// stochastic mean is 1 + 1e-4 within 5 standard deviations, and the count
// of elements that moved is Binomial(n, 1e-4 / ulp).
TEST_F(LowUpdate, StochasticMeanIsTheValue) {
  const int64_t n = 1 << 17;
  const float delta = 1e-4f;
  Tensor p({n}, AMPC_BF16), g({n}, AMPC_F32);
  for (int64_t i = 0; i < n; ++i) {
    p.set(i, 1.0);
    g.set(i, -delta);
  }
  Tensor nearest = p;
  int32_t counter = 0;
  sgdStep(ctx, nearest, g, nullptr, AMPC_LOW_NEAREST, 7, counter);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(nearest.get(i), 1.0);
  counter = 0;
  sgdStep(ctx, p, g, nullptr, AMPC_LOW_STOCHASTIC, 7, counter);
  EXPECT_EQ(counter, 1) << "the update counter advances";
  const double v = static_cast<double>(1.0f + delta); // the f32 result
  const double ulp = 1.0 / 128;
  const double q = (v - 1.0) / ulp; // P(away), exactly
  int64_t moved = 0;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = p.get(i);
    ASSERT_TRUE(x == 1.0 || x == 1.0 + ulp) << i;
    moved += x != 1.0;
    sum += x;
  }
  double mean = sum / n;
  double sigma = ulp * std::sqrt(q * (1 - q) / n);
  EXPECT_NEAR(mean, v, 5 * sigma);
  EXPECT_NEAR(static_cast<double>(moved), q * n, 5 * std::sqrt(q * (1 - q) * n));

  // Over many updates of one element (new counters, new draws) the mean
  // of the written values is the value too; and a negative value.
  Tensor one({1}, AMPC_BF16), step({1}, AMPC_F32);
  double total = 0;
  const int draws = 20000;
  const float w = -0.30078125f - 0.001f; // 0.001 past a bf16 value
  step.set(0, 0.0);
  counter = 0;
  for (int k = 0; k < draws; ++k) {
    one.set(0, -0.30078125);
    step.set(0, 0.001);
    sgdStep(ctx, one, step, nullptr, AMPC_LOW_STOCHASTIC, 3, counter);
    total += one.get(0);
  }
  const double ulpW = 1.0 / 512; // bf16 ulp in [0.25, 0.5)
  const double qw = (static_cast<double>(-0.30078125f - 0.001f) + 0.30078125) /
                    -ulpW;
  double sigmaW = ulpW * std::sqrt(qw * (1 - qw) / draws);
  EXPECT_NEAR(total / draws, static_cast<double>(w), 5 * sigmaW);
}

// The same seed and counter give the same bits; another seed others.
TEST_F(LowUpdate, StochasticBitsFollowTheSeed) {
  Tensor p0 = randomTensor({1000}, AMPC_BF16), g = randomTensor({1000}, AMPC_F32,
                                                                 -1e-3, 1e-3);
  Tensor a = p0, b = p0, c = p0;
  int32_t ca = 5, cb = 5, cc = 5;
  sgdStep(ctx, a, g, nullptr, AMPC_LOW_STOCHASTIC, 42, ca);
  sgdStep(ctx, b, g, nullptr, AMPC_LOW_STOCHASTIC, 42, cb);
  sgdStep(ctx, c, g, nullptr, AMPC_LOW_STOCHASTIC, 43, cc);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
  // Element i's word is Philox's lane i % 4 at (i / 4, key): recompute it.
  for (int64_t i = 0; i < 1000; ++i) {
    float v = static_cast<float>(p0.get(i)) + -1.0f * static_cast<float>(g.get(i));
    uint32_t r = ampc::lowUpdateWord(
        42, ampc::lowUpdateCounterHi(0, 0, 6), i);
    ASSERT_EQ(reinterpret_cast<const uint16_t *>(a.bytes.data())[i],
              ampc::f32ToBf16Stochastic(v, r))
        << i;
  }
}

// Kahan: 200 updates of +1e-4 to 1.0 in bf16: nearest never moves, the
// param ends within one ulp of 1.02, and param + compensation within what
// the bf16 buffer's own rounding loses (half its ulp, at most 2^-17 for a
// remainder below half an ulp of 1.0, per update).
TEST_F(LowUpdate, KahanKeepsSmallUpdates) {
  Tensor p({4}, AMPC_BF16), comp({4}, AMPC_BF16), g({4}, AMPC_F32);
  Tensor q({4}, AMPC_BF16);
  for (int i = 0; i < 4; ++i) {
    p.set(i, 1.0);
    q.set(i, 1.0);
    g.set(i, -1e-4);
  }
  int32_t counter = 0;
  for (int k = 0; k < 200; ++k) {
    sgdStep(ctx, p, g, &comp, AMPC_LOW_KAHAN, 0, counter);
    sgdStep(ctx, q, g, nullptr, AMPC_LOW_NEAREST, 0, counter);
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(q.get(i), 1.0);
    EXPECT_NEAR(p.get(i) + comp.get(i), 1.02, 200 * std::ldexp(1.0, -17));
    EXPECT_NEAR(p.get(i), 1.02, 1.0 / 128);
  }
  // A compensation buffer needs kahan, and an f16/bf16 param.
  void *ps[1] = {p.data()}, *gs[1] = {g.data()}, *cs[1] = {comp.data()};
  ampc_dtype pdt[1] = {AMPC_BF16}, gdt[1] = {AMPC_F32};
  int64_t n[1] = {4}, which[1] = {0};
  EXPECT_EQ(ampc_sgd_update_low(ctx, ps, pdt, gs, gdt, nullptr, n, 1, 1.0, 0.0,
                                0.0, 0, 0.0, nullptr, AMPC_F32, nullptr,
                                nullptr, nullptr, nullptr, 0, nullptr,
                                AMPC_LOW_NEAREST, 0, 0, &counter, cs, which, 1),
            AMPC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ampc_sgd_update_low(ctx, ps, pdt, gs, gdt, nullptr, n, 1, 1.0, 0.0,
                                0.0, 0, 0.0, nullptr, AMPC_F32, nullptr,
                                nullptr, nullptr, nullptr, 0, nullptr,
                                AMPC_LOW_STOCHASTIC, 0, 0, nullptr, nullptr,
                                nullptr, 0),
            AMPC_ERROR_NULL_POINTER);
}

// AdamW with bf16 moments: nearest rounding of the moments gives the f32
// moments rounded; the params stay within a few bf16 ulps of the f32
// state's run; a skipped step changes nothing.
TEST_F(LowUpdate, AdamWBf16Moments) {
  Tensor p = randomTensor({257}, AMPC_F32), refP = p;
  Tensor m({257}, AMPC_BF16), v({257}, AMPC_BF16);
  Tensor rm({257}, AMPC_F32), rv({257}, AMPC_F32);
  int32_t step = 0, refStep = 0;
  for (int k = 0; k < 10; ++k) {
    Tensor g = randomTensor({257}, AMPC_F32);
    float flag = k == 4 ? 1.0f : 0.0f;
    Tensor before = m;
    void *ps[1] = {p.data()}, *gs[1] = {g.data()}, *ms[1] = {m.data()},
         *vs[1] = {v.data()};
    void *rps[1] = {refP.data()}, *rms[1] = {rm.data()}, *rvs[1] = {rv.data()};
    ampc_dtype dt[1] = {AMPC_F32}, sdt[1] = {AMPC_BF16};
    int64_t n[1] = {257};
    ASSERT_OK(ampc_adamw_update_low(ctx, ps, dt, gs, dt, ms, vs, &step, n, 1,
                                    1e-2, 0.9, 0.999, 1e-8, 0.01, 0.0, &flag,
                                    AMPC_F32, nullptr, nullptr, nullptr,
                                    nullptr, 0, sdt, AMPC_LOW_STOCHASTIC, 9, 0,
                                    nullptr, nullptr, 0));
    ASSERT_OK(ampc_adamw_update(ctx, rps, dt, gs, dt, rms, rvs, &refStep, n, 1,
                                1e-2, 0.9, 0.999, 1e-8, 0.01, 0.0, &flag,
                                AMPC_F32, nullptr));
    if (k == 4)
      ASSERT_EQ(m.bytes, before.bytes) << "a skipped step keeps the state";
  }
  EXPECT_EQ(step, 9);
  expectClose(p.values(), refP.values(), 0, 2e-2, "params, bf16 moments");
  expectClose(m.values(), rm.values(), 2e-2, 2e-2, "exp_avg");
}

/// An f64 tensor of n values 0.5 + k 2^-40 + a spread: none of them an
/// f32 value.
Tensor wideValues(int64_t n, double scale) {
  Tensor t({n}, AMPC_F64);
  for (int64_t i = 0; i < n; ++i) {
    double v = scale * (0.5 + 0.01 * static_cast<double>(i % 37)) +
               static_cast<double>(i % 5 + 1) * std::ldexp(1.0, -40);
    std::memcpy(t.bytes.data() + i * 8, &v, 8);
  }
  return t;
}

// A low-precision mode rounds 16-bit values only: an f64 param (f64 state)
// updated in one call beside a bf16 one gets the plain f64 update's bits
// (as ampc_sgd_update / ampc_adamw_update give them for it alone), and the
// bf16 one the bits of its own low update (param_base numbering it as in
// the pair). The f64 state must be f64: f32 state for it is refused.
TEST_F(LowUpdate, F64ParamsUpdateInF64BesideLowOnes) {
  const int64_t nw = 300, nb = 70;
  for (ampc_low_update mode : {AMPC_LOW_STOCHASTIC, AMPC_LOW_KAHAN}) {
    SCOPED_TRACE(mode == AMPC_LOW_KAHAN ? "kahan" : "stochastic");
    Tensor w = wideValues(nw, 1.0), gw = wideValues(nw, -1e-3);
    Tensor b = randomTensor({nb}, AMPC_BF16),
           gb = randomTensor({nb}, AMPC_BF16, -1e-2, 1e-2);
    Tensor wm({nw}, AMPC_F64), wv({nw}, AMPC_F64), bm({nb}, AMPC_BF16),
        bv({nb}, AMPC_BF16), comp({nb}, AMPC_BF16);
    Tensor rw = w, rwm = wm, rwv = wv, rb = b, rbm = bm, rbv = bv, rcomp = comp;
    int32_t step = 0, rwStep = 0, rbStep = 0;
    const ampc_dtype pd[] = {AMPC_F64, AMPC_BF16}, sd[] = {AMPC_F64, AMPC_BF16};
    const int64_t n[] = {nw, nb}, compOf[] = {1}, compAlone[] = {0};
    bool kahan = mode == AMPC_LOW_KAHAN;
    for (int k = 0; k < 3; ++k) {
      void *ps[] = {w.data(), b.data()}, *gs[] = {gw.data(), gb.data()},
           *ms[] = {wm.data(), bm.data()}, *vs[] = {wv.data(), bv.data()},
           *cs[] = {comp.data()};
      ASSERT_OK(ampc_adamw_update_low(
          ctx, ps, pd, gs, pd, ms, vs, &step, n, 2, 1e-3, 0.9, 0.999, 1e-8,
          1e-2, 0.0, nullptr, AMPC_F32, nullptr, nullptr, nullptr, nullptr, 0,
          sd, mode, 11, 4, kahan ? cs : nullptr, kahan ? compOf : nullptr,
          kahan ? 1 : 0));
      // The f64 param alone, through the plain update.
      void *rps[] = {rw.data()}, *rgs[] = {gw.data()}, *rms[] = {rwm.data()},
           *rvs[] = {rwv.data()};
      ASSERT_OK(ampc_adamw_update(ctx, rps, pd, rgs, pd, rms, rvs, &rwStep, n,
                                  1, 1e-3, 0.9, 0.999, 1e-8, 1e-2, 0.0,
                                  nullptr, AMPC_F32, nullptr));
      // The bf16 param alone, its key's param index 4 + 1 as in the pair.
      void *bps[] = {rb.data()}, *bgs[] = {gb.data()}, *bms[] = {rbm.data()},
           *bvs[] = {rbv.data()}, *bcs[] = {rcomp.data()};
      ASSERT_OK(ampc_adamw_update_low(
          ctx, bps, pd + 1, bgs, pd + 1, bms, bvs, &rbStep, n + 1, 1, 1e-3,
          0.9, 0.999, 1e-8, 1e-2, 0.0, nullptr, AMPC_F32, nullptr, nullptr,
          nullptr, nullptr, 0, sd + 1, mode, 11, 5, kahan ? bcs : nullptr,
          kahan ? compAlone : nullptr, kahan ? 1 : 0));
    }
    EXPECT_EQ(w.bytes, rw.bytes) << "the f64 param: the plain f64 update";
    EXPECT_EQ(wm.bytes, rwm.bytes);
    EXPECT_EQ(wv.bytes, rwv.bytes);
    EXPECT_EQ(b.bytes, rb.bytes) << "the bf16 param: its own low update";
    EXPECT_EQ(bm.bytes, rbm.bytes);
    EXPECT_EQ(comp.bytes, rcomp.bytes);
    EXPECT_EQ(step, 3);
    int notF32 = 0; // the f64 values keep bits f32 cannot hold
    for (int64_t i = 0; i < nw; ++i) {
      double v;
      std::memcpy(&v, w.bytes.data() + i * 8, 8);
      notF32 += static_cast<double>(static_cast<float>(v)) != v;
    }
    EXPECT_GT(notF32, nw - 10);

    // SGD with momentum (f64 buffer beside a bf16 one), stochastic counter.
    Tensor sw = wideValues(nw, 1.0), sb = randomTensor({nb}, AMPC_BF16);
    Tensor swBuf({nw}, AMPC_F64), sbBuf({nb}, AMPC_BF16);
    Tensor rsw = sw, rswBuf = swBuf;
    int32_t counter = 0;
    for (int k = 0; k < 3; ++k) {
      void *ps[] = {sw.data(), sb.data()}, *gs[] = {gw.data(), gb.data()},
           *bs[] = {swBuf.data(), sbBuf.data()}, *cs[] = {comp.data()};
      ASSERT_OK(ampc_sgd_update_low(
          ctx, ps, pd, gs, pd, bs, n, 2, 0.1, 0.9, 1e-2, 1, 0.0, nullptr,
          AMPC_F32, nullptr, nullptr, nullptr, nullptr, 0, sd, mode, 11, 0,
          &counter, kahan ? cs : nullptr, kahan ? compOf : nullptr,
          kahan ? 1 : 0));
      void *rps[] = {rsw.data()}, *rgs[] = {gw.data()}, *rbs[] = {rswBuf.data()};
      ASSERT_OK(ampc_sgd_update(ctx, rps, pd, rgs, pd, rbs, n, 1, 0.1, 0.9,
                                1e-2, 1, 0.0, nullptr, AMPC_F32, nullptr));
    }
    EXPECT_EQ(sw.bytes, rsw.bytes) << "sgd: the plain f64 update";
    EXPECT_EQ(swBuf.bytes, rswBuf.bytes);
  }
  // f32 state for an f64 param is refused, naming the entry point.
  Tensor w = wideValues(4, 1.0), g = wideValues(4, 1e-3), m({4}, AMPC_F32),
         v({4}, AMPC_F32), kept = w;
  int32_t step = 0;
  const ampc_dtype pd[] = {AMPC_F64}, sd[] = {AMPC_F32};
  const int64_t n[] = {4};
  void *ps[] = {w.data()}, *gs[] = {g.data()}, *ms[] = {m.data()},
       *vs[] = {v.data()};
  EXPECT_EQ(ampc_adamw_update_low(ctx, ps, pd, gs, pd, ms, vs, &step, n, 1,
                                  1e-3, 0.9, 0.999, 1e-8, 1e-2, 0.0, nullptr,
                                  AMPC_F32, nullptr, nullptr, nullptr, nullptr,
                                  0, sd, AMPC_LOW_STOCHASTIC, 11, 0, nullptr,
                                  nullptr, 0),
            AMPC_ERROR_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::string(ampc_last_error()).find("state_dtypes[0] must be f64"),
            std::string::npos)
      << ampc_last_error();
  EXPECT_EQ(w.bytes, kept.bytes);
}

class LowUpdateCuda : public CudaVsCpu {
protected:
  const char *skipped() const override {
    return "stochastic / Kahan updates against the CPU backend";
  }
};

// The CUDA backend writes the bits the CPU backend writes: AdamW with
// bf16 params and moments, stochastic and Kahan, and SGD with momentum.
TEST_F(LowUpdateCuda, SameBitsAsCpu) {
  const int64_t n = 5000;
  for (ampc_low_update mode : {AMPC_LOW_STOCHASTIC, AMPC_LOW_KAHAN}) {
    std::vector<Tensor> ts = {
        randomTensor({n}, AMPC_BF16), randomTensor({n}, AMPC_F32, -1e-2, 1e-2),
        Tensor({n}, AMPC_BF16),       Tensor({n}, AMPC_BF16),
        Tensor({}, AMPC_I32),         Tensor({n}, AMPC_BF16),
        randomTensor({n}, AMPC_F16)};
    compare(
        ts, {0, 2, 3, 4, 5, 6},
        [&](ampc_context c, const PtrFn &p) -> ampc_status {
          void *ps[1] = {p(0)}, *gs[1] = {p(1)}, *ms[1] = {p(2)},
               *vs[1] = {p(3)}, *cs[1] = {p(5)};
          ampc_dtype pdt[1] = {AMPC_BF16}, gdt[1] = {AMPC_F32},
                     sdt[1] = {AMPC_BF16};
          int64_t ns[1] = {n}, which[1] = {0};
          bool kahan = mode == AMPC_LOW_KAHAN;
          for (int k = 0; k < 3; ++k)
            AMPC_TRY(ampc_adamw_update_low(
                c, ps, pdt, gs, gdt, ms, vs, p(4), ns, 1, 1e-3, 0.9, 0.999,
                1e-8, 0.01, 0.0, nullptr, AMPC_F32, nullptr, nullptr, nullptr,
                nullptr, 0, sdt, mode, 5, 2, kahan ? cs : nullptr,
                kahan ? which : nullptr, kahan ? 1 : 0));
          // SGD with momentum on an f16 param, its own counter.
          void *ps2[1] = {p(6)}, *bs[1] = {p(2)};
          ampc_dtype pdt2[1] = {AMPC_F16};
          return ampc_sgd_update_low(c, ps2, pdt2, gs, gdt, bs, ns, 1, 0.1, 0.9,
                                     0.0, 0, 0.0, nullptr, AMPC_F32, nullptr,
                                     nullptr, nullptr, nullptr, 0, sdt,
                                     kahan ? AMPC_LOW_NEAREST : mode, 5, 0,
                                     p(4), nullptr, nullptr, 0);
        },
        0.0, mode == AMPC_LOW_KAHAN ? "kahan" : "stochastic");
  }
}

} // namespace
